// GPU idle time by host activity: the name classes of host events, the main thread's activity as a
// timeline of pieces (innermost sync / allocator / launch call, else host ops), and the split of idle
// intervals over the DataLoader, collective and main-thread layers, in that order of precedence.
#include "diagnostics/idle_attribution.h"

#include <algorithm>
#include <climits>
#include <limits>
#include <set>

#include "diagnostics/collective_kinds.h"
#include "diagnostics/text_format.h"

namespace trainlab {
namespace {

using intervals::Interval;

template <size_t N>
bool starts_with_any(const std::string& s, const char* const (&prefixes)[N]) {
  return std::any_of(std::begin(prefixes), std::end(prefixes),
                     [&](const char* p) { return starts_with(s, p); });
}

bool is_dataloader_name(const std::string& name) {
  return contains(name, "DataLoader") && contains(name, "__next__");
}

bool is_allocator_call(const std::string& name) {
  static const char* const kPrefixes[] = {"cudaMalloc",
                                          "cudaFree",
                                          "cudaHostAlloc",
                                          "cudaHostRegister",
                                          "cudaHostUnregister",
                                          "cuMemAlloc",
                                          "cuMemFree",
                                          "cuMemCreate",
                                          "cuMemRelease",
                                          "cuMemMap",
                                          "cuMemUnmap",
                                          "cuMemAddressReserve",
                                          "cuMemAddressFree",
                                          "cuMemHostAlloc",
                                          "hipMalloc",
                                          "hipFree",
                                          "hipHostMalloc",
                                          "hipHostFree",
                                          "hipExtMallocWithFlags",
                                          "hipHostRegister"};
  if (starts_with_any(name, kPrefixes)) return true;
  const std::string n = lower(name);
  return contains(n, "empty_cache") || contains(n, "cachingallocator") || contains(n, "caching_allocator");
}

bool is_launch_call(const std::string& name) {
  if (contains(name, "LaunchKernel") || contains(name, "LaunchCooperativeKernel") ||
      contains(name, "GraphLaunch")) {
    return true;
  }
  static const char* const kCopies[] = {"cudaMemcpy", "hipMemcpy", "cuMemcpy"};
  static const char* const kSets[] = {"cudaMemset", "hipMemset", "cuMemset", "cuMemsetD"};
  return (starts_with_any(name, kCopies) && contains(name, "Async")) || starts_with_any(name, kSets);
}

}  // namespace

const char* idle_cause_key(IdleCause cause) {
  switch (cause) {
    case IdleCause::kDataLoader:
      return "dataloader";
    case IdleCause::kCollective:
      return "collective";
    case IdleCause::kSync:
      return "sync";
    case IdleCause::kCopy:
      return "copy";
    case IdleCause::kAllocator:
      return "allocator";
    case IdleCause::kLaunch:
      return "launch";
    case IdleCause::kHostOps:
      return "host_ops";
    case IdleCause::kHostIdle:
      return "host_idle";
  }
  return "host_idle";
}

bool is_sync_call(const std::string& name) {
  static const char* const kWaits[] = {
      "cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaThreadSynchronize",
      "cuStreamSynchronize",   "cuCtxSynchronize",      "cuEventSynchronize",   "hipDeviceSynchronize",
      "hipStreamSynchronize",  "hipEventSynchronize",   "hipCtxSynchronize",    "hipMemcpyWithStream"};
  if (starts_with_any(name, kWaits)) return true;
  // Blocking copies (the Async variants are launches) and the ops that read a device scalar.
  static const char* const kCopies[] = {"cudaMemcpy", "hipMemcpy", "cuMemcpy"};
  if (starts_with_any(name, kCopies) && !contains(name, "Async")) return true;
  return name == "aten::item" || name == "aten::_local_scalar_dense";
}

bool is_collective_host_call(const std::string& name) {
  const std::string n = lower(name);
  static const char* const kPrefixes[] = {"nccl:",
                                          "gloo:",
                                          "mpi:",
                                          "ucc:",
                                          "c10d::",
                                          "c10d_functional::",
                                          "_c10d_functional::",
                                          "record_param_comms"};
  if (starts_with_any(n, kPrefixes)) return true;
  return (contains(n, "processgroup") && contains(n, "wait")) || n == "aten::wait" ||
         contains(n, "wait_tensor");
}

bool is_host_run_collective(const std::string& name) {
  static const char* const kPrefixes[] = {"gloo:", "mpi:"};
  return starts_with_any(lower(name), kPrefixes);
}

IdleCause classify_host_event(const TraceEvent& e) {
  if (is_dataloader_name(e.name)) return IdleCause::kDataLoader;
  if (is_collective_host_call(e.name)) return IdleCause::kCollective;
  if (is_sync_call(e.name)) return IdleCause::kSync;
  if (is_allocator_call(e.name)) return IdleCause::kAllocator;
  if (is_launch_call(e.name)) return IdleCause::kLaunch;
  return IdleCause::kHostOps;
}

IdleAttributor::IdleAttributor(const Profile& profile, int64_t main_track) {
  std::vector<const TraceEvent*> main_events, syncs;
  std::vector<Interval> dataloader, collective;
  for (const TraceEvent& e : profile.events) {
    if (e.on_device || e.kind == EventKind::kStep || e.kind == EventKind::kPhase) continue;
    const IdleCause cause = classify_host_event(e);
    if (cause == IdleCause::kCollective) collective.push_back({e.start_ns, e.end_ns});  // any host thread
    if (e.track != main_track) continue;
    main_events.push_back(&e);
    if (cause == IdleCause::kDataLoader) dataloader.push_back({e.start_ns, e.end_ns});
    if (cause == IdleCause::kSync) syncs.push_back(&e);
  }
  dataloader_ = intervals::merged(std::move(dataloader));
  collective_ = intervals::merged(std::move(collective));
  add_syncs_waiting_for_collectives(profile, syncs);
  find_copies_to_host(profile, main_events);
  build_main_thread_pieces(std::move(main_events));
}

// A sync waited for the device work that completed last before it returned: when that is a collective
// kernel, the host was waiting for communication and the sync's time counts as collective.
void IdleAttributor::add_syncs_waiting_for_collectives(const Profile& profile,
                                                       const std::vector<const TraceEvent*>& syncs) {
  if (syncs.empty()) return;
  std::vector<std::pair<int64_t, bool>> device_ends;  // end, is a collective kernel
  const CollectiveKernels collective_kernels(profile);
  for (const TraceEvent& e : profile.events) {
    if (e.on_device &&
        (e.kind == EventKind::kKernel || e.kind == EventKind::kMemcpy || e.kind == EventKind::kMemset)) {
      device_ends.push_back({e.end_ns, collective_kernels.family(e).has_value()});
    }
  }
  std::sort(device_ends.begin(), device_ends.end());
  const int64_t clock_slack_ns = 5'000;  // host and device clocks are aligned to a few microseconds
  std::vector<Interval> waited;
  for (const TraceEvent* sync : syncs) {
    auto it = std::upper_bound(device_ends.begin(), device_ends.end(),
                               std::make_pair(sync->end_ns + clock_slack_ns, true));
    if (it == device_ends.begin()) continue;
    --it;
    if (it->first > sync->start_ns && it->second) waited.push_back({sync->start_ns, sync->end_ns});
  }
  collective_ = intervals::unite(std::move(collective_), intervals::merged(std::move(waited)));
}

void IdleAttributor::find_copies_to_host(const Profile& profile, const std::vector<const TraceEvent*>& main_events) {
  std::set<int64_t> to_host;  // correlation ids of device copies to the host
  for (const TraceEvent& e : profile.events) {
    if (e.on_device && e.kind == EventKind::kMemcpy && e.correlation >= 0 &&
        (contains(e.name, "DtoH") || contains(e.name, "Device -> Pageable") || contains(e.name, "Device -> Pinned")))
      to_host.insert(e.correlation);
  }
  if (to_host.empty()) return;
  std::vector<Interval> calls;
  for (const TraceEvent* e : main_events) {
    if (e->kind == EventKind::kRuntime && e->correlation >= 0 && to_host.count(e->correlation)) {
      copies_to_host_.push_back(e);
      calls.push_back({e->start_ns, e->end_ns});
    }
  }
  std::sort(calls.begin(), calls.end());
  for (const TraceEvent* e : main_events) {
    if (e->kind != EventKind::kCpuOp ||
        (e->name != "aten::copy_" && e->name != "aten::_to_copy" && e->name != "aten::to"))
      continue;
    const auto it = std::lower_bound(calls.begin(), calls.end(), Interval{e->start_ns, INT64_MIN});
    if (it != calls.end() && it->second <= e->end_ns) copies_to_host_.push_back(e);
  }
  std::sort(copies_to_host_.begin(), copies_to_host_.end());
}

std::vector<const TraceEvent*> IdleAttributor::copy_to_host_calls() const {
  std::vector<const TraceEvent*> by_start = copies_to_host_;
  std::sort(by_start.begin(), by_start.end(), [](const TraceEvent* a, const TraceEvent* b) {
    return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns > b->end_ns;
  });
  std::vector<const TraceEvent*> outermost;
  for (const TraceEvent* e : by_start) {
    if (outermost.empty() || e->start_ns >= outermost.back()->end_ns) outermost.push_back(e);
  }
  return outermost;
}

IdleCause IdleAttributor::cause_of(const TraceEvent& e) const {
  if (std::binary_search(copies_to_host_.begin(), copies_to_host_.end(), &e)) return IdleCause::kCopy;
  return classify_host_event(e);
}

// Sweeps the main thread's events (properly nested after clamping each to its parent) into pieces of
// constant activity: the innermost sync / allocator / launch call on the stack, else host ops.
void IdleAttributor::build_main_thread_pieces(std::vector<const TraceEvent*> events) {
  if (events.empty()) return;
  std::sort(events.begin(), events.end(), [](const TraceEvent* a, const TraceEvent* b) {
    return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns > b->end_ns;
  });
  struct Open {
    int64_t end_ns;
    IdleCause cause;
  };
  std::vector<Open> stack;
  int64_t t = events.front()->start_ns;
  const auto cause_now = [&stack] {
    for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
      if (it->cause != IdleCause::kHostOps) return it->cause;
    }
    return IdleCause::kHostOps;
  };
  const auto emit_until = [&](int64_t to) {
    if (!stack.empty() && to > t) {
      const IdleCause cause = cause_now();
      if (!pieces_.empty() && pieces_.back().end_ns == t && pieces_.back().cause == cause) {
        pieces_.back().end_ns = to;
      } else {
        pieces_.push_back({t, to, cause});
      }
    }
    t = std::max(t, to);
  };
  const auto advance_to = [&](int64_t x) {
    while (!stack.empty() && stack.back().end_ns <= x) {
      emit_until(stack.back().end_ns);
      stack.pop_back();
    }
    emit_until(x);
  };
  for (const TraceEvent* e : events) {
    advance_to(e->start_ns);
    const int64_t end = stack.empty() ? e->end_ns : std::min(e->end_ns, stack.back().end_ns);
    if (end <= e->start_ns) continue;
    IdleCause cause = cause_of(*e);
    // DataLoader and collective spans are layers of their own (attribute()); inside the pieces they
    // are host work like any other.
    if (cause == IdleCause::kDataLoader || cause == IdleCause::kCollective) cause = IdleCause::kHostOps;
    // The synchronisation inside a copy to the host waits for that copy.
    if ((cause == IdleCause::kSync || cause == IdleCause::kLaunch) &&
        std::any_of(stack.begin(), stack.end(), [](const Open& o) { return o.cause == IdleCause::kCopy; }))
      cause = IdleCause::kCopy;
    stack.push_back({end, cause});
  }
  advance_to(std::numeric_limits<int64_t>::max());
}

IdleSplit IdleAttributor::attribute(const std::vector<Interval>& idle) const {
  IdleSplit split{};
  const auto take = [&split](IdleCause cause, int64_t ns) { split[static_cast<size_t>(cause)] += ns; };
  take(IdleCause::kDataLoader, intervals::length(intervals::intersect(idle, dataloader_)));
  std::vector<Interval> rest = intervals::subtract(idle, dataloader_);
  take(IdleCause::kCollective, intervals::length(intervals::intersect(rest, collective_)));
  rest = intervals::subtract(rest, collective_);
  if (rest.empty()) return split;
  int64_t covered_ns = 0;
  auto first = std::lower_bound(pieces_.begin(), pieces_.end(), rest.front().first,
                                [](const Piece& p, int64_t t) { return p.end_ns <= t; });
  for (const Interval& gap : rest) {
    while (first != pieces_.end() && first->end_ns <= gap.first) ++first;
    for (auto p = first; p != pieces_.end() && p->start_ns < gap.second; ++p) {
      const int64_t ns = std::min(p->end_ns, gap.second) - std::max(p->start_ns, gap.first);
      if (ns <= 0) continue;
      take(p->cause, ns);
      covered_ns += ns;
    }
  }
  take(IdleCause::kHostIdle, intervals::length(rest) - covered_ns);
  return split;
}

}  // namespace trainlab
