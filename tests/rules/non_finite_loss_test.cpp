// The rule non_finite_loss (diagnostics/rules/non_finite_loss.cpp) on hand-built Summaries: on both sides of its
// thresholds (fires or not, severity, suspect, change, evidence equal to the inputs, saving), and silent
// when its inputs are absent.
#include "rule_test_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace trainlab::rule_test {
namespace {

TEST(RulesTest, NonFiniteLoss) {
  Summary s = quiet(10);
  s.losses.assign(10, 2.5);
  s.losses[3] = std::nan("");
  s.losses[7] = std::numeric_limits<double>::infinity();
  auto f = find(s, "non_finite_loss");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kHigh);
  EXPECT_TRUE(counts_are(*f, 2, 10));
  EXPECT_TRUE(first_evidence_is(*f, 2));
  EXPECT_TRUE(contains(f->title, "first at step 8")) << f->title;  // numbers start at 5
  s.losses[3] = s.losses[7] = 2.4;
  EXPECT_FALSE(find(s, "non_finite_loss"));
  s.losses.clear();
  EXPECT_FALSE(find(s, "non_finite_loss"));
}

}  // namespace
}  // namespace trainlab::rule_test
