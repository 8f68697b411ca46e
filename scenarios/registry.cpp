// Scenario registry storage; filled by static registrars in each scenario's translation unit.
#include "scenarios/registry.h"

#include <map>

#include "harness/core/errors.h"

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

}  // namespace trainlab
