// The rule low_device_utilisation (diagnostics/rules/low_device_utilisation.cpp) on hand-built Summaries: on both sides of its
// thresholds (fires or not, severity, suspect, change, evidence equal to the inputs, saving), and silent
// when its inputs are absent.
#include "rule_test_support.h"

#include <gtest/gtest.h>

namespace trainlab::rule_test {
namespace {

TEST(RulesTest, LowGpuUtilisationNamesTheLargestShare) {
  Summary s = quiet_on_gpu();
  s.shares = {30, 0, 50, 5, 10, 5};
  s.system["gpu0.util_pct"] = dist(200, 40, 69.9, 40, 20);
  auto f = find(s, "low_device_utilisation");
  // A symptom: input_bound carries the change and the saving.
  ASSERT_TRUE(fired_as(f, Severity::kModerate, Suspect::kDataPipeline, ""));
  EXPECT_TRUE(has_evidence(*f, "gpu0.util_pct.p95", 69.9, 70));
  EXPECT_DOUBLE_EQ(evidence(*f, "gpu0.util_pct.cv")->value, 50);  // stddev 20 / mean 40
  EXPECT_TRUE(has_evidence(*f, "data_wait_pct", 30));
  EXPECT_TRUE(contains(f->title, "fluctuating")) << f->title;
  EXPECT_EQ(f->saving_pct, 0);
  EXPECT_TRUE(counts_are(*f, 190, 200));

  s.system["gpu0.util_pct"] = dist(200, 40, 69.9, 40, 10);  // cv 25 %: steady, no fluctuation evidence
  f = find(s, "low_device_utilisation");
  EXPECT_FALSE(evidence(*f, "gpu0.util_pct.cv"));

  s.system["gpu0.util_pct"] = dist(200, 60, 70);
  EXPECT_FALSE(find(s, "low_device_utilisation"));
}

TEST(RulesTest, LowGpuUtilisationFromTraceBusyShare) {
  Summary s = quiet_on_gpu();
  s.shares.framework_pct = 35;
  s.device_busy_pct = 50;  // no sampled utilisation: the trace's kernel busy share
  auto f = find(s, "low_device_utilisation");
  ASSERT_TRUE(f);
  EXPECT_TRUE(has_evidence(*f, "device_busy_pct", 50));
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
  ASSERT_TRUE(fired_as(f, Severity::kInfo, Suspect::kNone, ""));
  EXPECT_EQ(f->saving_pct, 0);
  EXPECT_EQ(evidence(*f, "device_busy_pct")->threshold, 70);

  s.shares.communication_pct = 12;  // now communication explains the idle share
  f = find(s, "low_device_utilisation");
  EXPECT_EQ(f->suspect, Suspect::kCommunication);
  EXPECT_EQ(f->saving_pct, 0);

  expect_silent_at_and_without(s, "low_device_utilisation", &Summary::device_busy_pct, 75);
}

}  // namespace
}  // namespace trainlab::rule_test
