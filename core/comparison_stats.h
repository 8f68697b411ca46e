// Statistics for comparing two sets of measurements (before / after): a percentile bootstrap
// interval for the relative change of a statistic, and the Mann-Whitney U test. Pure functions,
// deterministic for a given seed; no LibTorch.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace trainlab::stats {

struct ChangeEstimate {
  double change_pct = 0;    // (stat(b) - stat(a)) / stat(a) x 100, or stat(b) - stat(a) when not relative
  double low_pct = 0;       // the interval's bounds, same units
  double high_pct = 0;
  int iterations = 0;
  int pairs = 0;            // paired_robust_change: the pairs it used
};

// Resamples a and b independently (with replacement) `iterations` times and takes the
// (1-level)/2 and (1+level)/2 percentiles of the relative change of `statistic` (or of the plain
// difference with relative = false, for shares already in percent). block_length > 1 resamples
// contiguous blocks of that many values (the moving-block bootstrap), for series whose neighbours
// are correlated, such as the steps of one run drifting with the machine. Throws
// std::invalid_argument when a or b is empty or, relative, stat(a) is 0.
ChangeEstimate bootstrap_relative_change(const std::vector<double>& a, const std::vector<double>& b,
                                         const std::function<double(const std::vector<double>&)>& statistic,
                                         int iterations = 2000, double level = 0.95, uint64_t seed = 12345,
                                         bool relative = true, size_t block_length = 1);

// Welch's t interval (95 %) for a change between few values a side (repetitions of a run), where a
// bootstrap has too few distinct resamples and runs narrow. Relative: computed on the logarithms,
// so it is the change of the geometric mean (always above -100 %); otherwise the plain difference
// of the means. Needs 2+ values a side; throws std::invalid_argument otherwise or when, relative,
// a value is not positive.
ChangeEstimate welch_change(const std::vector<double>& a, const std::vector<double>& b, bool relative = true);

// The gain of B over A from paired repetitions (round k of A with round k of B: the lab and run --ab
// interleave A B A B, so the k-th pair shared the machine's state). Each pair gives one log-ratio
// (relative) or one difference (relative = false, for shares in points); pairs beyond the shorter side
// are left out. The estimate is the median of those; the 95 % interval is
//   median +- t(n-1) x 1.2533 x 1.4826 x MAD / sqrt(n)
// (MAD: median absolute deviation from the median; 1.4826 x MAD estimates the standard deviation of
// normal data, 1.2533 = sqrt(pi/2) turns it into the median's standard error). Why this and not a
// distribution-free interval: with n pairs the Wilcoxon signed-rank (Walsh averages) and sign-test
// intervals reach 95 % only from n = 6, and below that their widest interval is [min, max] of the
// pairs with coverage 75 % (n = 3), 87.5 % (4), 93.8 % (5): one disturbed round then sets a bound.
// The lab runs 3-5 rounds, so the interval is the robust analogue of Student's t: approximately 95 %
// for rounds that scatter normally, and one wild round moves the median and the MAD by at most one
// order statistic each (breakdown point 50 % from n = 3), where it moves a mean and a standard deviation
// without bound (Welch's interval on 1.10 1.12 1.11 5.0 against 1.0: [-51 %, +435 %]; this one:
// [+8.6 %, +14.5 %]). With 2 pairs there is no robustness (the median is the mean) and t(1) makes the
// interval wide. MAD 0 (more than half the pairs equal) falls back to the mean absolute deviation, so
// the interval is empty only when every pair agrees. From 4 pairs the interval also holds the middle
// pairs, from the k-th lowest to the k-th highest: k is the sign test's 95 % rank from 9 pairs, 2
// below (one wild pair at each end still moves nothing). The MAD alone read a lab's 5 compile ratios
// 1.36 0.95 1.36 0.80 1.35 as +35.0 % [+32.7, +37.5]: three pairs that agree make the MAD tiny
// however far the other two lie; the middle pairs make it [-5.4 %, +37.5 %], and the lab ran on.
// Needs 2+ pairs; throws std::invalid_argument
// otherwise or when, relative, a value is not positive.
ChangeEstimate paired_robust_change(const std::vector<double>& a, const std::vector<double>& b, bool relative = true);

// The 97.5 % quantile of Student's t with `df` degrees of freedom (table, linear in 1/df between rows).
double student_t_975(double df);

struct MannWhitney {
  double u = 0;             // U of the first sample: pairs (x in a, y in b) with x > y, ties counting 1/2
  double z = 0;             // normal approximation with tie correction and continuity correction
  double p_two_sided = 1;
};

// Two-sided test that one sample tends to be larger than the other. Normal approximation (fine
// from ~8 samples a side; the caller warns below that). Throws std::invalid_argument on an empty side.
MannWhitney mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace trainlab::stats
