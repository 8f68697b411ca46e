// The step progress file and the live line's text.
#include "core/step_progress.h"

#include <fcntl.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>

namespace trainlab {

StepProgressWriter::StepProgressWriter() {
  const char* path = std::getenv(kProgressFileVariable);
  if (path != nullptr && *path != '\0') fd_ = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
}

StepProgressWriter::~StepProgressWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void StepProgressWriter::step_done(int64_t done, int64_t planned, int64_t now_ns) {
  if (fd_ < 0) return;
  constexpr int64_t kEveryNs = 250'000'000;
  if (done < planned && now_ns - last_write_ns_ < kEveryNs) return;
  last_write_ns_ = now_ns;
  // Fixed width: each write covers the whole previous text.
  char text[48];
  const int n = std::snprintf(text, sizeof text, "%20" PRId64 " %20" PRId64 "\n", done, planned);
  if (n > 0) (void)!::pwrite(fd_, text, static_cast<size_t>(n), 0);
}

std::optional<StepProgress> read_step_progress(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return std::nullopt;
  long long done = 0, planned = 0;
  const int read = std::fscanf(f, "%lld %lld", &done, &planned);
  std::fclose(f);
  if (read != 2 || done < 0 || planned <= 0 || done > planned) return std::nullopt;
  return StepProgress{done, planned};
}

std::string progress_line(size_t k, size_t n, const std::string& label, const std::optional<StepProgress>& steps,
                          double elapsed_s, double estimate_left_s) {
  char text[160];
  std::string line = "[" + std::to_string(k) + (n > 0 ? "/" + std::to_string(n) : std::string()) + "] " + label;
  if (steps) line += "  step " + std::to_string(steps->done) + "/" + std::to_string(steps->planned);
  std::snprintf(text, sizeof text, "  elapsed %.0f s", elapsed_s);
  line += text;
  if (estimate_left_s >= 0) {
    std::snprintf(text, sizeof text, ", about %.0f s left", estimate_left_s);
    line += text;
  }
  return line;
}

}  // namespace trainlab
