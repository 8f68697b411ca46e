// The comparison statistics: Mann-Whitney U against hand-computed values (ranks and pairs counted
// by hand, ties included), Welch's interval against hand-computed values, and the bootstrap's and
// Welch's coverage on synthetic samples whose true change is known.
#include "core/comparison_stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/statistics.h"

namespace trainlab::stats {
namespace {

TEST(MannWhitneyTest, SeparatedSamples) {
  // a below every b: U = 0. n1 = 3, n2 = 2: mean 3, variance 3*2/12*(5+1) = 3;
  // z = -(3 - 0.5)/sqrt(3) = -1.4434, p = erfc(1.4434/sqrt 2) = 0.14891.
  const MannWhitney r = mann_whitney_u({1, 2, 3}, {4, 5});
  EXPECT_DOUBLE_EQ(r.u, 0.0);
  EXPECT_NEAR(r.z, -1.4433757, 1e-6);
  EXPECT_NEAR(r.p_two_sided, 0.1489147, 1e-6);
}

TEST(MannWhitneyTest, TiesShareTheirMeanRank) {
  // Pairs with x > y: 1 -> 0, each 2 -> 1/2 (the tie with b's 2), 4 -> 2 (over 2 and 3): U = 3.
  // Tie group of three 2s: variance 4*3/12*(8 - 24/42) = 7.4286; z = -(6 - 3 - 0.5)/2.7255.
  const MannWhitney r = mann_whitney_u({1, 2, 2, 4}, {2, 3, 5});
  EXPECT_DOUBLE_EQ(r.u, 3.0);
  EXPECT_NEAR(r.z, -0.9172492, 1e-6);
  EXPECT_NEAR(r.p_two_sided, 0.3590121, 1e-6);
}

TEST(MannWhitneyTest, TextbookExampleAndSymmetry) {
  // 19 > 11,17,12; 22 > all four; 16 > 11,12; 29 and 24 > all four: U = 3 + 4 + 2 + 4 + 4 = 17.
  const MannWhitney r = mann_whitney_u({19, 22, 16, 29, 24}, {20, 11, 17, 12});
  EXPECT_DOUBLE_EQ(r.u, 17.0);
  EXPECT_NEAR(r.p_two_sided, 0.1113469, 1e-6);
  const MannWhitney swapped = mann_whitney_u({20, 11, 17, 12}, {19, 22, 16, 29, 24});
  EXPECT_DOUBLE_EQ(swapped.u, 5 * 4 - 17.0);
  EXPECT_NEAR(swapped.p_two_sided, r.p_two_sided, 1e-12);
  EXPECT_DOUBLE_EQ(mann_whitney_u({3, 3, 3}, {3, 3}).p_two_sided, 1.0);  // all equal: no evidence
  EXPECT_THROW(mann_whitney_u({}, {1}), std::invalid_argument);
}

TEST(MannWhitneyTest, ClearShiftOnManySamplesIsSignificant) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> before(100, 5), after(110, 5);
  std::vector<double> a, b;
  for (int i = 0; i < 40; ++i) {
    a.push_back(before(rng));
    b.push_back(after(rng));
  }
  EXPECT_LT(mann_whitney_u(a, b).p_two_sided, 1e-6);
}

// 95 % intervals on samples drawn with a known +10 % change of the mean contain it about 95 % of
// the time (the percentile bootstrap runs a little narrow on 40 samples: 0.88..0.99 accepted).
TEST(BootstrapTest, IntervalCoversTheTrueChange) {
  std::mt19937_64 rng(20261123);
  std::normal_distribution<double> before(100, 10), after(110, 10);
  int covered = 0;
  const int trials = 200;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> a, b;
    for (int i = 0; i < 40; ++i) {
      a.push_back(before(rng));
      b.push_back(after(rng));
    }
    const ChangeEstimate e = bootstrap_relative_change(a, b, mean, 1000, 0.95, 1000 + t);
    EXPECT_LE(e.low_pct, e.change_pct);
    EXPECT_GE(e.high_pct, e.change_pct);
    if (e.low_pct <= 10.0 && 10.0 <= e.high_pct) ++covered;
  }
  const double coverage = static_cast<double>(covered) / trials;
  EXPECT_GT(coverage, 0.88) << coverage;
  EXPECT_LT(coverage, 0.99) << coverage;
}

TEST(BootstrapTest, IdenticalSamplesGiveAnIntervalAroundZeroAndBadInputThrows) {
  const std::vector<double> a = {10, 11, 9, 10, 12, 8, 10, 11};
  const ChangeEstimate e = bootstrap_relative_change(a, a, median);
  EXPECT_DOUBLE_EQ(e.change_pct, 0.0);
  EXPECT_LT(e.low_pct, 0.0);
  EXPECT_GT(e.high_pct, 0.0);
  // Same seed, same interval.
  const ChangeEstimate again = bootstrap_relative_change(a, a, median);
  EXPECT_DOUBLE_EQ(again.low_pct, e.low_pct);
  EXPECT_THROW(bootstrap_relative_change({}, a, mean), std::invalid_argument);
  EXPECT_THROW(bootstrap_relative_change({0, 0}, a, mean), std::invalid_argument);
}

TEST(WelchTest, HandComputedIntervalOnThreeValuesASide) {
  // Relative, on the logarithms: a = ln 10, ln 11, ln 12; b = ln 12, ln 13, ln 14. Mean difference
  // 0.167842, se 0.068943, Welch df 3.8923 (by hand): change e^0.167842 - 1 = +18.27 %.
  const ChangeEstimate e = welch_change({10, 11, 12}, {12, 13, 14});
  const double d = 0.1678421071, se = 0.0689433821, t = student_t_975(3.8922555);
  EXPECT_NEAR(e.change_pct, 18.2749848, 1e-6);
  EXPECT_NEAR(e.low_pct, 100.0 * (std::exp(d - t * se) - 1.0), 1e-6);
  EXPECT_NEAR(e.high_pct, 100.0 * (std::exp(d + t * se) - 1.0), 1e-6);
  EXPECT_GT(t, 2.776);  // between the df 3 and 4 rows
  EXPECT_LT(t, 3.182);
  // Points: the plain difference of the means, 13 - 11, +- t(4) x sqrt(1/3 + 1/3).
  const ChangeEstimate points = welch_change({10, 11, 12}, {12, 13, 14}, false);
  EXPECT_NEAR(points.change_pct, 2.0, 1e-12);
  EXPECT_NEAR(points.low_pct, 2.0 - 2.776 * std::sqrt(2.0 / 3.0), 1e-9);
  // A widely spread slowdown (one repetition 3x slower than the others) keeps its lower bound above
  // -100 % (on the means themselves it would be -104 %), and the spread makes it inconclusive.
  const ChangeEstimate spread = welch_change({1911.6, 2003.0, 2101.7}, {966.5, 924.1, 331.9});
  EXPECT_NEAR(spread.change_pct, -66.727, 1e-3);  // e^-1.100421 - 1
  EXPECT_GT(spread.low_pct, -100.0);
  EXPECT_GT(spread.high_pct, 0.0);
  EXPECT_THROW(welch_change({1}, {1, 2}), std::invalid_argument);
  EXPECT_THROW(welch_change({1, 0}, {1, 2}), std::invalid_argument);
}

TEST(WelchTest, IntervalOnThreeRepetitionsCoversTheTrueRatio) {
  // Repetitions whose speed varies by a factor (log-normal, sd 10 %), the second configuration
  // 20 % slower: the interval on 3 values a side should hold the true -20 % about 95 % of the time.
  std::mt19937_64 rng(20261124);
  std::normal_distribution<double> log_noise(0.0, 0.10);
  int covered = 0;
  const int trials = 2000;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> a, b;
    for (int i = 0; i < 3; ++i) {
      a.push_back(300.0 * std::exp(log_noise(rng)));
      b.push_back(240.0 * std::exp(log_noise(rng)));
    }
    const ChangeEstimate e = welch_change(a, b);
    ASSERT_LE(e.low_pct, e.change_pct);
    ASSERT_GE(e.high_pct, e.change_pct);
    if (e.low_pct <= -20.0 && -20.0 <= e.high_pct) ++covered;
  }
  const double coverage = static_cast<double>(covered) / trials;
  EXPECT_GT(coverage, 0.93) << coverage;
  EXPECT_LT(coverage, 0.99) << coverage;
}

TEST(WelchTest, StudentQuantilesFromTheTable) {
  EXPECT_DOUBLE_EQ(student_t_975(4), 2.776);
  EXPECT_DOUBLE_EQ(student_t_975(30), 2.042);
  EXPECT_NEAR(student_t_975(1e9), 1.960, 1e-6);
  EXPECT_GT(student_t_975(11), 2.179);  // between the 10 and 12 rows
  EXPECT_LT(student_t_975(11), 2.228);
}

// Paired robust interval (median of the per-pair log-ratios, MAD-based half-width), hand-computed:
// ratios 1.10 1.12 1.11: logs 0.09531 0.10436 0.11333, median 0.10436 (+11.0 %), MAD 0.00897,
// half = 4.303 x 1.2533 x 1.4826 x 0.00897 / sqrt(3) = 0.04141 -> [+6.50 %, +15.69 %].
TEST(PairedRobustTest, HandComputedIntervalOnThreeRounds) {
  const std::vector<double> a = {100, 200, 50}, b = {110, 224, 55.5};
  const stats::ChangeEstimate e = stats::paired_robust_change(a, b);
  EXPECT_NEAR(e.change_pct, 11.0, 1e-9);
  EXPECT_NEAR(e.low_pct, 6.50, 0.01);
  EXPECT_NEAR(e.high_pct, 15.69, 0.01);
  EXPECT_EQ(e.pairs, 3);
}

// One wild round (ratio 5.0) among 1.10 1.12 1.11: the median moves to (0.10436 + 0.11333) / 2
// (+11.50 %), MAD (0.004485 + 0.013535) / 2 = 0.00901, half = 3.182 x 1.2533 x 1.4826 x 0.00901 / 2
// = 0.02664 -> [+8.57 %, +14.51 %]: narrower than the three clean rounds alone, where Welch's
// interval on the same rounds runs [-51 %, +435 %].
TEST(PairedRobustTest, OneWildRoundDoesNotWidenTheInterval) {
  const std::vector<double> a = {1, 1, 1, 1}, b = {1.10, 1.12, 1.11, 5.0};
  const stats::ChangeEstimate robust = stats::paired_robust_change(a, b);
  EXPECT_NEAR(robust.change_pct, 11.50, 0.01);
  EXPECT_NEAR(robust.low_pct, 8.57, 0.01);
  EXPECT_NEAR(robust.high_pct, 14.51, 0.01);
  const stats::ChangeEstimate clean = stats::paired_robust_change({1, 1, 1}, {1.10, 1.12, 1.11});
  EXPECT_LE(robust.high_pct - robust.low_pct, 1.5 * (clean.high_pct - clean.low_pct));
  const stats::ChangeEstimate welch = stats::welch_change(a, b);
  EXPECT_GT(welch.high_pct - welch.low_pct, 400.0);
}

// Two of five pairs far from three that agree (a quiet recsys lab's compile ratios on a shared VM):
// the MAD is 0.007, so the MAD interval alone was [+32.7 %, +37.5 %]; the middle pairs (2nd lowest
// 0.95, 2nd highest 1.36) widen it to [-5 %, +37.5 %]. With 20 pairs the sign test's rank is 6.
TEST(PairedRobustTest, TwoDissentingPairsWidenTheInterval) {
  const std::vector<double> a = {331.0, 431.7, 356.6, 418.2, 297.9}, b = {448.6, 408.3, 485.3, 334.8, 402.3};
  const stats::ChangeEstimate e = stats::paired_robust_change(a, b);
  EXPECT_NEAR(e.change_pct, 35.04, 0.05);
  EXPECT_NEAR(e.low_pct, 100.0 * (408.3 / 431.7 - 1), 1e-6);
  EXPECT_GT(e.high_pct, 36.0);
  std::vector<double> ones(20, 1.0), ratios;
  for (int k = 1; k <= 20; ++k) ratios.push_back(1.0 + 0.01 * k);  // +1 % ... +20 %
  const stats::ChangeEstimate twenty = stats::paired_robust_change(ones, ratios);
  EXPECT_LE(twenty.low_pct, 6.0 + 1e-9);   // x(6) = +6 % at most
  EXPECT_GE(twenty.high_pct, 15.0 - 1e-9);  // x(15) = +15 % at least
}

// Pairing: round k of A against round k of B. A machine that drifts 2x between rounds moves both
// sides alike, so the paired ratios stay 1.2 and the interval is empty at +20 %.
TEST(PairedRobustTest, PairsCancelDriftBetweenRounds) {
  const stats::ChangeEstimate e = stats::paired_robust_change({100, 50, 200}, {120, 60, 240});
  EXPECT_NEAR(e.change_pct, 20.0, 1e-9);
  EXPECT_NEAR(e.low_pct, 20.0, 1e-9);
  EXPECT_NEAR(e.high_pct, 20.0, 1e-9);
}

// Points (relative = false): plain differences; extra values on the longer side are left out;
// MAD 0 with pairs that differ falls back to the mean deviation; bad input throws.
TEST(PairedRobustTest, PointsUnequalSidesAndBadInput) {
  // Differences 2, 2, 5 (the 4th value of b has no pair): median 2, MAD 0 -> sigma 1.2533 x mean deviation 1,
  // half = 4.303 x 1.2533 x 1.2533 / sqrt(3) = 3.9022.
  const stats::ChangeEstimate e = stats::paired_robust_change({10, 20, 30}, {12, 22, 35, 99}, false);
  EXPECT_EQ(e.pairs, 3);
  EXPECT_NEAR(e.change_pct, 2.0, 1e-9);
  EXPECT_NEAR(e.low_pct, 2.0 - 3.9022, 1e-3);
  EXPECT_NEAR(e.high_pct, 2.0 + 3.9022, 1e-3);
  EXPECT_THROW(stats::paired_robust_change({1}, {2}), std::invalid_argument);
  EXPECT_THROW(stats::paired_robust_change({1, 0}, {2, 2}), std::invalid_argument);
}

}  // namespace
}  // namespace trainlab::stats
