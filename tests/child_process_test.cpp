// Child process outcomes: normal exit, non-zero exit, signal, timeout. The child is this test
// binary itself re-executed with a gtest filter that selects a helper "test" by environment.
#include "harness/process/child_process.h"
#include "harness/process/interrupt.h"
#include "process_gone.h"
#include "sanitizer_build.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <vector>

namespace trainlab {
namespace {

// Helper behaviours, only active when the parent set TRAINLAB_CHILD_MODE.
TEST(ChildHelper, Behave) {
  const char* mode = std::getenv("TRAINLAB_CHILD_MODE");
  if (mode == nullptr) GTEST_SKIP() << "helper for ChildProcessTest";
  const std::string m = mode;
  std::fprintf(stderr, "child says %s\n", mode);
  if (m == "exit3") std::_Exit(3);
  if (m == "segv") std::raise(SIGSEGV);
  if (m == "sigkill") std::raise(SIGKILL);
  if (m == "hang") std::this_thread::sleep_for(std::chrono::seconds(60));
  if (m == "hang-and-say-pid") {  // writes its pid where the test looks, then hangs
    std::ofstream(std::getenv("TRAINLAB_CHILD_PID_FILE")) << ::getpid() << "\n";
    std::this_thread::sleep_for(std::chrono::seconds(60));
  }
  if (m == "fork-and-exit" || m == "fork-and-hang") {  // leaves a grandchild running, its pid written
    const pid_t grandchild = ::fork();
    if (grandchild == 0) {
      std::this_thread::sleep_for(std::chrono::seconds(60));
      std::_Exit(0);
    }
    std::ofstream(std::getenv("TRAINLAB_CHILD_PID_FILE")) << grandchild << "\n";
    if (m == "fork-and-hang") std::this_thread::sleep_for(std::chrono::seconds(60));
  }
  if (m == "ignore-term") {  // a child that will not stop on SIGTERM
    std::signal(SIGTERM, SIG_IGN);
    std::this_thread::sleep_for(std::chrono::seconds(60));
  }
  std::_Exit(0);
}

ChildOutcome run_helper(const std::string& mode, double timeout_s, std::string* log) {
  ::setenv("TRAINLAB_CHILD_MODE", mode.c_str(), 1);
  *log = ::testing::TempDir() + "/child_" + mode + ".log";
  ChildOutcome outcome = run_self_as_child({"--gtest_filter=ChildHelper.Behave"}, *log, timeout_s);
  ::unsetenv("TRAINLAB_CHILD_MODE");
  return outcome;
}

TEST(ChildProcessTest, ReportsExitStatusAndKeepsOutput) {
  std::string log;
  ChildOutcome ok = run_helper("ok", 30, &log);
  EXPECT_TRUE(ok.exited);
  EXPECT_EQ(ok.exit_status, 0);
  ChildOutcome three = run_helper("exit3", 30, &log);
  EXPECT_TRUE(three.exited);
  EXPECT_EQ(three.exit_status, 3);
  EXPECT_EQ(last_line_of(log), "child says exit3");
  EXPECT_EQ(three.describe(), "exit status 3");
}

TEST(ChildProcessTest, ReportsSignal) {
  std::string log;
  if (!TRAINLAB_UNDER_ASAN) {  // ASan turns the child's SIGSEGV into its report and an abort
    ChildOutcome segv = run_helper("segv", 30, &log);
    EXPECT_FALSE(segv.exited);
    EXPECT_EQ(segv.signal, SIGSEGV);
    EXPECT_NE(segv.describe().find("signal 11"), std::string::npos);
  }
  // SIGKILL: the OOM killer's signal, but also `kill -9` from outside; the text says both.
  ChildOutcome killed = run_helper("sigkill", 30, &log);
  EXPECT_EQ(killed.signal, SIGKILL);
  EXPECT_NE(killed.describe().find("out of memory (the kernel's OOM killer) or killed from outside"), std::string::npos)
      << killed.describe();
}

TEST(ChildProcessTest, KillsOnTimeout) {
  std::string log;
  ChildOutcome hang = run_helper("hang", 0.5, &log);
  EXPECT_TRUE(hang.timed_out);
  EXPECT_LT(hang.wall_s, 10.0);
  EXPECT_NE(hang.describe().find("timed out"), std::string::npos);
}

// The first Ctrl-C / SIGTERM (harness/process/interrupt.h) stops the running children: SIGTERM,
// then SIGKILL after 3 s for one that ignores it; each is marked interrupted.
TEST(ChildProcessTest, AnInterruptStopsTheChildrenAndMarksThem) {
  for (const std::string mode : {"hang", "ignore-term"}) {
    std::string log;
    std::thread interrupt([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      set_interrupt_for_test(SIGINT);
    });
    const ChildOutcome stopped = run_helper(mode, 60, &log);
    interrupt.join();
    set_interrupt_for_test(0);
    EXPECT_TRUE(stopped.interrupted) << mode;
    EXPECT_FALSE(stopped.timed_out) << mode;
    EXPECT_LT(stopped.wall_s, 20.0) << mode;  // not the 60 s the child wanted
    EXPECT_EQ(stopped.describe(), "stopped: the run was interrupted");
  }
}

// A parent killed by SIGKILL takes its children with it (PR_SET_PDEATHSIG): no variant runs on.
TEST(ChildProcessTest, ChildrenDieWithTheirParentEvenOnSigkill) {
  const std::string pid_file = ::testing::TempDir() + "/child_pid_" + std::to_string(::getpid());
  std::remove(pid_file.c_str());
  const pid_t middle = ::fork();
  ASSERT_GE(middle, 0);
  if (middle == 0) {  // the "lab": starts a child, then waits on it
    ::setenv("TRAINLAB_CHILD_PID_FILE", pid_file.c_str(), 1);
    std::string log;
    run_helper("hang-and-say-pid", 60, &log);
    std::_Exit(0);
  }
  pid_t child = 0;
  for (int i = 0; i < 200 && child == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::ifstream(pid_file) >> child;
  }
  ASSERT_GT(child, 0) << "the grandchild never started";
  EXPECT_FALSE(test_process::process_gone(child));
  ::kill(middle, SIGKILL);
  ::waitpid(middle, nullptr, 0);
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    gone = test_process::process_gone(child);
  }
  EXPECT_TRUE(gone) << "child " << child << " outlived its SIGKILLed parent";
  if (!gone) ::kill(child, SIGKILL);
}

// What a child forked and left running ends with it: the rest of its process group is killed once
// it has ended, or with it at its deadline.
TEST(ChildProcessTest, WhatAChildForkedDoesNotOutliveIt) {
  for (const std::string mode : {"fork-and-exit", "fork-and-hang"}) {
    const std::string pid_file =
        ::testing::TempDir() + "/grandchild_pid_" + mode + std::to_string(::getpid());
    std::remove(pid_file.c_str());
    ::setenv("TRAINLAB_CHILD_PID_FILE", pid_file.c_str(), 1);
    std::string log;
    const ChildOutcome outcome = run_helper(mode, 2, &log);
    ::unsetenv("TRAINLAB_CHILD_PID_FILE");
    EXPECT_EQ(outcome.timed_out, mode == "fork-and-hang") << mode;
    pid_t grandchild = 0;
    std::ifstream(pid_file) >> grandchild;
    ASSERT_GT(grandchild, 0) << mode << ": the grandchild's pid was not written";
    const bool gone = test_process::gone_within_5_s(grandchild);
    EXPECT_TRUE(gone) << mode << ": grandchild " << grandchild << " outlived its parent";
    if (!gone) ::kill(grandchild, SIGKILL);
  }
}

// Ranks: once one fails, a peer that is stalled (hung, SIGSTOPped) is killed after the grace
// period, not waited on until the whole variant's timeout.
TEST(ChildProcessTest, APeerStillRunningAfterAnotherFailedIsKilledAfterTheGrace) {
  const std::string dir = ::testing::TempDir();
  std::vector<ChildLaunch> launches = {
      {{"--gtest_filter=ChildHelper.Behave"}, dir + "/peer_fail.log", {{"TRAINLAB_CHILD_MODE", "exit3"}}, {}},
      {{"--gtest_filter=ChildHelper.Behave"}, dir + "/peer_hang.log", {{"TRAINLAB_CHILD_MODE", "hang"}}, {}}};
  const auto start = std::chrono::steady_clock::now();
  const std::vector<ChildOutcome> outcomes = run_self_as_children(launches, 60, /*peers_grace_s=*/1.0);
  const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_EQ(outcomes[0].exit_status, 3);
  EXPECT_TRUE(outcomes[1].outlived_peer);
  EXPECT_FALSE(outcomes[1].timed_out);
  EXPECT_LT(took_s, 30.0);  // not the 60 s deadline
  EXPECT_NE(outcomes[1].describe().find("after a peer process failed"), std::string::npos);
}

}  // namespace
}  // namespace trainlab
