// Bootstrap interval of a relative change, the paired robust interval (median and MAD), and the Mann-Whitney U test (normal approximation).
#include "core/comparison_stats.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <random>
#include <stdexcept>
#include <utility>

#include "core/statistics.h"

namespace trainlab::stats {

ChangeEstimate bootstrap_relative_change(const std::vector<double>& a, const std::vector<double>& b,
                                         const std::function<double(const std::vector<double>&)>& statistic,
                                         int iterations, double level, uint64_t seed, bool relative,
                                         size_t block_length) {
  if (a.empty() || b.empty()) throw std::invalid_argument("bootstrap: both samples need values");
  if (iterations < 100 || !(level > 0 && level < 1))
    throw std::invalid_argument("bootstrap: bad iterations or level");
  const auto change = [relative](double before, double after) {
    return relative ? 100.0 * (after - before) / before : after - before;
  };
  const double base = statistic(a);
  if (relative && base == 0) throw std::invalid_argument("bootstrap: the baseline statistic is 0");
  ChangeEstimate out;
  out.change_pct = change(base, statistic(b));
  out.iterations = iterations;
  std::mt19937_64 rng(seed);
  std::vector<double> changes;
  changes.reserve(static_cast<size_t>(iterations));
  std::vector<double> ra(a.size()), rb(b.size());
  // One resample: blocks of up to block_length consecutive values from random starts.
  const auto resample = [&rng, block_length](const std::vector<double>& from, std::vector<double>& to) {
    const size_t block = std::max<size_t>(1, std::min(block_length, from.size()));
    std::uniform_int_distribution<size_t> start(0, from.size() - block);
    for (size_t filled = 0; filled < to.size();) {
      const size_t s = start(rng);
      for (size_t k = 0; k < block && filled < to.size(); ++k) to[filled++] = from[s + k];
    }
  };
  for (int it = 0; it < iterations; ++it) {
    resample(a, ra);
    resample(b, rb);
    const double sa = statistic(ra);
    if (!relative || sa != 0) changes.push_back(change(sa, statistic(rb)));
  }
  out.low_pct = percentile(changes, 100.0 * (1.0 - level) / 2.0);
  out.high_pct = percentile(changes, 100.0 * (1.0 + level) / 2.0);
  return out;
}

double student_t_975(double df) {
  // df -> t(0.975), from the standard table; beyond 120 the normal 1.960.
  static const std::pair<double, double> kTable[] = {{1, 12.706}, {2, 4.303},  {3, 3.182},  {4, 2.776},
                                                     {5, 2.571},  {6, 2.447},  {7, 2.365},  {8, 2.306},
                                                     {9, 2.262},  {10, 2.228}, {12, 2.179}, {15, 2.131},
                                                     {20, 2.086}, {30, 2.042}, {60, 2.000}, {120, 1.980}};
  if (!(df >= 1)) return kTable[0].second;
  for (size_t i = 1; i < std::size(kTable); ++i) {
    if (df <= kTable[i].first) {
      // Linear in 1/df, which the quantile nearly is.
      const double x0 = 1.0 / kTable[i - 1].first, x1 = 1.0 / kTable[i].first, x = 1.0 / df;
      return kTable[i - 1].second + (kTable[i].second - kTable[i - 1].second) * (x - x0) / (x1 - x0);
    }
  }
  const double x0 = 1.0 / 120.0, x = 1.0 / df;
  return 1.960 + (1.980 - 1.960) * x / x0;
}

ChangeEstimate welch_change(const std::vector<double>& a, const std::vector<double>& b, bool relative) {
  if (a.size() < 2 || b.size() < 2) throw std::invalid_argument("Welch interval: 2 values a side needed");
  // Relative: on the logarithms, so the interval is one of the ratio of geometric means and a
  // slowdown's lower bound cannot fall below -100 % however wide the spread.
  std::vector<double> xa = a, xb = b;
  if (relative) {
    for (std::vector<double>* xs : {&xa, &xb}) {
      for (double& x : *xs) {
        if (!(x > 0)) throw std::invalid_argument("Welch interval: relative change needs positive values");
        x = std::log(x);
      }
    }
  }
  const double ma = mean(xa), mb = mean(xb);
  const double va = stddev(xa) * stddev(xa) / static_cast<double>(xa.size());
  const double vb = stddev(xb) * stddev(xb) / static_cast<double>(xb.size());
  const double se = std::sqrt(va + vb);
  const double df =
      se > 0 ? (va + vb) * (va + vb) /
                   (va * va / static_cast<double>(xa.size() - 1) + vb * vb / static_cast<double>(xb.size() - 1))
             : 1e9;
  const double half = student_t_975(df) * se;
  const auto as_change = [&](double difference) {
    return relative ? 100.0 * (std::exp(difference) - 1.0) : difference;
  };
  ChangeEstimate out;
  out.change_pct = as_change(mb - ma);
  out.low_pct = as_change(mb - ma - half);
  out.high_pct = as_change(mb - ma + half);
  return out;
}

namespace {

// The largest k whose sign-test interval [x(k), x(n+1-k)] for the median of n values covers at
// least 95 %: 2 x P(Binomial(n, 1/2) <= k - 1) <= 0.05. 1 (the whole range) below n = 9.
size_t sign_test_rank(size_t n) {
  size_t k = 1;
  double tail = std::pow(0.5, static_cast<double>(n));  // P(X <= 0)
  double term = tail;
  for (size_t j = 1; j < n; ++j) {
    term *= static_cast<double>(n - j + 1) / static_cast<double>(j);  // P(X = j)
    if (2 * (tail + term) > 0.05) break;
    tail += term;
    k = j + 1;
  }
  return k;
}

}  // namespace

ChangeEstimate paired_robust_change(const std::vector<double>& a, const std::vector<double>& b, bool relative) {
  const size_t n = std::min(a.size(), b.size());
  if (n < 2) throw std::invalid_argument("paired interval: 2 pairs needed");
  std::vector<double> differences;
  for (size_t k = 0; k < n; ++k) {
    if (relative && !(a[k] > 0 && b[k] > 0))
      throw std::invalid_argument("paired interval: relative change needs positive values");
    differences.push_back(relative ? std::log(b[k]) - std::log(a[k]) : b[k] - a[k]);
  }
  const double centre = median(differences);
  std::vector<double> deviations;
  for (double d : differences) deviations.push_back(std::abs(d - centre));
  double sigma = 1.4826 * median(deviations);
  if (sigma == 0) sigma = 1.2533 * mean(deviations);  // over half the pairs equal: the mean deviation
  const double half = student_t_975(static_cast<double>(n - 1)) * 1.2533 * sigma / std::sqrt(static_cast<double>(n));
  double low = centre - half, high = centre + half;
  if (n >= 4) {  // the interval holds the middle pairs: k-th lowest to k-th highest (see the header)
    std::vector<double> sorted = differences;
    std::sort(sorted.begin(), sorted.end());
    const size_t k = std::max<size_t>(2, sign_test_rank(n));
    low = std::min(low, sorted[k - 1]);
    high = std::max(high, sorted[n - k]);
  }
  const auto as_change = [relative](double difference) {
    return relative ? 100.0 * (std::exp(difference) - 1.0) : difference;
  };
  ChangeEstimate out;
  out.change_pct = as_change(centre);
  out.low_pct = as_change(low);
  out.high_pct = as_change(high);
  out.pairs = static_cast<int>(n);
  return out;
}

MannWhitney mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.empty() || b.empty()) throw std::invalid_argument("Mann-Whitney U: both samples need values");
  const double n1 = static_cast<double>(a.size()), n2 = static_cast<double>(b.size());
  // Ranks of the pooled samples, ties sharing their mean rank; tie groups for the variance.
  std::vector<std::pair<double, int>> pooled;
  for (double x : a) pooled.push_back({x, 0});
  for (double y : b) pooled.push_back({y, 1});
  std::sort(pooled.begin(), pooled.end());
  double rank_sum_a = 0, tie_term = 0;
  for (size_t i = 0; i < pooled.size();) {
    size_t j = i;
    while (j < pooled.size() && pooled[j].first == pooled[i].first) ++j;
    const double mean_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;
    const double t = static_cast<double>(j - i);
    tie_term += t * t * t - t;
    for (size_t k = i; k < j; ++k) {
      if (pooled[k].second == 0) rank_sum_a += mean_rank;
    }
    i = j;
  }
  MannWhitney out;
  out.u = rank_sum_a - n1 * (n1 + 1) / 2.0;
  const double n = n1 + n2;
  const double mean_u = n1 * n2 / 2.0;
  const double var_u = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1)));
  if (var_u <= 0) return out;  // every value equal: no evidence either way (z 0, p 1)
  const double diff = out.u - mean_u;
  const double corrected = std::max(0.0, std::abs(diff) - 0.5);  // continuity correction
  out.z = (diff < 0 ? -1.0 : 1.0) * corrected / std::sqrt(var_u);
  out.p_two_sided = std::erfc(std::abs(out.z) / std::sqrt(2.0));
  return out;
}

}  // namespace trainlab::stats
