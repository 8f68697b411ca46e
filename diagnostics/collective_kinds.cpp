// Communication kernels by metadata and by library naming (collective_kinds.h).
#include "diagnostics/collective_kinds.h"

#include <algorithm>
#include <iterator>

#include "diagnostics/text_format.h"

namespace trainlab {
namespace {

template <size_t N>
bool contains_any(const std::string& s, const char* const (&parts)[N]) {
  return std::any_of(std::begin(parts), std::end(parts), [&](const char* p) { return contains(s, p); });
}

// DeepEP and its forks name their kernels by namespace (deep_ep::intranode::dispatch,
// dpsk::ep::internode::combine, ...): a dispatch or combine inside an expert-parallel namespace.
bool is_expert_all_to_all(const std::string& n) {
  static const char* const kNamespaces[] = {"deep_ep", "deepep", "::ep::", "internode::", "intranode::",
                                            "internode_ll::", "low_latency"};
  static const char* const kVerbs[] = {"dispatch", "combine"};
  return contains_any(n, kNamespaces) && contains_any(n, kVerbs);
}

// Collective words in a kernel name; "broadcast", "send" and "recv" alone also name elementwise
// broadcasting and copies, so they count only in their collective spellings.
bool is_generic_collective(const std::string& n) {
  static const char* const kParts[] = {"all_reduce",     "allreduce",      "all_gather",  "allgather",
                                       "reduce_scatter", "reducescatter",  "all_to_all",  "alltoall",
                                       "cross_device_reduce", "sendrecv",  "send_recv",   "c10d::"};
  return contains_any(n, kParts);
}

}  // namespace

const char* collective_family_key(CollectiveFamily family) {
  switch (family) {
    case CollectiveFamily::kTraceMetadata:
      return "trace_metadata";
    case CollectiveFamily::kNccl:
      return "nccl";
    case CollectiveFamily::kRccl:
      return "rccl";
    case CollectiveFamily::kExpertAllToAll:
      return "expert_all_to_all";
    case CollectiveFamily::kGeneric:
      return "generic";
  }
  return "generic";
}

std::string collective_name_in_args(const TraceEvent& e) {
  if (!e.args.is_object()) return "";
  for (const char* key : {"Collective name", "collective_name"}) {
    const auto it = e.args.find(key);
    if (it != e.args.end() && it->is_string() && !it->get_ref<const std::string&>().empty()) return *it;
  }
  return "";
}

std::optional<CollectiveFamily> collective_family(const TraceEvent& e) {
  if (e.kind != EventKind::kKernel) return std::nullopt;
  const std::string n = lower(e.name);
  if (contains(n, "rccl")) return CollectiveFamily::kRccl;
  if (contains(n, "nccl")) return CollectiveFamily::kNccl;
  if (!collective_name_in_args(e).empty()) return CollectiveFamily::kTraceMetadata;
  if (is_expert_all_to_all(n)) return CollectiveFamily::kExpertAllToAll;
  if (is_generic_collective(n)) return CollectiveFamily::kGeneric;
  return std::nullopt;
}

}  // namespace trainlab
