// Atomic writes through temp-file-then-rename; whole-file reads with clear errors.
#include "harness/core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/core/errors.h"

namespace trainlab {
namespace fs = std::filesystem;

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

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InputError("no such file: " + path);
  if (fs::is_directory(path, ec)) throw InputError("expected a file, found a folder: " + path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void ensure_writable_dir(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) throw InputError("cannot create results folder " + path + ": " + ec.message());
  if (!fs::is_directory(path)) throw InputError("results path is not a folder: " + path);
  if (::access(path.c_str(), W_OK | X_OK) != 0) {
    throw InputError("results folder is not writable: " + path);
  }
}

}  // namespace trainlab
