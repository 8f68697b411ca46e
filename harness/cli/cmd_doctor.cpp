// `trainlab doctor --scenario S [run options] [--repeat K] [--max-changes N] [--results DIR]`: profile,
// try each top finding's change as an interleaved A/B run, then the helpful ones together, and report
// what each measurably bought. The run options are parsed and checked like `run`'s into a typed spec;
// the children get that spec back as arguments (core/run_options.h).
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <memory>

#include "core/errors.h"
#include "harness/cli/commands.h"
#include "harness/cli/job_command.h"
#include "harness/cli/next_step.h"
#include "harness/cli/option_bounds.h"
#include "harness/cli/variant_options.h"
#include "harness/report/doctor_report.h"
#include "harness/runner/doctor.h"
#include "harness/runner/job_variants.h"

namespace trainlab {

Subcommand add_doctor_command(CLI::App& app) {
  struct Options {
    VariantOptions variant;
    int max_changes = 3;
    int max_rounds = kDefaultMaxRounds;
    std::string ab, format = "table";
    Thresholds thresholds;
    std::vector<std::string> command;  // the user's job, after --
  };
  auto o = std::make_shared<Options>();
  Subcommand doctor{
      app.add_subcommand("doctor", "diagnose a configuration, try each finding's fix as an A/B run, report the verified gains"),
      nullptr};
  CLI::App* cmd = doctor.app;
  add_examples(cmd, "docs/diagnosis.md",
               {"trainlab doctor --scenario recsys --preset data-bound",
                "trainlab doctor --model models/two_tower"});
  add_variant_options(cmd, o->variant, CommandKind::kDoctor);
  whole_number_in(
      cmd->add_option("--max-changes", o->max_changes,
                      "the top findings whose changes are tried (1 to " + std::to_string(kMaxDoctorChanges) + "; default 3)"),
      1, kMaxDoctorChanges);
  whole_number_in(cmd->add_option("--max-rounds", o->max_rounds,
                                  "rounds a trial's A/B runs in all while its interval is wide (run --ab's "
                                  "--max-rounds; default 20; equal to --repeat: exactly --repeat)"),
                  kMinDoctorRepeat, kMaxRepeat);
  cmd->add_option("--ab", o->ab)->group("");  // refused: doctor makes its own A/B runs
  add_format_option(cmd, o->format);
  add_job_command_option(cmd, o->command);
  doctor.run = [o, cmd] {
    refuse_under_launcher("doctor");
    const OutputFormat format = parse_output_format(o->format);
    if (!o->command.empty()) {  // the user's own job: its data pipeline's fixes tried on the job itself
      if (cmd->count("--ab") > 0) throw InputError("doctor chooses --ab itself");
      JobCompareOptions job = job_compare_options(o->variant, o->command, "doctor", {}, &o->thresholds);
      job.repeat = cmd->count("--repeat") > 0 ? std::max(kMinDoctorRepeat, o->variant.repeat) : 3;
      job.repeat_given = true;
      const DoctorOutcome outcome = run_job_doctor(job, o->max_changes, o->max_rounds, std::cerr);
      std::cout << (format == OutputFormat::kJson ? "" : "\n") << render_doctor(outcome, format);
      // The job did not run to a measured step as written: nothing was diagnosed or tried.
      return outcome.diagnosis_report.empty() ? kExitGateFailed : kExitOk;
    }
    for (const char* own : {"profile", "window"}) {
      if (o->variant.was_given(own)) throw InputError(std::string("doctor chooses --") + own + " itself");
    }
    if (cmd->count("--ab") > 0) throw InputError("doctor chooses --ab itself");
    DoctorOptions options;
    options.spec = build_spec(o->variant);  // bad input is one line before anything runs
    options.repeat = cmd->count("--repeat") > 0 ? o->variant.repeat : 3;
    options.max_changes = o->max_changes;
    options.max_rounds = o->max_rounds;
    options.results_dir = o->variant.results_dir;
    options.timeout_s = o->variant.timeout_s;
    options.memory_limit_gb = o->variant.memory_limit_gb;
    if (!o->variant.thresholds_path.empty()) {
      o->thresholds = load_thresholds(o->variant.thresholds_path);  // checked here, read again by the children
      options.thresholds_path = o->variant.thresholds_path;
    }
    options.live_progress = ::isatty(STDERR_FILENO) == 1;
    const DoctorOutcome outcome = run_doctor(options, std::cerr);
    std::cout << (format == OutputFormat::kJson ? "" : "\n") << render_doctor(outcome, format);
    print_next_step(std::cerr, next_after_doctor(outcome));
    return kExitOk;
  };
  return doctor;
}

}  // namespace trainlab
