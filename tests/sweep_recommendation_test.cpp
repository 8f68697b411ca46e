// sweep's recommendation: the cheapest point within tolerance of the best, recommended over the
// runner-up only where the paired rounds separate them (otherwise tied), and a caveat on one round.
#include <gtest/gtest.h>

#include <algorithm>

#include "harness/runner/sweep.h"

namespace trainlab {
namespace {

SweepFigures point(int workers, std::vector<double> rounds) {
  SweepFigures f;
  f.ok = true;
  f.workers = workers;
  f.prefetch = workers > 0 ? 2 : 0;
  f.batch_size = 32;
  f.round_samples_per_s = rounds;
  std::vector<double> sorted = rounds;
  std::sort(sorted.begin(), sorted.end());
  f.samples_per_s = sorted[sorted.size() / 2];
  return f;
}

// workers=2 beats workers=1 by +20 % in every round (the pass over the grid drifts 2x): separated.
TEST(SweepRecommendationTest, SeparatedTopPointsGiveARecommendation) {
  const auto rec = recommend_sweep_point({point(0, {50, 25, 50}), point(1, {100, 50, 100}), point(2, {120, 60, 120})},
                                         5, 20);
  ASSERT_TRUE(rec);
  EXPECT_FALSE(rec->tied);
  EXPECT_EQ(rec->index, 2u);
  EXPECT_NE(rec->reason.find("ahead of the runner-up (workers=1 prefetch=2 pin=off, 100.0 samples/s) by +20.0 %"),
            std::string::npos)
      << rec->reason;
}

// The sweep: the best point ahead in one round, behind in another: tied, no recommendation.
TEST(SweepRecommendationTest, TopPointsWhoseRoundsDisagreeAreTied) {
  const auto rec = recommend_sweep_point({point(1, {100, 29, 104}), point(2, {120, 11.6, 98})}, 5, 20);
  ASSERT_TRUE(rec);
  EXPECT_TRUE(rec->tied);
  EXPECT_NE(rec->reason.find("tied with the runner-up"), std::string::npos) << rec->reason;
  EXPECT_NE(rec->reason.find("over 3 paired rounds holds no change"), std::string::npos) << rec->reason;
}

// One round: a recommendation with the caveat that nothing measured the noise.
TEST(SweepRecommendationTest, OneRoundSaysItCannotTellTheTopPointsApart) {
  const auto rec = recommend_sweep_point({point(1, {4.0}), point(2, {29.0}), point(3, {11.6})}, 5, 20);
  ASSERT_TRUE(rec);
  EXPECT_FALSE(rec->tied);
  EXPECT_EQ(rec->index, 1u);
  EXPECT_NE(rec->reason.find("from one round, which cannot tell it from the runner-up"), std::string::npos)
      << rec->reason;
}

// An input-bound best point: what the reading says of more workers depends on what the grid holds
// of them (measured and no better, failed, none).
TEST(SweepRecommendationTest, AnInputBoundAnswerSaysWhetherMoreWorkersWereMeasuredFailedOrAbsent) {
  SweepFigures zero = point(0, {500, 510, 505});
  zero.data_wait_pct = 46;
  SweepFigures two = point(2, {400, 410, 405});
  two.data_wait_pct = 40;
  SweepFigures failed = point(2, {0, 0, 0});
  failed.ok = false;  // e.g. a Dataset spawned workers cannot unpickle
  const auto measured = recommend_sweep_point({zero, two}, 5, 20);
  ASSERT_TRUE(measured);
  EXPECT_NE(measured->reason.find("more workers do not remove it here"), std::string::npos) << measured->reason;
  const auto refused = recommend_sweep_point({zero, failed}, 5, 20);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->index, 0u);
  EXPECT_NE(refused->reason.find("more workers could not be measured: the job failed with them"), std::string::npos)
      << refused->reason;
  EXPECT_EQ(refused->reason.find("more workers do not remove it"), std::string::npos) << refused->reason;
  const auto alone = recommend_sweep_point({zero}, 5, 20);
  ASSERT_TRUE(alone);
  EXPECT_NE(alone->reason.find("no point with more workers was in the grid"), std::string::npos) << alone->reason;
}

}  // namespace
}  // namespace trainlab
