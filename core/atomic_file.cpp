// Atomic writes through temp-file-then-rename (write-through for devices and FIFOs, symlinks
// followed); whole-file reads with clear errors; tree removal through nftw (POSIX).
#include "core/atomic_file.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
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

namespace {

[[noreturn]] void throw_write_error(const std::string& path, int error_number) {
  throw InputError("cannot write " + path + ": " + std::strerror(error_number));
}

// Writes all of `content` to `fd`; returns 0 or the errno of the first failed write.
int write_all(int fd, const std::string& content) {
  size_t written_bytes = 0;
  while (written_bytes < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written_bytes, content.size() - written_bytes);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    written_bytes += static_cast<size_t>(n);
  }
  return 0;
}

// A device, FIFO or socket at the path is the user's: it is written to, never replaced by a
// regular file (`--out /dev/stdout` prints, `--out /dev/full` fails as the device says).
void write_through(const std::string& path, const std::string& shown, const std::string& content, bool fifo) {
  // A FIFO is opened without waiting: no reader is an error now, not a hang.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | (fifo ? O_NONBLOCK : 0));
  if (fd < 0) {
    if (fifo && errno == ENXIO) throw InputError("cannot write " + shown + ": a FIFO with no reader");
    throw_write_error(shown, errno);
  }
  if (fifo) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  const int write_errno = write_all(fd, content);
  if (::close(fd) != 0 && write_errno == 0 && errno != EINTR) throw_write_error(shown, errno);
  if (write_errno != 0) throw_write_error(shown, write_errno);
}

// Where the content of `path` belongs: the path itself, or the file a symlink leads to (followed,
// so the link stays a link). A dangling link is refused: what it should point at is the user's call.
std::string resolve_write_target(const std::string& path) {
  struct stat link_info {};
  if (::lstat(path.c_str(), &link_info) != 0 || !S_ISLNK(link_info.st_mode)) return path;
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (resolved == nullptr) {
    char target[4096];
    const ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
    const std::string to = n > 0 ? std::string(target, static_cast<size_t>(n)) : std::string("?");
    throw InputError("cannot write " + path + ": it is a symlink to " + to + ", which does not exist");
  }
  std::string target(resolved);
  std::free(resolved);
  return target;
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& content) {
  const std::string target_path = resolve_write_target(path);
  struct stat info {};
  if (::stat(target_path.c_str(), &info) == 0) {
    if (S_ISDIR(info.st_mode)) throw InputError("cannot write " + path + ": it is a folder");
    if (!S_ISREG(info.st_mode)) return write_through(target_path, path, content, S_ISFIFO(info.st_mode));
  }
  const fs::path target(target_path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmp_template = (dir / ("." + target.filename().string() + ".tmp.XXXXXX")).string();
  const int fd = ::mkstemp(tmp_template.data());
  if (fd < 0) throw_write_error(path, errno);
  int error_number = write_all(fd, content);
  ::fchmod(fd, 0644);
  if (error_number == 0 && ::fsync(fd) != 0 && errno != EINVAL) error_number = errno;  // EINVAL: not syncable
  if (::close(fd) != 0 && error_number == 0 && errno != EINTR) error_number = errno;
  if (error_number == 0 && ::rename(tmp_template.c_str(), target_path.c_str()) != 0) error_number = errno;
  if (error_number != 0) {
    ::unlink(tmp_template.c_str());
    throw_write_error(path, error_number);
  }
}

std::string make_temp_file(const std::string& stem) {
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string dir = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
  std::string path = dir + "/" + stem + "-XXXXXX";
  const int fd = ::mkstemp(path.data());
  if (fd < 0) throw InputError("cannot create a temporary file in " + dir + ": " + std::strerror(errno));
  ::close(fd);
  return path;
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

namespace {

// The first part of `path` (itself or a folder above it) that is a symlink to nothing, or "".
std::string dangling_symlink_in(const fs::path& path) {
  std::error_code ec;
  for (fs::path part = path; !part.empty() && part != part.parent_path(); part = part.parent_path()) {
    if (fs::is_symlink(part, ec) && !fs::exists(part, ec)) return part.string();
  }
  return "";
}

}  // namespace

void ensure_writable_dir(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) {
    // create_directories says "File exists" for a dangling symlink: name the link and its target.
    const std::string link = dangling_symlink_in(path);
    if (!link.empty()) {
      std::error_code read_ec;
      const std::string target = fs::read_symlink(link, read_ec).string();
      throw InputError(link + " is a symlink to a missing folder " + target);
    }
    throw InputError("cannot create results folder " + path + ": " + ec.message());
  }
  if (!fs::is_directory(path, ec)) throw InputError("results path is not a folder: " + path);
  if (::access(path.c_str(), W_OK | X_OK) != 0) {
    throw InputError("results folder is not writable: " + path);
  }
}

}  // namespace trainlab
