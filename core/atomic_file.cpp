// Atomic writes through temp-file-then-rename; whole-file reads with clear errors; tree removal
// through nftw (POSIX).
#include "core/atomic_file.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/errors.h"
#include "core/untrusted_input.h"

namespace trainlab {
namespace fs = std::filesystem;

namespace {
thread_local std::string* g_remove_error = nullptr;

int remove_entry(const char* path, const struct stat*, int, struct FTW*) {
  if (::remove(path) != 0 && errno != ENOENT) {
    if (g_remove_error != nullptr && g_remove_error->empty()) {
      *g_remove_error = std::string("cannot remove ") + path + ": " + std::strerror(errno);
    }
  }
  return 0;  // carry on: remove what can be removed
}
}  // namespace

bool remove_tree(const std::string& path, std::string* error) {
  std::string first_error;
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) {
    if (errno == ENOENT) return true;
    first_error = "cannot remove " + path + ": " + std::strerror(errno);
  } else {
    g_remove_error = &first_error;
    // Depth first (contents before their folder), physical (symlinks are not followed).
    if (::nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0 && first_error.empty()) {
      first_error = "cannot remove " + path + ": " + std::strerror(errno);
    }
    g_remove_error = nullptr;
  }
  if (error != nullptr) *error = first_error;
  return first_error.empty();
}

void write_file_atomically(const std::string& path, const std::string& content) {
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmp_template = (dir / ("." + target.filename().string() + ".tmp.XXXXXX")).string();
  int fd = ::mkstemp(tmp_template.data());
  if (fd < 0) {
    throw InputError("cannot write " + path + ": " + std::strerror(errno));
  }
  size_t written_bytes = 0;
  while (written_bytes < content.size()) {
    ssize_t n = ::write(fd, content.data() + written_bytes, content.size() - written_bytes);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp_template.c_str());
      throw InputError("cannot write " + path + ": " + why);
    }
    written_bytes += static_cast<size_t>(n);
  }
  ::fchmod(fd, 0644);
  ::fsync(fd);
  ::close(fd);
  if (::rename(tmp_template.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp_template.c_str());
    throw InputError("cannot write " + path + ": " + why);
  }
}

int open_for_reading(const std::string& path, struct stat* info) {
  if (::stat(path.c_str(), info) != 0) return -1;
  if (S_ISDIR(info->st_mode)) {
    errno = EISDIR;
    return -1;
  }
  // Opened without waiting for a writer, then switched back to blocking reads (a pipe whose
  // writer has gone, or never came, reads as its end).
  const bool fifo = S_ISFIFO(info->st_mode);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (fifo ? O_NONBLOCK : 0));
  if (fd >= 0 && fifo) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

namespace {
[[noreturn]] void refuse_large_file(const std::string& path, int64_t max_bytes) {
  throw InputError("cannot read " + path + ": larger than " + bytes_limit_text(max_bytes) +
                   ", the limit for a run record, thresholds or other JSON side file (set " +
                   kMaxFileMbVariable + " to raise it)");
}
}  // namespace

std::string read_file(const std::string& path, int64_t max_bytes) {
  if (max_bytes < 0) max_bytes = side_file_limit_bytes();
  struct stat info {};
  const int fd = open_for_reading(path, &info);
  if (fd < 0) {
    if (errno == ENOENT) throw InputError("no such file: " + path);
    if (errno == EISDIR) throw InputError("expected a file, found a folder: " + path);
    throw InputError("cannot read " + path + ": " + std::strerror(errno));
  }
  if (S_ISREG(info.st_mode) && info.st_size > max_bytes) {
    ::close(fd);
    refuse_large_file(path, max_bytes);
  }
  std::string text;
  if (S_ISREG(info.st_mode)) text.reserve(static_cast<size_t>(info.st_size));
  char chunk[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd, chunk, sizeof chunk);
    if (got > 0) {
      if (static_cast<int64_t>(text.size()) + got > max_bytes) {  // a device, a pipe, or a file that grew
        ::close(fd);
        refuse_large_file(path, max_bytes);
      }
      text.append(chunk, static_cast<size_t>(got));
    } else if (got == 0) {
      break;
    } else if (errno != EINTR) {
      const int read_errno = errno;
      ::close(fd);
      throw InputError("cannot read " + path + ": " + std::strerror(read_errno));
    }
  }
  ::close(fd);
  return text;
}

void ensure_writable_dir(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) throw InputError("cannot create results folder " + path + ": " + ec.message());
  if (!fs::is_directory(path, ec)) throw InputError("results path is not a folder: " + path);
  if (::access(path.c_str(), W_OK | X_OK) != 0) {
    throw InputError("results folder is not writable: " + path);
  }
}

}  // namespace trainlab
