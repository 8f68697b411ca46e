// Locating the profiler's cost: the loop thread's recorded events binned into its phase spans.
#include "diagnostics/profiler_cost.h"

#include <algorithm>
#include <cstdio>

#include "diagnostics/trace_steps.h"

namespace trainlab {

std::vector<StepProfilerCost> locate_profiler_cost(const Profile& profile, double event_cost_ns) {
  std::vector<StepProfilerCost> costs;
  if (!(event_cost_ns > 0)) return costs;
  int64_t main_track = 0;
  const std::vector<TraceStep> steps = profiler_steps(profile, &main_track);
  std::vector<int64_t> op_starts;
  std::vector<const TraceEvent*> phases;
  for (const TraceEvent& e : profile.events) {
    if (e.on_device || e.track != main_track) continue;
    if (e.kind == EventKind::kCpuOp) op_starts.push_back(e.start_ns);
    if (e.kind == EventKind::kPhase) phases.push_back(&e);
  }
  std::sort(op_starts.begin(), op_starts.end());
  const auto count_in = [&](int64_t from, int64_t to) {
    return std::lower_bound(op_starts.begin(), op_starts.end(), to) -
           std::lower_bound(op_starts.begin(), op_starts.end(), from);
  };
  for (const TraceStep& step : steps) {
    StepProfilerCost cost;
    cost.number = step.number;
    cost.events = count_in(step.start_ns, step.end_ns);
    int64_t in_phases = 0;
    for (const TraceEvent* phase : phases) {
      const int64_t from = std::max(phase->start_ns, step.start_ns), to = std::min(phase->end_ns, step.end_ns);
      if (from >= to) continue;
      const int64_t n = count_in(from, to);
      in_phases += n;
      if (n > 0) cost.phase_ns[phase->name] += static_cast<double>(n) * event_cost_ns;
    }
    if (cost.events > in_phases) cost.phase_ns["other"] += static_cast<double>(cost.events - in_phases) * event_cost_ns;
    cost.total_ns = static_cast<double>(cost.events) * event_cost_ns;
    costs.push_back(std::move(cost));
  }
  return costs;
}

std::string profiler_cost_note(const std::vector<StepProfilerCost>& costs, double event_cost_ns) {
  if (costs.empty()) return "";
  double events = 0, total_ns = 0;
  for (const StepProfilerCost& c : costs) {
    events += static_cast<double>(c.events);
    total_ns += c.total_ns;
  }
  const double n = static_cast<double>(costs.size());
  char line[320];
  std::snprintf(line, sizeof line,
                "profiled window: the profiler's own measured cost (%.0f events per step on the loop's thread x "
                "%.0f ns = %.2f ms per step) is taken out of steps %lld..%lld before the shares",
                events / n, event_cost_ns, total_ns / n / 1e6, static_cast<long long>(costs.front().number),
                static_cast<long long>(costs.back().number));
  return line;
}

}  // namespace trainlab
