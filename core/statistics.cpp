// Descriptive statistics: mean, sample standard deviation, interpolated percentiles.
#include "core/statistics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace trainlab::stats {

double mean(const std::vector<double>& xs) {
  if (xs.empty()) throw std::invalid_argument("mean of no samples");
  return std::accumulate(xs.begin(), xs.end(), 0.0) / static_cast<double>(xs.size());
}

double geometric_mean(const std::vector<double>& xs) {
  if (xs.empty()) throw std::invalid_argument("geometric mean of no samples");
  double log_sum = 0;
  for (double x : xs) log_sum += std::log(x);
  return std::exp(log_sum / static_cast<double>(xs.size()));
}

namespace {
double sum_of_squared_deviations(const std::vector<double>& xs) {
  const double m = mean(xs);
  double sum_sq = 0.0;
  for (double x : xs) sum_sq += (x - m) * (x - m);
  return sum_sq;
}
}  // namespace

double stddev(const std::vector<double>& xs) {
  if (xs.size() < 2) return 0.0;
  return std::sqrt(sum_of_squared_deviations(xs) / static_cast<double>(xs.size() - 1));
}

double population_stddev(const std::vector<double>& xs) {
  if (xs.size() < 2) return 0.0;
  return std::sqrt(sum_of_squared_deviations(xs) / static_cast<double>(xs.size()));
}

double percentile(std::vector<double> xs, double p) {
  if (xs.empty()) throw std::invalid_argument("percentile of no samples");
  if (!(p >= 0.0 && p <= 100.0)) throw std::invalid_argument("percentile outside [0, 100]");
  std::sort(xs.begin(), xs.end());
  const double rank = p / 100.0 * static_cast<double>(xs.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, xs.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return xs[lo] + (xs[hi] - xs[lo]) * frac;
}

double median(const std::vector<double>& xs) { return percentile(xs, 50.0); }

double min(const std::vector<double>& xs) {
  if (xs.empty()) throw std::invalid_argument("min of no samples");
  return *std::min_element(xs.begin(), xs.end());
}

double max(const std::vector<double>& xs) {
  if (xs.empty()) throw std::invalid_argument("max of no samples");
  return *std::max_element(xs.begin(), xs.end());
}

std::vector<double> to_doubles(const std::vector<int64_t>& xs) {
  return std::vector<double>(xs.begin(), xs.end());
}

}  // namespace trainlab::stats
