// `trainlab run`: one variant of a scenario, or with --ab the variant and a changed copy of it run
// alternately and compared.
#include <iostream>
#include <memory>
#include <sstream>

#include "core/errors.h"
#include "harness/cli/commands.h"
#include "harness/cli/run_report.h"
#include "harness/cli/variant_options.h"
#include "harness/runner/compare.h"

namespace trainlab {

Subcommand add_run_command(CLI::App& app) {
  struct Options {
    VariantOptions variant;
    std::string ab_changes;
    Thresholds thresholds;
  };
  auto o = std::make_shared<Options>();
  Subcommand run{app.add_subcommand("run", "run one variant of a scenario"), nullptr};
  add_variant_options(run.app, o->variant, CommandKind::kRun);
  run.app->add_option("--ab", o->ab_changes,
                      "A/B: also run the variant with these changes (NAME=VALUE,...; e.g. workers=2), "
                      "alternately A B A B --repeat times (default 3), then compare them");
  CLI::App* cmd = run.app;
  run.run = [o, cmd] {
    if (cmd->count("--ab") > 0 && o->ab_changes.find_first_not_of(" ,") == std::string::npos) {
      throw InputError("--ab needs at least one change (NAME=VALUE,...; e.g. workers=2)");
    }
    LabOptions lab = build_lab_options(o->variant, &o->thresholds);
    if (o->ab_changes.empty()) return report_run(run_single_variant(lab, std::cerr));
    if (cmd->count("--repeat") == 0) lab.repeat = 3;  // the fewest repetitions a side that compare gates on
    std::vector<std::pair<std::string, std::string>> changes;
    std::stringstream items(o->ab_changes);
    for (std::string item; std::getline(items, item, ',');) changes.push_back(split_setting(item, "--ab"));
    VariantSpec b = lab.base;  // B's device asked up front, like A's (run_ab checks the rest of B)
    for (const auto& [key, value] : changes) apply_setting(b, key, value);
    check_device_usable(b);
    const LabOutcome outcome = run_ab(lab, changes, std::cerr);
    const int status = report_run(outcome);
    if (status == kExitBadInput) return status;
    const CompareOptions options;
    std::cout << "\n" << render_compare_table(compare_ab(outcome.record, options), options);
    return status;
  };
  return run;
}

}  // namespace trainlab
