// Per-step phase timing. On CPU, host timestamps at each phase boundary. On CUDA, device events
// recorded at the same boundaries on the current stream, resolved once after the loop, so the
// measured phases are device time and no per-step synchronisation is added.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/run_record.h"

namespace trainlab {

// Device-event timeline (CUDA); defined in cuda_timeline.cpp.
class DeviceTimeline {
 public:
  virtual ~DeviceTimeline() = default;
  virtual void mark() = 0;  // records an event on the current stream
  // Waits for the device, then returns the elapsed ns between consecutive marks.
  virtual std::vector<int64_t> resolve_ns() = 0;
};
std::unique_ptr<DeviceTimeline> make_cuda_timeline();

int64_t now_ns();  // steady clock, nanoseconds

class PhaseClock {
 public:
  explicit PhaseClock(bool use_device_events);
  void begin_step();
  void end_phase(Phase phase);  // phases must be ended in loop order; skipped ones stay 0
  void end_step(StepRecord& step);
  // CUDA: fills the device-time phases of all recorded steps (one synchronisation, after timing).
  void finalize(std::vector<StepRecord>& steps);

  // Host-side boundaries of the step just ended: its start and each phase's (phase, end) in order,
  // the last being kOther at the step's end (the profiler draws its phase spans from these).
  int64_t step_start_ns() const { return step_start_ns_; }
  const std::vector<std::pair<Phase, int64_t>>& host_marks() const { return host_marks_; }

 private:
  std::vector<std::pair<Phase, int64_t>> host_marks_;
  std::unique_ptr<DeviceTimeline> timeline_;
  int64_t step_start_ns_ = 0;
  int64_t last_mark_ns_ = 0;
  PhaseTimes current_{};
  std::vector<std::vector<Phase>> phases_per_step_;  // which phase each device mark closed
};

}  // namespace trainlab
