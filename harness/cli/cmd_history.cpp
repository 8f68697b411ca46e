// `trainlab history`: one line per run folder in the results folder.
#include <iostream>
#include <memory>

#include "core/errors.h"
#include "harness/cli/commands.h"
#include "harness/runner/history.h"

namespace trainlab {

Subcommand add_history_command(CLI::App& app) {
  auto results_dir = std::make_shared<std::string>("results");
  Subcommand history{app.add_subcommand("history", "list the runs in the results folder"), nullptr};
  history.app->add_option("--results", *results_dir, "results folder (default ./results)");
  history.run = [results_dir] {
    std::cout << render_history(*results_dir);
    return kExitOk;
  };
  return history;
}

}  // namespace trainlab
