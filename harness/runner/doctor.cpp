// doctor: profile child -> diagnosis.json -> one A/B child per change -> combined A/B -> doctor.json.
#include "harness/runner/doctor.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "harness/core/atomic_file.h"
#include "harness/core/errors.h"
#include "harness/core/run_record.h"
#include "harness/runner/child_process.h"
#include "harness/runner/compare.h"
#include "harness/runner/lab.h"
#include "harness/runner/text_table.h"

namespace fs = std::filesystem;

namespace trainlab {
namespace {

// Runs `trainlab <args> --results <dir>` and returns the run folder it made; a child that failed on
// bad input becomes this command's InputError (its last line), any other failure a runtime_error.
std::string run_child(std::vector<std::string> args, const std::string& dir, const DoctorOptions& options) {
  ensure_writable_dir(dir);
  args.insert(args.end(), {"--results", dir});
  const ChildOutcome outcome = run_self_as_child(args, dir + "/trainlab.log", options.timeout_s);
  const std::string folder = run_folder_in(dir);
  if (outcome.exited && outcome.exit_status == kExitBadInput) {
    std::string line = last_line_of(dir + "/trainlab.log");
    const std::string prefix = "trainlab: error: ";
    if (line.rfind(prefix, 0) == 0) line = line.substr(prefix.size());
    throw InputError(line);
  }
  if (folder.empty()) {
    throw std::runtime_error("`trainlab " + args.front() + "` " + outcome.describe() + ": " +
                             last_line_of(dir + "/trainlab.log"));
  }
  return folder;
}

// An A/B trial of `settings` against the configuration as given.
DoctorTrial measure(const std::string& change, const std::string& settings, const std::string& rule,
                    const std::string& dir, const DoctorOptions& options) {
  DoctorTrial trial{change, settings, rule};
  std::vector<std::string> args = {"run"};
  args.insert(args.end(), options.variant_args.begin(), options.variant_args.end());
  args.insert(args.end(), {"--ab", settings, "--repeat", std::to_string(options.repeat)});
  try {
    trial.run_dir = run_child(args, dir, options);
    const CompareOutcome compared = compare_ab(read_run_record(trial.run_dir), CompareOptions{});
    for (const CompareRow& row : compared.rows) {
      if (row.metric != "samples/s") continue;
      trial.gain_pct = row.change.change_pct;
      trial.low_pct = row.change.low_pct;
      trial.high_pct = row.change.high_pct;
      trial.verdict = row.verdict;
    }
    if (trial.verdict.empty()) trial.verdict = "failed: no measured samples/s";
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    trial.verdict = std::string("failed: ") + e.what();
  }
  return trial;
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

std::string settings_for_change(const std::string& change, const nlohmann::json& spec, bool on_gpu) {
  const int workers = spec.value("workers", 0);
  const nlohmann::json knobs = spec.value("knobs", nlohmann::json::object());
  if (change == "more_workers")
    return "workers=" + std::to_string(workers == 0 ? 1 : std::min(2 * workers, 16));
  if (change == "more_prefetch")
    return workers > 0 ? "prefetch=" + std::to_string(2 * spec.value("prefetch", 2)) : "";
  if (change == "pin_memory") return on_gpu && !spec.value("pin_memory", false) ? "pin-memory=on" : "";
  if (change == "decoded_cache") {
    return knobs.contains("cache") && knobs["cache"].get<double>() == 0 ? "cache=1" : "";
  }
  if (change == "bf16") return spec.value("precision", "") == "fp32" ? "precision=bf16" : "";
  if (change == "compiled") return spec.value("compiled", false) ? "" : "compiled=on";
  if (change == "larger_batch") return "batch=" + std::to_string(2 * spec.value("batch_size", int64_t{0}));
  if (change == "overlap_comm") {
    return spec.value("nproc", 1) > 1 && spec.value("comm_mode", "") == "serial" ? "comm-mode=overlap" : "";
  }
  if (change == "bucket_size") {
    return spec.value("nproc", 1) > 1 ? "bucket-mb=" + fmt("%g", 2 * spec.value("bucket_mb", 25.0)) : "";
  }
  return "";
}

DoctorOutcome run_doctor(const DoctorOptions& options, std::ostream& progress) {
  if (options.repeat < 2 || options.repeat > 20) throw InputError("invalid --repeat for doctor (2 to 20)");
  if (options.max_changes < 1 || options.max_changes > 8) throw InputError("invalid --max-changes (1 to 8)");
  DoctorOutcome outcome;
  ensure_writable_dir(options.results_dir);
  std::string run_id;
  outcome.out_dir = make_run_dir(options.results_dir, options.scenario, "doctor", &run_id);
  progress << "trainlab doctor: results in " << outcome.out_dir
           << "\n[1] profile and diagnose the configuration as given" << std::endl;

  // 1. The diagnosis.
  std::vector<std::string> profile_args = {"profile"};
  profile_args.insert(profile_args.end(), options.variant_args.begin(), options.variant_args.end());
  const std::string profiled = run_child(profile_args, outcome.out_dir + "/profile", options);
  const nlohmann::json diagnosis =
      nlohmann::json::parse(read_file(profiled + "/diagnosis.json"), nullptr, false);
  if (diagnosis.is_discarded() || diagnosis["diagnoses"].empty()) {
    throw std::runtime_error(profiled + ": the profile wrote no readable diagnosis");
  }
  const nlohmann::json& d = diagnosis["diagnoses"][0];
  outcome.diagnosis_headline = d["verdict"].value("headline", "");
  const RunRecord base = read_run_record(profiled);
  const nlohmann::json spec = base.variants.front().spec;
  const bool on_gpu = base.variants.front().device.rfind("cuda", 0) == 0;
  progress << "    " << outcome.diagnosis_headline << std::endl;

  // 2. The changes the findings stand for, by the time they could save; the data pipeline's
  //    findings also try the decoded cache where the scenario has one.
  std::vector<std::pair<std::string, std::string>> changes;  // change, rule
  std::set<std::string> seen;
  for (const nlohmann::json& action : d["verdict"]["actions"]) {
    const std::string change = action.value("change", ""), rule = action.value("rule", "");
    std::vector<std::string> candidates = {change};
    if (change == "more_workers" || change == "more_prefetch") candidates.push_back("decoded_cache");
    for (const std::string& c : candidates) {
      if (c.empty() || !seen.insert(c).second || settings_for_change(c, spec, on_gpu).empty()) continue;
      if (static_cast<int>(changes.size()) < options.max_changes) changes.push_back({c, rule});
    }
  }
  // A finding is addressed when a trial tried its change (several rules can suggest the same one).
  std::set<std::string> tried_changes, tried_rules;
  for (const auto& [change, rule] : changes) tried_changes.insert(change);
  for (const nlohmann::json& f : d["findings"]) {
    if (tried_changes.count(f.value("change", "")) > 0) tried_rules.insert(f.value("rule", ""));
  }
  for (const auto& [change, rule] : changes) tried_rules.insert(rule);
  for (const nlohmann::json& f : d["findings"]) {
    if (tried_rules.count(f.value("rule", "")) == 0)
      outcome.remaining_findings.push_back(f.value("title", ""));
  }

  // 3. One A/B trial per change, then the helpful ones together.
  int step = 2;
  std::vector<std::string> helpful;
  for (const auto& [change, rule] : changes) {
    const std::string settings = settings_for_change(change, spec, on_gpu);
    progress << "[" << step++ << "] A/B: " << settings << " (" << change << ", from " << rule << "), "
             << options.repeat << " repetitions a side" << std::endl;
    outcome.trials.push_back(measure(change, settings, rule, outcome.out_dir + "/trial-" + change, options));
    const DoctorTrial& t = outcome.trials.back();
    progress << "    samples/s " << fmt("%+.1f %%", t.gain_pct) << " [" << fmt("%+.1f", t.low_pct) << ", "
             << fmt("%+.1f", t.high_pct) << "]: " << t.verdict << std::endl;
    if (t.verdict == "improved") helpful.push_back(settings);
  }
  if (helpful.size() >= 2) {
    std::string combined;
    for (const std::string& s : helpful) combined += (combined.empty() ? "" : ",") + s;
    progress << "[" << step++ << "] A/B: the helpful changes together: " << combined << std::endl;
    outcome.trials.push_back(
        measure("combined", combined, "-", outcome.out_dir + "/trial-combined", options));
  }
  for (const DoctorTrial& t : outcome.trials) {
    if (t.verdict == "improved" && t.gain_pct > outcome.best_gain_pct) {
      outcome.best_gain_pct = t.gain_pct;
      outcome.best_settings = t.settings;
    }
  }

  nlohmann::json trials = nlohmann::json::array();
  for (const DoctorTrial& t : outcome.trials) trials.push_back(to_json(t));
  write_file_atomically(outcome.out_dir + "/doctor.json",
                        nlohmann::json({{"schema_version", 1},
                                        {"tool", "trainlab"},
                                        {"kind", "doctor"},
                                        {"configuration", options.variant_args},
                                        {"repeat", options.repeat},
                                        {"diagnosis", d["verdict"]},
                                        {"report", profiled + "/report.html"},
                                        {"trials", trials},
                                        {"best_settings", outcome.best_settings},
                                        {"best_gain_pct", outcome.best_gain_pct},
                                        {"remaining_findings", outcome.remaining_findings}})
                                .dump(2) +
                            "\n");
  return outcome;
}

std::string render_doctor(const DoctorOutcome& outcome) {
  std::string out = "Diagnosis: " + outcome.diagnosis_headline + "\n\n";
  std::vector<std::vector<std::string>> rows;
  for (const DoctorTrial& t : outcome.trials) {
    rows.push_back({t.change, t.settings, fmt("%+.1f %%", t.gain_pct),
                    "[" + fmt("%+.1f", t.low_pct) + ", " + fmt("%+.1f", t.high_pct) + "]", t.verdict});
  }
  out += rows.empty()
             ? "No finding came with a change to try.\n"
             : render_text_table({"change", "settings", "samples/s", "95 % interval", "verdict"}, rows, true);
  out += "\nBest measured configuration: " +
         (outcome.best_settings.empty()
              ? std::string("the one given (no change measurably helped)")
              : outcome.best_settings + " (" + fmt("%.2fx", 1.0 + outcome.best_gain_pct / 100.0) +
                    " samples/s)") +
         "\n";
  if (!outcome.remaining_findings.empty()) {
    out += "Findings not addressed by a trial:\n";
    for (const std::string& f : outcome.remaining_findings) out += "  - " + f + "\n";
  }
  return out + "Doctor: " + outcome.out_dir + "/doctor.json\n";
}

}  // namespace trainlab
