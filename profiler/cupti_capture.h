// CuptiCapture: the thin wrapper that asks CUPTI for kernel / copy / memset / sync / CUDA API
// activity records, converts them to plain records as buffers complete (cupti_records.h) and
// hands them over as TraceEvents in the steady-clock time base. CUPTI is process-global, so one
// running capture at a time per process (a second start() is refused with a reason). Every
// failure is a reason string, never an exception or output. Built without CUPTI (no
// TRAINLAB_HAVE_CUPTI), it compiles to stubs that say so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "profiler/cupti_records.h"
#include "core/profile.h"

namespace trainlab {

struct CuptiCaptureOptions {
  size_t buffer_bytes = size_t{4} << 20;  // one CUPTI activity buffer
  size_t buffer_count = 8;                // at most this many buffers live; beyond, CUPTI drops
  size_t max_records = 2'000'000;         // records kept until take(); beyond, counted as dropped
  bool driver_api = true;                 // also record CUDA driver API calls (not only runtime)
};

class CuptiCapture {
 public:
  explicit CuptiCapture(CuptiCaptureOptions options = {});
  ~CuptiCapture();  // stops a running capture
  CuptiCapture(const CuptiCapture&) = delete;
  CuptiCapture& operator=(const CuptiCapture&) = delete;

  // Whether this build has CUPTI at all.
  static bool compiled_in();

  // Registers the buffer callbacks, enables the activity kinds and measures the CUPTI -> steady
  // clock offset. On failure returns false, leaves nothing enabled, and sets *why_not (if given)
  // to one line such as "CUPTI unavailable: cuptiActivityEnable(CONCURRENT_KERNEL) returned
  // CUPTI_ERROR_UNKNOWN (no CUDA driver or GPU?); kernel capture off".
  bool start(std::string* why_not);
  // Flushes every buffer (forced), disables the activity kinds and keeps the records for take().
  // Idempotent; the destructor calls it.
  void stop();
  bool running() const { return running_; }

  // Appends what was captured since start() (or the last take()) to profile: the events, the
  // launch-latency summary (a note), dropped["cupti"] (records CUPTI dropped plus records over
  // max_records). Call after stop() for a complete capture; while running it takes what the
  // completed buffers delivered so far.
  void take(Profile& profile);

  // steady_ns = cupti_ns + clock_offset_ns() (measured by start()).
  int64_t clock_offset_ns() const { return clock_offset_ns_; }
  // The launch-latency summary of the last take().
  const LaunchLatencySummary& last_launch_latency() const { return last_launch_latency_; }

 private:
  void release_slot();                  // gives the process-wide CUPTI slot back
  void drain_shared_state(bool final);  // moves what the callbacks collected into taken_

  CuptiCaptureOptions options_;
  bool running_ = false;
  bool captured_ = false;    // start() succeeded at least once
  bool owns_cupti_ = false;  // this object holds the process-wide CUPTI slot (while running)
  int64_t clock_offset_ns_ = 0;
  LaunchLatencySummary last_launch_latency_;
  // Collected, not yet taken.
  CuptiBatch taken_;
  int64_t cupti_dropped_records_ = 0;
  int64_t records_over_cap_ = 0;
  int64_t buffers_over_cap_ = 0;
  int64_t refused_buffer_requests_ = 0;
  int64_t unconverted_records_ = 0;
};

// Appends one raw CUPTI activity record (a `const CUpti_Activity*` of the CUDA 13 layouts:
// CUpti_ActivityKernel10, CUpti_ActivityMemcpy6, CUpti_ActivityMemcpyPtoP4, CUpti_ActivityMemset4,
// CUpti_ActivitySynchronization2, CUpti_ActivityAPI) to batch as a plain record. Returns false
// for other kinds, and always when built without CUPTI. API call names are resolved through
// cuptiGetCallbackName (needs no device).
bool append_cupti_record(const void* cupti_activity, CuptiBatch& batch);

}  // namespace trainlab
