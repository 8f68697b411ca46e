// The next command worth running after each command (see next_step.h).
#include "harness/cli/next_step.h"

#include "core/text.h"

namespace trainlab {

namespace {
const std::string kNext = "next: ";
}  // namespace

std::string shell_word(const std::string& word) {
  bool plain = !word.empty();
  for (const char c : word) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      std::string("_-./:=@%+,").find(c) != std::string::npos;
    plain = plain && safe;
  }
  if (plain) return word;
  std::string quoted = "'";
  for (const char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string scenario_args(const VariantSpec& spec) {
  if (!spec.model.empty()) return "--model " + shell_word(spec.model);
  return "--scenario " + (spec.scenario.empty() ? std::string("recsys") : spec.scenario);
}

std::string next_after_run(const std::string& run_dir) { return kNext + "trainlab diagnose " + shell_word(run_dir); }

std::string next_after_profile(const std::string& trace_path, const VariantSpec& spec) {
  const std::string doctor = "trainlab doctor " + scenario_args(spec);
  if (trace_path.empty()) return kNext + doctor;
  return kNext + "open " + shell_word(trace_path) + " in https://ui.perfetto.dev (or chrome://tracing), then " + doctor;
}

std::string next_after_diagnose(const DiagnoseOutcome& outcome) {
  const bool inconclusive = outcome.diagnoses.empty() || outcome.diagnoses.front().verdict.inconclusive;
  if (outcome.from_run_record && !outcome.job_command.empty()) {
    // The user's own job: the commands that take it as it is (no --scenario to name).
    std::string command;
    for (const std::string& word : outcome.job_command) command += " " + shell_word(word);
    const Suspect primary = inconclusive ? Suspect::kNone : outcome.diagnoses.front().verdict.primary;
    if (inconclusive) return kNext + "trainlab profile --steps 60 --capture 40:5 --" + command + " (more steps to decide on)";
    if (primary == Suspect::kDataPipeline) {
      return kNext + "trainlab doctor --" + command + " (tries the loader's fixes on the job and measures them)";
    }
    if (primary == Suspect::kModelCompute || primary == Suspect::kFrameworkOverhead) {
      return kNext + "trainlab baseline --" + command + " (measures bf16 and torch.compile on the job)";
    }
    return kNext + "open " + shell_word(outcome.out_dir + "/report.html") + " (the actions, ranked, in your code's terms)";
  }
  if (outcome.from_run_record) {
    const std::string args = scenario_args(outcome.spec);
    if (inconclusive) return kNext + "trainlab profile " + args + " (ops, kernels and more steps to decide on)";
    return kNext + "trainlab doctor " + args + " (tries the findings' fixes and measures them)";
  }
  if (inconclusive) {
    return kNext + "profile more steps (torch.profiler schedule with active=5 or more) and trainlab diagnose the "
                   "new trace";
  }
  return kNext + "open " + shell_word(outcome.out_dir + "/report.html") + " (the actions, ranked); to measure the fixes, bring the "
                 "model in (trainlab model add) and run trainlab doctor --model BUNDLE";
}

std::string next_after_compare(const std::string& before, const std::string& after, bool gate_failed,
                               bool ungated_regressions) {
  const std::string later = after.empty() ? before : after;
  if (!gate_failed && ungated_regressions) {
    if (after.empty()) {
      return kNext + "run the A/B again with --repeat 3 (3 runs a side can gate), then trainlab compare " + shell_word(before);
    }
    return kNext + "repeat both runs with --repeat 3 (3 runs a side can gate), then trainlab compare " + shell_word(before) + " " +
           shell_word(after);
  }
  return kNext + "trainlab diagnose " + shell_word(later) + (gate_failed ? " (what the slower run waits on)" : "");
}

std::string next_after_history(const std::vector<HistoryEntry>& entries) {
  for (auto e = entries.rbegin(); e != entries.rend(); ++e) {
    if (e->has_run_record && e->problem.empty()) return kNext + "trainlab diagnose " + shell_word(e->path);
  }
  if (!entries.empty()) return kNext + "open " + shell_word(entries.back().path + "/report.html");
  return kNext + "trainlab baseline (the three-run lab; trainlab list shows the scenarios)";
}

std::string next_after_list(const std::string& first_scenario) {
  return kNext + "trainlab baseline --scenario " + first_scenario;
}

std::string next_after_doctor(const DoctorOutcome& outcome) {
  if (outcome.best_settings.empty()) {
    return kNext + "open " + shell_word(outcome.out_dir + "/report.html") + " (the findings no change addressed)";
  }
  std::string configuration;
  for (const std::string& arg : outcome.configuration) configuration += " " + shell_word(arg);
  return kNext + "trainlab run" + configuration + " --set " + shell_word(outcome.best_settings) + " (the best measured settings)";
}

std::string next_after_validate(const ValidateOutcome& outcome, const std::string& results_dir) {
  for (const CaseResult& r : outcome.cases) {
    if (!r.correct && !r.run_dir.empty()) return kNext + "trainlab diagnose " + shell_word(r.run_dir) + " (" + r.seeded.name + ", misnamed)";
  }
  return kNext + "trainlab history --results " + shell_word(results_dir);
}

void print_next_step(std::ostream& out, const std::string& line) {
  if (!line.empty()) out << one_line(line) << "\n";  // a path's newline or escape sequence shown escaped
}

}  // namespace trainlab
