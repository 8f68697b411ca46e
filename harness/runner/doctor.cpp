// doctor: profile child -> diagnosis.json -> one A/B child per change -> combined A/B -> profile of
// the best configuration -> doctor.json and report.html (the renderings: harness/report/doctor_report.cpp).
#include "harness/dist/dist_env.h"
#include "harness/runner/doctor.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>

#include "core/bounded_json.h"
#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/run_options.h"
#include "core/run_record.h"
#include "core/json_fields.h"
#include "core/json_text.h"
#include "diagnostics/diagnosis.h"
#include "harness/process/child_process.h"
#include "harness/process/progress_ticker.h"
#include "harness/runner/compare.h"
#include "harness/process/interrupt.h"
#include "harness/report/doctor_report.h"
#include "harness/runner/lab.h"
#include "core/text.h"

namespace trainlab {
namespace {

// The live line while a child runs (a terminal only): the doctor's step and what it does.
struct ChildWatch {
  ProgressTicker& ticker;
  size_t step;
  std::string label;
  std::chrono::steady_clock::time_point start;
};

// A child's run: the run folder it made ("" when none) and whether the doctor's interrupt stopped it.
struct ChildRun {
  std::string folder;
  bool stopped = false;
};

// Runs `trainlab <args> --results <dir>` and returns the run folder it made; a child that failed on
// bad input becomes this command's InputError (its last line), any other failure a runtime_error.
// A child stopped by an interrupt (Ctrl-C, SIGTERM, SIGHUP) returns what it left, stopped.
ChildRun run_child(std::vector<std::string> args, const std::string& dir, const DoctorOptions& options,
                   const ChildWatch& watch) {
  ensure_writable_dir(dir);
  args.insert(args.end(), {"--results", dir});
  if (options.memory_limit_gb > 0) args.insert(args.end(), {"--memory-limit-gb", format_text("%.17g", options.memory_limit_gb)});
  const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - watch.start).count();
  const ChildOutcome outcome = run_self_as_watched_child(args, dir + "/trainlab.log", options.timeout_s, watch.ticker,
                                                         watch.step, 0, watch.label, dir + "/.progress", elapsed_s);
  const std::string folder = run_folder_in(dir);
  if (outcome.interrupted) return {folder, true};
  if (outcome.exited && outcome.exit_status == kExitBadInput) {
    std::string line = last_line_of(dir + "/trainlab.log");
    const std::string prefix = "trainlab: error: ";
    if (line.rfind(prefix, 0) == 0) line = line.substr(prefix.size());
    throw InputError(line);
  }
  // A run folder has its run.json from the start: a child that crashed (not 0, nor 1 for a failed
  // variant it recorded) is said as such.
  const bool ended_itself =
      outcome.exited && (outcome.exit_status == kExitOk || outcome.exit_status == kExitGateFailed);
  if (folder.empty() || !ended_itself) {
    throw std::runtime_error("`trainlab " + args.front() + "` " + outcome.describe() + ": " +
                             last_line_of(dir + "/trainlab.log"));
  }
  return {folder, false};
}

// A trial the interrupt stopped, and one it kept from starting.
const char kInterruptedVerdict[] = "interrupted";
const char kNotRunVerdict[] = "not run: the doctor was interrupted";

// The diagnosis a `profile` child wrote into its run folder.
DiagnosisLine first_diagnosis(const std::string& run_folder) {
  try {
    return read_diagnosis_file(run_folder + "/diagnosis.json").diagnoses.front();
  } catch (const InputError& e) {
    throw std::runtime_error(std::string("the profile wrote no readable diagnosis: ") + e.what());
  }
}

// An A/B trial of `settings` against the configuration as given.
DoctorTrial measure(const std::string& change, const std::string& settings, const std::string& rule,
                    const std::vector<std::string>& variant_args, const std::string& dir, const DoctorOptions& options,
                    const ChildWatch& watch) {
  DoctorTrial trial{change, settings, rule};
  std::vector<std::string> args = {"run"};
  args.insert(args.end(), variant_args.begin(), variant_args.end());
  args.insert(args.end(), {"--ab", settings, "--repeat", std::to_string(options.repeat), "--max-rounds",
                           std::to_string(options.max_rounds)});
  try {
    const ChildRun child = run_child(args, dir, options, watch);
    trial.run_dir = child.folder;
    if (child.stopped) {  // its run folder keeps the repetitions that finished
      trial.verdict = kInterruptedVerdict;
      return trial;
    }
    read_ab_samples_per_s(read_run_record(trial.run_dir), trial);
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    trial.verdict = std::string("failed: ") + e.what();
  }
  return trial;
}

DoctorTrial trial_from_json(const nlohmann::json& j) {
  DoctorTrial t;
  t.change = required_field<std::string>(j, "change");
  t.settings = required_field<std::string>(j, "settings");
  t.from_rule = required_field<std::string>(j, "from_rule");
  t.gain_pct = required_field<double>(j, "gain_pct");
  const auto interval = required_field<std::vector<double>>(j, "interval");
  if (interval.size() != 2) throw InputError("field \"interval\" must hold two numbers");
  t.low_pct = interval[0];
  t.high_pct = interval[1];
  t.verdict = required_field<std::string>(j, "verdict");
  t.run_dir = required_field<std::string>(j, "run_dir");
  return t;
}

nlohmann::json to_json(const DoctorTrial& t) {
  return {{"change", t.change},
          {"settings", t.settings},
          {"from_rule", t.from_rule},
          {"gain_pct", t.gain_pct},
          {"interval", {t.low_pct, t.high_pct}},
          {"verdict", t.verdict},
          {"run_dir", t.run_dir}};
}

}  // namespace

void read_ab_samples_per_s(const RunRecord& ab, DoctorTrial& trial) {
  try {
    for (const CompareRow& row : compare_ab(ab, CompareOptions{}).rows) {
      if (row.metric != "samples/s") continue;
      trial.gain_pct = row.change.change_pct;
      trial.low_pct = row.change.low_pct;
      trial.high_pct = row.change.high_pct;
      trial.verdict = row.verdict;
    }
  } catch (const InputError& e) {  // the child's record, not the user's input: e.g. no B finished
    trial.verdict = std::string("failed: ") + e.what();
    return;
  }
  if (trial.verdict.empty()) trial.verdict = "failed: no measured samples/s";
}

namespace {

// "name=value" for the run option `name` as it reads in `changed`: the change in the table's words.
std::string setting(const std::string& name, const VariantSpec& changed) {
  const RunOption* option = find_run_option(name);
  if (option == nullptr) throw std::logic_error("doctor: no run option '" + name + "'");
  return name + "=" + option->show(changed);
}

}  // namespace

std::string settings_for_change(const std::string& change, const VariantSpec& spec, bool on_gpu) {
  VariantSpec changed = spec;
  if (change == "more_workers") {
    changed.workers = spec.workers == 0 ? 1 : std::min(2 * spec.workers, 16);
    return setting("workers", changed);
  }
  if (change == "more_prefetch") {
    changed.prefetch = 2 * spec.prefetch;
    return spec.workers > 0 ? setting("prefetch", changed) : "";
  }
  if (change == "pin_memory") {
    changed.pin_memory = true;
    return on_gpu && !spec.pin_memory ? setting("pin-memory", changed) : "";
  }
  if (change == "decoded_cache") {  // a scenario knob, where the scenario has a decoded cache
    const auto cache = spec.knobs.find("cache");
    return cache != spec.knobs.end() && cache->second == 0 ? "cache=1" : "";
  }
  if (change == "bf16") {
    changed.precision = Precision::kBf16;
    return spec.precision == Precision::kFp32 ? setting("precision", changed) : "";
  }
  if (change == "compiled") {
    changed.compiled = true;
    return spec.compiled ? "" : setting("compiled", changed);
  }
  if (change == "larger_batch") {
    changed.batch_size = 2 * spec.batch_size;
    return setting("batch", changed);
  }
  if (change == "overlap_comm") {
    changed.comm_mode = CommMode::kOverlap;
    return spec.nproc > 1 && spec.comm_mode == CommMode::kSerial ? setting("comm-mode", changed) : "";
  }
  if (change == "fewer_threads") {  // oversubscribed ranks: the cores divided among them
    changed.threads = std::max(1, usable_cores() / std::max(1, spec.nproc));
    return spec.nproc > 1 && changed.threads != spec.threads ? setting("threads", changed) : "";
  }
  if (change == "bucket_size") {
    changed.bucket_mb = 2 * spec.bucket_mb;
    return spec.nproc > 1 ? setting("bucket-mb", changed) : "";
  }
  return "";
}

// doctor.json and report.html: what finished; after an interrupt, the stage it stopped in
// ("interrupted") and the trials it kept from starting.
void write_doctor_outcome(const DoctorOutcome& outcome, int repeat, const nlohmann::json& diagnosis) {
  nlohmann::json trials = nlohmann::json::array();
  for (const DoctorTrial& t : outcome.trials) trials.push_back(to_json(t));
  const nlohmann::json doc = {{"schema_version", 1},
                              {"tool", "trainlab"},
                              {"kind", "doctor"},
                              {"created_utc", outcome.created_utc},
                              {"configuration", outcome.configuration},
                              {"repeat", repeat},
                              {"interrupted", string_or_null(outcome.interrupted)},
                              {"diagnosis", diagnosis},
                              {"report", outcome.diagnosis_report},
                              {"trials", trials},
                              {"best_settings", outcome.best_settings},
                              {"best_gain_pct", outcome.best_gain_pct},
                              {"unaddressed_findings", outcome.unaddressed_findings},
                              {"after",
                               {{"headline", outcome.after_headline},
                                {"report", outcome.after_report},
                                {"findings", outcome.after_findings}}}};
  write_file_atomically(outcome.out_dir + "/doctor.json", json_text(doc, 2) + "\n");
  write_file_atomically(outcome.out_dir + "/report.html", render_doctor_html(outcome));
}

namespace {

// What the doctor's stages share: where they report, the live line, the clock and the step number.
struct DoctorStages {
  const DoctorOptions& options;
  std::ostream& progress;
  ProgressTicker& ticker;
  std::chrono::steady_clock::time_point start;
  int step = 2;  // the next stage's number: [1] is the profile
  // The live line's watch of the stage just numbered (step - 1).
  ChildWatch watch(const std::string& label) const { return ChildWatch{ticker, static_cast<size_t>(step - 1), label, start}; }
};

// The changes the findings stand for (change, rule), by the time they could save, at most
// --max-changes; the data pipeline's findings also try the decoded cache where the scenario has
// one. The findings no change addresses go to outcome.unaddressed_findings.
std::vector<std::pair<std::string, std::string>> changes_to_try(const DiagnosisLine& d, const VariantSpec& spec,
                                                                bool on_gpu, int max_changes, DoctorOutcome& outcome) {
  std::vector<std::pair<std::string, std::string>> changes;
  std::set<std::string> seen;
  for (const ActionLine& action : d.actions) {
    const std::string& change = action.change;
    const std::string& rule = action.rule;
    std::vector<std::string> candidates = {change};
    if (change == "more_workers" || change == "more_prefetch") candidates.push_back("decoded_cache");
    for (const std::string& c : candidates) {
      if (c.empty() || !seen.insert(c).second || settings_for_change(c, spec, on_gpu).empty()) continue;
      if (static_cast<int>(changes.size()) < max_changes) changes.push_back({c, rule});
    }
  }
  // A finding is addressed when a trial tried its change (several rules can suggest the same one).
  std::set<std::string> tried_changes, tried_rules;
  for (const auto& [change, rule] : changes) tried_changes.insert(change);
  for (const FindingLine& f : d.findings) {
    if (tried_changes.count(f.change) > 0) tried_rules.insert(f.rule);
  }
  for (const auto& [change, rule] : changes) tried_rules.insert(rule);
  for (const FindingLine& f : d.findings) {
    if (tried_rules.count(f.rule) == 0) outcome.unaddressed_findings.push_back(f.title);
  }
  return changes;
}

// One A/B trial per change (those after an interrupt recorded as not run); returns the settings of
// the ones that improved.
std::vector<std::string> run_trials(const std::vector<std::pair<std::string, std::string>>& changes,
                                    const VariantSpec& spec, bool on_gpu, const std::vector<std::string>& variant_args,
                                    DoctorStages& stages, DoctorOutcome& outcome) {
  std::vector<std::string> helpful;
  for (const auto& [change, rule] : changes) {
    const std::string settings = settings_for_change(change, spec, on_gpu);
    if (interrupted()) {  // the trials after the interrupted one are recorded as not run
      if (outcome.interrupted.empty()) outcome.interrupted = "before the A/B of " + settings;
      outcome.trials.push_back({change, settings, rule, 0, 0, 0, kNotRunVerdict, ""});
      continue;
    }
    stages.progress << "[" << stages.step++ << "] A/B: " << settings << " (" << change << ", from " << rule << "), "
                    << stages.options.repeat << " repetitions a side, more while its interval is wide" << std::endl;
    outcome.trials.push_back(measure(change, settings, rule, variant_args, outcome.out_dir + "/trial-" + change,
                                     stages.options, stages.watch("A/B " + settings)));
    const DoctorTrial& t = outcome.trials.back();
    if (t.verdict == kInterruptedVerdict) outcome.interrupted = "during the A/B of " + settings;
    stages.progress << "    samples/s " << format_text("%+.1f %%", t.gain_pct) << " [" << format_text("%+.1f", t.low_pct)
                    << ", " << format_text("%+.1f", t.high_pct) << "]: " << t.verdict << std::endl;
    if (t.verdict == "improved") helpful.push_back(settings);
  }
  return helpful;
}

// The helpful changes together, when two or more helped; then the best measured trial.
void run_combined_trial(const std::vector<std::string>& helpful, const std::vector<std::string>& variant_args,
                        DoctorStages& stages, DoctorOutcome& outcome) {
  std::string combined;
  for (const std::string& s : helpful) combined += (combined.empty() ? "" : ",") + s;
  if (helpful.size() >= 2 && interrupted()) {
    if (outcome.interrupted.empty()) outcome.interrupted = "before the A/B of " + combined;
    outcome.trials.push_back({"combined", combined, "-", 0, 0, 0, kNotRunVerdict, ""});
  } else if (helpful.size() >= 2) {
    stages.progress << "[" << stages.step++ << "] A/B: the helpful changes together: " << combined << std::endl;
    outcome.trials.push_back(measure("combined", combined, "-", variant_args, outcome.out_dir + "/trial-combined",
                                     stages.options, stages.watch("A/B " + combined)));
    if (outcome.trials.back().verdict == kInterruptedVerdict) {
      outcome.interrupted = "during the A/B of " + combined;
    }
  }
  for (const DoctorTrial& t : outcome.trials) {
    if (t.verdict == "improved" && t.gain_pct > outcome.best_gain_pct) {
      outcome.best_gain_pct = t.gain_pct;
      outcome.best_settings = t.settings;
    }
  }
}

// What remains: the best measured configuration, profiled and diagnosed.
void profile_the_best(const std::vector<std::string>& profile_args, DoctorStages& stages, DoctorOutcome& outcome) {
  if (outcome.best_settings.empty()) return;
  if (interrupted()) {
    if (outcome.interrupted.empty()) outcome.interrupted = "before the profile of the best configuration";
    outcome.after_headline = kNotRunVerdict;
    return;
  }
  stages.progress << "[" << stages.step++ << "] profile the best configuration (" << outcome.best_settings
                  << "): what remains" << std::endl;
  std::vector<std::string> after_args = profile_args;
  after_args.insert(after_args.end(), {"--set", outcome.best_settings});
  try {
    const ChildRun after_run =
        run_child(after_args, outcome.out_dir + "/after", stages.options, stages.watch("profile " + outcome.best_settings));
    if (after_run.stopped) {
      outcome.interrupted = "during the profile of the best configuration";
      throw std::runtime_error("the doctor was interrupted");
    }
    const std::string& after = after_run.folder;
    const DiagnosisLine a = first_diagnosis(after);
    outcome.after_headline = a.headline;
    outcome.after_report = after + "/report.html";
    for (const FindingLine& f : a.findings) outcome.after_findings.push_back(f.severity + ": " + f.title);
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    outcome.after_headline =
        outcome.interrupted.empty() ? std::string("failed: ") + e.what() : std::string(kInterruptedVerdict);
  }
  stages.progress << "    " << outcome.after_headline << std::endl;
}

void check_doctor_options(const DoctorOptions& options) {
  if (options.repeat < kMinDoctorRepeat || options.repeat > kMaxDoctorRepeat) {
    throw InputError("invalid --repeat for doctor (" + std::to_string(kMinDoctorRepeat) + " to " +
                     std::to_string(kMaxDoctorRepeat) + ")");
  }
  if (options.max_changes < 1 || options.max_changes > kMaxDoctorChanges) {
    throw InputError("invalid --max-changes (1 to " + std::to_string(kMaxDoctorChanges) + ")");
  }
  if (options.max_rounds < options.repeat) {
    throw InputError("invalid --max-rounds " + std::to_string(options.max_rounds) + " (must be at least --repeat " +
                     std::to_string(options.repeat) + ")");
  }
}

}  // namespace

DoctorOutcome run_doctor(const DoctorOptions& options, std::ostream& progress) {
  check_doctor_options(options);
  DoctorOutcome outcome;
  ensure_writable_dir(options.results_dir);
  std::string run_id;
  outcome.out_dir = make_run_dir(options.results_dir, options.spec.scenario, "doctor", &run_id);
  // The children get the configuration as arguments rebuilt from the typed spec.
  std::vector<std::string> variant_args = spec_arguments(options.spec);
  if (!options.thresholds_path.empty()) variant_args.insert(variant_args.end(), {"--thresholds", options.thresholds_path});
  outcome.created_utc = utc_now("%Y-%m-%dT%H:%M:%SZ");
  progress << "trainlab doctor: results in " << outcome.out_dir
           << "\n[1] profile and diagnose the configuration as given" << std::endl;
  ProgressTicker ticker(progress, options.live_progress);
  DoctorStages stages{options, progress, ticker, std::chrono::steady_clock::now()};

  // 1. The diagnosis.
  std::vector<std::string> profile_args = {"profile"};
  profile_args.insert(profile_args.end(), variant_args.begin(), variant_args.end());
  outcome.configuration = variant_args;
  const ChildRun profile =
      run_child(profile_args, outcome.out_dir + "/profile", options, stages.watch("profile"));
  if (profile.stopped) {
    outcome.interrupted = "during the profile of the configuration as given";
    outcome.diagnosis_headline = "not diagnosed: the doctor was interrupted during the profile";
    progress << "    " << outcome.diagnosis_headline << std::endl;
    write_doctor_outcome(outcome, options.repeat, {{"headline", outcome.diagnosis_headline}});
    return outcome;
  }
  const std::string& profiled = profile.folder;
  const DiagnosisLine d = first_diagnosis(profiled);
  outcome.diagnosis_headline = d.headline;
  outcome.diagnosis_report = profiled + "/report.html";
  const RunRecord base = read_run_record(profiled);
  const VariantSpec& spec = base.variants.front().spec;
  const bool on_gpu = base.variants.front().device.rfind("cuda", 0) == 0;
  progress << "    " << outcome.diagnosis_headline << std::endl;

  // 2.-4. The changes tried one by one, the helpful ones together, the best profiled again.
  const auto changes = changes_to_try(d, spec, on_gpu, options.max_changes, outcome);
  const std::vector<std::string> helpful = run_trials(changes, spec, on_gpu, variant_args, stages, outcome);
  run_combined_trial(helpful, variant_args, stages, outcome);
  profile_the_best(profile_args, stages, outcome);

  write_doctor_outcome(outcome, options.repeat, to_json(d));
  return outcome;
}

DoctorOutcome read_doctor_file(const std::string& path) {
  const nlohmann::json j = parse_bounded_json(read_file(path), path);
  if (j.is_discarded() || !j.is_object()) throw InputError(path + ": malformed JSON");
  // Any type may stand where the number should (a string, null, an array): read it only as an integer.
  const nlohmann::json* version = j.contains("schema_version") ? &j["schema_version"] : nullptr;
  if (version == nullptr || !version->is_number_integer() || version->get<int64_t>() != 1) {
    throw InputError(path + ": not a doctor.json of schema_version 1");
  }
  try {
    DoctorOutcome outcome;
    outcome.out_dir = std::filesystem::path(path).parent_path().string();
    // The first doctor (2026-11-23) wrote no created_utc, unaddressed_findings or after, and
    // interrupted (null unless the doctor was) came on 2026-11-26: optional, so those folders read.
    outcome.created_utc = optional_field<std::string>(j, "created_utc", "");
    if (const auto interrupted = present_field<nlohmann::json>(j, "interrupted"); interrupted && !interrupted->is_null()) {
      outcome.interrupted = field_as<std::string>(*interrupted, "interrupted");
    }
    outcome.configuration = required_field<std::vector<std::string>>(j, "configuration");
    outcome.diagnosis_headline = required_field<std::string>(required_member(j, "diagnosis"), "headline");
    outcome.diagnosis_report = required_field<std::string>(j, "report");
    for (const nlohmann::json& t : required_member(j, "trials")) outcome.trials.push_back(trial_from_json(t));
    outcome.best_settings = required_field<std::string>(j, "best_settings");
    outcome.best_gain_pct = required_field<double>(j, "best_gain_pct");
    outcome.unaddressed_findings = optional_field<std::vector<std::string>>(j, "unaddressed_findings", {});
    if (j.contains("after")) {
      const nlohmann::json& after = j.at("after");
      outcome.after_headline = required_field<std::string>(after, "headline");
      outcome.after_report = required_field<std::string>(after, "report");
      outcome.after_findings = required_field<std::vector<std::string>>(after, "findings");
    }
    return outcome;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path + ": malformed doctor.json: " + e.what());
  } catch (const InputError& e) {
    throw InputError(path + ": malformed doctor.json: " + e.what());
  }
}

}  // namespace trainlab
