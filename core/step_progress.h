// A variant child's step progress, for the parent's live line: the child overwrites a small file
// (TRAINLAB_PROGRESS_FILE, set by the parent only when it shows progress) at most every 250 ms with
// "<steps done> <steps planned>"; the parent reads it while it waits. Nothing is written when the
// variable is unset, so a run that is not watched pays nothing. No LibTorch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace trainlab {

// The variable that names the file.
constexpr const char* kProgressFileVariable = "TRAINLAB_PROGRESS_FILE";

class StepProgressWriter {
 public:
  StepProgressWriter();  // opens the file named by TRAINLAB_PROGRESS_FILE, if any
  ~StepProgressWriter();
  StepProgressWriter(const StepProgressWriter&) = delete;
  StepProgressWriter& operator=(const StepProgressWriter&) = delete;
  // Called after every step: writes when 250 ms have passed since the last write (or on the last step).
  void step_done(int64_t done, int64_t planned, int64_t now_ns);

 private:
  int fd_ = -1;
  int64_t last_write_ns_ = 0;
};

struct StepProgress {
  int64_t done = 0;
  int64_t planned = 0;
};
// What the file says, or nullopt (no file yet, a torn or odd write).
std::optional<StepProgress> read_step_progress(const std::string& path);

// One live line: "[k/n] label  step s/t  elapsed 12 s, about 30 s left" (n = 0: "[k]", the total
// unknown; the step part when known, the estimate when >= 0).
std::string progress_line(size_t k, size_t n, const std::string& label, const std::optional<StepProgress>& steps,
                          double elapsed_s, double estimate_left_s);

}  // namespace trainlab
