// `trainlab validate`: seeded cases -> `trainlab profile` children -> their diagnosis.json ->
// confusion matrix. Each case runs alone (the machine measures one bottleneck at a time).
#include "harness/runner/validate.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>
#include <sstream>

#include "core/bounded_json.h"
#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/json_fields.h"
#include "core/json_text.h"
#include "harness/process/progress_ticker.h"
#include "core/text.h"
#include "diagnostics/diagnosis.h"
#include "harness/process/child_process.h"
#include "harness/report/validate_report.h"
#include "harness/runner/lab.h"
#include "core/text.h"
#include "trainlab/default_seeded_cases.h"  // generated: kDefaultSeededCasesJson

namespace fs = std::filesystem;

namespace trainlab {
namespace {

CaseResult run_case(const SeededCase& seeded, const std::string& cases_dir, const ValidateOptions& options,
                    ProgressTicker& ticker, size_t k, size_t n, double elapsed_s) {
  CaseResult result;
  result.seeded = seeded;
  const std::string case_dir = cases_dir + "/" + seeded.name;
  ensure_writable_dir(case_dir);
  std::vector<std::string> args = {"profile"};
  args.insert(args.end(), seeded.args.begin(), seeded.args.end());
  args.insert(args.end(), {"--results", case_dir});
  const ChildOutcome outcome = run_self_as_watched_child(args, case_dir + "/profile.log", options.case_timeout_s, ticker,
                                                         k, n, seeded.name, case_dir + "/.progress", elapsed_s);
  result.wall_s = outcome.wall_s;
  result.run_dir = run_folder_in(case_dir);
  const std::string diagnosis_path = result.run_dir.empty() ? "" : result.run_dir + "/diagnosis.json";
  std::error_code ec;
  if (diagnosis_path.empty() || !fs::exists(diagnosis_path, ec)) {
    result.named = "error: " + outcome.describe() + ": " + last_line_of(case_dir + "/profile.log");
    return result;
  }
  DiagnosisLine d;
  try {
    d = read_diagnosis_file(diagnosis_path).diagnoses.front();
  } catch (const InputError& e) {
    result.named = std::string("error: unreadable ") + e.what();
    return result;
  }
  result.named = d.inconclusive ? "inconclusive" : (d.primary.empty() ? "?" : d.primary);
  result.confidence = d.confidence;
  result.headline = d.headline;
  for (const FindingLine& f : d.findings) result.fired.push_back(f.rule);
  bool findings_ok = true;
  for (const std::string& expected : seeded.expect_findings) {
    if (std::find(result.fired.begin(), result.fired.end(), expected) == result.fired.end())
      findings_ok = false;
  }
  const bool efficiency_ok =
      !seeded.expect_efficiency || result.headline.find("peak FLOP/s") != std::string::npos &&
                                       result.headline.find("unknown") == std::string::npos;
  // The expected advice: the first action, and words no action or finding may hold.
  if (!d.actions.empty()) result.first_action = d.actions.front().rule;
  if (!seeded.first_action_rules.empty()) {
    if (std::find(seeded.first_action_rules.begin(), seeded.first_action_rules.end(), result.first_action) ==
        seeded.first_action_rules.end()) {
      result.advice_wrong.push_back("first action " + (result.first_action.empty() ? "none" : result.first_action));
    } else if (d.actions.front().action.find(seeded.first_action_words) == std::string::npos) {
      result.advice_wrong.push_back("first action without '" + seeded.first_action_words + "'");
    }
  }
  for (const std::string& words : seeded.never) {
    bool said = false;
    for (const ActionLine& a : d.actions) said |= a.action.find(words) != std::string::npos;
    for (const FindingLine& f : d.findings) said |= f.title.find(words) != std::string::npos;
    if (said) result.advice_wrong.push_back("says '" + words + "'");
  }
  result.correct = result.named == seeded.expect && findings_ok && efficiency_ok && result.advice_wrong.empty();
  return result;
}

}  // namespace

std::vector<SeededCase> parse_seeded_cases(const std::string& json_text, const std::string& origin) {
  const nlohmann::json j = parse_bounded_json(json_text, origin);
  if (j.is_discarded() || !j.is_object()) throw InputError(origin + ": not valid JSON");
  if (!j.contains("schema_version") || j["schema_version"] != 1) throw InputError(origin + ": schema_version must be 1");
  if (!j.contains("cases") || !j["cases"].is_array() || j["cases"].empty()) {
    throw InputError(origin + ": needs a non-empty \"cases\" array");
  }
  std::vector<SeededCase> cases;
  std::set<std::string> names;
  for (const nlohmann::json& c : j["cases"]) {
    try {
      SeededCase s;
      s.name = c.at("name").get<std::string>();
      s.expect = c.at("expect").get<std::string>();
      s.args = c.at("args").get<std::vector<std::string>>();
      // The case file's optional keys, with what leaving them out means.
      s.expect_findings = optional_field<std::vector<std::string>>(c, "expect_findings", {});
      s.expect_efficiency = optional_field<bool>(c, "expect_efficiency", false);
      s.ci = optional_field<bool>(c, "ci", false);
      s.why = optional_field<std::string>(c, "why", "");
      s.first_action_rules = optional_field<std::vector<std::string>>(c, "first_action_rules", {});
      s.first_action_words = optional_field<std::string>(c, "first_action_words", "");
      s.never = optional_field<std::vector<std::string>>(c, "never", {});
      if (std::find(kSeededCaseSuspects.begin(), kSeededCaseSuspects.end(), s.expect) == kSeededCaseSuspects.end()) {
        throw InputError("case '" + s.name +
                         "': expect must be one of data_pipeline, model_compute, "
                         "communication, framework_overhead");
      }
      if (s.name.empty() || s.name.find('/') != std::string::npos || !names.insert(s.name).second) {
        throw InputError("case name '" + s.name + "' is empty, has a '/' or is used twice");
      }
      cases.push_back(std::move(s));
    } catch (const nlohmann::json::exception& e) {
      throw InputError(origin + ": malformed case: " + e.what());
    } catch (const InputError& e) {
      throw InputError(origin + ": " + e.what());
    }
  }
  return cases;
}

ValidateOutcome run_validation(const ValidateOptions& options, std::ostream& progress) {
  const std::vector<SeededCase> all =
      options.cases_path.empty() ? parse_seeded_cases(kDefaultSeededCasesJson, "configs/seeded_cases.json")
                                 : parse_seeded_cases(read_file(options.cases_path), options.cases_path);
  std::vector<SeededCase> chosen;
  for (const std::string& name : options.only) {
    if (std::none_of(all.begin(), all.end(), [&](const SeededCase& c) { return c.name == name; })) {
      std::string known;
      for (const SeededCase& c : all) known += (known.empty() ? "" : ", ") + c.name;
      throw InputError("unknown seeded case '" + name + "' (cases: " + known + ")");
    }
  }
  for (const SeededCase& c : all) {
    const bool named = std::find(options.only.begin(), options.only.end(), c.name) != options.only.end();
    if (options.only.empty() ? (!options.ci_subset || c.ci) : named) chosen.push_back(c);
  }
  ValidateOutcome outcome;
  ensure_writable_dir(options.results_dir);
  std::string run_id;
  outcome.out_dir = make_run_dir(options.results_dir, "seeded", "validate", &run_id);
  progress << "trainlab validate: " << count_noun(chosen.size(), "seeded case") << ", results in " << outcome.out_dir
           << std::endl;
  ProgressTicker ticker(progress, options.live_progress);
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < chosen.size(); ++i) {
    const std::string line = "  [" + std::to_string(i + 1) + "/" + std::to_string(chosen.size()) + "] " +
                             chosen[i].name + " (expect " + chosen[i].expect + ") ...";
    if (!ticker.live()) progress << line << std::flush;  // live: the ticker's line stands in until the case ends
    const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    outcome.cases.push_back(run_case(chosen[i], outcome.out_dir + "/cases", options, ticker, i + 1, chosen.size(), elapsed_s));
    const CaseResult& r = outcome.cases.back();
    if (ticker.live()) progress << line;
    progress << " named " << r.named << (r.correct ? "" : "  <-- WRONG") << " (" << format_text("%.0f", r.wall_s)
             << " s)" << std::endl;
  }
  outcome.all_correct =
      std::all_of(outcome.cases.begin(), outcome.cases.end(), [](const CaseResult& r) { return r.correct; });

  write_file_atomically(outcome.out_dir + "/validate.json", json_text(validation_json(outcome), 2) + "\n");
  return outcome;
}

}  // namespace trainlab
