// Statistics helpers against hand-computed values.
#include "core/statistics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace trainlab::stats {
namespace {

TEST(StatisticsTest, MeanAndBothStddevs) {
  const std::vector<double> xs = {2, 4, 4, 4, 5, 5, 7, 9};
  EXPECT_DOUBLE_EQ(mean(xs), 5.0);
  // sum of squared deviations = 32; / (n - 1 = 7)
  EXPECT_NEAR(stddev(xs), std::sqrt(32.0 / 7.0), 1e-12);
  EXPECT_DOUBLE_EQ(stddev({3.0}), 0.0);
  // population: / n = 8
  EXPECT_DOUBLE_EQ(population_stddev(xs), 2.0);
  EXPECT_DOUBLE_EQ(population_stddev({3.0}), 0.0);
}

TEST(StatisticsTest, GeometricMeanOfRates) {
  EXPECT_NEAR(stats::geometric_mean({2, 8}), 4.0, 1e-12);         // sqrt(16)
  EXPECT_NEAR(stats::geometric_mean({1, 10, 100}), 10.0, 1e-12);  // cube root of 1000
  EXPECT_THROW(stats::geometric_mean({}), std::invalid_argument);
}

TEST(StatisticsTest, PercentileInterpolatesLikeNumpyLinear) {
  const std::vector<double> xs = {15, 20, 35, 40, 50};
  EXPECT_DOUBLE_EQ(percentile(xs, 0), 15);
  EXPECT_DOUBLE_EQ(percentile(xs, 100), 50);
  EXPECT_DOUBLE_EQ(percentile(xs, 50), 35);
  // rank = 0.4 * 4 = 1.6 -> 20 + 0.6 * (35 - 20) = 29
  EXPECT_DOUBLE_EQ(percentile(xs, 40), 29);
  // rank = 0.95 * 4 = 3.8 -> 40 + 0.8 * 10 = 48
  EXPECT_DOUBLE_EQ(percentile(xs, 95), 48);
  EXPECT_DOUBLE_EQ(median({5, 1, 3, 2}), 2.5);  // order does not matter
}

TEST(StatisticsTest, RejectsEmptyAndOutOfRange) {
  EXPECT_THROW(mean({}), std::invalid_argument);
  EXPECT_THROW(percentile({}, 50), std::invalid_argument);
  EXPECT_THROW(percentile({1, 2}, 101), std::invalid_argument);
  EXPECT_THROW(percentile({1, 2}, -1), std::invalid_argument);
}

}  // namespace
}  // namespace trainlab::stats
