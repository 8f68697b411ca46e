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
