// The rules on hand-built Summaries: each on both sides of its thresholds (fires or not, severity,
// suspect, change, evidence equal to the inputs, saving), and silent when its inputs are absent.
#include "diagnostics/rules.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <set>

#include "diagnostics/verdict.h"

namespace trainlab {
namespace {

const Thresholds& defaults() { return Thresholds::defaults(); }

// 100 steps of 100 ms, numbered from 5 (after warm-up); a step where nothing is wrong: compute 55 %,
// framework 15 %, other 30 %, nothing else known.
Summary quiet(int n = 100, double ms = 100) {
  Summary s;
  for (int i = 0; i < n; ++i) {
    s.step_ms.push_back(ms);
    s.step_numbers.push_back(i + 5);
  }
  s.step.count = n;
  s.step.p50 = s.step.p95 = s.step.mean = ms;
  s.shares.compute_pct = 55;
  s.shares.framework_pct = 15;
  s.shares.other_pct = 30;
  s.logical_cores = 8;
  return s;
}

Summary no_steps() {
  Summary s = quiet();
  s.step_ms.clear();
  s.step_numbers.clear();
  s.step = {};
  return s;
}

std::optional<Finding> find(const Summary& s, const std::string& id) {
  for (const Finding& f : run_rules(s, defaults())) {
    if (f.rule_id == id) return f;
  }
  return std::nullopt;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const Evidence* evidence(const Finding& f, const std::string& metric) {
  for (const Evidence& e : f.evidence) {
    if (e.metric == metric) return &e;
  }
  return nullptr;
}

Distribution dist(int64_t count, double p50, double p95, double mean = 0, double stddev = 0) {
  Distribution d;
  d.count = count;
  d.p50 = p50;
  d.p95 = p95;
  d.mean = mean;
  d.stddev = stddev;
  return d;
}

TEST(RulesTest, QuietRunAndEmptySummaryFireNothing) {
  EXPECT_TRUE(run_rules(quiet(), defaults()).empty());
  EXPECT_TRUE(run_rules(Summary{}, defaults()).empty());
}

TEST(RulesTest, RuleIdsAreStableAndUnique) {
  const std::vector<std::string> expected = {
      "input_bound",  "low_device_utilisation", "cpu_bottleneck",      "io_bottleneck",       "loader_settings",
      "batch_too_small", "memory_growth",       "step_outliers",       "periodic_slow_steps", "exposed_communication",
      "rank_imbalance", "dispatch_overhead",    "host_syncs",          "oversubscription",    "precision",
      "gemm_alignment",
      "initialisation_time", "non_finite_loss", "gradient_norm",       "model_compute"};
  EXPECT_EQ(rule_ids(), expected);
}

TEST(RulesTest, FindingsComeBackInRuleOrder) {
  Summary s = quiet();
  s.shares.data_wait_pct = 30;   // input_bound
  s.shares.compute_pct = 25;
  s.host_syncs_per_step = 4;     // host_syncs
  s.loader_workers = 0;          // loader_settings
  const std::vector<Finding> findings = run_rules(s, defaults());
  ASSERT_EQ(findings.size(), 3u);
  EXPECT_EQ(findings[0].rule_id, "input_bound");
  EXPECT_EQ(findings[1].rule_id, "loader_settings");
  EXPECT_EQ(findings[2].rule_id, "host_syncs");
}

TEST(RulesTest, ToJsonCarriesEveryField) {
  Finding f;
  f.rule_id = "input_bound";
  f.title = "t";
  f.severity = Severity::kHigh;
  f.suspect = Suspect::kDataPipeline;
  f.evidence.push_back({"data_wait_pct", 38.5, 20, "pct"});
  f.recommendation = "r";
  f.change = "more_workers";
  f.times_fired = 7;
  f.data_points = 9;
  f.saving_pct = 38.5;
  const nlohmann::json j = to_json(f);
  EXPECT_EQ(j["rule"], "input_bound");
  EXPECT_EQ(j["title"], "t");
  EXPECT_EQ(j["severity"], "high");
  EXPECT_EQ(j["suspect"], "data_pipeline");
  ASSERT_EQ(j["evidence"].size(), 1u);
  EXPECT_EQ(j["evidence"][0]["metric"], "data_wait_pct");
  EXPECT_EQ(j["evidence"][0]["value"], 38.5);
  EXPECT_EQ(j["evidence"][0]["threshold"], 20);
  EXPECT_EQ(j["evidence"][0]["unit"], "pct");
  EXPECT_EQ(j["recommendation"], "r");
  EXPECT_EQ(j["change"], "more_workers");
  EXPECT_EQ(j["times_fired"], 7);
  EXPECT_EQ(j["data_points"], 9);
  EXPECT_EQ(j["saving_pct"], 38.5);
  EXPECT_STREQ(to_string(Suspect::kFrameworkOverhead), "framework_overhead");
  EXPECT_STREQ(to_string(Suspect::kNone), "none");
  EXPECT_STREQ(to_string(Severity::kModerate), "moderate");
}

// --- 1. input_bound

TEST(RulesTest, InputBoundLevels) {
  Summary s = quiet();
  s.shares.data_wait_pct = 4.9;
  EXPECT_FALSE(find(s, "input_bound"));

  s.shares.data_wait_pct = 5;
  auto f = find(s, "input_bound");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kModerate);
  EXPECT_EQ(f->evidence[0].metric, "data_wait_pct");
  EXPECT_EQ(f->evidence[0].threshold, 5);

  s.shares.data_wait_pct = 38;
  s.loader_workers = 2;
  f = find(s, "input_bound");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kHigh);
  EXPECT_EQ(f->suspect, Suspect::kDataPipeline);
  EXPECT_EQ(f->evidence[0].value, 38);
  EXPECT_EQ(f->evidence[0].threshold, 20);
  EXPECT_EQ(evidence(*f, "loader_workers")->value, 2);
  EXPECT_EQ(evidence(*f, "loader_workers")->threshold, 8);
  EXPECT_TRUE(contains(f->title, "38.0 %")) << f->title;
  EXPECT_TRUE(contains(f->title, "1.6x")) << f->title;  // 100 / 62
  EXPECT_EQ(f->change, "more_workers");
  EXPECT_EQ(f->saving_pct, 38);
  EXPECT_EQ(f->times_fired, 100);
  EXPECT_EQ(f->data_points, 100);
}

TEST(RulesTest, InputBoundChangeDependsOnWorkersAndPinning) {
  Summary s = quiet();
  s.shares.data_wait_pct = 25;
  s.loader_workers = 8;  // one per logical core already
  EXPECT_EQ(find(s, "input_bound")->change, "more_prefetch");

  s.on_gpu = true;
  s.pin_memory = false;
  s.shares.host_to_device_pct = 6;
  auto f = find(s, "input_bound");
  EXPECT_EQ(f->change, "pin_memory");
  EXPECT_EQ(evidence(*f, "host_to_device_pct")->value, 6);

  s.shares.host_to_device_pct = 4;  // copies too small to matter
  EXPECT_EQ(find(s, "input_bound")->change, "more_prefetch");
}

TEST(RulesTest, InputBoundNeedsSteps) {
  Summary s = no_steps();
  s.shares.data_wait_pct = 50;
  EXPECT_FALSE(find(s, "input_bound"));
}

// --- 2. low_device_utilisation

TEST(RulesTest, LowGpuUtilisationNamesTheLargestShare) {
  Summary s = quiet();
  s.on_gpu = true;
  s.shares = {30, 0, 50, 5, 10, 5};
  s.system["gpu0.util_pct"] = dist(200, 40, 69.9, 40, 20);
  auto f = find(s, "low_device_utilisation");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kModerate);
  EXPECT_EQ(f->suspect, Suspect::kDataPipeline);
  EXPECT_EQ(f->change, "");  // a symptom: input_bound carries the change and the saving
  EXPECT_EQ(evidence(*f, "gpu0.util_pct.p95")->value, 69.9);
  EXPECT_EQ(evidence(*f, "gpu0.util_pct.p95")->threshold, 70);
  EXPECT_DOUBLE_EQ(evidence(*f, "gpu0.util_pct.cv")->value, 50);  // stddev 20 / mean 40
  EXPECT_EQ(evidence(*f, "data_wait_pct")->value, 30);
  EXPECT_TRUE(contains(f->title, "fluctuating")) << f->title;
  EXPECT_EQ(f->saving_pct, 0);
  EXPECT_EQ(f->data_points, 200);
  EXPECT_EQ(f->times_fired, 190);

  s.system["gpu0.util_pct"] = dist(200, 40, 69.9, 40, 10);  // cv 25 %: steady, no fluctuation evidence
  f = find(s, "low_device_utilisation");
  EXPECT_FALSE(evidence(*f, "gpu0.util_pct.cv"));

  s.system["gpu0.util_pct"] = dist(200, 60, 70);
  EXPECT_FALSE(find(s, "low_device_utilisation"));
}

TEST(RulesTest, LowGpuUtilisationFromTraceBusyShare) {
  Summary s = quiet();
  s.on_gpu = true;
  s.shares.framework_pct = 35;
  s.device_busy_pct = 50;  // no sampled utilisation: the trace's kernel busy share
  auto f = find(s, "low_device_utilisation");
  ASSERT_TRUE(f);
  EXPECT_EQ(evidence(*f, "device_busy_pct")->value, 50);
  EXPECT_EQ(f->suspect, Suspect::kFrameworkOverhead);
  EXPECT_EQ(f->change, "");
  s.device_busy_pct.reset();
  EXPECT_FALSE(find(s, "low_device_utilisation"));
}

TEST(RulesTest, LowCpuUtilisationWithoutACulpritIsInfo) {
  Summary s = quiet();
  s.shares = {2, 0, 60, 3, 4, 31};
  s.device_busy_pct = 60;
  auto f = find(s, "low_device_utilisation");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_EQ(f->suspect, Suspect::kNone);
  EXPECT_EQ(f->change, "");
  EXPECT_EQ(f->saving_pct, 0);
  EXPECT_EQ(evidence(*f, "device_busy_pct")->threshold, 70);

  s.shares.communication_pct = 12;  // now communication explains the idle share
  f = find(s, "low_device_utilisation");
  EXPECT_EQ(f->suspect, Suspect::kCommunication);
  EXPECT_EQ(f->saving_pct, 0);

  s.device_busy_pct = 75;
  EXPECT_FALSE(find(s, "low_device_utilisation"));
  s.device_busy_pct.reset();
  EXPECT_FALSE(find(s, "low_device_utilisation"));
}

// --- 3. cpu_bottleneck

TEST(RulesTest, CpuBottleneckOnGpuRunsOnly) {
  Summary s = quiet();
  s.on_gpu = true;
  s.shares.data_wait_pct = 30;
  s.system["cpu.total_pct"] = dist(100, 95, 99);
  s.system["gpu0.util_pct"] = dist(100, 5, 9);
  auto f = find(s, "cpu_bottleneck");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kHigh);
  EXPECT_EQ(f->suspect, Suspect::kDataPipeline);
  EXPECT_EQ(evidence(*f, "cpu.total_pct.p50")->value, 95);
  EXPECT_EQ(evidence(*f, "cpu.total_pct.p50")->threshold, 90);
  EXPECT_EQ(evidence(*f, "gpu0.util_pct.p50")->value, 5);
  EXPECT_EQ(evidence(*f, "gpu0.util_pct.p50")->threshold, 10);
  EXPECT_EQ(f->saving_pct, 30);

  s.shares.data_wait_pct = 2;
  s.shares.framework_pct = 40;
  EXPECT_EQ(find(s, "cpu_bottleneck")->suspect, Suspect::kFrameworkOverhead);
  EXPECT_EQ(find(s, "cpu_bottleneck")->change, "compiled");

  s.system["cpu.total_pct"] = dist(100, 90, 99);
  EXPECT_FALSE(find(s, "cpu_bottleneck"));
  s.system["cpu.total_pct"] = dist(100, 95, 99);
  s.system["gpu0.util_pct"] = dist(100, 10, 20);
  EXPECT_FALSE(find(s, "cpu_bottleneck"));
  s.system["gpu0.util_pct"] = dist(100, 5, 9);
  s.on_gpu = false;  // the CPU is the device
  EXPECT_FALSE(find(s, "cpu_bottleneck"));
  s.on_gpu = true;
  s.system.erase("cpu.total_pct");
  EXPECT_FALSE(find(s, "cpu_bottleneck"));
}

// --- 4. io_bottleneck

TEST(RulesTest, IoBottleneckNeedsIoWaitAndDataWait) {
  Summary s = quiet();
  s.shares.data_wait_pct = 10;
  s.system["cpu.iowait_pct"] = dist(200, 4, 15);
  auto f = find(s, "io_bottleneck");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kModerate);
  EXPECT_EQ(f->suspect, Suspect::kDataPipeline);
  EXPECT_EQ(evidence(*f, "cpu.iowait_pct.p95")->value, 15);
  EXPECT_EQ(evidence(*f, "cpu.iowait_pct.p95")->threshold, 10);
  EXPECT_EQ(evidence(*f, "data_wait_pct")->value, 10);
  EXPECT_EQ(f->saving_pct, 10);
  EXPECT_EQ(f->data_points, 200);
  EXPECT_EQ(f->times_fired, 10);

  s.shares.data_wait_pct = 25;
  EXPECT_EQ(find(s, "io_bottleneck")->severity, Severity::kHigh);
  s.shares.data_wait_pct = 4;
  EXPECT_FALSE(find(s, "io_bottleneck"));
  s.shares.data_wait_pct = 25;
  s.system["cpu.iowait_pct"] = dist(200, 4, 10);
  EXPECT_FALSE(find(s, "io_bottleneck"));
  s.system.clear();
  EXPECT_FALSE(find(s, "io_bottleneck"));
}

// --- 5. loader_settings

TEST(RulesTest, LoaderWithoutWorkers) {
  Summary s = quiet();
  s.loader_workers = 0;
  s.shares.data_wait_pct = 12;
  auto f = find(s, "loader_settings");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kModerate);
  EXPECT_EQ(f->change, "more_workers");
  EXPECT_EQ(evidence(*f, "loader_workers")->value, 0);
  EXPECT_EQ(evidence(*f, "data_wait_pct")->value, 12);
  EXPECT_TRUE(contains(f->title, "training thread")) << f->title;
  EXPECT_EQ(f->saving_pct, 12);

  s.shares.data_wait_pct = 4;  // no workers, but the loop does not wait
  EXPECT_FALSE(find(s, "loader_settings"));
  s.loader_workers.reset();
  s.shares.data_wait_pct = 50;
  EXPECT_FALSE(find(s, "loader_settings"));
}

TEST(RulesTest, LoaderOversubscribed) {
  Summary s = quiet();
  s.loader_workers = 16;
  auto f = find(s, "loader_settings");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_EQ(f->change, "");
  EXPECT_EQ(evidence(*f, "loader_workers")->value, 16);
  EXPECT_EQ(evidence(*f, "loader_workers")->threshold, 8);
  EXPECT_TRUE(contains(f->title, "16 loader workers oversubscribe 8 logical cores")) << f->title;
  s.shares.data_wait_pct = 6;
  EXPECT_EQ(find(s, "loader_settings")->severity, Severity::kModerate);
  s.loader_workers = 8;
  EXPECT_FALSE(find(s, "loader_settings"));
  s.loader_workers = 16;
  s.logical_cores = 0;  // unknown
  EXPECT_FALSE(find(s, "loader_settings"));
}

TEST(RulesTest, LoaderUnpinnedCopiesOnGpu) {
  Summary s = quiet();
  s.on_gpu = true;
  s.pin_memory = false;
  s.shares.host_to_device_pct = 6;
  auto f = find(s, "loader_settings");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->change, "pin_memory");
  EXPECT_EQ(evidence(*f, "host_to_device_pct")->value, 6);
  EXPECT_EQ(evidence(*f, "host_to_device_pct")->threshold, 5);
  EXPECT_EQ(f->saving_pct, 6);
  s.shares.host_to_device_pct = 4;
  EXPECT_FALSE(find(s, "loader_settings"));
  s.shares.host_to_device_pct = 6;
  s.pin_memory = true;
  EXPECT_FALSE(find(s, "loader_settings"));
  s.pin_memory = false;
  s.on_gpu = false;
  EXPECT_FALSE(find(s, "loader_settings"));
}

// --- 6. batch_too_small

TEST(RulesTest, SmallBatchWithPerStepOverhead) {
  Summary s = quiet();
  s.batch_size = 16;
  s.shares = {0, 0, 70, 0, 20, 10};
  auto f = find(s, "batch_too_small");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kModerate);
  EXPECT_EQ(f->suspect, Suspect::kFrameworkOverhead);
  EXPECT_EQ(f->change, "larger_batch");
  EXPECT_EQ(evidence(*f, "batch_size")->value, 16);
  EXPECT_EQ(evidence(*f, "batch_size")->threshold, 32);
  EXPECT_EQ(evidence(*f, "fixed_overhead_pct")->value, 30);
  EXPECT_EQ(f->saving_pct, 15);

  s.batch_size = 32;
  EXPECT_FALSE(find(s, "batch_too_small"));
  s.batch_size = 16;
  s.shares.other_pct = 4;  // 24 % fixed overhead
  EXPECT_FALSE(find(s, "batch_too_small"));
  s.shares.other_pct = 10;
  s.batch_size = 0;  // unknown (traces)
  EXPECT_FALSE(find(s, "batch_too_small"));
}

TEST(RulesTest, SmallBatchLeavingTheGpuIdle) {
  Summary s = quiet();
  s.on_gpu = true;
  s.batch_size = 8;
  s.shares = {0, 0, 40, 0, 5, 5};
  s.device_busy_pct = 40;
  auto f = find(s, "batch_too_small");
  ASSERT_TRUE(f);
  EXPECT_EQ(evidence(*f, "device_busy_pct")->value, 40);
  EXPECT_EQ(f->saving_pct, 30);
  s.shares.data_wait_pct = 20;  // the idle time is data wait's: not the batch
  EXPECT_FALSE(find(s, "batch_too_small"));
}

// --- 7. memory_growth

TEST(RulesTest, MemoryGrowthFromSeries) {
  Summary s = quiet();
  for (int i = 0; i < 30; ++i) s.memory_mib.push_back(100 + i);
  auto f = find(s, "memory_growth");  // second half: 115..129, window 3
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kModerate);
  EXPECT_NEAR(f->evidence[0].value, (128.0 - 116.0) / 116.0 * 100.0, 1e-9);
  EXPECT_EQ(f->evidence[0].threshold, 5);
  EXPECT_EQ(f->times_fired, 8);  // 122..129 MB are above 116 MB x 1.05
  EXPECT_EQ(f->data_points, 15);
  EXPECT_TRUE(contains(f->title, "116 MB -> 128 MB")) << f->title;

  // Growth that stopped half-way (warm-up, caches, the profiler's window) is not a leak.
  s.memory_mib.clear();
  for (int i = 0; i < 30; ++i) s.memory_mib.push_back(i < 15 ? 100 + 10 * i : 240);
  EXPECT_FALSE(find(s, "memory_growth"));

  s.memory_mib.assign(30, 100);
  s.memory_mib.back() = 200;  // one late spike: the last window's mean rises 33 %
  EXPECT_TRUE(find(s, "memory_growth"));
  s.memory_mib.assign(30, 100);
  s.memory_mib[28] = 104;
  s.memory_mib[29] = 110;  // last window 104.67: +4.67 %
  EXPECT_FALSE(find(s, "memory_growth"));
}

TEST(RulesTest, MemoryGrowthGivenByTheSource) {
  Summary s = quiet();
  s.memory_growth_pct = 6;
  auto f = find(s, "memory_growth");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->evidence[0].value, 6);
  EXPECT_EQ(f->data_points, 0);
  s.memory_growth_pct = 5;
  EXPECT_FALSE(find(s, "memory_growth"));
  s.memory_growth_pct.reset();
  EXPECT_FALSE(find(s, "memory_growth"));
}

// --- 8. step_outliers

TEST(RulesTest, StepOutliersNameTheirSteps) {
  Summary s = quiet(50);
  s.step_ms[10] = 300;
  s.step_ms[30] = 300;
  auto f = find(s, "step_outliers");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->times_fired, 2);
  EXPECT_EQ(f->data_points, 50);
  EXPECT_TRUE(contains(f->title, "steps 15, 35")) << f->title;  // step numbers start at 5
  EXPECT_EQ(evidence(*f, "outlier_steps")->value, 2);
  EXPECT_EQ(evidence(*f, "max_step_ms")->value, 300);
  EXPECT_NEAR(evidence(*f, "max_step_ms")->threshold, 108 + 3 * std::sqrt(1536.0), 1e-9);
  EXPECT_NEAR(f->saving_pct, 400.0 / 5400.0 * 100.0, 1e-9);
  EXPECT_EQ(f->severity, Severity::kModerate);  // 7.4 % of the time >= 5 %
  EXPECT_EQ(f->suspect, Suspect::kNone);
}

TEST(RulesTest, SingleSmallOutlierIsInfoAndFlatStepsFireNothing) {
  Summary s = quiet(50);
  s.step_ms[20] = 150;  // mean 101, stddev 7: limit 122
  auto f = find(s, "step_outliers");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_NEAR(f->saving_pct, 50.0 / 5050.0 * 100.0, 1e-9);
  s.step_ms[20] = 120;  // mean 100.4, stddev 2.8: limit 108.8, z = 7 -> still an outlier
  EXPECT_TRUE(find(s, "step_outliers"));
  s.step_ms[20] = 100;
  EXPECT_FALSE(find(s, "step_outliers"));
  EXPECT_FALSE(find(no_steps(), "step_outliers"));
}

// --- 9. periodic_slow_steps

TEST(RulesTest, PeriodicSlowStepsWithJitter) {
  Summary s = quiet(100);
  for (int i : {9, 19, 30, 39, 49, 58, 69, 79, 89, 99}) s.step_ms[i] = 150;
  auto f = find(s, "periodic_slow_steps");
  ASSERT_TRUE(f);
  EXPECT_EQ(evidence(*f, "period_steps")->value, 10);
  EXPECT_EQ(evidence(*f, "period_share_pct")->value, 100);
  EXPECT_EQ(evidence(*f, "extra_ms_per_period")->value, 50);
  EXPECT_EQ(evidence(*f, "extra_ms_per_period")->threshold, 30);
  EXPECT_EQ(evidence(*f, "slow_steps")->value, 10);
  EXPECT_EQ(f->times_fired, 10);
  EXPECT_EQ(f->data_points, 100);
  EXPECT_NEAR(f->saving_pct, 500.0 / 10500.0 * 100.0, 1e-9);
  EXPECT_EQ(f->severity, Severity::kInfo);  // 4.8 % < 5 %
  EXPECT_EQ(f->suspect, Suspect::kNone);
  EXPECT_TRUE(contains(f->title, "every 10 steps")) << f->title;
  EXPECT_TRUE(contains(f->title, "steps 14, 24, 35")) << f->title;

  for (int i : {9, 19, 30, 39, 49, 58, 69, 79, 89, 99}) s.step_ms[i] = 200;
  EXPECT_EQ(find(s, "periodic_slow_steps")->severity, Severity::kModerate);  // 1000 / 11000
  for (int i : {9, 19, 30, 39, 49, 58, 69, 79, 89, 99}) s.step_ms[i] = 129;  // under median + 30 %
  EXPECT_FALSE(find(s, "periodic_slow_steps"));
}

TEST(RulesTest, PeriodicSlowStepsSpillingIntoTheNextStepCountOnce) {
  Summary s = quiet(100);
  for (int i = 9; i < 100; i += 10) {
    s.step_ms[i] = 180;
    s.step_ms[i + 1 < 100 ? i + 1 : i] = 180;
  }
  auto f = find(s, "periodic_slow_steps");
  ASSERT_TRUE(f);
  EXPECT_EQ(evidence(*f, "period_steps")->value, 10);
  EXPECT_EQ(f->times_fired, 19);
}

TEST(RulesTest, PeriodicSlowStepsHiddenByNoiseAreFoundByFolding) {
  // The seeded callback case on a loaded machine (steps in ms): only 4 steps pass median + 30 %, at
  // 6, 9, 16, 26, with no period among them; folding finds every 10th step from 6 slow.
  Summary s = quiet(50);
  s.step_ms = {451, 361, 369, 517, 348, 399, 609, 370, 386, 551, 351, 409, 410, 357, 456, 497, 648,
               505, 334, 384, 437, 326, 361, 372, 395, 409, 525, 422, 323, 329, 445, 340, 416, 344,
               435, 392, 479, 330, 394, 406, 458, 418, 362, 418, 337, 345, 485, 344, 238, 434};
  auto f = find(s, "periodic_slow_steps");
  ASSERT_TRUE(f);
  EXPECT_EQ(evidence(*f, "period_steps")->value, 10);
  EXPECT_EQ(f->times_fired, 5);
  EXPECT_TRUE(contains(f->title, "every 10 steps")) << f->title;
}

TEST(RulesTest, PeriodicSlowStepsNotInNoiseOrTooFew) {
  Summary s = quiet(200);
  std::mt19937 gen(7);  // fixed by the standard
  for (double& ms : s.step_ms) ms = 100 + static_cast<double>(gen() % 1000) / 10.0;  // 100..200 ms
  EXPECT_FALSE(find(s, "periodic_slow_steps"));

  Summary two = quiet(100);
  two.step_ms[10] = two.step_ms[20] = 200;
  EXPECT_FALSE(find(two, "periodic_slow_steps"));
  EXPECT_FALSE(find(no_steps(), "periodic_slow_steps"));
}

// --- 10. exposed_communication

TEST(RulesTest, ExposedCommunication) {
  Summary s = quiet();
  s.world_size = 2;
  s.shares.communication_pct = 10;
  EXPECT_FALSE(find(s, "exposed_communication"));
  s.shares.communication_pct = 12;
  auto f = find(s, "exposed_communication");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kModerate);
  EXPECT_EQ(f->suspect, Suspect::kCommunication);
  EXPECT_EQ(f->change, "overlap_comm");
  EXPECT_EQ(f->evidence[0].value, 12);
  EXPECT_EQ(f->evidence[0].threshold, 10);
  EXPECT_EQ(f->saving_pct, 12);

  s.comm_total_pct = 40;  // 30 % of the collective time is exposed: overlapped already
  f = find(s, "exposed_communication");
  EXPECT_EQ(f->change, "bucket_size");
  EXPECT_DOUBLE_EQ(evidence(*f, "exposed_share_of_comm_pct")->value, 30);
  s.comm_total_pct = 12.5;  // 96 % exposed: nothing overlaps
  EXPECT_EQ(find(s, "exposed_communication")->change, "overlap_comm");

  s.shares.communication_pct = 35;
  EXPECT_EQ(find(s, "exposed_communication")->severity, Severity::kHigh);
  Summary none = no_steps();
  none.shares.communication_pct = 35;
  EXPECT_FALSE(find(none, "exposed_communication"));
}

// --- 11. rank_imbalance

TEST(RulesTest, RankImbalanceFromPerRankMedians) {
  Summary s = quiet();
  s.world_size = 4;
  s.rank_step_p50_ms = {100, 101, 102, 120};
  auto f = find(s, "rank_imbalance");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kModerate);
  EXPECT_DOUBLE_EQ(f->evidence[0].value, 20);
  EXPECT_EQ(f->evidence[0].threshold, 10);
  EXPECT_EQ(f->times_fired, 1);
  EXPECT_EQ(f->data_points, 4);
  EXPECT_NEAR(f->saving_pct, 20.0 / 120.0 * 100.0, 1e-9);

  s.rank_step_p50_ms = {100, 105, 110};
  EXPECT_FALSE(find(s, "rank_imbalance"));  // exactly 10 %
  s.world_size = 1;
  s.rank_step_p50_ms = {100, 150};
  EXPECT_FALSE(find(s, "rank_imbalance"));
}

TEST(RulesTest, RankImbalanceFromSpreadOnly) {
  Summary s = quiet();
  s.world_size = 2;
  s.rank_spread_pct = 15;
  auto f = find(s, "rank_imbalance");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->evidence[0].value, 15);
  EXPECT_EQ(f->data_points, 2);
  s.rank_spread_pct.reset();
  EXPECT_FALSE(find(s, "rank_imbalance"));
}

// A job's paired spread: its interval's low end decides, so a noisy 15 % that reaches under the
// line does not fire, and one whose low end clears it does, with the interval in the title.
TEST(RulesTest, RankImbalanceFromAPairedSpreadNeedsItsLowEndPastTheLine) {
  Summary s = quiet();
  s.world_size = 2;
  s.rank_spread_pct = 15;
  s.rank_spread_low_pct = -2;
  s.rank_spread_high_pct = 31;
  EXPECT_FALSE(find(s, "rank_imbalance"));
  s.rank_spread_low_pct = 11;
  s.rank_spread_high_pct = 19;
  auto f = find(s, "rank_imbalance");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->evidence[0].value, 15);
  EXPECT_NE(f->title.find("15.0 % [11.0, 19.0] above the other ranks' median"), std::string::npos) << f->title;
}

// --- 12. dispatch_overhead

TEST(RulesTest, DispatchOverheadOnGpu) {
  Summary s = quiet();
  s.on_gpu = true;
  s.shares.framework_pct = 25;
  auto f = find(s, "dispatch_overhead");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kModerate);
  EXPECT_EQ(f->suspect, Suspect::kFrameworkOverhead);
  EXPECT_EQ(f->change, "compiled");
  EXPECT_EQ(evidence(*f, "framework_pct")->value, 25);
  EXPECT_EQ(evidence(*f, "framework_pct")->threshold, 20);
  EXPECT_EQ(f->saving_pct, 25);

  s.shares.framework_pct = 5;
  s.short_kernel_pct = 60;
  f = find(s, "dispatch_overhead");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_EQ(evidence(*f, "short_kernel_pct")->value, 60);
  s.short_kernel_pct = 40;
  EXPECT_FALSE(find(s, "dispatch_overhead"));
}

TEST(RulesTest, DispatchOverheadOnCpu) {
  Summary s = quiet();
  s.shares.framework_pct = 5;
  s.ops_per_step = 500;
  Distribution op_us;
  op_us.count = 5000;
  op_us.p50 = 8;
  s.op_us = op_us;
  auto f = find(s, "dispatch_overhead");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kInfo);  // many small ops, but only 5 % of the step is their dispatch
  EXPECT_EQ(evidence(*f, "ops_per_step")->value, 500);
  EXPECT_EQ(evidence(*f, "ops_per_step")->threshold, 200);
  EXPECT_EQ(evidence(*f, "op_us.p50")->value, 8);
  EXPECT_EQ(evidence(*f, "op_us.p50")->threshold, 20);

  s.op_us->p50 = 25;  // ops do real work
  EXPECT_FALSE(find(s, "dispatch_overhead"));
  s.op_us->p50 = 8;
  s.ops_per_step = 100;
  EXPECT_FALSE(find(s, "dispatch_overhead"));
  s.ops_per_step.reset();
  EXPECT_FALSE(find(s, "dispatch_overhead"));
  s.shares.framework_pct = 20;
  EXPECT_TRUE(find(s, "dispatch_overhead"));
  s.ops_per_step = 500;
  EXPECT_EQ(find(s, "dispatch_overhead")->severity, Severity::kModerate);
}

// --- 13. host_syncs

TEST(RulesTest, HostSyncs) {
  Summary s = quiet();
  s.on_gpu = true;
  s.host_syncs_per_step = 3;
  auto f = find(s, "host_syncs");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kModerate);
  EXPECT_EQ(f->suspect, Suspect::kFrameworkOverhead);
  EXPECT_EQ(f->evidence[0].value, 3);
  EXPECT_EQ(f->evidence[0].threshold, 1);
  EXPECT_TRUE(contains(f->title, ".item()")) << f->title;
  s.on_gpu = false;
  EXPECT_EQ(find(s, "host_syncs")->severity, Severity::kInfo);
  s.host_syncs_per_step = 1;
  EXPECT_FALSE(find(s, "host_syncs"));
  s.host_syncs_per_step.reset();
  EXPECT_FALSE(find(s, "host_syncs"));
}

// --- 13b. oversubscription

TEST(RulesTest, OversubscribedRanksAreNamedAndTakePrecisionsPlace) {
  Summary s = quiet();
  s.compute_dtype = "fp32";
  s.shares = {0, 0, 90, 0, 5, 5};
  s.fp32_op_share_pct = 95;
  s.logical_cores = 2;
  s.world_size = 2;
  s.intra_op_threads = 2;  // 2 ranks x 2 threads on 2 cores
  auto f = find(s, "oversubscription");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kHigh);
  EXPECT_EQ(f->suspect, Suspect::kFrameworkOverhead);
  EXPECT_EQ(f->change, "fewer_threads");
  EXPECT_EQ(evidence(*f, "rank_threads")->value, 4);
  EXPECT_EQ(evidence(*f, "rank_threads")->threshold, 2);
  EXPECT_NE(f->title.find("2 ranks x 2 threads = 4 threads on 2 cores"), std::string::npos) << f->title;
  EXPECT_FALSE(find(s, "precision"));  // the compute share is threads waiting, not GEMMs bf16 would speed up
  EXPECT_NEAR(f->saving_pct, 45.0, 1e-9);  // 90 % compute, half of it waiting: 1 - 2 cores / 4 threads
  // The verdict names it: framework overhead, not model compute, with the fix as the first action.
  const Verdict v = decide(s, run_rules(s, Thresholds::defaults()), Thresholds::defaults());
  EXPECT_EQ(v.primary, Suspect::kFrameworkOverhead);
  EXPECT_NE(v.headline.find("oversubscribed"), std::string::npos) << v.headline;
  ASSERT_FALSE(v.actions.empty());
  EXPECT_EQ(v.actions.front().rule_id, "oversubscription");

  s.intra_op_threads = 1;  // 2 x 1 on 2 cores: fits
  EXPECT_FALSE(find(s, "oversubscription"));
  EXPECT_TRUE(find(s, "precision"));
  s.intra_op_threads = 2;
  s.world_size = 1;  // one process with all the cores: LibTorch's default
  EXPECT_FALSE(find(s, "oversubscription"));
  s.world_size = 2;
  s.on_gpu = true;  // GPU ranks: the host threads feed kernels
  EXPECT_FALSE(find(s, "oversubscription"));
}

// A job across machines: only the ranks that share this machine share its cores.
TEST(RulesTest, OversubscriptionCountsTheRanksOnThisMachineNotTheJobs) {
  Summary s = quiet();
  s.shares = {0, 0, 90, 0, 5, 5};
  s.logical_cores = 2;
  s.world_size = 4;
  s.intra_op_threads = 1;
  EXPECT_TRUE(find(s, "oversubscription"));  // 4 ranks on one machine of 2 cores
  s.ranks_on_machine = 2;                     // 2 machines x 2 ranks, 1 thread each: fits
  EXPECT_FALSE(find(s, "oversubscription"));
  s.intra_op_threads = 2;
  auto f = find(s, "oversubscription");
  ASSERT_TRUE(f);
  EXPECT_NE(f->title.find("2 ranks on this machine x 2 threads = 4 threads on 2 cores"), std::string::npos) << f->title;
  EXPECT_NE(f->recommendation.find("Give each rank 1 intra-op thread"), std::string::npos) << f->recommendation;
}

// --- 14. precision

TEST(RulesTest, PrecisionOnCpu) {
  Summary s = quiet();
  s.compute_dtype = "fp32";
  s.shares = {0, 0, 70, 0, 10, 20};
  s.fp32_op_share_pct = 95;
  auto f = find(s, "precision");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kModerate);
  EXPECT_EQ(f->suspect, Suspect::kModelCompute);
  EXPECT_EQ(f->change, "bf16");
  EXPECT_EQ(evidence(*f, "compute_pct")->value, 70);
  EXPECT_EQ(evidence(*f, "fp32_op_share_pct")->value, 95);
  EXPECT_NEAR(f->saving_pct, 70.0 / 3.0, 1e-9);  // 1.5x on the compute share

  s.fp32_op_share_pct = 40;
  EXPECT_FALSE(find(s, "precision"));
  s.fp32_op_share_pct = 95;
  s.shares.compute_pct = 45;
  EXPECT_FALSE(find(s, "precision"));
  s.shares.compute_pct = 70;
  s.compute_dtype = "bf16";
  EXPECT_FALSE(find(s, "precision"));
  s.compute_dtype = "fp32";
  s.fp32_op_share_pct.reset();
  EXPECT_FALSE(find(s, "precision"));
}

TEST(RulesTest, PrecisionUsesTheMeasuredBf16GemmGain) {
  Summary s = quiet();
  s.compute_dtype = "fp32";
  s.shares = {0, 0, 80, 0, 10, 10};
  s.fp32_op_share_pct = 95;
  s.bf16_gemm_speedup = 2.0;  // e.g. AMX
  auto f = find(s, "precision");
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->saving_pct, 40.0, 1e-9);  // half of the 80 % compute share
  EXPECT_EQ(evidence(*f, "bf16_gemm_speedup")->value, 2.0);
  EXPECT_EQ(evidence(*f, "bf16_gemm_speedup")->threshold, 1.2);
  s.bf16_gemm_speedup = 0.01;  // emulated bf16 (AVX2 only): nothing left on the table
  EXPECT_FALSE(find(s, "precision"));
  s.bf16_gemm_speedup = 1.19;
  EXPECT_FALSE(find(s, "precision"));
}

TEST(RulesTest, PrecisionWeighsTheGemmSpeedupByTheGemmsShareOfOpTime) {
  // tinyops-like: compute-heavy and fp32, but GEMMs are a fifth of the op time; bf16 GEMMs 3x faster
  // speed up only that fifth, so the prediction is 80 % x 20 % x (1 - 1/3), not 3x on the whole step.
  Summary s = quiet();
  s.compute_dtype = "fp32";
  s.shares = {0, 0, 80, 0, 10, 10};
  s.fp32_op_share_pct = 95;
  s.bf16_gemm_speedup = 3.0;
  s.gemm_time_pct = 20;
  auto f = find(s, "precision");
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->saving_pct, 80.0 * 0.2 * (1.0 - 1.0 / 3.0), 1e-9);
  EXPECT_EQ(evidence(*f, "gemm_time_pct")->value, 20);
}

TEST(RulesTest, RecommendationsSpeakTheUsersLanguage) {
  // A trainlab run is told trainlab's flags; a PyTorch trace is told PyTorch's knobs.
  Summary run = quiet();
  run.shares.data_wait_pct = 40;
  run.loader_workers = 0;
  Summary trace = run;
  trace.source = "kineto";
  trace.loader_workers.reset();
  EXPECT_TRUE(contains(find(run, "input_bound")->recommendation, "--workers")) << find(run, "input_bound")->recommendation;
  const std::string pytorch = find(trace, "input_bound")->recommendation;
  EXPECT_TRUE(contains(pytorch, "DataLoader(num_workers=")) << pytorch;
  EXPECT_FALSE(contains(pytorch, "--workers")) << pytorch;

  Summary busy = quiet();
  busy.shares.framework_pct = 30;
  EXPECT_TRUE(contains(find(busy, "dispatch_overhead")->recommendation, "--compiled on"));
  busy.source = "kineto";
  EXPECT_TRUE(contains(find(busy, "dispatch_overhead")->recommendation, "torch.compile"));

  Summary comm = quiet();
  comm.shares.communication_pct = 25;
  comm.source = "kineto";
  EXPECT_TRUE(contains(find(comm, "exposed_communication")->recommendation, "bucket_cap_mb"));
  comm.source = "trainlab";
  EXPECT_TRUE(contains(find(comm, "exposed_communication")->recommendation, "--comm-mode overlap"));
}

TEST(RulesTest, DispatchOverheadNamesAllocatorChurnAndSyncsFromTheIdleCauses) {
  Summary s = quiet();
  s.on_gpu = true;
  s.source = "kineto";
  s.shares.framework_pct = 40;
  s.idle_cause_pct = {{"allocator", 25}, {"launch", 10}, {"sync", 5}};
  auto f = find(s, "dispatch_overhead");
  ASSERT_TRUE(f);
  EXPECT_TRUE(contains(f->title, "allocator churn")) << f->title;
  EXPECT_TRUE(contains(f->recommendation, "expandable_segments")) << f->recommendation;
  s.idle_cause_pct = {{"allocator", 2}, {"launch", 10}, {"sync", 28}};
  f = find(s, "dispatch_overhead");
  EXPECT_TRUE(contains(f->title, "synchronises")) << f->title;
  EXPECT_TRUE(contains(f->recommendation, ".item()")) << f->recommendation;
}

TEST(RulesTest, PrecisionOnGpuFromKernelTime) {
  Summary s = quiet();
  s.on_gpu = true;
  s.compute_dtype = "fp32";
  s.shares = {0, 0, 80, 0, 10, 10};
  s.kernel_precision_ns = {{"fp32", 600}, {"other", 400}};
  auto f = find(s, "precision");
  ASSERT_TRUE(f);
  EXPECT_DOUBLE_EQ(evidence(*f, "fp32_kernel_time_pct")->value, 60);
  s.kernel_precision_ns = {{"fp32", 300}, {"bf16", 700}};
  EXPECT_FALSE(find(s, "precision"));
  s.kernel_precision_ns.clear();
  EXPECT_FALSE(find(s, "precision"));
}

// --- 15. gemm_alignment

TEST(RulesTest, GemmAlignment) {
  Summary s = quiet();
  s.compute_dtype = "bf16";
  s.gemm_ops = 10;
  s.gemm_unaligned_ops = 3;
  s.unaligned_gemm_examples = {"aten::addmm [4096,1000]x[1000,10]"};
  auto f = find(s, "gemm_alignment");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kModerate);
  EXPECT_EQ(f->suspect, Suspect::kModelCompute);
  EXPECT_DOUBLE_EQ(f->evidence[0].value, 30);
  EXPECT_EQ(f->evidence[0].threshold, 25);
  EXPECT_EQ(f->times_fired, 3);
  EXPECT_EQ(f->data_points, 10);
  EXPECT_TRUE(contains(f->title, "aten::addmm [4096,1000]x[1000,10]")) << f->title;
  s.compute_dtype = "fp32";
  EXPECT_EQ(find(s, "gemm_alignment")->severity, Severity::kInfo);
  s.gemm_unaligned_ops = 2;
  EXPECT_FALSE(find(s, "gemm_alignment"));
  s.gemm_ops = 0;
  s.gemm_unaligned_ops = 0;
  EXPECT_FALSE(find(s, "gemm_alignment"));
}

// --- 16. initialisation_time

TEST(RulesTest, InitialisationTime) {
  Summary s = quiet();
  s.init_ms = 300;
  s.loop_ms = 1000;
  auto f = find(s, "initialisation_time");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_EQ(f->suspect, Suspect::kNone);
  EXPECT_DOUBLE_EQ(evidence(*f, "init_pct_of_loop")->value, 30);
  EXPECT_EQ(evidence(*f, "init_ms")->value, 300);
  EXPECT_DOUBLE_EQ(evidence(*f, "init_ms")->threshold, 200);
  s.init_ms = 199;
  EXPECT_FALSE(find(s, "initialisation_time"));
  s.init_ms = 300;
  s.loop_ms.reset();
  EXPECT_FALSE(find(s, "initialisation_time"));
}

// --- 17. non_finite_loss and gradient_norm

TEST(RulesTest, NonFiniteLoss) {
  Summary s = quiet(10);
  s.losses.assign(10, 2.5);
  s.losses[3] = std::nan("");
  s.losses[7] = std::numeric_limits<double>::infinity();
  auto f = find(s, "non_finite_loss");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kHigh);
  EXPECT_EQ(f->times_fired, 2);
  EXPECT_EQ(f->data_points, 10);
  EXPECT_EQ(f->evidence[0].value, 2);
  EXPECT_TRUE(contains(f->title, "first at step 8")) << f->title;  // numbers start at 5
  s.losses[3] = s.losses[7] = 2.4;
  EXPECT_FALSE(find(s, "non_finite_loss"));
  s.losses.clear();
  EXPECT_FALSE(find(s, "non_finite_loss"));
}

TEST(RulesTest, GradientNormExplodes) {
  Summary s = quiet(21);
  s.grad_norms.assign(21, 1.0);
  s.grad_norms[12] = 15;
  auto f = find(s, "gradient_norm");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kModerate);
  EXPECT_EQ(evidence(*f, "max_grad_norm_x_median")->value, 15);
  EXPECT_EQ(evidence(*f, "max_grad_norm_x_median")->threshold, 10);
  EXPECT_EQ(f->times_fired, 1);
  EXPECT_EQ(f->data_points, 21);
  s.grad_norms[12] = 9;
  EXPECT_FALSE(find(s, "gradient_norm"));
  s.grad_norms[12] = std::nan("");  // a non-finite norm is a spike
  f = find(s, "gradient_norm");
  ASSERT_TRUE(f);
  EXPECT_EQ(evidence(*f, "non_finite_grad_norms")->value, 1);
}

TEST(RulesTest, GradientNormVanishes) {
  Summary s = quiet(20);
  s.grad_norms.assign(20, 1e-8);
  auto f = find(s, "gradient_norm");
  ASSERT_TRUE(f);
  EXPECT_EQ(evidence(*f, "median_grad_norm")->value, 1e-8);
  EXPECT_EQ(evidence(*f, "median_grad_norm")->threshold, 1e-6);
  EXPECT_EQ(f->times_fired, 20);
  s.grad_norms.assign(20, 1e-5);
  EXPECT_FALSE(find(s, "gradient_norm"));
  s.grad_norms = {1e-9, 1e-9};  // too few
  EXPECT_FALSE(find(s, "gradient_norm"));
}

// --- 18. model_compute

TEST(RulesTest, ModelComputeWellFed) {
  Summary s = quiet();
  s.shares = {3, 0, 80, 0, 7, 10};
  auto f = find(s, "model_compute");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_EQ(f->suspect, Suspect::kModelCompute);
  EXPECT_EQ(f->evidence[0].value, 80);
  EXPECT_EQ(f->evidence[0].threshold, 60);
  EXPECT_TRUE(contains(f->title, "efficiency unknown")) << f->title;

  s.achieved_flops_per_s = 3e12;
  s.peak_flops_per_s = 1e13;
  f = find(s, "model_compute");
  EXPECT_DOUBLE_EQ(evidence(*f, "flops_efficiency_pct")->value, 30);
  EXPECT_TRUE(contains(f->title, "30.0 %")) << f->title;

  s.shares = {0, 0, 59, 0, 20, 21};
  EXPECT_FALSE(find(s, "model_compute"));
  s.shares = {0, 0, 60, 0, 0, 61};  // not the largest share
  EXPECT_FALSE(find(s, "model_compute"));
  Summary none = no_steps();
  none.shares = {0, 0, 90, 0, 5, 5};
  EXPECT_FALSE(find(none, "model_compute"));
}

TEST(RulesTest, EveryThresholdTheRulesUseIsDefined) {
  // A Summary that reaches every rule's threshold look-ups: run_rules throws on a missing key.
  Summary s = quiet();
  s.on_gpu = true;
  s.shares = {30, 6, 50, 12, 25, 5};
  s.system["gpu0.util_pct"] = dist(10, 5, 20, 10, 8);
  s.system["cpu.total_pct"] = dist(10, 95, 99);
  s.system["cpu.iowait_pct"] = dist(10, 5, 30);
  s.device_busy_pct = 20;
  s.loader_workers = 0;
  s.pin_memory = false;
  s.batch_size = 4;
  s.memory_growth_pct = 50;
  s.world_size = 2;
  s.rank_spread_pct = 50;
  s.short_kernel_pct = 90;
  s.host_syncs_per_step = 5;
  s.compute_dtype = "fp32";
  s.kernel_precision_ns = {{"fp32", 1}};
  s.gemm_ops = 4;
  s.gemm_unaligned_ops = 4;
  s.init_ms = 1000;
  s.loop_ms = 100;
  s.losses = {1, std::nan("")};
  s.grad_norms = {1, 1, 1, 100};
  std::vector<Finding> findings;
  ASSERT_NO_THROW(findings = run_rules(s, defaults()));
  std::set<std::string> fired;
  for (const Finding& f : findings) fired.insert(f.rule_id);
  for (const char* id : {"input_bound", "low_device_utilisation", "cpu_bottleneck", "io_bottleneck",
                         "loader_settings", "batch_too_small", "memory_growth", "exposed_communication",
                         "rank_imbalance", "dispatch_overhead", "host_syncs", "precision", "gemm_alignment",
                         "initialisation_time", "non_finite_loss", "gradient_norm"}) {
    EXPECT_TRUE(fired.count(id)) << id;
  }
}

}  // namespace
}  // namespace trainlab
