// Actions that know what is in place (issue 34): for each case a small torch.profiler trace made on
// this machine (tests/data/advice/make_traces.py) is diagnosed, and the action for what is already
// done must not be proposed while the right one is, with the evidence it read. Plus the same cases
// from a run record's settings and hand-built Summaries. Torch-free.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "diagnostics/diagnosis.h"
#include "diagnostics/in_place.h"
#include "diagnostics/rules.h"
#include "diagnostics/summarise.h"
#include "profiler/chrome_trace.h"

namespace trainlab {
namespace {

std::string advice_trace(const std::string& name) {
  return std::string(TRAINLAB_ADVICE_TRACES_DIR) + "/" + name + ".pt.trace.json.gz";
}

Diagnosis diagnose(const std::string& name) {
  const TraceImport trace = import_trace(advice_trace(name));
  return diagnose_summary(summarise_trace(trace.profile, trace.metadata, name), Thresholds::defaults());
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const Finding* finding(const Diagnosis& d, const std::string& rule) {
  for (const Finding& f : d.findings) {
    if (f.rule_id == rule) return &f;
  }
  return nullptr;
}

// Every action the diagnosis proposes (each finding's recommendation), one text.
std::string all_actions(const Diagnosis& d) {
  std::string out;
  for (const Finding& f : d.findings) out += f.recommendation + "\n";
  return out;
}

std::vector<std::string> changes(const Diagnosis& d) {
  std::vector<std::string> out;
  for (const Finding& f : d.findings) out.push_back(f.change);
  return out;
}

bool has(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// Summary of a CPU trace-like step with one large share.
Summary quiet_trace() {
  Summary s;
  s.source = "kineto";
  s.device = "cpu";
  s.step_ms = {10, 10, 10, 10, 10, 10};
  s.step.count = 6;
  s.shares.compute_pct = 100;
  s.logical_cores = 8;
  return s;
}

// ---- 1. compiled regions -----------------------------------------------------------------------

TEST(AdviceInPlace, CompiledTraceGetsGraphBreaksNotTorchCompile) {
  const Diagnosis d = diagnose("compiled");
  ASSERT_TRUE(d.summary.compiled_regions_per_step);
  EXPECT_DOUBLE_EQ(*d.summary.compiled_regions_per_step, 2.0);  // one graph break: two regions a step
  EXPECT_EQ(d.summary.compiled_region_name, "Torch-Compiled Region");
  const std::string actions = all_actions(d);
  EXPECT_FALSE(contains(actions, "torch.compile(model) fuses")) << actions;
  EXPECT_FALSE(has(changes(d), "compiled"));
  const Finding* f = finding(d, "dispatch_overhead");
  ASSERT_TRUE(f);
  EXPECT_TRUE(contains(f->recommendation, "already compiled (the trace enters 2 Torch-Compiled Region spans per step, "))
      << f->recommendation;
  ASSERT_TRUE(d.summary.compiled_share_pct);
  EXPECT_GE(*d.summary.compiled_share_pct, 50.0);  // forward and backward compiled: most of the step
  EXPECT_EQ(d.summary.compiled_share_of, "the step");
  EXPECT_TRUE(contains(f->recommendation, "graph breaks")) << f->recommendation;
  EXPECT_TRUE(contains(f->recommendation, "TORCH_LOGS=graph_breaks")) << f->recommendation;
  if (const Finding* mc = finding(d, "model_compute")) {
    EXPECT_FALSE(contains(mc->recommendation, "torch.compile,")) << mc->recommendation;
    EXPECT_TRUE(contains(mc->recommendation, "already compiled")) << mc->recommendation;
  }
}

TEST(AdviceInPlace, CompiledOnGpuGetsCudaGraphsUnlessTheyAreOn) {
  Summary s = quiet_trace();
  s.on_gpu = true;
  s.shares.compute_pct = 60;
  s.shares.framework_pct = 40;
  s.compiled_regions_per_step = 1;
  s.compiled_region_name = "CompiledFunction";
  std::vector<Finding> findings = run_rules(s, Thresholds::defaults());
  const auto dispatch = std::find_if(findings.begin(), findings.end(),
                                     [](const Finding& f) { return f.rule_id == "dispatch_overhead"; });
  ASSERT_NE(dispatch, findings.end());
  EXPECT_TRUE(contains(dispatch->recommendation, "mode=\"reduce-overhead\"")) << dispatch->recommendation;
  EXPECT_FALSE(contains(dispatch->recommendation, "graph breaks")) << dispatch->recommendation;  // one region
  EXPECT_EQ(dispatch->change, "");

  s.cuda_graph_launches_per_step = 1;  // reduce-overhead already on
  findings = run_rules(s, Thresholds::defaults());
  for (const Finding& f : findings) {
    EXPECT_FALSE(contains(f.recommendation, "Add CUDA graphs")) << f.rule_id << ": " << f.recommendation;
    EXPECT_FALSE(contains(f.recommendation, "torch.compile(model)")) << f.rule_id << ": " << f.recommendation;
  }
}

TEST(AdviceInPlace, CompiledRunRecordIsNotToldToCompile) {
  Summary s = quiet_trace();
  s.source = "trainlab";
  s.shares.compute_pct = 60;
  s.shares.framework_pct = 40;
  s.compiled_by = "inductor";
  for (const Finding& f : run_rules(s, Thresholds::defaults())) {
    EXPECT_NE(f.change, "compiled") << f.rule_id;
    EXPECT_FALSE(contains(f.recommendation, "--compiled on measures")) << f.rule_id << ": " << f.recommendation;
  }
}

// ---- 2. DDP overlap already on -----------------------------------------------------------------

TEST(AdviceInPlace, DdpOverlapTraceGetsBucketsAndNoSyncNotOverlap) {
  const Diagnosis d = diagnose("ddp_overlap");
  ASSERT_TRUE(d.summary.comm_in_backward_pct);
  EXPECT_GE(*d.summary.comm_in_backward_pct, 90.0);  // DDP's hooks launch them inside backward
  ASSERT_TRUE(d.summary.collective_calls_per_step);
  EXPECT_GE(*d.summary.collective_calls_per_step, 16.0);  // 1 KiB buckets: many tiny all-reduces
  const Finding* f = finding(d, "exposed_communication");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->change, "bucket_size");
  EXPECT_FALSE(contains(f->recommendation, "Overlap the gradient all-reduce")) << f->recommendation;
  EXPECT_TRUE(contains(f->recommendation, "Overlap is not the missing piece")) << f->recommendation;
  // The words follow the measured overlap (issue 55): how much of the collectives' time is hidden.
  EXPECT_TRUE(contains(f->recommendation, "is hidden under compute")) << f->recommendation;
  EXPECT_TRUE(contains(f->recommendation, "bucket_cap_mb")) << f->recommendation;
  EXPECT_TRUE(contains(f->recommendation, "model.no_sync()")) << f->recommendation;
  EXPECT_FALSE(has(changes(d), "overlap_comm"));
  bool calls_evidence = false;
  for (const Evidence& e : f->evidence) calls_evidence |= e.metric == "collective_calls_per_step";
  EXPECT_TRUE(calls_evidence);
}

TEST(AdviceInPlace, RunWithCommModeOverlapIsNotToldToOverlap) {
  Summary s = quiet_trace();
  s.source = "trainlab";
  s.world_size = 2;
  s.shares.compute_pct = 60;
  s.shares.communication_pct = 40;
  s.comm_mode = "overlap";
  s.bucket_mb = 25;
  const std::vector<Finding> findings = run_rules(s, Thresholds::defaults());
  const auto comm = std::find_if(findings.begin(), findings.end(),
                                 [](const Finding& f) { return f.rule_id == "exposed_communication"; });
  ASSERT_NE(comm, findings.end());
  EXPECT_FALSE(contains(comm->recommendation, "--comm-mode overlap:")) << comm->recommendation;
  EXPECT_TRUE(contains(comm->recommendation, "already overlaps (--comm-mode overlap, --bucket-mb 25)"))
      << comm->recommendation;
  EXPECT_TRUE(contains(comm->recommendation, "--bucket-mb")) << comm->recommendation;
  EXPECT_EQ(comm->change, "bucket_size");

  s.comm_mode = "serial";  // not in place: overlapping is the change
  const std::vector<Finding> serial = run_rules(s, Thresholds::defaults());
  const auto serial_comm = std::find_if(serial.begin(), serial.end(),
                                        [](const Finding& f) { return f.rule_id == "exposed_communication"; });
  ASSERT_NE(serial_comm, serial.end());
  EXPECT_EQ(serial_comm->change, "overlap_comm");
}

// ---- 3. DataLoader workers / pinned memory already on ------------------------------------------

TEST(AdviceInPlace, LoaderWorkersTraceGetsWhatIsLeftNotWorkers) {
  const Diagnosis d = diagnose("loader_workers");
  EXPECT_EQ(d.summary.loader_iterator, "_MultiProcessingDataLoaderIter");
  const Finding* f = finding(d, "input_bound");
  ASSERT_TRUE(f);
  EXPECT_FALSE(contains(f->recommendation, "Build batches in DataLoader worker processes")) << f->recommendation;
  EXPECT_TRUE(contains(f->recommendation, "Workers are not the missing piece")) << f->recommendation;
  EXPECT_TRUE(contains(f->recommendation, "_MultiProcessingDataLoaderIter")) << f->recommendation;
  EXPECT_TRUE(contains(f->recommendation, "prefetch_factor")) << f->recommendation;
  EXPECT_TRUE(contains(f->recommendation, "cheaper transforms")) << f->recommendation;
  EXPECT_TRUE(contains(f->recommendation, "caching the decoded samples")) << f->recommendation;
  EXPECT_FALSE(finding(d, "loader_settings"));  // nothing wrong on its face
}

TEST(AdviceInPlace, PinnedMemoryOnIsNotProposedAgain) {
  Summary s = quiet_trace();
  s.on_gpu = true;
  s.shares.compute_pct = 50;
  s.shares.data_wait_pct = 40;
  s.shares.host_to_device_pct = 10;
  s.loader_workers = 2;
  s.pin_memory = true;
  s.pin_memory_evidence = "Memcpy HtoD (Pinned -> Device)";
  const std::vector<Finding> findings = run_rules(s, Thresholds::defaults());
  for (const Finding& f : findings) {
    EXPECT_FALSE(contains(f.recommendation, "pin_memory=True")) << f.rule_id << ": " << f.recommendation;
    EXPECT_NE(f.change, "pin_memory") << f.rule_id;
  }
  const auto input = std::find_if(findings.begin(), findings.end(),
                                  [](const Finding& f) { return f.rule_id == "input_bound"; });
  ASSERT_NE(input, findings.end());
  EXPECT_TRUE(contains(input->recommendation, "the loader already has 2 workers")) << input->recommendation;
  EXPECT_TRUE(contains(input->recommendation, "pinned memory is on (Memcpy HtoD (Pinned -> Device))"))
      << input->recommendation;

  s.pin_memory = false;  // not in place on a GPU: pinning is still proposed
  s.pin_memory_evidence.clear();
  bool proposed = false;
  for (const Finding& f : run_rules(s, Thresholds::defaults())) proposed |= contains(f.recommendation, "pin_memory=True");
  EXPECT_TRUE(proposed);
}

TEST(AdviceInPlace, PinnedCopiesInATraceSetPinMemory) {
  Profile p;
  TraceEvent step{EventKind::kStep, "ProfilerStep#1", 0, 1000};
  TraceEvent copy{EventKind::kMemcpy, "Memcpy HtoD (Pinned -> Device)", 100, 200};
  copy.on_device = true;
  p.events = {step, copy};
  Summary s;
  add_in_place(p, {{0, 1000}}, 0, s);
  ASSERT_TRUE(s.pin_memory);
  EXPECT_TRUE(*s.pin_memory);
  EXPECT_EQ(s.pin_memory_evidence, "Memcpy HtoD (Pinned -> Device)");
}

// ---- 4. syncs inside the model's own graph -----------------------------------------------------

TEST(AdviceInPlace, SyncsInsideAModuleNameTheOpAndModuleNotTheLoop) {
  const Diagnosis d = diagnose("model_syncs");
  ASSERT_TRUE(d.summary.host_syncs_per_step);
  EXPECT_DOUBLE_EQ(*d.summary.host_syncs_per_step, 8.0);  // 8 .item() a step, each counted once
  ASSERT_EQ(d.summary.model_syncs.size(), 1u);
  EXPECT_EQ(d.summary.model_syncs[0].op, "aten::item");
  EXPECT_EQ(d.summary.model_syncs[0].module, "Gate");
  EXPECT_DOUBLE_EQ(d.summary.model_syncs[0].per_step, 8.0);
  const Finding* f = finding(d, "host_syncs");
  ASSERT_TRUE(f);
  EXPECT_TRUE(contains(f->title, "inside the model's forward: aten::item in Gate.forward (8 per step)")) << f->title;
  EXPECT_FALSE(contains(f->title, "printing a loss")) << f->title;
  EXPECT_TRUE(contains(f->recommendation, "not in the training loop")) << f->recommendation;
  EXPECT_FALSE(contains(f->recommendation, "read them every N steps")) << f->recommendation;
}

TEST(AdviceInPlace, ModuleScopeNamesDropTheInstanceNumber) {
  EXPECT_EQ(module_of_scope("nn.Module: Gate_3"), "Gate");
  EXPECT_EQ(module_of_scope("nn.Module: BertSelfAttention_11"), "BertSelfAttention");
  EXPECT_EQ(module_of_scope("nn.Module: Linear"), "Linear");
  EXPECT_EQ(module_of_scope("aten::item"), "");
}

TEST(AdviceInPlace, SyncsInTheLoopStillBlameTheLoop) {
  Summary s = quiet_trace();
  s.on_gpu = true;  // where a host read stalls the device
  s.host_syncs_per_step = 4;
  s.model_syncs = {{"aten::item", "Gate", 1}};  // most are outside the model
  std::vector<Finding> findings = run_rules(s, Thresholds::defaults());
  auto f = std::find_if(findings.begin(), findings.end(), [](const Finding& x) { return x.rule_id == "host_syncs"; });
  ASSERT_NE(f, findings.end());
  EXPECT_TRUE(contains(f->recommendation, "read them every N steps")) << f->recommendation;

  // On a CPU an .item() stalls no device (issue 55): said so, and no action.
  s.on_gpu = false;
  findings = run_rules(s, Thresholds::defaults());
  f = std::find_if(findings.begin(), findings.end(), [](const Finding& x) { return x.rule_id == "host_syncs"; });
  ASSERT_NE(f, findings.end());
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_TRUE(contains(f->title, "stall no device")) << f->title;
  EXPECT_TRUE(f->recommendation.empty()) << f->recommendation;
}

}  // namespace
}  // namespace trainlab

namespace trainlab {
namespace {

// A GPU trace whose compiled region launches little of the kernel time is partly compiled: the advice
// is to compile the eager rest, and it does not call the model compiled.
TEST(AdviceInPlace, PartlyCompiledGpuTraceIsToldToCompileTheRest) {
  Profile p;
  const auto host = [](EventKind kind, const char* name, int64_t from, int64_t to, int64_t correlation = -1) {
    TraceEvent e{kind, name, from, to};
    e.track = 1;
    e.correlation = correlation;
    return e;
  };
  const auto kernel = [](int64_t from, int64_t to, int64_t correlation) {
    TraceEvent e{EventKind::kKernel, "k", from, to};
    e.on_device = true;
    e.track = 7;
    e.correlation = correlation;
    return e;
  };
  p.events = {host(EventKind::kStep, "ProfilerStep#1", 0, 10000),
              host(EventKind::kCpuOp, "Torch-Compiled Region: 0/0", 100, 300),
              host(EventKind::kRuntime, "cudaLaunchKernel", 150, 160, 1),  // compiled: 100 ns of kernel
              host(EventKind::kRuntime, "cudaLaunchKernel", 400, 410, 2),  // eager: 900 ns
              kernel(500, 600, 1), kernel(700, 1600, 2)};
  Summary s;
  add_in_place(p, {{0, 10000}}, 1, s);
  ASSERT_TRUE(s.compiled_share_pct);
  EXPECT_NEAR(*s.compiled_share_pct, 10.0, 1e-9);
  EXPECT_EQ(s.compiled_share_of, "kernel time");

  Summary gpu = quiet_trace();
  gpu.on_gpu = true;
  gpu.shares.compute_pct = 60;
  gpu.shares.framework_pct = 40;
  gpu.compiled_regions_per_step = s.compiled_regions_per_step;
  gpu.compiled_region_name = s.compiled_region_name;
  gpu.compiled_share_pct = s.compiled_share_pct;
  gpu.compiled_share_of = s.compiled_share_of;
  for (const Finding& f : run_rules(gpu, Thresholds::defaults())) {
    if (f.rule_id != "dispatch_overhead") continue;
    EXPECT_TRUE(contains(f.recommendation, "only 10.0 % of kernel time runs in compiled code")) << f.recommendation;
    EXPECT_FALSE(contains(f.recommendation, "The model is already compiled")) << f.recommendation;
  }
}

}  // namespace
}  // namespace trainlab

namespace trainlab {
namespace {

// The case: a compiled model doing ~400 tiny all-reduces per step with no overlap is not told
// to compile; it is told to overlap, and that the all-reduces are many small ones.
TEST(AdviceInPlace, CompiledModelWithManyTinyAllReducesIsNotToldToCompile) {
  Summary s = quiet_trace();
  s.on_gpu = true;
  s.world_size = 8;
  s.shares.compute_pct = 40;
  s.shares.communication_pct = 35;
  s.shares.framework_pct = 25;
  s.comm_total_pct = 35;  // all exposed
  s.collective_calls_per_step = 400;
  s.comm_in_backward_pct = 0;
  s.compiled_regions_per_step = 1;
  s.compiled_region_name = "Torch-Compiled Region";
  s.compiled_share_pct = 95;
  s.compiled_share_of = "kernel time";
  bool comm_seen = false;
  for (const Finding& f : run_rules(s, Thresholds::defaults())) {
    EXPECT_FALSE(contains(f.recommendation, "torch.compile(model) fuses")) << f.rule_id << ": " << f.recommendation;
    EXPECT_NE(f.change, "compiled") << f.rule_id;
    if (f.rule_id != "exposed_communication") continue;
    comm_seen = true;
    EXPECT_EQ(f.change, "overlap_comm");
    EXPECT_TRUE(contains(f.recommendation, "400 collectives per step are many small ones")) << f.recommendation;
  }
  EXPECT_TRUE(comm_seen);
}

}  // namespace
}  // namespace trainlab
