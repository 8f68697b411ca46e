// The user's command as a process tree (`trainlab profile -- COMMAND...`): found on PATH, started
// in its own process group with the user's environment plus a few variables, its stdout left to
// the terminal and its stderr passed through (a tail kept for the record). This process becomes a
// child subreaper (PR_SET_CHILD_SUBREAPER), so descendants that daemonise (double fork, setsid)
// reparent here and are still found. Ctrl-C / SIGTERM to trainlab (harness/process/interrupt.h) and
// the timeout end the whole tree: SIGTERM to the group and to every descendant found through
// /proc, a grace period, then SIGKILL, and every child reaped. When the command's own process
// exits, whatever it left running is ended the same way: nothing outlives trainlab. Torch-free.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace trainlab {

// The executable `name` runs: itself when it holds a '/', else the first match on $PATH that is
// an executable regular file. Throws InputError "NAME: command not found" otherwise.
std::string resolve_command(const std::string& name);

struct JobLaunch {
  std::vector<std::string> argv;  // argv[0] resolved by resolve_command
  std::vector<std::pair<std::string, std::string>> environment;  // set (replacing) in the job's environment
  double timeout_s = 0;           // 0: none
  double grace_s = 5;             // SIGTERM to SIGKILL
  // After the command's own process exits: how long its descendants get to end by themselves
  // (DataLoader workers and torchrun's children shutting down) before they are ended.
  double leftovers_grace_s = 2;
  size_t stderr_tail_bytes = 4096;
  // Non-empty: the command's stdout and stderr go to this file (created, or truncated; never through
  // a link) instead of the terminal, the stderr tail still kept. The lab and the sweep run a job many
  // times; their progress lines stay readable and each run's output stays beside its record.
  std::string output_file;
};

struct JobExit {
  bool exited = false;
  int exit_status = -1;        // when exited
  int signal = 0;              // the signal that killed the command's process
  bool timed_out = false;
  bool interrupted = false;    // Ctrl-C / SIGTERM / SIGHUP to trainlab
  int interrupt_signal = 0;
  double wall_s = 0;
  std::string stderr_tail;     // its last stderr bytes, from a line start
  int leftovers_ended = 0;     // descendants still running after it ended, that trainlab ended
  int killed = 0;              // of the tree, processes that needed SIGKILL
  std::string describe() const;  // "exit status 1", "killed by signal 9 (...)", "timed out after 30 s"
};

// Runs the tree to its end. on_started(pid) is called once the command's process exists (before
// it execs). Throws InputError when the command is not found; std::runtime_error when it cannot
// be started at all (fork or pipe failing).
JobExit run_job_process(const JobLaunch& launch, const std::function<void(pid_t)>& on_started = {});

// SIGTERM to every descendant of this process (and to `group` when > 0), up to grace_s for them
// to end, then SIGKILL to those left; reaps every child. Returns how many needed SIGKILL.
int end_descendants(pid_t group, double grace_s);

}  // namespace trainlab
