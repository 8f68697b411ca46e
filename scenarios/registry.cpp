// Scenario registry: the catalog's lookups and the workload factories that registrars fill in.
#include "scenarios/registry.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

#include "core/errors.h"
#include "scenarios/model_bundle.h"

namespace trainlab {
namespace {

std::map<std::string, WorkloadFactory>& factories() {
  static std::map<std::string, WorkloadFactory> entries;
  return entries;
}

}  // namespace

WorkloadRegistrar::WorkloadRegistrar(const std::string& scenario, WorkloadFactory factory) {
  factories()[scenario] = std::move(factory);
}

std::vector<const ScenarioInfo*> all_scenarios() {
  std::vector<const ScenarioInfo*> infos;
  for (const ScenarioInfo& info : scenario_catalog()) infos.push_back(&info);
  std::sort(infos.begin(), infos.end(), [](const ScenarioInfo* a, const ScenarioInfo* b) { return a->name < b->name; });
  return infos;
}

const ScenarioInfo& find_scenario(const std::string& name) {
  for (const ScenarioInfo& info : scenario_catalog()) {
    if (info.name == name) return info;
  }
  std::string known;
  for (const ScenarioInfo* info : all_scenarios()) known += (known.empty() ? "" : ", ") + info->name;
  throw InputError("unknown scenario '" + name + "' (known: " + known + ")");
}

const WorkloadFactory& find_workload_factory(const std::string& name) {
  find_scenario(name);
  const auto it = factories().find(name);
  if (it == factories().end()) throw InputError("scenario '" + name + "' has no workload linked into this binary");
  return it->second;
}

const ScenarioInfo& scenario_of(const VariantSpec& spec) {
  if (spec.model.empty()) return find_scenario(spec.scenario);
  static std::mutex mutex;
  static std::map<std::string, ScenarioInfo> bundles;  // by bundle folder; nodes never move
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = bundles.find(spec.model);
  if (it == bundles.end()) it = bundles.emplace(spec.model, bundle_scenario_info(load_model_bundle(spec.model))).first;
  return it->second;
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
  auto shown = [&](const std::string& name) {
    const double value = spec.knobs.at(name);
    return name + "=" + (std::floor(value) == value ? std::to_string(static_cast<int64_t>(value)) : std::to_string(value));
  };
  for (const KnobRelation& rule : scenario.relations) {
    const double smaller = spec.knobs.at(rule.smaller);
    const double larger = spec.knobs.at(rule.larger);
    if (rule.kind == KnobRelation::Kind::kAtMost) {
      require(smaller <= larger, scenario.name + ": knob " + shown(rule.smaller) + " must not exceed " + shown(rule.larger));
    } else {
      require(smaller >= 1 && std::fmod(larger, smaller) == 0,
              scenario.name + ": knob " + shown(rule.smaller) + " must divide " + shown(rule.larger));
    }
  }
}

}  // namespace trainlab
