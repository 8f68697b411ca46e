// `trainlab profile`: one variant with the profiler on (record + Chrome trace), then its diagnosis;
// --fail-on turns a finding into exit status 1.
#include <iostream>
#include <memory>

#include "core/errors.h"
#include "harness/cli/commands.h"
#include "harness/cli/run_report.h"
#include "harness/cli/variant_options.h"

namespace trainlab {

Subcommand add_profile_command(CLI::App& app) {
  struct Options {
    VariantOptions variant;
    std::string fail_on;
    Thresholds thresholds;
  };
  auto o = std::make_shared<Options>();
  Subcommand profile{app.add_subcommand("profile", "one variant with the profiler on: record + Chrome trace"), nullptr};
  add_variant_options(profile.app, o->variant, CommandKind::kRun);
  profile.app->add_option("--fail-on", o->fail_on, "exit 1 when a finding fires: high, moderate or a rule id");
  profile.run = [o] {
    check_fail_on(o->fail_on);
    o->variant.flags["profile"] = true;
    LabOptions lab = build_lab_options(o->variant, &o->thresholds);
    const LabOutcome outcome = run_single_variant(lab, std::cerr, "profile");
    const int status = report_run(outcome);
    if (status != kExitOk) return status;
    DiagnoseOptions options;
    options.thresholds = lab.thresholds;
    options.fail_on = o->fail_on;
    std::cout << "\n";
    return report_diagnosis(diagnose_run(outcome.record, outcome.run_dir, options));
  };
  return profile;
}

}  // namespace trainlab
