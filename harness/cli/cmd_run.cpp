// `trainlab run`: one variant of a scenario, or with --ab the variant and a changed copy of it run
// alternately and compared.
#include <iostream>
#include <memory>
#include <sstream>

#include "core/errors.h"
#include "harness/cli/commands.h"
#include "harness/cli/next_step.h"
#include "harness/cli/option_bounds.h"
#include "harness/cli/run_report.h"
#include "harness/cli/variant_options.h"
#include "harness/report/compare_report.h"
#include "harness/runner/compare.h"

namespace trainlab {

Subcommand add_run_command(CLI::App& app) {
  struct Options {
    VariantOptions variant;
    std::string ab_changes, format = "table";
    int max_rounds = kDefaultMaxRounds;
    Thresholds thresholds;
  };
  auto o = std::make_shared<Options>();
  Subcommand run{app.add_subcommand("run", "run one variant of a scenario"), nullptr};
  add_examples(run.app, "docs/lab.md",
               {"trainlab run --scenario mlp --precision bf16",
                "trainlab run --scenario recsys -k cache=1",
                "trainlab run --scenario mlp --repeat 3"});
  add_variant_options(run.app, o->variant, CommandKind::kRun);
  run.app->add_option("--ab", o->ab_changes,
                      "A/B: also run the variant with these changes (NAME=VALUE,...; e.g. workers=2), "
                      "alternately A B A B --repeat times (default 3), then compare them");
  whole_number_in(run.app->add_option("--max-rounds", o->max_rounds,
                                      "--ab: rounds in all while the samples/s change's interval is wider than 30 "
                                      "points or holds the +-5 % line after --repeat (default 20, within 120 s of "
                                      "measured steps; equal to --repeat: exactly --repeat)"),
                  1, kMaxRepeat);
  add_format_option(run.app, o->format);
  CLI::App* cmd = run.app;
  run.run = [o, cmd] {
    const OutputFormat format = parse_output_format(o->format);
    if (cmd->count("--ab") > 0 && o->ab_changes.find_first_not_of(" ,") == std::string::npos) {
      throw InputError("--ab needs at least one change (NAME=VALUE,...; e.g. workers=2)");
    }
    LabOptions lab = build_lab_options(o->variant, &o->thresholds);
    // Repetitions compared with each other measure for lab.min_measured_s at least, unless the
    // steps were chosen: fast steps run past the default 50.
    const bool repeated = cmd->count("--ab") > 0 || lab.repeat > 1;
    if (repeated && !o->variant.was_given("steps") && !o->variant.was_given("min-loop-s"))
      lab.base.min_loop_s = lab.thresholds->value(threshold::lab::min_measured_s);
    if (o->ab_changes.empty()) {
      if (cmd->count("--max-rounds") > 0) throw InputError("--max-rounds applies to --ab only");
      const LabOutcome outcome = run_single_variant(lab, std::cerr);
      if (outcome.quiet) return run_status(outcome);  // a launch's peer rank: rank 0 reports
      const int status = report_run(outcome, format);
      if (status != kExitBadInput) print_next_step(std::cerr, next_after_run(outcome.run_dir));
      return status;
    }
    if (cmd->count("--repeat") == 0) lab.repeat = 3;  // the fewest repetitions a side that compare gates on
    // With 3 pairs a side the paired interval's t(2) = 4.3 keeps it wide unless the pairs agree to a
    // point or two, which a shared machine rarely gives: more rounds while it is wide or holds the
    // verdict's line (ab_undecided), as the baseline lab does.
    if (o->max_rounds < lab.repeat) {
      throw InputError("invalid --max-rounds " + std::to_string(o->max_rounds) + " (must be at least --repeat " +
                       std::to_string(lab.repeat) + ")");
    }
    lab.extra_rounds = o->max_rounds - lab.repeat;
    lab.rounds_budget_s = kExtraRoundsBudgetS;
    std::vector<std::pair<std::string, std::string>> changes;
    std::stringstream items(o->ab_changes);
    for (std::string item; std::getline(items, item, ',');) changes.push_back(split_setting(item, "--ab"));
    VariantSpec b = lab.base;  // B's device asked up front, like A's (run_ab checks the rest of B)
    for (const auto& [key, value] : changes) apply_setting(b, key, value);
    check_device_usable(b);
    const LabOutcome outcome = run_ab(lab, changes, std::cerr);
    if (outcome.quiet) return run_status(outcome);  // a launch's peer rank: rank 0 reports
    const CompareOptions options;
    int status = kExitOk;
    if (format == OutputFormat::kJson) {  // one document: the run and its comparison
      if (run_status(outcome) == kExitBadInput) return report_run(outcome, format);
      status = report_run(outcome, format, {{"compare", compare_json(compare_ab(outcome.record, options), options)}});
    } else {
      status = report_run(outcome, format);
      if (status == kExitBadInput) return status;
      const CompareOutcome compared = compare_ab(outcome.record, options);
      std::cout << "\n"
                << (format == OutputFormat::kMarkdown ? render_compare_markdown(compared, options)
                                                      : render_compare_table(compared, options));
    }
    print_next_step(std::cerr, next_after_run(outcome.run_dir));
    return status;
  };
  return run;
}

}  // namespace trainlab
