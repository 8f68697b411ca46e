// Helpers over per-step series (step times, memory, positions of slow steps) that the rules and the
// verdict share: mean/median, outliers beyond mean + k sigma, moving-average growth, and
// detection of a fixed period in a list of step numbers. Pure functions. No LibTorch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace trainlab::series {

// 0 for an empty series.
double mean(const std::vector<double>& values);
// Middle value (mean of the two middle ones for an even count); 0 for an empty series.
double median(const std::vector<double>& values);
// (The standard deviations are stats::stddev and stats::population_stddev, core/statistics.h.)

// Indices of the values strictly above mean + sigmas x stats::population_stddev, in order. Empty when
// there are fewer than 3 values or they are all equal. With one outlier among n values its z-score
// is at most (n-1)/sqrt(n), so 3 sigma needs n >= 11 before anything can be found.
std::vector<size_t> outliers_above(const std::vector<double>& values, double sigmas);

// The window of the moving average used by moving_average_growth_pct: max(3, n/10) values.
size_t growth_window(size_t n);

// How much the moving average rises from the first window to the last one, in % of the first:
// (mean(last w) - mean(first w)) / mean(first w) x 100 with w = growth_window(n). Negative when it
// falls. Empty when n < 2w (the windows would overlap), the first window's mean is not above 0, or
// a value is not finite.
std::optional<double> moving_average_growth_pct(const std::vector<double>& values);

struct Period {
  int64_t period_steps = 0;        // the period that explains the most positions
  int64_t matching_intervals = 0;  // its occurrences (anchor + k x period, first..last position) with a position within +-jitter
  int64_t intervals = 0;           // its occurrences between the first and the last position
  int64_t positions = 0;           // positions examined
  double share() const { return intervals > 0 ? static_cast<double>(matching_intervals) / intervals : 0; }
};

// A fixed period in step numbers (e.g. the slow steps of a run). Candidates: the distances between
// each position and the next three, at least min_period_steps; each position anchors a phase. A
// candidate's occurrences are anchor + k x period between the first and the last position; one
// matches when a position lies within +-jitter_steps. The candidate with the most matches wins
// (ties: the larger share, then the smaller period). Returned when at least 3 occurrences match,
// their share of the occurrences is at least min_share (0..1: a missed slow step is tolerated) and
// they hold at least two thirds of the positions (a few slow steps off the period, e.g. noise, are
// tolerated; a denser pattern is not mistaken for a multiple of its own period). Positions are
// sorted and deduplicated first.
std::optional<Period> find_period(std::vector<int64_t> positions, int64_t jitter_steps, int64_t min_period_steps,
                                  double min_share);

// A period found by folding a series (e.g. step times) onto itself: the values at one phase of the
// period stand above all others.
struct FoldedPeriod {
  int64_t period = 0;       // in values (steps)
  int64_t phase = 0;        // index (in the whole series) of the first in-phase value folded
  size_t in_phase = 0;      // how many values fall on the phase
  double in_median = 0;     // median of the in-phase values
  double out_median = 0;    // median of the others
};

// Where thresholding misses a periodic slow step because noise hides some of its occurrences (a
// shared, loaded machine), folding still sees it. For each period from min_period up (the smallest
// that qualifies wins; its phase with the largest in/out median ratio), the in-phase values qualify
// when there are at least min_in_phase of them, every one lies above the 75th percentile of the
// others, and their median lies above both the others' 90th percentile and their median x
// (1 + min_excess_pct / 100). Many periods and phases are tried, so min_in_phase keeps chance
// out: with 5 (periodic_slow_steps.min_folded_steps) simulated noise alone gave a period in 1 run of
// 100 (50 steps, 15 % noise) and in none of 20 of 500 steps. Empty when nothing qualifies.
// Bounded work on any run length: only the last kMaxFoldedValues values are folded, onto periods
// up to kMaxFoldPeriod (a slower callback is left to thresholding).
inline constexpr int64_t kMaxFoldedValues = 512;
inline constexpr int64_t kMaxFoldPeriod = 64;
std::optional<FoldedPeriod> fold_period(const std::vector<double>& values, int64_t min_period, size_t min_in_phase,
                                        double min_excess_pct);

}  // namespace trainlab::series
