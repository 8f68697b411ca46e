// Which device kernels are communication, by what they are and not only by an NCCL name: the trace's
// own metadata (the collective name torch writes into a kernel's args) first, then the kernel names
// of the known libraries (NCCL, RCCL, DeepEP-style expert-parallel all-to-all) and generic collective
// names. Host-side collective calls (Gloo, c10d, record_param_comms) are idle_attribution.h's. No LibTorch.
#pragma once

#include <optional>
#include <string>

#include "core/profile.h"

namespace trainlab {

// How a kernel was recognised as communication.
enum class CollectiveFamily {
  kTraceMetadata,  // args carry "Collective name" (torch's record_param_comms args on the kernel)
  kNccl,           // ncclKernel_*, ncclDevKernel_*
  kRccl,           // rccl / AMD's NCCL port
  kExpertAllToAll, // DeepEP-style dispatch/combine kernels (internode::/intranode::, deep_ep, ::ep::)
  kGeneric,        // all_reduce, all_gather, reduce_scatter, all_to_all, broadcast/send/recv kernels
};

// "trace_metadata", "nccl", "rccl", "expert_all_to_all", "generic".
const char* collective_family_key(CollectiveFamily family);

// The family of a device kernel that is a collective; nullopt for any other event.
std::optional<CollectiveFamily> collective_family(const TraceEvent& e);

// The collective's own name where the trace gives it (args "Collective name"), else "".
std::string collective_name_in_args(const TraceEvent& e);

}  // namespace trainlab
