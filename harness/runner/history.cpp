// history: one line per run folder (run.json), per diagnosis folder (diagnosis.json alone) or per
// doctor folder (doctor.json).
#include "harness/runner/history.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/run_record.h"
#include "core/statistics.h"
#include "diagnostics/diagnosis.h"
#include "harness/runner/doctor.h"
#include "harness/runner/text_table.h"

namespace fs = std::filesystem;

namespace trainlab {

namespace {

// A run's headline: the best variant's samples/s, the median over its repetitions (a sweep's
// variants are its points; an A/B run says A -> B).
std::string run_headline(const RunRecord& r) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<double>> samples_per_s;  // by variant, one value per repetition
  for (const VariantRecord& v : r.variants) {
    if (!v.ok()) continue;
    std::string key = v.spec.name();
    if (r.kind == "ab") key = v.label;
    if (r.kind == "sweep") key = v.spec.loader_label() + " batch=" + std::to_string(v.spec.batch_size);
    if (samples_per_s.count(key) == 0) order.push_back(key);
    samples_per_s[key].push_back(aggregate(v).samples_per_s);
  }
  const auto figure = [&](const std::string& key) { return fmt("%.1f", stats::median(samples_per_s.at(key))); };
  size_t repetitions = 1;
  for (const auto& [key, values] : samples_per_s) repetitions = std::max(repetitions, values.size());
  const std::string of_repetitions =
      repetitions > 1 ? " (median of " + std::to_string(repetitions) + " repetitions)" : "";
  std::string headline = "no variant completed";
  if (r.kind == "ab" && samples_per_s.count("A") > 0 && samples_per_s.count("B") > 0) {
    headline = "A " + figure("A") + " -> B " + figure("B") + " samples/s" + of_repetitions +
               ", B: " + (r.details.ab_changes.empty() ? std::string("changed") : r.details.ab_changes);
  } else if (!order.empty()) {
    const auto best = std::max_element(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
      return stats::median(samples_per_s.at(a)) < stats::median(samples_per_s.at(b));
    });
    headline = *best + " " + figure(*best) + " samples/s" + of_repetitions;
  }
  const auto count = [&](bool interrupted) {
    return static_cast<int>(std::count_if(r.variants.begin(), r.variants.end(), [&](const VariantRecord& v) {
      return !v.ok() && (v.error_kind == "interrupted") == interrupted;
    }));
  };
  const int failed = count(false), not_run = count(true);
  if (failed > 0) headline += " (" + std::to_string(failed) + " failed)";
  if (not_run > 0) headline += " (" + std::to_string(not_run) + " interrupted)";
  return headline;
}

// A doctor folder's line: the best measured change and its factor.
std::vector<std::string> doctor_row(const fs::path& dir) {
  const std::string id = dir.filename().string();
  DoctorOutcome d;
  try {
    d = read_doctor_file((dir / "doctor.json").string());
  } catch (const InputError&) {
    return {id, "-", "doctor", "-", "unreadable doctor.json"};
  }
  std::string scenario = "-";
  for (size_t i = 0; i + 1 < d.configuration.size(); ++i) {
    if (d.configuration[i] == "--scenario" || d.configuration[i] == "-s") scenario = d.configuration[i + 1];
  }
  const std::string headline =
      d.best_settings.empty() ? "no change measurably helped (" + std::to_string(d.trials.size()) + " tried)"
                              : "best " + d.best_settings + ": " + fmt("%.2fx", 1.0 + d.best_gain_pct / 100.0) + " samples/s";
  return {id, d.created_utc.empty() ? "-" : d.created_utc, "doctor", scenario, headline};
}

}  // namespace

std::string render_history(const std::string& results_dir) {
  std::error_code ec;
  if (!fs::is_directory(results_dir, ec)) throw InputError(results_dir + ": no such results folder");
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(results_dir, ec)) {
    // A folder that cannot be looked into (a symlink loop, no permission) is skipped, not fatal.
    if (entry.is_directory(ec) &&
        (fs::exists(entry.path() / "run.json", ec) || fs::exists(entry.path() / "diagnosis.json", ec) ||
         fs::exists(entry.path() / "doctor.json", ec))) {
      dirs.push_back(entry.path());
    }
  }
  std::sort(dirs.begin(), dirs.end());  // ids start with the UTC time: oldest first
  std::vector<std::vector<std::string>> rows;
  for (const fs::path& dir : dirs) {
    const std::string id = dir.filename().string();
    if (fs::exists(dir / "doctor.json", ec)) {
      rows.push_back(doctor_row(dir));
      continue;
    }
    if (!fs::exists(dir / "run.json", ec)) {
      try {
        const DiagnosisFile d = read_diagnosis_file((dir / "diagnosis.json").string());
        rows.push_back({id, d.created_utc.empty() ? "-" : d.created_utc, "diagnose", d.input.empty() ? "-" : d.input,
                        d.diagnoses.front().headline.empty() ? "-" : d.diagnoses.front().headline});
      } catch (const InputError&) {
        rows.push_back({id, "-", "diagnose", "-", "unreadable diagnosis.json"});
      }
      continue;
    }
    try {
      const RunRecord r = read_run_record(dir.string());
      rows.push_back({id, r.created_utc, r.kind, r.scenario, run_headline(r)});
    } catch (const InputError& e) {
      rows.push_back({id, "-", "-", "-", std::string("unreadable: ") + e.what()});
    }
  }
  if (rows.empty()) return "no runs in " + results_dir + "\n";
  return render_text_table({"id", "created (UTC)", "kind", "scenario / input", "headline"}, rows, true);
}

}  // namespace trainlab
