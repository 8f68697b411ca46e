// Scenario registry storage; filled by static registrars in each scenario's translation unit.
#include "scenarios/registry.h"

#include <cmath>
#include <map>

#include "core/errors.h"

namespace trainlab {
namespace {

struct Entry {
  ScenarioInfo info;
  WorkloadFactory factory;
};

std::map<std::string, Entry>& registry() {
  static std::map<std::string, Entry> entries;
  return entries;
}

}  // namespace

ScenarioRegistrar::ScenarioRegistrar(ScenarioInfo info, WorkloadFactory factory) {
  std::string name = info.name;
  registry()[name] = Entry{std::move(info), std::move(factory)};
}

std::vector<const ScenarioInfo*> all_scenarios() {
  std::vector<const ScenarioInfo*> infos;
  for (const auto& [name, entry] : registry()) infos.push_back(&entry.info);
  return infos;
}

const ScenarioInfo& find_scenario(const std::string& name) {
  auto it = registry().find(name);
  if (it == registry().end()) {
    std::string known;
    for (const auto& [n, entry] : registry()) known += (known.empty() ? "" : ", ") + n;
    throw InputError("unknown scenario '" + name + "' (known: " + known + ")");
  }
  return it->second.info;
}

const WorkloadFactory& find_workload_factory(const std::string& name) {
  find_scenario(name);
  return registry().at(name).factory;
}

void resolve(VariantSpec& spec, const ScenarioInfo& scenario) {
  spec.scenario = scenario.name;
  if (spec.batch_size == 0) spec.batch_size = scenario.default_batch_size;
  check_spec(spec);
  auto require = [](bool ok, const std::string& message) {
    if (!ok) throw InputError(message);
  };
  for (const auto& [name, value] : spec.knobs) {
    const KnobInfo* knob = scenario.find_knob(name);
    require(knob != nullptr, "unknown knob '" + name + "' for scenario " + scenario.name +
                                 " (known: " + scenario.knob_names() + ")");
    require(value >= knob->min_value && value <= knob->max_value,
            "knob " + name + "=" + std::to_string(value) + " out of range [" +
                std::to_string(knob->min_value) + ", " + std::to_string(knob->max_value) + "]");
    require(!knob->integer || std::floor(value) == value,
            "knob " + name + " takes a whole number");
  }
  for (const KnobInfo& knob : scenario.knobs) spec.knobs.emplace(knob.name, knob.default_value);
}

}  // namespace trainlab
