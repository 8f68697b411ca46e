// The rule periodic_slow_steps (diagnostics/rules/periodic_slow_steps.cpp) on hand-built Summaries: on both sides of its
// thresholds (fires or not, severity, suspect, change, evidence equal to the inputs, saving), and silent
// when its inputs are absent.
#include "rule_test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
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

namespace trainlab::rule_test {
namespace {

// Issue 55: slow steps that wait in the DataLoader (the loader's batches run out every few steps) are
// data wait, the data pipeline action's time: the periodic finding is traced to the data pipeline and
// claims none of that time again, and the savings add up to at most the step.
TEST(RulesTest, PeriodicSlowStepsThatWaitOnDataAreTheDataPipelines) {
  Summary s = quiet(40, 10);
  s.step_shares.assign(40, StepShares{0, 0, 70, 0, 20, 10});
  for (int i = 3; i < 40; i += 4) {  // every 4th step waits 30 ms for its batch
    s.step_ms[i] = 40;
    s.step_shares[i] = {75, 0, 17.5, 0, 5, 2.5};
  }
  // The whole's shares, time-weighted over the steps, as the Summary's are.
  const auto weigh = [](Summary& x) {
    double total = 0;
    StepShares sum{};
    for (size_t i = 0; i < x.step_ms.size(); ++i) {
      const StepShares& sh = x.step_shares[i];
      const double ms = x.step_ms[i];
      total += ms;
      sum.data_wait_pct += ms * sh.data_wait_pct;
      sum.compute_pct += ms * sh.compute_pct;
      sum.framework_pct += ms * sh.framework_pct;
      sum.other_pct += ms * sh.other_pct;
    }
    x.shares = {sum.data_wait_pct / total, 0, sum.compute_pct / total, 0, sum.framework_pct / total,
                sum.other_pct / total};
  };
  weigh(s);
  const std::vector<Finding> findings = run_rules(s, defaults());
  const auto periodic = std::find_if(findings.begin(), findings.end(),
                                     [](const Finding& f) { return f.rule_id == "periodic_slow_steps"; });
  const auto input = std::find_if(findings.begin(), findings.end(), [](const Finding& f) { return f.rule_id == "input_bound"; });
  ASSERT_NE(periodic, findings.end());
  ASSERT_NE(input, findings.end());
  EXPECT_NEAR(input->saving_pct, s.shares.data_wait_pct, 1e-9);
  EXPECT_EQ(periodic->suspect, Suspect::kDataPipeline);
  EXPECT_TRUE(contains(periodic->recommendation, "wait in the DataLoader")) << periodic->recommendation;
  EXPECT_FALSE(contains(periodic->recommendation, "checkpoint, logging")) << periodic->recommendation;
  EXPECT_LT(periodic->saving_pct, 0.5);  // its time is the data wait input_bound already claims
  double saving = 0;
  for (const Finding& f : findings) saving += f.saving_pct;
  EXPECT_LE(saving, 100.0 + 1e-9);

  // The same slow steps spent in the loop's own host work stay a callback's, with their own time.
  for (int i = 3; i < 40; i += 4) s.step_shares[i] = {0, 0, 17.5, 0, 5, 77.5};
  weigh(s);
  const std::optional<Finding> callback = find(s, "periodic_slow_steps");
  ASSERT_TRUE(callback);
  EXPECT_EQ(callback->suspect, Suspect::kNone);
  EXPECT_TRUE(contains(callback->recommendation, "checkpoint, logging")) << callback->recommendation;
  EXPECT_GT(callback->saving_pct, 20.0);
}

}  // namespace
}  // namespace trainlab::rule_test
