// Runs this same binary as a child process with its output in a log file, waits with a timeout,
// and reports how it ended (exit status, signal, timed out). Torch-free.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace trainlab {

struct ChildOutcome {
  int exit_status = -1;   // valid when exited
  int signal = 0;         // non-zero when killed by a signal
  bool exited = false;
  bool timed_out = false;
  bool interrupted = false;  // stopped by the parent after Ctrl-C / SIGTERM (harness/process/interrupt.h)
  bool outlived_peer = false;  // still running peers_grace_s after a peer failed, and killed
  double wall_s = 0;

  std::string describe() const;  // "exit status 1", "killed by signal 9 (SIGKILL: ...)", ...
};

// args excludes argv[0]; the child is /proc/self/exe. stdout and stderr go to log_path.
ChildOutcome run_self_as_child(const std::vector<std::string>& args, const std::string& log_path,
                               double timeout_s);

// The training executable, `trainlab-train` next to this binary (the front binary loads no
// LibTorch; training, the variant children and the bf16 probe, runs in that one). Throws
// InputError when it is missing.
std::string trainer_executable();

// A binary that runs variants itself (a benchmark with its own `__variant` child) names the
// training executable here; trainer_executable() returns it from then on.
void set_trainer_executable(const std::string& path);

// run_self_as_child with the training executable as the child.
ChildOutcome run_trainer_child(const std::vector<std::string>& args, const std::string& log_path, double timeout_s);

// Several children at once (e.g. the ranks of a data-parallel variant), each with extra
// environment variables, under one deadline: those still running at the deadline are killed and
// marked timed out. Outcomes are in the order of `children`.
struct ChildLaunch {
  std::vector<std::string> args;
  std::string log_path;
  std::vector<std::pair<std::string, std::string>> environment;  // set in the child before exec
  std::string executable;  // the program to run; empty: /proc/self/exe
  std::string argv0;       // its argv[0]; empty: "trainlab" (a Python finds its environment by it)
  int64_t memory_limit_bytes = 0;  // RLIMIT_DATA in the child (heap, mmap, stacks); 0: none
};

// 3/4 of the machine's memory (MemTotal): the default limit of a variant's processes, so a
// variant whose knobs ask for more than the machine has fails as out of memory instead of taking
// the machine down with it.
int64_t default_memory_limit_bytes();
// peers_grace_s >= 0: once one child has failed (non-zero exit or a signal), the others get that
// long to end (ranks whose peer died fail within their distributed timeout), then are killed.
std::vector<ChildOutcome> run_self_as_children(const std::vector<ChildLaunch>& children, double timeout_s,
                                               double peers_grace_s = -1);

// run_self_as_child, with the child's steps reported to progress_file (core/step_progress.h; the
// variable passes on to the training child a `trainlab` child starts) and shown live by ticker
// as item k of n (n = 0: unknown) while it runs.
class ProgressTicker;
ChildOutcome run_self_as_watched_child(const std::vector<std::string>& args, const std::string& log_path,
                                       double timeout_s, ProgressTicker& ticker, size_t k, size_t n,
                                       const std::string& label, const std::string& progress_file, double elapsed_s);

// The last non-empty line of a text file (a child's last words), or "".
std::string last_line_of(const std::string& path);

}  // namespace trainlab
