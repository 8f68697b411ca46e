// Pure conversion of plain CUPTI records into TraceEvents, and the launch-latency analysis.
// No CUPTI calls (see cupti_records.h).
#include "profiler/cupti_records.h"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <unordered_map>
#include <utility>

namespace trainlab {

namespace {

template <typename T>
void move_append(std::vector<T>& into, std::vector<T>& from) {
  into.insert(into.end(), std::make_move_iterator(from.begin()),
              std::make_move_iterator(from.end()));
  from.clear();
}

nlohmann::json dim3_json(const Dim3& dim) { return nlohmann::json::array({dim.x, dim.y, dim.z}); }

bool untimed(int64_t start_ns, int64_t end_ns) { return start_ns == 0 && end_ns == 0; }

// Device-side event skeleton: times shifted into the steady clock; end never before start.
TraceEvent device_event(EventKind kind, std::string name, int64_t start_ns, int64_t end_ns,
                        int64_t device, int64_t stream, int64_t correlation,
                        int64_t cupti_to_steady_ns) {
  TraceEvent event;
  event.kind = kind;
  event.name = std::move(name);
  event.start_ns = start_ns + cupti_to_steady_ns;
  event.end_ns = std::max(end_ns, start_ns) + cupti_to_steady_ns;
  event.on_device = true;
  event.device = device;
  event.track = stream;
  event.correlation = correlation;
  return event;
}

std::string format_us(double ns) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.1f us", ns / 1000.0);
  return text;
}

}  // namespace

void CuptiBatch::clear() {
  kernels.clear();
  memcpys.clear();
  memsets.clear();
  syncs.clear();
  api_calls.clear();
}

void CuptiBatch::append(CuptiBatch&& other) {
  move_append(kernels, other.kernels);
  move_append(memcpys, other.memcpys);
  move_append(memsets, other.memsets);
  move_append(syncs, other.syncs);
  move_append(api_calls, other.api_calls);
}

const char* memcpy_direction_name(MemcpyDirection direction) {
  switch (direction) {
    case MemcpyDirection::kHtoD: return "HtoD";
    case MemcpyDirection::kDtoH: return "DtoH";
    case MemcpyDirection::kHtoA: return "HtoA";
    case MemcpyDirection::kAtoH: return "AtoH";
    case MemcpyDirection::kAtoA: return "AtoA";
    case MemcpyDirection::kAtoD: return "AtoD";
    case MemcpyDirection::kDtoA: return "DtoA";
    case MemcpyDirection::kDtoD: return "DtoD";
    case MemcpyDirection::kHtoH: return "HtoH";
    case MemcpyDirection::kPtoP: return "PtoP";
    case MemcpyDirection::kUnknown: break;
  }
  return "Unknown";
}

namespace {

// A kind's two spellings: as the trace's names show it (Kineto's) and as its args hold it.
struct Spellings {
  const char* name;
  const char* arg;
};

Spellings memory_kind_spellings(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kPageable: return {"Pageable", "pageable"};
    case MemoryKind::kPinned: return {"Pinned", "pinned"};
    case MemoryKind::kDevice: return {"Device", "device"};
    case MemoryKind::kArray: return {"Array", "array"};
    case MemoryKind::kManaged: return {"Managed", "managed"};
    case MemoryKind::kDeviceStatic: return {"Device Static", "device_static"};
    case MemoryKind::kManagedStatic: return {"Managed Static", "managed_static"};
    case MemoryKind::kUnknown: break;
  }
  return {"Unknown", "unknown"};
}

Spellings sync_type_spellings(SyncType type) {
  switch (type) {
    case SyncType::kEventSynchronize: return {"Event Sync", "event"};
    case SyncType::kStreamWaitEvent: return {"Stream Wait Event", "stream_wait_event"};
    case SyncType::kStreamSynchronize: return {"Stream Sync", "stream"};
    case SyncType::kContextSynchronize: return {"Context Sync", "context"};
    case SyncType::kUnknown: break;
  }
  return {"Unknown Sync", "unknown"};
}

}  // namespace

const char* memory_kind_name(MemoryKind kind) { return memory_kind_spellings(kind).name; }
const char* memory_kind_arg(MemoryKind kind) { return memory_kind_spellings(kind).arg; }
const char* sync_type_name(SyncType type) { return sync_type_spellings(type).name; }
const char* sync_type_arg(SyncType type) { return sync_type_spellings(type).arg; }

std::string api_display_name(const RuntimeApiRecord& call) {
  if (call.name.empty()) {
    return std::string(call.domain == ApiDomain::kDriver ? "cuda_driver_api_" : "cuda_runtime_api_") +
           std::to_string(call.cbid);
  }
  // Strip a trailing version suffix "_v<digits>" (CUPTI's callback names carry one).
  const auto suffix = call.name.rfind("_v");
  if (suffix != std::string::npos && suffix > 0 && suffix + 2 < call.name.size() &&
      std::all_of(call.name.begin() + static_cast<std::ptrdiff_t>(suffix) + 2, call.name.end(),
                  [](unsigned char c) { return std::isdigit(c) != 0; })) {
    return call.name.substr(0, suffix);
  }
  return call.name;
}

std::string demangle_kernel_name(const std::string& name) {
  if (name.rfind("_Z", 0) != 0) return name;
  int status = 0;
  char* demangled = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || demangled == nullptr) {
    std::free(demangled);
    return name;
  }
  std::string result(demangled);
  std::free(demangled);
  return result;
}

namespace {

TraceEvent named_kernel_event(const KernelRecord& kernel, std::string name,
                              int64_t cupti_to_steady_ns) {
  TraceEvent event = device_event(EventKind::kKernel, std::move(name), kernel.start_ns,
                                  kernel.end_ns, kernel.device, kernel.stream, kernel.correlation,
                                  cupti_to_steady_ns);
  event.args["device"] = kernel.device;
  event.args["context"] = kernel.context;
  event.args["stream"] = kernel.stream;
  event.args["correlation"] = kernel.correlation;
  event.args["grid"] = dim3_json(kernel.grid);
  event.args["block"] = dim3_json(kernel.block);
  event.args["registers_per_thread"] = kernel.registers_per_thread;
  event.args["shared_mem_bytes"] = kernel.static_shared_mem_bytes + kernel.dynamic_shared_mem_bytes;
  event.args["static_shared_mem_bytes"] = kernel.static_shared_mem_bytes;
  event.args["dynamic_shared_mem_bytes"] = kernel.dynamic_shared_mem_bytes;
  return event;
}

}  // namespace

TraceEvent kernel_event(const KernelRecord& kernel, int64_t cupti_to_steady_ns) {
  return named_kernel_event(kernel, demangle_kernel_name(kernel.name), cupti_to_steady_ns);
}

TraceEvent memcpy_event(const MemcpyRecord& copy, int64_t cupti_to_steady_ns) {
  std::string name = std::string("Memcpy ") + memcpy_direction_name(copy.direction) + " (" +
                     memory_kind_name(copy.src_kind) + " -> " + memory_kind_name(copy.dst_kind) + ")";
  TraceEvent event = device_event(EventKind::kMemcpy, std::move(name), copy.start_ns, copy.end_ns,
                                  copy.device, copy.stream, copy.correlation, cupti_to_steady_ns);
  event.args["device"] = copy.device;
  event.args["context"] = copy.context;
  event.args["stream"] = copy.stream;
  event.args["correlation"] = copy.correlation;
  if (copy.runtime_correlation != 0 && copy.runtime_correlation != copy.correlation) {
    event.args["runtime_correlation"] = copy.runtime_correlation;
  }
  event.args["bytes"] = copy.bytes;
  event.args["direction"] = memcpy_direction_name(copy.direction);
  event.args["src_kind"] = memory_kind_arg(copy.src_kind);
  event.args["dst_kind"] = memory_kind_arg(copy.dst_kind);
  if (copy.src_device != kNotApplicable) event.args["src_device"] = copy.src_device;
  if (copy.dst_device != kNotApplicable) event.args["dst_device"] = copy.dst_device;
  const int64_t duration_ns = event.duration_ns();
  if (duration_ns > 0) {
    event.args["bandwidth_gb_per_s"] = static_cast<double>(copy.bytes) / static_cast<double>(duration_ns);
  }
  return event;
}

TraceEvent memset_event(const MemsetRecord& memset, int64_t cupti_to_steady_ns) {
  std::string name = std::string("Memset (") + memory_kind_name(memset.memory_kind) + ")";
  TraceEvent event = device_event(EventKind::kMemset, std::move(name), memset.start_ns, memset.end_ns,
                                  memset.device, memset.stream, memset.correlation, cupti_to_steady_ns);
  event.args["device"] = memset.device;
  event.args["context"] = memset.context;
  event.args["stream"] = memset.stream;
  event.args["correlation"] = memset.correlation;
  event.args["bytes"] = memset.bytes;
  event.args["value"] = memset.value;
  event.args["memory_kind"] = memory_kind_arg(memset.memory_kind);
  return event;
}

TraceEvent sync_event(const SyncRecord& sync, int64_t device, int64_t cupti_to_steady_ns) {
  TraceEvent event = device_event(EventKind::kSync, sync_type_name(sync.type), sync.start_ns,
                                  sync.end_ns, device, sync.stream, sync.correlation,
                                  cupti_to_steady_ns);
  event.args["sync_type"] = sync_type_arg(sync.type);
  event.args["device"] = device;
  event.args["context"] = sync.context;
  event.args["stream"] = sync.stream;
  event.args["correlation"] = sync.correlation;
  if (sync.event != kNotApplicable) event.args["cuda_event"] = sync.event;
  return event;
}

TraceEvent runtime_event(const RuntimeApiRecord& call, int64_t cupti_to_steady_ns) {
  TraceEvent event;
  event.kind = EventKind::kRuntime;
  event.name = api_display_name(call);
  event.start_ns = call.start_ns + cupti_to_steady_ns;
  event.end_ns = std::max(call.end_ns, call.start_ns) + cupti_to_steady_ns;
  event.on_device = false;
  event.track = call.thread_id;
  event.correlation = call.correlation;
  event.args["api"] = call.domain == ApiDomain::kDriver ? "driver" : "runtime";
  event.args["cbid"] = call.cbid;
  event.args["correlation"] = call.correlation;
  event.args["process_id"] = call.process_id;
  event.args["thread_id"] = call.thread_id;
  if (call.return_value != 0) event.args["return_value"] = call.return_value;
  return event;
}

std::map<int64_t, int64_t> context_devices(const CuptiBatch& batch) {
  std::map<int64_t, int64_t> devices;
  for (const auto& kernel : batch.kernels) devices.emplace(kernel.context, kernel.device);
  for (const auto& copy : batch.memcpys) devices.emplace(copy.context, copy.device);
  for (const auto& memset : batch.memsets) devices.emplace(memset.context, memset.device);
  return devices;
}

std::vector<TraceEvent> to_trace_events(const CuptiBatch& batch, int64_t cupti_to_steady_ns,
                                        CuptiConversionStats* stats) {
  CuptiConversionStats local;
  std::vector<TraceEvent> events;
  events.reserve(batch.size());

  std::unordered_map<std::string, std::string> demangled;  // kernels repeat: demangle each once
  for (const auto& kernel : batch.kernels) {
    if (untimed(kernel.start_ns, kernel.end_ns)) { ++local.untimed_records; continue; }
    auto found = demangled.find(kernel.name);
    if (found == demangled.end()) {
      found = demangled.emplace(kernel.name, demangle_kernel_name(kernel.name)).first;
    }
    events.push_back(named_kernel_event(kernel, found->second, cupti_to_steady_ns));
  }
  for (const auto& copy : batch.memcpys) {
    if (untimed(copy.start_ns, copy.end_ns)) { ++local.untimed_records; continue; }
    events.push_back(memcpy_event(copy, cupti_to_steady_ns));
  }
  for (const auto& memset : batch.memsets) {
    if (untimed(memset.start_ns, memset.end_ns)) { ++local.untimed_records; continue; }
    events.push_back(memset_event(memset, cupti_to_steady_ns));
  }
  const auto devices = context_devices(batch);
  for (const auto& sync : batch.syncs) {
    if (untimed(sync.start_ns, sync.end_ns)) { ++local.untimed_records; continue; }
    const auto device = devices.find(sync.context);
    events.push_back(sync_event(sync, device == devices.end() ? 0 : device->second, cupti_to_steady_ns));
  }
  for (const auto& call : batch.api_calls) {
    if (untimed(call.start_ns, call.end_ns)) { ++local.untimed_records; continue; }
    events.push_back(runtime_event(call, cupti_to_steady_ns));
  }
  if (stats != nullptr) *stats = local;
  return events;
}

LaunchLatencySummary annotate_launch_latency(std::vector<TraceEvent>& events) {
  // correlation -> start of the earliest API call carrying it (the outermost call).
  std::unordered_map<int64_t, int64_t> call_start_ns;
  for (const auto& event : events) {
    if (event.kind != EventKind::kRuntime || event.correlation < 0) continue;
    auto [it, inserted] = call_start_ns.emplace(event.correlation, event.start_ns);
    if (!inserted) it->second = std::min(it->second, event.start_ns);
  }

  LaunchLatencySummary summary;
  std::vector<int64_t> latencies_ns;
  for (auto& event : events) {
    if (event.kind != EventKind::kKernel) continue;
    const auto call = event.correlation < 0 ? call_start_ns.end() : call_start_ns.find(event.correlation);
    if (call == call_start_ns.end()) {
      ++summary.unmatched_kernels;
      continue;
    }
    const int64_t latency_ns = event.start_ns - call->second;
    event.args["launch_latency_ns"] = latency_ns;
    latencies_ns.push_back(latency_ns);
  }
  summary.count = static_cast<int64_t>(latencies_ns.size());
  if (latencies_ns.empty()) return summary;

  std::sort(latencies_ns.begin(), latencies_ns.end());
  double total_ns = 0;
  for (const int64_t latency_ns : latencies_ns) total_ns += static_cast<double>(latency_ns);
  summary.mean_ns = total_ns / static_cast<double>(latencies_ns.size());
  summary.p50_ns = latencies_ns[(latencies_ns.size() - 1) / 2];
  summary.max_ns = latencies_ns.back();
  return summary;
}

nlohmann::json to_json(const LaunchLatencySummary& summary) {
  return nlohmann::json{{"count", summary.count},
                        {"unmatched_kernels", summary.unmatched_kernels},
                        {"mean_ns", summary.mean_ns},
                        {"p50_ns", summary.p50_ns},
                        {"max_ns", summary.max_ns}};
}

std::string describe(const LaunchLatencySummary& summary) {
  std::string line = "CUPTI launch latency: " + std::to_string(summary.count) + " kernels";
  if (summary.count > 0) {
    line += ", mean " + format_us(summary.mean_ns) + ", p50 " +
            format_us(static_cast<double>(summary.p50_ns)) + ", max " +
            format_us(static_cast<double>(summary.max_ns));
  }
  if (summary.unmatched_kernels > 0) {
    line += " (" + std::to_string(summary.unmatched_kernels) + " kernels without a captured launch call)";
  }
  return line;
}

}  // namespace trainlab
