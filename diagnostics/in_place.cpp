// What a trace shows already in place (in_place.h): each host thread's events are walked in start
// order with the stack of spans that enclose them, so a call is known by what it runs inside: a
// collective launched inside autograd's evaluate_function (DDP's gradient hooks), a .item() inside
// an nn.Module scope. Counts are per measured step. No LibTorch.
#include "diagnostics/in_place.h"

#include "diagnostics/collective_kinds.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <iterator>
#include <map>

#include "core/text.h"
#include "diagnostics/idle_attribution.h"
#include "diagnostics/text_format.h"

namespace trainlab {
namespace {

bool in_steps(const std::vector<intervals::Interval>& steps, int64_t t) {
  for (const intervals::Interval& st : steps) {
    if (t >= st.first && t < st.second) return true;
  }
  return false;
}

bool is_compiled_region(const std::string& name) { return name.rfind("Torch-Compiled Region", 0) == 0; }

bool is_backward_span(const std::string& name) {
  return name.rfind("autograd::engine::evaluate_function", 0) == 0;
}

bool is_collective_launch(const std::string& name) {
  return is_collective_host_call(name) && !contains(lower(name), "wait");
}

// What walking the host threads counts inside the steps (add_in_place).
struct InPlaceTally {
  int64_t compiled_regions = 0, compiled_functions = 0, launches = 0, launches_in_backward = 0, graph_launches = 0;
  std::map<std::pair<std::string, std::string>, int64_t> model_syncs;  // (op, module) -> count
  std::vector<intervals::Interval> compiled_spans;  // compiled code running, any thread
};

// The DataLoader's iterator names whether it has worker processes; pinning shows as the pin op
// (the loader's pin thread) or as copies from pinned memory.
void find_loader_and_pinning(const Profile& profile, Summary& s) {
  for (const TraceEvent& e : profile.events) {
    if (!e.on_device && contains(e.name, "DataLoader") && contains(e.name, "__next__")) {
      if (contains(e.name, "_MultiProcessingDataLoaderIter")) s.loader_iterator = "_MultiProcessingDataLoaderIter";
      else if (s.loader_iterator.empty() && contains(e.name, "_SingleProcessDataLoaderIter"))
        s.loader_iterator = "_SingleProcessDataLoaderIter";
    }
    if (s.pin_memory_evidence.empty()) {
      if (!e.on_device && (e.name == "aten::_pin_memory" || e.name == "aten::pin_memory")) {
        s.pin_memory_evidence = e.name;
      } else if (e.kind == EventKind::kMemcpy && contains(e.name, "Pinned")) {
        s.pin_memory_evidence = e.name;
      }
    }
  }
  if (!s.pin_memory_evidence.empty() && !s.pin_memory) s.pin_memory = true;
}

// Host events by thread (no steps or phases).
std::map<int64_t, std::vector<const TraceEvent*>> host_events_by_track(const Profile& profile) {
  std::map<int64_t, std::vector<const TraceEvent*>> by_track;
  for (const TraceEvent& e : profile.events) {
    if (e.on_device || e.kind == EventKind::kStep || e.kind == EventKind::kPhase) continue;
    by_track[e.track].push_back(&e);
  }
  return by_track;
}

// One host event inside the steps, known by the spans that enclose it (`stack`): compiled code,
// graph launches, collective launches (counted on threads that run the loop or autograd:
// `counts_collectives`), host syncs inside the model's modules.
void tally_in_step_event(const TraceEvent* e, const std::vector<const TraceEvent*>& stack, bool counts_collectives,
                         InPlaceTally& tally) {
  const auto inside = [&](auto&& pred) {
    return std::any_of(stack.begin(), stack.end(), [&](const TraceEvent* a) { return pred(a->name); });
  };
  // A graph break's resumed code runs as its own region inside the first: every region counts.
  if (is_compiled_region(e->name)) ++tally.compiled_regions;
  if (e->kind == EventKind::kRuntime && (e->name.rfind("cudaGraphLaunch", 0) == 0 ||
                                         e->name.rfind("hipGraphLaunch", 0) == 0))
    ++tally.graph_launches;
  if (e->name == "CompiledFunction") ++tally.compiled_functions;
  if (is_compiled_region(e->name) || e->name == "CompiledFunction" || e->name == "CompiledFunctionBackward")
    tally.compiled_spans.push_back({e->start_ns, e->end_ns});
  // torch records a wait as a record_param_comms of its own ("Collective name": "wait"): not a collective.
  const bool recorded_wait = e->name == "record_param_comms" && lower(collective_name_in_args(*e)).find("wait") != std::string::npos;
  if (counts_collectives && is_collective_launch(e->name) && !recorded_wait && !inside(is_collective_host_call)) {
    ++tally.launches;
    if (inside(is_backward_span)) ++tally.launches_in_backward;
  }
  if (is_host_sync_event(*e) && !std::any_of(stack.begin(), stack.end(), [](const TraceEvent* a) {
        return is_host_sync_event(*a);
      })) {
    for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
      const std::string module = module_of_scope((*it)->name);
      if (module.empty()) continue;
      ++tally.model_syncs[{e->name, module}];
      break;
    }
  }
}

// Each host thread's events in start order, with the stack of spans that enclose each.
InPlaceTally tally_host_threads(std::map<int64_t, std::vector<const TraceEvent*>>& by_track,
                                const std::vector<intervals::Interval>& steps, int64_t main_track) {
  InPlaceTally tally;
  for (auto& [track, events] : by_track) {
    std::sort(events.begin(), events.end(), [](const TraceEvent* a, const TraceEvent* b) {
      return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns > b->end_ns;
    });
    // Collectives count on the threads that run the loop or autograd (not a library's worker
    // threads, whose spans mirror the same calls).
    const bool runs_autograd = std::any_of(events.begin(), events.end(),
                                           [](const TraceEvent* e) { return is_backward_span(e->name); });
    std::vector<const TraceEvent*> stack;
    for (const TraceEvent* e : events) {
      while (!stack.empty() && stack.back()->end_ns <= e->start_ns) stack.pop_back();
      if (in_steps(steps, e->start_ns)) tally_in_step_event(e, stack, runs_autograd || track == main_track, tally);
      stack.push_back(e);
    }
  }
  return tally;
}

// The share that runs compiled: of kernel time on a device (the host's compiled span only
// launches: the kernels it launched, by correlation, are what runs compiled), else of the step.
void fill_compiled_share(const Profile& profile, const std::vector<intervals::Interval>& steps,
                         std::vector<intervals::Interval> compiled_spans, Summary& s) {
  const std::vector<intervals::Interval> compiled = intervals::merged(std::move(compiled_spans));
  const auto in_compiled = [&compiled](int64_t t) {
    const auto it = std::upper_bound(compiled.begin(), compiled.end(), intervals::Interval{t, INT64_MAX});
    return it != compiled.begin() && t < std::prev(it)->second;
  };
  std::map<int64_t, bool> launched_compiled;  // correlation -> launched inside compiled code
  int64_t kernel_ns = 0, compiled_kernel_ns = 0;
  for (const TraceEvent& e : profile.events) {
    if (e.kind == EventKind::kRuntime && e.correlation >= 0) launched_compiled[e.correlation] = in_compiled(e.start_ns);
  }
  for (const TraceEvent& e : profile.events) {
    if (e.kind != EventKind::kKernel || !in_steps(steps, e.start_ns)) continue;
    kernel_ns += e.duration_ns();
    const auto it = launched_compiled.find(e.correlation);
    if (it != launched_compiled.end() && it->second) compiled_kernel_ns += e.duration_ns();
  }
  int64_t steps_ns = 0, inside_ns = 0;
  for (const intervals::Interval& st : steps) {
    steps_ns += st.second - st.first;
    inside_ns += intervals::length(intervals::clip(compiled, st.first, st.second));
  }
  if (kernel_ns > 0) {
    s.compiled_share_pct = 100.0 * static_cast<double>(compiled_kernel_ns) / static_cast<double>(kernel_ns);
    s.compiled_share_of = "kernel time";
  } else if (steps_ns > 0) {
    s.compiled_share_pct = 100.0 * static_cast<double>(inside_ns) / static_cast<double>(steps_ns);
    s.compiled_share_of = "the step";
  }
}

}  // namespace

std::string module_of_scope(const std::string& name) {
  static const std::string kPrefix = "nn.Module: ";
  if (name.rfind(kPrefix, 0) != 0) return "";
  std::string module = name.substr(kPrefix.size());
  const size_t underscore = module.rfind('_');
  if (underscore != std::string::npos && underscore + 1 < module.size() &&
      std::all_of(module.begin() + static_cast<std::ptrdiff_t>(underscore) + 1, module.end(),
                  [](unsigned char c) { return std::isdigit(c) != 0; })) {
    module.resize(underscore);
  }
  return module;
}

bool is_host_sync_event(const TraceEvent& e) {
  if (e.kind == EventKind::kSync) return true;
  if (e.kind == EventKind::kRuntime) return is_sync_call(e.name);  // CUDA and HIP
  // On CPU nothing waits for a device, but the same code (.item(), printing a loss) is a sync on GPU.
  return e.kind == EventKind::kCpuOp && (e.name == "aten::item" || e.name == "aten::_local_scalar_dense");
}

void add_in_place(const Profile& profile, const std::vector<intervals::Interval>& steps, int64_t main_track,
                  Summary& s) {
  if (steps.empty()) return;
  const double n_steps = static_cast<double>(steps.size());
  find_loader_and_pinning(profile, s);

  // Host events by thread, each with the spans enclosing it.
  std::map<int64_t, std::vector<const TraceEvent*>> by_track = host_events_by_track(profile);
  InPlaceTally tally = tally_host_threads(by_track, steps, main_track);
  if (tally.compiled_regions > 0 || tally.compiled_functions > 0) {
    const bool regions = tally.compiled_regions > 0;
    s.compiled_regions_per_step =
        static_cast<double>(regions ? tally.compiled_regions : tally.compiled_functions) / n_steps;
    s.compiled_region_name = regions ? "Torch-Compiled Region" : "CompiledFunction";
    fill_compiled_share(profile, steps, std::move(tally.compiled_spans), s);
  }
  if (tally.graph_launches > 0) s.cuda_graph_launches_per_step = static_cast<double>(tally.graph_launches) / n_steps;
  if (tally.launches > 0) {
    s.collective_calls_per_step = static_cast<double>(tally.launches) / n_steps;
    s.comm_in_backward_pct =
        100.0 * static_cast<double>(tally.launches_in_backward) / static_cast<double>(tally.launches);
  }
  for (const auto& [site, count] : tally.model_syncs) {
    s.model_syncs.push_back({site.first, site.second, static_cast<double>(count) / n_steps});
  }
  std::sort(s.model_syncs.begin(), s.model_syncs.end(),
            [](const ModelSync& a, const ModelSync& b) { return a.per_step > b.per_step; });
}

}  // namespace trainlab
