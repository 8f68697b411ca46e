// The rule gradient_norm (diagnostics/rules/gradient_norm.cpp) on hand-built Summaries: on both sides of its
// thresholds (fires or not, severity, suspect, change, evidence equal to the inputs, saving), and silent
// when its inputs are absent.
#include "rule_test_support.h"

#include <gtest/gtest.h>

#include <cmath>

namespace trainlab::rule_test {
namespace {

TEST(RulesTest, GradientNormExplodes) {
  Summary s = quiet(21);
  s.grad_norms.assign(21, 1.0);
  s.grad_norms[12] = 15;
  auto f = find(s, "gradient_norm");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kModerate);
  EXPECT_TRUE(has_evidence(*f, "max_grad_norm_x_median", 15, 10));
  EXPECT_TRUE(counts_are(*f, 1, 21));
  s.grad_norms[12] = 9;
  EXPECT_FALSE(find(s, "gradient_norm"));
  s.grad_norms[12] = std::nan("");  // a non-finite norm is a spike
  f = find(s, "gradient_norm");
  ASSERT_TRUE(f);
  EXPECT_TRUE(has_evidence(*f, "non_finite_grad_norms", 1));
}

TEST(RulesTest, GradientNormVanishes) {
  Summary s = quiet(20);
  s.grad_norms.assign(20, 1e-8);
  auto f = find(s, "gradient_norm");
  ASSERT_TRUE(f);
  EXPECT_TRUE(has_evidence(*f, "median_grad_norm", 1e-8, 1e-6));
  EXPECT_EQ(f->times_fired, 20);
  s.grad_norms.assign(20, 1e-5);
  EXPECT_FALSE(find(s, "gradient_norm"));
  s.grad_norms = {1e-9, 1e-9};  // too few
  EXPECT_FALSE(find(s, "gradient_norm"));
}

}  // namespace
}  // namespace trainlab::rule_test
