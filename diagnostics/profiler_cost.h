// The profiler's own cost inside a captured window, located step by step and phase by phase: the
// ops a trainlab window recorded on the loop's thread inside each of the loop's phase spans, times
// the measured cost of one recorded event (run.json's profile.event_cost_ns, or the trace's
// trainlab.profiler_event_cost_ns). What the shares of a profiled window are discounted by, so
// that the diagnosis describes the loop, not the loop plus its profiler. Events on other threads
// (loader workers) are not counted: their cost reaches the loop only through waits it cannot
// locate. No LibTorch.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/profile.h"

namespace trainlab {

struct StepProfilerCost {
  int64_t number = 0;                      // the step's ProfilerStep#N
  std::map<std::string, double> phase_ns;  // phase span name ("forward", ...; "other": in no phase) -> ns
  double total_ns = 0;
  int64_t events = 0;                      // events on the loop's thread in the step
};

// One entry per ProfilerStep# span of the loop's thread (none when the trace has none or the cost
// is not positive).
std::vector<StepProfilerCost> locate_profiler_cost(const Profile& profile, double event_cost_ns);

// One line for a Summary's notes: what was taken out and where.
std::string profiler_cost_note(const std::vector<StepProfilerCost>& costs, double event_cost_ns);

}  // namespace trainlab
