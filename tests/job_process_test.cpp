// The user's command as a process tree (harness/process/job_process.h): found on PATH or refused in
// one line, its exit status and stderr tail kept, and nothing of its tree outliving the run: a
// child and a setsid-daemonised grandchild that both ignore SIGTERM are ended at the timeout, on an
// interrupt, and when the command's own process exits first.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/errors.h"
#include "harness/process/interrupt.h"
#include "harness/process/job_process.h"
#include "tests/process_gone.h"

namespace trainlab {
namespace {

std::string lingering_script() { return std::string(TRAINLAB_FIXTURES_DIR) + "/job_scripts/tree_that_lingers.sh"; }

std::vector<int> pids_in(const std::string& path) {
  std::vector<int> pids;
  std::ifstream in(path);
  std::string what;
  int pid = 0;
  while (in >> what >> pid) pids.push_back(pid);
  return pids;
}

std::string pid_file(const std::string& name) {
  const std::string path = ::testing::TempDir() + "/job_process_" + name + ".pids";
  std::filesystem::remove(path);
  return path;
}

TEST(JobProcess, CommandNotFoundIsOneLineOfBadInput) {
  try {
    resolve_command("no-such-command-trainlab-test");
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "no-such-command-trainlab-test: command not found (not on PATH)");
  }
  EXPECT_THROW(resolve_command("./no/such/file"), InputError);
  EXPECT_EQ(resolve_command("sh").substr(resolve_command("sh").size() - 3), "/sh");
}

TEST(JobProcess, KeepsTheExitStatusAndTheTailOfStderr) {
  JobLaunch launch;
  launch.argv = {"sh", "-c", "echo on-stdout; echo first >&2; echo 'ValueError: bad labels' >&2; exit 3"};
  const JobExit exit = run_job_process(launch);
  EXPECT_TRUE(exit.exited);
  EXPECT_EQ(exit.exit_status, 3);
  EXPECT_EQ(exit.describe(), "exit status 3");
  EXPECT_EQ(exit.stderr_tail, "first\nValueError: bad labels\n");
  EXPECT_FALSE(exit.timed_out);
}

TEST(JobProcess, PassesTheEnvironmentAndRunsInItsOwnGroup) {
  const std::string out = ::testing::TempDir() + "/job_process_env.txt";
  JobLaunch launch;
  launch.argv = {"sh", "-c", "echo \"$TRAINLAB_TEST_VALUE $(ps -o pgid= $$) $$\" > '" + out + "'"};
  launch.environment = {{"TRAINLAB_TEST_VALUE", "seen"}};
  const JobExit exit = run_job_process(launch);
  ASSERT_TRUE(exit.exited);
  std::ifstream in(out);
  std::string value;
  int pgid = 0, pid = 0;
  in >> value >> pgid >> pid;
  EXPECT_EQ(value, "seen");
  EXPECT_EQ(pgid, pid);  // the job leads its own process group
}

TEST(JobProcess, TimeoutEndsTheWholeTreeDaemonsThatIgnoreSigtermIncluded) {
  const std::string pids_path = pid_file("timeout");
  JobLaunch launch;
  launch.argv = {lingering_script(), pids_path};
  launch.timeout_s = 1.5;
  launch.grace_s = 0.5;
  const JobExit exit = run_job_process(launch);
  EXPECT_TRUE(exit.timed_out);
  EXPECT_GE(exit.killed, 2);  // the two that ignore SIGTERM needed SIGKILL
  const std::vector<int> pids = pids_in(pids_path);
  ASSERT_EQ(pids.size(), 2u);
  for (int pid : pids) EXPECT_TRUE(test_process::process_gone(pid)) << pid;  // gone at once, not within 5 s
}

TEST(JobProcess, WhatTheCommandLeavesRunningIsEndedWhenItExits) {
  const std::string pids_path = pid_file("leftovers");
  JobLaunch launch;
  launch.argv = {lingering_script(), pids_path, "0.5"};
  launch.grace_s = 0.5;
  launch.leftovers_grace_s = 0.3;
  const JobExit exit = run_job_process(launch);
  EXPECT_TRUE(exit.exited);
  EXPECT_EQ(exit.exit_status, 0);
  EXPECT_GE(exit.leftovers_ended, 2);
  for (int pid : pids_in(pids_path)) EXPECT_TRUE(test_process::process_gone(pid)) << pid;
}

TEST(JobProcess, AnInterruptEndsTheTree) {
  const std::string pids_path = pid_file("interrupt");
  JobLaunch launch;
  launch.argv = {lingering_script(), pids_path};
  launch.grace_s = 0.5;
  std::thread ctrl_c([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    set_interrupt_for_test(SIGINT);
  });
  const JobExit exit = run_job_process(launch);
  ctrl_c.join();
  set_interrupt_for_test(0);
  EXPECT_TRUE(exit.interrupted);
  EXPECT_EQ(exit.interrupt_signal, SIGINT);
  for (int pid : pids_in(pids_path)) EXPECT_TRUE(test_process::process_gone(pid)) << pid;
}

}  // namespace
}  // namespace trainlab
