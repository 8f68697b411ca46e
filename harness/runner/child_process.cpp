// fork/exec of /proc/self/exe, polling wait with a deadline, SIGKILL on timeout.
#include "harness/runner/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include "harness/core/errors.h"

namespace trainlab {

std::string ChildOutcome::describe() const {
  if (timed_out) return "timed out after " + std::to_string(static_cast<int>(wall_s)) + " s and was killed";
  if (signal != 0) {
    std::string text = "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
    if (signal == SIGKILL) text += "; likely out of memory";
    return text;
  }
  if (exited) return "exit status " + std::to_string(exit_status);
  return "unknown end";
}

ChildOutcome run_self_as_child(const std::vector<std::string>& args, const std::string& log_path,
                               double timeout_s) {
  const auto start = std::chrono::steady_clock::now();
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) throw InputError("cannot write " + log_path + ": " + std::strerror(errno));

  std::vector<std::string> argv_storage;
  argv_storage.push_back("trainlab");
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  ::close(log_fd);

  ChildOutcome outcome;
  const auto deadline = start + std::chrono::duration<double>(timeout_s);
  int status = 0;
  while (true) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      outcome.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  outcome.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!outcome.timed_out) {
    if (WIFEXITED(status)) {
      outcome.exited = true;
      outcome.exit_status = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      outcome.signal = WTERMSIG(status);
    }
  }
  return outcome;
}

std::string last_line_of(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return last;
}

}  // namespace trainlab
