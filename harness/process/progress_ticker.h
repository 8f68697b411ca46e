// The live progress line of the commands that run variants (run, profile, baseline, sweep): while a
// variant's child runs, one terminal line is rewritten every second with the variant (k of n), the
// child's step (from its progress file, core/step_progress.h), the time so far and an estimate of
// the time left. Only on a terminal: not live, it prints nothing. Torch-free.
#pragma once

#include <condition_variable>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>

namespace trainlab {

class ProgressTicker {
 public:
  ProgressTicker(std::ostream& out, bool live) : out_(out), live_(live) {}
  ~ProgressTicker() { stop(); }
  ProgressTicker(const ProgressTicker&) = delete;
  ProgressTicker& operator=(const ProgressTicker&) = delete;

  bool live() const { return live_; }
  // Variant k of n starts. progress_file: what its child writes its steps to ("" none); elapsed_s:
  // the run's time before it; mean_variant_s: the finished variants' mean wall time (< 0: none yet).
  void start(size_t k, size_t n, const std::string& label, const std::string& progress_file, double elapsed_s,
             double mean_variant_s);
  // Clears the line (the caller then prints the variant's result line).
  void stop();

 private:
  std::ostream& out_;
  bool live_;
  bool running_ = false;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread thread_;
};

// The estimate of the time left: the rest of this variant (from its step rate, else from the mean
// of the finished ones) and the variants after it (at that mean, else at this one's projected
// time). -1 when nothing is known yet.
double estimate_left_s(size_t k, size_t n, double in_variant_s, int64_t steps_done, int64_t steps_planned,
                       double mean_variant_s);

}  // namespace trainlab
