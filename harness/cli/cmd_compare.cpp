// `trainlab compare`: before/after (or an A/B run's A with its B), changes with confidence intervals;
// exit status 1 on a regression over --max-regression.
#include <iostream>
#include <memory>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/json_text.h"
#include "harness/cli/commands.h"
#include "harness/cli/next_step.h"
#include "harness/cli/option_bounds.h"
#include "harness/report/compare_report.h"
#include "harness/runner/compare.h"
#include "harness/runner/run_liveness.h"

namespace trainlab {
namespace {
constexpr double kMaxComparePct = 1000;  // --threshold, --max-regression: a change of 10x
}  // namespace

Subcommand add_compare_command(CLI::App& app) {
  struct Options {
    CompareOptions compare;
    std::string before, after, format = "table", out;
  };
  auto o = std::make_shared<Options>();
  Subcommand compare{
      app.add_subcommand("compare", "before/after: changes with confidence intervals; exit 1 on a regression"), nullptr};
  CLI::App* cmd = compare.app;
  add_examples(cmd, "docs/compare.md",
               {"trainlab compare results/BEFORE results/AFTER",
                "trainlab compare results/BEFORE results/AFTER --format markdown",
                "trainlab run --scenario recsys --ab cache=1"});
  cmd->add_option("before", o->before, "run folder or run.json")->required();
  cmd->add_option("after", o->after, "run folder or run.json (leave out to compare an A/B run's A with its B)");
  real_number_in(cmd->add_option("--threshold", o->compare.threshold_pct, "changes under this % are unchanged (default 5)"),
                 0, kMaxComparePct);
  real_number_in(cmd->add_option("--max-regression", o->compare.max_regression_pct,
                                 "exit 1 when something regressed by more than this % (default 10)"),
                 0, kMaxComparePct);
  add_format_option(cmd, o->format);
  cmd->add_option("--out", o->out, "also write the JSON result to this file");
  compare.run = [o] {
    const CompareOptions& options = o->compare;
    const OutputFormat format = parse_output_format(o->format);
    if (!(options.threshold_pct >= 0) || !(options.max_regression_pct >= 0)) {
      throw InputError("--threshold and --max-regression must be 0 or more");
    }
    // A run still going (or killed) before any variant finished has nothing to compare yet.
    const auto read_record = [](const std::string& path) {
      RunRecord record = read_run_record(path);
      const std::string unfinished = unfinished_run_problem(record, path);
      if (!unfinished.empty()) throw InputError(unfinished);
      return record;
    };
    const CompareOutcome outcome =
        o->after.empty() ? compare_ab(read_record(o->before), options)
                         : compare_runs(read_record(o->before), read_record(o->after), options);
    const nlohmann::json result = compare_json(outcome, options);
    if (!o->out.empty()) write_file_atomically(o->out, json_text(result, 2) + "\n");
    if (format == OutputFormat::kJson) {
      std::cout << json_text(result, 2) << "\n";
    } else if (format == OutputFormat::kMarkdown) {
      std::cout << render_compare_markdown(outcome, options);
    } else {
      std::cout << render_compare_table(outcome, options);
    }
    print_next_step(std::cerr, next_after_compare(o->before, o->after, outcome.gate_failed,
                                                  !outcome.ungated_regressions.empty()));
    return outcome.gate_failed ? kExitGateFailed : kExitOk;
  };
  return compare;
}

}  // namespace trainlab
