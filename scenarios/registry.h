// The scenario registry. Each scenario file registers itself with a static ScenarioRegistrar;
// `trainlab list` and option validation read ScenarioInfo without building any model.
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

struct ScenarioRegistrar {
  ScenarioRegistrar(ScenarioInfo info, WorkloadFactory factory);
};

// Sorted by name.
std::vector<const ScenarioInfo*> all_scenarios();
// Throws InputError listing the known names when there is no such scenario.
const ScenarioInfo& find_scenario(const std::string& name);
// The factory of a registered scenario (throws InputError like find_scenario). make_workload()
// in workload.h calls it.
const WorkloadFactory& find_workload_factory(const std::string& name);

// Fills the scenario's defaults into a spec (batch size, knobs) and checks every value
// (core's check_spec, then the knobs against the scenario's table). Throws InputError naming the
// offending option on unknown knobs, out-of-range or impossible values.
void resolve(VariantSpec& spec, const ScenarioInfo& scenario);

}  // namespace trainlab
