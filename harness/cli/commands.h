// trainlab's subcommands, one file each (cmd_<name>.cpp). add_<name>_command adds the subcommand and
// its options to the app and returns what runs it once parsed; its options live in that closure.
// Torch-free: the training itself runs in trainlab-train, started by the runner.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "core/output_format.h"

namespace trainlab {

struct Subcommand {
  CLI::App* app = nullptr;
  std::function<int()> run;  // the command's exit status; InputError for bad input
};

// --format table|json|markdown into `format` (parse_output_format checks it when the command runs,
// before anything else).
inline CLI::Option* add_format_option(CLI::App* cmd, std::string& format) {
  return cmd->add_option("--format", format, kFormatHelp);
}

// The example lines that end a subcommand's --help (CLI11's footer), under the docs page that shows
// the same lines; tests/docs_commands_test.cpp checks that each parses and is on that page.
inline void add_examples(CLI::App* cmd, const std::string& docs_page, const std::vector<std::string>& examples) {
  std::string text = "\nExamples (" + docs_page + "):\n";
  for (const std::string& example : examples) text += "  " + example + "\n";
  cmd->footer(text);
}

Subcommand add_list_command(CLI::App& app);
Subcommand add_run_command(CLI::App& app);
Subcommand add_profile_command(CLI::App& app);
Subcommand add_baseline_command(CLI::App& app);
Subcommand add_sweep_command(CLI::App& app);
Subcommand add_diagnose_command(CLI::App& app);
Subcommand add_compare_command(CLI::App& app);
Subcommand add_history_command(CLI::App& app);
Subcommand add_validate_command(CLI::App& app);
Subcommand add_doctor_command(CLI::App& app);
Subcommand add_model_command(CLI::App& app);

}  // namespace trainlab
