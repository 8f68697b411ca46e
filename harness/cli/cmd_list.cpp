// `trainlab list`: the built-in scenarios, their default batch size, knobs and presets, and how to
// bring your own model instead; as text (default), markdown tables or one JSON document.
#include <iostream>
#include <memory>
#include <sstream>

#include "core/errors.h"
#include "core/json_text.h"
#include "harness/cli/commands.h"
#include "harness/cli/next_step.h"
#include "scenarios/registry.h"

namespace trainlab {

namespace {

const char* const kOwnModel = "your own model: trainlab model add FILE.py:FACTORY --input ... --target ..., then "
                              "--model BUNDLE instead of --scenario (README: Your own model)";

std::string number_text(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

std::string preset_text(const ScenarioPreset& preset) {
  std::string text;
  for (const auto& [name, value] : preset.knobs) text += " " + name + "=" + number_text(value);
  return text;
}

Table scenarios_table() {
  Table table;
  table.left_align_last = true;
  table.columns = {{"scenario", "scenario"}, {"batch", "default_batch_size"}, {"presets", "presets", /*left=*/true},
                   {"description", "description"}};
  for (const ScenarioInfo* info : all_scenarios()) {
    std::string presets;
    for (const ScenarioPreset& p : info->presets) presets += (presets.empty() ? "" : ", ") + p.name;
    table.rows.push_back({text_cell(info->name + (info->name == kDefaultScenario ? " (default)" : "")),
                          number_cell(static_cast<double>(info->default_batch_size), "%.0f"), text_cell(presets),
                          text_cell(info->description)});
  }
  return table;
}

Table knobs_table() {
  Table table;
  table.left_align_last = true;
  table.columns = {{"scenario", "scenario"}, {"knob", "knob", /*left=*/true}, {"default", "default"}, {"min", "min"},
                   {"max", "max"},           {"description", "description"}};
  for (const ScenarioInfo* info : all_scenarios()) {
    for (const KnobInfo& k : info->knobs) {
      table.rows.push_back({text_cell(info->name), text_cell(k.name), number_cell(k.default_value, "%.15g"),
                            number_cell(k.min_value, "%.15g"), number_cell(k.max_value, "%.15g"),
                            text_cell(k.description)});
    }
  }
  return table;
}

nlohmann::json list_json() {
  nlohmann::json scenarios = nlohmann::json::array();
  for (const ScenarioInfo* info : all_scenarios()) {
    nlohmann::json knobs = nlohmann::json::array(), presets = nlohmann::json::array();
    for (const KnobInfo& k : info->knobs) {
      knobs.push_back({{"name", k.name}, {"default", k.default_value}, {"min", k.min_value}, {"max", k.max_value},
                       {"integer", k.integer}, {"description", k.description}});
    }
    for (const ScenarioPreset& p : info->presets) {
      nlohmann::json set = nlohmann::json::object();
      for (const auto& [name, value] : p.knobs) set[name] = value;
      presets.push_back({{"name", p.name}, {"description", p.description}, {"knobs", set}});
    }
    scenarios.push_back({{"scenario", info->name},
                         {"default", info->name == kDefaultScenario},
                         {"description", info->description},
                         {"default_batch_size", info->default_batch_size},
                         {"knobs", knobs},
                         {"presets", presets}});
  }
  return output_document("list", {{"scenarios", scenarios}, {"own_model", kOwnModel}});
}

}  // namespace

Subcommand add_list_command(CLI::App& app) {
  auto format_text = std::make_shared<std::string>("table");
  Subcommand list{app.add_subcommand("list", "list the built-in scenarios and their knobs"), nullptr};
  add_examples(list.app, "docs/lab.md",
               {"trainlab list",
                "trainlab list --format json"});
  add_format_option(list.app, *format_text);
  list.run = [format_text] {
    const OutputFormat format = parse_output_format(*format_text);
    if (format == OutputFormat::kJson) {
      std::cout << json_text(list_json(), 2) << "\n";
    } else if (format == OutputFormat::kMarkdown) {
      std::cout << render_table_markdown(scenarios_table()) << "\n" << render_table_markdown(knobs_table()) << "\n"
                << kOwnModel << "\n";
    } else {
      for (const ScenarioInfo* info : all_scenarios()) {
        std::cout << info->name << (info->name == kDefaultScenario ? " (default)" : "") << "  " << info->description
                  << "\n";
        std::cout << "    batch " << info->default_batch_size;
        for (const KnobInfo& knob : info->knobs) std::cout << ", " << knob.name << " " << knob.default_value;
        std::cout << "\n";
        for (const ScenarioPreset& preset : info->presets) {
          std::cout << "    preset " << preset.name << ":" << preset_text(preset) << "  " << preset.description << "\n";
        }
      }
      std::cout << kOwnModel << "\n";
    }
    const std::vector<const ScenarioInfo*> scenarios = all_scenarios();
    if (!scenarios.empty()) print_next_step(std::cerr, next_after_list(scenarios.front()->name));
    return kExitOk;
  };
  return list;
}

}  // namespace trainlab
