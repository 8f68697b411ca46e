// RUN_DIR/.running held with flock(2) by the running process (close-on-exec, so its children do
// not hold it on); a reader tries a shared lock without waiting: refused means still running.
#include "harness/runner/run_liveness.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

namespace trainlab {
namespace fs = std::filesystem;

namespace {
constexpr const char* kMarkName = ".running";
}  // namespace

RunningMark::RunningMark(const std::string& run_dir) : path_((fs::path(run_dir) / kMarkName).string()) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);  // a planted link or FIFO: no mark
  // Without a lock a reader would take the run for one that ended early: then no mark at all.
  if (fd_ >= 0 && ::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    ::unlink(path_.c_str());
    ::close(fd_);
    fd_ = -1;
  }
}

RunningMark::~RunningMark() {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());
  ::close(fd_);
}

RunState run_state(const std::string& run_dir) {
  const std::string path = (fs::path(run_dir) / kMarkName).string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return RunState::kFinished;
  const bool locked = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // closing lets go of a lock this took
  return locked ? RunState::kRunning : RunState::kEndedEarly;
}

std::string unfinished_run_problem(const RunRecord& record, const std::string& path_or_folder) {
  if (std::any_of(record.variants.begin(), record.variants.end(), [](const VariantRecord& v) { return v.ok(); })) {
    return "";
  }
  std::error_code ec;
  std::string dir =
      fs::is_directory(path_or_folder, ec) ? path_or_folder : fs::path(path_or_folder).parent_path().string();
  if (dir.empty()) dir = ".";  // a bare "run.json": the working folder
  switch (run_state(dir)) {
    case RunState::kRunning:
      return path_or_folder + ": the run is still running: no variant finished yet";
    case RunState::kEndedEarly:
      return path_or_folder + ": the run ended before any variant finished (killed?)";
    case RunState::kFinished:
      break;
  }
  return "";
}

}  // namespace trainlab
