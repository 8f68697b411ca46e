// Reductions to a Summary: from a trainlab variant record (its measured steps, census, sampler and
// data-parallel figures; plus its profile when one was captured) and from a Profile imported from a
// PyTorch profiler trace (steps from ProfilerStep#N, phases inferred from ops, kernels, DataLoader
// and collective spans). No LibTorch.
#pragma once

#include <nlohmann/json.hpp>

#include "diagnostics/summary.h"
#include "core/run_record.h"
#include "profiler/profile.h"

namespace trainlab {

// `profile`: the variant's captured window (may be null): adds op/kernel counts, top ops, syncs, shapes.
Summary summarise_variant(const VariantRecord& record, const std::string& scenario, const Profile* profile);

// `metadata`: the trace's top-level keys other than traceEvents (distributedInfo, deviceProperties).
Summary summarise_trace(const Profile& profile, const nlohmann::json& metadata, const std::string& label);

nlohmann::json to_json(const Summary& summary);
nlohmann::json to_json(const Distribution& distribution);

// Distribution of a series (empty series: count 0, all zero).
Distribution distribution_of(std::vector<double> values);

}  // namespace trainlab
