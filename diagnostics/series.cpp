// Series helpers of diagnostics/series.h: plain loops over doubles, no allocation beyond copies.
#include "diagnostics/series.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "core/statistics.h"

namespace trainlab::series {

// Empty series are 0 here (stats:: throws on them); otherwise the shared definitions.
double mean(const std::vector<double>& values) { return values.empty() ? 0 : stats::mean(values); }

double median(const std::vector<double>& values) { return values.empty() ? 0 : stats::median(values); }

std::vector<size_t> outliers_above(const std::vector<double>& values, double sigmas) {
  std::vector<size_t> out;
  if (values.size() < 3) return out;
  const double sd = stats::population_stddev(values);
  if (!(sd > 0)) return out;
  const double limit = mean(values) + sigmas * sd;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] > limit) out.push_back(i);
  }
  return out;
}

size_t growth_window(size_t n) { return std::max<size_t>(3, n / 10); }

std::optional<double> moving_average_growth_pct(const std::vector<double>& values) {
  const size_t n = values.size();
  const size_t w = growth_window(n);
  if (n < 2 * w) return std::nullopt;
  for (double v : values) {
    if (!std::isfinite(v)) return std::nullopt;
  }
  double first = 0, last = 0;
  for (size_t i = 0; i < w; ++i) {
    first += values[i];
    last += values[n - w + i];
  }
  first /= static_cast<double>(w);
  last /= static_cast<double>(w);
  if (!(first > 0)) return std::nullopt;
  return (last - first) / first * 100.0;
}

std::optional<Period> find_period(std::vector<int64_t> positions, int64_t jitter_steps,
                                  int64_t min_period_steps, double min_share) {
  std::sort(positions.begin(), positions.end());
  positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
  if (positions.size() < 3) return std::nullopt;
  const int64_t first = positions.front(), last = positions.back();
  std::set<int64_t> candidates;  // sorted: ties keep the smaller period
  for (size_t i = 0; i < positions.size(); ++i) {
    for (size_t j = i + 1; j < positions.size() && j <= i + 3; ++j) {
      if (positions[j] - positions[i] >= std::max<int64_t>(1, min_period_steps))
        candidates.insert(positions[j] - positions[i]);
    }
  }
  const auto has_position_near = [&](int64_t at) {
    const auto it = std::lower_bound(positions.begin(), positions.end(), at - jitter_steps);
    return it != positions.end() && *it <= at + jitter_steps;
  };
  std::optional<Period> best;
  for (int64_t period : candidates) {
    for (int64_t anchor : positions) {
      int64_t occurrences = 0, matching = 0;
      for (int64_t at = anchor - ((anchor - first) / period) * period; at <= last; at += period) {
        ++occurrences;
        if (has_position_near(at)) ++matching;
      }
      const Period p{period, matching, occurrences, static_cast<int64_t>(positions.size())};
      if (!best || matching > best->matching_intervals ||
          (matching == best->matching_intervals && p.share() > best->share())) {
        best = p;
      }
    }
  }
  if (!best || best->matching_intervals < 3 || best->share() < min_share ||
      3 * best->matching_intervals < 2 * best->positions) {
    return std::nullopt;
  }
  return best;
}

std::optional<FoldedPeriod> fold_period(const std::vector<double>& values, int64_t min_period, size_t min_in_phase,
                                        double min_excess_pct) {
  if (min_in_phase < 2 || min_period < 2) return std::nullopt;
  // The last kMaxFoldedValues values, periods up to kMaxFoldPeriod: bounded work on any run length.
  const int64_t total = static_cast<int64_t>(values.size());
  const int64_t first = std::max<int64_t>(0, total - kMaxFoldedValues);
  const std::vector<double> tail(values.begin() + first, values.end());
  const int64_t n = static_cast<int64_t>(tail.size());
  for (int64_t period = min_period;
       period <= kMaxFoldPeriod && period * static_cast<int64_t>(min_in_phase) <= n + period - 1; ++period) {
    std::optional<FoldedPeriod> best;
    for (int64_t phase = 0; phase < period; ++phase) {
      std::vector<double> in, out;
      for (int64_t i = 0; i < n; ++i) (i % period == phase ? in : out).push_back(tail[i]);
      if (in.size() < min_in_phase || out.size() < 2) continue;
      const double out_median = median(out);
      if (!(out_median > 0)) continue;
      if (*std::min_element(in.begin(), in.end()) <= stats::percentile(out, 75)) continue;
      const double in_median = median(in);
      if (in_median <= stats::percentile(out, 90) || in_median < out_median * (1.0 + min_excess_pct / 100.0)) continue;
      if (!best || in_median / out_median > best->in_median / best->out_median) {
        best = FoldedPeriod{period, first + phase, in.size(), in_median, out_median};
      }
    }
    if (best) return best;
  }
  return std::nullopt;
}

}  // namespace trainlab::series
