// The capture window's event sink: each thread appends spans to its own bounded buffer (its own
// uncontended lock, no allocation once the buffer has grown), counts what did not fit, and
// collect() gathers every thread's events into a Profile. Disabled, record() is one relaxed atomic
// load. Two kinds of span: full TraceEvents (step/phase spans, annotations, collectives with args)
// and compact op spans (an interned name id and two times, 24 bytes) for the op capture's hot
// path, turned into TraceEvents only at collect(). No LibTorch.
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

  // The op capture's hot path: one compact span (name from intern_name()). Same buffer bound and
  // drop count as record().
  void record_op(uint32_t name_id, int64_t start_ns, int64_t end_ns);
  // A stable id for a name, for the life of the process. Fast on the calling thread's repeat names
  // (a pointer-keyed cache checked against the stored text, so a reused buffer holding another
  // name is never mistaken); a new name takes a global lock once.
  static uint32_t intern_name(const char* name);
  static std::string interned_name(uint32_t name_id);

  // Moves every thread's events into profile (events appended; dropped["events"] += lost).
  void collect(Profile& profile);
  int64_t dropped() const;
  // Thread buffers currently registered (one per live thread that has recorded, plus exited
  // threads' until the next collect()).
  size_t registered_threads() const;

  // The measured cost of writing one op span (intern_name + record_op), in ns: median of a few
  // thousand, into a scratch window that is then discarded. Only the buffer write: what a captured
  // event costs in full is OpCapture::calibrate_event_cost_ns (profiler/op_capture.h).
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
