// Descriptive statistics over samples (step times, throughputs). Pure functions; no LibTorch.
#pragma once

#include <cstdint>
#include <vector>

namespace trainlab::stats {

double mean(const std::vector<double>& xs);
// Sample standard deviation (n - 1 in the denominator); 0 for fewer than two samples.
double stddev(const std::vector<double>& xs);
// Percentile with linear interpolation between closest ranks (numpy's default, "linear").
// p in [0, 100]. Throws std::invalid_argument on an empty input or p out of range.
double percentile(std::vector<double> xs, double p);
double median(const std::vector<double>& xs);
// exp(mean(log x)): the mean of ratios and rates. Throws std::invalid_argument on no samples.
double geometric_mean(const std::vector<double>& xs);
double min(const std::vector<double>& xs);
double max(const std::vector<double>& xs);

std::vector<double> to_doubles(const std::vector<int64_t>& xs);

}  // namespace trainlab::stats
