// Golden cases for whole runs: a hand-built variant record (or profile) -> Summary -> rules ->
// verdict, with the diagnosis each must get. Torch-free.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "diagnostics/rules.h"
#include "core/errors.h"
#include "core/trace_metadata.h"
#include "diagnostics/diagnosis.h"
#include "diagnostics/summarise.h"
#include "harness/runner/record_summary.h"
#include "diagnostics/verdict.h"
#include "host_span.h"

namespace trainlab {
namespace {

// `steps` measured steps of `step_ms`, split by phase in milliseconds (the rest is "other").
VariantRecord record_with(int steps, double data_ms, double forward_ms, double backward_ms, double optimizer_ms,
                          double comm_ms = 0) {
  VariantRecord r;
  r.spec.scenario = "golden";
  r.spec.batch_size = 64;
  r.device = "cpu";
  r.environment.logical_cores = 2;
  r.loader = LoaderRun{};  // 0 workers, no prefetch, nothing pinned
  for (int i = 0; i < steps + 2; ++i) {
    StepRecord s;
    s.index = i;
    s.warmup = i < 2;
    const auto ns = [](double ms) { return static_cast<int64_t>(ms * 1e6); };
    s.phase_ns[static_cast<size_t>(Phase::kDataWait)] = ns(data_ms);
    s.phase_ns[static_cast<size_t>(Phase::kForward)] = ns(forward_ms);
    s.phase_ns[static_cast<size_t>(Phase::kBackward)] = ns(backward_ms);
    s.phase_ns[static_cast<size_t>(Phase::kOptimizer)] = ns(optimizer_ms);
    s.phase_ns[static_cast<size_t>(Phase::kCommunication)] = ns(comm_ms);
    s.step_ns = ns(data_ms + forward_ms + backward_ms + optimizer_ms + comm_ms) + (i % 3) * 100'000;  // +-0.1 ms jitter
    s.loss = 2.0 - 0.01 * i;
    s.memory_bytes = 500LL << 20;
    r.steps.push_back(s);
  }
  r.ops_per_step = 300;
  r.dispatch_ns_per_op = 2000;  // 0.6 ms of a step's ops is dispatch
  r.init_ns = 1'000'000'000;
  return r;
}

Diagnosis diagnose_record(const VariantRecord& r) {  // what `trainlab diagnose` does per variant
  Diagnosis d;
  d.summary = summarise_variant(r, "golden", nullptr);
  d.findings = run_rules(d.summary, Thresholds::defaults());
  d.verdict = decide(d.summary, d.findings, Thresholds::defaults());
  return d;
}

// A profiled window as the trace holds it: ProfilerStep#N spans of the loop's thread (track 1)
// with data_wait / forward / backward phase spans, `ops` recorded ops in each of forward and
// backward, and loader-thread ops (track 2) inside data_wait.
Profile profiled_window(const std::vector<int64_t>& step_numbers, int ops) {
  Profile p;
  const auto span = [&](EventKind kind, const std::string& name, int64_t start, int64_t end, int64_t track) {
    p.events.push_back(test_profile::host_span(kind, name, start, end, track));
  };
  for (const int64_t n : step_numbers) {
    const int64_t t0 = n * 20'000'000;
    span(EventKind::kStep, "ProfilerStep#" + std::to_string(n), t0, t0 + 12'000'000, 1);
    span(EventKind::kPhase, "data_wait", t0, t0 + 2'000'000, 1);
    span(EventKind::kPhase, "forward", t0 + 2'000'000, t0 + 7'000'000, 1);
    span(EventKind::kPhase, "backward", t0 + 7'000'000, t0 + 12'000'000, 1);
    for (int i = 0; i < ops; ++i) {
      span(EventKind::kCpuOp, "aten::linear", t0 + 2'000'000 + i * 4'000, t0 + 2'000'000 + i * 4'000 + 1'000, 1);
      span(EventKind::kCpuOp, "aten::mm", t0 + 7'000'000 + i * 4'000, t0 + 7'000'000 + i * 4'000 + 1'000, 1);
      span(EventKind::kCpuOp, "aten::stack", t0 + i * 1'000, t0 + i * 1'000 + 500, 2);  // a loader thread's
    }
  }
  return p;
}

TEST(DiagnosisGolden, AProfiledWindowsOwnCostIsTakenOutOfItsStepsBeforeTheShares) {
  // 6 measured steps (indices 2..7) of 2 ms data, 4 ms forward, 4 ms backward; the window (steps
  // 4 and 5) recorded 1,000 ops in each of forward and backward at a measured 1 us each: its steps
  // are 1 ms longer in each.
  const VariantRecord clean = record_with(6, 2, 4, 4, 0);
  VariantRecord profiled = clean;
  for (StepRecord& s : profiled.steps) {
    if (s.index != 4 && s.index != 5) continue;
    s.phase_ns[static_cast<size_t>(Phase::kForward)] += 1'000'000;
    s.phase_ns[static_cast<size_t>(Phase::kBackward)] += 1'000'000;
    s.step_ns += 2'000'000;
  }
  profiled.profile.window_steps = 2;
  profiled.profile.event_cost_ns = 1000;
  const Profile window = profiled_window({4, 5}, 1000);

  const Summary expected = summarise_variant(clean, "golden", nullptr);
  const Summary discounted = summarise_variant(profiled, "golden", &window);
  const Summary raw = summarise_variant(profiled, "golden", nullptr);  // no trace: nothing to locate
  EXPECT_NEAR(discounted.shares.data_wait_pct, expected.shares.data_wait_pct, 1e-9);
  EXPECT_NEAR(discounted.shares.compute_pct, expected.shares.compute_pct, 1e-9);
  EXPECT_NEAR(discounted.step.mean, expected.step.mean, 1e-9);
  EXPECT_LT(raw.shares.data_wait_pct, expected.shares.data_wait_pct - 1.0);  // the profiler's time diluted it
  ASSERT_FALSE(discounted.notes.empty());
  EXPECT_NE(discounted.notes.front().find("2000 events per step on the loop's thread x 1000 ns = 2.00 ms per step"),
            std::string::npos)
      << discounted.notes.front();
  EXPECT_NE(discounted.notes.front().find("steps 4..5"), std::string::npos) << discounted.notes.front();

  // The same window as a trace of its own: the trace states the cost, the shares are of the loop.
  const nlohmann::json metadata = {{"trainlab", {{"profiler_event_cost_ns", 1000}}}};
  const Summary from_trace = summarise_trace(window, metadata, "window");
  const Summary trace_raw = summarise_trace(window, nlohmann::json::object(), "window");
  EXPECT_NEAR(from_trace.shares.data_wait_pct, 100.0 * 2 / 10, 1e-6);  // 2 of the 10 ms without the profiler
  EXPECT_NEAR(trace_raw.shares.data_wait_pct, 100.0 * 2 / 12, 1e-6);
  ASSERT_EQ(from_trace.step_ms.size(), 2u);
  EXPECT_NEAR(from_trace.step_ms[0], 10.0, 1e-9);

  // A sampled window (--op-sample 0.5): its op counts are the sample's, scaled back, and said so.
  const Summary sampled = summarise_trace(window, {{"trainlab", {{"op_sample", 0.5}}}}, "sampled");
  ASSERT_TRUE(trace_raw.ops_per_step.has_value());
  ASSERT_TRUE(sampled.ops_per_step.has_value());
  EXPECT_NEAR(*sampled.ops_per_step, 2 * *trace_raw.ops_per_step, 1e-9);
  EXPECT_TRUE(std::any_of(sampled.notes.begin(), sampled.notes.end(),
                          [](const std::string& n) { return n.rfind("ops sampled at 50 %", 0) == 0; }));

  // The block is read typed (core/trace_metadata.h): what the training child writes reads back, and
  // a field of the wrong type is bad input naming it (it used to be skipped as if absent).
  TraceMetadata written;
  written.op_sample = 0.5;
  written.profiler_event_cost_ns = 1000;
  written.host = "node-b";
  written.loader_workers = 2;
  const TraceMetadata read = trace_metadata_of(to_json(written));
  EXPECT_EQ(read.op_sample, 0.5);
  EXPECT_EQ(read.profiler_event_cost_ns, 1000.0);
  EXPECT_EQ(read.host, "node-b");
  EXPECT_EQ(read.loader_workers, 2);
  EXPECT_EQ(summarise_trace(window, {{"trainlab", to_json(written)}}, "typed").host, "node-b");
  try {
    summarise_trace(window, {{"trainlab", {{"op_sample", "half"}}}}, "wrong type");
    ADD_FAILURE() << "a string op_sample was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("\"op_sample\""), std::string::npos) << e.what();
  }
}

bool fired(const Diagnosis& d, const std::string& rule) {
  return std::any_of(d.findings.begin(), d.findings.end(), [&](const Finding& f) { return f.rule_id == rule; });
}

TEST(DiagnosisGolden, DataWaitOfFortyPercentIsTheDataPipeline) {
  const Diagnosis d = diagnose_record(record_with(20, 40, 20, 30, 10));
  EXPECT_FALSE(d.verdict.inconclusive);
  EXPECT_EQ(d.verdict.primary, Suspect::kDataPipeline);
  EXPECT_NEAR(d.summary.shares.data_wait_pct, 40.0, 0.2);
  EXPECT_TRUE(fired(d, "input_bound"));
  EXPECT_NE(d.verdict.headline.find("1.67x"), std::string::npos) << d.verdict.headline;  // 100 / (100 - 40)
  ASSERT_FALSE(d.verdict.actions.empty());
  EXPECT_EQ(d.verdict.actions.front().rule_id, "input_bound");
  EXPECT_EQ(d.verdict.actions.front().change, "more_workers");
}

RankSummary ok_rank(int rank, double busy_ms_mean) {
  RankSummary r;
  r.rank = rank;
  r.ok = true;
  r.busy_ms_mean = busy_ms_mean;
  return r;
}

// A two-rank step whose all-reduce is exposed (record_with(20, 2, 20, 30, 8, 40)): rank 0 busy 60 ms,
// rank 1 `rank1_busy_ms`, their busy times `busy_spread_pct` apart.
VariantRecord two_rank_record(double busy_spread_pct, double rank1_busy_ms) {
  VariantRecord r = record_with(20, 2, 20, 30, 8, 40);
  r.world_size = 2;
  r.distributed.busy_spread_pct = busy_spread_pct;
  r.distributed.ranks = {ok_rank(0, 60.0), ok_rank(1, rank1_busy_ms)};
  return r;
}

TEST(DiagnosisGolden, ExposedAllReduceIsCommunication) {
  const Diagnosis d = diagnose_record(two_rank_record(3.0, 61.8));
  EXPECT_EQ(d.verdict.primary, Suspect::kCommunication);
  EXPECT_TRUE(fired(d, "exposed_communication"));
  EXPECT_FALSE(fired(d, "rank_imbalance"));  // 3 % spread
  EXPECT_EQ(d.summary.rank_step_p50_ms.size(), 2u);
}

// A record times every all-reduce (comm_ns, 50 ms a step here) and the step's wait for them (the
// communication phase, 40 ms): the other 10 ms ran under backward. The diagnosis says so, where it
// used to call all of it exposed.
TEST(DiagnosisGolden, AllReduceTimeBeyondTheStepsWaitForItIsOverlapped) {
  VariantRecord r = two_rank_record(3.0, 61.8);
  for (StepRecord& s : r.steps) s.comm_ns = 50'000'000;
  const Diagnosis d = diagnose_record(r);
  const double step_ms = 2 + 20 + 30 + 8 + 40 + 0.1;  // the phases and the steps' mean jitter
  ASSERT_TRUE(d.summary.comm_total_pct && d.summary.comm_overlapped_pct);
  EXPECT_NEAR(*d.summary.comm_total_pct, 100.0 * 50 / step_ms, 0.1);
  EXPECT_NEAR(d.summary.shares.communication_pct, 100.0 * 40 / step_ms, 0.1);
  EXPECT_NEAR(*d.summary.comm_overlapped_pct, 100.0 * 10 / step_ms, 0.1);
  const std::string text = render_diagnosis_text(d);
  EXPECT_NE(text.find("Communication: 50.0 % of the step, 10.0 % overlapped with compute, 40.0 % exposed"),
            std::string::npos) << text;
  // Serial all-reduces after backward: all of their time is the step's wait, none overlapped.
  VariantRecord serial = two_rank_record(3.0, 61.8);
  for (StepRecord& s : serial.steps) s.comm_ns = 40'000'000;
  EXPECT_NEAR(diagnose_record(serial).summary.comm_overlapped_pct.value_or(-1), 0.0, 0.1);
}

TEST(DiagnosisGolden, CommunicationThatWaitsForASlowerRankNamesTheStraggler) {
  const Diagnosis d = diagnose_record(two_rank_record(30.0, 78.0));
  EXPECT_EQ(d.verdict.primary, Suspect::kCommunication);
  EXPECT_TRUE(fired(d, "rank_imbalance"));
  ASSERT_TRUE(d.summary.straggler_rank);
  EXPECT_EQ(*d.summary.straggler_rank, 1);
  EXPECT_NE(d.verdict.headline.find("waiting for the slowest rank, rank 1"), std::string::npos) << d.verdict.headline;
}

TEST(DiagnosisGolden, BusyComputeIsModelComputeWithItsEfficiency) {
  VariantRecord r = record_with(20, 0.5, 40, 50, 10);
  r.model_flops_per_sample = 3e8;     // x 64 samples per ~100 ms step = 1.9e11 FLOP/s achieved
  r.peak_flops_per_s = 1e12;
  const Diagnosis d = diagnose_record(r);
  EXPECT_EQ(d.verdict.primary, Suspect::kModelCompute);
  EXPECT_EQ(d.verdict.confidence, "high");
  ASSERT_TRUE(d.summary.achieved_flops_per_s);
  EXPECT_NEAR(*d.summary.achieved_flops_per_s / 1e9, 3e8 * 64 / 0.1005 / 1e9, 2.0);
  EXPECT_NE(d.verdict.headline.find("of the measured peak FLOP/s"), std::string::npos) << d.verdict.headline;
}

// A partial FLOP count (a bundle with an nn.LSTM, which PyTorch's counter leaves out) gives no
// efficiency figure: the verdict, the rule and the notes name what was not counted.
TEST(DiagnosisGolden, APartialFlopCountGivesNoEfficiencyAndSaysWhatWasNotCounted) {
  VariantRecord r = record_with(20, 0.5, 40, 50, 10);
  r.model_flops_per_sample = 3e8;
  r.peak_flops_per_s = 1e12;
  r.flops_not_counted = {"nn.LSTM", "nn.GRU"};
  const Diagnosis d = diagnose_record(r);
  EXPECT_EQ(d.verdict.primary, Suspect::kModelCompute);
  EXPECT_FALSE(d.summary.achieved_flops_per_s);
  EXPECT_FALSE(d.summary.model_flops_per_step);
  EXPECT_EQ(d.verdict.headline.find("of the measured peak FLOP/s"), std::string::npos) << d.verdict.headline;
  EXPECT_NE(d.verdict.headline.find("FLOPs not counted for: nn.LSTM, nn.GRU: no efficiency figure"), std::string::npos)
      << d.verdict.headline;
  const auto rule = std::find_if(d.findings.begin(), d.findings.end(),
                                 [](const Finding& f) { return f.rule_id == "model_compute"; });
  ASSERT_NE(rule, d.findings.end());
  EXPECT_NE(rule->title.find("FLOPs not counted for: nn.LSTM, nn.GRU (no efficiency figure)"), std::string::npos)
      << rule->title;
  EXPECT_EQ(rule->title.find("peak FLOP/s"), std::string::npos) << rule->title;
  EXPECT_TRUE(std::any_of(d.summary.notes.begin(), d.summary.notes.end(), [](const std::string& n) {
    return n.find("FLOPs not counted for: nn.LSTM, nn.GRU") != std::string::npos;
  }));
}

TEST(DiagnosisGolden, ThousandsOfSmallOpsAreFrameworkOverhead) {
  VariantRecord r = record_with(20, 0.5, 40, 50, 10);
  r.ops_per_step = 20000;
  r.dispatch_ns_per_op = 3000;  // 60 ms of the ~100 ms step
  const Diagnosis d = diagnose_record(r);
  EXPECT_EQ(d.verdict.primary, Suspect::kFrameworkOverhead);
  EXPECT_NEAR(d.summary.shares.framework_pct, 60.0 / 100.5 * 100.0, 0.5);
  EXPECT_TRUE(fired(d, "dispatch_overhead"));
}

TEST(DiagnosisGolden, NoisyStepsWidenTheIntervalsButKeepTheVerdict) {
  // A loaded machine: steps alternate 45 ms and 135 ms, every step waiting 45 % of it on data.
  VariantRecord r = record_with(20, 45, 20, 25, 10);
  for (StepRecord& s : r.steps) {
    const double scale = s.index % 2 == 0 ? 0.5 : 1.5;
    for (int64_t& ns : s.phase_ns) ns = static_cast<int64_t>(static_cast<double>(ns) * scale);
    s.step_ns = static_cast<int64_t>(100e6 * scale);
  }
  const Diagnosis d = diagnose_record(r);
  ASSERT_FALSE(d.verdict.inconclusive) << d.verdict.headline;
  EXPECT_EQ(d.verdict.primary, Suspect::kDataPipeline);
  EXPECT_NE(d.verdict.confidence, "high");  // the noise lowers it, with its reason
  EXPECT_TRUE(std::any_of(d.verdict.confidence_reasons.begin(), d.verdict.confidence_reasons.end(),
                          [](const std::string& r) { return r.find("noisy steps") != std::string::npos; }));
  const SuspectShare& data = *std::find_if(d.verdict.attribution.begin(), d.verdict.attribution.end(),
                                           [](const SuspectShare& a) { return a.suspect == Suspect::kDataPipeline; });
  EXPECT_NEAR(data.share_pct, 45.0, 0.5);
  EXPECT_LE(data.low_pct, data.share_pct);
  EXPECT_GE(data.high_pct, data.share_pct);
  EXPECT_NEAR(data.steps_led_pct, 100.0, 1e-9);
}

TEST(DiagnosisGolden, OneDecisiveStepGivesALowConfidenceVerdict) {
  const Diagnosis d = diagnose_record(record_with(1, 40, 20, 30, 10));
  ASSERT_FALSE(d.verdict.inconclusive) << d.verdict.headline;
  EXPECT_EQ(d.verdict.primary, Suspect::kDataPipeline);
  EXPECT_EQ(d.verdict.confidence, "low");
  ASSERT_FALSE(d.verdict.confidence_reasons.empty());
  EXPECT_NE(d.verdict.confidence_reasons.front().find("one step"), std::string::npos);
  const Diagnosis three = diagnose_record(record_with(3, 40, 20, 30, 10));
  EXPECT_EQ(three.verdict.primary, Suspect::kDataPipeline);
  EXPECT_EQ(three.verdict.confidence, "medium");  // 3 steps: under verdict.min_steps
}

TEST(DiagnosisGolden, SuspectsTooCloseToCallAreInconclusiveAndNamed) {
  VariantRecord r = record_with(20, 27, 20, 30, 10);  // 87 ms: data 31.0 %
  r.ops_per_step = 1000;
  r.dispatch_ns_per_op = 26'000;  // 26 ms of the step: framework 29.9 %
  const Diagnosis d = diagnose_record(r);
  ASSERT_TRUE(d.verdict.inconclusive) << d.verdict.headline;
  EXPECT_NE(d.verdict.headline.find("too close to call"), std::string::npos) << d.verdict.headline;
  EXPECT_NE(d.verdict.headline.find("data pipeline"), std::string::npos);
  EXPECT_NE(d.verdict.headline.find("framework overhead"), std::string::npos);
}

TEST(DiagnosisGolden, ABusyDeviceKeepsModelComputePrimaryAndNamesTheRemovableSuspectSecondary) {
  // Communication at 11 % of the step and compute at 71 %: the device is busy at or above the
  // 70 % line, so model compute is primary and communication a secondary finding with its saving.
  VariantRecord r = record_with(20, 1, 25, 35, 12, 11);
  for (StepRecord& s : r.steps) {  // 16 ms of other host work: a 100 ms step
    s.phase_ns[static_cast<size_t>(Phase::kOther)] = 16'000'000;
    s.step_ns += 16'000'000;
  }
  const Diagnosis d = diagnose_record(r);
  EXPECT_NEAR(d.summary.shares.compute_pct, 72.0 - 0.6, 0.2);  // less 0.6 ms of dispatch
  EXPECT_NEAR(d.summary.shares.communication_pct, 11.0, 0.2);
  EXPECT_EQ(d.verdict.primary, Suspect::kModelCompute);
  EXPECT_TRUE(fired(d, "exposed_communication"));
  ASSERT_FALSE(d.verdict.secondary.empty());
  EXPECT_NE(d.verdict.secondary.front().find("communication"), std::string::npos) << d.verdict.secondary.front();
  EXPECT_NE(d.verdict.policy.find("at or above"), std::string::npos) << d.verdict.policy;
  EXPECT_NE(d.verdict.confidence, "high");  // within 10 points of the line
}

TEST(DiagnosisGolden, AnUnderFedDeviceNamesTheSuspectThatOwnsTheIdleTime) {
  // Compute 55 %, framework 30 % of the step, communication 12 %: under the line, framework owns
  // the largest share of the idle time.
  VariantRecord r = record_with(20, 1, 35, 40, 10, 12);
  r.ops_per_step = 1000;
  r.dispatch_ns_per_op = 29'000;
  const Diagnosis d = diagnose_record(r);
  EXPECT_LT(d.summary.shares.compute_pct, 70.0);
  EXPECT_EQ(d.verdict.primary, Suspect::kFrameworkOverhead) << d.verdict.headline;
  EXPECT_NE(d.verdict.policy.find("under-fed"), std::string::npos) << d.verdict.policy;
}

TEST(DiagnosisGolden, IdleTimeInNoMeasuredPhaseKeepsModelComputeAndSaysSo) {
  // Compute 60 %, "other" (untraced host work) 38 %: no removable suspect owns 5 % of the step.
  VariantRecord r = record_with(20, 1, 25, 25, 10);
  for (StepRecord& s : r.steps) {
    s.phase_ns[static_cast<size_t>(Phase::kOther)] = 38'000'000;
    s.step_ns += 38'000'000;
  }
  const Diagnosis d = diagnose_record(r);
  EXPECT_EQ(d.verdict.primary, Suspect::kModelCompute);
  EXPECT_NE(d.verdict.headline.find("untraced host work"), std::string::npos) << d.verdict.headline;
}

TEST(DiagnosisGolden, GrowingMemoryAndANaNLossAreSecondaryFindings) {
  VariantRecord r = record_with(30, 0.5, 40, 50, 10);
  for (StepRecord& s : r.steps) s.memory_bytes = (500LL << 20) + s.index * (20LL << 20);  // +20 MiB a step
  r.steps[20].loss = std::numeric_limits<double>::quiet_NaN();
  const Diagnosis d = diagnose_record(r);
  EXPECT_EQ(d.verdict.primary, Suspect::kModelCompute);
  EXPECT_TRUE(fired(d, "memory_growth"));
  EXPECT_TRUE(fired(d, "non_finite_loss"));
}

TEST(DiagnosisGolden, GpuTraceProfileSplitsKernelsCopiesAndIdle) {
  // Two 10 ms steps: kernels 6 ms, a 1 ms copy not under kernels, the DataLoader 2 ms while the
  // device idles, 1 ms idle with nothing on the host.
  Profile p;
  for (int k = 0; k < 2; ++k) {
    const int64_t t0 = k * 10'000'000;
    p.events.push_back({EventKind::kStep, "ProfilerStep#" + std::to_string(k + 1), t0, t0 + 10'000'000, false, 0, 1});
    p.events.push_back({EventKind::kAnnotation, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t0,
                        t0 + 2'000'000, false, 0, 1});
    p.events.push_back({EventKind::kMemcpy, "Memcpy HtoD", t0 + 2'000'000, t0 + 3'000'000, true, 0, 7});
    p.events.push_back({EventKind::kKernel, "volta_sgemm_128x64_nn", t0 + 3'000'000, t0 + 9'000'000, true, 0, 7});
  }
  const Summary s = summarise_trace(p, nlohmann::json::object(), "hand-built");
  EXPECT_TRUE(s.on_gpu);
  EXPECT_EQ(s.step_ms.size(), 2u);
  EXPECT_NEAR(s.shares.compute_pct, 60.0, 1e-6);
  EXPECT_NEAR(s.shares.host_to_device_pct, 10.0, 1e-6);
  EXPECT_NEAR(s.shares.data_wait_pct, 20.0, 1e-6);
  EXPECT_NEAR(s.shares.framework_pct, 10.0, 1e-6);
  EXPECT_EQ(s.kernel_precision_ns.at("fp32"), 12'000'000);
}

TEST(DiagnosisFileTest, TheDocumentReadsBackTypedWithItsVerdictActionsAndFindings) {
  const Diagnosis d = diagnose_record(record_with(20, 40, 20, 30, 10));
  ASSERT_FALSE(d.findings.empty());
  const nlohmann::json doc = diagnosis_document({d}, "results/run-1", "2026-11-24T00:00:00Z", {"golden: input_bound (high)"});
  EXPECT_EQ(doc.at("schema_version"), kDiagnosisSchemaVersion);
  EXPECT_TRUE(doc["diagnoses"][0]["summary"].contains("memory_mib"));
  const DiagnosisFile file = diagnosis_file_from_json(doc);
  EXPECT_EQ(file.input, "results/run-1");
  EXPECT_TRUE(file.gate_failed);
  ASSERT_EQ(file.diagnoses.size(), 1u);
  const DiagnosisLine& line = file.diagnoses[0];
  EXPECT_EQ(line.primary, to_string(d.verdict.primary));
  EXPECT_EQ(line.headline, d.verdict.headline);
  ASSERT_EQ(line.findings.size(), d.findings.size());
  EXPECT_EQ(line.findings[0].rule, d.findings[0].rule_id);
  EXPECT_EQ(line.findings[0].change, d.findings[0].change);
  ASSERT_EQ(line.actions.size(), d.verdict.actions.size());
  if (!line.actions.empty()) EXPECT_EQ(line.actions[0].change, d.verdict.actions[0].change);
}

TEST(DiagnosisFileTest, UnknownVersionsAndMalformedDocumentsAreInputErrors) {
  const Diagnosis d = diagnose_record(record_with(20, 40, 20, 30, 10));
  nlohmann::json doc = diagnosis_document({d}, "in", "t", {});
  doc["schema_version"] = 3;
  EXPECT_THROW(diagnosis_file_from_json(doc), InputError);
  doc["schema_version"] = 1;  // the previous version's files still read
  EXPECT_EQ(diagnosis_file_from_json(doc).schema_version, 1);
  doc["diagnoses"] = nlohmann::json::array();
  EXPECT_THROW(diagnosis_file_from_json(doc), InputError);
  EXPECT_THROW(diagnosis_file_from_json(nlohmann::json::array()), InputError);
  EXPECT_THROW(diagnosis_file_from_json({{"schema_version", 2}, {"diagnoses", {{{"label", "x"}}}}}), InputError);
  EXPECT_THROW(read_diagnosis_file("/nonexistent/diagnosis.json"), InputError);
}

// Every field the writer writes is read as required: a key renamed or gone (here each of a verdict's
// and a finding's) is an error that names it, never the default it used to read as.
TEST(DiagnosisFileTest, AFieldRenamedOrMissingIsAnErrorNamingIt) {
  const Diagnosis d = diagnose_record(record_with(20, 40, 20, 30, 10));
  ASSERT_FALSE(d.findings.empty());
  ASSERT_FALSE(d.verdict.actions.empty());
  const nlohmann::json doc = diagnosis_document({d}, "in", "t", {});
  const auto error_without = [](nlohmann::json changed, const std::vector<std::string>& where, const std::string& key) {
    nlohmann::json* object = &changed;
    for (const std::string& step : where) object = step == "0" ? &(*object)[0] : &(*object)[step];
    object->erase(key);
    try {
      diagnosis_file_from_json(changed);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  for (const std::string key : {"input", "created_utc", "gate_failed"}) {
    EXPECT_NE(error_without(doc, {}, key).find("\"" + key + "\""), std::string::npos) << key;
  }
  for (const std::string key : {"confidence", "headline", "actions", "primary"}) {
    EXPECT_NE(error_without(doc, {"diagnoses", "0", "verdict"}, key).find("\"" + key + "\""), std::string::npos) << key;
  }
  for (const std::string key : {"title", "severity", "change"}) {
    EXPECT_NE(error_without(doc, {"diagnoses", "0", "findings", "0"}, key).find("\"" + key + "\""), std::string::npos)
        << key;
  }
  EXPECT_NE(error_without(doc, {"diagnoses", "0", "verdict", "actions", "0"}, "saving_pct").find("\"saving_pct\""),
            std::string::npos);
  nlohmann::json wrong_type = doc;
  wrong_type["diagnoses"][0]["verdict"]["headline"] = 7;
  EXPECT_THROW(diagnosis_file_from_json(wrong_type), InputError);
}

}  // namespace
}  // namespace trainlab
