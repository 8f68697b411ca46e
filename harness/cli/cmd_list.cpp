// `trainlab list`: the built-in scenarios, their default batch size, knobs and presets, and how to
// bring your own model instead.
#include <iostream>

#include "core/errors.h"
#include "harness/cli/commands.h"
#include "scenarios/registry.h"

namespace trainlab {

Subcommand add_list_command(CLI::App& app) {
  Subcommand list{app.add_subcommand("list", "list the built-in scenarios and their knobs"), nullptr};
  list.run = [] {
    for (const ScenarioInfo* info : all_scenarios()) {
      std::cout << info->name << (info->name == kDefaultScenario ? " (default)" : "") << "  " << info->description
                << "\n";
      std::cout << "    batch " << info->default_batch_size;
      for (const KnobInfo& knob : info->knobs) std::cout << ", " << knob.name << " " << knob.default_value;
      std::cout << "\n";
      for (const ScenarioPreset& preset : info->presets) {
        std::cout << "    preset " << preset.name << ":";
        for (const auto& [name, value] : preset.knobs) std::cout << " " << name << "=" << value;
        std::cout << "  " << preset.description << "\n";
      }
    }
    std::cout << "your own model: trainlab model add FILE.py:FACTORY --input ... --target ..., then --model BUNDLE "
                 "instead of --scenario (README: Your own model)\n";
    return kExitOk;
  };
  return list;
}

}  // namespace trainlab
