// The Profile (DESIGN §2): what a profiled run captured, in one time base (steady-clock int64
// nanoseconds, as monotonic_ns()). Events are spans (ops, kernels, copies, runtime calls, steps,
// phases, user annotations) on a track (a thread id, or a CUDA stream); counters are time series
// (system metrics). The native profiler and the trace importer both produce it; nothing
// downstream knows which one did. No LibTorch.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainlab {

enum class EventKind {
  kStep,        // ProfilerStep#N
  kPhase,       // data_wait, host_to_device, forward, backward, optimizer, other
  kAnnotation,  // user scopes (trainlab::Annotate)
  kCpuOp,       // LibTorch operators (RecordFunction)
  kRuntime,     // CUDA runtime/driver API calls (CUPTI)
  kKernel,      // device kernels (CUPTI)
  kMemcpy,      // device copies (CUPTI)
  kMemset,      // device memsets (CUPTI)
  kSync,        // synchronisations (CUPTI)
};
const char* to_string(EventKind kind);

struct TraceEvent {
  EventKind kind = EventKind::kCpuOp;
  std::string name;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  bool on_device = false;          // true: track is a device stream (device, stream); false: a host thread
  int64_t device = 0;              // device index when on_device
  int64_t track = 0;               // host thread id (gettid) or CUDA stream id
  int64_t correlation = -1;        // links a runtime call to the kernel/copy it launched (CUPTI)
  nlohmann::json args;             // null, or an object: e.g. grid, block, bytes, direction, shapes

  int64_t duration_ns() const { return end_ns - start_ns; }
};

struct CounterSample {
  int64_t time_ns = 0;
  double value = 0;
};

struct CounterTrack {
  std::string name;                // e.g. "cpu.process_pct", "cpu.core3_pct", "mem.rss_bytes"
  std::string unit;                // "pct", "bytes", "bytes_per_s", "W"
  std::vector<CounterSample> samples;
};

struct Profile {
  std::vector<TraceEvent> events;
  std::vector<CounterTrack> counters;
  std::map<std::string, int64_t> dropped;  // source -> events or records lost (buffer full, missed ticks)
  std::vector<std::string> notes;          // e.g. "CUPTI unavailable: no CUDA driver"
  std::map<int64_t, std::string> thread_names;  // host track (thread id) -> the thread's name, where known
};

}  // namespace trainlab
