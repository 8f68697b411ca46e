// Descriptive statistics over samples (step times, throughputs). Pure functions; no LibTorch.
#pragma once

#include <cstdint>
#include <vector>

namespace trainlab::stats {

double mean(const std::vector<double>& xs);
// The two standard deviations, the only ones in the code. 0 for fewer than two samples.
// Sample (n - 1 in the denominator): what is shown as "stddev" and what intervals (Student's t,
// Welch) take, since the values are a sample of the steps or runs the code could have measured.
double stddev(const std::vector<double>& xs);
// Population (n in the denominator): the spread of exactly these values, for thresholds over one
// series such as outliers above mean + k sigma (series::outliers_above, the step-outlier rule).
double population_stddev(const std::vector<double>& xs);
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
