// The user's command as a process tree (job_process.h).
#include "harness/process/job_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "core/errors.h"
#include "harness/process/interrupt.h"
#include "profiler/process_tree.h"

extern char** environ;

namespace trainlab {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// Alive: listed in /proc and neither a zombie nor dead.
bool alive(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size()) return false;
  const char state = text[close + 2];
  return state != 'Z' && state != 'X';
}

std::vector<int> live_descendants() {
  std::vector<int> out;
  for (int pid : descendants_of(static_cast<int>(::getpid()))) {
    if (alive(pid)) out.push_back(pid);
  }
  return out;
}

// Reaps every child that has ended; the command's own status goes to *status when it is one.
void reap_children(pid_t command, bool* command_done, int* status) {
  for (;;) {
    int st = 0;
    const pid_t r = ::waitpid(-1, &st, WNOHANG);
    if (r <= 0) return;
    if (r == command && !*command_done) {
      *command_done = true;
      *status = st;
    }
  }
}

// Passes the command's stderr through to ours (or to the output file), keeping its tail.
class StderrRelay {
 public:
  StderrRelay(int fd, size_t tail_bytes, int out_fd) : fd_(fd), out_fd_(out_fd), tail_bytes_(tail_bytes) {
    thread_ = std::thread([this] { run(); });
  }
  ~StderrRelay() { finish(); }
  void finish() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  std::string tail() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string t = tail_;
    if (t.size() > tail_bytes_) t = t.substr(t.size() - tail_bytes_);
    const size_t newline = t.find('\n');
    if (tail_.size() > tail_bytes_ && newline != std::string::npos && newline + 1 < t.size()) t = t.substr(newline + 1);
    return t;
  }

 private:
  void run() {
    char buffer[8192];
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      const int ready = ::poll(&p, 1, 100);
      if (ready < 0 && errno != EINTR) return;
      if (ready <= 0) {
        // Once asked to finish, drain what is there and stop (a daemon may hold the pipe open).
        if (stop_) return;
        continue;
      }
      const ssize_t n = ::read(fd_, buffer, sizeof buffer);
      if (n == 0) return;  // every writer closed it
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        return;
      }
      for (ssize_t off = 0; off < n;) {
        const ssize_t w = ::write(out_fd_, buffer + off, static_cast<size_t>(n - off));
        if (w <= 0) break;  // our stderr went away: keep the tail all the same
        off += w;
      }
      std::lock_guard<std::mutex> lock(mutex_);
      tail_.append(buffer, static_cast<size_t>(n));
      if (tail_.size() > 4 * tail_bytes_) tail_.erase(0, tail_.size() - 2 * tail_bytes_);
    }
  }

  int fd_;
  int out_fd_;
  size_t tail_bytes_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mutex_;
  std::string tail_;
};

std::vector<std::string> job_environment(const std::vector<std::pair<std::string, std::string>>& set) {
  std::map<std::string, std::string> env;
  std::vector<std::string> order;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    const size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = entry.substr(0, eq);
    if (env.emplace(key, entry.substr(eq + 1)).second) order.push_back(key);
  }
  for (const auto& [key, value] : set) {
    if (env.find(key) == env.end()) order.push_back(key);
    env[key] = value;
  }
  std::vector<std::string> out;
  out.reserve(order.size());
  for (const std::string& key : order) out.push_back(key + "=" + env[key]);
  return out;
}

}  // namespace

std::string JobExit::describe() const {
  if (timed_out) return "timed out after " + std::to_string(static_cast<int>(wall_s + 0.5)) + " s";
  if (interrupted) return std::string("interrupted (") + ::strsignal(interrupt_signal) + ")";
  if (signal != 0) {
    std::string text = "killed by signal " + std::to_string(signal) + " (" + ::strsignal(signal) + ")";
    if (signal == SIGKILL) text += ": out of memory (the kernel's OOM killer) or killed from outside";
    return text;
  }
  if (exited) return "exit status " + std::to_string(exit_status);
  return "unknown end";
}

std::string resolve_command(const std::string& name) {
  if (name.empty()) throw InputError("profile: the command after -- is empty");
  if (name.find('/') != std::string::npos) {
    if (is_executable_file(name)) return name;
    throw InputError(name + ": command not found (no executable file there)");
  }
  const char* path = std::getenv("PATH");
  const std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = end == start ? "." : dirs.substr(start, end - start);
    const std::string candidate = dir + "/" + name;
    if (is_executable_file(candidate)) return candidate;
    start = end + 1;
  }
  throw InputError(name + ": command not found (not on PATH)");
}

namespace {

// end_descendants, keeping the command's own exit status when it is reaped on the way.
int end_tree(pid_t group, double grace_s, bool* command_done, int* command_status) {
  if (group > 0) ::kill(-group, SIGTERM);
  for (int pid : live_descendants()) ::kill(pid, SIGTERM);
  bool& unused_done = *command_done;
  int& unused_status = *command_status;
  const pid_t command = group;
  const auto start = Clock::now();
  while (seconds_since(start) < grace_s) {
    reap_children(command, &unused_done, &unused_status);
    if (live_descendants().empty()) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  int killed = 0;
  // SIGKILL until nothing is left (a process may fork while it is being ended).
  for (int round = 0; round < 50; ++round) {
    const std::vector<int> left = live_descendants();
    if (left.empty()) break;
    if (group > 0) ::kill(-group, SIGKILL);
    for (int pid : left) {
      if (::kill(pid, SIGKILL) == 0 && round == 0) ++killed;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    reap_children(command, &unused_done, &unused_status);
  }
  reap_children(command, &unused_done, &unused_status);
  return killed;
}

}  // namespace

int end_descendants(pid_t group, double grace_s) {
  bool done = true;
  int status = 0;
  return end_tree(group, grace_s, &done, &status);
}

JobExit run_job_process(const JobLaunch& launch, const std::function<void(pid_t)>& on_started) {
  if (launch.argv.empty()) throw InputError("profile: no command after --");
  const std::string executable = resolve_command(launch.argv[0]);
  install_interrupt_handlers();
  // Descendants that lose their parent (daemons, orphaned workers) reparent here, not to init.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);

  const std::vector<std::string> env = job_environment(launch.environment);
  std::vector<char*> envp, argv;
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  for (const std::string& a : launch.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  int output_fd = -1;
  if (!launch.output_file.empty()) {
    output_fd = ::open(launch.output_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (output_fd < 0) {
      throw std::runtime_error("cannot write the job's output to " + launch.output_file + ": " + std::strerror(errno));
    }
  }
  struct FdCloser {
    int fd;
    ~FdCloser() {
      if (fd >= 0) ::close(fd);
    }
  } output_closer{output_fd};
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(err_pipe[0]);
    ::close(err_pipe[1]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // trainlab killed outright: the command goes with it
    if (::getppid() != parent) ::_exit(127);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    ::dup2(err_pipe[1], STDERR_FILENO);
    if (output_fd >= 0) ::dup2(output_fd, STDOUT_FILENO);
    ::execve(executable.c_str(), argv.data(), envp.data());
    const std::string message = "trainlab: cannot run " + executable + ": " + std::strerror(errno) + "\n";
    (void)!::write(STDERR_FILENO, message.data(), message.size());
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // either side may get there first
  ::close(err_pipe[1]);
  StderrRelay relay(err_pipe[0], launch.stderr_tail_bytes, output_fd >= 0 ? output_fd : STDERR_FILENO);
  if (on_started) on_started(pid);

  JobExit out;
  const auto start = Clock::now();
  bool done = false;
  int status = 0;
  while (!done) {
    reap_children(pid, &done, &status);
    if (done) break;
    if (interrupted()) {
      out.interrupted = true;
      out.interrupt_signal = interrupt_signal();
      out.killed = end_tree(pid, launch.grace_s, &done, &status);
      break;
    }
    if (launch.timeout_s > 0 && seconds_since(start) >= launch.timeout_s) {
      out.timed_out = true;
      out.killed = end_tree(pid, launch.grace_s, &done, &status);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // The command's own status when ending the tree did not reap it yet.
  if (!done) {
    int st = 0;
    if (::waitpid(pid, &st, 0) == pid) status = st;
    done = true;
  }
  out.wall_s = seconds_since(start);
  if (WIFEXITED(status)) {
    out.exited = true;
    out.exit_status = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    out.signal = WTERMSIG(status);
  }
  // What it left behind: a while to end by themselves, then ended.
  const auto left_at = Clock::now();
  while (!live_descendants().empty() && seconds_since(left_at) < launch.leftovers_grace_s) {
    reap_children(pid, &done, &status);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const std::vector<int> leftovers = live_descendants();
  out.leftovers_ended = static_cast<int>(leftovers.size());
  if (!leftovers.empty()) out.killed += end_tree(pid, launch.grace_s, &done, &status);
  relay.finish();
  out.stderr_tail = relay.tail();
  return out;
}

}  // namespace trainlab
