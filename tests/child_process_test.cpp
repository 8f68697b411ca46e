// Child process outcomes: normal exit, non-zero exit, signal, timeout. The child is this test
// binary itself re-executed with a gtest filter that selects a helper "test" by environment.
#include "harness/runner/child_process.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <thread>

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
  if (m == "hang") std::this_thread::sleep_for(std::chrono::seconds(60));
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
  ChildOutcome segv = run_helper("segv", 30, &log);
  EXPECT_FALSE(segv.exited);
  EXPECT_EQ(segv.signal, SIGSEGV);
  EXPECT_NE(segv.describe().find("signal 11"), std::string::npos);
}

TEST(ChildProcessTest, KillsOnTimeout) {
  std::string log;
  ChildOutcome hang = run_helper("hang", 0.5, &log);
  EXPECT_TRUE(hang.timed_out);
  EXPECT_LT(hang.wall_s, 10.0);
  EXPECT_NE(hang.describe().find("timed out"), std::string::npos);
}

}  // namespace
}  // namespace trainlab
