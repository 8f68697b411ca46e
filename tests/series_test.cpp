// Series helpers of diagnostics/series.h: outliers beyond mean + k sigma, moving-average growth, and
// period detection (a period with jitter is found; random positions are not).
#include "diagnostics/series.h"

#include <gtest/gtest.h>

#include <random>

namespace trainlab::series {
namespace {

TEST(SeriesTest, MeanMedian) {
  EXPECT_DOUBLE_EQ(mean({1, 2, 3, 6}), 3.0);
  EXPECT_DOUBLE_EQ(median({5, 1, 3}), 3.0);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(mean({}), 0);
  EXPECT_EQ(median({}), 0);
}

TEST(SeriesTest, OutliersBeyondThreeSigma) {
  std::vector<double> values(50, 100.0);
  values[10] = 300;
  values[30] = 300;
  // mean 108, population stddev sqrt(1536) = 39.19: limit 225.6 at 3 sigma.
  EXPECT_EQ(outliers_above(values, 3), (std::vector<size_t>{10, 30}));
  values[30] = 220;  // mean 106.4, stddev 32.36: z of 220 is 3.51, of 300 5.98
  EXPECT_EQ(outliers_above(values, 3), (std::vector<size_t>{10, 30}));
  EXPECT_EQ(outliers_above(values, 4), (std::vector<size_t>{10}));
}

TEST(SeriesTest, NoOutliersInFlatOrTinySeries) {
  EXPECT_TRUE(outliers_above(std::vector<double>(20, 5.0), 3).empty());
  EXPECT_TRUE(outliers_above({1, 100}, 0.5).empty());  // fewer than 3 values
  // Ten values with one far above: its z-score is at most (n-1)/sqrt(n) = 2.85 < 3.
  std::vector<double> ten(10, 1.0);
  ten[4] = 1000;
  EXPECT_TRUE(outliers_above(ten, 3).empty());
  EXPECT_EQ(outliers_above(ten, 2.8), (std::vector<size_t>{4}));
}

TEST(SeriesTest, MovingAverageGrowth) {
  std::vector<double> ramp;
  for (int i = 0; i < 30; ++i) ramp.push_back(100 + i);
  EXPECT_EQ(growth_window(30), 3u);
  EXPECT_EQ(growth_window(100), 10u);
  const auto growth = moving_average_growth_pct(ramp);  // first window mean 101, last 128
  ASSERT_TRUE(growth);
  EXPECT_NEAR(*growth, (128.0 - 101.0) / 101.0 * 100.0, 1e-9);

  std::vector<double> falling(ramp.rbegin(), ramp.rend());
  EXPECT_NEAR(*moving_average_growth_pct(falling), (101.0 - 128.0) / 128.0 * 100.0, 1e-9);
  EXPECT_NEAR(*moving_average_growth_pct(std::vector<double>(40, 512.0)), 0.0, 1e-12);

  // Window of 10 over 100 values: a single spike in the middle does not count.
  std::vector<double> spike(100, 200.0);
  spike[50] = 10000;
  EXPECT_NEAR(*moving_average_growth_pct(spike), 0.0, 1e-12);
}

TEST(SeriesTest, MovingAverageGrowthNeedsTwoWindows) {
  EXPECT_FALSE(moving_average_growth_pct({1, 2, 3, 4, 5}));  // window 3: needs 6 values
  EXPECT_TRUE(moving_average_growth_pct({1, 2, 3, 4, 5, 6}));
  EXPECT_FALSE(moving_average_growth_pct({0, 0, 0, 4, 5, 6}));  // first window at 0: no percentage
  EXPECT_FALSE(moving_average_growth_pct({1, 2, 3, 4, 5, std::nan("")}));
  EXPECT_FALSE(moving_average_growth_pct({}));
}

TEST(SeriesTest, PeriodTenWithJitterIsFound) {
  const auto period = find_period({5, 15, 24, 35, 45, 56, 65, 75}, 1, 4, 0.8);  // gaps 10 9 11 10 11 9 10
  ASSERT_TRUE(period);
  EXPECT_EQ(period->period_steps, 10);
  EXPECT_EQ(period->matching_intervals, 8);  // 5, 15, 25~24, 35, 45, 55~56, 65, 75
  EXPECT_EQ(period->intervals, 8);
  EXPECT_DOUBLE_EQ(period->share(), 1.0);
  // Without jitter tolerance 24 and 56 miss: 6 of 8 occurrences < 0.8.
  EXPECT_FALSE(find_period({5, 15, 24, 35, 45, 56, 65, 75}, 0, 4, 0.8));
}

TEST(SeriesTest, PeriodToleratesOneMissedSlowStepInFive) {
  // Step 35 was not slow: 7 of the 8 occurrences 5..75.
  const auto period = find_period({75, 5, 15, 25, 45, 55, 65}, 1, 4, 0.8);  // unsorted on purpose
  ASSERT_TRUE(period);
  EXPECT_EQ(period->period_steps, 10);
  EXPECT_EQ(period->matching_intervals, 7);
  EXPECT_EQ(period->intervals, 8);
  EXPECT_FALSE(find_period({5, 15, 25, 45, 55, 65}, 1, 4, 0.86));  // 6 of 7 = 0.857
  EXPECT_TRUE(find_period({5, 15, 25, 45, 55, 65}, 1, 4, 0.85));
}

TEST(SeriesTest, PeriodToleratesANoisySlowStepOffThePeriod) {
  // A measured run: the callback every 10th step, plus one noisy slow step at 34.
  const auto period = find_period({6, 16, 26, 34, 36, 46}, 1, 4, 0.8);
  ASSERT_TRUE(period);
  EXPECT_EQ(period->period_steps, 10);
  EXPECT_EQ(period->matching_intervals, 5);
  EXPECT_EQ(period->intervals, 5);
  // Half the positions off the period is not a period.
  EXPECT_FALSE(find_period({6, 16, 26, 31, 33, 36, 39, 42, 46}, 1, 4, 0.8));
}

TEST(SeriesTest, RandomPositionsHaveNoPeriod) {
  std::mt19937 gen(20240611);  // mt19937's sequence is fixed by the standard
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<int64_t> positions;
    for (int i = 0; i < 20; ++i) positions.push_back(static_cast<int64_t>(gen() % 1000));
    EXPECT_FALSE(find_period(positions, 1, 4, 0.8)) << "trial " << trial;
  }
}

TEST(SeriesTest, ShortPeriodsAndTooFewPositionsAreNotReported) {
  EXPECT_FALSE(find_period({10, 20}, 1, 4, 0.8));            // one gap
  EXPECT_FALSE(find_period({1, 3, 5, 7, 9, 11}, 1, 4, 0.8));  // period 2 below the minimum
  const auto two = find_period({1, 3, 5, 7, 9, 11}, 0, 2, 0.8);
  ASSERT_TRUE(two);
  EXPECT_EQ(two->period_steps, 2);
}

// Step times (ms) of the seeded periodic-callback case (a 150 ms callback every 10 steps) measured
// while another process kept one core busy: thresholding at median + 30 % finds steps 6, 9, 16, 26
// (no period); the callback's steps 36 and 46 hide in the noise.
const std::vector<double> kLoadedCallbackSteps = {
    451, 361, 369, 517, 348, 399, 609, 370, 386, 551, 351, 409, 410, 357, 456, 497, 648, 505, 334, 384, 437, 326, 361, 372, 395,
    409, 525, 422, 323, 329, 445, 340, 416, 344, 435, 392, 479, 330, 394, 406, 458, 418, 362, 418, 337, 345, 485, 344, 238, 434};

TEST(SeriesTest, FoldingFindsACallbackThatNoiseHidesFromThresholds) {
  const auto folded = fold_period(kLoadedCallbackSteps, 4, 5, 30);
  ASSERT_TRUE(folded);
  EXPECT_EQ(folded->period, 10);
  EXPECT_EQ(folded->phase, 6);
  EXPECT_EQ(folded->in_phase, 5u);
  EXPECT_DOUBLE_EQ(folded->in_median, 525);  // steps 6 16 26 36 46: 609 648 525 479 485
  EXPECT_GT(folded->in_median, folded->out_median * 1.3);
  // Fewer than 5 in-phase steps cannot qualify: the first 40 steps hold 4 of the callback.
  EXPECT_FALSE(fold_period(std::vector<double>(kLoadedCallbackSteps.begin(), kLoadedCallbackSteps.begin() + 40), 4, 5, 30));
}

TEST(SeriesTest, FoldingLooksAtTheLastStepsOnlyAndStaysQuickOnLongRuns) {
  // 100,000 steps with a slow step every 10 from step 3: the folded tail (the last 512) finds it, and
  // the phase it reports is an index of the whole series.
  std::vector<double> steps(100000, 100.0);
  for (size_t i = 3; i < steps.size(); i += 10) steps[i] = 200.0;
  const auto folded = fold_period(steps, 4, 5, 30);
  ASSERT_TRUE(folded);
  EXPECT_EQ(folded->period, 10);
  EXPECT_EQ(folded->phase % 10, 3);
  EXPECT_GE(folded->phase, static_cast<int64_t>(steps.size()) - kMaxFoldedValues);
  // The tail starts at step 99,488; its steps 99,493 .. 99,993 (every 10th) are the slow ones: 51.
  EXPECT_EQ(folded->phase, 99493);
  EXPECT_EQ(folded->in_phase, 51u);
}

TEST(SeriesTest, FoldingFindsNothingInNoiseAlone) {
  // 20 runs of 300 steps, 15 % noise (the sum of 12 uniforms, portable): no period, no phase.
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 gen(seed);
    std::vector<double> steps;
    for (int i = 0; i < 300; ++i) {
      double sum = 0;
      for (int k = 0; k < 12; ++k) sum += static_cast<double>(gen()) / 4294967296.0;
      steps.push_back(400 + 60 * (sum - 6));  // mean 400, sd 60
    }
    EXPECT_FALSE(fold_period(steps, 4, 5, 30)) << "seed " << seed;
  }
}

}  // namespace
}  // namespace trainlab::series
