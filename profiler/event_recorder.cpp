// Thread-local bounded span buffers, registered once per thread in a global list (an exited
// thread's buffer leaves the list at the next collect()).
#include "profiler/event_recorder.h"

#include <pthread.h>

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace trainlab {
namespace {

struct OpSpan {
  int64_t start_ns = 0, end_ns = 0;
  uint32_t name_id = 0;
};

struct ThreadBuffer {
  int64_t thread_id = 0;
  std::string thread_name;     // as the thread was named when it first recorded (pthread_getname_np)
  uint64_t generation = 0;     // the window this buffer's events belong to
  std::vector<TraceEvent> events;
  std::vector<OpSpan> ops;     // compact op spans; with events, at most max_events_per_thread
  int64_t dropped = 0;
  std::mutex mutex;            // taken by the owner per record and by collect(); uncontended in the window
};

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::vector<std::shared_ptr<ThreadBuffer>>& registry() {
  static std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  return buffers;
}

ThreadBuffer& this_thread_buffer() {
  thread_local std::shared_ptr<ThreadBuffer> buffer = [] {
    auto b = std::make_shared<ThreadBuffer>();
    b->thread_id = current_thread_id();
    char name[64] = {};
    if (::pthread_getname_np(::pthread_self(), name, sizeof name) == 0) b->thread_name = name;
    std::lock_guard<std::mutex> lock(registry_mutex());
    registry().push_back(b);
    return b;
  }();
  return *buffer;
}

// Every name ever interned, in id order; deque keeps each string's address fixed.
struct NameTable {
  std::mutex mutex;
  std::deque<std::string> names;
  std::unordered_map<std::string_view, uint32_t> ids;
};
NameTable& name_table() {
  static NameTable* table = new NameTable;  // never destroyed: threads may intern during exit
  return *table;
}

// The id of name, added when new; *text: the table's copy (its address never changes).
uint32_t intern_slow(const char* name, const char** text) {
  NameTable& t = name_table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.ids.find(std::string_view(name));
  if (it == t.ids.end()) {
    t.names.emplace_back(name);
    it = t.ids.emplace(std::string_view(t.names.back()), static_cast<uint32_t>(t.names.size() - 1)).first;
  }
  *text = t.names[it->second].c_str();
  return it->second;
}

// Per-thread cache: slot by the name's address; a hit needs the same address and the same text.
struct NameCacheSlot {
  const char* address = nullptr;
  const char* text = nullptr;  // the interned copy
  uint32_t id = 0;
};
constexpr size_t kNameCacheSlots = 1024;

void start_window_on(ThreadBuffer& b, uint64_t generation, size_t max_events) {
  b.generation = generation;
  b.events.clear();
  b.events.reserve(std::min<size_t>(max_events, 4096));
  b.ops.clear();
  b.ops.reserve(std::min<size_t>(max_events, 65536));
  b.dropped = 0;
}

// Under b's lock: starts b's part of the current window if it is behind, and says whether one more
// event fits (counting it as dropped when not).
bool has_room(ThreadBuffer& b, uint64_t generation, size_t max_events) {
  if (b.generation != generation) start_window_on(b, generation, max_events);
  if (b.events.size() + b.ops.size() < max_events) return true;
  ++b.dropped;
  return false;
}

}  // namespace

uint32_t EventRecorder::intern_name(const char* name) {
  thread_local NameCacheSlot cache[kNameCacheSlots];
  const auto address = reinterpret_cast<uintptr_t>(name);
  NameCacheSlot& slot = cache[(address >> 3 ^ address >> 13) % kNameCacheSlots];
  if (slot.address == name && std::strcmp(slot.text, name) == 0) return slot.id;
  const char* text = nullptr;
  const uint32_t id = intern_slow(name, &text);
  slot = {name, text, id};
  return id;
}

std::string EventRecorder::interned_name(uint32_t name_id) {
  NameTable& t = name_table();
  std::lock_guard<std::mutex> lock(t.mutex);
  return name_id < t.names.size() ? t.names[name_id] : std::string();
}

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t current_thread_id() {
  thread_local const int64_t id = static_cast<int64_t>(::syscall(SYS_gettid));
  return id;
}

EventRecorder& EventRecorder::instance() {
  static EventRecorder recorder;
  return recorder;
}

void EventRecorder::enable(size_t max_events_per_thread) {
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    for (auto& b : registry()) {
      std::lock_guard<std::mutex> buffer_lock(b->mutex);
      b->events.clear();
      b->dropped = 0;
    }
  }
  max_events_per_thread_ = max_events_per_thread;
  generation_.fetch_add(1);
  enabled_.store(true);
}

void EventRecorder::disable() { enabled_.store(false); }

void EventRecorder::record(EventKind kind, const char* name, int64_t start_ns, int64_t end_ns,
                           const nlohmann::json* args) {
  if (!enabled()) return;
  ThreadBuffer& b = this_thread_buffer();
  std::lock_guard<std::mutex> lock(b.mutex);
  if (!has_room(b, generation_.load(std::memory_order_relaxed), max_events_per_thread_)) return;
  TraceEvent& e = b.events.emplace_back();
  e.kind = kind;
  e.name = name;
  e.start_ns = start_ns;
  e.end_ns = end_ns;
  e.track = b.thread_id;
  if (args != nullptr) e.args = *args;
}

void EventRecorder::record_op(uint32_t name_id, int64_t start_ns, int64_t end_ns) {
  if (!enabled()) return;
  ThreadBuffer& b = this_thread_buffer();
  std::lock_guard<std::mutex> lock(b.mutex);
  if (!has_room(b, generation_.load(std::memory_order_relaxed), max_events_per_thread_)) return;
  b.ops.push_back({start_ns, end_ns, name_id});
}

void EventRecorder::collect(Profile& profile) {
  const uint64_t generation = generation_.load();
  int64_t lost = 0;
  std::lock_guard<std::mutex> lock(registry_mutex());
  for (auto& b : registry()) {
    std::lock_guard<std::mutex> buffer_lock(b->mutex);
    if (b->generation != generation) continue;
    if (!b->thread_name.empty() && (!b->events.empty() || !b->ops.empty())) profile.thread_names[b->thread_id] = b->thread_name;
    for (TraceEvent& e : b->events) profile.events.push_back(std::move(e));
    b->events.clear();
    b->events.shrink_to_fit();
    if (!b->ops.empty()) {
      // Names once per distinct id, then one TraceEvent per span.
      std::unordered_map<uint32_t, std::string> names;
      for (const OpSpan& op : b->ops) {
        auto it = names.find(op.name_id);
        if (it == names.end()) it = names.emplace(op.name_id, interned_name(op.name_id)).first;
        TraceEvent& e = profile.events.emplace_back();
        e.kind = EventKind::kCpuOp;
        e.name = it->second;
        e.start_ns = op.start_ns;
        e.end_ns = op.end_ns;
        e.track = b->thread_id;
      }
    }
    b->ops.clear();
    b->ops.shrink_to_fit();
    lost += b->dropped;
    b->dropped = 0;
  }
  // Buffers only the registry still holds belong to threads that have exited (loader workers
  // restarted per epoch, finished pools): their events are collected now, so let them go.
  auto& buffers = registry();
  buffers.erase(std::remove_if(buffers.begin(), buffers.end(), [](const auto& b) { return b.use_count() == 1; }),
                buffers.end());
  profile.dropped["events"] += lost;
}

int64_t EventRecorder::dropped() const {
  const uint64_t generation = generation_.load();
  int64_t lost = 0;
  std::lock_guard<std::mutex> lock(registry_mutex());
  for (auto& b : registry()) {
    std::lock_guard<std::mutex> buffer_lock(b->mutex);
    if (b->generation == generation) lost += b->dropped;
  }
  return lost;
}

size_t EventRecorder::registered_threads() const {
  std::lock_guard<std::mutex> lock(registry_mutex());
  return registry().size();
}

double EventRecorder::measure_record_cost_ns() {
  // A private recorder would need the thread buffer machinery duplicated; instead time the same
  // path (enabled recorder, this thread's buffer) and clear the scratch window afterwards.
  EventRecorder& recorder = instance();
  const bool was_enabled = recorder.enabled();
  if (was_enabled) return 0;  // never disturb a live window
  constexpr int kRounds = 5, kCalls = 2000;
  recorder.enable(kCalls * kRounds);
  std::vector<double> per_call_ns;
  for (int r = 0; r < kRounds; ++r) {
    const int64_t start = steady_ns();
    for (int i = 0; i < kCalls; ++i) recorder.record_op(intern_name("aten::probe"), start, start + 1);
    per_call_ns.push_back(static_cast<double>(steady_ns() - start) / kCalls);
  }
  recorder.disable();
  Profile scratch;
  recorder.collect(scratch);
  std::sort(per_call_ns.begin(), per_call_ns.end());
  return per_call_ns[per_call_ns.size() / 2];
}

}  // namespace trainlab
