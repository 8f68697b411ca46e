// Profile <-> Kineto-dialect Chrome trace, with zlib for .gz. The writer builds the trace as one
// json value; the importer streams: decompressed chunks from TraceByteStream (which checks the
// byte limits), nlohmann's SAX parser, one trace event materialised at a time, events and JSON
// values counted against their limits as they come.
#include "profiler/chrome_trace.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <istream>
#include <limits>
#include <map>
#include <new>
#include <vector>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/json_text.h"
#include "core/text.h"
#include "core/trace_metadata.h"
#include "core/units.h"
#include "core/untrusted_input.h"
#include "profiler/trace_byte_stream.h"

namespace trainlab {
namespace {

// Kineto's "cat": the loop's own marks are user annotations; every other kind goes by its to_string name.
const char* category_of(const TraceEvent& e) {
  const bool users_mark =
      e.kind == EventKind::kStep || e.kind == EventKind::kPhase || e.kind == EventKind::kAnnotation;
  return users_mark ? "user_annotation" : to_string(e.kind);
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

// Microseconds with nanosecond precision, as Kineto writes them.
double to_us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

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

int64_t steady_to_epoch_offset_ns() {
  timespec real{}, steady{};
  ::clock_gettime(CLOCK_REALTIME, &real);
  ::clock_gettime(CLOCK_MONOTONIC, &steady);  // std::chrono::steady_clock's clock on Linux
  return (static_cast<int64_t>(real.tv_sec) - static_cast<int64_t>(steady.tv_sec)) * 1000000000 +
         (static_cast<int64_t>(real.tv_nsec) - static_cast<int64_t>(steady.tv_nsec));
}

namespace {

// The host thread that runs the training loop: the one with the ProfilerStep# spans (or, without
// any, the one with the most events).
int64_t training_track(const Profile& profile) {
  std::map<int64_t, int64_t> steps, events;
  for (const TraceEvent& e : profile.events) {
    if (e.on_device) continue;
    ++events[e.track];
    if (e.kind == EventKind::kStep) ++steps[e.track];
  }
  const auto& counts = steps.empty() ? events : steps;
  int64_t best = -1, most = -1;
  for (const auto& [track, n] : counts) {
    if (n > most) best = track, most = n;
  }
  return best;
}

// PyTorch tools' names for what trainlab records in its own words, as extra events beside the
// originals (args.trainlab_alias_of says which; trainlab's importer skips them):
//  - each data_wait phase also as the span PyTorch's DataLoader iterator records
//    ("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"), which the TensorBoard plugin
//    and HTA count as DataLoader time;
//  - on a run without a device, the training thread's top-level operators (data waits left out)
//    on a "CPU compute lane" of user annotations, one row in a viewer that shows when the CPU
//    computed. Not as kernels: the TensorBoard plugin then counted a CPU run's compute as GPU
//    kernel time ("Kernel 88.55 %, CPU Exec 0"); as annotations it reads the operators themselves
//    as CPU Exec. HTA's kernel analyses (temporal breakdown, comm/comp overlap) read GPU kernels
//    only, so they have nothing to read in a CPU trace, as in torch.profiler's own CPU traces.
void add_pytorch_aliases(const Profile& profile, const std::vector<TraceEvent>& sorted, const std::vector<int64_t>& ids,
                         const nlohmann::json& metadata, int64_t host_pid,
                         const std::function<double(int64_t)>& ts_us, nlohmann::json& events) {
  const std::string iterator = trace_metadata_of(metadata).loader_workers.value_or(0) > 0
                                   ? "_MultiProcessingDataLoaderIter"
                                   : "_SingleProcessDataLoaderIter";
  const std::string data_loader_span = "enumerate(DataLoader)#" + iterator + ".__next__";
  const int64_t loop_track = training_track(profile);
  std::vector<std::pair<int64_t, int64_t>> data_waits;
  bool has_device = false;
  int64_t next_id = ids.empty() ? 1 : *std::max_element(ids.begin(), ids.end()) + 1;
  for (const TraceEvent& e : sorted) {
    has_device |= e.on_device;
    if (e.kind != EventKind::kPhase || e.name != "data_wait") continue;
    data_waits.emplace_back(e.start_ns, e.end_ns);
    // An operator, as the TensorBoard plugin wants it (it ignores user annotations but steps and collectives).
    events.push_back({{"ph", "X"}, {"cat", "cpu_op"}, {"name", data_loader_span}, {"pid", host_pid},
                      {"tid", e.track}, {"ts", ts_us(e.start_ns)}, {"dur", to_us(e.end_ns - e.start_ns)},
                      {"args", {{"External id", next_id++}, {"trainlab_alias_of", "data_wait"}}}});
  }
  if (has_device || loop_track < 0) return;
  std::vector<size_t> ops;  // indices into sorted: by start, parents first
  for (size_t i = 0; i < sorted.size(); ++i) {
    const TraceEvent& e = sorted[i];
    if (e.kind == EventKind::kCpuOp && !e.on_device && e.track == loop_track) ops.push_back(i);
  }
  constexpr int64_t kLanePid = 0, kLaneStream = 0;
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", kLanePid}, {"tid", 0},
                    {"args", {{"name", "CPU compute lane (trainlab: the training thread's top-level ops)"}}}});
  events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", kLanePid}, {"tid", kLaneStream},
                    {"args", {{"name", "CPU compute (top-level ops)"}}}});
  int64_t covered_until = std::numeric_limits<int64_t>::min();
  size_t wait = 0;
  for (const size_t i : ops) {
    const TraceEvent* op = &sorted[i];
    if (op->start_ns < covered_until) continue;  // nested in the op before
    while (wait < data_waits.size() && data_waits[wait].second <= op->start_ns) ++wait;
    if (wait < data_waits.size() && data_waits[wait].first <= op->start_ns) continue;  // building a batch
    covered_until = op->end_ns;
    events.push_back({{"ph", "X"}, {"cat", "user_annotation"}, {"name", op->name}, {"pid", kLanePid},
                      {"tid", kLaneStream}, {"ts", ts_us(op->start_ns)}, {"dur", to_us(op->end_ns - op->start_ns)},
                      {"args", {{"External id", ids[i]}, {"trainlab_alias_of", "cpu_op"}}}});
  }
}

// Kineto's "External id" for each event of `sorted` (by start, parents first): every host span gets
// its own; a runtime call takes the id of the innermost operator around it on its thread, and a
// device event the id of the runtime call that launched it (same correlation), so tools link
// operators to their kernels. 0: none.
std::vector<int64_t> external_ids(const std::vector<TraceEvent>& sorted) {
  std::vector<int64_t> ids(sorted.size(), 0);
  std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> open_ops;  // track -> (end, id) of enclosing ops
  std::map<int64_t, int64_t> by_correlation;
  int64_t next = 1;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const TraceEvent& e = sorted[i];
    if (e.on_device) continue;
    auto& stack = open_ops[e.track];
    while (!stack.empty() && stack.back().first <= e.start_ns) stack.pop_back();
    if (e.kind == EventKind::kRuntime) {
      ids[i] = stack.empty() ? next++ : stack.back().second;
      if (e.correlation >= 0) by_correlation[e.correlation] = ids[i];
      continue;
    }
    ids[i] = next++;
    if (e.kind == EventKind::kCpuOp) stack.emplace_back(e.end_ns, ids[i]);
  }
  for (size_t i = 0; i < sorted.size(); ++i) {
    const TraceEvent& e = sorted[i];
    if (!e.on_device || e.correlation < 0) continue;
    const auto it = by_correlation.find(e.correlation);
    if (it != by_correlation.end()) ids[i] = it->second;
  }
  return ids;
}

// Process and thread names, as Kineto writes them, so viewers label the tracks.
void add_track_names(const Profile& profile, const nlohmann::json& metadata, int64_t host_pid, nlohmann::json& events) {
  std::string process = "trainlab";
  if (metadata.is_object() && metadata.contains("distributedInfo") && metadata["distributedInfo"].is_object()) {
    const nlohmann::json& info = metadata["distributedInfo"];
    if (info.value("world_size", 1) > 1) process += " rank " + std::to_string(info.value("rank", 0));
  }
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", host_pid}, {"tid", 0}, {"args", {{"name", process}}}});
  events.push_back({{"ph", "M"}, {"name", "process_labels"}, {"pid", host_pid}, {"tid", 0}, {"args", {{"labels", "CPU"}}}});
  const int64_t loop_track = training_track(profile);
  std::map<int64_t, bool> host_tracks;
  std::map<int64_t, bool> devices;
  for (const TraceEvent& e : profile.events) {
    if (e.on_device) devices[e.device] = true;
    else host_tracks[e.track] = true;
  }
  for (const auto& [tid, unused] : host_tracks) {
    const auto named = profile.thread_names.find(tid);
    const std::string role = tid == loop_track ? "training loop"
                             : named != profile.thread_names.end() ? named->second
                                                                    : std::string();
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", host_pid}, {"tid", tid},
                      {"args", {{"name", "thread " + std::to_string(tid) + (role.empty() ? "" : " (" + role + ")")}}}});
    events.push_back({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", host_pid}, {"tid", tid},
                      {"args", {{"sort_index", tid == loop_track ? 0 : tid}}}});
  }
  for (const auto& [device, unused] : devices) {
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", device}, {"tid", 0},
                      {"args", {{"name", "GPU " + std::to_string(device)}}}});
  }
}

}  // namespace

nlohmann::json to_chrome_trace(const Profile& profile, const nlohmann::json& metadata, int64_t host_pid,
                               const TraceClock* clock) {
  // Time zero: the agreed base (every rank of a job on one axis), else the profile's first timestamp.
  int64_t origin_ns = std::numeric_limits<int64_t>::max();
  if (clock != nullptr) {
    origin_ns = clock->base_epoch_ns - clock->steady_to_epoch_ns;
  } else {
    for (const TraceEvent& e : profile.events) origin_ns = std::min(origin_ns, e.start_ns);
    for (const CounterTrack& c : profile.counters) {
      for (const CounterSample& s : c.samples) origin_ns = std::min(origin_ns, s.time_ns);
    }
    if (origin_ns == std::numeric_limits<int64_t>::max()) origin_ns = 0;
  }
  const auto ts_us = [origin_ns](int64_t ns) { return to_us(ns - origin_ns); };

  nlohmann::json events = nlohmann::json::array();
  add_track_names(profile, metadata, host_pid, events);
  std::vector<TraceEvent> sorted = profile.events;
  // Parents before children at equal start times (longer first), so viewers nest them.
  std::stable_sort(sorted.begin(), sorted.end(), [](const TraceEvent& a, const TraceEvent& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  const std::vector<int64_t> ids = external_ids(sorted);
  for (size_t i = 0; i < sorted.size(); ++i) {
    const TraceEvent& e = sorted[i];
    nlohmann::json args = e.args.is_object() ? e.args : nlohmann::json::object();
    if (e.correlation >= 0) args["correlation"] = e.correlation;
    if (ids[i] > 0) args["External id"] = ids[i];
    args["trainlab_kind"] = to_string(e.kind);
    events.push_back({{"ph", "X"},
                      {"cat", category_of(e)},
                      {"name", e.name},
                      {"pid", e.on_device ? e.device : host_pid},
                      {"tid", e.track},
                      {"ts", ts_us(e.start_ns)},
                      {"dur", to_us(e.end_ns - e.start_ns)},
                      {"args", args}});
  }
  add_pytorch_aliases(profile, sorted, ids, metadata, host_pid, ts_us, events);
  for (const CounterTrack& c : profile.counters) {
    for (const CounterSample& s : c.samples) {
      events.push_back({{"ph", "C"}, {"name", c.name}, {"pid", host_pid}, {"tid", 0},
                        {"ts", ts_us(s.time_ns)}, {"args", {{c.unit.empty() ? "value" : c.unit, s.value}}}});
    }
  }
  nlohmann::json trace = {{"schemaVersion", 1},
                          {"displayTimeUnit", "ms"},
                          {"traceEvents", events},
                          {"trainlab", metadata},
                          {"trainlabOriginNs", origin_ns},
                          {"trainlabDropped", profile.dropped},
                          {"trainlabNotes", profile.notes}};
  if (clock != nullptr) trace["baseTimeNanoseconds"] = clock->base_epoch_ns;
  // Kineto keeps the rank and world size, and the devices, at the top level; so do we, for trace readers.
  if (metadata.is_object() && metadata.contains("distributedInfo")) trace["distributedInfo"] = metadata["distributedInfo"];
  if (metadata.is_object() && metadata.contains("deviceProperties")) trace["deviceProperties"] = metadata["deviceProperties"];
  return trace;
}

std::string chrome_trace_text(const nlohmann::json& trace) {
  // distributedInfo first and spaced as Kineto writes it ("rank": 1): Holistic Trace Analysis finds
  // a file's rank with the pattern "rank":\s+(\d+) on the raw text.
  if (!trace.is_object() || !trace.contains("distributedInfo")) return json_text(trace);
  nlohmann::json rest = trace;
  const nlohmann::json info = rest["distributedInfo"];
  rest.erase("distributedInfo");
  std::string info_text;
  for (const auto& [key, value] : info.items()) {
    info_text += (info_text.empty() ? "" : ", ") + json_text(nlohmann::json(key)) + ": " + json_text(value);
  }
  const std::string rest_text = json_text(rest);  // "{...}"
  return "{\"distributedInfo\": {" + info_text + "}" + (rest_text.size() > 2 ? ", " : "") + rest_text.substr(1);
}

int64_t write_chrome_trace(const std::string& path, const Profile& profile, const nlohmann::json& metadata,
                           int64_t host_pid, const TraceClock* clock) {
  std::string text = chrome_trace_text(to_chrome_trace(profile, metadata, host_pid, clock));
  if (ends_with(path, ".gz")) text = gzip(text);
  write_file_atomically(path, text);
  return static_cast<int64_t>(text.size());
}

// ---------------------------------------------------------------------------------------------
// Trace import (streaming).
namespace {

using nlohmann::json;

constexpr int64_t kMaxUs = std::numeric_limits<int64_t>::max() / 1000;

// "1712195495406752.8" (microseconds) -> 1712195495406752800 ns, exactly: integer and fraction
// digits are read apart, since a double holds only ~16 significant digits. Exponent forms go
// through long double. False when out of range.
bool decimal_us_to_ns(const std::string& text, int64_t* ns) {
  if (text.find_first_of("eE") != std::string::npos) {
    const long double value_ns = std::strtold(text.c_str(), nullptr) * 1000.0L;
    if (!std::isfinite(value_ns) || std::fabs(value_ns) >= 9.2e18L) return false;
    *ns = static_cast<int64_t>(std::llroundl(value_ns));
    return true;
  }
  size_t i = 0;
  const bool negative = i < text.size() && text[i] == '-';
  if (negative) ++i;
  int64_t whole_us = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (whole_us > (kMaxUs - 9) / 10) return false;
    whole_us = whole_us * 10 + (text[i] - '0');
  }
  int64_t fraction_ns = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    int digits = 0;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++digits) {
      if (digits < 3) fraction_ns = fraction_ns * 10 + (text[i] - '0');
      else if (digits == 3 && text[i] >= '5') fraction_ns += 1;  // round half away from zero
    }
    for (; digits < 3; ++digits) fraction_ns *= 10;
    // (a round-up after fewer than 3 digits cannot happen: the 4th digit exists only after 3)
  }
  const int64_t magnitude_ns = whole_us * 1000 + fraction_ns;
  *ns = negative ? -magnitude_ns : magnitude_ns;
  return true;
}

bool integer_us_to_ns(int64_t us, int64_t* ns) {
  if (us > kMaxUs || us < -kMaxUs) return false;
  *ns = us * 1000;
  return true;
}

// pid/tid: an integer, or a string whose first integer counts ("GPU 0", "stream 7", "5555").
int64_t id_of(const json& value) {
  if (value.is_number_integer()) return value.get<int64_t>();  // (an unsigned beyond int64 wraps)
  if (value.is_number_float()) {  // beyond int64 (or NaN): no usable id
    const double id = value.get<double>();
    return std::isfinite(id) && std::fabs(id) < 9.0e18 ? static_cast<int64_t>(id) : 0;
  }
  if (!value.is_string()) return 0;
  const std::string& text = value.get_ref<const std::string&>();
  const size_t digit = text.find_first_of("0123456789");
  if (digit == std::string::npos) return 0;
  const bool negative = digit > 0 && text[digit - 1] == '-';
  int64_t id = 0;
  for (size_t i = digit; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (id > (std::numeric_limits<int64_t>::max() - 9) / 10) break;
    id = id * 10 + (text[i] - '0');
  }
  return negative ? -id : id;
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

bool kind_from_trainlab(const std::string& name, EventKind* kind) {
  static const std::map<std::string, EventKind> kinds = {
      {"step", EventKind::kStep},          {"phase", EventKind::kPhase},      {"annotation", EventKind::kAnnotation},
      {"cpu_op", EventKind::kCpuOp},       {"cuda_runtime", EventKind::kRuntime}, {"kernel", EventKind::kKernel},
      {"gpu_memcpy", EventKind::kMemcpy},  {"gpu_memset", EventKind::kMemset}, {"cuda_sync", EventKind::kSync}};
  const auto it = kinds.find(name);
  if (it == kinds.end()) return false;
  *kind = it->second;
  return true;
}

// Kineto category (lower-cased) -> EventKind, both dialects.
EventKind kind_from_category(const std::string& cat, const std::string& name) {
  if (name.rfind("ProfilerStep#", 0) == 0 && cat != "gpu_user_annotation") return EventKind::kStep;
  if (cat == "cpu_op" || cat == "operator") return EventKind::kCpuOp;
  if (cat == "kernel") return EventKind::kKernel;
  if (cat == "gpu_memcpy" || cat == "memcpy") return EventKind::kMemcpy;
  if (cat == "gpu_memset" || cat == "memset") return EventKind::kMemset;
  if (cat == "cuda_runtime" || cat == "cuda_driver" || cat == "runtime") return EventKind::kRuntime;
  if (cat == "cuda_sync") return EventKind::kSync;
  return EventKind::kAnnotation;  // user_annotation, gpu_user_annotation, python_function, trace, ...
}

bool is_2021_category(const std::string& cat) {  // case-sensitive: that dialect capitalised them
  return cat == "Operator" || cat == "Kernel" || cat == "Runtime" || cat == "Memcpy" || cat == "Memset";
}
bool is_current_category(const std::string& cat) {
  return cat == "cpu_op" || cat == "kernel" || cat == "cuda_runtime" || cat == "cuda_driver" || cat == "gpu_memcpy" ||
         cat == "gpu_memset" || cat == "cuda_sync" || cat == "user_annotation" || cat == "gpu_user_annotation" ||
         cat == "python_function";
}

// Builds one json value from SAX callbacks: one trace event, or one top-level value.
class ValueBuilder {
 public:
  void reset() {
    root_ = json();
    stack_.clear();
    key_.clear();
  }
  size_t depth() const { return stack_.size(); }
  const std::string& key() const { return key_; }
  json& root() { return root_; }
  void set_key(const std::string& key) { key_ = key; }
  // True when the value completed the root.
  bool scalar(json value) {
    place(std::move(value));
    return stack_.empty();
  }
  void open(json container) { stack_.push_back(place(std::move(container))); }
  bool close() {
    stack_.pop_back();
    return stack_.empty();
  }

 private:
  json* place(json value) {
    if (stack_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(std::move(value));
      return &top.back();
    }
    json& slot = top[key_];
    slot = std::move(value);
    return &slot;
  }

  json root_;
  std::vector<json*> stack_;  // open containers; pointers stay valid: only the innermost one grows
  std::string key_;
};

// The SAX handler: walks the top level, keeps every key but traceEvents as json, and turns each
// element of traceEvents into a TraceEvent (or counter sample) as soon as it is complete.
class TraceReader {
 public:
  TraceReader(const std::string& path, const TraceLimits& limits) : path_(path), limits_(limits) {
    result_.metadata = json::object();
  }

  // SAX interface (nlohmann::json::sax_parse).
  bool null() { return value(json(nullptr)); }
  bool boolean(bool v) { return value(json(v)); }
  bool number_integer(int64_t v) {
    if (at_time_field()) time_field_ok(integer_us_to_ns(v, time_field_slot()));
    return value(json(v));
  }
  bool number_unsigned(uint64_t v) {
    if (at_time_field()) {
      time_field_ok(v <= static_cast<uint64_t>(kMaxUs) && integer_us_to_ns(static_cast<int64_t>(v), time_field_slot()));
    }
    return value(json(v));
  }
  bool number_float(double v, const std::string& text) {
    if (at_time_field()) time_field_ok(decimal_us_to_ns(text, time_field_slot()));
    return value(json(v));
  }
  bool string(std::string& v) { return value(json(std::move(v))); }
  bool binary(json::binary_t& /*unused*/) { return value(json()); }  // never in JSON text
  bool start_object(size_t /*unused*/) { return open(json::object()); }
  bool start_array(size_t /*unused*/) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(std::string& key) {
    if (target_ != Target::kNone) builder_.set_key(key);
    else if (root_ == Root::kObject && depth_ == 1) top_key_ = key;
    return true;
  }
  bool parse_error(size_t position, const std::string& /*last_token*/, const nlohmann::detail::exception& ex) {
    parse_error_position_ = static_cast<int64_t>(position);
    parse_error_ = ex.what();
    return false;
  }

  const std::string& failure() const { return failure_; }
  const std::string& parse_error_text() const { return parse_error_; }
  int64_t parse_error_position() const { return parse_error_position_; }

  TraceImport finish() {
    if (!saw_events_) throw InputError(path_ + ": no traceEvents array (not a Chrome trace)");
    json& meta = result_.metadata;
    Profile& profile = result_.profile;
    const bool trainlab_time_base = meta.contains("trainlab") || meta.contains("trainlabOriginNs");
    int64_t shift_ns = 0;
    if (trainlab_time_base) {
      // trainlab's own trace: times are microseconds after trainlabOriginNs (which the writer puts
      // after traceEvents), back to the recorded steady-clock base.
      if (meta.contains("trainlabOriginNs")) {
        if (meta["trainlabOriginNs"].is_number_integer()) shift_ns = meta["trainlabOriginNs"].get<int64_t>();
        else result_.warnings.push_back("trainlabOriginNs is not an integer; times kept relative to the trace");
      }
    } else if (earliest_ns_ != std::numeric_limits<int64_t>::max()) {
      shift_ns = -earliest_ns_;  // another tool's clock: rebase so the earliest event starts at 0
    }
    bool overflow = false;
    for (TraceEvent& e : profile.events) {
      overflow |= __builtin_add_overflow(e.start_ns, shift_ns, &e.start_ns);
      overflow |= __builtin_add_overflow(e.end_ns, shift_ns, &e.end_ns);
    }
    for (CounterTrack& track : profile.counters) {
      for (CounterSample& sample : track.samples) {
        overflow |= __builtin_add_overflow(sample.time_ns, shift_ns, &sample.time_ns);
      }
    }
    if (overflow) throw InputError(path_ + ": timestamps span more than the int64 nanosecond range");
    result_.time_shift_ns = shift_ns;
    if (meta.contains("trainlabDropped")) take_dropped(meta["trainlabDropped"]);
    if (meta.contains("trainlabNotes") && meta["trainlabNotes"].is_array()) {
      for (const json& note : meta["trainlabNotes"]) {
        if (note.is_string()) profile.notes.push_back(note.get<std::string>());
      }
    }
    if (meta.contains("trainlab")) result_.dialect = "trainlab";
    else if (categories_2021_ > 0 && categories_2021_ >= categories_current_) result_.dialect = "kineto-2021";
    else if (categories_current_ > 0) result_.dialect = "kineto";
    else result_.dialect = "unknown";
    if (categories_2021_ > 0 && categories_current_ > 0 && result_.dialect != "trainlab") {
      result_.warnings.push_back("mixed category dialects: " + std::to_string(categories_2021_) +
                                 " events with 2021 names, " + std::to_string(categories_current_) +
                                 " with current names");
    }
    if (profile.events.empty()) result_.warnings.push_back("no complete (\"X\") events in traceEvents");
    if (non_numeric_dur_ > 0) {
      result_.warnings.push_back(std::to_string(non_numeric_dur_) + " X events with a non-numeric dur, read as 0");
    }
    if (negative_dur_ > 0) {
      result_.warnings.push_back(std::to_string(negative_dur_) + " X events with a negative dur, clamped to 0");
    }
    if (bad_counters_ > 0) {
      result_.warnings.push_back(std::to_string(bad_counters_) +
                                 " counter (\"C\") events without a numeric ts or value, skipped");
    }
    return std::move(result_);
  }

 private:
  enum class Root { kNone, kObject, kArray };
  enum class Target { kNone, kEvent, kMetadata, kDiscard };

  bool fail(const std::string& message) {
    failure_ = path_ + ": " + message;
    return false;
  }

  // The limits on what the import holds: elements of traceEvents, and JSON values built.
  bool count_event() {
    if (++events_seen_ <= limits_.max_events) return true;
    return fail("more than " + std::to_string(limits_.max_events) + " trace events: past the limit (set " +
                kMaxTraceEventsVariable + " to raise it)");
  }
  bool count_value() {
    if (++values_built_ <= limits_.max_values) return true;
    return fail("more than " + std::to_string(limits_.max_values) +
                " JSON values (event fields, args and metadata, " + std::to_string(kTraceValuesPerEvent) +
                " per trace event allowed): past the limit (set " + kMaxTraceEventsVariable +
                " to raise it)");
  }

  // The ts/dur fields of the event being built are read from the number's text, exactly.
  bool at_time_field() const {
    return target_ == Target::kEvent && builder_.depth() == 1 && (builder_.key() == "ts" || builder_.key() == "dur");
  }
  int64_t* time_field_slot() { return builder_.key() == "ts" ? &ts_ns_ : &dur_ns_; }
  void time_field_ok(bool ok) {
    if (builder_.key() == "ts") ts_numeric_ = ok;
    else dur_numeric_ = ok;
    if (!ok) time_out_of_range_ = true;
  }

  bool value(json v) {
    if (target_ != Target::kNone) {
      if (!count_value()) return false;
      return builder_.scalar(std::move(v)) ? complete() : true;
    }
    if (root_ == Root::kNone) {
      return fail(std::string("no traceEvents array (the top level is a ") + v.type_name() + ")");
    }
    if (in_events_ && depth_ == events_depth_) return count_event();  // a scalar among the events: ignored
    if (root_ == Root::kObject && depth_ == 1) {
      if (!count_value()) return false;
      if (top_key_ == "traceEvents") {
        return fail(std::string("no traceEvents array (traceEvents is a ") + v.type_name() + ")");
      }
      result_.metadata[top_key_] = std::move(v);
    }
    return true;
  }

  bool open(json container) {
    if (target_ != Target::kNone) {
      if (!count_value()) return false;
      builder_.open(std::move(container));
      return true;
    }
    const bool is_array = container.is_array();
    if (root_ == Root::kNone) {  // the top level: {"traceEvents": [...], ...} or a bare [...] of events
      root_ = is_array ? Root::kArray : Root::kObject;
      depth_ = 1;
      if (is_array) start_events(1);
      return true;
    }
    if (in_events_ && depth_ == events_depth_) {
      if (!count_event() || !count_value()) return false;
      start_value(is_array ? Target::kDiscard : Target::kEvent);
      builder_.open(std::move(container));
      return true;
    }
    if (root_ == Root::kObject && depth_ == 1) {
      if (top_key_ == "traceEvents") {
        if (!is_array) return fail("no traceEvents array (traceEvents is an object)");
        depth_ = 2;
        start_events(2);
        return true;
      }
      if (!count_value()) return false;
      start_value(Target::kMetadata);
      builder_.open(std::move(container));
      return true;
    }
    return true;
  }

  bool close() {
    if (target_ != Target::kNone) return builder_.close() ? complete() : true;
    if (in_events_ && depth_ == events_depth_) in_events_ = false;
    --depth_;
    return true;
  }

  void start_events(int depth) {
    in_events_ = true;
    saw_events_ = true;
    events_depth_ = depth;
  }

  void start_value(Target target) {
    target_ = target;
    builder_.reset();
    ts_numeric_ = dur_numeric_ = time_out_of_range_ = false;
    ts_ns_ = dur_ns_ = 0;
  }

  bool complete() {
    const Target target = target_;
    target_ = Target::kNone;
    if (target == Target::kMetadata) result_.metadata[top_key_] = std::move(builder_.root());
    if (target != Target::kEvent) return true;
    ++event_index_;
    json& ev = builder_.root();
    const auto ph = ev.find("ph");
    if (ph == ev.end() || !ph->is_string()) return true;
    const std::string& phase = ph->get_ref<const std::string&>();
    if (phase == "X") return take_complete_event(ev);
    if (phase == "C") take_counter(ev);
    if (phase == "M") take_thread_name(ev);
    // Other metadata, flows ("s", "f"), instants ("i"), ...: nothing to keep.
    return true;
  }

  // trainlabDropped: source -> records lost. A count beyond int64 reads as INT64_MAX (lost is lost);
  // a negative count or anything but an integer is malformed: it could hide the loss that makes a
  // verdict inconclusive.
  void take_dropped(const json& dropped) {
    if (!dropped.is_object()) {
      throw InputError(path_ + ": trainlabDropped is a " + dropped.type_name() + ", not an object of counts");
    }
    for (const auto& [source, count] : dropped.items()) {
      const bool count_ok =
          count.is_number_unsigned() || (count.is_number_integer() && count.get<int64_t>() >= 0);
      if (!count_ok) {
        throw InputError(path_ + ": trainlabDropped[\"" + source.substr(0, 80) + "\"] is " +
                         json_text(count).substr(0, 80) +
                         ", not a count of lost records (an integer, 0 or more)");
      }
      result_.profile.dropped[source] =
          count.is_number_unsigned() &&
                  count.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
              ? std::numeric_limits<int64_t>::max()
              : count.get<int64_t>();
    }
  }

  static std::string string_field(const json& ev, const char* field) {
    const auto it = ev.find(field);
    return it != ev.end() && it->is_string() ? it->get<std::string>() : std::string();
  }

  bool take_complete_event(json& ev) {
    TraceEvent e;
    e.name = string_field(ev, "name");
    if (!ts_numeric_) {
      return fail("trace event #" + std::to_string(event_index_) + " (\"" + e.name.substr(0, 80) + "\") has " +
                  (time_out_of_range_ ? "a ts out of range" : "no numeric ts"));
    }
    const std::string cat = string_field(ev, "cat");
    const std::string cat_lower = lower(cat);
    categories_2021_ += is_2021_category(cat);
    categories_current_ += is_current_category(cat);
    const auto args = ev.find("args");
    if (args != ev.end() && args->is_object()) {
      if (args->contains("trainlab_alias_of")) return true;  // trainlab's copy in PyTorch's words
      e.args = std::move(*args);
    }
    EventKind trainlab_kind = EventKind::kAnnotation;
    const auto tk = e.args.is_object() ? e.args.find("trainlab_kind") : e.args.end();
    const bool has_trainlab_kind = e.args.is_object() && tk != e.args.end() && tk->is_string() &&
                                   kind_from_trainlab(tk->get_ref<const std::string&>(), &trainlab_kind);
    e.kind = has_trainlab_kind ? trainlab_kind : kind_from_category(cat_lower, e.name);
    if (has_trainlab_kind) e.args.erase("External id");  // the writer's, derived from the events themselves
    e.on_device = e.kind == EventKind::kKernel || e.kind == EventKind::kMemcpy || e.kind == EventKind::kMemset ||
                  e.kind == EventKind::kSync || cat_lower == "gpu_user_annotation";
    int64_t dur_ns = 0;
    if (dur_numeric_) {
      dur_ns = dur_ns_;
    } else {
      const auto dur = ev.find("dur");
      if (dur != ev.end() && !dur->is_null()) ++non_numeric_dur_;
    }
    if (dur_ns < 0) {
      ++negative_dur_;
      dur_ns = 0;
    }
    e.start_ns = ts_ns_;  // raw: the time base is applied in finish()
    if (__builtin_add_overflow(ts_ns_, dur_ns, &e.end_ns)) {
      return fail("trace event #" + std::to_string(event_index_) + " (\"" + e.name.substr(0, 80) +
                  "\") ends beyond the int64 nanosecond range");
    }
    earliest_ns_ = std::min(earliest_ns_, e.start_ns);
    const auto pid = ev.find("pid");
    const auto tid = ev.find("tid");
    e.device = pid != ev.end() ? id_of(*pid) : 0;
    e.track = tid != ev.end() ? id_of(*tid) : 0;
    if (e.args.is_object()) {
      const auto correlation = e.args.find("correlation");
      if (correlation != e.args.end() && correlation->is_number_integer()) e.correlation = correlation->get<int64_t>();
    }
    if (e.kind == EventKind::kStep) ++result_.steps;
    result_.profile.events.push_back(std::move(e));
    return true;
  }

  void take_thread_name(const json& ev) {
    if (string_field(ev, "name") != "thread_name") return;
    const auto args = ev.find("args");
    const auto tid = ev.find("tid");
    if (args == ev.end() || !args->is_object() || tid == ev.end()) return;
    const std::string name = string_field(*args, "name");
    if (!name.empty()) result_.profile.thread_names[id_of(*tid)] = name;
  }

  void take_counter(const json& ev) {
    const auto args = ev.find("args");
    if (!ts_numeric_ || args == ev.end() || !args->is_object()) {
      ++bad_counters_;
      return;
    }
    for (const auto& [unit, value] : args->items()) {
      if (!value.is_number()) continue;
      const std::string name = string_field(ev, "name");
      auto [it, inserted] = counter_index_.emplace(name, result_.profile.counters.size());
      if (inserted) result_.profile.counters.push_back(CounterTrack{name, "", {}});
      CounterTrack& track = result_.profile.counters[it->second];
      track.unit = unit;
      track.samples.push_back({ts_ns_, value.get<double>()});
      earliest_ns_ = std::min(earliest_ns_, ts_ns_);
      return;
    }
    ++bad_counters_;
  }

  std::string path_;
  TraceLimits limits_;
  int64_t events_seen_ = 0, values_built_ = 0;
  TraceImport result_;
  std::string failure_;
  std::string parse_error_;
  int64_t parse_error_position_ = -1;

  Root root_ = Root::kNone;
  int depth_ = 0;  // containers open outside the builder
  std::string top_key_;
  bool in_events_ = false;
  bool saw_events_ = false;
  int events_depth_ = -1;

  Target target_ = Target::kNone;
  ValueBuilder builder_;
  bool ts_numeric_ = false, dur_numeric_ = false, time_out_of_range_ = false;
  int64_t ts_ns_ = 0, dur_ns_ = 0;

  int64_t event_index_ = 0;
  int64_t earliest_ns_ = std::numeric_limits<int64_t>::max();
  std::map<std::string, size_t> counter_index_;
  int64_t categories_2021_ = 0, categories_current_ = 0;
  int64_t non_numeric_dur_ = 0, negative_dur_ = 0, bad_counters_ = 0;
};

// nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error ..."
// -> "syntax error ...", cut to a few hundred characters.
std::string parse_error_reason(const std::string& what) {
  std::string reason = what;
  const size_t bracket = reason.find("] ");
  if (reason.rfind("[json.exception", 0) == 0 && bracket != std::string::npos) reason = reason.substr(bracket + 2);
  const size_t at = reason.find("parse error at line ");
  const size_t colon = at == 0 ? reason.find(": ") : std::string::npos;
  if (colon != std::string::npos) reason = reason.substr(colon + 2);
  std::replace(reason.begin(), reason.end(), '\n', ' ');
  // nlohmann quotes the token it stopped in, which may be megabytes long.
  constexpr size_t kShownChars = 200;
  if (reason.size() > kShownChars + 40) {
    reason = reason.substr(0, kShownChars) + "... (" + std::to_string(reason.size()) + " characters)";
  }
  return reason;
}

}  // namespace

TraceLimits trace_limits() {
  TraceLimits limits;
  limits.max_bytes = limit_from_environment(kMaxTraceGbVariable, kDefaultMaxTraceGb, 1024 * kBytesPerMiB);
  limits.max_events =
      limit_from_environment(kMaxTraceEventsVariable, static_cast<double>(kDefaultMaxTraceEvents), 1);
  limits.max_values = limits.max_events * kTraceValuesPerEvent;
  limits.max_token_bytes = limit_from_environment(kMaxStringMbVariable, kDefaultMaxStringMb, kBytesPerMiB);
  return limits;
}

namespace {

// Why the parse failed, in the reader's words: a failure of the handler, or of the JSON itself.
[[noreturn]] void throw_parse_failure(const std::string& path, const TraceReader& reader,
                                      const TraceByteStream& bytes) {
  if (!reader.failure().empty()) throw InputError(reader.failure());
  if (bytes.bytes_read() == 0) {
    throw InputError(path + (bytes.gzipped()     ? ": empty gzip stream"
                             : bytes.from_pipe() ? ": empty input (nothing was written to the pipe)"
                                                 : ": empty file"));
  }
  const std::string encoding = bytes.encoding_problem();
  if (!encoding.empty()) throw InputError(path + ": " + encoding);
  const std::string decompressed = bytes.gzipped() ? " (decompressed)" : "";
  // nlohmann reads a NUL byte as the end of the input (or, in a string, as a control character):
  // an error at it or after it is the NUL's.
  if (bytes.first_nul_offset() >= 0 && reader.parse_error_position() > bytes.first_nul_offset()) {
    throw InputError(path + ": not JSON text: a NUL byte at byte " +
                     std::to_string(bytes.first_nul_offset() + 1) + decompressed +
                     " (a file cut short or zero-filled, say by a crash while it was written?)");
  }
  const std::string reason = parse_error_reason(reader.parse_error_text());
  const std::string at = " at byte " + std::to_string(reader.parse_error_position()) + decompressed;
  if (reason.find("unexpected end of input") != std::string::npos) {
    throw InputError(path + ": truncated JSON: unexpected end of input" + at);
  }
  throw InputError(path + ": not valid JSON" + at + ": " + reason);
}

}  // namespace

namespace {

TraceImport parse_trace(const std::string& path, const TraceLimits& limits, TraceByteStream& bytes) {
  std::istream input(&bytes);
  TraceReader reader(path, limits);
  bool parsed = false;
  try {
    parsed = nlohmann::json::sax_parse(input, &reader);
  } catch (const nlohmann::json::exception& e) {  // defensive: the handler itself does not throw these
    throw InputError(path + ": malformed trace: " + parse_error_reason(e.what()));
  }
  if (!parsed && reader.failure().empty() && bytes.gzipped() && bytes.error().empty()) bytes.drain();
  if (!bytes.error().empty()) throw InputError(path + ": " + bytes.error());
  if (!parsed) throw_parse_failure(path, reader, bytes);
  return reader.finish();
}

}  // namespace

TraceImport import_trace(const std::string& path, const TraceLimits& limits) {
  TraceByteStream bytes(path, limits);
  try {
    return parse_trace(path, limits, bytes);
  } catch (const std::bad_alloc&) {
    // Under a memory cap (ulimit -v): within the limits, but not within this machine's memory.
    throw InputError(path + ": out of memory after " + std::to_string(bytes.bytes_read()) +
                     " bytes of the trace, within its limits (" + kMaxTraceGbVariable + ", " +
                     kMaxTraceEventsVariable + ", " + kMaxStringMbVariable +
                     "): run where more memory is free, or lower one to refuse such a trace early");
  }
}

TraceImport import_trace(const std::string& path) { return import_trace(path, trace_limits()); }

Profile read_chrome_trace(const std::string& path) { return import_trace(path).profile; }

}  // namespace trainlab
