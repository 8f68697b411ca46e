// The training loop and the variant child's entry point.
#include "harness/train/training_loop.h"

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <ATen/autocast_mode.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/text.h"
#include "core/trace_metadata.h"
#include "core/hash.h"
#include "core/json_text.h"
#include "core/step_progress.h"
#include "harness/dist/data_parallel.h"
#include "harness/dist/dist_env.h"
#include "harness/dist/record_gather.h"
#include "harness/dist/gradient_buckets.h"
#include "harness/train/autocast_scope.h"
#include "harness/train/batch_loader.h"
#include "harness/train/compiled_forward.h"
#include "harness/train/environment.h"
#include "harness/train/inductor_step.h"
#include "harness/train/phase_clock.h"
#include "profiler/annotate.h"
#include "profiler/chrome_trace.h"
#include "profiler/disturbance.h"
#include "profiler/op_census.h"
#include "profiler/profile_summary.h"
#include "profiler/session.h"
#include "scenarios/data/dataset_cache.h"
#include "scenarios/registry.h"
#include "scenarios/workload.h"
#include "core/units.h"

namespace trainlab {
namespace {

// The fixed data slice: this many batches, reused every epoch.
constexpr int64_t kSliceBatches = 32;
// Bound of each thread's event buffer in the capture window.
constexpr size_t kMaxWindowEventsPerThread = 1'000'000;

// Stands in for logging / evaluation / checkpoint work done on the host every N steps: copies
// the parameters to host memory and checksums them, repeating until the requested cost is spent.
double run_host_callback(torch::nn::Module& model, double cost_ms) {
  const int64_t deadline_ns = now_ns() + ms_to_ns(cost_ms);
  double checksum = 0;
  do {
    for (const torch::Tensor& p : model.parameters()) {
      torch::Tensor host = p.detach().to(torch::kCPU, torch::kFloat, /*non_blocking=*/false, /*copy=*/true);
      const float* data = host.data_ptr<float>();
      for (int64_t i = 0; i < host.numel(); i += 64) checksum += data[i];
    }
  } while (now_ns() < deadline_ns);
  return checksum;
}

std::vector<torch::Tensor> to_device(const std::vector<torch::Tensor>& tensors, const torch::Device& device) {
  std::vector<torch::Tensor> out;
  out.reserve(tensors.size());
  for (const torch::Tensor& t : tensors) out.push_back(t.to(device, /*non_blocking=*/true));
  return out;
}

// The parameters after the last measured step: an FNV-1a hash of their bytes (equal across
// data-parallel ranks when they stayed in sync) and each tensor's sum and L2 norm (to compare
// with a single-process run within a tolerance).
ParameterFingerprint parameter_fingerprint(torch::nn::Module& model) {
  uint64_t hash = kFnv1aOffset;
  ParameterFingerprint fingerprint;
  for (const torch::Tensor& p : model.parameters()) {
    const torch::Tensor host = p.detach().to(torch::kCPU).contiguous();
    hash = fnv1a(host.data_ptr(), static_cast<size_t>(host.numel() * host.element_size()), hash);
    const torch::Tensor as_double = host.to(torch::kDouble);
    fingerprint.tensors.push_back({as_double.sum().item<double>(), as_double.norm().item<double>()});
  }
  fingerprint.hash = hex16(hash);
  return fingerprint;
}

// CPU time of all the process's threads (training, intra-op pool, loader workers).
int64_t process_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

int64_t peak_rss_bytes() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // ru_maxrss is in KiB on Linux
}

// Memory in use after a step: CUDA allocated bytes on the device, else the process's anonymous
// resident memory: resident minus shared pages (/proc/self/statm, one small read), so file pages of
// mmap'd datasets, which the kernel may keep or drop, do not look like a leak.
int64_t memory_in_use_bytes(const torch::Device& device) {
  if (device.is_cuda()) {
    return c10::cuda::CUDACachingAllocator::getDeviceStats(device.index())
        .allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)]
        .current;
  }
  long size_pages = 0, resident_pages = 0, shared_pages = 0;
  FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr) return 0;
  const int read = std::fscanf(statm, "%ld %ld %ld", &size_pages, &resident_pages, &shared_pages);
  std::fclose(statm);
  return read == 3 ? static_cast<int64_t>(resident_pages - shared_pages) * ::sysconf(_SC_PAGESIZE) : 0;
}

// Host cost of one small op as the training step pays it (dispatch, autograd bookkeeping, a kernel
// launch on CUDA): chains of 2000 one-element adds that record a graph, best of three rounds.
double measure_dispatch_ns_per_op(const torch::Device& device) {
  constexpr int kOps = 2000;
  const torch::Tensor a = torch::ones({1}, torch::TensorOptions().device(device).requires_grad(true));
  const torch::Tensor b = torch::ones({1}, torch::TensorOptions().device(device));
  double best_ns = 0;
  for (int round = 0; round < 3; ++round) {
    const int64_t start_ns = now_ns();
    torch::Tensor x = a;
    for (int k = 0; k < kOps; ++k) x = x + b;
    const double per_op_ns = static_cast<double>(now_ns() - start_ns) / kOps;
    if (round == 0 || per_op_ns < best_ns) best_ns = per_op_ns;
  }
  return best_ns;
}

// Training FLOPs of one sample when the model's parameters all sit in Linear layers: 2*in*out
// per layer forward; backward twice that (input and weight gradients) except for the first layer,
// whose input needs no gradient. 0 when another parametrised layer makes the count unknown.
double linear_model_flops_per_sample(torch::nn::Module& model) {
  double total = 0;
  bool first = true;
  for (const auto& module : model.modules(/*include_self=*/true)) {
    if (module->parameters(/*recurse=*/false).empty()) continue;
    const auto* linear = module->as<torch::nn::Linear>();
    if (linear == nullptr) return 0;
    const double forward =
        2.0 * static_cast<double>(linear->options.in_features()) * static_cast<double>(linear->options.out_features());
    total += forward * (first ? 2.0 : 3.0);
    first = false;
  }
  return total;
}

// The device's GEMM peak in one dtype, measured: square GEMMs of 256, 1024 and 2048 for ~0.1 s
// each after a warm-up, the best rate. A size whose single GEMM takes over 50 ms (an emulated
// dtype, e.g. bf16 on a CPU without AVX512-BF16/AMX) ends the probe: the larger would only be
// slower to time. CUDA: timed between synchronisations, which this measurement needs. The first
// GEMM of each size is a warm-up left out of every figure, the 50 ms test included: it carries the
// dtype's one-time costs (on an H200 the first bf16 GEMM loaded its kernels and took ~80 ms, so the
// probe stopped at 256 and read bf16 at 0.4 GFLOP/s against fp32's 47 TFLOP/s, a "speedup" of 1e-5
// that silenced the precision rule on every GPU profile).
double measure_peak_gemm_flops_per_s(const torch::Device& device, torch::ScalarType dtype) {
  torch::NoGradGuard no_grad;
  auto sync = [&] {
    if (device.is_cuda()) c10::cuda::device_synchronize();
  };
  double best = 0;
  for (const int64_t n : {256, 1024, 2048}) {
    const auto options = torch::TensorOptions().device(device).dtype(dtype);
    const torch::Tensor a = torch::randn({n, n}, options), b = torch::randn({n, n}, options);
    (void)torch::mm(a, b);  // warm-up: first-use costs
    sync();
    int64_t start_ns = now_ns();
    (void)torch::mm(a, b);  // the cost of one
    sync();
    const int64_t one_ns = now_ns() - start_ns;
    int64_t reps = 0, elapsed_ns = 0;
    start_ns = now_ns();
    while (elapsed_ns < 100'000'000 && one_ns < 50'000'000) {
      (void)torch::mm(a, b);
      ++reps;
      sync();
      elapsed_ns = now_ns() - start_ns;
    }
    const double flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
    best = std::max(best, reps > 0 ? flops * static_cast<double>(reps) / ns_to_s(elapsed_ns)
                                   : flops / ns_to_s(one_ns));
    if (one_ns >= 50'000'000) break;
  }
  return best;
}

}  // namespace

namespace {

// The profiler session's options: the system sampler from the start (initialisation included), and
// with --profile the capture window, counted in steps from the first warm-up step.
SessionOptions profiler_options_for(const VariantSpec& spec, bool use_cuda) {
  SessionOptions options;
  options.window_start_step = spec.profile ? spec.warmup_steps + spec.window_start : 0;
  options.window_steps = spec.profile ? spec.window_steps : 0;
  options.sample_interval_ms = spec.system_sampler ? spec.sample_interval_ms : 0;
  options.record_shapes = spec.record_shapes;
  options.op_sample_fraction = spec.op_sample;
  options.capture_device = use_cuda;
  options.max_events_per_thread = kMaxWindowEventsPerThread;
  return options;
}

// What a variant trains with, built before the loop: the device, this process's rank, the model
// and optimizer, the process group, the loader and the compiled forward.
struct TrainingSetup {
  torch::Device device{torch::kCPU};
  bool use_cuda = false;
  bool bf16 = false;
  DistEnv dist;
  std::unique_ptr<Workload> workload;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::unique_ptr<DataParallel> data_parallel_owned;  // until run_variant hands it to its caller
  DataParallel* data_parallel = nullptr;
  std::unique_ptr<BatchLoader> loader;
  std::unique_ptr<CompiledForward> compiled;  // the compiled variant under --compiler torchscript: the traced forward
  std::unique_ptr<InductorStep> inductor;     // the compiled variant: Inductor's forward+backward package
  CompileInfo inductor_info;                  // what building the package did
  TraceClock trace_clock;                     // the trace's time zero (agreed by the ranks) and epoch offset

  // Forward and loss under autocast when bf16 (compiled graphs get their casts from the JIT's
  // autocast pass, which runs when eager autocast is on). With Inductor the package runs forward
  // and backward at once (exported under autocast) and the gradients are already in .grad().
  torch::Tensor forward_and_loss(const std::vector<torch::Tensor>& inputs, const torch::Tensor& targets,
                                 torch::Tensor* output) {
    if (inductor) {
      *output = inductor->forward_backward(inputs, targets);
      return *output;
    }
    AutocastScope autocast(device.type(), bf16);
    std::vector<torch::Tensor> prepared = workload->prepare(inputs);
    *output = compiled ? (*compiled)(prepared) : workload->body(prepared);
    return workload->loss(*output, inputs, targets);
  }
};

// The device, from the spec and LOCAL_RANK (one CUDA device per rank: NCCL refuses two ranks on
// one device); the record learns it, the environment and the rank.
torch::Device choose_device(const VariantSpec& spec, bool use_cuda, const DistEnv& dist, VariantRecord& record) {
  if (spec.device == DeviceChoice::kCuda && !use_cuda) {
    throw InputError("--device cuda: no CUDA device is usable here (LibTorch finds none, though the driver "
                     "counted one); use --device cpu or auto");
  }
  const int cuda_index = use_cuda && dist.distributed() ? dist.local_rank : 0;
  if (use_cuda) {
    const int devices = static_cast<int>(torch::cuda::device_count());
    if (cuda_index >= devices) {
      throw InputError("LOCAL_RANK " + std::to_string(cuda_index) + " needs CUDA device " + std::to_string(cuda_index) +
                       " but " + std::to_string(devices) + " is/are usable (one device per rank; --device cpu runs "
                       "the ranks on the CPU over Gloo)");
    }
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(cuda_index));  // current device for streams, events, NCCL
  }
  record.device = use_cuda ? "cuda:" + std::to_string(cuda_index) : "cpu";
  record.environment = capture_environment();
  record.rank = dist.rank;
  record.world_size = dist.world_size;
  if (dist.distributed()) {
    std::cout << "trainlab: rank " << dist.rank << " of " << dist.world_size << " pid " << ::getpid() << std::endl;
  }
  return use_cuda ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(cuda_index)) : torch::Device(torch::kCPU);
}

// The loader's settings as they apply (pinned staging buffers only mean something when batches
// are copied to a CUDA device).
LoaderRun loader_settings(const VariantSpec& spec, bool use_cuda) {
  LoaderRun run;
  run.workers = spec.workers;
  if (spec.workers > 0) run.prefetch = spec.prefetch;
  run.persistent_workers = spec.persistent_workers;
  run.pin_memory_requested = spec.pin_memory;
  run.pin_memory_applied = spec.pin_memory && use_cuda;
  if (spec.pin_memory && !run.pin_memory_applied) {
    run.pin_memory_note = "not applicable: batches stay on the CPU (no CUDA device in use)";
  }
  return run;
}

// The compiled variant's Inductor package, built (or found) before the loop: its time is
// initialisation, never a measured step. Throws InductorUnavailable with the reason when it cannot
// be built: no fallback, the variant is recorded as not measured.
std::unique_ptr<InductorStep> build_inductor_step(const VariantSpec& spec, TrainingSetup& t, CompileInfo& info) {
  InductorPackageRequest request;
  request.scenario = spec.scenario;
  request.bundle = spec.model;
  request.knobs_json = nlohmann::json(spec.knobs).dump();
  request.precision = t.bf16 ? "bf16" : "fp32";
  request.device = t.device.is_cuda() ? "cuda" : "cpu";
  if (!t.device.is_cuda()) request.cpu_threads = at::get_num_threads();  // the kernels are built for it
  // A bundle keeps its packages itself (`trainlab model add` builds the first one there).
  request.cache_root = !spec.model.empty() ? spec.model : spec.data_dir.empty() ? default_data_root() : spec.data_dir;
  const Batch example = t.loader->first_batch();  // every batch has these shapes
  request.inputs = batch_shapes(example.inputs, example.targets);
  const InductorPackage package = prepare_inductor_package(request);
  auto step = std::make_unique<InductorStep>(package, t.workload->model(), t.workload->tied_parameters());
  info.method = kInductorMethod;
  info.fuser = "inductor";
  info.fusion_groups = package.fused_kernels;
  info.compile_s = package.export_s + package.compile_s;
  info.cache_hit = package.cache_hit;
  info.compiler_workaround = package.compiler_workaround;
  std::cout << "trainlab: " << spec.name() << ": Inductor package " << (package.cache_hit ? "found" : "built")
            << " (export + compile " << info.compile_s << " s, " << count_noun(package.fused_kernels, "fused kernel")
            << (package.gradient_check.empty() ? "" : "; gradients vs eager autograd: " + package.gradient_check)
            << (package.no_gradient.empty() ? "" : "; " + count_noun(package.no_gradient.size(), "parameter") +
                                                       (package.no_gradient.size() == 1 ? " gets" : " get") +
                                                       " no gradient")
            << ")" << std::endl;
  if (!package.compiler_workaround.empty()) {
    std::cout << "trainlab: " << spec.name() << ": " << package.compiler_workaround << std::endl;
  }
  return step;
}

TrainingSetup set_up(const VariantSpec& spec, bool use_cuda, VariantRecord& record) {
  TrainingSetup t;
  t.use_cuda = use_cuda;
  t.bf16 = spec.precision == Precision::kBf16;
  // Data parallel: this process's rank, from the torchrun-style variables (--nproc sets them).
  t.dist = dist_env_from_environment();
  t.device = choose_device(spec, use_cuda, t.dist, record);
  record.loader = loader_settings(spec, use_cuda);

  torch::manual_seed(spec.seed);
  WorkloadConfig config;
  config.batch_size = spec.batch_size;
  config.slice_batches = kSliceBatches;
  config.seed = spec.seed;
  config.knobs = spec.knobs;
  config.data_root = spec.data_dir.empty() ? default_data_root() : spec.data_dir;
  config.model_bundle = spec.model;
  config.data_path = spec.data;
  if (record.loader->pin_memory_applied) config.allocate = pinned_buffer_allocator();
  t.workload = make_workload(spec.scenario, config);
  t.workload->model().to(t.device);
  t.workload->model().train();
  t.optimizer = t.workload->make_optimizer();
  if (t.dist.distributed()) {
    std::vector<torch::Tensor> trained;  // frozen parameters take no gradient hook
    for (const torch::Tensor& p : t.workload->model().parameters()) {
      if (p.requires_grad()) trained.push_back(p);
    }
    t.data_parallel_owned = std::make_unique<DataParallel>(
        t.dist, trained, spec.comm_mode, bucket_cap_bytes(spec.bucket_mb),
        std::chrono::milliseconds(static_cast<int64_t>(spec.dist_timeout_s * 1000)));
    t.data_parallel = t.data_parallel_owned.get();
    t.data_parallel->broadcast_parameters();
    record.distributed = t.data_parallel->describe();
  }
  // Each rank loads its shard of every global batch (spec.batch_size is the global batch).
  t.loader = std::make_unique<BatchLoader>(t.workload->make_dataset(), spec.batch_size, spec.seed,
                                           LoaderOptions{spec.workers, spec.prefetch, spec.persistent_workers},
                                           t.dist.rank, t.dist.world_size);
  record.dataset = t.loader->dataset().info();
  if (spec.compiled && spec.compiler == Compiler::kInductor) {
    // Data parallel: the package returns every gradient at once, so the all-reduce starts after it
    // (finish_gradients copies them into the same buckets; nothing overlaps the backward).
    t.inductor = build_inductor_step(spec, t, t.inductor_info);
  } else if (spec.compiled) {
    Batch example = t.loader->first_batch();
    t.compiled = std::make_unique<CompiledForward>(
        *t.workload, t.workload->prepare(to_device(example.inputs, t.device)), t.device.type(), t.bf16);
  }
  return t;
}

// What the loop leaves on the device, read once timing is over, and when measurement began.
struct LoopLeftovers {
  std::vector<torch::Tensor> losses;
  std::vector<std::pair<int64_t, torch::Tensor>> grad_norms;  // (step index, norm on the device)
  int64_t measured_start_ns = 0, measured_start_cpu_ns = 0;
  DisturbanceSnapshot measured_start;  // the machine and this process's threads when measurement began
};

// Warm-up goes on past --warmup until step times settle: the last kSettledSteps warm-up steps each
// within kSettledWithinPct of their median (first-use kernel and primitive creation, allocator
// growth and lazy loading then lie behind), at most kWarmupCapFactor x --warmup steps in all.
constexpr size_t kSettledSteps = 3;
constexpr double kSettledWithinPct = 10.0;
constexpr int64_t kWarmupCapFactor = 4;

// Whether the last kSettledSteps host step times lie within kSettledWithinPct of their median.
bool warmup_settled(const std::vector<int64_t>& warmup_host_ns) {
  if (warmup_host_ns.size() < kSettledSteps) return false;
  std::vector<int64_t> last(warmup_host_ns.end() - kSettledSteps, warmup_host_ns.end());
  std::vector<int64_t> sorted = last;
  std::sort(sorted.begin(), sorted.end());
  const double median = static_cast<double>(sorted[kSettledSteps / 2]);
  return std::all_of(last.begin(), last.end(), [&](int64_t ns) {
    return std::abs(static_cast<double>(ns) - median) <= median * kSettledWithinPct / 100.0;
  });
}

// The loop's plan and where it stands: the limits fixed before the first step, and the step counts
// that warm-up's settling, the budget and the minimum loop time move.
struct LoopPlan {
  bool budgeted = false;
  int64_t budget_ns = 0;
  int64_t loop_start_ns = 0;
  int64_t warmup_steps = 0;
  bool warmup_may_grow = false;
  int64_t warmup_cap = 0;
  std::vector<int64_t> warmup_host_ns;  // host wall time of each warm-up step
  // Measured steps: spec.steps, more while they have lasted under spec.min_loop_s.
  int64_t planned_steps = 0;
  // The measured steps' times so far (what the record's aggregate sums). On CUDA those are read after
  // the loop (one synchronisation), so the wall time since measurement began stands in.
  int64_t measured_step_ns = 0;
  bool may_extend = false;
};

// The plan as the loop starts: the wall-time budget counts from here.
LoopPlan plan_loop(const VariantSpec& spec, const TrainingSetup& t) {
  LoopPlan plan;
  plan.budgeted = spec.max_loop_s > 0 && !spec.profile && !t.data_parallel;
  plan.budget_ns = s_to_ns(spec.max_loop_s);
  plan.loop_start_ns = now_ns();
  plan.warmup_steps = spec.warmup_steps;
  // Ranks must run the same steps, and a profile's window is counted from the first warm-up step:
  // those keep --warmup as it is.
  plan.warmup_may_grow = spec.warmup_steps > 0 && !spec.profile && !t.data_parallel;
  plan.warmup_cap = spec.warmup_steps * kWarmupCapFactor;
  plan.planned_steps = spec.steps;
  plan.may_extend = spec.min_loop_s > 0 && !spec.profile && !t.data_parallel;
  return plan;
}

// Before step i: whether the loop ends there (the planned steps done, unless measurement is extended
// by a step while it has lasted under spec.min_loop_s; or the wall-time budget spent, which also
// ends warm-up early).
inline bool loop_ends_before(int64_t i, const VariantSpec& spec, const TrainingSetup& t, const LoopLeftovers& out,
                             LoopPlan& plan, VariantRecord& record) {
  if (i >= plan.warmup_steps + plan.planned_steps) {
    if (!plan.may_extend || plan.planned_steps >= std::max(spec.steps, kMaxExtendedSteps) ||
        (t.use_cuda ? now_ns() - out.measured_start_ns : plan.measured_step_ns) >= s_to_ns(spec.min_loop_s))
      return true;
    ++plan.planned_steps;
    ++record.steps_added_for_min_loop;
  }
  if (plan.budgeted) {
    const int64_t elapsed_ns = now_ns() - plan.loop_start_ns;
    if (i < plan.warmup_steps && i >= 1 && elapsed_ns >= plan.budget_ns / 3) plan.warmup_steps = i;
    if (i >= plan.warmup_steps + kMinBudgetedSteps && elapsed_ns >= plan.budget_ns) {
      record.steps_cut_by_budget = std::max<int64_t>(0, plan.warmup_steps + spec.steps - i);
      return true;
    }
  }
  return false;
}

// What a step's work leaves alive until its loop iteration ends (after the step's clock and its
// memory reading): the delivered batch, its copies on the device, the output and the loss.
struct StepTensors {
  BatchLoader::Delivered delivered;
  std::vector<torch::Tensor> inputs;
  torch::Tensor targets;
  torch::Tensor output;
  torch::Tensor loss;
};

// Step i's work inside its clock, phase by phase: the batch, its copy to the device, forward,
// backward, communication, the optimizer, then the kept loss and the knobs' host work. The clock's
// data-wait phase has begun; the step record learns its data stages and communication.
inline void train_step(int64_t i, const VariantSpec& spec, TrainingSetup& t, PhaseClock& clock, StepRecord& step,
                       StepTensors& held, LoopLeftovers& out) {
  // Ends the phase `done` on the clock and moves the NVTX phase range on to `next`.
  auto next_phase = [&](Phase done, Phase next) {
    clock.end_phase(done);
    nvtx_pop();
    nvtx_push(phase_name(next));
  };
  held.delivered = t.loader->next();
  next_phase(Phase::kDataWait, Phase::kHostToDevice);
  const Batch& batch = held.delivered.batch;
  step.data_stage_ns = {batch.stage_ns.read_ns, batch.stage_ns.decode_ns, batch.stage_ns.augment_ns,
                        batch.stage_ns.collate_ns};
  step.data_busy_ns = held.delivered.busy_ns;

  held.inputs = to_device(batch.inputs, t.device);
  held.targets = batch.targets.to(t.device, /*non_blocking=*/true);
  next_phase(Phase::kHostToDevice, Phase::kForward);

  if (t.data_parallel) t.data_parallel->begin_step();
  held.loss = t.forward_and_loss(held.inputs, held.targets, &held.output);
  next_phase(Phase::kForward, Phase::kBackward);

  // The seeded leak keeps the graph (and its saved activations) alive with the kept loss.
  if (!t.inductor) held.loss.backward({}, /*retain_graph=*/spec.keep_loss_graphs);  // Inductor: done in the package
  if (spec.grad_norm_every_steps > 0 && (i + 1) % spec.grad_norm_every_steps == 0) {
    // The global gradient norm (this rank's gradients, before averaging): one pass over the
    // gradients, kept on the device and read after the loop (no host sync).
    std::vector<torch::Tensor> norms;
    for (const torch::Tensor& p : t.workload->model().parameters()) {
      if (p.grad().defined()) norms.push_back(p.grad().detach().to(torch::kFloat).norm());
    }
    if (!norms.empty()) out.grad_norms.emplace_back(i, torch::stack(norms).norm());
  }
  if (t.data_parallel) {
    // The exposed communication: what is left of the all-reduce once backward has returned.
    next_phase(Phase::kBackward, Phase::kCommunication);
    t.data_parallel->finish_gradients();
    step.comm_ns = t.data_parallel->last_step().comm_ns;
    next_phase(Phase::kCommunication, Phase::kOptimizer);
  } else {
    next_phase(Phase::kBackward, Phase::kOptimizer);
  }

  t.optimizer->step();
  t.optimizer->zero_grad(/*set_to_none=*/true);
  next_phase(Phase::kOptimizer, Phase::kOther);

  out.losses.push_back(spec.keep_loss_graphs ? held.loss : held.loss.detach());
  if (spec.sync_every_steps > 0 && (i + 1) % spec.sync_every_steps == 0) {
    // The knob's deliberate host synchronisation: reading the loss as a number.
    (void)held.loss.item<double>();
  }
  if (spec.callback_every_steps > 0 && (i + 1) % spec.callback_every_steps == 0) {
    run_host_callback(t.workload->model(), spec.callback_ms);
  }
}

// The timed loop: warm-up and measured steps, each timed phase by phase (the record's steps). The
// loop's wall-time budget (spec.max_loop_s) may end warm-up and measurement early.
LoopLeftovers run_loop(const VariantSpec& spec, TrainingSetup& t, Session& profiler, VariantRecord& record) {
  LoopLeftovers out;
  PhaseClock clock(t.use_cuda);
  LoopPlan plan = plan_loop(spec, t);
  StepProgressWriter progress;  // for the parent's live line, when it shows one
  for (int64_t i = 0;; ++i) {
    if (loop_ends_before(i, spec, t, out, plan, record)) break;
    StepRecord step;
    step.index = i;
    step.warmup = i < plan.warmup_steps;
    StepTensors held;  // the step fills it; freed when the iteration ends
    if (i == plan.warmup_steps) {
      out.measured_start = take_disturbance_snapshot();
      out.measured_start_ns = now_ns();
      out.measured_start_cpu_ns = process_cpu_ns();
    }
    const int64_t host_start_ns = now_ns();
    profiler.begin_step();
    clock.begin_step();
    nvtx_push(phase_name(Phase::kDataWait));
    train_step(i, spec, t, clock, step, held, out);
    clock.end_step(step);
    step.memory_bytes = memory_in_use_bytes(t.device);  // after the step's clock: not in its time
    nvtx_pop();
    if (profiler.in_window()) {
      // The step's phase spans, from the clock's host-side boundaries.
      int64_t t = clock.step_start_ns();
      for (const auto& [phase, end_ns] : clock.host_marks()) {
        if (end_ns > t) profiler.record_span(EventKind::kPhase, phase_name(phase), t, end_ns);
        t = end_ns;
      }
    }
    profiler.end_step();
    if (!step.warmup) plan.measured_step_ns += step.step_ns;
    record.steps.push_back(step);
    if (step.warmup) {
      plan.warmup_host_ns.push_back(now_ns() - host_start_ns);
      if (i + 1 == plan.warmup_steps && plan.warmup_may_grow && plan.warmup_steps < plan.warmup_cap &&
          !warmup_settled(plan.warmup_host_ns)) {
        ++plan.warmup_steps;
      }
    }
    progress.step_done(i + 1, plan.warmup_steps + plan.planned_steps, now_ns());
  }
  record.warmup_steps_taken = std::min<int64_t>(plan.warmup_steps, static_cast<int64_t>(record.steps.size()));
  clock.finalize(record.steps);  // CUDA: one synchronisation, after the timed loop
  if (t.data_parallel && t.data_parallel->comm_resolved_later()) {
    // NCCL: the all-reduce intervals, observed on the device, one figure per step in loop order.
    const std::vector<int64_t> comm_ns = t.data_parallel->resolve_comm_ns();
    for (size_t k = 0; k < record.steps.size() && k < comm_ns.size(); ++k) record.steps[k].comm_ns = comm_ns[k];
  }
  return out;
}

// The record's disturbance figures between two snapshots.
Disturbance disturbance_of(const DisturbanceSnapshot& before, const DisturbanceSnapshot& after) {
  const CpuDisturbance d = disturbance_between(before, after);
  Disturbance out;
  out.other_cpu_pct = d.other_cpu_pct;
  out.own_cpu_pct = d.own_cpu_pct;
  out.runqueue_wait_pct = d.runqueue_wait_pct;
  out.steal_pct = d.steal_pct;
  return out;
}

// After the loop: CPU utilisation over the measured steps, the loader's counters, the losses and
// gradient norms (one transfer each), the parameters' fingerprint.
void read_back(const LoopLeftovers& loop, TrainingSetup& t, VariantRecord& record) {
  const double measured_wall_ns = static_cast<double>(now_ns() - loop.measured_start_ns);
  const int logical_cores = std::max(1u, std::thread::hardware_concurrency());
  record.cpu_util_pct = 100.0 * static_cast<double>(process_cpu_ns() - loop.measured_start_cpu_ns) /
                        (measured_wall_ns * logical_cores);
  record.disturbance = disturbance_of(loop.measured_start, take_disturbance_snapshot());
  const LoaderCounters counters = t.loader->counters();
  record.loader->counts = LoaderCounts{counters.batches, counters.worker_busy_ns, counters.worker_starts};
  torch::Tensor loss_values = torch::stack(loop.losses).to(torch::kCPU, torch::kDouble);
  for (size_t i = 0; i < record.steps.size(); ++i) {
    record.steps[i].loss = loss_values[static_cast<int64_t>(i)].item<double>();
  }
  for (const auto& [index, norm] : loop.grad_norms) {
    record.steps[static_cast<size_t>(index)].grad_norm = norm.item<double>();
  }
  record.final_parameters = parameter_fingerprint(t.workload->model());
}

// With Inductor: one forward and backward of the same batch counted eagerly, then by the package
// (the host ops compiling removed). It changes nothing: gradients dropped, buffers restored.
void count_forward_backward_ops(TrainingSetup& t, const Batch& batch, CompileInfo& info) {
  std::vector<std::pair<torch::Tensor, torch::Tensor>> saved_buffers;
  for (const torch::Tensor& b : t.workload->model().buffers()) saved_buffers.emplace_back(b, b.clone());
  const std::vector<torch::Tensor> inputs = to_device(batch.inputs, t.device);
  const torch::Tensor targets = batch.targets.to(t.device);
  OpCensus census;
  census.start();
  {
    torch::Tensor loss;
    {
      AutocastScope autocast(t.device.type(), t.bf16);
      loss = t.workload->loss(t.workload->forward(inputs), inputs, targets);
    }
    loss.backward();
  }
  census.stop();
  info.forward_backward_ops_eager = census.ops();
  OpCensus package_census;
  package_census.start();
  (void)t.inductor->forward_backward(inputs, targets);
  package_census.stop();
  info.forward_backward_ops_compiled = package_census.ops();
  t.optimizer->zero_grad(true);
  torch::NoGradGuard no_grad;
  for (auto& [buffer, value] : saved_buffers) buffer.copy_(value);
}

// One more step, untimed, with an op-counting callback installed: ops per step, their input
// dtypes, the output dtype (autocast's evidence) and what the compiled graph ran.
void take_census(TrainingSetup& t, VariantRecord& record) {
  Batch batch = t.loader->next().batch;
  if (t.inductor) count_forward_backward_ops(t, batch, t.inductor_info);
  OpCensus census;
  census.start();
  torch::Tensor output;
  torch::Tensor loss = t.forward_and_loss(to_device(batch.inputs, t.device),
                                          batch.targets.to(t.device, /*non_blocking=*/true), &output);
  if (t.compiled) record.compile_info = t.compiled->describe_last_execution();
  if (t.inductor) {
    record.compile_info = t.inductor_info;
    record.compile_info.cuda_graph = t.inductor->cuda_graph();
  }
  if (t.data_parallel) t.data_parallel->begin_step();
  if (!t.inductor) loss.backward();
  if (t.data_parallel) t.data_parallel->finish_gradients();  // the ranks' parameters stay identical
  t.optimizer->step();
  t.optimizer->zero_grad(true);
  census.stop();
  record.ops_per_step = static_cast<double>(census.ops());
  record.op_input_dtypes = census.input_dtypes();
  record.forward_output_dtype = c10::toString(output.scalar_type());
}

// The host cost of one small op, the model's FLOPs and, with --profile, the device's GEMM peak in
// both dtypes (what bf16 would buy on this device is a measured ratio, not a rule of thumb).
void measure_costs(const VariantSpec& spec, TrainingSetup& t, VariantRecord& record) {
  record.dispatch_ns_per_op = measure_dispatch_ns_per_op(t.device);
  const double counted = t.workload->flops_per_sample();  // a bundle's, counted by PyTorch's FLOP counter
  record.model_flops_per_sample = counted >= 0 ? counted : linear_model_flops_per_sample(t.workload->model());
  record.flops_not_counted = t.workload->flops_not_counted();
  if (spec.profile) {
    record.peak_flops_by_dtype["fp32"] = measure_peak_gemm_flops_per_s(t.device, torch::kFloat32);
    record.peak_flops_by_dtype["bf16"] = measure_peak_gemm_flops_per_s(t.device, torch::kBFloat16);
    record.peak_flops_per_s = record.peak_flops_by_dtype[t.bf16 ? "bf16" : "fp32"];
  }
}

// The system sampler's tracks over the whole variant, and what sampling cost.
// Missed ticks are entered into the profile's drops (0 when none), so the window's drops list them too.
void record_system_metrics(const VariantSpec& spec, Profile& profile, const Session& profiler,
                           VariantRecord& record) {
  for (const auto& [name, c] : summarise_counters(profile)) {
    record.system.metrics[name] = MetricSummary{c.unit, c.samples, c.min, c.p50, c.p95, c.p99, c.max, c.mean};
  }
  record.system.interval_ms = spec.sample_interval_ms;
  record.system.missed_ticks = profile.dropped["sampler.missed_ticks"];
  record.system.sample_cost_us = ns_to_us(profiler.sampler_sample_cost_ns());
  // One sample's cost over the interval: the share of one core the sampler takes.
  record.system.cost_pct_of_core = 100.0 * static_cast<double>(profiler.sampler_sample_cost_ns()) /
                                   (static_cast<double>(spec.sample_interval_ms) * kNsPerMs);
}

// Kineto's deviceProperties entry for the CUDA device the variant ran on.
nlohmann::json device_properties(c10::DeviceIndex index) {
  const cudaDeviceProp* p = at::cuda::getDeviceProperties(index);
  return nlohmann::json::array({{{"id", index}, {"name", p->name}, {"totalGlobalMem", p->totalGlobalMem},
                                 {"computeMajor", p->major}, {"computeMinor", p->minor},
                                 {"maxThreadsPerBlock", p->maxThreadsPerBlock},
                                 {"maxThreadsPerMultiprocessor", p->maxThreadsPerMultiProcessor},
                                 {"regsPerBlock", p->regsPerBlock}, {"regsPerMultiprocessor", p->regsPerMultiprocessor},
                                 {"warpSize", p->warpSize}, {"sharedMemPerBlock", p->sharedMemPerBlock},
                                 {"sharedMemPerMultiprocessor", p->sharedMemPerMultiprocessor},
                                 {"numSms", p->multiProcessorCount},
                                 {"sharedMemPerBlockOptin", p->sharedMemPerBlockOptin}}});
}

// The trace's metadata: trainlab's own block (core/trace_metadata.h) and Kineto's fields beside it
// (distributedInfo, so trace readers tell ranks apart; deviceProperties on a GPU).
nlohmann::json capture_trace_metadata(const VariantSpec& spec, const Session& profiler, const TrainingSetup& t,
                                      const VariantRecord& record) {
  TraceMetadata ours;
  ours.scenario = spec.scenario;
  ours.variant = spec.name();
  ours.window_start = spec.window_start;
  ours.window_steps = spec.window_steps;
  // what reading the trace needs to take the profiler's own cost out (diagnostics)
  ours.op_sample = spec.op_sample;
  ours.profiler_event_cost_ns = static_cast<double>(profiler.event_cost_ns());
  ours.loader_workers = spec.workers;
  if (t.data_parallel) ours.host = record.distributed.host;  // which machine
  nlohmann::json metadata = to_json(ours);
  metadata["distributedInfo"] = {{"backend", t.data_parallel ? record.distributed.backend : "none"},
                                 {"rank", t.dist.rank}, {"world_size", t.dist.world_size}};
  if (t.data_parallel) {
    // The process groups as torch.profiler describes them: trainlab's ranks use one, the default
    // group over every rank, with the backend it was made with.
    nlohmann::json ranks = nlohmann::json::array();
    for (int r = 0; r < t.dist.world_size; ++r) ranks.push_back(r);
    const std::string& backend = record.distributed.backend;
    metadata["distributedInfo"]["pg_count"] = 1;
    metadata["distributedInfo"]["pg_config"] = nlohmann::json::array(
        {{{"pg_name", "0"},
          {"pg_desc", "default_pg"},
          {"backend_config", backend == "gloo" ? "cpu:gloo,cuda:gloo" : "cuda:" + backend},
          {"pg_size", t.dist.world_size},
          {"ranks", ranks}}});
  }
  if (t.use_cuda) metadata["deviceProperties"] = device_properties(t.device.index());
  return metadata;
}

// --profile: the window's Chrome trace, and in the record its events, drops, annotations and the
// window's measured overhead.
void write_capture_window(const VariantSpec& spec, const SessionOptions& profiler_options, const Profile& profile,
                          const Session& profiler, const TrainingSetup& t, const std::string& trace_path,
                          VariantRecord& record) {
  // Counter tracks and their sample counts, for the record.
  std::map<std::string, int64_t> counters;
  for (const CounterTrack& track : profile.counters) counters[track.name] = static_cast<int64_t>(track.samples.size());
  const int64_t events = static_cast<int64_t>(profile.events.size());
  const nlohmann::json metadata = capture_trace_metadata(spec, profiler, t, record);
  const int64_t trace_bytes =
      write_chrome_trace(trace_path, profile, metadata, static_cast<int64_t>(::getpid()), &t.trace_clock);
  // Overhead: the mean measured step inside the window against the measured steps outside it.
  const int64_t window_first = profiler_options.window_start_step;
  const int64_t window_last = window_first + profiler_options.window_steps - 1;
  double inside_ns = 0, outside_ns = 0;
  int64_t inside = 0, outside = 0;
  for (const StepRecord& s : record.steps) {
    if (s.warmup) continue;
    if (s.index >= window_first && s.index <= window_last) {
      inside_ns += static_cast<double>(s.step_ns);
      ++inside;
    } else {
      outside_ns += static_cast<double>(s.step_ns);
      ++outside;
    }
  }
  ProfileWindow& window = record.profile;
  window.window_start = spec.window_start;
  window.window_steps = spec.window_steps;
  window.events = events;
  window.dropped = profile.dropped;
  window.counter_samples = counters;
  window.sample_interval_ms = spec.sample_interval_ms;
  window.notes = profile.notes;
  window.trace = trace_path.substr(trace_path.find_last_of('/') + 1);
  window.trace_bytes = trace_bytes;
  window.trace_bytes_per_step = trace_bytes / spec.window_steps;
  window.op_sample = spec.op_sample;
  window.record_cost_ns = profiler.record_cost_ns();
  window.event_cost_ns = profiler.event_cost_ns();
  int64_t host_events = 0;
  for (const TraceEvent& e : profile.events) host_events += e.on_device ? 0 : 1;
  window.events_per_step = static_cast<double>(host_events) / static_cast<double>(spec.window_steps);
  for (const SpanSummary& a : summarise_spans(profile, EventKind::kAnnotation)) {
    window.annotations.push_back({a.name, a.count, ns_to_ms(a.total_ns), ns_to_ms(a.mean_ns), ns_to_ms(a.max_ns),
                                  ns_to_ms(a.per_step_ns), a.step_share_pct});
  }
  window.step_ms_in_window = inside > 0 ? ns_to_ms(inside_ns / inside) : 0.0;
  window.step_ms_outside_window = outside > 0 ? ns_to_ms(outside_ns / outside) : 0.0;
  if (inside > 0 && outside > 0) {
    window.window_overhead_pct = 100.0 * ((inside_ns / inside) / (outside_ns / outside) - 1.0);
    if (window.events_per_step > 0)
      window.event_cost_from_steps_ns = (inside_ns / inside - outside_ns / outside) / window.events_per_step;
  }
}

void record_peak_memory(const TrainingSetup& t, VariantRecord& record) {
  if (t.use_cuda) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(t.device.index());
    record.peak_memory_bytes =
        stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)].peak;
    record.peak_memory_source = "cuda_allocator";
  } else {
    record.peak_memory_bytes = peak_rss_bytes();
    record.peak_memory_source = "rss";
  }
}

// --threads; else, where ranks share this machine and OMP_NUM_THREADS says nothing, the cores
// divided among them (LibTorch's default gives every rank all of them: oversubscribed).
void set_thread_count(const VariantSpec& spec) {
  const int threads = spec.threads > 0 || std::getenv("OMP_NUM_THREADS") != nullptr
                          ? spec.threads
                          : default_threads_per_rank(usable_cores(), local_ranks_from_environment());
  if (threads > 0) at::set_num_threads(threads);
}

// A rank's file name with rank 0's number put in place of its own: rank0.pt.trace.json.gz ->
// rank3.pt.trace.json.gz, fp32.rank0.json -> fp32.rank3.json.
std::string file_of_rank(const std::string& rank0_path, int rank) {
  const size_t name = rank0_path.find_last_of('/') + 1;
  const size_t at = rank0_path.find("rank0", name);
  if (at == std::string::npos) return "";
  return rank0_path.substr(0, at) + "rank" + std::to_string(rank) + rank0_path.substr(at + 5);
}

// A job across machines (the front says which role through TRAINLAB_GATHER): a rank on another
// machine sends its written record and trace to rank 0; rank 0 receives the other machines' ranks
// (those past its machine's LOCAL_WORLD_SIZE: torchrun numbers rank 0's machine first) into its
// run folder, waiting the distributed timeout when its own run went well and 5 s when it failed
// (the peers then failed too, and only their records are left to come).
void gather_across_machines(DataParallel& link, VariantRecord& record, const std::string& record_path,
                            const std::string& trace_path) {
  const GatherRole role = gather_role_from_environment();
  const DistEnv env = dist_env_from_environment();
  if (role == GatherRole::kSend) {
    record.distributed.gathered = "sent to rank 0 through the rendezvous store";
    const std::string why = send_record_to_rank0(link, env.rank, json_text(to_json(record), 1) + "\n",
                                                 record.ok() ? trace_path : std::string());
    if (!why.empty()) record.distributed.gathered = "not sent to rank 0: " + why;
    write_variant_record(record_path, record);
  } else if (role == GatherRole::kReceive && env.rank == 0) {
    const double wait_s = record.ok() ? record.spec.dist_timeout_s : 5.0;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(wait_s * 1000));
    receive_records_from_ranks(
        link, env.local_world_size, env.world_size, deadline,
        [&](int rank) { return RankFiles{file_of_rank(record_path, rank), file_of_rank(trace_path, rank)}; },
        [&](int rank, const std::string& why) {
          VariantRecord silent;
          silent.spec = record.spec;
          silent.error = "rank " + std::to_string(rank) + " (on another machine) " + why + " (" +
                         std::to_string(static_cast<int>(wait_s)) + " s)";
          return json_text(to_json(silent), 1) + "\n";
        });
  }
}

}  // namespace

VariantRecord run_variant(const VariantSpec& spec, int64_t process_start_ns, const std::string& trace_path,
                          std::unique_ptr<DataParallel>& link) {
  VariantRecord record;
  record.spec = spec;
  set_thread_count(spec);
  const bool use_cuda = spec.device != DeviceChoice::kCpu && cuda_usable();
  const SessionOptions profiler_options = profiler_options_for(spec, use_cuda);
  Session profiler(profiler_options);
  TrainingSetup setup = set_up(spec, use_cuda, record);
  link = std::move(setup.data_parallel_owned);  // outlives the run: the record may still travel through it
  // The trace's time zero: this process's start, or the earliest of the ranks' (one axis for all).
  setup.trace_clock.steady_to_epoch_ns = steady_to_epoch_offset_ns();
  const int64_t start_epoch_ns = process_start_ns + setup.trace_clock.steady_to_epoch_ns;
  setup.trace_clock.base_epoch_ns = setup.data_parallel ? setup.data_parallel->agree_clock_base_epoch_ns(start_epoch_ns)
                                                        : start_epoch_ns - start_epoch_ns % 1000000000;
  record.init_ns = now_ns() - process_start_ns;

  const LoopLeftovers loop = run_loop(spec, setup, profiler, record);

  read_back(loop, setup, record);
  take_census(setup, record);
  measure_costs(spec, setup, record);
  Profile profile = profiler.finish();
  if (spec.system_sampler) record_system_metrics(spec, profile, profiler, record);
  if (spec.profile) {
    try {
      write_capture_window(spec, profiler_options, profile, profiler, setup, trace_path, record);
    } catch (const InputError& e) {  // the trace did not fit (a full disk): the steps measured stay
      record.error = e.what();
      record.error_kind = "input";
      record.profile.trace.clear();
    }
  }
  record_peak_memory(setup, record);
  return record;
}

namespace {

// The record written to record_path, or, when it does not fit (a full disk), the smallest that
// says why: the run's spec and the error. Returns the error ("" when the whole record was written).
std::string write_record_where_it_fits(const std::string& record_path, const VariantRecord& record) {
  try {
    write_variant_record(record_path, record);
    return "";
  } catch (const InputError& e) {
    VariantRecord brief;
    brief.spec = record.spec;
    brief.error = e.what();
    brief.error_kind = "input";
    brief.peak_memory_bytes = record.peak_memory_bytes;
    brief.peak_memory_source = record.peak_memory_source;
    try {
      write_variant_record(record_path, brief);
    } catch (const InputError&) {
      // not even that fits: the exit status and the line on stderr say it
    }
    return e.what();
  }
}

}  // namespace

int variant_child_main(const std::string& spec_path, const std::string& record_path, std::string trace_path) {
  const int64_t start_ns = now_ns();
  VariantRecord record;
  std::unique_ptr<DataParallel> link;  // the process group, while the record is gathered
  bool run_failed = true;  // an exception ended the run: nothing it measured is left
  try {
    const nlohmann::json spec_json = nlohmann::json::parse(read_file(spec_path));
    record.spec = spec_json.get<VariantSpec>();
    if (trace_path.empty()) {  // none given: next to the record, <stem>.json -> <stem>.pt.trace.json[.gz]
      trace_path = record_path;
      if (trace_path.size() > 5 && ends_with(trace_path, ".json")) trace_path.resize(trace_path.size() - 5);
      trace_path += record.spec.trace_gzip ? ".pt.trace.json.gz" : ".pt.trace.json";
    }
    record = run_variant(record.spec, start_ns, trace_path, link);
    run_failed = false;
  } catch (const c10::Error& e) {
    record.error = e.what_without_backtrace();
  } catch (const InputError& e) {  // bad options, a corrupt or missing data file: exit status 2
    record.error = e.what();
    record.error_kind = "input";
  } catch (const InductorUnavailable& e) {  // compiling could not be measured: no Python side, export failed
    record.error = e.what();
    record.error_kind = "unavailable";
  } catch (const std::exception& e) {
    record.error = e.what();
  }
  if (run_failed && !record.error.empty()) {
    std::cerr << "trainlab: variant " << record.spec.name() << " failed:\n" << record.error << "\n";
    record.error = error_cause_line(record.error);
    record.steps.clear();
    record.peak_memory_bytes = peak_rss_bytes();
    record.peak_memory_source = "rss";
  } else if (!record.error.empty()) {  // the run ended but its trace could not be written
    std::cerr << "trainlab: error: " << record.error << "\n";
  }
  // A full disk is the user's to fix (exit 2, one line), never an abort: the record goes where
  // it fits, and the front reads the line when no record does.
  try {
    const std::string unwritten = write_record_where_it_fits(record_path, record);
    if (link) gather_across_machines(*link, record, record_path, trace_path);  // rank 0's disk may have room
    if (!unwritten.empty()) {
      std::cerr << "trainlab: error: " << unwritten << "\n";
      return kExitBadInput;
    }
  } catch (const InputError& e) {
    std::cerr << "trainlab: error: " << e.what() << "\n";
    return kExitBadInput;
  }
  if (record.error_kind == "input" && !run_failed) return kExitBadInput;
  return record.ok() ? 0 : 1;
}

}  // namespace trainlab

namespace trainlab {

int prepare_package_child_main(const std::string& bundle_dir, const std::string& spec_path,
                               const std::string& precision) {
  try {
    VariantSpec spec;
    if (!spec_path.empty()) {  // the lab's compiled variant, resolved: its batch, knobs and device
      spec = nlohmann::json::parse(read_file(spec_path)).get<VariantSpec>();
    } else {
      spec.model = bundle_dir;
      spec.compiled = true;
      spec.precision = parse_precision(precision);
      resolve(spec, scenario_of(spec));
    }
    const bool use_cuda = cuda_usable();
    set_thread_count(spec);  // the package's kernels are built for the variant's threads
    VariantRecord record;
    (void)set_up(spec, use_cuda, record);  // builds the package into the bundle, loads and binds it
    return 0;
  } catch (const InductorUnavailable& e) {
    std::cout << "trainlab: the compiled variant cannot run: " << e.what() << std::endl;
    return 3;
  } catch (const InputError& e) {
    std::cout << "trainlab: error: " << e.what() << std::endl;
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cout << "trainlab: the compiled variant cannot run: " << error_cause_line(e.what()) << std::endl;
    return 3;
  }
}

}  // namespace trainlab
