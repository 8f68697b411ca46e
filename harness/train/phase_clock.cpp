// Host-side phase clock; device phases are filled from the CUDA timeline when there is one.
#include "harness/train/phase_clock.h"

#include <chrono>

namespace trainlab {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

PhaseClock::PhaseClock(bool use_device_events) {
  if (use_device_events) timeline_ = make_cuda_timeline();
}

void PhaseClock::begin_step() {
  step_start_ns_ = now_ns();
  last_mark_ns_ = step_start_ns_;
  current_.fill(0);
  host_marks_.clear();
  if (timeline_) {
    timeline_->mark();
    phases_per_step_.emplace_back();
  }
}

void PhaseClock::end_phase(Phase phase) {
  const int64_t t = now_ns();
  current_[static_cast<size_t>(phase)] += t - last_mark_ns_;
  last_mark_ns_ = t;
  host_marks_.emplace_back(phase, t);
  if (timeline_) {
    timeline_->mark();
    phases_per_step_.back().push_back(phase);
  }
}

void PhaseClock::end_step(StepRecord& step) {
  const int64_t t = now_ns();
  current_[static_cast<size_t>(Phase::kOther)] += t - last_mark_ns_;
  host_marks_.emplace_back(Phase::kOther, t);
  if (timeline_) {
    timeline_->mark();
    phases_per_step_.back().push_back(Phase::kOther);
  }
  step.step_ns = t - step_start_ns_;
  step.phase_ns = current_;
}

void PhaseClock::finalize(std::vector<StepRecord>& steps) {
  if (!timeline_) return;
  const std::vector<int64_t> intervals = timeline_->resolve_ns();
  size_t next = 0;
  for (size_t s = 0; s < steps.size() && s < phases_per_step_.size(); ++s) {
    PhaseTimes device{};
    int64_t total = 0;
    for (Phase phase : phases_per_step_[s]) {
      if (next >= intervals.size()) return;
      device[static_cast<size_t>(phase)] += intervals[next];
      total += intervals[next++];
    }
    ++next;  // the gap between this step's end mark and the next step's begin mark
    // Data wait is what the host spent waiting for the loader; it stays a host measurement.
    device[static_cast<size_t>(Phase::kDataWait)] =
        std::max(device[static_cast<size_t>(Phase::kDataWait)], steps[s].phase_ns[static_cast<size_t>(Phase::kDataWait)]);
    steps[s].phase_ns = device;
    steps[s].step_ns = std::max(total, steps[s].step_ns);
  }
}

}  // namespace trainlab
