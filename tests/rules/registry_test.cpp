// The rules together (diagnostics/rules/registry.cpp): the ids and their order, what run_rules returns,
// the Finding's JSON, the user's words across rules, and every threshold the rules read.
#include "rule_test_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace trainlab::rule_test {
namespace {

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

TEST(RulesTest, EveryThresholdTheRulesUseIsDefined) {
  // A Summary that reaches every rule's threshold look-ups: run_rules throws on a missing key.
  Summary s = quiet_on_gpu();
  s.shares = {30, 6, 50, 12, 25, 5};
  s.system["gpu0.util_pct"] = dist(10, 5, 20, 10, 8);
  s.system["cpu.total_pct"] = dist(10, 95, 99);
  s.system["cpu.iowait_pct"] = dist(10, 5, 30, 20);
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
}  // namespace trainlab::rule_test
