// Tests of the lab's disturbance guard (which repetition is run again, and the words it says) and of
// what its rounds budget counts (measured steps only), on made-up records.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <optional>

#include "core/run_record.h"
#include "diagnostics/thresholds.h"
#include "harness/runner/lab.h"
#include "profiler/disturbance.h"

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

// The threads that fit beside other processes: a core they keep busy half the time or more is
// theirs; at least one thread is left.
TEST(LabDisturbance, ThreadsLeftBesideOthersCountTheCoresTheyHold) {
  EXPECT_EQ(threads_left_beside(2, 0.0), 2);
  EXPECT_EQ(threads_left_beside(2, 0.3), 2);   // a nice'd build's share: not a core
  EXPECT_EQ(threads_left_beside(2, 0.5), 1);
  EXPECT_EQ(threads_left_beside(2, 1.02), 1);  // `yes` on one core
  EXPECT_EQ(threads_left_beside(2, 2.0), 1);   // never none
  EXPECT_EQ(threads_left_beside(16, 3.4), 13);
  EXPECT_EQ(threads_left_beside(16, -0.1), 16);
}

// On the real /proc: a child burning a core is seen as (most of) a core kept busy by others, of the
// machine's cores; the sampling process itself idles and is not counted.
TEST(LabDisturbance, OthersLoadSeesAProcessBurningACore) {
  const pid_t burner = ::fork();
  if (burner == 0) {
    volatile uint64_t spin = 0;
    for (;;) spin = spin + 1;
  }
  ASSERT_GT(burner, 0);
  const std::optional<OthersLoad> load = sample_others_load(1000);
  ::kill(burner, SIGKILL);
  ::waitpid(burner, nullptr, 0);
  ASSERT_TRUE(load.has_value());
  EXPECT_EQ(load->machine_cores, static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)));
  // Beside other tests on 2 cores the burner gets at least half of one.
  EXPECT_GT(load->busy_cores, 0.5);
  EXPECT_LE(load->busy_cores, load->machine_cores + 0.01);
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
