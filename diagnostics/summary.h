// The Summary (DESIGN §2): the only input of the rules and the verdict. Plain numbers reduced from a
// trainlab run (its variant record, plus its profile when one was captured) or from an imported
// PyTorch profiler trace; nothing here knows which. Times in nanoseconds or milliseconds as named,
// shares in percent of the measured step time. A figure that the source could not provide is an
// empty std::optional (never a made-up 0). No LibTorch.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace trainlab {

// Distribution of one series (step times, op durations, a system metric).
struct Distribution {
  int64_t count = 0;
  double min = 0, p50 = 0, p95 = 0, p99 = 0, max = 0, mean = 0, stddev = 0;
};

// Where the measured step time went, in percent of it; the parts add up to ~100.
struct StepShares {
  double data_wait_pct = 0;       // training thread blocked on the input pipeline
  double host_to_device_pct = 0;  // batch copies to the device (0 on CPU)
  double compute_pct = 0;         // forward + backward + optimizer work (device busy with kernels on GPU)
  double communication_pct = 0;   // exposed collective time (not hidden behind compute)
  double framework_pct = 0;       // host dispatch not covered by device work, host-wait gaps (GPU traces)
  double other_pct = 0;           // the rest (logging, callbacks, untraced host work)
};

struct NamedTime {
  std::string name;
  int64_t count = 0;
  int64_t total_ns = 0;
};

// A user's Python function and its share of the data wait, or of the step (python_frames.h).
struct PythonFrameShare {
  std::string frame;  // "dataset.py(31): __getitem__", as torch.profiler names it
  double share_pct = 0;
};

// One collective as the trace's own args name it (torch's record_param_comms: "Collective name",
// "In msg nelems", ...), per process group.
struct CollectiveCalls {
  std::string name;            // e.g. "allreduce", "_allgather_base", "all_to_allv"
  std::string process_group;   // "Process Group Name", "" when not written
  std::string dtype;           // e.g. "BFloat16", "" when not written
  int group_size = 0;          // 0 when not written
  double calls_per_step = 0;
  double median_in_nelems = 0;   // elements per call (one size per entry: each bucket size is its own)
  double median_out_nelems = 0;
};

// Host synchronisations inside the model's own code: the sync op and the module whose forward calls it
// (torch.profiler's "nn.Module: Gate_3" scopes in a trace with stacks, "Gate" here).
struct ModelSync {
  std::string op;      // "aten::item"
  std::string module;  // "Gate"
  double per_step = 0;
};

// Inside the data pipeline of a user's job (`trainlab profile -- COMMAND`): where the loader's
// producers (DataLoader workers, or the training process with num_workers=0) spend their busy time,
// stage by stage, as the in-job recorder timed it; and the main process's wait for batches split
// into "no batch was ready" and receiving one.
struct LoaderStageShare {
  std::string name;         // "PIL.Image.Image.convert", "RandomResizedCrop", "default_collate"
  std::string kind;         // read, decode, transform, dataset, collate, handoff, other
  double share_pct = 0;     // of the producers' busy wall time
  double cpu_pct = 0;       // the stage's CPU time over its wall time (low: waiting, e.g. on storage)
  double ms_per_batch = 0;  // wall time per batch built
};
struct LoaderStages {
  std::string producers;    // "2 workers", "the main process"
  int64_t processes = 0;    // producer processes summed (workers)
  double busy_ms_per_batch = 0;  // producers' busy wall time per batch
  double busy_cpu_pct = 0;       // their CPU over their busy wall time
  double named_pct = 0;          // share of busy time under a named stage (not "other")
  // What the shares are of: "wall" (busy wall time), or "cpu" (busy CPU time) where the job's
  // threads waited for a CPU much of the time (a shared machine): there wall time is mostly the
  // run queue's, and the stages are ranked by the work they did.
  std::string shares_of = "wall";
  std::optional<double> runqueue_wait_pct;  // the job's, over its measured steps (why "cpu")
  std::vector<LoaderStageShare> stages;  // largest first
  std::map<std::string, double> kind_pct;  // share of busy time by kind
  // The main process's data wait (the steps' data_wait), in % of it: no batch was ready (workers
  // too slow or too few) versus receiving one; absent without the split.
  std::optional<double> wait_not_ready_pct, wait_receive_pct;
  // The training DataLoader as the user's code built it: where, and its settings today.
  std::string loader_call;       // "train.py:212"
  std::string loader_settings;   // "num_workers=2, prefetch_factor=2, pin_memory=False, persistent_workers=False"
  std::string dataset;           // the Dataset class
};

// What a baseline lab measured for a change the variant lacks (bf16 over fp32, compiling over the
// eager variant), from its kept repetitions, paired (diagnostics/lab_measured.h uses it).
struct LabMeasuredGain {
  std::string change;      // the finding's change it answers: "bf16" or "compiled"
  std::string comparison;  // what was compared, e.g. "fp32 -> bf16" or "bf16 -> bf16+compiled"
  double gain_pct = 0;     // samples/s, B over A
  double low_pct = 0, high_pct = 0;  // its 95 % interval; equal to gain_pct without one
  bool has_interval = false;
  int repetitions = 0;     // paired repetitions behind it
};

struct Summary {
  // --- where it came from
  std::string source;                // "trainlab" (a run's variant), "job" (the user's own job) or "kineto" (an imported trace)
  std::string label;                 // variant name or trace file name
  std::string host;                  // the machine it ran on, where the source says (trainlab's traces and records)
  std::string scenario;              // trainlab runs; empty for traces
  std::string device;                // "cpu", "cuda:0", or a GPU name from the trace
  bool on_gpu = false;
  // The device's capabilities, where the source states them (a trace's deviceProperties, its runtime
  // names and versions): ROCm (HIP) or CUDA, and a CUDA device's compute capability (7.0 for a V100).
  bool rocm = false;
  std::optional<double> compute_capability;

  // --- steps
  std::vector<double> step_ms;       // measured steps in order (warm-up excluded)
  std::vector<int64_t> step_numbers; // their indices (trainlab) or ProfilerStep#N numbers (traces)
  Distribution step;                 // of step_ms
  double samples_per_s = 0;          // 0 when the batch size is unknown (traces)
  int64_t batch_size = 0;            // global batch per step; 0 when unknown
  StepShares shares;
  // The same shares per measured step (or per iteration found in a trace), in step order: the verdict
  // puts intervals on the shares from these. Empty when the source has only the aggregate.
  std::vector<StepShares> step_shares;
  // How the steps were found: "record" (trainlab's own loop), "ProfilerStep" (torch.profiler's
  // schedule), "optimizer step" / "repeated op" (iterations recovered from a trace without
  // ProfilerStep# spans), "whole trace" (no repetition found: one step).
  std::string steps_from;
  // Traces: the leading iterations that are start-up (cold_start.h), set aside before everything below;
  // all_cold_start where every iteration is (then nothing is set aside and the verdict does not advise).
  int64_t cold_start_steps = 0;
  double cold_start_ms = 0;
  double cold_start_pct = 0;                // of all the trace's iterations' time
  bool all_cold_start = false;
  std::string cold_start_line;              // "step 0 takes 85.0 % of the trace (...): start-up; the shares are of steps 1-5"
  std::optional<double> device_busy_pct;  // GPU: kernel time union / step time; CPU: compute share
  // GPU traces: device idle time split by what the host's main thread was doing during each idle gap,
  // in percent of the step time (keys: "dataloader", "collective", "sync", "allocator", "launch",
  // "host_ops", "host_idle"). Each key's time is also counted in one share above: dataloader in
  // data_wait, collective in communication, the others in framework. Empty when not measured.
  std::map<std::string, double> idle_cause_pct;

  // --- ops and kernels (from a profile or trace; empty optional without one)
  std::optional<double> ops_per_step;         // host operators (top-level and nested)
  std::optional<double> kernels_per_step;
  std::optional<Distribution> kernel_us;      // kernel durations
  std::optional<Distribution> op_us;          // host op durations (top-level ops)
  std::optional<double> short_kernel_pct;     // kernels shorter than the threshold, as % of kernels
  std::optional<double> host_syncs_per_step;  // device synchronisations, or .item()-style reads on CPU,
                                              // outside the DataLoader (the loop's own)
  std::optional<double> loader_syncs_per_step;  // the same inside DataLoader __next__ spans (the data
                                                // pipeline's: transforms that read random parameters)
  std::vector<NamedTime> top_ops;             // by total time, largest first (at most 15)
  std::vector<NamedTime> top_kernels;         // by total time, largest first (at most 15)
  std::map<std::string, int64_t> kernel_precision_ns;  // "bf16"/"fp16"/"fp32"/"other" -> kernel time
  std::map<std::string, int64_t> device_activity_ns;   // "kernel"/"memcpy"/"memset"/"sync" -> time

  // --- precision and shapes
  std::string compute_dtype;                  // "fp32", "bf16", "fp16" or "" when unknown
  std::optional<double> fp32_op_share_pct;    // ops whose first input is float32, % of ops
  std::optional<double> gemm_time_pct;        // matmul and convolution work: GPU, their kernels' share of kernel
                                              // time; CPU, those ops' self time, % of all host ops' self time
  int64_t gemm_ops = 0;                       // matmul-family ops seen with shapes
  int64_t gemm_unaligned_ops = 0;             // of those, any M/N/K not a multiple of 8
  std::vector<std::string> unaligned_gemm_examples;  // e.g. "aten::addmm [4096,1000]x[1000,10]"

  // --- memory
  std::vector<double> memory_mib;              // per measured step (RSS on CPU, allocated on CUDA)
  std::optional<double> memory_growth_pct;    // moving-average rise, first to last window, % of the first
  int64_t peak_memory_bytes = 0;

  // --- system metrics over the run: name -> distribution (cpu.total_pct, cpu.iowait_pct, gpu0.util_pct, ...)
  std::map<std::string, Distribution> system;
  int logical_cores = 0;

  // --- the data pipeline
  std::optional<int64_t> loader_workers;      // 0: batches built on the training thread
  std::optional<int64_t> loader_prefetch;
  std::optional<bool> pin_memory;
  std::optional<double> data_busy_ms;         // producer wall time per batch
  std::optional<double> dataloader_next_ms;   // traces: DataLoader __next__ per step
  std::vector<PythonFrameShare> data_wait_python_frames;  // traces with stacks: the user's functions in it
  std::vector<PythonFrameShare> host_python_frames;       // ... and their own time, as a share of the step
  std::vector<PythonFrameShare> copy_to_host_python_frames;  // ... and where the blocking copies to the host are made
  std::optional<LoaderStages> loader_stages;  // a job's stages inside the data pipeline (recorder)

  // --- data parallel
  int world_size = 1;
  int rank = 0;
  std::optional<int> ranks_on_machine;        // the ranks sharing this rank's machine (records; else world_size)
  std::optional<int> intra_op_threads;        // each rank's (records: LibTorch's threads in the child)
  std::optional<double> comm_total_pct;       // collective time, hidden under compute or not
  std::optional<double> comm_overlapped_pct;  // collective time under compute (other streams, other threads)
  std::map<std::string, double> comm_family_pct;  // collective kernel time by family (collective_kinds.h)
  std::vector<CollectiveCalls> collectives;       // from the trace's args, most calls first
  // Traces: each collective's run (start, end on the trace's clock, ns) in the measured steps, in
  // start order (collective_kinds.h); a job matches the k-th run of every rank.
  std::vector<std::pair<int64_t, int64_t>> collective_runs_ns;
  // ... and the rank's own work under each of those runs (merged spans on the same clock, clipped to
  // the run): its other kernels on a GPU, the loop thread's ops where the host runs the collectives,
  // the loop's compute phases in trainlab's CPU traces. Empty where the trace does not show what ran
  // under its collectives (host launches without their device work): a wait there is not split.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> collective_run_own_work_ns;
  std::vector<double> rank_step_p50_ms;       // one per rank: its own work a step (step minus exposed communication)
  std::optional<double> rank_spread_pct;      // (slowest - fastest) / fastest own work a step
  // A job of rank traces (job_diagnosis.h): the straggler's own work against the other ranks' median,
  // paired step by step, with its 95 % interval; rank_spread_pct then holds that estimate.
  std::optional<double> rank_spread_low_pct, rank_spread_high_pct;
  std::optional<int> straggler_rank;          // the rank with the most own work per step (merged runs, rank folders)

  // --- efficiency
  std::optional<double> model_flops_per_step;  // unset where the count is partial (flops_not_counted)
  std::vector<std::string> flops_not_counted;   // module types the FLOP count left out ("nn.LSTM")
  std::optional<double> achieved_flops_per_s;
  std::optional<double> peak_flops_per_s;     // measured by a GEMM on the same device
  std::optional<double> bf16_gemm_speedup;    // measured bf16 GEMM peak over fp32 on the same device
  // A lab's variant: what the lab measured for the changes this variant lacks; empty elsewhere.
  std::vector<LabMeasuredGain> lab_measured;

  // --- the run around the loop
  std::optional<double> init_ms;              // process start to first step
  std::optional<double> loop_ms;              // the measured steps
  std::vector<double> losses;                 // per measured step; may hold NaN/Inf
  std::vector<double> grad_norms;             // per measured step; empty when not measured

  // --- already in place (traces; diagnostics/in_place.h): the actions never propose these again
  // torch.compile'd regions entered per step ("Torch-Compiled Region" spans, else AOTAutograd's
  // CompiledFunction); more than one per step are graph breaks. Empty when the trace shows none.
  std::optional<double> compiled_regions_per_step;
  std::string compiled_region_name;           // the span name counted
  // How much runs compiled: GPU traces, the kernel time launched from inside compiled code (regions,
  // CompiledFunction[Backward]); CPU traces, the steps' time inside it. compiled_share_of says which.
  std::optional<double> compiled_share_pct;
  std::string compiled_share_of;              // "kernel time" or "the step"
  std::optional<double> collective_calls_per_step;  // collectives the loop launches (host calls)
  std::optional<double> comm_in_backward_pct;       // of them, % launched while backward runs (DDP's hooks)
  std::string loader_iterator;                // "_MultiProcessingDataLoaderIter" (workers) or "_SingleProcessDataLoaderIter"
  std::string pin_memory_evidence;            // what showed pinning in a trace ("aten::_pin_memory", a pinned memcpy)
  std::vector<ModelSync> model_syncs;         // syncs inside the model's modules, most per step first
  std::optional<double> cuda_graph_launches_per_step;  // cudaGraphLaunch calls (mode="reduce-overhead")
  // ... and from a trainlab record: the run's own settings
  std::string compiled_by;                    // a --compiled on run's compiler ("inductor"); "" when not compiled
  std::string comm_mode;                      // data parallel: "overlap" or "serial" (--comm-mode); "" unknown
  std::optional<double> bucket_mb;            // data parallel: the gradient bucket cap (--bucket-mb)

  // --- data quality (makes the verdict inconclusive when bad)
  int64_t dropped_events = 0;
  std::vector<std::string> notes;             // what could not be measured and why
};

// "nn.LSTM, nn.GRU": the module types a partial FLOP count left out, for the lines that say so.
inline std::string join_flops_not_counted(const Summary& s) {
  std::string out;
  for (const std::string& name : s.flops_not_counted) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace trainlab
