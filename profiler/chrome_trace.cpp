// Profile <-> Kineto-dialect Chrome trace, with zlib for .gz.
#include "profiler/chrome_trace.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <limits>

#include "harness/core/atomic_file.h"
#include "harness/core/errors.h"

namespace trainlab {
namespace {

const char* category_of(const TraceEvent& e) {
  switch (e.kind) {
    case EventKind::kStep:
    case EventKind::kPhase:
    case EventKind::kAnnotation: return "user_annotation";
    case EventKind::kCpuOp: return "cpu_op";
    case EventKind::kRuntime: return "cuda_runtime";
    case EventKind::kKernel: return "kernel";
    case EventKind::kMemcpy: return "gpu_memcpy";
    case EventKind::kMemset: return "gpu_memset";
    case EventKind::kSync: return "cuda_sync";
  }
  return "cpu_op";
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string gzip(const std::string& data) {
  z_stream zs{};
  if (deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("zlib: deflateInit2 failed");
  }
  std::string out(deflateBound(&zs, data.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw std::runtime_error("zlib: deflate failed");
  return out;
}

std::string gunzip(const std::string& path, const std::string& data) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) throw InputError(path + ": zlib cannot start");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  std::string out;
  char chunk[1 << 16];
  int rc = Z_OK;
  while (rc == Z_OK) {
    zs.next_out = reinterpret_cast<Bytef*>(chunk);
    zs.avail_out = sizeof chunk;
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(chunk, sizeof chunk - zs.avail_out);
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) throw InputError(path + ": not a valid gzip stream (truncated or corrupt)");
  return out;
}

// Microseconds with nanosecond precision, as Kineto writes them.
double to_us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }
int64_t from_us(double us) { return static_cast<int64_t>(us * 1000.0 + (us >= 0 ? 0.5 : -0.5)); }

}  // namespace

const char* to_string(EventKind kind) {
  switch (kind) {
    case EventKind::kStep: return "step";
    case EventKind::kPhase: return "phase";
    case EventKind::kAnnotation: return "annotation";
    case EventKind::kCpuOp: return "cpu_op";
    case EventKind::kRuntime: return "cuda_runtime";
    case EventKind::kKernel: return "kernel";
    case EventKind::kMemcpy: return "gpu_memcpy";
    case EventKind::kMemset: return "gpu_memset";
    case EventKind::kSync: return "cuda_sync";
  }
  return "?";
}

nlohmann::json to_chrome_trace(const Profile& profile, const nlohmann::json& metadata, int64_t host_pid) {
  int64_t origin_ns = std::numeric_limits<int64_t>::max();
  for (const TraceEvent& e : profile.events) origin_ns = std::min(origin_ns, e.start_ns);
  for (const CounterTrack& c : profile.counters) {
    for (const CounterSample& s : c.samples) origin_ns = std::min(origin_ns, s.time_ns);
  }
  if (origin_ns == std::numeric_limits<int64_t>::max()) origin_ns = 0;

  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", host_pid}, {"tid", 0}, {"args", {{"name", "trainlab host"}}}});
  std::vector<TraceEvent> sorted = profile.events;
  // Parents before children at equal start times (longer first), so viewers nest them.
  std::stable_sort(sorted.begin(), sorted.end(), [](const TraceEvent& a, const TraceEvent& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  for (const TraceEvent& e : sorted) {
    nlohmann::json args = e.args;
    if (e.correlation >= 0) args["correlation"] = e.correlation;
    args["trainlab_kind"] = to_string(e.kind);
    events.push_back({{"ph", "X"},
                      {"cat", category_of(e)},
                      {"name", e.name},
                      {"pid", e.on_device ? e.device : host_pid},
                      {"tid", e.track},
                      {"ts", to_us(e.start_ns - origin_ns)},
                      {"dur", to_us(e.end_ns - e.start_ns)},
                      {"args", args}});
  }
  for (const CounterTrack& c : profile.counters) {
    for (const CounterSample& s : c.samples) {
      events.push_back({{"ph", "C"}, {"name", c.name}, {"pid", host_pid}, {"tid", 0},
                        {"ts", to_us(s.time_ns - origin_ns)}, {"args", {{c.unit.empty() ? "value" : c.unit, s.value}}}});
    }
  }
  nlohmann::json trace = {{"schemaVersion", 1},
                          {"displayTimeUnit", "ms"},
                          {"traceEvents", events},
                          {"trainlab", metadata},
                          {"trainlabOriginNs", origin_ns},
                          {"trainlabDropped", profile.dropped},
                          {"trainlabNotes", profile.notes}};
  // Kineto keeps the rank and world size at the top level; so do we, for trace readers.
  if (metadata.is_object() && metadata.contains("distributedInfo")) trace["distributedInfo"] = metadata["distributedInfo"];
  return trace;
}

int64_t write_chrome_trace(const std::string& path, const Profile& profile, const nlohmann::json& metadata,
                           int64_t host_pid) {
  std::string text = to_chrome_trace(profile, metadata, host_pid).dump();
  if (ends_with(path, ".gz")) text = gzip(text);
  write_file_atomically(path, text);
  return static_cast<int64_t>(text.size());
}

Profile read_chrome_trace(const std::string& path) {
  std::string text = read_file(path);
  if (text.size() >= 2 && static_cast<unsigned char>(text[0]) == 0x1f && static_cast<unsigned char>(text[1]) == 0x8b) {
    text = gunzip(path, text);
  }
  const nlohmann::json trace = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (trace.is_discarded()) throw InputError(path + ": not valid JSON");
  const nlohmann::json* events = nullptr;
  if (trace.is_object() && trace.contains("traceEvents")) events = &trace["traceEvents"];
  else if (trace.is_array()) events = &trace;
  if (events == nullptr || !events->is_array()) throw InputError(path + ": no traceEvents array (not a Chrome trace)");
  const int64_t origin_ns = trace.is_object() ? trace.value("trainlabOriginNs", int64_t{0}) : 0;

  Profile profile;
  std::map<std::string, size_t> counter_index;
  try {
    for (const nlohmann::json& ev : *events) {
      if (!ev.is_object()) continue;
      const std::string ph = ev.value("ph", "");
      if (ph == "X") {
        TraceEvent e;
        e.name = ev.value("name", "");
        const std::string cat = ev.value("cat", "");
        if (e.name.rfind("ProfilerStep#", 0) == 0) e.kind = EventKind::kStep;
        else if (cat == "cpu_op" || cat == "operator") e.kind = EventKind::kCpuOp;
        else if (cat == "kernel") e.kind = EventKind::kKernel;
        else if (cat == "gpu_memcpy") e.kind = EventKind::kMemcpy;
        else if (cat == "gpu_memset") e.kind = EventKind::kMemset;
        else if (cat == "cuda_runtime" || cat == "cuda_driver") e.kind = EventKind::kRuntime;
        else if (cat == "cuda_sync") e.kind = EventKind::kSync;
        else if (ev.contains("args") && ev["args"].value("trainlab_kind", "") == "phase") e.kind = EventKind::kPhase;
        else e.kind = EventKind::kAnnotation;
        e.start_ns = origin_ns + from_us(ev.at("ts").get<double>());
        e.end_ns = e.start_ns + from_us(ev.value("dur", 0.0));
        e.on_device = e.kind == EventKind::kKernel || e.kind == EventKind::kMemcpy || e.kind == EventKind::kMemset;
        const nlohmann::json& pid = ev.contains("pid") ? ev["pid"] : nlohmann::json(0);
        const nlohmann::json& tid = ev.contains("tid") ? ev["tid"] : nlohmann::json(0);
        e.device = pid.is_number_integer() ? pid.get<int64_t>() : 0;
        e.track = tid.is_number_integer() ? tid.get<int64_t>() : 0;
        if (ev.contains("args") && ev["args"].is_object()) {
          e.args = ev["args"];
          if (e.args.contains("correlation") && e.args["correlation"].is_number_integer()) {
            e.correlation = e.args["correlation"].get<int64_t>();
          }
        }
        profile.events.push_back(std::move(e));
      } else if (ph == "C") {
        const std::string name = ev.value("name", "");
        auto [it, inserted] = counter_index.emplace(name, profile.counters.size());
        if (inserted) profile.counters.push_back(CounterTrack{name, "", {}});
        CounterTrack& track = profile.counters[it->second];
        for (const auto& [unit, value] : ev.at("args").items()) {
          if (!value.is_number()) continue;
          track.unit = unit;
          track.samples.push_back({origin_ns + from_us(ev.at("ts").get<double>()), value.get<double>()});
          break;
        }
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path + ": malformed trace event: " + e.what());
  }
  if (trace.is_object() && trace.contains("trainlabDropped") && trace["trainlabDropped"].is_object()) {
    profile.dropped = trace["trainlabDropped"].get<std::map<std::string, int64_t>>();
  }
  return profile;
}

}  // namespace trainlab
