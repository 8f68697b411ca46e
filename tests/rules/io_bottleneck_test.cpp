// The rule io_bottleneck (diagnostics/rules/io_bottleneck.cpp) on hand-built Summaries: on both sides of its
// thresholds (fires or not, severity, suspect, change, evidence equal to the inputs, saving), and silent
// when its inputs are absent.
#include "rule_test_support.h"

#include <gtest/gtest.h>

namespace trainlab::rule_test {
namespace {

TEST(RulesTest, IoBottleneckNeedsIoWaitAndDataWait) {
  Summary s = quiet();
  s.shares.data_wait_pct = 10;
  s.system["cpu.iowait_pct"] = dist(200, 4, 15, 12);
  auto f = find(s, "io_bottleneck");
  ASSERT_TRUE(fired_as(f, Severity::kModerate, Suspect::kDataPipeline));
  EXPECT_TRUE(has_evidence(*f, "cpu.iowait_pct.p95", 15, 10));
  EXPECT_TRUE(has_evidence(*f, "data_wait_pct", 10));
  EXPECT_EQ(f->saving_pct, 10);
  EXPECT_TRUE(counts_are(*f, 10, 200));

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

// Reads must be at least half the data wait: the mean IO wait times the cores against the data wait.
TEST(RulesTest, IoBottleneckStaysQuietWhereDecodingIsMostOfTheWait) {
  Summary s = quiet();
  s.logical_cores = 2;
  s.shares.data_wait_pct = 77.6;
  Distribution d = dist(6, 8.7, 10.9);
  d.mean = 6.5;  // the seeded JPEG loader on one thread: 13 % of the wall blocked on reads at most
  s.system["cpu.iowait_pct"] = d;
  EXPECT_FALSE(find(s, "io_bottleneck"));
  s.system["cpu.iowait_pct"].mean = 20;  // 40 % of the wall on 2 cores: over half of 77.6 %
  EXPECT_TRUE(fired_as(find(s, "io_bottleneck"), Severity::kHigh, Suspect::kDataPipeline));
}

}  // namespace
}  // namespace trainlab::rule_test
