// Which device kernels are communication, by what they are and not only by an NCCL name: the trace's
// own metadata (the collective name torch writes into a kernel's args) first, then the kernel names
// of the known libraries (NCCL, RCCL, DeepEP-style expert-parallel all-to-all) and generic collective
// names, then where it was launched from (inside a host collective call such as record_param_comms). Host-side collective calls (Gloo, c10d, record_param_comms) are idle_attribution.h's. No LibTorch.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>
#include <set>
#include <unordered_set>

#include "core/profile.h"
#include "diagnostics/summary.h"

namespace trainlab {

// How a kernel was recognised as communication.
enum class CollectiveFamily {
  kTraceMetadata,  // args carry "Collective name" (torch's record_param_comms args on the kernel)
  kNccl,           // ncclKernel_*, ncclDevKernel_*
  kRccl,           // rccl / AMD's NCCL port
  kExpertAllToAll, // DeepEP-style dispatch/combine kernels (internode::/intranode::, deep_ep, ::ep::)
  kGeneric,        // all_reduce, all_gather, reduce_scatter, all_to_all, sendrecv kernels
  kLaunchedByCollective,  // any other kernel launched from inside a host collective call
  kCollectiveStream,      // any other kernel on a stream whose kernel time is almost all collectives
};

// "trace_metadata", "nccl", "rccl", "expert_all_to_all", "generic", "launched_by_collective",
// "collective_stream".
const char* collective_family_key(CollectiveFamily family);

// The family of a device kernel that is a collective by its args or name; nullopt for any other event.
std::optional<CollectiveFamily> collective_family(const TraceEvent& e);

// The same, plus the kernels a host collective call launched (record_param_comms, c10d::, nccl:,
// ... on the launching thread, linked to the kernel by the launch's correlation id), whatever their
// names: a custom backend's all-to-all launched by torch.distributed; and the other kernels of a
// communication stream (a device stream whose kernel time is at least kCollectiveStreamShare
// collectives by the tests above: a process group's own stream, where the copies that pack and
// unpack a collective's buffers run too).
class CollectiveKernels {
 public:
  static constexpr double kCollectiveStreamShare = 0.9;
  explicit CollectiveKernels(const Profile& profile);
  std::optional<CollectiveFamily> family(const TraceEvent& e) const;

 private:
  void find_collective_streams(const Profile& profile);
  std::optional<CollectiveFamily> by_name_or_launch(const TraceEvent& e) const;
  std::unordered_set<int64_t> launched_in_collective_;  // correlation ids
  std::set<std::pair<int64_t, int64_t>> collective_streams_;  // (device, stream)
};

// Each collective's run in the measured steps (a start in one of step_spans_ns), in start order, on
// the trace's clock: the collective kernels where the trace has them (CollectiveKernels), else the
// backend's own spans ("gloo:all_reduce", "nccl:...", "mpi:...", "ucc:...": a rank's collective from
// its arrival to the end of the exchange). The job matches the k-th run of each rank (job_diagnosis.h).
std::vector<std::pair<int64_t, int64_t>> collective_runs_ns(const Profile& profile,
                                                            const std::vector<std::pair<int64_t, int64_t>>& step_spans_ns);

// The collective's own name where the trace gives it (args "Collective name"), else "".
std::string collective_name_in_args(const TraceEvent& e);

// The collectives the trace's args name (torch's record_param_comms host events; where a trace has
// none of those, the kernels that carry "Collective name"), counted over the steps [start, end) in
// `step_spans_ns`, grouped by name and process group, most calls per step first.
std::vector<CollectiveCalls> collective_calls(const Profile& profile,
                                              const std::vector<std::pair<int64_t, int64_t>>& step_spans_ns);

}  // namespace trainlab
