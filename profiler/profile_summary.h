// Summaries of a Profile: its spans by name (how often a user annotation, phase or op ran, how long
// it took in total and per captured step, its share of the step time, the way the harness reports
// its own phases) and its counter tracks as percentiles. No LibTorch.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/profile.h"

namespace trainlab {

struct SpanSummary {
  std::string name;
  int64_t count = 0;
  int64_t total_ns = 0;
  int64_t max_ns = 0;
  double mean_ns = 0;
  double per_step_ns = 0;     // total over the number of ProfilerStep spans (0 when there are none)
  double step_share_pct = 0;  // total over the summed ProfilerStep durations (0 when there are none)
};

// Spans of `kind`, grouped by name, largest total first. A span nested in another of the same
// name on the same track (recursion) is not counted twice.
std::vector<SpanSummary> summarise_spans(const Profile& profile, EventKind kind);

// One counter track's samples as a distribution (percentiles by linear interpolation).
struct CounterSummary {
  std::string unit;
  int64_t samples = 0;
  double min = 0, p50 = 0, p95 = 0, p99 = 0, max = 0, mean = 0;
};

// Each counter track with samples, keyed by track name; tracks without samples are left out.
std::map<std::string, CounterSummary> summarise_counters(const Profile& profile);

}  // namespace trainlab
