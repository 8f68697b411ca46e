// The rule periodic_slow_steps (diagnostics/rules/periodic_slow_steps.cpp) on hand-built Summaries: on both sides of its
// thresholds (fires or not, severity, suspect, change, evidence equal to the inputs, saving), and silent
// when its inputs are absent.
#include "rule_test_support.h"

#include <gtest/gtest.h>

#include <random>

namespace trainlab::rule_test {
namespace {

TEST(RulesTest, PeriodicSlowStepsWithJitter) {
  Summary s = quiet(100);
  for (int i : {9, 19, 30, 39, 49, 58, 69, 79, 89, 99}) s.step_ms[i] = 150;
  auto f = find(s, "periodic_slow_steps");
  ASSERT_TRUE(f);
  EXPECT_TRUE(has_evidence(*f, "period_steps", 10));
  EXPECT_TRUE(has_evidence(*f, "period_share_pct", 100));
  EXPECT_TRUE(has_evidence(*f, "extra_ms_per_period", 50, 30));
  EXPECT_TRUE(has_evidence(*f, "slow_steps", 10));
  EXPECT_TRUE(counts_are(*f, 10, 100));
  EXPECT_NEAR(f->saving_pct, 500.0 / 10500.0 * 100.0, 1e-9);
  EXPECT_TRUE(fired_as(f, Severity::kInfo, Suspect::kNone));  // 4.8 % < 5 %
  EXPECT_TRUE(contains(f->title, "every 10 steps")) << f->title;
  EXPECT_TRUE(contains(f->title, "steps 14, 24, 35")) << f->title;

  for (int i : {9, 19, 30, 39, 49, 58, 69, 79, 89, 99}) s.step_ms[i] = 200;
  EXPECT_EQ(find(s, "periodic_slow_steps")->severity, Severity::kModerate);  // 1000 / 11000
  for (int i : {9, 19, 30, 39, 49, 58, 69, 79, 89, 99}) s.step_ms[i] = 129;  // under median + 30 %
  EXPECT_FALSE(find(s, "periodic_slow_steps"));
}

TEST(RulesTest, PeriodicSlowStepsSpillingIntoTheNextStepCountOnce) {
  Summary s = quiet(100);
  for (int i = 9; i < 100; i += 10) {
    s.step_ms[i] = 180;
    s.step_ms[i + 1 < 100 ? i + 1 : i] = 180;
  }
  auto f = find(s, "periodic_slow_steps");
  ASSERT_TRUE(f);
  EXPECT_TRUE(has_evidence(*f, "period_steps", 10));
  EXPECT_EQ(f->times_fired, 19);
}

TEST(RulesTest, PeriodicSlowStepsHiddenByNoiseAreFoundByFolding) {
  // The seeded callback case on a loaded machine (steps in ms): only 4 steps pass median + 30 %, at
  // 6, 9, 16, 26, with no period among them; folding finds every 10th step from 6 slow.
  Summary s = quiet(50);
  s.step_ms = {451, 361, 369, 517, 348, 399, 609, 370, 386, 551, 351, 409, 410, 357, 456, 497, 648,
               505, 334, 384, 437, 326, 361, 372, 395, 409, 525, 422, 323, 329, 445, 340, 416, 344,
               435, 392, 479, 330, 394, 406, 458, 418, 362, 418, 337, 345, 485, 344, 238, 434};
  auto f = find(s, "periodic_slow_steps");
  ASSERT_TRUE(f);
  EXPECT_TRUE(has_evidence(*f, "period_steps", 10));
  EXPECT_EQ(f->times_fired, 5);
  EXPECT_TRUE(contains(f->title, "every 10 steps")) << f->title;
}

TEST(RulesTest, PeriodicSlowStepsNotInNoiseOrTooFew) {
  Summary s = quiet(200);
  std::mt19937 gen(7);  // fixed by the standard
  for (double& ms : s.step_ms) ms = 100 + static_cast<double>(gen() % 1000) / 10.0;  // 100..200 ms
  EXPECT_FALSE(find(s, "periodic_slow_steps"));

  Summary two = quiet(100);
  two.step_ms[10] = two.step_ms[20] = 200;
  EXPECT_FALSE(find(two, "periodic_slow_steps"));
  EXPECT_FALSE(find(no_steps(), "periodic_slow_steps"));
}

}  // namespace
}  // namespace trainlab::rule_test
