// `trainlab baseline`: the three-run lab (fp32, bf16, bf16+compiled; fp32 and fp32+compiled where
// the bf16 probe finds bf16 emulated), interleaved repetitions, and its one reading.
#include <iostream>
#include <memory>

#include "core/errors.h"
#include "harness/cli/commands.h"
#include "harness/cli/job_command.h"
#include "harness/cli/next_step.h"
#include "harness/cli/run_report.h"
#include "harness/cli/variant_options.h"

namespace trainlab {

Subcommand add_baseline_command(CLI::App& app) {
  struct Options {
    VariantOptions variant;
    std::vector<std::string> overrides;
    std::string emulated_bf16 = "skip", format = "table", compile_mode;
    Thresholds thresholds;
    std::vector<std::string> command;  // the user's job, after --
  };
  auto o = std::make_shared<Options>();
  Subcommand baseline{app.add_subcommand("baseline", "the three-run lab: fp32, bf16, bf16+compiled"), nullptr};
  add_examples(baseline.app, "docs/lab.md",
               {"trainlab baseline --scenario recsys",
                "trainlab baseline --scenario tinyops --override bf16:batch=64 -k depth=96",
                "trainlab baseline --model models/make_model"});
  add_variant_options(baseline.app, o->variant, CommandKind::kLab);
  baseline.app->add_option("--override", o->overrides,
                           "per-variant setting VARIANT:NAME=VALUE, e.g. bf16:batch=32 (repeatable)");
  baseline.app->add_option("--emulated-bf16", o->emulated_bf16,
                           "skip (default): where a GEMM probe finds bf16 over 5x slower than fp32 on this CPU "
                           "(emulated), leave the bf16 runs out and compile the fp32 model; run: run them anyway");
  add_format_option(baseline.app, o->format);
  add_job_command_option(baseline.app, o->command);
  baseline.app->add_option("--compile-mode", o->compile_mode,
                           "job: torch.compile's mode for the compiled variant (default, reduce-overhead, "
                           "max-autotune, ...)");
  CLI::App* cmd = baseline.app;
  baseline.run = [o, cmd] {
    const OutputFormat format = parse_output_format(o->format);
    if (!o->command.empty()) {  // the lab on the user's own job (harness/runner/job_variants.h)
      if (!o->overrides.empty() || o->emulated_bf16 != "skip") {
        throw InputError("--override and --emulated-bf16 are for built-in scenarios, not a job after --");
      }
      refuse_under_launcher("baseline -- COMMAND");
      JobCompareOptions job = job_compare_options(o->variant, o->command, "baseline", {}, &o->thresholds);
      job.repeat_given = cmd->count("--repeat") > 0;
      if (!o->compile_mode.empty()) job.compile_mode = o->compile_mode;
      const LabOutcome outcome = run_job_lab(job, std::cerr);
      const int status = report_run(outcome, format);
      if (status != kExitBadInput) print_next_step(std::cerr, next_after_run(outcome.run_dir));
      return status;
    }
    if (!o->compile_mode.empty()) throw InputError("--compile-mode is for a job: trainlab baseline -- COMMAND");
    LabOptions lab = build_lab_options(o->variant, &o->thresholds);
    for (const std::string& text : o->overrides) {
      const auto colon = text.find(':');
      if (colon == std::string::npos) {
        throw InputError("invalid --override '" + text + "' (expected VARIANT:NAME=VALUE)");
      }
      auto [name, value] = split_setting(text.substr(colon + 1), "--override");
      lab.overrides[text.substr(0, colon)].emplace_back(name, value);
    }
    // The lab's gains carry intervals over interleaved repetitions (fp32 bf16 compiled, three times):
    // three a side is the fewest that give an interval something to stand on. Without --repeat, a
    // gain whose interval still holds its line or is wide after three gets more rounds (up to 20 in
    // all) while their measured steps fit in 120 s; --repeat N runs exactly N.
    // ... with a 2 s loop budget per variant run: on a shared VM the spread between runs (minutes
    // of slow and fast spells, each process its own speed) is larger than within one, so more,
    // shorter rounds narrow a gain more than longer ones. recsys at 1 thread, a quiet 2-vCPU Xeon,
    // one after the other: 8 rounds of 5 s read fp32 -> bf16 [+10.4, +35.7] and bf16 -> compiled
    // [-7.9, +22.2] (25 and 30 points, 4.6 min); 20 rounds of 2 s [+2.5, +15.2] and [+7.6, +23.1]
    // (13 and 15 points, 3.2 min). A variant far slower than the others measures fewer steps
    // instead of stretching the lab; its record says how many the budget cut.
    if (cmd->count("--repeat") == 0) {
      lab.repeat = 3;
      lab.extra_rounds = kDefaultMaxRounds - lab.repeat;
      lab.rounds_budget_s = kExtraRoundsBudgetS;
    }
    if (!o->variant.was_given("max-loop-s")) lab.base.max_loop_s = 2;
    // ... and each repetition measures for lab.min_measured_s at least (fast steps run past --steps).
    if (!o->variant.was_given("steps") && !o->variant.was_given("min-loop-s"))
      lab.base.min_loop_s = lab.thresholds->value(threshold::lab::min_measured_s);
    if (o->emulated_bf16 != "skip" && o->emulated_bf16 != "run") {
      throw InputError("invalid --emulated-bf16 '" + o->emulated_bf16 + "' (skip or run)");
    }
    lab.run_emulated_bf16 = o->emulated_bf16 == "run";
    // Validates the overrides before anything runs, a variant's --device cuda included.
    for (const VariantSpec& spec : baseline_variants(lab)) check_device_usable(spec);
    const LabOutcome outcome = run_baseline_lab(lab, std::cerr);
    if (outcome.quiet) return run_status(outcome);  // a launch's peer rank: rank 0 reports
    const int status = report_run(outcome, format);
    if (status != kExitBadInput) print_next_step(std::cerr, next_after_run(outcome.run_dir));
    return status;
  };
  return baseline;
}

}  // namespace trainlab
