// A variant: everything that defines one measured training configuration (scenario, precision,
// compiled, batch, threads, loop knobs, scenario knobs). Torch-free so parsing is testable fast.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace trainlab {


enum class Precision { kFp32, kBf16 };
enum class DeviceChoice { kAuto, kCpu, kCuda };
// Data parallel: gradient all-reduce started from hooks during backward, or all after it.
enum class CommMode { kOverlap, kSerial };
// What a compiled variant runs: Inductor's ahead-of-time forward+backward package (the default),
// or the TorchScript-traced forward run by the JIT (kept under its own name).
enum class Compiler { kInductor, kTorchScript };

std::string to_string(Precision precision);
std::string to_string(DeviceChoice device);
std::string to_string(CommMode mode);
CommMode parse_comm_mode(const std::string& text);
std::string to_string(Compiler compiler);
Compiler parse_compiler(const std::string& text);
// Throw InputError with the accepted values on anything else.
Precision parse_precision(const std::string& text);
DeviceChoice parse_device(const std::string& text);
bool parse_on_off(const std::string& option, const std::string& text);

// Limits that make a value impossible (bad input, exit 2) rather than merely too large for the
// machine (a runtime failure recorded in the variant's result).
inline constexpr int64_t kMaxBatchSize = int64_t{1} << 31;
inline constexpr int64_t kMaxSteps = 1'000'000;
inline constexpr int kMaxThreads = 4096;
inline constexpr int kMaxLoaderWorkers = 256;
inline constexpr int kMaxLocalRanks = 64;
inline constexpr int kMaxPrefetch = 64;
inline constexpr int64_t kMinSampleIntervalMs = 10, kMaxSampleIntervalMs = 60'000;
inline constexpr double kMaxCallbackMs = 60'000;
inline constexpr double kMaxLoopBudgetS = 86'400;
inline constexpr double kMaxBucketMb = 65'536;
inline constexpr double kMaxDistTimeoutS = 86'400;  // at least 1

inline constexpr int64_t kMinBudgetedSteps = 2;  // measured steps a loop budget never cuts below
inline constexpr int64_t kMaxExtendedSteps = 5000;  // measured steps min_loop_s never goes past

struct VariantSpec {
  std::string scenario;            // a built-in scenario's name, or the model bundle's
  std::string model;               // a model bundle folder (absolute; `trainlab model add`); empty: built-in
  std::string data;                // the user's saved batches for a bundle (file or folder; absolute); empty: synthesized
  Precision precision = Precision::kFp32;
  bool compiled = false;
  Compiler compiler = Compiler::kInductor;  // what `compiled` runs
  int64_t batch_size = 0;          // 0 until resolved: the scenario's default
  int threads = 0;                 // intra-op threads; 0 = LibTorch's default
  int64_t steps = 50;              // measured steps
  int64_t warmup_steps = 5;        // run first, never timed
  // Wall-time budget of the loop in seconds (0 = none): once a third of it is spent, warm-up ends
  // after its first step; once all of it is spent, measurement stops after kMinBudgetedSteps
  // measured steps. Keeps the lab's wall time bounded when a variant is far slower than the others
  // (bf16 emulated on a CPU without bf16 instructions). Ignored with data parallelism (ranks must run
  // the same steps) and with a profile window (its steps are fixed).
  double max_loop_s = 0;
  // Measured time the loop reaches (0 = none): measurement goes on past `steps` until the measured
  // steps have lasted this long, at most kMaxExtendedSteps measured steps, max_loop_s still ending
  // it. The lab, --ab and --repeat set it (lab.min_measured_s) where --steps is not given, so that
  // every repetition lasts long enough for the disturbance guard to judge it (50 steps of 3 ms do
  // not). Ignored with data parallelism and a profile window.
  double min_loop_s = 0;
  uint64_t seed = 1234;
  int64_t sync_every_steps = 10;   // read the loss as a number every N steps (1 = each step; 0 = never)
  int64_t callback_every_steps = 0;  // host-side callback (logging/eval/checkpoint work) every N steps
  double callback_ms = 0.0;        // cost of that callback
  // The seeded leak: each step's loss kept as a tensor with its graph (backward retains it), the
  // classic `total += loss` bug; memory then grows step after step.
  bool keep_loss_graphs = false;
  // The global gradient norm every N steps (0 = never), for the exploding/vanishing gradient rule:
  // one pass over the gradients after backward, kept on the device, read after the loop.
  int64_t grad_norm_every_steps = 10;
  DeviceChoice device = DeviceChoice::kAuto;
  // The data loader.
  int workers = 0;                 // loader threads; 0 = batches built in the training thread
  int prefetch = 2;                // batches in flight per worker
  bool persistent_workers = true;  // false: workers restart at each epoch boundary
  bool pin_memory = false;         // pinned staging buffers + non-blocking copies (CUDA only)
  std::string data_dir;            // where on-disk datasets are generated; empty = default
  // The profiler: the system sampler for the whole run (on by default: it costs well under 1 %),
  // and with `profile` a capture window of measured steps (ops, phases, annotations) and a trace.
  bool system_sampler = true;
  bool profile = false;
  int64_t window_start = -1;       // first measured step of the window; -1 = default (see resolve)
  int64_t window_steps = -1;       // steps in the window; -1 = default
  int64_t sample_interval_ms = 500;  // system sampler period
  bool record_shapes = false;      // ops' input shapes in the trace
  double op_sample = 1.0;          // (0, 1]: the share of ops the window records (1: every op)
  bool trace_gzip = true;          // trace.json.gz (else plain .json)
  // Data parallel (c10d Gloo): local ranks launched by trainlab (1 = none; under a launcher that
  // sets WORLD_SIZE/RANK/MASTER_* each process is one rank), the all-reduce mode, the bucket cap
  // and how long a rank waits for its peers (rendezvous, each collective) before failing.
  int nproc = 1;
  CommMode comm_mode = CommMode::kOverlap;
  double bucket_mb = 25.0;
  double dist_timeout_s = 60.0;
  std::map<std::string, double> knobs;  // scenario knobs; defaults filled in by resolve()

  // "fp32", "bf16", "bf16+compiled" (Inductor), "fp32+torchscript", ...
  std::string name() const;
  // "workers=2 prefetch=4 pin=off" (prefetch left out with 0 workers; "restart" when not persistent)
  std::string loader_label() const;
};

// Parses a capture window "START:COUNT" (measured steps); throws InputError on anything else.
void parse_window(const std::string& text, int64_t* start, int64_t* count);

// Checks every scenario-independent value (steps, warm-up, threads, loader, window, ranks) once the
// batch size is set, and fills the default capture window. Throws InputError naming the offending
// option. Scenario defaults and knobs: resolve() in scenarios/registry.h.
void check_spec(VariantSpec& spec);

// Sets one field from text, as in `--set workers=2`, `--ab ...` or `--override bf16:batch=64`: a
// run option's name (core/run_options.h) or else a scenario knob (checked by resolve()). Throws
// InputError on unparsable values.
void apply_setting(VariantSpec& spec, const std::string& key, const std::string& value);

// Parses a whole number / a real number from an option value; throws InputError naming the option.
int64_t parse_int(const std::string& option, const std::string& text);
double parse_double(const std::string& option, const std::string& text);

void to_json(nlohmann::json& j, const VariantSpec& spec);
void from_json(const nlohmann::json& j, VariantSpec& spec);

}  // namespace trainlab
