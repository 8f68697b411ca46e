// `trainlab profile`: one variant with the profiler on (record + Chrome trace), then its diagnosis;
// --fail-on turns a finding into exit status 1. `trainlab profile [options] -- COMMAND...`: the
// user's own training job instead (harness/runner/job_runner.h), into the same results layout and
// the same diagnosis; a job that did not end well keeps its record, says so in one line and exits 1.
#include <cstdlib>
#include <iostream>
#include <memory>

#include "core/errors.h"
#include "harness/cli/commands.h"
#include "harness/cli/next_step.h"
#include "harness/cli/run_report.h"
#include "harness/cli/variant_options.h"
#include "harness/report/diagnose_report.h"
#include "harness/runner/diagnose.h"
#include "harness/runner/job_runner.h"
#include "harness/cli/option_bounds.h"

namespace trainlab {

namespace {

template <class Options>
int run_job_profile(const Options& o, OutputFormat format) {
  const VariantOptions& v = o.variant;
  if (!v.scenario.empty() || !v.preset.empty() || !v.knobs.empty() || !v.settings.empty()) {
    throw InputError("--scenario, --preset, -k and --set are for built-in scenarios, not a job after --");
  }
  for (const auto& [name, text] : v.given) {
    if (text.empty()) continue;
    if (name != "steps" && name != "warmup" && name != "sample-interval-ms" && name != "window") {
      throw InputError("--" + name + " is not an option of a job (trainlab profile -- COMMAND): see docs/job.md");
    }
  }
  for (const auto& [name, on] : v.flags) {
    if (on && name != "profile") throw InputError("--" + name + " is not an option of a job (trainlab profile -- COMMAND)");
  }
  JobOptions job;
  job.command = o.command;
  const auto given_int = [&](const char* name, int64_t fallback) {
    const auto it = v.given.find(name);
    if (it == v.given.end() || it->second.empty()) return fallback;
    char* end = nullptr;
    const long long n = std::strtoll(it->second.c_str(), &end, 10);
    if (end == it->second.c_str() || *end != '\0') throw InputError("--" + std::string(name) + ": a whole number, got " + it->second);
    return static_cast<int64_t>(n);
  };
  job.steps = given_int("steps", 0);
  job.warmup = given_int("warmup", 1);
  job.sample_interval_ms = given_int("sample-interval-ms", 500);
  std::string capture = o.capture;
  if (capture.empty()) {
    const auto window = v.given.find("window");
    if (window != v.given.end()) capture = window->second;
  }
  if (!capture.empty() && (o.capture_start >= 0 || o.capture_steps > 0)) {
    throw InputError("--capture START:COUNT or --capture-start/--capture-steps, not both");
  }
  if (!capture.empty()) {
    parse_window(capture, &job.capture_start, &job.capture_steps);
  } else if (o.capture_start >= 0 || o.capture_steps > 0) {
    job.capture_start = o.capture_start >= 0 ? o.capture_start : job.warmup;
    job.capture_steps = o.capture_steps > 0 ? o.capture_steps : 3;
  }
  job.stages = !o.no_stages;
  job.step_function = o.step_function;
  job.timeout_s = o.job_timeout_s;
  job.results_dir = v.results_dir;
  Thresholds thresholds = v.thresholds_path.empty() ? Thresholds::defaults() : load_thresholds(v.thresholds_path);
  job.thresholds = &thresholds;

  const JobOutcome outcome = run_job(job, std::cerr);
  if (!outcome.line.empty()) std::cerr << "trainlab: " << outcome.line << "\n";
  if (!outcome.hint.empty()) std::cerr << "trainlab: " << outcome.hint << "\n";
  LabOutcome lab;
  lab.record = outcome.record;
  lab.run_dir = outcome.run_dir;
  int status = outcome.failed ? kExitGateFailed : kExitOk;
  if (!outcome.measured) {
    if (format == OutputFormat::kJson) report_run(lab, format);
    std::cerr << "trainlab: the record is kept in " << outcome.run_dir << "\n";
    return kExitGateFailed;
  }
  DiagnoseOptions options;
  options.thresholds = &thresholds;
  options.fail_on = o.fail_on;
  options.out_dir = o.out;
  const DiagnoseOutcome diagnosis = diagnose_run(outcome.record, outcome.run_dir, options);
  if (format == OutputFormat::kJson) {
    report_run(lab, format, {{"diagnosis", diagnoses_json(diagnosis)}});
    for (const std::string& reason : diagnosis.gate_reasons) std::cerr << "trainlab: gate: " << reason << "\n";
    if (diagnosis.gate_failed) status = kExitGateFailed;
  } else {
    report_run(lab, format);
    std::cout << "\n";
    if (report_diagnosis(diagnosis, format) != kExitOk) status = kExitGateFailed;
  }
  return status;
}

}  // namespace

Subcommand add_profile_command(CLI::App& app) {
  struct Options {
    VariantOptions variant;
    std::string fail_on, format = "table";
    Thresholds thresholds;
    // The user's own job: the command after --, and the options only it takes.
    std::vector<std::string> command;
    std::string capture, step_function, out;
    int64_t capture_start = -1, capture_steps = 0;
    double job_timeout_s = 0;
    bool no_stages = false;
  };
  auto o = std::make_shared<Options>();
  Subcommand profile{app.add_subcommand("profile", "one variant with the profiler on: record + Chrome trace"), nullptr};
  add_examples(profile.app, "docs/profiler.md",
               {"trainlab profile --scenario recsys --window 5:10 --interval-ms 500",
                "trainlab profile --model models/small_cnn"});
  add_variant_options(profile.app, o->variant, CommandKind::kRun);
  profile.app->add_option("--fail-on", o->fail_on, "exit 1 when a finding fires: high, moderate or a rule id");
  add_format_option(profile.app, o->format);
  // `trainlab profile [options] -- COMMAND...` (docs/job.md).
  profile.app->add_option("command", o->command,
                          "your own training job, after --: trainlab profile -- python train.py ...")
      ->expected(-1);
  profile.app->add_option("--capture", o->capture,
                          "job: torch.profiler window START:COUNT over the job's steps (0-based), e.g. 5:3");
  whole_number_in(profile.app->add_option("--capture-start", o->capture_start, "job: first captured step (0-based)"),
                  0, kMaxSteps);
  whole_number_in(profile.app->add_option("--capture-steps", o->capture_steps, "job: steps captured"), 1, kMaxSteps);
  real_number_in(profile.app->add_option("--timeout", o->job_timeout_s,
                                         "job: end the whole job after this many seconds (keeps what was measured)"),
                 0, kMaxLoopBudgetS);
  profile.app->add_flag("--no-stages", o->no_stages, "job: no stage attribution inside the data pipeline");
  profile.app->add_option("--step-function", o->step_function,
                          "job: module:qualname of the function that is one step, for loops without optimizer.step()");
  profile.app->add_option("--out", o->out, "job: folder for diagnosis.json and report.html (default: the run folder)");
  profile.run = [o] {
    const OutputFormat format = parse_output_format(o->format);
    check_fail_on(o->fail_on);
    if (!o->command.empty()) return run_job_profile(*o, format);
    if (!o->capture.empty() || o->capture_start >= 0 || o->capture_steps > 0 || o->job_timeout_s > 0 ||
        o->no_stages || !o->step_function.empty() || !o->out.empty()) {
      throw InputError("--capture, --capture-start, --capture-steps, --timeout, --no-stages, --step-function and "
                       "--out are for a job: trainlab profile [options] -- COMMAND...");
    }
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
