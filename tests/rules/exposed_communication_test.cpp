// The rule exposed_communication (diagnostics/rules/exposed_communication.cpp) on hand-built Summaries: on both sides of its
// thresholds (fires or not, severity, suspect, change, evidence equal to the inputs, saving), and silent
// when its inputs are absent.
#include "rule_test_support.h"

#include <gtest/gtest.h>

namespace trainlab::rule_test {
namespace {

TEST(RulesTest, ExposedCommunication) {
  Summary s = quiet();
  s.world_size = 2;
  s.shares.communication_pct = 10;
  EXPECT_FALSE(find(s, "exposed_communication"));
  s.shares.communication_pct = 12;
  auto f = find(s, "exposed_communication");
  ASSERT_TRUE(fired_as(f, Severity::kModerate, Suspect::kCommunication, "overlap_comm"));
  EXPECT_TRUE(first_evidence_is(*f, 12, 10));
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

}  // namespace
}  // namespace trainlab::rule_test
