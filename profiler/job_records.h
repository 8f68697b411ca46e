// The in-job recorder's files (profiler/job_recorder/, contract: docs/job.md): one JSON-lines file
// per Python process of the user's job, proc-<pid>.jsonl, read back here. Untrusted input: sizes
// are bounded (file, line, steps, stages, strings), every field is type- and range-checked, and a
// line that does not hold is skipped and counted, never fatal. Unknown line types are ignored
// (a newer recorder). No LibTorch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainlab {

struct JobRecordLimits {
  int64_t max_file_bytes = int64_t{256} << 20;  // of one proc-*.jsonl; the rest is not read (noted)
  int64_t max_line_bytes = int64_t{1} << 20;    // a longer line is malformed
  int64_t max_steps = 1'000'000;                // step lines kept per file
  int64_t max_stages = 1024;                    // stages kept per snapshot
  size_t max_string_chars = 4096;               // names, paths, messages are cut to this
  int64_t max_files = 4096;                     // proc-*.jsonl files read from one folder
  int64_t max_loaders = 256;                    // loader lines kept per file
  int64_t max_messages = 200;                   // warning lines kept per file
  int64_t max_reseeds = 64;                     // reseed lines kept per file (the recorder writes up to 8),
                                                // and as many script_autocast / script_compile lines
};

// {"type":"process"}: written first by every process that loads the recorder; {"type":"torch"}
// lines (once torch is imported: torch_version, cuda_available, device_name) fill its torch fields.
struct JobProcessLine {
  int64_t pid = 0, ppid = 0;
  std::string role;                  // "main", "worker", "launcher" (torchrun's agent) or a newer one
  std::optional<int64_t> worker_id;  // DataLoader workers
  int64_t rank = 0, world_size = 1, local_rank = 0;
  std::vector<std::string> argv;
  std::string python, python_version, torch_version, device_name;  // "" where null
  std::optional<bool> cuda_available;
  int64_t start_ns = 0;
};

// {"type":"loader"} (and loader_role lines folded in): one DataLoader construction.
struct JobLoaderLine {
  int64_t loader_id = 0;
  std::string file;
  int64_t line = 0;
  int64_t num_workers = 0;
  std::optional<int64_t> prefetch_factor, batch_size;
  bool pin_memory = false, persistent_workers = false;
  std::string dataset, collate_fn;
  std::string overridden;            // the "overridden" object as JSON text ("{}" when none)
  std::optional<bool> training;
};

// {"type":"step"}: one optimizer step (or step-function call) of a main loop process.
struct JobStepLine {
  int64_t step = 0, start_ns = 0, end_ns = 0;
  bool warmup = false;
  int64_t data_wait_ns = 0, data_not_ready_ns = 0, data_receive_ns = 0;
  std::optional<int64_t> samples, forward_ns, backward_ns, optimizer_ns;
  // The wait for the first batch of a later epoch's iterator of the training loader, where this
  // step took one (workers that are not persistent start again there).
  std::optional<int64_t> epoch_start_wait_ns;
  int64_t cpu_ns = 0;
  int64_t rank = 0;
};

struct JobStageTime {
  std::string name, kind;  // kind: read, decode, transform, dataset, collate, handoff, other
  int64_t wall_ns = 0, cpu_ns = 0, calls = 0;
};

// {"type":"stages"}: a cumulative snapshot of a process's producers for one loader (each replaces
// the previous one of that process and loader_id).
struct JobStagesLine {
  int64_t pid = 0;
  std::string role;
  std::optional<int64_t> worker_id, loader_id;
  int64_t at_ns = 0, busy_wall_ns = 0, busy_cpu_ns = 0, samples = 0, batches = 0;
  std::vector<JobStageTime> stages;
};

// {"type":"reseed"}: the script seeded again after trainlab seeded the process (TRAINLAB_JOB_SEED).
struct JobReseed {
  std::string call;             // "torch.manual_seed", "random.seed", "numpy.random.seed"
  std::optional<int64_t> seed;  // null: no integer seed (a string, an array, none, >= 2^63)
  std::string file;             // the user's file and line that made the call
  int64_t line = 0;
};

// {"type":"script_autocast"} / {"type":"script_compile"}: the script's own autocast block or
// compile call (not trainlab's), once per place.
struct JobScriptChoiceLine {
  std::string kind;    // "autocast" or "compile"
  std::string detail;  // "torch.autocast('cpu', bfloat16)", "torch.compile(module Net, mode=default)"
  std::string file;
  int64_t line = 0;
};

struct JobTraceLine {
  int64_t rank = 0;
  std::string path;  // a file name inside the job folder
  int64_t first_step = 0, steps = 0;
};

// What one proc-<pid>.jsonl held.
struct JobProcessFile {
  std::string file;                          // its name, e.g. "proc-1234.jsonl"
  std::optional<JobProcessLine> process;
  std::vector<JobLoaderLine> loaders;
  std::vector<JobStepLine> steps;            // in file order
  std::vector<JobStagesLine> stages;         // the last snapshot per loader_id, in the order first seen
  std::vector<JobTraceLine> traces;
  std::optional<int64_t> intra_op_threads, inter_op_threads;  // the threads line (the end of step 0)
  std::vector<JobReseed> reseeds;            // in file order, at most max_reseeds
  std::vector<JobScriptChoiceLine> script_choices;  // in file order, at most max_reseeds
  std::vector<std::string> warnings;         // "part: message" of warning / override_failed lines
  std::vector<std::string> overrides;        // compile / autocast lines, in words
  std::optional<std::string> no_steps;       // the no_steps line's message
  std::string end_reason;                    // the end line's reason ("" when none was written)
  int64_t malformed_lines = 0;               // skipped: not JSON, not an object, a field that does not hold
  std::vector<std::string> malformed_examples;  // why, for the first few
  int64_t dropped_steps = 0;                 // step lines past max_steps
  bool truncated = false;                    // the file was longer than max_file_bytes
};

// The lines of one file's text. Never throws on content.
JobProcessFile parse_job_lines(std::string_view text, const std::string& file_name,
                               const JobRecordLimits& limits = {});

struct JobRecords {
  std::vector<JobProcessFile> files;  // by pid (file name) order
  int64_t malformed_lines = 0;        // over every file
  std::vector<std::string> problems;  // files that could not be read, files left out past max_files
};

// Every proc-*.jsonl in `dir`. A folder that cannot be listed gives no files and a problem.
JobRecords read_job_records(const std::string& dir, const JobRecordLimits& limits = {});

}  // namespace trainlab
