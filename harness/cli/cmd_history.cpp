// `trainlab history`: one line per run folder in the results folder (100 columns at most; every
// field with --format json).
#include <iostream>
#include <memory>

#include "core/errors.h"
#include "core/json_text.h"
#include "harness/cli/commands.h"
#include "harness/cli/next_step.h"
#include "harness/report/history_report.h"
#include "harness/runner/history.h"

namespace trainlab {

Subcommand add_history_command(CLI::App& app) {
  struct Options {
    std::string results_dir = "results", format = "table";
  };
  auto o = std::make_shared<Options>();
  Subcommand history{app.add_subcommand("history", "list the runs in the results folder"), nullptr};
  add_examples(history.app, "docs/compare.md",
               {"trainlab history",
                "trainlab history --format json"});
  history.app->add_option("--results", o->results_dir, "results folder (default ./results)");
  add_format_option(history.app, o->format);
  history.run = [o] {
    const OutputFormat format = parse_output_format(o->format);
    const std::vector<HistoryEntry> entries = read_history(o->results_dir);
    if (format == OutputFormat::kJson) {
      std::cout << json_text(history_json(o->results_dir, entries), 2) << "\n";
    } else if (format == OutputFormat::kMarkdown && !entries.empty()) {
      std::cout << render_table_markdown(history_table(entries, 0));
    } else {
      std::cout << render_history_text(o->results_dir, entries);
    }
    print_next_step(std::cerr, next_after_history(entries));
    return kExitOk;
  };
  return history;
}

}  // namespace trainlab
