// The capture window's event sink: each thread appends spans to its own bounded buffer (no lock
// on the hot path), counts what did not fit, and collect() gathers every thread's events into a
// Profile. Disabled, record() is one relaxed atomic load. Used by the op capture (RecordFunction),
// the training loop's step/phase spans and user annotations. No LibTorch.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "core/profile.h"

namespace trainlab {

class EventRecorder {
 public:
  static EventRecorder& instance();

  // Starts a window: clears earlier buffers; each thread keeps at most max_events_per_thread.
  void enable(size_t max_events_per_thread);
  void disable();
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }

  // Appends one span on the calling thread's track (gettid). Dropped (counted) when that thread's
  // buffer is full. args may be null.
  void record(EventKind kind, const char* name, int64_t start_ns, int64_t end_ns,
              const nlohmann::json* args = nullptr);

  // Moves every thread's events into profile (events appended; dropped["events"] += lost).
  void collect(Profile& profile);
  int64_t dropped() const;
  // Thread buffers currently registered (one per live thread that has recorded, plus exited
  // threads' until the next collect()).
  size_t registered_threads() const;

  // The measured cost of one record() call, in ns (median of a few thousand, measured into a
  // scratch buffer that is then discarded); used to state the profiler's overhead.
  static double measure_record_cost_ns();

 private:
  EventRecorder() = default;
  std::atomic<bool> enabled_{false};
  std::atomic<uint64_t> generation_{0};
  size_t max_events_per_thread_ = 0;
};

// Current thread's id as the kernel knows it (the trace's tid).
int64_t current_thread_id();

// The profiler's clock: steady clock in nanoseconds (the same clock as the loop's timers).
int64_t steady_ns();

}  // namespace trainlab
