// The CUPTI side of kernel capture: buffer callbacks over a bounded buffer pool, activity-kind
// enabling, the CUPTI -> steady clock offset, and the conversion of the CUDA 13 activity structs
// into plain records (cupti_records.h). The only file that includes CUPTI headers; without
// TRAINLAB_HAVE_CUPTI it compiles to stubs.
#include "profiler/cupti_capture.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iterator>
#include <map>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

#ifdef TRAINLAB_HAVE_CUPTI
#include <cupti.h>
#if !defined(CUPTI_API_VERSION) || CUPTI_API_VERSION < 130000
#error "trainlab reads the CUDA 13 CUPTI activity layouts (CUpti_ActivityKernel10, ...): need CUPTI >= 13"
#endif
#endif

namespace trainlab {

#ifdef TRAINLAB_HAVE_CUPTI

namespace {

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string result_text(CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) {
    return "CUPTI error " + std::to_string(static_cast<int>(result));
  }
  return text;
}

MemcpyDirection to_direction(uint32_t value) {
  return value <= static_cast<uint32_t>(MemcpyDirection::kPtoP) ? static_cast<MemcpyDirection>(value)
                                                               : MemcpyDirection::kUnknown;
}
MemoryKind to_memory_kind(uint32_t value) {
  return value <= static_cast<uint32_t>(MemoryKind::kManagedStatic) ? static_cast<MemoryKind>(value)
                                                                    : MemoryKind::kUnknown;
}
SyncType to_sync_type(uint32_t value) {
  return value <= static_cast<uint32_t>(SyncType::kContextSynchronize) ? static_cast<SyncType>(value)
                                                                       : SyncType::kUnknown;
}
int64_t id_or_not_applicable(uint32_t id) {
  return id == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? kNotApplicable : static_cast<int64_t>(id);
}

// cbid -> "cudaLaunchKernel_v7000"; the table lookup is cached since every API record needs it.
std::string callback_name(ApiDomain domain, CUpti_CallbackId cbid) {
  static std::mutex mutex;
  static std::map<std::pair<int, uint32_t>, std::string> cache;
  const auto key = std::make_pair(static_cast<int>(domain), static_cast<uint32_t>(cbid));
  std::lock_guard<std::mutex> lock(mutex);
  auto found = cache.find(key);
  if (found != cache.end()) return found->second;
  const char* name = nullptr;
  const CUpti_CallbackDomain cupti_domain =
      domain == ApiDomain::kDriver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
  std::string resolved;
  if (cuptiGetCallbackName(cupti_domain, cbid, &name) == CUPTI_SUCCESS && name != nullptr) resolved = name;
  return cache.emplace(key, std::move(resolved)).first->second;
}

// The activity kinds a capture enables, with the names used in failure reasons.
struct KindToEnable {
  CUpti_ActivityKind kind;
  const char* name;
  bool driver_api;  // enabled only with CuptiCaptureOptions::driver_api
};
constexpr KindToEnable kKinds[] = {
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL", false},
    {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY", false},
    {CUPTI_ACTIVITY_KIND_MEMCPY2, "MEMCPY2", false},
    {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET", false},
    {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "SYNCHRONIZATION", false},
    {CUPTI_ACTIVITY_KIND_RUNTIME, "RUNTIME", false},
    {CUPTI_ACTIVITY_KIND_DRIVER, "DRIVER", true},
};

// What the CUPTI callbacks share with the capture object. CUPTI's C callbacks carry no user
// pointer, and CUPTI may hand a buffer back at any time (even after the capture is gone), so this
// is one process-wide object that is never destroyed.
struct Buffer {
  uint8_t* data = nullptr;
  size_t bytes = 0;
};
struct SharedState {
  std::mutex mutex;
  // Buffer pool: live_buffers counts every allocated buffer (free or held by CUPTI).
  std::vector<Buffer> free_buffers;
  size_t live_buffers = 0;
  size_t buffer_bytes = 0;
  size_t buffer_limit = 0;
  size_t max_records = 0;
  // What completed buffers delivered while collecting.
  bool collecting = false;
  CuptiBatch batch;
  int64_t cupti_dropped_records = 0;  // cuptiActivityGetNumDroppedRecords
  int64_t records_over_cap = 0;       // records of buffers discarded past max_records
  int64_t buffers_over_cap = 0;
  int64_t refused_buffer_requests = 0;
  int64_t unconverted_records = 0;    // kinds we do not convert (should stay 0)
};
SharedState& shared() {
  static SharedState* state = new SharedState;  // intentionally leaked, see above
  return *state;
}
std::atomic<bool>& cupti_in_use() {
  static std::atomic<bool> in_use{false};
  return in_use;
}

void release_free_buffers(SharedState& state) {  // caller holds state.mutex
  for (const Buffer& buffer : state.free_buffers) delete[] buffer.data;
  state.live_buffers -= state.free_buffers.size();
  state.free_buffers.clear();
}

void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_num_records) {
  *buffer = nullptr;
  *size = 0;
  *max_num_records = 0;  // fill the buffer
  SharedState& state = shared();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (!state.free_buffers.empty()) {
    const Buffer reused = state.free_buffers.back();
    state.free_buffers.pop_back();
    *buffer = reused.data;
    *size = reused.bytes;
    return;
  }
  if (state.live_buffers < state.buffer_limit && state.buffer_bytes > 0) {
    // operator new[] aligns to at least 16 bytes; CUPTI needs 8.
    auto* data = new (std::nothrow) uint8_t[state.buffer_bytes];
    if (data != nullptr) {
      ++state.live_buffers;
      *buffer = data;
      *size = state.buffer_bytes;
      return;
    }
  }
  ++state.refused_buffer_requests;  // CUPTI drops records and counts them
}

void CUPTIAPI on_buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                                  size_t size, size_t valid_bytes) {
  if (buffer == nullptr) return;
  SharedState& state = shared();
  CuptiBatch parsed;
  int64_t unconverted = 0;
  bool parse_failed = false;
  try {
    CUpti_Activity* record = nullptr;
    while (valid_bytes > 0 &&
           cuptiActivityGetNextRecord(buffer, valid_bytes, &record) == CUPTI_SUCCESS) {
      if (!append_cupti_record(record, parsed)) ++unconverted;
    }
  } catch (...) {  // out of memory while converting: lose this buffer, never throw into CUPTI
    parse_failed = true;
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) != CUPTI_SUCCESS) dropped = 0;

  std::lock_guard<std::mutex> lock(state.mutex);
  state.cupti_dropped_records += static_cast<int64_t>(dropped);
  if (state.collecting) {
    state.unconverted_records += unconverted;
    if (parse_failed || state.batch.size() + parsed.size() > state.max_records) {
      ++state.buffers_over_cap;
      state.records_over_cap += static_cast<int64_t>(parsed.size());
    } else {
      try {
        state.batch.append(std::move(parsed));
      } catch (...) {
        ++state.buffers_over_cap;
      }
    }
  }
  state.free_buffers.push_back(Buffer{buffer, size});
}

// A CUPTI record's start and end (nanoseconds on CUPTI's clock).
template <class CuptiRecord, class Record>
void copy_times(const CuptiRecord* from, Record& out) {
  out.start_ns = static_cast<int64_t>(from->start);
  out.end_ns = static_cast<int64_t>(from->end);
}

// The times and the place (device, context, stream) and correlation id that CUPTI's device-side records
// (kernels, copies, memsets) share.
template <class CuptiRecord, class Record>
void copy_time_and_place(const CuptiRecord* from, Record& out) {
  copy_times(from, out);
  out.device = from->deviceId;
  out.context = from->contextId;
  out.stream = from->streamId;
  out.correlation = from->correlationId;
}

// The fields every CUPTI copy record shares (plain and peer-to-peer copies are different structs).
template <class CuptiMemcpy>
MemcpyRecord memcpy_common(const CuptiMemcpy* copy) {
  MemcpyRecord out;
  out.direction = to_direction(copy->copyKind);
  out.src_kind = to_memory_kind(copy->srcKind);
  out.dst_kind = to_memory_kind(copy->dstKind);
  out.bytes = static_cast<int64_t>(copy->bytes);
  copy_time_and_place(copy, out);
  return out;
}


}  // namespace

bool append_cupti_record(const void* cupti_activity, CuptiBatch& batch) {
  if (cupti_activity == nullptr) return false;
  const auto* record = static_cast<const CUpti_Activity*>(cupti_activity);
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* kernel = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      KernelRecord out;
      out.name = kernel->name != nullptr ? kernel->name : "unknown_kernel";
      copy_time_and_place(kernel, out);
      out.grid = Dim3{kernel->gridX, kernel->gridY, kernel->gridZ};
      out.block = Dim3{kernel->blockX, kernel->blockY, kernel->blockZ};
      out.static_shared_mem_bytes = kernel->staticSharedMemory;
      out.dynamic_shared_mem_bytes = kernel->dynamicSharedMemory;
      out.registers_per_thread = kernel->registersPerThread;
      batch.kernels.push_back(std::move(out));
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* copy = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      MemcpyRecord out = memcpy_common(copy);
      out.runtime_correlation = copy->runtimeCorrelationId;
      batch.memcpys.push_back(out);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
      const auto* copy = reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(record);
      MemcpyRecord out = memcpy_common(copy);
      out.src_device = copy->srcDeviceId;
      out.dst_device = copy->dstDeviceId;
      batch.memcpys.push_back(out);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* memset = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      MemsetRecord out;
      out.memory_kind = to_memory_kind(memset->memoryKind);
      out.value = memset->value;
      out.bytes = static_cast<int64_t>(memset->bytes);
      copy_time_and_place(memset, out);
      batch.memsets.push_back(out);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto* sync = reinterpret_cast<const CUpti_ActivitySynchronization2*>(record);
      SyncRecord out;
      out.type = to_sync_type(static_cast<uint32_t>(sync->type));
      copy_times(sync, out);
      out.context = id_or_not_applicable(sync->contextId);
      out.stream = id_or_not_applicable(sync->streamId);
      out.event = id_or_not_applicable(sync->cudaEventId);
      out.correlation = sync->correlationId;
      batch.syncs.push_back(out);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* call = reinterpret_cast<const CUpti_ActivityAPI*>(record);
      RuntimeApiRecord out;
      out.domain = record->kind == CUPTI_ACTIVITY_KIND_DRIVER ? ApiDomain::kDriver : ApiDomain::kRuntime;
      out.cbid = call->cbid;
      out.name = callback_name(out.domain, call->cbid);
      copy_times(call, out);
      out.process_id = call->processId;
      out.thread_id = call->threadId;
      out.correlation = call->correlationId;
      out.return_value = call->returnValue;
      batch.api_calls.push_back(std::move(out));
      return true;
    }
    default:
      return false;
  }
}

CuptiCapture::CuptiCapture(CuptiCaptureOptions options) : options_(options) {}

CuptiCapture::~CuptiCapture() {
  try {
    stop();
  } catch (...) {
  }
  release_slot();
}

void CuptiCapture::release_slot() {
  if (!owns_cupti_) return;
  owns_cupti_ = false;
  cupti_in_use().store(false);
}

bool CuptiCapture::compiled_in() { return true; }

bool CuptiCapture::start(std::string* why_not) {
  if (running_) return true;
  std::string reason;
  std::vector<CUpti_ActivityKind> enabled;
  // Undoes a partial start; the one line reason goes to *why_not.
  auto give_up = [&]() {
    for (const CUpti_ActivityKind kind : enabled) cuptiActivityDisable(kind);
    if (owns_cupti_) {
      SharedState& state = shared();
      std::lock_guard<std::mutex> lock(state.mutex);
      state.collecting = false;
    }
    release_slot();
    if (why_not != nullptr) *why_not = reason;
    return false;
  };
  auto cupti_failed = [&](const std::string& call, CUptiResult result) {
    reason = "CUPTI unavailable: " + call + " returned " + result_text(result);
    if (result == CUPTI_ERROR_UNKNOWN || result == CUPTI_ERROR_NOT_INITIALIZED) {
      reason += " (no CUDA driver or GPU?)";
    }
    reason += "; kernel capture off";
    return give_up();
  };

  try {
    bool expected = false;
    if (!cupti_in_use().compare_exchange_strong(expected, true)) {
      reason = "CUPTI capture already active in this process; kernel capture off";
      if (why_not != nullptr) *why_not = reason;
      return false;
    }
    owns_cupti_ = true;
    SharedState& state = shared();
    {
      std::lock_guard<std::mutex> lock(state.mutex);
      if (state.buffer_bytes != options_.buffer_bytes) release_free_buffers(state);
      state.buffer_bytes = options_.buffer_bytes;
      state.buffer_limit = options_.buffer_count;
      state.max_records = options_.max_records;
      state.batch.clear();
      state.cupti_dropped_records = state.records_over_cap = state.buffers_over_cap = 0;
      state.refused_buffer_requests = state.unconverted_records = 0;
      state.collecting = true;
    }

    CUptiResult result = cuptiActivityRegisterCallbacks(on_buffer_requested, on_buffer_completed);
    if (result != CUPTI_SUCCESS) return cupti_failed("cuptiActivityRegisterCallbacks", result);
    for (const KindToEnable& wanted : kKinds) {
      if (wanted.driver_api && !options_.driver_api) continue;
      result = cuptiActivityEnable(wanted.kind);
      if (result != CUPTI_SUCCESS) {
        return cupti_failed(std::string("cuptiActivityEnable(") + wanted.name + ")", result);
      }
      enabled.push_back(wanted.kind);
    }

    // steady_ns = cupti_ns + offset, sampled at the midpoint of a steady-clock bracket.
    uint64_t cupti_now_ns = 0;
    const int64_t before_ns = steady_now_ns();
    result = cuptiGetTimestamp(&cupti_now_ns);
    const int64_t after_ns = steady_now_ns();
    if (result != CUPTI_SUCCESS) return cupti_failed("cuptiGetTimestamp", result);
    clock_offset_ns_ = before_ns + (after_ns - before_ns) / 2 - static_cast<int64_t>(cupti_now_ns);
    running_ = true;
    captured_ = true;
    return true;
  } catch (const std::exception& error) {
    reason = std::string("CUPTI unavailable: ") + error.what() + "; kernel capture off";
  } catch (...) {
    reason = "CUPTI unavailable: unexpected error; kernel capture off";
  }
  return give_up();
}

void CuptiCapture::stop() {
  if (!running_) return;
  running_ = false;
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  for (const KindToEnable& wanted : kKinds) {
    if (wanted.driver_api && !options_.driver_api) continue;
    cuptiActivityDisable(wanted.kind);
  }
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // what arrived while disabling
  drain_shared_state(/*final=*/true);
  release_slot();
}

void CuptiCapture::drain_shared_state(bool final) {
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) != CUPTI_SUCCESS) dropped = 0;
  SharedState& state = shared();
  std::lock_guard<std::mutex> lock(state.mutex);
  if (final) state.collecting = false;
  taken_.append(std::move(state.batch));
  state.batch.clear();
  cupti_dropped_records_ += state.cupti_dropped_records + static_cast<int64_t>(dropped);
  records_over_cap_ += state.records_over_cap;
  buffers_over_cap_ += state.buffers_over_cap;
  refused_buffer_requests_ += state.refused_buffer_requests;
  unconverted_records_ += state.unconverted_records;
  state.cupti_dropped_records = state.records_over_cap = state.buffers_over_cap = 0;
  state.refused_buffer_requests = state.unconverted_records = 0;
  // Free buffers go back to the heap; those CUPTI still holds return to the free list later.
  if (final) release_free_buffers(state);
}

#else  // !TRAINLAB_HAVE_CUPTI

bool append_cupti_record(const void*, CuptiBatch&) { return false; }

CuptiCapture::CuptiCapture(CuptiCaptureOptions options) : options_(options) {}
CuptiCapture::~CuptiCapture() = default;
bool CuptiCapture::compiled_in() { return false; }
bool CuptiCapture::start(std::string* why_not) {
  if (why_not != nullptr) *why_not = "CUPTI not found at build time; kernel capture off";
  return false;
}
void CuptiCapture::stop() {}
void CuptiCapture::release_slot() {}
void CuptiCapture::drain_shared_state(bool) {}

#endif  // TRAINLAB_HAVE_CUPTI

void CuptiCapture::take(Profile& profile) {
  if (!captured_) return;  // never started: nothing to say (start() gave the reason)
  if (running_) drain_shared_state(/*final=*/false);

  CuptiConversionStats stats;
  std::vector<TraceEvent> events = to_trace_events(taken_, clock_offset_ns_, &stats);
  last_launch_latency_ = annotate_launch_latency(events);
  profile.events.insert(profile.events.end(), std::make_move_iterator(events.begin()),
                        std::make_move_iterator(events.end()));

  profile.dropped["cupti"] += cupti_dropped_records_ + records_over_cap_;
  if (last_launch_latency_.count > 0 || last_launch_latency_.unmatched_kernels > 0) {
    profile.notes.push_back(describe(last_launch_latency_));
  }
  if (refused_buffer_requests_ > 0) {
    profile.notes.push_back("CUPTI: " + std::to_string(refused_buffer_requests_) +
                            " buffer requests refused (pool of " +
                            std::to_string(options_.buffer_count) + " buffers full); CUPTI dropped records");
  }
  if (buffers_over_cap_ > 0) {
    profile.notes.push_back("CUPTI: " + std::to_string(buffers_over_cap_) + " buffers (" +
                            std::to_string(records_over_cap_) + " records) discarded past " +
                            std::to_string(options_.max_records) + " kept records");
  }
  if (stats.untimed_records > 0) {
    profile.notes.push_back("CUPTI: " + std::to_string(stats.untimed_records) +
                            " records without timestamps skipped");
  }
  if (unconverted_records_ > 0) {
    profile.notes.push_back("CUPTI: " + std::to_string(unconverted_records_) +
                            " records of unexpected kinds ignored");
  }

  taken_.clear();
  cupti_dropped_records_ = records_over_cap_ = buffers_over_cap_ = 0;
  refused_buffer_requests_ = unconverted_records_ = 0;
}

}  // namespace trainlab
