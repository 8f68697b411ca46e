// trainlab's own block in the Chrome traces it writes ("trainlab": {...}): one struct for the three
// places that handle it. The training child fills it (harness/train), the profiler's trace writer
// puts it under "trainlab" and reads the loader's worker count from it (profiler/chrome_trace), and
// the diagnosis reads it back typed (diagnostics/summarise: the profiler's own cost per event, the
// share of ops sampled, the host). On reading every field may be absent (others' traces have no
// block; earlier trainlab traces lack later fields); one of the wrong type is bad input naming it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/json_fields.h"

namespace trainlab {

struct TraceMetadata {
  std::string scenario;
  std::string variant;                             // e.g. "bf16+compiled"
  int64_t window_start = -1, window_steps = -1;    // the captured window, in measured steps
  std::optional<double> op_sample;                 // share of ops the window recorded (1: every op)
  std::optional<double> profiler_event_cost_ns;    // the profiler's measured cost of one event
  std::optional<int64_t> loader_workers;
  std::string host;                                // data parallel: the machine the rank ran on
};

// The block as written: every field the writer knows (host only where set).
inline nlohmann::json to_json(const TraceMetadata& m) {
  nlohmann::json j = {{"scenario", m.scenario}, {"variant", m.variant}, {"window_start", m.window_start},
                      {"window_steps", m.window_steps}};
  if (m.op_sample) j["op_sample"] = *m.op_sample;
  if (m.profiler_event_cost_ns) j["profiler_event_cost_ns"] = *m.profiler_event_cost_ns;
  if (m.loader_workers) j["loader_workers"] = *m.loader_workers;
  if (!m.host.empty()) j["host"] = m.host;
  return j;
}

// `block` (the "trainlab" object) read typed; an empty TraceMetadata where it is not an object.
inline TraceMetadata trace_metadata_of(const nlohmann::json& block) {
  TraceMetadata m;
  if (!block.is_object()) return m;
  m.scenario = optional_field<std::string>(block, "scenario", "");
  m.variant = optional_field<std::string>(block, "variant", "");
  m.window_start = optional_field<int64_t>(block, "window_start", -1);
  m.window_steps = optional_field<int64_t>(block, "window_steps", -1);
  m.op_sample = present_field<double>(block, "op_sample");
  m.profiler_event_cost_ns = present_field<double>(block, "profiler_event_cost_ns");
  m.loader_workers = present_field<int64_t>(block, "loader_workers");
  m.host = optional_field<std::string>(block, "host", "");
  return m;
}

}  // namespace trainlab
