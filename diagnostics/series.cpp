// Series helpers of diagnostics/series.h: plain loops over doubles, no allocation beyond copies.
#include "diagnostics/series.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

namespace trainlab::series {

double mean(const std::vector<double>& values) {
  if (values.empty()) return 0;
  double sum = 0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

double median(const std::vector<double>& values) {
  if (values.empty()) return 0;
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
}

double stddev(const std::vector<double>& values) {
  if (values.size() < 2) return 0;
  const double m = mean(values);
  double sum_sq = 0;
  for (double v : values) sum_sq += (v - m) * (v - m);
  return std::sqrt(sum_sq / static_cast<double>(values.size()));
}

std::vector<size_t> outliers_above(const std::vector<double>& values, double sigmas) {
  std::vector<size_t> out;
  if (values.size() < 3) return out;
  const double sd = stddev(values);
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

std::optional<Period> find_period(std::vector<int64_t> positions, int64_t jitter_steps, int64_t min_period_steps,
                                  double min_share) {
  std::sort(positions.begin(), positions.end());
  positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
  if (positions.size() < 3) return std::nullopt;
  std::vector<int64_t> gaps;
  for (size_t i = 1; i < positions.size(); ++i) gaps.push_back(positions[i] - positions[i - 1]);

  std::map<int64_t, int64_t> exact;  // gap -> how often it occurs exactly (also the candidates, sorted)
  for (int64_t gap : gaps) ++exact[gap];

  std::optional<Period> best;
  int64_t best_exact = 0;
  for (const auto& [candidate, exact_count] : exact) {
    if (candidate < min_period_steps) continue;
    int64_t matching = 0;
    for (int64_t gap : gaps) {
      if (std::llabs(gap - candidate) <= jitter_steps) ++matching;
    }
    // Candidates come in increasing order, so strict comparisons keep the smaller period on a tie.
    if (!best || matching > best->matching_intervals ||
        (matching == best->matching_intervals && exact_count > best_exact)) {
      best = Period{candidate, matching, static_cast<int64_t>(gaps.size())};
      best_exact = exact_count;
    }
  }
  if (!best || best->share() < min_share) return std::nullopt;
  return best;
}

}  // namespace trainlab::series
