// Tests of the lab's disturbance guard (which repetition is run again, and the words it says) and of
// what its rounds budget counts (measured steps only), on made-up records.
#include <gtest/gtest.h>

#include "core/run_record.h"
#include "diagnostics/thresholds.h"
#include "harness/runner/lab.h"

namespace trainlab {
namespace {

// A completed repetition with `measured` steps of `step_ms` each after one warm-up step of 5 s.
VariantRecord repetition(int measured, double step_ms) {
  VariantRecord v;
  v.spec.batch_size = 8;
  StepRecord warmup;
  warmup.warmup = true;
  warmup.step_ns = 5'000'000'000;
  v.steps.push_back(warmup);
  for (int i = 0; i < measured; ++i) {
    StepRecord s;
    s.index = i + 1;
    s.step_ns = static_cast<int64_t>(step_ms * 1e6);
    v.steps.push_back(s);
  }
  return v;
}

TEST(LabDisturbance, PastTheLimitsSaysWhatTookTheCpu) {
  const Thresholds& limits = Thresholds::defaults();
  VariantRecord v = repetition(10, 100);  // 1 s measured
  EXPECT_EQ(disturbance_past_limit(v, limits), "");  // nothing measured: nothing judged
  v.disturbance.other_cpu_pct = 24.9;
  v.disturbance.runqueue_wait_pct = 10;
  v.disturbance.steal_pct = 0;
  EXPECT_EQ(disturbance_past_limit(v, limits), "");  // under every limit
  // Others took half the CPU but the run's threads hardly waited (it left a core idle): not slowed.
  v.disturbance.other_cpu_pct = 48.2;
  EXPECT_EQ(disturbance_past_limit(v, limits), "");
  v.disturbance.other_cpu_pct = 5;
  v.disturbance.steal_pct = 12;
  EXPECT_EQ(disturbance_past_limit(v, limits), "the hypervisor stole 12 % of the CPU");
  v.disturbance.steal_pct = 0;
  v.disturbance.runqueue_wait_pct = 40;
  v.disturbance.other_cpu_pct = 48.2;
  EXPECT_EQ(
      disturbance_past_limit(v, limits),
      "another process took 48 % of the CPU (its threads waited for a CPU 40 % of the time they wanted one)");
  // Without schedstat the other processes' share decides.
  VariantRecord unread = v;
  unread.disturbance.runqueue_wait_pct.reset();
  EXPECT_EQ(disturbance_past_limit(unread, limits), "another process took 48 % of the CPU");
  unread.disturbance.other_cpu_pct = 24.9;
  EXPECT_EQ(disturbance_past_limit(unread, limits), "");
  // Its own threads past the cores: a long wait with others taking little is the run's own.
  VariantRecord own = v;
  own.disturbance.other_cpu_pct = 3;
  EXPECT_EQ(disturbance_past_limit(own, limits), "");
  // A data-parallel variant's ranks wait on each other: not judged.
  VariantRecord ranks = v;
  ranks.world_size = 2;
  EXPECT_EQ(disturbance_past_limit(ranks, limits), "");
  // Too short a measurement to judge (0.4 s: /proc/stat's ticks make it noise), and a failed one.
  VariantRecord brief = repetition(4, 100);
  brief.disturbance = v.disturbance;
  EXPECT_EQ(disturbance_past_limit(brief, limits), "");
  v.error = "boom";
  EXPECT_EQ(disturbance_past_limit(v, limits), "");
}

TEST(LabDisturbance, TheRoundsBudgetCountsMeasuredStepsOnly) {
  std::vector<VariantRecord> round = {repetition(10, 100), repetition(20, 50)};
  round[0].init_ns = 55'000'000'000;  // 55 s of Inductor compile: not measurement
  round[1].compile_info.compile_s = 55;
  VariantRecord failed;
  failed.error = "boom";
  round.push_back(failed);
  EXPECT_DOUBLE_EQ(measured_loop_s(round, 0), 2.0);  // 1 s + 1 s; the 5 s warm-up steps left out
  EXPECT_DOUBLE_EQ(measured_loop_s(round, 1), 1.0);
  EXPECT_DOUBLE_EQ(measured_loop_s(round, 3), 0.0);
}

}  // namespace
}  // namespace trainlab
