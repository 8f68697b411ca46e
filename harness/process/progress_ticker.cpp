// The live progress line: a thread that rewrites one terminal line every second.
#include "harness/process/progress_ticker.h"

#include <algorithm>
#include <chrono>

#include "core/step_progress.h"

namespace trainlab {

double estimate_left_s(size_t k, size_t n, double in_variant_s, int64_t steps_done, int64_t steps_planned,
                       double mean_variant_s) {
  const double after = static_cast<double>(n > k ? n - k : 0);
  if (steps_done > 0 && steps_planned >= steps_done) {
    const double per_step_s = in_variant_s / static_cast<double>(steps_done);
    const double this_left_s = per_step_s * static_cast<double>(steps_planned - steps_done);
    const double each_after_s = mean_variant_s >= 0 ? mean_variant_s : per_step_s * static_cast<double>(steps_planned);
    return this_left_s + after * each_after_s;
  }
  if (mean_variant_s < 0) return -1;
  return std::max(0.0, mean_variant_s - in_variant_s) + after * mean_variant_s;
}

void ProgressTicker::start(size_t k, size_t n, const std::string& label, const std::string& progress_file,
                           double elapsed_s, double mean_variant_s) {
  stop();
  if (!live_) return;
  running_ = true;
  thread_ = std::thread([=] {
    const auto variant_start = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(mutex_);
    do {
      const double in_variant_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - variant_start).count();
      const std::optional<StepProgress> steps =
          progress_file.empty() ? std::nullopt : read_step_progress(progress_file);
      const double left_s = estimate_left_s(k, n, in_variant_s, steps ? steps->done : 0, steps ? steps->planned : 0,
                                            mean_variant_s);
      out_ << "\r\033[K" << progress_line(k, n, label, steps, elapsed_s + in_variant_s, left_s) << std::flush;
    } while (!wake_.wait_for(lock, std::chrono::seconds(1), [&] { return !running_; }));
  });
}

void ProgressTicker::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = false;
  }
  wake_.notify_all();
  thread_.join();
  out_ << "\r\033[K" << std::flush;
}

}  // namespace trainlab
