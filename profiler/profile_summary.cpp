// Grouping spans by name (same-name nesting on a track counted once); counter percentiles.
#include "profiler/profile_summary.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "core/statistics.h"

namespace trainlab {

std::vector<SpanSummary> summarise_spans(const Profile& profile, EventKind kind) {
  int64_t steps = 0, step_total_ns = 0;
  std::vector<const TraceEvent*> spans;
  for (const TraceEvent& e : profile.events) {
    if (e.kind == EventKind::kStep) {
      ++steps;
      step_total_ns += e.duration_ns();
    }
    if (e.kind == kind) spans.push_back(&e);
  }
  // Per (name, track), in start order (longer first on ties): a span that ends before the
  // enclosing same-name span does is inside it and adds nothing.
  std::sort(spans.begin(), spans.end(), [](const TraceEvent* a, const TraceEvent* b) {
    return std::tie(a->name, a->on_device, a->device, a->track, a->start_ns, b->end_ns) <
           std::tie(b->name, b->on_device, b->device, b->track, b->start_ns, a->end_ns);
  });
  std::map<std::string, SpanSummary> by_name;
  const TraceEvent* outer = nullptr;
  for (const TraceEvent* e : spans) {
    const bool same_track = outer != nullptr && outer->name == e->name && outer->on_device == e->on_device &&
                            outer->device == e->device && outer->track == e->track;
    if (same_track && e->end_ns <= outer->end_ns) continue;  // nested in a span of its own name
    outer = e;
    SpanSummary& s = by_name[e->name];
    s.name = e->name;
    ++s.count;
    s.total_ns += e->duration_ns();
    s.max_ns = std::max(s.max_ns, e->duration_ns());
  }
  std::vector<SpanSummary> out;
  for (auto& [name, s] : by_name) {
    s.mean_ns = static_cast<double>(s.total_ns) / static_cast<double>(s.count);
    if (steps > 0) s.per_step_ns = static_cast<double>(s.total_ns) / static_cast<double>(steps);
    if (step_total_ns > 0) s.step_share_pct = 100.0 * static_cast<double>(s.total_ns) / static_cast<double>(step_total_ns);
    out.push_back(s);
  }
  std::stable_sort(out.begin(), out.end(), [](const SpanSummary& a, const SpanSummary& b) { return a.total_ns > b.total_ns; });
  return out;
}

std::map<std::string, CounterSummary> summarise_counters(const Profile& profile) {
  std::map<std::string, CounterSummary> out;
  for (const CounterTrack& track : profile.counters) {
    if (track.samples.empty()) continue;
    std::vector<double> values;
    values.reserve(track.samples.size());
    for (const CounterSample& s : track.samples) values.push_back(s.value);
    out[track.name] = CounterSummary{track.unit,
                                     static_cast<int64_t>(values.size()),
                                     stats::min(values),
                                     stats::percentile(values, 50),
                                     stats::percentile(values, 95),
                                     stats::percentile(values, 99),
                                     stats::max(values),
                                     stats::mean(values)};
  }
  return out;
}

}  // namespace trainlab
