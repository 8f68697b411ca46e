// `trainlab validate`: the seeded bottleneck cases and the confusion matrix of expected against
// named suspect; exit status 1 unless every case is named correctly.
#include <unistd.h>

#include <iostream>
#include <memory>
#include <sstream>

#include "core/errors.h"
#include "harness/cli/commands.h"
#include "harness/cli/variant_options.h"
#include "harness/cli/next_step.h"
#include "harness/report/validate_report.h"
#include "harness/runner/validate.h"

namespace trainlab {

Subcommand add_validate_command(CLI::App& app) {
  struct Options {
    ValidateOptions validate;
    std::string only, format = "table";
  };
  auto o = std::make_shared<Options>();
  Subcommand validate{
      app.add_subcommand("validate",
                         "run the seeded bottleneck cases and print the confusion matrix (expected vs named suspect)"),
      nullptr};
  CLI::App* cmd = validate.app;
  add_examples(cmd, "docs/diagnosis.md",
               {"trainlab validate --ci",
                "trainlab validate --cases configs/seeded_cases_cuda.json"});
  cmd->add_option("--cases", o->validate.cases_path, "seeded cases file replacing configs/seeded_cases.json");
  cmd->add_option("--only", o->only, "comma-separated case names to run");
  cmd->add_flag("--ci", o->validate.ci_subset, "only the fast subset marked ci");
  cmd->add_option("--results", o->validate.results_dir, "results folder (default ./results)");
  add_format_option(cmd, o->format);
  validate.run = [o] {
    refuse_under_launcher("validate");
    const OutputFormat format = parse_output_format(o->format);
    std::stringstream names(o->only);
    for (std::string name; std::getline(names, name, ',');) {
      if (!name.empty()) o->validate.only.push_back(name);
    }
    o->validate.live_progress = ::isatty(STDERR_FILENO) == 1;
    const ValidateOutcome outcome = run_validation(o->validate, std::cerr);
    std::cout << (format == OutputFormat::kJson ? "" : "\n") << render_validation(outcome, format);
    print_next_step(std::cerr, next_after_validate(outcome, o->validate.results_dir));
    return outcome.all_correct ? kExitOk : kExitGateFailed;
  };
  return validate;
}

}  // namespace trainlab
