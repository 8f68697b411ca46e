// GPU idle time attributed by what the host was doing (DESIGN §6): each device idle gap is split where
// the host's activity changes and each piece is named by the most specific host event over it: the
// main thread in the DataLoader, any host thread in a collective (or a sync that waited for a
// collective kernel), then the main thread's innermost sync / allocator / launch call, any other host
// op or Python function, or no event at all. Name lists cover CUDA and ROCm (HIP) traces. No LibTorch.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "diagnostics/intervals.h"
#include "core/profile.h"

namespace trainlab {

// What the host was doing while the device idled; the order is the order of precedence.
// kCopy: a copy to the host the main thread waits for (a Memcpy DtoH's runtime call, and the whole
// aten::copy_ / aten::_to_copy / aten::to op around it: its stream synchronisation is the copy's).
enum class IdleCause { kDataLoader, kCollective, kSync, kCopy, kAllocator, kLaunch, kHostOps, kHostIdle };
inline constexpr size_t kIdleCauseCount = 8;

// "dataloader", "collective", "sync", "copy", "allocator", "launch", "host_ops", "host_idle".
const char* idle_cause_key(IdleCause cause);

// Nanoseconds of idle time per cause, indexed by IdleCause.
using IdleSplit = std::array<int64_t, kIdleCauseCount>;

// The class of one host event by its name: kDataLoader for `enumerate(DataLoader)...__next__`,
// kCollective for nccl:/gloo:/c10d:: spans, record_param_comms and collective waits, kSync for
// stream/event/device synchronisations, .item() and blocking copies, kAllocator for device/pinned
// allocations and frees, kLaunch for kernel launches and async copies/memsets, kHostOps otherwise.
IdleCause classify_host_event(const TraceEvent& e);

// Name tests shared with the summary (e.g. counting host syncs).
bool is_sync_call(const std::string& name);
bool is_collective_host_call(const std::string& name);
// A collective span of a backend whose host threads move the data themselves (gloo:, mpi:), not
// a launch of device work.
bool is_host_run_collective(const std::string& name);

class IdleAttributor {
 public:
  // `main_track`: the host thread that runs the loop. Reads the profile once; attribute() may then be
  // called per step.
  IdleAttributor(const Profile& profile, int64_t main_track);

  // Splits `idle` (merged device idle intervals) by cause.
  IdleSplit attribute(const std::vector<intervals::Interval>& idle) const;

  // The main thread's copies to the host, one event each: the outermost copy op around a runtime call
  // that launches a Memcpy DtoH (the call itself where no op encloses it), by start.
  std::vector<const TraceEvent*> copy_to_host_calls() const;

 private:
  struct Piece {  // the main thread's activity over [start_ns, end_ns)
    int64_t start_ns, end_ns;
    IdleCause cause;
  };
  void build_main_thread_pieces(std::vector<const TraceEvent*> events);
  void add_syncs_waiting_for_collectives(const Profile& profile, const std::vector<const TraceEvent*>& syncs);
  // The main thread's copies to the host: runtime calls launching a Memcpy DtoH (by correlation) and the
  // copy ops that enclose one.
  void find_copies_to_host(const Profile& profile, const std::vector<const TraceEvent*>& main_events);
  IdleCause cause_of(const TraceEvent& e) const;

  std::vector<intervals::Interval> dataloader_;  // main thread
  std::vector<intervals::Interval> collective_;  // any host thread, plus syncs ended by a collective kernel
  std::vector<Piece> pieces_;  // main thread: innermost sync/allocator/launch, else host ops
  std::vector<const TraceEvent*> copies_to_host_;  // sorted by address: main-thread events that are kCopy
};

}  // namespace trainlab
