// The rule initialisation_time (diagnostics/rules/initialisation_time.cpp) on hand-built Summaries: on both sides of its
// thresholds (fires or not, severity, suspect, change, evidence equal to the inputs, saving), and silent
// when its inputs are absent.
#include "rule_test_support.h"

#include <gtest/gtest.h>

namespace trainlab::rule_test {
namespace {

TEST(RulesTest, InitialisationTime) {
  Summary s = quiet();
  s.init_ms = 300;
  s.loop_ms = 1000;
  auto f = find(s, "initialisation_time");
  ASSERT_TRUE(fired_as(f, Severity::kInfo, Suspect::kNone));
  EXPECT_DOUBLE_EQ(evidence(*f, "init_pct_of_loop")->value, 30);
  EXPECT_TRUE(has_evidence(*f, "init_ms", 300));
  EXPECT_DOUBLE_EQ(evidence(*f, "init_ms")->threshold, 200);
  s.init_ms = 199;
  EXPECT_FALSE(find(s, "initialisation_time"));
  s.init_ms = 300;
  s.loop_ms.reset();
  EXPECT_FALSE(find(s, "initialisation_time"));
}

}  // namespace
}  // namespace trainlab::rule_test
