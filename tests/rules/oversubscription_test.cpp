// The rule oversubscription (diagnostics/rules/oversubscription.cpp) on hand-built Summaries: on both sides of its
// thresholds (fires or not, severity, suspect, change, evidence equal to the inputs, saving), and silent
// when its inputs are absent.
#include "rule_test_support.h"

#include <gtest/gtest.h>

#include "diagnostics/verdict.h"

namespace trainlab::rule_test {
namespace {

TEST(RulesTest, OversubscribedRanksAreNamedAndTakePrecisionsPlace) {
  Summary s = fp32_run({0, 0, 90, 0, 5, 5});
  s.logical_cores = 2;
  s.world_size = 2;
  s.intra_op_threads = 2;  // 2 ranks x 2 threads on 2 cores
  auto f = find(s, "oversubscription");
  ASSERT_TRUE(fired_as(f, Severity::kHigh, Suspect::kFrameworkOverhead, "fewer_threads"));
  EXPECT_TRUE(has_evidence(*f, "rank_threads", 4, 2));
  EXPECT_NE(f->title.find("2 ranks x 2 threads = 4 threads on 2 cores"), std::string::npos) << f->title;
  EXPECT_FALSE(find(s, "precision"));  // the compute share is threads waiting, not GEMMs bf16 would speed up
  EXPECT_NEAR(f->saving_pct, 45.0, 1e-9);  // 90 % compute, half of it waiting: 1 - 2 cores / 4 threads
  // The verdict names it: framework overhead, not model compute, with the fix as the first action.
  const Verdict v = decide(s, run_rules(s, Thresholds::defaults()), Thresholds::defaults());
  EXPECT_EQ(v.primary, Suspect::kFrameworkOverhead);
  EXPECT_NE(v.headline.find("oversubscribed"), std::string::npos) << v.headline;
  ASSERT_FALSE(v.actions.empty());
  EXPECT_EQ(v.actions.front().rule_id, "oversubscription");

  s.intra_op_threads = 1;  // 2 x 1 on 2 cores: fits
  EXPECT_FALSE(find(s, "oversubscription"));
  EXPECT_TRUE(find(s, "precision"));
  s.intra_op_threads = 2;
  s.world_size = 1;  // one process with all the cores: LibTorch's default
  EXPECT_FALSE(find(s, "oversubscription"));
  s.world_size = 2;
  s.on_gpu = true;  // GPU ranks: the host threads feed kernels
  EXPECT_FALSE(find(s, "oversubscription"));
}

// A job across machines: only the ranks that share this machine share its cores.
TEST(RulesTest, OversubscriptionCountsTheRanksOnThisMachineNotTheJobs) {
  Summary s = quiet();
  s.shares = {0, 0, 90, 0, 5, 5};
  s.logical_cores = 2;
  s.world_size = 4;
  s.intra_op_threads = 1;
  EXPECT_TRUE(find(s, "oversubscription"));  // 4 ranks on one machine of 2 cores
  s.ranks_on_machine = 2;                     // 2 machines x 2 ranks, 1 thread each: fits
  EXPECT_FALSE(find(s, "oversubscription"));
  s.intra_op_threads = 2;
  auto f = find(s, "oversubscription");
  ASSERT_TRUE(f);
  EXPECT_NE(f->title.find("2 ranks on this machine x 2 threads = 4 threads on 2 cores"), std::string::npos) << f->title;
  EXPECT_NE(f->recommendation.find("Give each rank 1 intra-op thread"), std::string::npos) << f->recommendation;
}

}  // namespace
}  // namespace trainlab::rule_test
