// `trainlab diagnose`: the bottleneck of a run folder, a PyTorch profiler trace or a folder of rank
// traces; --fail-on turns a finding into exit status 1.
#include <iostream>
#include <memory>

#include "harness/cli/commands.h"
#include "harness/cli/next_step.h"
#include "harness/cli/run_report.h"
#include "harness/cli/variant_options.h"
#include "harness/runner/diagnose.h"

namespace trainlab {

Subcommand add_diagnose_command(CLI::App& app) {
  struct Options {
    std::string input, fail_on, out, thresholds_path, format = "table";
    std::string results_dir = "results";
    bool all = false;
    Thresholds thresholds;
  };
  auto o = std::make_shared<Options>();
  Subcommand diagnose{
      app.add_subcommand("diagnose", "name the bottleneck of a run folder, a PyTorch profiler trace (.json/.json.gz) "
                                     "or a folder of rank traces"),
      nullptr};
  CLI::App* cmd = diagnose.app;
  add_examples(cmd, "docs/diagnosis.md",
               {"trainlab diagnose rank0.pt.trace.json.gz --fail-on high",
                "trainlab diagnose results/RUN-ID",
                "trainlab diagnose tests/data/advice/loader_workers.pt.trace.json.gz"});
  cmd->add_option("input", o->input, "run folder, trace file or folder of traces")->required();
  cmd->add_option("--fail-on", o->fail_on, "exit 1 when a finding fires: high, moderate or a rule id");
  cmd->add_option("--out", o->out, "folder for diagnosis.json and report.html (default: the run folder, "
                                   "or a new folder in results/ for traces)");
  cmd->add_option("--thresholds", o->thresholds_path, "rule thresholds file replacing configs/thresholds.json");
  cmd->add_option("--results", o->results_dir, "where a trace's diagnosis folder is made when --out is not given")
      ->capture_default_str();
  cmd->add_flag("--all", o->all, "a lab's folder: every repetition's full diagnosis after the lab's answer");
  add_format_option(cmd, o->format);
  diagnose.run = [o] {
    const OutputFormat format = parse_output_format(o->format);
    check_fail_on(o->fail_on);
    DiagnoseOptions options;
    if (!o->thresholds_path.empty()) {
      o->thresholds = load_thresholds(o->thresholds_path);
      options.thresholds = &o->thresholds;
    }
    options.fail_on = o->fail_on;
    options.out_dir = o->out;
    options.results_dir = o->results_dir;
    const DiagnoseOutcome outcome = diagnose_path(o->input, options);
    const int status = report_diagnosis(outcome, format, o->all);
    print_next_step(std::cerr, next_after_diagnose(outcome));
    return status;
  };
  return diagnose;
}

}  // namespace trainlab
