// What a trace shows already in place (issue 34, "actions that know what is in place"): compiled
// regions, collectives launched while backward runs (DDP's overlap), DataLoader worker processes and
// pinned memory, host synchronisations inside the model's own modules. Fills the Summary's "already
// in place" fields; the rules read them so that no action proposes what is already done. No LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/profile.h"
#include "diagnostics/intervals.h"
#include "diagnostics/summary.h"

namespace trainlab {

// Reads `profile`'s host events that start inside `steps` (the measured steps, in time order);
// `main_track`: the thread that runs the loop (trace_steps.h).
void add_in_place(const Profile& profile, const std::vector<intervals::Interval>& steps, int64_t main_track,
                  Summary& s);

// "Gate" for torch.profiler's module scope "nn.Module: Gate_3"; "" for any other name.
std::string module_of_scope(const std::string& name);

// True for a host event that synchronises with the device or reads a tensor's value on the host
// (.item(): aten::item, aten::_local_scalar_dense; CUDA/HIP synchronise calls).
bool is_host_sync_event(const TraceEvent& e);

}  // namespace trainlab
