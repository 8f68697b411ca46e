// `trainlab profile`: one variant with the profiler on (record + Chrome trace), then its diagnosis;
// --fail-on turns a finding into exit status 1.
#include <iostream>
#include <memory>

#include "core/errors.h"
#include "harness/cli/commands.h"
#include "harness/cli/next_step.h"
#include "harness/cli/run_report.h"
#include "harness/cli/variant_options.h"
#include "harness/report/diagnose_report.h"
#include "harness/runner/diagnose.h"

namespace trainlab {

Subcommand add_profile_command(CLI::App& app) {
  struct Options {
    VariantOptions variant;
    std::string fail_on, format = "table";
    Thresholds thresholds;
  };
  auto o = std::make_shared<Options>();
  Subcommand profile{app.add_subcommand("profile", "one variant with the profiler on: record + Chrome trace"), nullptr};
  add_examples(profile.app, "docs/profiler.md",
               {"trainlab profile --scenario recsys --window 5:10 --interval-ms 500",
                "trainlab profile --model models/small_cnn"});
  add_variant_options(profile.app, o->variant, CommandKind::kRun);
  profile.app->add_option("--fail-on", o->fail_on, "exit 1 when a finding fires: high, moderate or a rule id");
  add_format_option(profile.app, o->format);
  profile.run = [o] {
    const OutputFormat format = parse_output_format(o->format);
    check_fail_on(o->fail_on);
    o->variant.flags["profile"] = true;
    LabOptions lab = build_lab_options(o->variant, &o->thresholds);
    const LabOutcome outcome = run_single_variant(lab, std::cerr, "profile");
    if (outcome.quiet) return run_status(outcome);  // a launch's peer rank: rank 0 reports
    if (run_status(outcome) != kExitOk) return report_run(outcome, format);
    DiagnoseOptions options;
    options.thresholds = lab.thresholds;
    options.fail_on = o->fail_on;
    const DiagnoseOutcome diagnosis = diagnose_run(outcome.record, outcome.run_dir, options);
    int status = kExitOk;
    if (format == OutputFormat::kJson) {  // one document: the run and its diagnosis
      report_run(outcome, format, {{"diagnosis", diagnoses_json(diagnosis)}});
      for (const std::string& reason : diagnosis.gate_reasons) std::cerr << "trainlab: gate: " << reason << "\n";
      status = diagnosis.gate_failed ? kExitGateFailed : kExitOk;
    } else {
      report_run(outcome, format);
      std::cout << "\n";
      status = report_diagnosis(diagnosis, format);
    }
    std::string trace;
    for (const VariantRecord& v : outcome.record.variants) {
      if (trace.empty() && !v.profile.trace.empty()) trace = trace_path_in_run(outcome.run_dir, v);
    }
    print_next_step(std::cerr, next_after_profile(trace, outcome.record.variants.front().spec));
    return status;
  };
  return profile;
}

}  // namespace trainlab
