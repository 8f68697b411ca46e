// CUPTI activity records as plain, CUPTI-independent structs, and their pure conversion into the
// Profile's TraceEvents (Kineto-style names, steady-clock time base, stream tracks) plus the
// kernel launch-latency analysis (runtime call start -> kernel start, matched by correlation id).
// No CUPTI header, no device: everything here is unit-testable on any machine.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/profile.h"

namespace trainlab {

// Numbering matches CUpti_ActivityMemcpyKind, so a raw CUPTI value converts by range check.
enum class MemcpyDirection : uint8_t {
  kUnknown = 0, kHtoD = 1, kDtoH = 2, kHtoA = 3, kAtoH = 4, kAtoA = 5,
  kAtoD = 6, kDtoA = 7, kDtoD = 8, kHtoH = 9, kPtoP = 10,
};
// Numbering matches CUpti_ActivityMemoryKind.
enum class MemoryKind : uint8_t {
  kUnknown = 0, kPageable = 1, kPinned = 2, kDevice = 3, kArray = 4,
  kManaged = 5, kDeviceStatic = 6, kManagedStatic = 7,
};
// Numbering matches CUpti_ActivitySynchronizationType.
enum class SyncType : uint8_t {
  kUnknown = 0, kEventSynchronize = 1, kStreamWaitEvent = 2, kStreamSynchronize = 3,
  kContextSynchronize = 4,
};
enum class ApiDomain : uint8_t { kRuntime, kDriver };

// A stream/context/device field CUPTI marks as not applicable (e.g. the stream of a context sync).
inline constexpr int64_t kNotApplicable = -1;

struct Dim3 {
  int64_t x = 0, y = 0, z = 0;
};

// All *_ns times below are in CUPTI's clock; conversion adds cupti_to_steady_ns.
struct KernelRecord {
  std::string name;                 // as CUPTI reports it (usually mangled)
  int64_t start_ns = 0, end_ns = 0;
  int64_t device = 0, context = 0, stream = 0;
  int64_t correlation = 0;
  Dim3 grid, block;
  int64_t static_shared_mem_bytes = 0;
  int64_t dynamic_shared_mem_bytes = 0;
  int64_t registers_per_thread = 0;
};

struct MemcpyRecord {
  MemcpyDirection direction = MemcpyDirection::kUnknown;
  MemoryKind src_kind = MemoryKind::kUnknown, dst_kind = MemoryKind::kUnknown;
  int64_t bytes = 0;
  int64_t start_ns = 0, end_ns = 0;
  int64_t device = 0, context = 0, stream = 0;
  int64_t correlation = 0;
  int64_t runtime_correlation = 0;  // CUPTI's runtimeCorrelationId; 0 when none
  int64_t src_device = kNotApplicable, dst_device = kNotApplicable;  // peer-to-peer copies only
};

struct MemsetRecord {
  MemoryKind memory_kind = MemoryKind::kUnknown;
  int64_t value = 0;
  int64_t bytes = 0;
  int64_t start_ns = 0, end_ns = 0;
  int64_t device = 0, context = 0, stream = 0;
  int64_t correlation = 0;
};

struct SyncRecord {
  SyncType type = SyncType::kUnknown;
  int64_t start_ns = 0, end_ns = 0;
  int64_t context = kNotApplicable;
  int64_t stream = kNotApplicable;   // kNotApplicable for context-wide / event syncs
  int64_t event = kNotApplicable;    // CUDA event id for event syncs and stream-wait-event
  int64_t correlation = 0;
};

struct RuntimeApiRecord {
  ApiDomain domain = ApiDomain::kRuntime;
  int64_t cbid = 0;                 // CUPTI callback id within the domain
  std::string name;                 // e.g. "cudaLaunchKernel_v7000"; empty: unknown
  int64_t start_ns = 0, end_ns = 0;
  int64_t process_id = 0, thread_id = 0;  // thread id as CUPTI reports it
  int64_t correlation = 0;
  int64_t return_value = 0;
};

// Everything one capture delivered, in arrival order.
struct CuptiBatch {
  std::vector<KernelRecord> kernels;
  std::vector<MemcpyRecord> memcpys;
  std::vector<MemsetRecord> memsets;
  std::vector<SyncRecord> syncs;
  std::vector<RuntimeApiRecord> api_calls;

  size_t size() const {
    return kernels.size() + memcpys.size() + memsets.size() + syncs.size() + api_calls.size();
  }
  bool empty() const { return size() == 0; }
  void clear();
  void append(CuptiBatch&& other);
};

// Labels. Names follow Kineto ("HtoD", "Pinned", "Stream Sync"); arg values are lower case.
const char* memcpy_direction_name(MemcpyDirection direction);  // "HtoD", ..., "Unknown"
const char* memory_kind_name(MemoryKind kind);                 // "Pageable", "Pinned", "Device", ...
const char* memory_kind_arg(MemoryKind kind);                  // "pageable", "pinned", "device", ...
const char* sync_type_name(SyncType type);                     // "Event Sync", "Stream Sync", ...
const char* sync_type_arg(SyncType type);                      // "event", "stream", "context", ...
// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel"; "" -> "cuda_runtime_api_<cbid>" / "cuda_driver_api_<cbid>".
std::string api_display_name(const RuntimeApiRecord& call);
// Itanium C++ demangling; the input unchanged when it is not a mangled name.
std::string demangle_kernel_name(const std::string& name);

// One event per record. cupti_to_steady_ns: steady_ns = cupti_ns + cupti_to_steady_ns.
// Device work: on_device = true, device = the device, track = the CUPTI stream id.
TraceEvent kernel_event(const KernelRecord& kernel, int64_t cupti_to_steady_ns);
TraceEvent memcpy_event(const MemcpyRecord& copy, int64_t cupti_to_steady_ns);
TraceEvent memset_event(const MemsetRecord& memset, int64_t cupti_to_steady_ns);
// A sync record carries no device: pass it (from context_devices below); track = stream, or
// kNotApplicable for context-wide and event syncs.
TraceEvent sync_event(const SyncRecord& sync, int64_t device, int64_t cupti_to_steady_ns);
// Host work: on_device = false, track = the calling thread id.
TraceEvent runtime_event(const RuntimeApiRecord& call, int64_t cupti_to_steady_ns);

// context id -> device id, learnt from the records that carry both (kernels, copies, memsets).
std::map<int64_t, int64_t> context_devices(const CuptiBatch& batch);

struct CuptiConversionStats {
  int64_t untimed_records = 0;  // start == end == 0: CUPTI could not time them; skipped
};
// Every timed record of the batch, kernels demangled, syncs placed on their context's device
// (device 0 when the context never appeared on a device record).
std::vector<TraceEvent> to_trace_events(const CuptiBatch& batch, int64_t cupti_to_steady_ns,
                                        CuptiConversionStats* stats = nullptr);

// Launch latency: for each kKernel event whose correlation matches a kRuntime event (the earliest
// such call when several share it), latency_ns = kernel.start_ns - call.start_ns, written into
// the kernel's args["launch_latency_ns"]. Kernels without a matching call are counted, not errors.
struct LaunchLatencySummary {
  int64_t count = 0;              // kernels with a matching API call
  int64_t unmatched_kernels = 0;  // kernels whose call was not captured
  double mean_ns = 0;
  int64_t p50_ns = 0;             // nearest rank: the lower middle of the sorted latencies
  int64_t max_ns = 0;
};
LaunchLatencySummary annotate_launch_latency(std::vector<TraceEvent>& events);
nlohmann::json to_json(const LaunchLatencySummary& summary);
// One line for Profile::notes, e.g. "CUPTI launch latency: 120 kernels, mean 6.1 us, p50 5.0 us,
// max 41.2 us (2 kernels without a captured launch call)".
std::string describe(const LaunchLatencySummary& summary);

}  // namespace trainlab
