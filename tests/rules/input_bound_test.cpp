// The rule input_bound (diagnostics/rules/input_bound.cpp) on hand-built Summaries: on both sides of its
// thresholds (fires or not, severity, suspect, change, evidence equal to the inputs, saving), and silent
// when its inputs are absent.
#include "rule_test_support.h"

#include <gtest/gtest.h>

namespace trainlab::rule_test {
namespace {

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
  ASSERT_TRUE(fired_as(f, Severity::kHigh, Suspect::kDataPipeline));
  EXPECT_TRUE(first_evidence_is(*f, 38, 20));
  EXPECT_TRUE(has_evidence(*f, "loader_workers", 2, 8));
  EXPECT_TRUE(contains(f->title, "38.0 %")) << f->title;
  EXPECT_TRUE(contains(f->title, "1.6x")) << f->title;  // 100 / 62
  EXPECT_EQ(f->change, "more_workers");
  EXPECT_EQ(f->saving_pct, 38);
  EXPECT_TRUE(counts_are(*f, 100, 100));
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
  EXPECT_TRUE(has_evidence(*f, "host_to_device_pct", 6));

  s.shares.host_to_device_pct = 4;  // copies too small to matter
  EXPECT_EQ(find(s, "input_bound")->change, "more_prefetch");
}

TEST(RulesTest, InputBoundNeedsSteps) {
  Summary s = no_steps();
  s.shares.data_wait_pct = 50;
  EXPECT_FALSE(find(s, "input_bound"));
}

}  // namespace
}  // namespace trainlab::rule_test
