// fork/exec of /proc/self/exe or the training executable (one child or several, with extra
// environment, a memory limit, death with the parent), polling wait with a deadline: SIGKILL on
// timeout, after a peer failed and its grace ran out, or after an interrupt (SIGTERM first). Each
// child leads its own process group; once it has ended, the rest of its group (what it forked and
// left running) is killed. What left the group (setsid, a new session: a daemon, Popen with
// start_new_session) is caught by this process being their subreaper (PR_SET_CHILD_SUBREAPER):
// orphaned, they become its children, and once no launched child runs they are killed and reaped,
// so nothing a child started outlives it.
#include "harness/process/child_process.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <thread>

#include "core/errors.h"
#include "core/step_progress.h"
#include "harness/process/interrupt.h"
#include "harness/process/progress_ticker.h"

namespace trainlab {

std::string ChildOutcome::describe() const {
  if (timed_out) return "timed out after " + std::to_string(static_cast<int>(wall_s)) + " s and was killed";
  if (interrupted) return "stopped: the run was interrupted";
  if (outlived_peer) return "killed: still running after a peer process failed (stalled past --dist-timeout-s)";
  if (signal != 0) {
    // SIGKILL is what the kernel's OOM killer sends, but so does `kill -9`: say both.
    std::string text = "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
    if (signal == SIGKILL) text += ": out of memory (the kernel's OOM killer) or killed from outside";
    return text;
  }
  if (exited) return "exit status " + std::to_string(exit_status);
  return "unknown end";
}

int64_t default_memory_limit_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  while (meminfo >> key >> kib) {
    if (key == "MemTotal:") return kib * 1024 / 4 * 3;
    meminfo.ignore(256, '\n');
  }
  return 0;  // unknown: no limit
}

namespace {

// The launched children still running, across every call (one may run beside another): the
// processes this one adopted as their subreaper are its other children.
std::mutex& launched_mutex() {
  static std::mutex m;
  return m;
}
std::set<pid_t>& launched() {
  static std::set<pid_t> pids;
  return pids;
}

// This process becomes the subreaper of everything its children start (once).
void become_subreaper() {
  static std::once_flag once;
  std::call_once(once, [] { ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); });
}

// The parent and process group of a process, from /proc/PID/stat (after the command's ')').
bool parent_and_group(pid_t pid, pid_t* parent, pid_t* group) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return false;
  char state = 0;
  long ppid = 0, pgrp = 0;
  if (std::sscanf(text.c_str() + close + 1, " %c %ld %ld", &state, &ppid, &pgrp) != 3) return false;
  *parent = static_cast<pid_t>(ppid);
  *group = static_cast<pid_t>(pgrp);
  return true;
}

// This process's children that it did not launch and that are not of its own process group: what
// launched children started and left behind, adopted by this subreaper.
std::vector<pid_t> adopted_children() {
  std::vector<pid_t> found;
  const pid_t self = ::getpid(), own_group = ::getpgrp();
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return found;
  while (const dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || pid <= 0) continue;
    pid_t parent = 0, group = 0;
    if (!parent_and_group(static_cast<pid_t>(pid), &parent, &group) || parent != self) continue;
    if (group == own_group || launched().count(static_cast<pid_t>(pid)) > 0) continue;
    found.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(proc);
  return found;
}

// Once no launched child runs: each adopted process killed (its group too, where it leads one) and
// reaped; what they started in turn is adopted as they die, and taken in the next round (bounded:
// 2000 rounds of 1 ms at most).
void end_adopted_processes() {
  for (int round = 0; round < 2000; ++round) {
    const std::vector<pid_t> adopted = adopted_children();
    if (adopted.empty()) return;
    for (pid_t pid : adopted) {
      if (::getpgid(pid) == pid) ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    for (pid_t pid : adopted) {
      int status = 0;
      ::waitpid(pid, &status, WNOHANG);  // one not dead yet is killed and reaped in the next round
    }
  }
}

// The launched children of one call forgotten once reaped; the last call to end sweeps up.
void forget_launched(const std::vector<pid_t>& pids) {
  std::lock_guard<std::mutex> lock(launched_mutex());
  for (pid_t pid : pids) launched().erase(pid);
  if (launched().empty()) end_adopted_processes();
}

pid_t spawn_self(const ChildLaunch& launch) {
  // The log is a regular file trainlab makes (in a run folder, a bundle, $TMPDIR): a symbolic link
  // planted at its name is not followed, a FIFO is not waited on.
  const int log_fd =
      ::open(launch.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (log_fd < 0) throw InputError("cannot write " + launch.log_path + ": " + std::strerror(errno));
  struct stat log_info {};
  if (::fstat(log_fd, &log_info) != 0 || !S_ISREG(log_info.st_mode)) {
    ::close(log_fd);
    throw InputError("cannot write " + launch.log_path + ": not a regular file");
  }
  ::fcntl(log_fd, F_SETFL, ::fcntl(log_fd, F_GETFL) & ~O_NONBLOCK);

  std::vector<std::string> argv_storage;
  argv_storage.push_back(launch.argv0.empty() ? "trainlab" : launch.argv0);
  argv_storage.insert(argv_storage.end(), launch.args.begin(), launch.args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  const std::string program = launch.executable.empty() ? "/proc/self/exe" : launch.executable;
  const pid_t parent = ::getpid();
  become_subreaper();
  std::lock_guard<std::mutex> lock(launched_mutex());  // registered before a sweep can see it
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // The child dies with its parent, however the parent ends (SIGKILL included), so no variant
    // runs on unseen after the lab is gone. Checked once more in case the parent already went.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(127);
    // Ctrl-C at the terminal goes to the parent, which stops the children itself (SIGTERM, then
    // SIGKILL) after it has recorded them; a child of its own process group does not see it.
    ::setpgid(0, 0);
    if (launch.memory_limit_bytes > 0) {
      const rlimit limit{static_cast<rlim_t>(launch.memory_limit_bytes), static_cast<rlim_t>(launch.memory_limit_bytes)};
      ::setrlimit(RLIMIT_DATA, &limit);
    }
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    for (const auto& [name, value] : launch.environment) ::setenv(name.c_str(), value.c_str(), 1);
    ::execv(program.c_str(), argv.data());
    _exit(127);
  }
  ::close(log_fd);
  ::setpgid(pid, pid);  // as the child does, so its group exists before either side runs on
  launched().insert(pid);
  return pid;
}

// Whether the child has ended, without reaping it: while it is an unreaped zombie its pid (its
// process group's id) cannot be reused, so the group can still be signalled safely.
bool has_ended(pid_t pid) {
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return errno != EINTR;
  return info.si_pid == pid;
}

// SIGKILL to what is left of the child's process group (what it forked), then the child reaped;
// false when there was no child to reap.
bool reap_with_group(pid_t pid, int& status) {
  ::kill(-pid, SIGKILL);
  pid_t reaped = -1;
  do {
    reaped = ::waitpid(pid, &status, 0);
  } while (reaped < 0 && errno == EINTR);
  return reaped == pid;
}

// The child and its whole process group killed, the child reaped.
void kill_group_and_reap(pid_t pid) {
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);  // in case it never got its own group
  int status = 0;
  reap_with_group(pid, status);
}

// After an interrupt: SIGTERM to the children still running, up to 3 s for them to end, then
// SIGKILL; each is marked interrupted.
void stop_children(const std::vector<pid_t>& pids, std::vector<bool>& done, std::vector<ChildOutcome>& outcomes,
                   std::chrono::steady_clock::time_point start) {
  for (size_t i = 0; i < pids.size(); ++i) {
    if (!done[i]) ::kill(pids[i], SIGTERM);
  }
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  for (size_t i = 0; i < pids.size(); ++i) {
    if (done[i]) continue;
    while (!has_ended(pids[i]) && std::chrono::steady_clock::now() <= give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    kill_group_and_reap(pids[i]);
    outcomes[i].interrupted = true;
    outcomes[i].wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    done[i] = true;
  }
}

void fill_outcome(int status, ChildOutcome& outcome) {
  if (WIFEXITED(status)) {
    outcome.exited = true;
    outcome.exit_status = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    outcome.signal = WTERMSIG(status);
  }
}

}  // namespace

ChildOutcome run_self_as_child(const std::vector<std::string>& args, const std::string& log_path,
                               double timeout_s) {
  return run_self_as_children({ChildLaunch{args, log_path, {}, {}}}, timeout_s).at(0);
}

namespace {
std::string& trainer_override() {
  static std::string path;
  return path;
}
}  // namespace

void set_trainer_executable(const std::string& path) { trainer_override() = path; }

std::string trainer_executable() {
  if (!trainer_override().empty()) return trainer_override();
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path trainer = self.parent_path() / "trainlab-train";
  if (ec || ::access(trainer.c_str(), X_OK) != 0) {
    throw InputError("the training executable trainlab-train is missing next to " +
                     (ec ? std::string("this binary") : self.string()) + " (rebuild or reinstall trainlab)");
  }
  return trainer.string();
}

ChildOutcome run_trainer_child(const std::vector<std::string>& args, const std::string& log_path, double timeout_s) {
  return run_self_as_children({ChildLaunch{args, log_path, {}, trainer_executable()}}, timeout_s).at(0);
}

std::vector<ChildOutcome> run_self_as_children(const std::vector<ChildLaunch>& children, double timeout_s,
                                               double peers_grace_s) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<pid_t> pids;
  for (const ChildLaunch& launch : children) {
    try {
      pids.push_back(spawn_self(launch));
    } catch (...) {
      for (pid_t pid : pids) kill_group_and_reap(pid);  // never leave half a launch running
      forget_launched(pids);
      throw;
    }
  }
  std::vector<ChildOutcome> outcomes(children.size());
  std::vector<bool> done(children.size(), false);
  size_t remaining = children.size();
  auto deadline = start + std::chrono::duration<double>(timeout_s);
  bool peer_failed = false;
  while (remaining > 0) {
    for (size_t i = 0; i < pids.size(); ++i) {
      if (done[i]) continue;
      if (has_ended(pids[i])) {
        int status = 0;
        if (reap_with_group(pids[i], status)) fill_outcome(status, outcomes[i]);
        outcomes[i].wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        done[i] = true;
        --remaining;
        const bool failed = outcomes[i].signal != 0 || (outcomes[i].exited && outcomes[i].exit_status != 0);
        if (failed && peers_grace_s >= 0 && !peer_failed) {
          peer_failed = true;
          const auto grace_end = std::chrono::steady_clock::now() + std::chrono::duration<double>(peers_grace_s);
          if (grace_end < deadline) deadline = grace_end;
        }
      }
    }
    if (remaining == 0) break;
    if (interrupted()) {
      stop_children(pids, done, outcomes, start);
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      for (size_t i = 0; i < pids.size(); ++i) {
        if (done[i]) continue;
        kill_group_and_reap(pids[i]);
        if (peer_failed) outcomes[i].outlived_peer = true;
        else outcomes[i].timed_out = true;
        outcomes[i].wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  forget_launched(pids);  // every one reaped by now
  return outcomes;
}

std::string last_line_of(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return last;
}

ChildOutcome run_self_as_watched_child(const std::vector<std::string>& args, const std::string& log_path,
                                       double timeout_s, ProgressTicker& ticker, size_t k, size_t n,
                                       const std::string& label, const std::string& progress_file, double elapsed_s) {
  if (!ticker.live()) return run_self_as_child(args, log_path, timeout_s);
  ChildLaunch launch;
  launch.args = args;
  launch.log_path = log_path;
  launch.environment = {{kProgressFileVariable, progress_file}};
  ticker.start(k, n, label, progress_file, elapsed_s, -1.0);
  const ChildOutcome outcome = run_self_as_children({launch}, timeout_s).at(0);
  ticker.stop();
  std::error_code ec;
  std::filesystem::remove(progress_file, ec);
  return outcome;
}

}  // namespace trainlab
