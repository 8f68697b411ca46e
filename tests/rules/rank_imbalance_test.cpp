// The rule rank_imbalance (diagnostics/rules/rank_imbalance.cpp) on hand-built Summaries: on both sides of its
// thresholds (fires or not, severity, suspect, change, evidence equal to the inputs, saving), and silent
// when its inputs are absent.
#include "rule_test_support.h"

#include <gtest/gtest.h>

namespace trainlab::rule_test {
namespace {

TEST(RulesTest, RankImbalanceFromPerRankMedians) {
  Summary s = quiet();
  s.world_size = 4;
  s.rank_step_p50_ms = {100, 101, 102, 120};
  auto f = find(s, "rank_imbalance");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kModerate);
  EXPECT_DOUBLE_EQ(f->evidence[0].value, 20);
  EXPECT_EQ(f->evidence[0].threshold, 10);
  EXPECT_TRUE(counts_are(*f, 1, 4));
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
  EXPECT_TRUE(first_evidence_is(*f, 15));
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
  EXPECT_TRUE(first_evidence_is(*f, 15));
  EXPECT_NE(f->title.find("15.0 % [11.0, 19.0] above the other ranks' median"), std::string::npos) << f->title;
}

}  // namespace
}  // namespace trainlab::rule_test
