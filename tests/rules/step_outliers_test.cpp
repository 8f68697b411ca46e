// The rule step_outliers (diagnostics/rules/step_outliers.cpp) on hand-built Summaries: on both sides of its
// thresholds (fires or not, severity, suspect, change, evidence equal to the inputs, saving), and silent
// when its inputs are absent.
#include "rule_test_support.h"

#include <gtest/gtest.h>

#include <cmath>

namespace trainlab::rule_test {
namespace {

TEST(RulesTest, StepOutliersNameTheirSteps) {
  Summary s = quiet(50);
  s.step_ms[10] = 300;
  s.step_ms[30] = 300;
  auto f = find(s, "step_outliers");
  ASSERT_TRUE(f);
  EXPECT_TRUE(counts_are(*f, 2, 50));
  EXPECT_TRUE(contains(f->title, "steps 15, 35")) << f->title;  // step numbers start at 5
  EXPECT_TRUE(has_evidence(*f, "outlier_steps", 2));
  EXPECT_TRUE(has_evidence(*f, "max_step_ms", 300));
  EXPECT_NEAR(evidence(*f, "max_step_ms")->threshold, 108 + 3 * std::sqrt(1536.0), 1e-9);
  EXPECT_NEAR(f->saving_pct, 400.0 / 5400.0 * 100.0, 1e-9);
  EXPECT_TRUE(fired_as(f, Severity::kModerate, Suspect::kNone));  // 7.4 % of the time >= 5 %
}

TEST(RulesTest, SingleSmallOutlierIsInfoAndFlatStepsFireNothing) {
  Summary s = quiet(50);
  s.step_ms[20] = 150;  // mean 101, stddev 7: limit 122
  auto f = find(s, "step_outliers");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_NEAR(f->saving_pct, 50.0 / 5050.0 * 100.0, 1e-9);
  s.step_ms[20] = 120;  // mean 100.4, stddev 2.8: limit 108.8, z = 7 -> still an outlier
  EXPECT_TRUE(find(s, "step_outliers"));
  s.step_ms[20] = 100;
  EXPECT_FALSE(find(s, "step_outliers"));
  EXPECT_FALSE(find(no_steps(), "step_outliers"));
}

}  // namespace
}  // namespace trainlab::rule_test
