// The trace summary (diagnostics/summarise.h summarise_trace): the sample PyTorch profiler traces in
// ../shared/traces against the figures published with them, iterations recovered from traces without
// ProfilerStep# spans, per-step shares, and the GPU idle time split by host activity on hand-built
// profiles. Torch-free.
#include <gtest/gtest.h>

#include "sample_traces.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "diagnostics/python_frames.h"
#include "diagnostics/summarise.h"
#include "profiler/chrome_trace.h"

namespace trainlab {
namespace {

// ---- helpers --------------------------------------------------------------------------------------

using test_data::sample;

double sum_of(const StepShares& s) {
  return s.data_wait_pct + s.host_to_device_pct + s.compute_pct + s.communication_pct + s.framework_pct +
         s.other_pct;
}

double idle(const Summary& s, const std::string& cause) {
  const auto it = s.idle_cause_pct.find(cause);
  return it == s.idle_cause_pct.end() ? 0.0 : it->second;
}

// One line per summary, for the record of what was measured (ctest -V / the test's stdout).
void print(const Summary& s) {
  std::cout << "[summary] " << s.label << ": " << s.step_ms.size() << " steps from " << s.steps_from
            << ", step mean " << s.step.mean << " ms; shares data " << s.shares.data_wait_pct << " h2d "
            << s.shares.host_to_device_pct << " compute " << s.shares.compute_pct << " comm "
            << s.shares.communication_pct << " framework " << s.shares.framework_pct << " other "
            << s.shares.other_pct << "; device busy " << (s.device_busy_pct ? *s.device_busy_pct : -1.0);
  for (const auto& [cause, pct] : s.idle_cause_pct) std::cout << "; idle " << cause << " " << pct;
  std::cout << "\n";
  for (const std::string& note : s.notes) std::cout << "  note: " << note << "\n";
}

// What must hold for every trace summary: one StepShares per step, each ~100 %, the aggregate shares
// their step-time-weighted mean, and the idle causes inside the shares they are counted in.
void expect_consistent(const Summary& s) {
  ASSERT_EQ(s.step_shares.size(), s.step_ms.size());
  ASSERT_FALSE(s.step_ms.empty());
  StepShares weighted;
  double total_ms = 0;
  for (size_t i = 0; i < s.step_ms.size(); ++i) {
    const StepShares& sh = s.step_shares[i];
    EXPECT_NEAR(sum_of(sh), 100.0, 0.01) << "step " << i;
    const double w = s.step_ms[i];
    weighted.data_wait_pct += sh.data_wait_pct * w;
    weighted.host_to_device_pct += sh.host_to_device_pct * w;
    weighted.compute_pct += sh.compute_pct * w;
    weighted.communication_pct += sh.communication_pct * w;
    weighted.framework_pct += sh.framework_pct * w;
    total_ms += w;
  }
  EXPECT_NEAR(sum_of(s.shares), 100.0, 0.01);
  EXPECT_NEAR(weighted.data_wait_pct / total_ms, s.shares.data_wait_pct, 1e-6);
  EXPECT_NEAR(weighted.host_to_device_pct / total_ms, s.shares.host_to_device_pct, 1e-6);
  EXPECT_NEAR(weighted.compute_pct / total_ms, s.shares.compute_pct, 1e-6);
  EXPECT_NEAR(weighted.communication_pct / total_ms, s.shares.communication_pct, 1e-6);
  EXPECT_NEAR(weighted.framework_pct / total_ms, s.shares.framework_pct, 1e-6);
  if (s.on_gpu) {
    ASSERT_EQ(s.idle_cause_pct.size(), 8u);
    EXPECT_NEAR(s.shares.framework_pct,
                idle(s, "sync") + idle(s, "copy") + idle(s, "allocator") + idle(s, "launch") + idle(s, "host_ops") +
                    idle(s, "host_idle"),
                1e-6);
    EXPECT_NEAR(s.shares.data_wait_pct, idle(s, "dataloader"), 1e-6);
    EXPECT_GE(s.shares.communication_pct + 1e-9, idle(s, "collective"));
  } else {
    EXPECT_TRUE(s.idle_cause_pct.empty());
  }
}

Summary summarise_profile(const Profile& p, const std::string& label) {
  return summarise_trace(p, nlohmann::json::object(), label);
}

Summary summarise_sample(const std::string& path) {
  const TraceImport trace = import_trace(path);
  return summarise_trace(trace.profile, trace.metadata, std::filesystem::path(path).filename().string());
}

// The profile without the events `drop` selects (a trace as it would be without ProfilerStep#, ...).
template <typename Drop>
Profile without(Profile p, Drop drop) {
  p.events.erase(std::remove_if(p.events.begin(), p.events.end(), drop), p.events.end());
  return p;
}

bool is_profiler_step(const TraceEvent& e) { return e.kind == EventKind::kStep; }
bool is_optimizer_mark(const TraceEvent& e) {
  return e.kind == EventKind::kStep || e.name.rfind("Optimizer.", 0) == 0;
}

// First device event start to last device event end (TraceLens's "GPU timeline").
int64_t device_span_ns(const Profile& p, bool kernels_only) {
  int64_t first = std::numeric_limits<int64_t>::max(), last = std::numeric_limits<int64_t>::min();
  for (const TraceEvent& e : p.events) {
    const bool work = e.kind == EventKind::kKernel ||
                      (!kernels_only && (e.kind == EventKind::kMemcpy || e.kind == EventKind::kMemset));
    if (!e.on_device || !work) continue;
    first = std::min(first, e.start_ns);
    last = std::max(last, e.end_ns);
  }
  return last - first;
}

// ---- the sample traces (real PyTorch profiler output, see ../shared/traces/README.md) ------------

TEST(TraceSummarySamples, ResNet50Workers4ReproducesTheTensorBoardPluginFigures) {
  const std::string path = sample("resnet50_v100_workers4.pt.trace.json.gz");
  if (path.empty()) GTEST_SKIP() << "sample traces folder not present";
  const Summary s = summarise_sample(path);
  print(s);
  expect_consistent(s);
  EXPECT_EQ(s.steps_from, "ProfilerStep");
  ASSERT_EQ(s.step_ms.size(), 6u);
  EXPECT_EQ(s.step_numbers.front(), 5);
  // Published: average step 141068 us. The plugin ends each step when the device work launched in it
  // has finished; the ProfilerStep# host spans used here average 139.692 ms (within 1 %).
  EXPECT_NEAR(s.step.mean, 141.068, 141.068 * 0.01);
  EXPECT_NEAR(s.shares.compute_pct, 70.28, 1.0);   // published: kernel 70.28 %
  EXPECT_NEAR(s.shares.data_wait_pct, 0.84, 0.5);  // published: DataLoader 0.84 %
  EXPECT_TRUE(s.on_gpu);
}

TEST(TraceSummarySamples, ResNet50Workers0SecondSpanIsDataBound) {
  const std::string path = sample("resnet50_v100_workers0_span2.pt.trace.json.gz");
  if (path.empty()) GTEST_SKIP() << "sample traces folder not present";
  const Summary s = summarise_sample(path);
  print(s);
  expect_consistent(s);
  EXPECT_EQ(s.steps_from, "ProfilerStep");
  ASSERT_EQ(s.step_ms.size(), 6u);
  EXPECT_EQ(s.step_numbers.front(), 16);
  // The published figures (DataLoader 33.37 %, kernel 55.51 %) are of this run's first profiling span,
  // which is not in the file; this is its second span (steps 16-21), and it differs by ~10 points: the
  // plugin's own step and role-priority rules (tb_plugin step_parser.py / overall breakdown), re-done on
  // this span outside this project (the same re-implementation gives exactly the published 70.28 % /
  // 0.84 % on resnet50_v100_workers4), give DataLoader 22.92 % and kernel 63.61 %. Those are the figures
  // checked here; the span is still input-bound (data wait >= 20 % of the step).
  EXPECT_NEAR(s.shares.data_wait_pct, 22.92, 1.0);
  EXPECT_NEAR(s.shares.compute_pct, 63.61, 1.0);
  EXPECT_GE(s.shares.data_wait_pct, 20.0);
  EXPECT_GT(s.shares.data_wait_pct, s.shares.framework_pct);
}

TEST(TraceSummarySamples, SingleGpuSgdKeepsTheDeviceBusy) {
  const std::string path = sample("single_gpu_sgd.pt.trace.json.gz");
  if (path.empty()) GTEST_SKIP() << "sample traces folder not present";
  const Summary s = summarise_sample(path);
  print(s);
  expect_consistent(s);
  EXPECT_EQ(s.steps_from, "ProfilerStep");
  ASSERT_EQ(s.step_ms.size(), 5u);
  // Published: the GPU is busy ~98.8 % of steps 102-105 (kernels, copies and memsets).
  double busy_ms = 0, steps_ms = 0;
  for (size_t i = 0; i < s.step_ms.size(); ++i) {
    if (s.step_numbers[i] < 102) continue;
    const StepShares& sh = s.step_shares[i];
    busy_ms += (sh.compute_pct + sh.communication_pct + sh.host_to_device_pct) / 100.0 * s.step_ms[i];
    steps_ms += s.step_ms[i];
  }
  std::cout << "[measured] single_gpu_sgd busy over steps 102-105: " << 100.0 * busy_ms / steps_ms << " %\n";
  EXPECT_NEAR(100.0 * busy_ms / steps_ms, 98.8, 1.0);
}

TEST(TraceSummarySamples, Mi300xCompiledModelIsOneStepOfComputeOnTheGpuTimeline) {
  const std::string path = sample("mi300x_torch_compile_triton.json.gz");
  if (path.empty()) GTEST_SKIP() << "sample traces folder not present";
  const TraceImport trace = import_trace(path);
  const Summary s = summarise_trace(trace.profile, trace.metadata, "mi300x");
  print(s);
  expect_consistent(s);
  // No ProfilerStep#, no optimizer, and no top-level op that recurs with iterations of similar length
  // (hipDeviceSynchronize occurs twice, 12 ms and 1 us apart from the trace's end): one step.
  EXPECT_EQ(s.steps_from, "whole trace");
  ASSERT_EQ(s.step_ms.size(), 1u);
  EXPECT_EQ(s.kernels_per_step.value_or(0), 12);
  // Published (TraceLens gpu_timeline.csv): computation 99.99 % of the GPU timeline (first to last
  // kernel). Our step is longer (it starts with the host's compile-region dispatch), so rescale.
  const double gpu_timeline_pct =
      s.shares.compute_pct * s.step_ms[0] * 1e6 / static_cast<double>(device_span_ns(trace.profile, true));
  std::cout << "[measured] mi300x compute over the GPU timeline: " << gpu_timeline_pct << " %\n";
  EXPECT_NEAR(gpu_timeline_pct, 99.99, 0.1);
  EXPECT_GT(s.shares.compute_pct, 90.0);
}

TEST(TraceSummarySamples, B200TensorParallelInferenceIsMostlyIdleWithShortKernels) {
  const std::string path = sample("b200_tp8_inference_eager.json.gz");
  if (path.empty()) GTEST_SKIP() << "sample traces folder not present";
  const TraceImport trace = import_trace(path);
  const Summary s = summarise_trace(trace.profile, trace.metadata, "b200");
  print(s);
  expect_consistent(s);
  // One execute_model call under one top-level annotation: nothing on the loop's thread repeats.
  EXPECT_EQ(s.steps_from, "whole trace");
  ASSERT_EQ(s.step_ms.size(), 1u);
  EXPECT_EQ(s.world_size, 8);
  // Published (counted from the file): GPU busy ~13.7 % of the GPU's span, 76 % of kernels < 10 us.
  const double busy_pct = (s.shares.compute_pct + s.shares.communication_pct + s.shares.host_to_device_pct -
                           idle(s, "collective")) *
                          s.step_ms[0] * 1e6 / static_cast<double>(device_span_ns(trace.profile, false));
  std::cout << "[measured] b200 GPU busy over the device span: " << busy_pct << " %\n";
  EXPECT_NEAR(busy_pct, 13.7, 1.0);
  ASSERT_TRUE(s.short_kernel_pct.has_value());
  EXPECT_NEAR(*s.short_kernel_pct, 76.0, 1.0);
  EXPECT_GT(s.shares.framework_pct, 50.0);  // the device waits on the host
}

TEST(TraceSummarySamples, CpuOnlyAndGpulessTracesSummarise) {
  for (const char* name : {"cpu_only_gloo_rank34.pt.trace.json.gz", "cpu_events_only_rank.json.gz"}) {
    const std::string path = sample(name);
    if (path.empty()) GTEST_SKIP() << "sample traces folder not present";
    const Summary s = summarise_sample(path);
    print(s);
    expect_consistent(s);
    EXPECT_FALSE(s.on_gpu) << name;
    EXPECT_EQ(s.steps_from, "ProfilerStep") << name;
    EXPECT_EQ(s.step_ms.size(), 1u) << name;
  }
}

TEST(TraceSummarySamples, Mi250MiniToyHasTwoProfilerSteps) {
  const std::string path = sample("mi250_minitoy_train_rocm.json.gz");
  if (path.empty()) GTEST_SKIP() << "sample traces folder not present";
  const Summary s = summarise_sample(path);
  print(s);
  expect_consistent(s);
  EXPECT_TRUE(s.on_gpu);
  EXPECT_EQ(s.steps_from, "ProfilerStep");
  EXPECT_EQ(s.step_ms.size(), 2u);
}

// The real traces with their ProfilerStep# spans taken out: the iterations come back from the
// optimizer's spans, and with those taken out too, from the op that starts each iteration.
TEST(TraceSummarySamples, IterationsAreRecoveredWithoutProfilerSteps) {
  const std::string resnet = sample("resnet50_v100_workers4.pt.trace.json.gz");
  const std::string sgd = sample("single_gpu_sgd.pt.trace.json.gz");
  if (resnet.empty() || sgd.empty()) GTEST_SKIP() << "sample traces folder not present";
  const Profile resnet_profile = import_trace(resnet).profile;

  const Summary by_optimizer =
      summarise_profile(without(resnet_profile, is_profiler_step), "resnet-no-steps");
  print(by_optimizer);
  expect_consistent(by_optimizer);
  EXPECT_EQ(by_optimizer.steps_from, "optimizer step");
  EXPECT_EQ(by_optimizer.step_ms.size(), 6u);  // 6 Optimizer.step#SGD.step spans
  EXPECT_NEAR(by_optimizer.shares.compute_pct, 70.28, 5.0);

  const Summary by_op = summarise_profile(without(resnet_profile, is_optimizer_mark), "resnet-no-marks");
  print(by_op);
  expect_consistent(by_op);
  EXPECT_EQ(by_op.steps_from, "repeated op");
  EXPECT_EQ(by_op.step_ms.size(), 6u);
  EXPECT_NEAR(by_op.shares.compute_pct, 70.28, 5.0);

  const Summary sgd_steps =
      summarise_profile(without(import_trace(sgd).profile, is_profiler_step), "sgd-no-steps");
  print(sgd_steps);
  expect_consistent(sgd_steps);
  EXPECT_EQ(sgd_steps.steps_from, "optimizer step");
  EXPECT_EQ(sgd_steps.step_ms.size(), 5u);
}

// ---- hand-built profiles ----------------------------------------------------------------------

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kMain = 1;  // the loop's host thread
constexpr int64_t kStream = 7;

TraceEvent host(EventKind kind, const std::string& name, double start_ms, double end_ms,
                int64_t track = kMain, int64_t correlation = -1) {
  TraceEvent e;
  e.kind = kind;
  e.name = name;
  e.start_ns = std::llround(start_ms * kMs);
  e.end_ns = std::llround(end_ms * kMs);
  e.track = track;
  e.correlation = correlation;
  return e;
}

TraceEvent device(EventKind kind, const std::string& name, double start_ms, double end_ms,
                  int64_t correlation = -1) {
  TraceEvent e = host(kind, name, start_ms, end_ms, kStream, correlation);
  e.on_device = true;
  return e;
}

// One 10 ms step whose device idles from 4 to 6 ms (kernels 0-4 and 6-10 ms); the tests add what the
// host does meanwhile.
Profile step_with_idle_gap() {
  Profile p;
  p.events.push_back(host(EventKind::kStep, "ProfilerStep#1", 0, 10));
  p.events.push_back(device(EventKind::kKernel, "volta_sgemm_128x64_nn", 0, 4));
  p.events.push_back(device(EventKind::kKernel, "volta_sgemm_128x64_nn", 6, 10));
  return p;
}

TEST(TraceSummaryIdle, StreamSynchronizeIsSync) {
  Profile p = step_with_idle_gap();
  p.events.push_back(host(EventKind::kCpuOp, "aten::item", 3.5, 6.2));
  p.events.push_back(host(EventKind::kCpuOp, "aten::_local_scalar_dense", 3.6, 6.1));
  p.events.push_back(host(EventKind::kRuntime, "cudaStreamSynchronize", 3.7, 6.0));
  const Summary s = summarise_profile(p, "sync");
  expect_consistent(s);
  EXPECT_NEAR(idle(s, "sync"), 20.0, 1e-9);
  EXPECT_NEAR(s.shares.framework_pct, 20.0, 1e-9);
  EXPECT_NEAR(s.shares.compute_pct, 80.0, 1e-9);
  EXPECT_NEAR(s.shares.communication_pct, 0.0, 1e-9);
}

TEST(TraceSummaryIdle, CollectiveOnAnyThreadIsCommunication) {
  Profile p = step_with_idle_gap();
  p.events.push_back(host(EventKind::kAnnotation, "nccl:all_reduce", 4, 6, /*track=*/2));
  p.events.push_back(host(EventKind::kCpuOp, "aten::add", 4, 6));  // the main thread is busy meanwhile
  const Summary s = summarise_profile(p, "collective");
  expect_consistent(s);
  EXPECT_NEAR(idle(s, "collective"), 20.0, 1e-9);
  EXPECT_NEAR(s.shares.communication_pct, 20.0, 1e-9);
  EXPECT_NEAR(s.shares.framework_pct, 0.0, 1e-9);
}

TEST(TraceSummaryIdle, ExposedCollectiveKernelAndWaitAreCountedOnce) {
  // Compute 0-4 ms, an NCCL kernel 3-5 ms (1 ms hidden behind compute), the device idle 5-6 ms while
  // the host waits in c10d::wait, compute 6-10 ms.
  Profile p = step_with_idle_gap();
  p.events.push_back(device(EventKind::kKernel, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 3, 5));
  p.events.push_back(host(EventKind::kCpuOp, "c10d::wait", 4.5, 6));
  const Summary s = summarise_profile(p, "exposed");
  expect_consistent(s);
  EXPECT_NEAR(s.shares.compute_pct, 80.0, 1e-9);
  EXPECT_NEAR(s.shares.communication_pct, 20.0, 1e-9);  // 4-5 ms exposed kernel + 5-6 ms wait
  EXPECT_NEAR(idle(s, "collective"), 10.0, 1e-9);
}

TEST(TraceSummaryIdle, SyncEndedByACollectiveKernelIsCollective) {
  // Compute 0-4 ms; the host syncs from 4 ms; the device idles until an all-reduce kernel runs 6-8 ms
  // (launched by another rank's arrival); the sync returns at 8.002 ms; compute 8.1-10 ms.
  Profile p;
  p.events.push_back(host(EventKind::kStep, "ProfilerStep#1", 0, 10));
  p.events.push_back(device(EventKind::kKernel, "volta_sgemm_128x64_nn", 0, 4));
  p.events.push_back(device(EventKind::kKernel, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 6, 8));
  p.events.push_back(device(EventKind::kKernel, "volta_sgemm_128x64_nn", 8.1, 10));
  p.events.push_back(host(EventKind::kRuntime, "cudaDeviceSynchronize", 4, 8.002));
  const Summary s = summarise_profile(p, "sync-on-collective");
  expect_consistent(s);
  EXPECT_NEAR(idle(s, "collective"), 20.0 + 0.02, 1e-6);  // 4-6 ms and 8-8.002 ms
  EXPECT_NEAR(idle(s, "sync"), 0.0, 1e-9);
  EXPECT_NEAR(idle(s, "host_idle"), 0.98, 1e-6);  // 8.002-8.1 ms
  EXPECT_NEAR(s.shares.communication_pct, 40.02, 1e-6);
}

TEST(TraceSummaryIdle, CudaFreeIsAllocator) {
  Profile p = step_with_idle_gap();
  p.events.push_back(host(EventKind::kCpuOp, "aten::empty", 3.9, 6.1));
  p.events.push_back(host(EventKind::kRuntime, "cudaFree", 4, 6));
  const Summary s = summarise_profile(p, "allocator");
  expect_consistent(s);
  EXPECT_NEAR(idle(s, "allocator"), 20.0, 1e-9);
  EXPECT_NEAR(s.shares.framework_pct, 20.0, 1e-9);
}

TEST(TraceSummaryIdle, LaunchCallsAreLaunchAndTheOpAroundThemHostOps) {
  Profile p = step_with_idle_gap();
  p.events.push_back(host(EventKind::kCpuOp, "aten::add", 4, 6));
  p.events.push_back(host(EventKind::kRuntime, "cudaLaunchKernel", 4.5, 6, kMain, 42));
  const Summary s = summarise_profile(p, "launch");
  expect_consistent(s);
  EXPECT_NEAR(idle(s, "launch"), 15.0, 1e-9);   // 4.5-6 ms in cudaLaunchKernel
  EXPECT_NEAR(idle(s, "host_ops"), 5.0, 1e-9);  // 4-4.5 ms in aten::add outside the launch
  EXPECT_NEAR(s.shares.framework_pct, 20.0, 1e-9);
}

TEST(TraceSummaryIdle, DataLoaderWinsOverTheOpsInsideIt) {
  Profile p = step_with_idle_gap();
  p.events.push_back(
      host(EventKind::kAnnotation, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 3, 6));
  p.events.push_back(host(EventKind::kCpuOp, "aten::stack", 4.5, 5.5));
  p.events.push_back(host(EventKind::kRuntime, "cudaStreamSynchronize", 5.5, 5.8));
  const Summary s = summarise_profile(p, "dataloader");
  expect_consistent(s);
  EXPECT_NEAR(idle(s, "dataloader"), 20.0, 1e-9);
  EXPECT_NEAR(s.shares.data_wait_pct, 20.0, 1e-9);
  EXPECT_NEAR(s.shares.framework_pct, 0.0, 1e-9);
}

TEST(TraceSummaryIdle, NoHostEventIsHostIdle) {
  const Summary s = summarise_profile(step_with_idle_gap(), "idle");
  expect_consistent(s);
  EXPECT_NEAR(idle(s, "host_idle"), 20.0, 1e-9);
  EXPECT_NEAR(s.shares.framework_pct, 20.0, 1e-9);
}

// ---- iterations without ProfilerStep# -----------------------------------------------------------

TEST(TraceSummaryIterations, OptimizerStepsMarkThreeIterations) {
  // Each 10 ms iteration: forward/backward ops 0-7 ms, Optimizer.step# 7-9 ms launching a kernel at 8 ms
  // that runs 8.5-9.5 ms: an iteration ends when its optimizer step and that kernel have finished.
  Profile p;
  for (int k = 0; k < 3; ++k) {
    const double t0 = 10.0 * k;
    const int64_t corr = 100 + k;
    p.events.push_back(host(EventKind::kCpuOp, "aten::conv2d", t0, t0 + 3));
    p.events.push_back(host(EventKind::kCpuOp, "aten::convolution_backward", t0 + 3.5, t0 + 6.5));
    p.events.push_back(host(EventKind::kAnnotation, "Optimizer.step#SGD.step", t0 + 7, t0 + 9));
    p.events.push_back(host(EventKind::kRuntime, "cudaLaunchKernel", t0 + 8, t0 + 8.1, kMain, corr));
    p.events.push_back(device(EventKind::kKernel, "volta_sgemm_128x64_nn", t0 + 1, t0 + 6));
    p.events.push_back(device(EventKind::kKernel, "multi_tensor_apply_kernel", t0 + 8.5, t0 + 9.5, corr));
  }
  const Summary s = summarise_profile(p, "optimizer");
  print(s);
  expect_consistent(s);
  EXPECT_EQ(s.steps_from, "optimizer step");
  ASSERT_EQ(s.step_ms.size(), 3u);
  EXPECT_NEAR(s.step_ms[0], 9.5, 1e-9);  // trace start to the first step's kernel end
  EXPECT_NEAR(s.step_ms[1], 10.0, 1e-9);
  EXPECT_NEAR(s.step_ms[2], 10.0, 1e-9);
  EXPECT_EQ(s.step_numbers, (std::vector<int64_t>{1, 2, 3}));
  ASSERT_FALSE(s.notes.empty());
  EXPECT_NE(s.notes.front().find("Optimizer.step#"), std::string::npos) << s.notes.front();
}

TEST(TraceSummaryIterations, ATopLevelOpRecurringFourTimesMarksFourIterations) {
  // A prologue op once; then each 10 ms iteration copies its batch twice (0 and 1 ms: a short/long
  // alternation, not an iteration) and runs aten::mm 2-8 ms. aten::mm recurs 4 times.
  Profile p;
  p.events.push_back(host(EventKind::kCpuOp, "aten::ones", -1, -0.5));
  for (int k = 0; k < 4; ++k) {
    const double t0 = 10.0 * k;
    p.events.push_back(host(EventKind::kCpuOp, "aten::copy_", t0, t0 + 0.2));
    p.events.push_back(host(EventKind::kCpuOp, "aten::copy_", t0 + 1, t0 + 1.2));
    p.events.push_back(host(EventKind::kCpuOp, "aten::mm", t0 + 2, t0 + 8));
  }
  const Summary s = summarise_profile(p, "repeated");
  print(s);
  expect_consistent(s);
  EXPECT_FALSE(s.on_gpu);
  EXPECT_EQ(s.steps_from, "repeated op");
  ASSERT_EQ(s.step_ms.size(), 4u);
  EXPECT_NEAR(s.step_ms[0], 10.0, 1e-9);
  EXPECT_NEAR(s.step_ms[3], 6.0, 1e-9);  // the last aten::mm to the trace's end
  ASSERT_FALSE(s.notes.empty());
  EXPECT_NE(s.notes.front().find("aten::mm"), std::string::npos) << s.notes.front();
  EXPECT_NEAR(s.step_shares[1].compute_pct, 64.0, 1e-9);  // aten::mm 6 ms and two 0.2 ms copies of 10 ms
}

TEST(TraceSummaryIterations, NothingRepeatingIsTheWholeTrace) {
  Profile p;
  p.events.push_back(host(EventKind::kCpuOp, "aten::ones", 0, 1));
  p.events.push_back(host(EventKind::kCpuOp, "aten::mm", 2, 8));
  p.events.push_back(host(EventKind::kCpuOp, "aten::sum", 8.5, 9));
  const Summary s = summarise_profile(p, "once");
  expect_consistent(s);
  EXPECT_EQ(s.steps_from, "whole trace");
  ASSERT_EQ(s.step_ms.size(), 1u);
  EXPECT_NEAR(s.step_ms[0], 9.0, 1e-9);
}

TEST(TraceSummaryIterations, PerStepSharesFollowEachStep) {
  // Two ProfilerSteps: the first 10 ms with 8 ms of kernels, the second 30 ms with 6 ms of kernels and
  // the DataLoader over the rest.
  Profile p;
  p.events.push_back(host(EventKind::kStep, "ProfilerStep#1", 0, 10));
  p.events.push_back(host(EventKind::kStep, "ProfilerStep#2", 10, 40));
  p.events.push_back(device(EventKind::kKernel, "volta_sgemm_128x64_nn", 1, 9));
  p.events.push_back(
      host(EventKind::kCpuOp, "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 10, 34));
  p.events.push_back(device(EventKind::kKernel, "volta_sgemm_128x64_nn", 34, 40));
  const Summary s = summarise_profile(p, "two steps");
  expect_consistent(s);
  ASSERT_EQ(s.step_shares.size(), 2u);
  EXPECT_NEAR(s.step_shares[0].compute_pct, 80.0, 1e-9);
  EXPECT_NEAR(s.step_shares[0].framework_pct, 20.0, 1e-9);
  EXPECT_NEAR(s.step_shares[1].compute_pct, 20.0, 1e-9);
  EXPECT_NEAR(s.step_shares[1].data_wait_pct, 80.0, 1e-9);
  EXPECT_NEAR(s.shares.compute_pct, 100.0 * 14 / 40, 1e-9);  // time-weighted, not the mean of 80 and 20
  EXPECT_NEAR(s.shares.data_wait_pct, 100.0 * 24 / 40, 1e-9);
}

// A trace recorded with stacks (python_function events): the user's functions inside the data wait
// are named with their share of it; frames around the DataLoader call (the training loop), library
// frames (torch/, <built-in>) and another thread's frames are not.
TEST(TraceSummaryPythonFrames, TheUsersFunctionsInsideTheDataWaitAreNamedWithTheirShare) {
  const auto frame = [](const std::string& name, double start_ms, double end_ms, int64_t track = kMain) {
    TraceEvent e = host(EventKind::kAnnotation, name, start_ms, end_ms, track);
    e.args = {{"Python id", 1}, {"Python parent id", nullptr}};
    return e;
  };
  Profile p;
  for (int step = 0; step < 2; ++step) {
    const double t0 = 20.0 * step;
    p.events.push_back(host(EventKind::kStep, "ProfilerStep#" + std::to_string(step + 1), t0, t0 + 20));
    p.events.push_back(host(EventKind::kCpuOp, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t0,
                            t0 + 10));
    p.events.push_back(frame("torch/utils/data/dataloader.py(733): __next__", t0, t0 + 10));
    p.events.push_back(frame("dataset.py(31): __getitem__", t0 + 1, t0 + 9));
    p.events.push_back(frame("dataset.py(12): decode", t0 + 2, t0 + 6));
    p.events.push_back(frame("<built-in method sin of type object at 0x7f>", t0 + 3, t0 + 4));
    p.events.push_back(frame("dataset.py(12): decode", t0 + 5, t0 + 12));  // ends after the wait: not in it
    p.events.push_back(frame("augment.py(8): flip", t0 + 2, t0 + 8, /*track=*/kMain + 1));  // another thread
    p.events.push_back(host(EventKind::kCpuOp, "aten::addmm", t0 + 11, t0 + 19));
  }
  p.events.push_back(frame("train.py(40): <module>", 0, 40));  // around everything: not inside the wait
  const Summary s = summarise_trace(p, nlohmann::json::object(), "stacks");
  ASSERT_EQ(s.data_wait_python_frames.size(), 2u);
  EXPECT_EQ(s.data_wait_python_frames[0].frame, "dataset.py(31): __getitem__");
  EXPECT_NEAR(s.data_wait_python_frames[0].share_pct, 80.0, 1e-9);
  EXPECT_EQ(s.data_wait_python_frames[1].frame, "dataset.py(12): decode");
  EXPECT_NEAR(s.data_wait_python_frames[1].share_pct, 40.0, 1e-9);
  const auto note = std::find_if(s.notes.begin(), s.notes.end(),
                                 [](const std::string& n) { return n.find("data wait by your Python") == 0; });
  ASSERT_NE(note, s.notes.end());
  EXPECT_EQ(*note, "data wait by your Python functions (the trace has stacks): dataset.py(31): __getitem__ 80.0 %, "
                   "dataset.py(12): decode 40.0 % of the data wait");
  // Without stacks nothing is named.
  Profile plain;
  for (const TraceEvent& e : p.events) {
    if (!e.args.is_object()) plain.events.push_back(e);
  }
  EXPECT_TRUE(summarise_trace(plain, nlohmann::json::object(), "no stacks").data_wait_python_frames.empty());
}

TEST(TraceSummaryPythonFrames, LibraryAndStandardLibraryFramesAreNotTheUsers) {
  for (const char* library : {"torch/utils/data/dataloader.py(733): __next__", "<built-in method item>",
                              "nn.Module: Linear_0", "threading.py(320): wait", "multiprocessing/queues.py(100): get",
                              "/usr/lib/python3.11/json/decoder.py(337): decode",
                              "venv/lib/python3.11/site-packages/PIL/Image.py(3200): open"}) {
    EXPECT_TRUE(is_library_python_frame(library)) << library;
  }
  for (const char* user : {"dataset.py(31): __getitem__", "src/data/augment.py(8): flip", "train.py(40): <module>"}) {
    EXPECT_FALSE(is_library_python_frame(user)) << user;
  }
}

// The Python that runs between operators: a user's function's own time (less its Python callees
// and operators) as a share of the step; library frames and frames inside the data wait are not
// named, nor frames under the threshold.
TEST(TraceSummaryPythonFrames, TheUsersFunctionsOwnHostTimeIsNamedAsAShareOfTheStep) {
  const auto frame = [](const std::string& name, double start_ms, double end_ms) {
    TraceEvent e = host(EventKind::kAnnotation, name, start_ms, end_ms);
    e.args = {{"Python id", 1}};
    return e;
  };
  Profile p;
  p.events.push_back(frame("train.py(50): <module>", 0, 40));  // around the steps: not inside one
  for (int step = 0; step < 2; ++step) {
    const double t0 = 20.0 * step;
    p.events.push_back(host(EventKind::kStep, "ProfilerStep#" + std::to_string(step + 1), t0, t0 + 20));
    p.events.push_back(host(EventKind::kCpuOp, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t0,
                            t0 + 2));
    p.events.push_back(frame("dataset.py(31): __getitem__", t0 + 0.5, t0 + 1.5));  // the data wait's
    p.events.push_back(frame("model.py(20): forward", t0 + 2, t0 + 14));  // 12 ms: 4 of its own
    p.events.push_back(host(EventKind::kCpuOp, "aten::linear", t0 + 3, t0 + 7));
    p.events.push_back(frame("model.py(35): mask", t0 + 8, t0 + 12));  // 4 ms: 3 of its own
    p.events.push_back(host(EventKind::kCpuOp, "aten::mul", t0 + 9, t0 + 10));
    p.events.push_back(frame("torch/nn/modules/module.py(1700): _call_impl", t0 + 14, t0 + 19));  // library
    p.events.push_back(frame("model.py(60): tiny", t0 + 19, t0 + 19.5));  // 2.5 %: under 5 %
  }
  const Summary s = summarise_trace(p, nlohmann::json::object(), "host frames");
  ASSERT_EQ(s.host_python_frames.size(), 2u);
  EXPECT_EQ(s.host_python_frames[0].frame, "model.py(20): forward");
  EXPECT_NEAR(s.host_python_frames[0].share_pct, 20.0, 1e-9);  // (12 - 4 - 4) of 20 ms
  EXPECT_EQ(s.host_python_frames[1].frame, "model.py(35): mask");
  EXPECT_NEAR(s.host_python_frames[1].share_pct, 15.0, 1e-9);  // (4 - 1) of 20 ms
  EXPECT_NE(std::find(s.notes.begin(), s.notes.end(),
                      "host time by your Python functions (their own time, outside operators): model.py(20): forward "
                      "20.0 %, model.py(35): mask 15.0 % of the step"),
            s.notes.end());
}

}  // namespace
}  // namespace trainlab
