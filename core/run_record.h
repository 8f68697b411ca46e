// The results contract between running and analysing (DESIGN §2): RunRecord holds one
// invocation (lab, single run) and a VariantRecord per variant with its per-step phase times.
// Serialised as versioned JSON (run.json); readers refuse versions they do not know.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/variant.h"

namespace trainlab {

inline constexpr int kRunSchemaVersion = 1;

// Phases of one training step, in loop order. kCommunication stays 0 in single-process runs.
enum class Phase { kDataWait, kHostToDevice, kForward, kBackward, kOptimizer, kCommunication, kOther };
inline constexpr size_t kPhaseCount = 7;
const char* phase_name(Phase phase);
using PhaseTimes = std::array<int64_t, kPhaseCount>;  // nanoseconds, indexed by Phase

// Stages of building one batch (in a loader worker, or in the training thread with 0 workers).
enum class DataStage { kRead, kDecode, kAugment, kCollate };
inline constexpr size_t kDataStageCount = 4;
const char* data_stage_name(DataStage stage);
using DataStageTimes = std::array<int64_t, kDataStageCount>;  // nanoseconds, indexed by DataStage

struct StepRecord {
  int64_t index = 0;       // 0-based over warm-up and measured steps together
  bool warmup = false;     // warm-up steps are recorded but never enter any figure
  int64_t step_ns = 0;     // wall time of the whole step
  PhaseTimes phase_ns{};   // sums to step_ns up to timer resolution; data_wait = time blocked on the loader
  DataStageTimes data_stage_ns{};  // the step's batch: time it took to read, decode, augment, collate
  int64_t data_busy_ns = 0;        // the step's batch: wall time of its producer (whoever ran it)
  // Data parallel: all-reduce time this step, hidden or not (the exposed part is phase
  // kCommunication, the time the training thread waited for it after backward).
  int64_t comm_ns = 0;
  int64_t memory_bytes = 0;  // after the step: anonymous RSS (CPU) or CUDA allocated bytes (the leak's trace)
  double loss = 0.0;         // NaN when the loss was not finite
  double grad_norm = -1.0;   // global gradient norm after backward; -1 when not measured this step (NaN: not finite)
};

// The machine and software a record was measured on.
struct Environment {
  std::string cpu_model;
  int logical_cores = 0;
  int intra_op_threads = 0;
  std::string blas;
  std::string libtorch_version;
  std::string cuda_compiled_version;   // empty when LibTorch has no CUDA
  std::string cuda_device;             // empty when none is usable
  std::string git_revision;
  std::string hostname;
};

// One system metric over a variant: how the sampler's samples spread (e.g. "cpu.process_pct",
// "mem.rss_bytes"; the unit is the track's).
struct MetricSummary {
  std::string unit;
  int64_t samples = 0;
  double min = 0, p50 = 0, p95 = 0, p99 = 0, max = 0, mean = 0;
};

// The system sampler over a whole variant. In run.json: {"metrics": {name: {unit, samples, min,
// p50, p95, p99, max, mean}}, "interval_ms", "missed_ticks", "sample_cost_us", "cost_pct_of_core"},
// or {} when the sampler was off.
struct SystemSummary {
  std::map<std::string, MetricSummary> metrics;
  int64_t interval_ms = 0;        // sampling period
  int64_t missed_ticks = 0;       // periods the sampler could not keep
  double sample_cost_us = 0;      // one sample's cost
  double cost_pct_of_core = 0;    // that cost over the period: the share of one core the sampler took
  bool empty() const { return metrics.empty() && interval_ms == 0; }
  const MetricSummary* find(const std::string& name) const {
    const auto it = metrics.find(name);
    return it == metrics.end() ? nullptr : &it->second;
  }
};

// What compiling did (the compiled variants): Inductor's joint forward+backward package
// ("inductor-aot"), or the TorchScript-traced forward ("torchscript-trace"). In run.json {"method",
// "fuser", "fuser_fallback_reason", "traced_graph_nodes", "optimized_graph_nodes", "fusion_groups",
// "ops_inside_fusion_groups"} (+ "compile_s", "cache_hit", "forward_backward_ops_eager",
// "forward_backward_ops_compiled", "cuda_graph" for Inductor, "inductor_unavailable" when
// set), or {} when the variant was not compiled.
inline constexpr const char* kInductorMethod = "inductor-aot";
struct CompileInfo {
  std::string method;                 // e.g. "torchscript-trace"; empty: not compiled
  std::string fuser;                  // the fuser that ran
  std::string fuser_fallback_reason;  // why the graph ran unfused, when it did
  int64_t traced_graph_nodes = 0;
  int64_t optimized_graph_nodes = 0;  // nodes of the graph that last executed
  int64_t fusion_groups = 0;          // fused kernels the optimised graph holds (Inductor: kernels it generated)
  int64_t ops_inside_fusion_groups = 0;
  // Inductor ("inductor-aot"): the package's export + compile wall time (when it was built, by this
  // run or an earlier one) and whether this run found it built. In run.json only for Inductor.
  double compile_s = 0;
  bool cache_hit = false;
  // Inductor: host ops of one forward+backward of the same batch, run eagerly and by the package
  // (what compiling removed from the host's work; the optimizer and all-reduce are not in either).
  int64_t forward_backward_ops_eager = 0;
  int64_t forward_backward_ops_compiled = 0;
  // Inductor on CUDA: "captured" (each step replays one CUDA graph of the package's kernels), or
  // why not ("not on a CPU", "capture failed: ...").
  std::string cuda_graph;
  // Why Inductor could not be used (no Python side, no twin of the scenario, export or compile
  // failed): the variant then failed with error_kind "unavailable". Records before issue 16 ran
  // the TorchScript trace instead and kept the reason here. In run.json only when set.
  std::string inductor_unavailable;
  // Inductor: what the exporter did because its first package computed NaN or Inf where the
  // exported graph did not (scenarios/export/aot_compile.py compile_checked), e.g. compiled again
  // with ATen's random numbers. In run.json only when set.
  std::string compiler_workaround;
  bool empty() const { return method.empty(); }
};

// One user annotation (a named range) over the capture window.
struct AnnotationSummary {
  std::string name;
  int64_t count = 0;
  double total_ms = 0, mean_ms = 0, max_ms = 0;
  double per_step_ms = 0;      // total over the captured steps
  double step_share_pct = 0;   // total over the captured steps' time
};

// The capture window of a --profile run. In run.json an object with these keys, or {} without
// --profile.
struct ProfileWindow {
  int64_t window_start = 0;             // first captured step, counted in measured steps
  int64_t window_steps = 0;
  int64_t events = 0;                   // events in the trace
  std::map<std::string, int64_t> dropped;          // source -> events or records lost
  std::map<std::string, int64_t> counter_samples;  // counter track -> samples
  int64_t sample_interval_ms = 0;
  std::vector<std::string> notes;       // what the profiler could not capture and why
  std::string trace;                    // the trace, relative to the run folder (traces/<variant>/rank0.pt.trace.json.gz;
                                        // a bare file name in older runs: then in variants/)
  int64_t trace_bytes = 0;
  int64_t trace_bytes_per_step = 0;
  double op_sample = 1.0;               // share of ops recorded (1: every op)
  double record_cost_ns = 0;            // measured cost of writing one op span into the buffer
  double event_cost_ns = 0;             // measured cost of one captured event in full (calibration step)
  double events_per_step = 0;           // the window's host events per step
  // From the run's own step times: (mean window step - mean other step) / events per step; absent
  // without steps on both sides.
  std::optional<double> event_cost_from_steps_ns;
  std::vector<AnnotationSummary> annotations;
  double step_ms_in_window = 0, step_ms_outside_window = 0;
  std::optional<double> window_overhead_pct;  // in-window steps against the others; absent without both
  bool empty() const { return trace.empty() && window_steps == 0 && events == 0; }
};

// How the loader ran. In run.json {"workers", "prefetch" (null with 0 workers), "persistent_workers",
// "pin_memory_requested", "pin_memory_applied", "pin_memory_note" (only when pinning did not
// apply), and after the loop "batches_built", "worker_busy_ns", "worker_starts"}; {} when the
// variant never built its loader.
struct LoaderCounts {
  int64_t batches_built = 0;
  int64_t worker_busy_ns = 0;   // summed over workers: time spent building batches
  int64_t worker_starts = 0;    // worker threads started (once per epoch without persistent workers)
};
struct LoaderRun {
  int64_t workers = 0;
  std::optional<int64_t> prefetch;      // batches in flight per worker; absent with 0 workers
  bool persistent_workers = false;
  bool pin_memory_requested = false;
  bool pin_memory_applied = false;
  std::string pin_memory_note;          // why pinning did not apply, when requested
  std::optional<LoaderCounts> counts;   // absent when the loop did not finish
};

// Where the variant's samples came from. In run.json {"source", and for an on-disk dataset "dir",
// "generated", "generate_s", and with its decoded cache "decoded_cache",
// "decoded_cache_prepare_s"}; {} when the variant never opened its dataset.
struct DatasetInfo {
  std::string source;                   // e.g. "in memory: 4096 samples generated from the seed"
  std::string dir;                      // on-disk datasets: the folder; empty in memory
  bool generated = false;               // this run generated the files
  double generate_s = 0;
  std::string generated_because;        // when generated: none was there, or why the one there was not used
  std::string decoded_cache;            // the decoded cache read instead of the encoded files; empty: none
  double decoded_cache_prepare_s = 0;
  bool empty() const { return source.empty() && dir.empty(); }
};

// After the last measured step: FNV-1a of every parameter's bytes, and each parameter's sum and
// norm (to compare ranks, or runs, tensor by tensor). In run.json {"hash", "tensors": [{sum, norm}]}.
struct TensorSumNorm {
  double sum = 0, norm = 0;
};
struct ParameterFingerprint {
  std::string hash;                     // 16 hex digits; empty: not taken
  std::vector<TensorSumNorm> tensors;
  bool empty() const { return hash.empty(); }
};

// One rank of a data-parallel variant, in the merged record. Figures only when the rank finished.
struct RankSummary {
  int rank = 0;
  bool ok = false;
  std::string ended;                    // how its process ended
  std::string error;                    // when not ok
  double samples_per_s = 0, step_ms_mean = 0, step_ms_p50 = 0;
  double comm_pct = 0, exposed_comm_pct = 0;
  double busy_ms_mean = 0;              // its own work per step: the step minus the wait on the others
  int64_t peak_memory_bytes = 0;
  std::string host;                     // the machine it ran on (empty in records made before)
  int node_rank = 0, local_rank = 0;    // which machine of the job, and its place on it
  std::string record;                   // its own record, relative to the run folder
                                        // (variants/<stem>.rank<N>.json); empty in records made before
};

// Data parallel. Each rank's record: its process group ("backend", "world_size", "rank",
// "comm_mode", "bucket_bytes_cap", "buckets", "gradient_bytes"). The merged record adds "ranks"
// (one RankSummary each, with its "host", "node_rank" and "local_rank"), "slowest_rank" and "busy_spread_pct" (when two ranks finished), and
// "ranks_finished" when one failed. {} in a single-process run.
struct DistributedRun {
  std::string backend;                  // empty: no process group described
  int world_size = 1;
  int rank = 0;
  std::string comm_mode;
  int64_t bucket_bytes_cap = 0;
  int64_t buckets = 0;
  int64_t gradient_bytes = 0;
  // Where this process ran: its machine's name, the machine's index in the job (torchrun's
  // GROUP_RANK), its rank on that machine, and the ranks per machine ("host", "node_rank",
  // "local_rank", "local_world_size"; absent in records made before).
  std::string host;
  int node_rank = 0, local_rank = 0, local_world_size = 0;
  // A rank on another machine than rank 0's: how its record reached rank 0 ("sent through the
  // rendezvous store"), or why it could not ("gathered").
  std::string gathered;
  std::vector<RankSummary> ranks;
  std::optional<int> slowest_rank;      // the straggler: the most own work per step
  std::optional<double> busy_spread_pct;  // slowest over fastest own work per step, minus 1
  std::optional<int> ranks_finished;
  bool empty() const { return backend.empty() && ranks.empty(); }
};

// What disturbed a variant's measured steps, measured by its child from /proc between the first and
// the last measured step (profiler/disturbance.h): the machine's CPU other processes took, this
// run's own share, the share of the time its threads wanted a CPU that they waited in the run queue,
// and the hypervisor's steal. Each absent where it could not be read. In run.json "disturbance":
// {"other_cpu_pct", "own_cpu_pct", "runqueue_wait_pct", "steal_pct"} (null when absent); no key in
// records made before it was measured.
struct Disturbance {
  std::optional<double> other_cpu_pct, own_cpu_pct, runqueue_wait_pct, steal_pct;
  bool measured() const { return other_cpu_pct || runqueue_wait_pct || steal_pct; }
};

// The user's own job (`trainlab profile -- COMMAND...`, harness/runner/job_runner.h): what ran,
// how it ended, the DataLoaders it built (with the user's file:line), the stages inside the data
// pipeline (summed over the workers of a loader on a rank), and each process of its tree. In
// run.json "job": {...}; no key for a built-in variant.
struct JobStage {
  std::string name, kind;             // "PIL.Image.Image.convert", "decode"
  int64_t wall_ns = 0, cpu_ns = 0, calls = 0;
};
struct JobStageGroup {
  std::string role;                   // "worker" (DataLoader workers) or "main" (num_workers=0)
  int rank = 0;
  std::optional<int64_t> loader_id;
  int64_t processes = 0;              // distinct producers (worker ids) whose snapshots were summed
  int64_t snapshots = 0;              // process snapshots summed (workers restart each epoch unless persistent)
  int64_t busy_wall_ns = 0, busy_cpu_ns = 0, samples = 0, batches = 0;
  std::vector<JobStage> stages;       // largest wall time first
};
struct JobLoader {
  int64_t loader_id = 0;
  int rank = 0;
  std::string file;                   // the user's file that built it, as the script named it
  int64_t line = 0;
  int64_t num_workers = 0;
  std::optional<int64_t> prefetch_factor, batch_size;
  bool pin_memory = false, persistent_workers = false;
  std::string dataset, collate_fn;
  std::string overridden;             // JSON text of the settings replaced at construction ("{}")
  std::optional<bool> training;       // the loader whose batches feed the optimizer steps
};
struct JobProcess {
  int64_t pid = 0, ppid = 0;
  std::string role;                   // "main", "worker" or "other" (no process line: bash, an agent)
  std::string label;                  // "main", "worker 1", "rank 1 worker 0", "pid 123 (bash)"
  int rank = 0;
  std::optional<int64_t> worker_id;
  double cpu_s = 0;                   // CPU time the sampler saw it use
  int64_t peak_rss_bytes = 0;
  int64_t read_bytes = 0, write_bytes = 0;  // storage IO it caused while sampled
  std::string ended;                  // the recorder's end reason, "" when none was written
};
// What the script itself does that trainlab's comparisons also set (rank 0's main process, from the
// recorder's script_autocast, script_compile and reseed lines): the lab reads its variants against
// it. In run.json "script_choices".
struct JobScriptChoice {
  std::string kind;                   // "autocast", "compile" or "reseed"
  std::string detail;                 // "torch.autocast('cpu', bfloat16)", "torch.compile(module Net, mode=default)", "torch.manual_seed(0)"
  std::string file;                   // the file and line that did it, as the script named it
  int64_t line = 0;
  std::optional<int64_t> seed;        // reseed: its seed when an integer (null: None, a string, an array)
};
struct JobInfo {
  std::vector<std::string> command;   // as the user typed it after --
  std::string interpreter, python_version, torch_version, device_name;
  int world_size = 1;
  // How it ended: "steps reached", "exited", "failed", "timed out", "interrupted", "not started".
  std::string ended;
  int exit_status = 0;                // the command's exit status (when it exited)
  int signal = 0;                     // the signal that ended it (0: none)
  std::string stderr_tail;            // the last lines of its stderr
  int64_t steps_limit = 0, warmup_steps = 0;   // --steps, --warmup
  std::string capture;                // "5:3" or "off"
  bool stages_on = true;
  std::string step_function;          // --step-function, "" when none
  int64_t data_not_ready_ns = 0, data_receive_ns = 0;  // over the measured steps of rank 0
  std::optional<int64_t> backward_ns; // over the measured steps of rank 0; absent when not measured
  // Measured steps of rank 0 that began a later epoch of the training loader (its first batch of a
  // new iterator), and their waits for that batch summed: the restart cost of workers that are not
  // persistent, against the steady wait of the other steps.
  int64_t epoch_starts = 0, epoch_start_wait_ns = 0;
  std::vector<JobLoader> loaders;
  std::vector<JobStageGroup> stage_groups;
  std::vector<JobProcess> processes;
  int64_t tree_peak_rss_bytes = 0;    // the most the whole tree held at once (sampled)
  int64_t malformed_lines = 0;        // recorder lines skipped
  std::vector<std::string> warnings;  // recorder warnings and what could not be read
  std::string no_steps;               // the recorder's no_steps message, when it wrote one
  std::vector<JobScriptChoice> script_choices;
};

struct VariantRecord {
  VariantSpec spec;
  std::string error;                   // empty when the variant completed
  std::string error_kind;              // "input" (bad option or data file: exit 2), "unavailable" (the
                                       // compiled variant could not be built: no Python side, export
                                       // failed) or "runtime"
  std::string device;                  // "cpu" or "cuda:0"
  std::vector<StepRecord> steps;
  int64_t peak_memory_bytes = 0;
  std::string peak_memory_source;      // "rss" (process peak RSS) or "cuda_allocator"
  double ops_per_step = 0;             // dispatcher ops in one untimed census step (fwd+bwd+opt)
  // Host cost of one small op on this machine (dispatch + autograd bookkeeping), measured after the
  // loop by timing tiny ops; ops_per_step x this estimates the step's framework overhead.
  double dispatch_ns_per_op = 0;
  double model_flops_per_sample = 0;   // training FLOPs of one sample when countable (Linear-only models); 0 unknown
  // Module types PyTorch's FLOP counter left out of a bundle's count ("nn.LSTM"): the count is
  // partial, and no efficiency is read from it.
  std::vector<std::string> flops_not_counted;
  double peak_flops_per_s = 0;         // measured GEMM peak on the device in this precision (profile runs); 0 unmeasured
  std::map<std::string, double> peak_flops_by_dtype;  // "fp32", "bf16" -> measured GEMM peak (profile runs)
  std::map<std::string, int64_t> op_input_dtypes;  // census: first tensor input dtype -> ops
  std::string forward_output_dtype;    // dtype of the model output, evidence of autocast
  CompileInfo compile_info;            // what compiling did (graph, fusions); empty when not compiled
  int64_t init_ns = 0;                 // process start of the variant to first step
  int64_t steps_cut_by_budget = 0;     // steps not run because the loop's wall-time budget was spent
  int64_t steps_added_for_min_loop = 0;  // measured steps run past spec.steps to reach spec.min_loop_s
  double cpu_util_pct = 0;             // process CPU time over the measured steps / (wall x cores)
  // Warm-up steps the loop ran: --warmup, or more where step times had not settled yet. Absent in
  // records made before it was kept (their warm-up steps are the steps marked warmup).
  std::optional<int64_t> warmup_steps_taken;
  Disturbance disturbance;             // what else ran while the measured steps did
  // Why a lab left this repetition out of every figure and ran it again (e.g. "another process took
  // 48 % of the CPU"); empty: it counts. In run.json "disturbed": the text, no key when empty.
  std::string disturbed;
  // Disturbed past the limits but kept in the figures (the lab's re-runs were spent, or none are
  // made: a profile, a launched rank): the same text. In run.json "disturbed_kept", no key when empty.
  std::string disturbed_kept;
  // Why a lab left this repetition out of every figure without running it again as it was: another
  // process came to hold cores, the lab lowered its threads and measured every variant again at the
  // new count (e.g. "measured at 2 threads; ..."). In run.json "superseded", no key when empty.
  std::string superseded;
  // The loader as it ran: options applied, what could not apply and why, and its counters.
  std::optional<LoaderRun> loader;
  // The dataset: source description, folder, whether this run generated it.
  DatasetInfo dataset;
  // The profiler's capture window, when on: events and drops, trace file and size, measured overhead.
  ProfileWindow profile;
  // The system sampler over the whole variant; empty when the sampler was off.
  SystemSummary system;
  // Data parallel: this record's rank and the job's world size (0 of 1 otherwise); the process
  // group and, in a merged record, each rank's summary and the spread between them.
  int rank = 0;
  int world_size = 1;
  int repetition = 0;                  // --repeat: which run of this variant (0-based)
  std::string label;                   // A/B runs: "A" (the base configuration) or "B" (with --ab's changes)
  ParameterFingerprint final_parameters;  // after the last measured step
  DistributedRun distributed;
  Environment environment;
  std::optional<JobInfo> job;          // the user's own job; absent for built-in scenarios

  bool ok() const { return error.empty(); }
  // Whether the repetition enters estimates: it completed and no lab left it out (disturbed, or
  // measured at a thread count the lab then lowered).
  bool counts() const { return ok() && disturbed.empty() && superseded.empty(); }
};

// Figures derived from the measured (non-warm-up) steps.
struct VariantAggregate {
  int64_t measured_steps = 0;
  int64_t measured_ns = 0;             // sum of measured step times
  double samples_per_s = 0;
  double step_ms_mean = 0, step_ms_p50 = 0, step_ms_p95 = 0, step_ms_stddev = 0;
  std::array<double, kPhaseCount> phase_pct{};  // share of measured step time per phase
  std::array<double, kDataStageCount> data_stage_ms_mean{};  // per measured step's batch
  double data_busy_ms_mean = 0;        // producer wall time per batch
  double comm_pct = 0;                 // data parallel: all-reduce time (hidden or not) / measured time
};
VariantAggregate aggregate(const VariantRecord& record);

// The lab's bf16 pre-flight, as its child process measured it (bf16_probe.json, and run.json's
// details.bf16_probe): {"device"} on a CUDA device; on the CPU also "shape", "threads", "pairs",
// "fp32_ns", "bf16_ns" (one Linear layer's forward + backward, interleaved pairs) and "cpu_isa"
// (flag -> present); {"error"} when it failed.
struct Bf16ProbeTimings {
  std::string device;                   // "cpu" or "cuda"
  std::vector<int64_t> shape;           // rows, in features, out features
  int threads = 0;
  int pairs = 0;
  std::vector<double> fp32_ns, bf16_ns;
  std::map<std::string, bool> cpu_isa;
  std::string error;
};

// A sweep's outcome beyond its variants: the points that could not run and why, the recommended
// point, the chart file, notes, and how many rounds ran.
struct SweepNotApplicable {
  std::string point, why;
};
struct RecommendedPoint {
  int64_t variant_index = 0;            // the recommended point's first record in variants
  int64_t best_index = 0;               // the fastest point's first record
  std::string point, reason;
};
struct SweepDetails {
  double tolerance_pct = 0;
  std::vector<SweepNotApplicable> not_applicable;
  std::optional<RecommendedPoint> recommendation;
  std::string chart;                    // file name in the run folder; empty: no point completed
  std::vector<std::string> notes;
  int repeat = 1;
};

// Per kind of run, what the variants do not hold. In run.json "details": a lab's "bf16_probe" and
// "ab_changes"; a sweep's fields flat ("tolerance_pct", "not_applicable", "recommendation",
// "chart", "notes", "repeat").
// The lab lowered the intra-op threads of its variants (left at their default) because other
// processes came to hold cores: a 2-thread pool beside a busy core on 2 cores waits for its
// straggler on every op (4-5x slower steps). Every variant is measured again at the new count.
struct ThreadLowering {
  int from_threads = 0;
  int to_threads = 0;
  int machine_cores = 0;
  double others_busy_cores = 0;  // the cores other processes kept busy over the lab's sample
  std::string after;             // the repetition whose disturbance set it off, e.g. "bf16 #1"; empty:
                                 // chosen before the first repetition (others already held the cores)
  int repetitions_before = 0;    // repetitions measured before it (at from_threads), kept out of the figures
};

// After a disturbed repetition whose threads other processes' cores were taken from, the lab first
// waits, idle, for those processes to go (within lab.quiet_wait_s for the whole lab) before it
// lowers its threads: a passing burst then costs a wait, not a change of what is measured.
struct QuietWait {
  std::string after;             // the disturbed repetition, e.g. "bf16 #1"
  int machine_cores = 0;
  double others_busy_cores = 0;  // what other processes kept busy when the wait began
  double waited_s = 0;
  bool went = false;             // true: they went, and the repetition was measured again at its threads
  // Went: the repetitions of its round that ran before the wait, measured again after it with the
  // rest of the round (the ones before superseded). 0: it was its round's first.
  int repetitions_again = 0;
};

struct RunDetails {
  std::optional<Bf16ProbeTimings> bf16_probe;
  std::vector<ThreadLowering> thread_lowerings;  // in the order they happened; empty: never
  std::vector<QuietWait> quiet_waits;            // in the order they happened; empty: never
  std::string ab_changes;               // A/B runs: what B changed, e.g. "workers=1"
  std::optional<SweepDetails> sweep;
};

struct RunRecord {
  int schema_version = kRunSchemaVersion;
  std::string run_id;
  std::string kind;                    // "baseline" | "run" | "profile" | "ab" | "sweep"
  std::string created_utc;             // ISO 8601
  std::string scenario;
  Environment environment;
  std::vector<VariantRecord> variants;
  std::vector<std::string> reading;    // the lab's interpretation, one sentence a line
  RunDetails details;
};

nlohmann::json to_json(const VariantRecord& record);
nlohmann::json to_json(const JobInfo& job);
JobInfo job_info_from_json(const nlohmann::json& j);
VariantRecord variant_record_from_json(const nlohmann::json& j);
nlohmann::json to_json(const RunRecord& record);
nlohmann::json to_json(const Bf16ProbeTimings& probe);
Bf16ProbeTimings bf16_probe_from_json(const nlohmann::json& j);
// Throws InputError on an unknown schema version or a malformed document.
RunRecord run_record_from_json(const nlohmann::json& j);

// File helpers: atomic write; read accepts a run folder or a run.json path.
void write_run_record(const std::string& path, const RunRecord& record);
RunRecord read_run_record(const std::string& path_or_folder);
void write_variant_record(const std::string& path, const VariantRecord& record);
VariantRecord read_variant_record(const std::string& path);
// The path of a variant's trace in run_dir ("" when it has none): profile.trace read relative to
// the run folder, or to its variants/ when a bare file name (runs recorded before traces/).
std::string trace_path_in_run(const std::string& run_dir, const VariantRecord& variant);

}  // namespace trainlab
