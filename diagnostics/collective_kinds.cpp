// Communication kernels by metadata and by library naming (collective_kinds.h).
#include "diagnostics/collective_kinds.h"

#include <tuple>

#include <algorithm>
#include <iterator>
#include <map>
#include <vector>

#include "diagnostics/idle_attribution.h"
#include "diagnostics/intervals.h"

#include "diagnostics/text_format.h"
#include "core/statistics.h"

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

std::string string_arg(const nlohmann::json& args, const char* key) {
  const auto it = args.find(key);
  if (it == args.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  return it->is_number_integer() ? std::to_string(it->get<int64_t>()) : "";
}

double number_arg(const nlohmann::json& args, const char* key) {
  const auto it = args.find(key);
  return it != args.end() && it->is_number() ? it->get<double>() : 0.0;
}

bool in_steps(int64_t t_ns, const std::vector<std::pair<int64_t, int64_t>>& steps) {
  return std::any_of(steps.begin(), steps.end(), [&](const auto& st) { return t_ns >= st.first && t_ns < st.second; });
}

struct CallSamples {
  CollectiveCalls calls;
  std::vector<double> in_nelems, out_nelems;
};

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
    case CollectiveFamily::kLaunchedByCollective:
      return "launched_by_collective";
    case CollectiveFamily::kCollectiveStream:
      return "collective_stream";
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

CollectiveKernels::CollectiveKernels(const Profile& profile) {
  std::map<int64_t, std::vector<intervals::Interval>> collective_calls;  // host thread -> spans
  for (const TraceEvent& e : profile.events) {
    if (!e.on_device && e.kind != EventKind::kStep && e.kind != EventKind::kPhase &&
        is_collective_host_call(e.name)) {
      collective_calls[e.track].push_back({e.start_ns, e.end_ns});
    }
  }
  for (auto& [track, spans] : collective_calls) spans = intervals::merged(std::move(spans));
  for (const TraceEvent& e : profile.events) {
    if (e.kind != EventKind::kRuntime || e.correlation < 0) continue;
    const auto calls = collective_calls.find(e.track);
    if (calls == collective_calls.end()) continue;
    const auto& spans = calls->second;
    auto after = std::upper_bound(spans.begin(), spans.end(), e.start_ns,
                                  [](int64_t t, const intervals::Interval& span) { return t < span.first; });
    if (after != spans.begin() && std::prev(after)->second >= e.end_ns) launched_in_collective_.insert(e.correlation);
  }
  find_collective_streams(profile);
}

void CollectiveKernels::find_collective_streams(const Profile& profile) {
  std::map<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>> stream_ns;  // -> (collective, all)
  for (const TraceEvent& e : profile.events) {
    if (e.kind != EventKind::kKernel || !e.on_device) continue;
    auto& [collective_ns, all_ns] = stream_ns[{e.device, e.track}];
    all_ns += e.duration_ns();
    if (by_name_or_launch(e)) collective_ns += e.duration_ns();
  }
  for (const auto& [stream, ns] : stream_ns) {
    if (ns.first > 0 && static_cast<double>(ns.first) >= kCollectiveStreamShare * static_cast<double>(ns.second))
      collective_streams_.insert(stream);
  }
}

std::optional<CollectiveFamily> CollectiveKernels::by_name_or_launch(const TraceEvent& e) const {
  if (const auto by_name = collective_family(e)) return by_name;
  if (e.kind == EventKind::kKernel && e.correlation >= 0 && launched_in_collective_.count(e.correlation) > 0)
    return CollectiveFamily::kLaunchedByCollective;
  return std::nullopt;
}

std::optional<CollectiveFamily> CollectiveKernels::family(const TraceEvent& e) const {
  if (const auto known = by_name_or_launch(e)) return known;
  if (e.kind == EventKind::kKernel && collective_streams_.count({e.device, e.track}) > 0)
    return CollectiveFamily::kCollectiveStream;
  return std::nullopt;
}

std::vector<std::pair<int64_t, int64_t>> collective_runs_ns(const Profile& profile,
                                                            const std::vector<std::pair<int64_t, int64_t>>& step_spans_ns) {
  std::vector<std::pair<int64_t, int64_t>> kernels, backend_spans;
  if (step_spans_ns.empty()) return kernels;
  const CollectiveKernels families(profile);
  for (const TraceEvent& e : profile.events) {
    if (!in_steps(e.start_ns, step_spans_ns)) continue;
    if (e.on_device) {
      if (e.kind == EventKind::kKernel && families.family(e)) kernels.push_back({e.start_ns, e.end_ns});
      continue;
    }
    const std::string name = lower(e.name);
    for (const char* prefix : {"gloo:", "nccl:", "mpi:", "ucc:"}) {
      if (name.rfind(prefix, 0) == 0) {
        backend_spans.push_back({e.start_ns, e.end_ns});
        break;
      }
    }
  }
  std::vector<std::pair<int64_t, int64_t>>& runs = kernels.empty() ? backend_spans : kernels;
  std::sort(runs.begin(), runs.end());
  return runs;
}

std::vector<CollectiveCalls> collective_calls(const Profile& profile,
                                              const std::vector<std::pair<int64_t, int64_t>>& step_spans_ns) {
  if (step_spans_ns.empty()) return {};
  const auto is_host_record = [](const TraceEvent& e) { return !e.on_device && e.name == "record_param_comms"; };
  const bool host_records = std::any_of(profile.events.begin(), profile.events.end(), [&](const TraceEvent& e) {
    return is_host_record(e) && !collective_name_in_args(e).empty();
  });
  // (name, group, in elements, out elements) -> samples: each bucket size its own line, so no size is a
  // median over different buckets. A wait is no collective of its own.
  std::map<std::tuple<std::string, std::string, double, double>, CallSamples> by_collective;
  for (const TraceEvent& e : profile.events) {
    if (host_records ? !is_host_record(e) : e.kind != EventKind::kKernel) continue;
    const std::string name = collective_name_in_args(e);
    if (name.empty() || lower(name).find("wait") != std::string::npos || !in_steps(e.start_ns, step_spans_ns)) continue;
    const std::string group = string_arg(e.args, "Process Group Name");
    CallSamples& samples =
        by_collective[{name, group, number_arg(e.args, "In msg nelems"), number_arg(e.args, "Out msg nelems")}];
    samples.calls.name = name;
    samples.calls.process_group = group;
    samples.calls.dtype = string_arg(e.args, "dtype");
    samples.calls.group_size = static_cast<int>(number_arg(e.args, "Group size"));
    samples.calls.calls_per_step += 1;
    samples.in_nelems.push_back(number_arg(e.args, "In msg nelems"));
    samples.out_nelems.push_back(number_arg(e.args, "Out msg nelems"));
  }
  std::vector<CollectiveCalls> out;
  for (auto& [key, samples] : by_collective) {
    samples.calls.calls_per_step /= static_cast<double>(step_spans_ns.size());
    samples.calls.median_in_nelems = stats::median(samples.in_nelems);
    samples.calls.median_out_nelems = stats::median(samples.out_nelems);
    out.push_back(samples.calls);
  }
  std::stable_sort(out.begin(), out.end(), [](const CollectiveCalls& a, const CollectiveCalls& b) {
    return a.calls_per_step > b.calls_per_step;
  });
  return out;
}

}  // namespace trainlab
