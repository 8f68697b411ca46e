// The scenario registry: the catalog of ScenarioInfo (scenarios/catalog.cpp, torch-free, so
// `trainlab list` and option validation need no LibTorch) and the workload factories, which each
// workload's translation unit registers under its scenario's name with a static WorkloadRegistrar.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/variant.h"
#include "scenarios/scenario_info.h"
#include "scenarios/workload_config.h"

namespace trainlab {

class Workload;
using WorkloadFactory = std::function<std::unique_ptr<Workload>(const WorkloadConfig&)>;

inline constexpr const char* kDefaultScenario = "recsys";

struct WorkloadRegistrar {
  WorkloadRegistrar(const std::string& scenario, WorkloadFactory factory);
};

// Every built-in scenario's description (scenarios/catalog.cpp), in catalog order.
const std::vector<ScenarioInfo>& scenario_catalog();

// Sorted by name.
std::vector<const ScenarioInfo*> all_scenarios();
// Throws InputError listing the known names when there is no such scenario.
const ScenarioInfo& find_scenario(const std::string& name);
// The factory of a scenario (throws InputError like find_scenario, or when this binary links no
// workloads for it). make_workload() in workload.h calls it.
const WorkloadFactory& find_workload_factory(const std::string& name);

// The scenario a spec runs: with spec.model the model bundle's (its manifest read once per
// process), else the built-in one spec.scenario names. Throws InputError like find_scenario or
// load_model_bundle (scenarios/model_bundle.h).
const ScenarioInfo& scenario_of(const VariantSpec& spec);

// Fills the scenario's defaults into a spec (batch size, knobs) and checks every value
// (core's check_spec, then the knobs against the scenario's table). Throws InputError naming the
// offending option on unknown knobs, out-of-range or impossible values.
void resolve(VariantSpec& spec, const ScenarioInfo& scenario);

}  // namespace trainlab
