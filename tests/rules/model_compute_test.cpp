// The rule model_compute (diagnostics/rules/model_compute.cpp) on hand-built Summaries: on both sides of its
// thresholds (fires or not, severity, suspect, change, evidence equal to the inputs, saving), and silent
// when its inputs are absent.
#include "rule_test_support.h"

#include <gtest/gtest.h>

namespace trainlab::rule_test {
namespace {

TEST(RulesTest, ModelComputeWellFed) {
  Summary s = quiet();
  s.shares = {3, 0, 80, 0, 7, 10};
  auto f = find(s, "model_compute");
  ASSERT_TRUE(fired_as(f, Severity::kInfo, Suspect::kModelCompute));
  EXPECT_TRUE(first_evidence_is(*f, 80, 60));
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

}  // namespace
}  // namespace trainlab::rule_test
