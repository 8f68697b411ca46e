// Reductions to a Summary from a Profile: a PyTorch profiler trace imported whole (steps from
// ProfilerStep#N, phases inferred from ops, kernels, DataLoader and collective spans), or the
// captured window of a trainlab run added to the Summary its record gave
// (harness/runner/record_summary.h). Sees only Summary and Profile. No LibTorch.
#pragma once

#include <nlohmann/json.hpp>

#include "diagnostics/summary.h"
#include "core/profile.h"

namespace trainlab {

// A trainlab run's captured window over the Summary of its whole record: op/kernel counts, top
// ops, syncs, shapes, dropped events; on a GPU the device's busy time, which moves the compute
// phases' idle part to framework overhead. Returns whether that device busy time was known.
// op_sample: the share of ops the window recorded (op counts and times are scaled by its inverse).
bool add_captured_window(const Profile& profile, Summary& s, double op_sample = 1.0);

// `metadata`: the trace's top-level keys other than traceEvents (distributedInfo, deviceProperties).
Summary summarise_trace(const Profile& profile, const nlohmann::json& metadata, const std::string& label);

nlohmann::json to_json(const Summary& summary);
nlohmann::json to_json(const LoaderStages& stages);
nlohmann::json to_json(const Distribution& distribution);

// Distribution of a series (empty series: count 0, all zero).
Distribution distribution_of(std::vector<double> values);

}  // namespace trainlab
