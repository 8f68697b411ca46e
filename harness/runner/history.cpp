// history: one entry per run folder (run.json, with its diagnosis.json where there is one), per
// diagnosis folder (diagnosis.json alone) or per doctor folder (doctor.json).
#include "harness/runner/history.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <vector>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/untrusted_input.h"
#include "core/run_record.h"
#include "core/statistics.h"
#include "diagnostics/diagnosis.h"
#include "harness/runner/doctor.h"
#include "harness/runner/run_liveness.h"
#include "core/text.h"

namespace fs = std::filesystem;

namespace trainlab {

namespace {

// How a variant ran: its ranks and each rank's intra-op threads (0: not recorded).
void set_layout(const VariantRecord& v, HistoryEntry& e) {
  e.ranks = v.world_size;
  if (v.environment.intra_op_threads > 0) e.threads = v.environment.intra_op_threads;
}

// A run's best variant (the median samples/s over its repetitions; a sweep's variants are its
// points; an A/B run's B with its A) and the headline line. A run still running (run_liveness.h):
// its variants not run yet are no interrupted ones.
void read_run(const RunRecord& r, RunState state, HistoryEntry& e) {
  const bool running = state == RunState::kRunning;
  std::vector<std::string> order;
  std::map<std::string, std::vector<double>> samples_per_s;  // by variant, one value per repetition
  for (const VariantRecord& v : r.variants) {
    if (!v.counts()) continue;  // failed, or disturbed and run again
    std::string key = v.spec.name();
    if (r.kind == "ab") key = v.label;
    if (r.kind == "sweep") key = v.spec.loader_label() + " batch=" + std::to_string(v.spec.batch_size);
    if (samples_per_s.count(key) == 0) order.push_back(key);
    samples_per_s[key].push_back(aggregate(v).samples_per_s);
  }
  const auto median = [&](const std::string& key) { return stats::median(samples_per_s.at(key)); };
  const auto figure = [&](const std::string& key) { return format_text("%.1f", median(key)); };
  for (const auto& [key, values] : samples_per_s) e.repetitions = std::max(e.repetitions, static_cast<int>(values.size()));
  const std::string of_repetitions =
      e.repetitions > 1 ? " (median of " + std::to_string(e.repetitions) + " repetitions)" : "";
  e.headline = "no variant completed";
  if (r.kind == "ab" && samples_per_s.count("A") > 0 && samples_per_s.count("B") > 0) {
    e.samples_per_s = median("B");
    e.a_samples_per_s = median("A");
    e.headline = "A " + figure("A") + " -> B " + figure("B") + " samples/s" + of_repetitions +
                 ", B: " + (r.details.ab_changes.empty() ? std::string("changed") : r.details.ab_changes);
    e.best = "B: " + (r.details.ab_changes.empty() ? std::string("changed") : r.details.ab_changes);
    for (const VariantRecord& v : r.variants) {
      if (v.ok() && v.label == "B") {
        set_layout(v, e);
        break;
      }
    }
  } else if (!order.empty()) {
    const auto best = std::max_element(order.begin(), order.end(),
                                       [&](const std::string& a, const std::string& b) { return median(a) < median(b); });
    e.best = *best;
    e.samples_per_s = median(*best);
    for (const VariantRecord& v : r.variants) {  // how it ran: 2 ranks x 2 threads on 2 cores reads apart
      const std::string key = r.kind == "sweep" ? v.spec.loader_label() + " batch=" + std::to_string(v.spec.batch_size)
                                                : v.spec.name();
      if (!v.ok() || key != *best) continue;
      set_layout(v, e);
      break;
    }
    e.headline = *best + " " + figure(*best) + " samples/s" + of_repetitions;
  }
  int not_run_yet = 0;
  for (const VariantRecord& v : r.variants) {
    if (v.ok()) continue;
    ++(v.error_kind != "interrupted" ? e.failed : running ? not_run_yet : e.interrupted);
  }
  if (running && order.empty()) e.headline = "still running: no variant finished yet";
  if (e.failed > 0) e.headline += " (" + std::to_string(e.failed) + " failed)";
  if (e.interrupted > 0) e.headline += " (" + std::to_string(e.interrupted) + " interrupted)";
  if (running && !order.empty()) {
    e.headline += " (still running: " + std::to_string(not_run_yet) + " not run yet)";
  }
  if (state == RunState::kEndedEarly) e.headline += " (ended before it finished: killed?)";
  e.running = running;
}

// The first diagnosis's verdict in a few words: "model compute (low)" or "inconclusive".
std::string verdict_words(const DiagnosisLine& d) {
  if (d.inconclusive || d.primary.empty()) return "inconclusive";
  std::string words = d.primary;
  std::replace(words.begin(), words.end(), '_', ' ');
  return words + (d.confidence.empty() ? "" : " (" + d.confidence + ")");
}

// A doctor folder: the best measured change and its factor.
void read_doctor(const fs::path& dir, HistoryEntry& e) {
  e.kind = "doctor";
  DoctorOutcome d;
  try {
    d = read_doctor_file((dir / "doctor.json").string());
  } catch (const InputError& err) {
    e.problem = std::string("unreadable: ") + err.what();
    e.headline = e.problem;
    return;
  }
  for (size_t i = 0; i + 1 < d.configuration.size(); ++i) {
    if (d.configuration[i] == "--scenario" || d.configuration[i] == "-s") e.scenario = d.configuration[i + 1];
  }
  if (!d.created_utc.empty()) e.created_utc = d.created_utc;
  e.verdict = d.diagnosis_headline;
  if (d.best_settings.empty()) {
    e.headline = "no change measurably helped (" + std::to_string(d.trials.size()) + " tried)";
  } else {
    e.best = d.best_settings;
    e.gain_x = 1.0 + d.best_gain_pct / 100.0;
    e.headline = "best " + d.best_settings + ": " + format_text("%.2fx", *e.gain_x) + " samples/s";
  }
  if (d.interrupted.empty()) return;
  // Stopped: the stages it stopped or kept from starting count as interrupted.
  e.interrupted = d.diagnosis_report.empty() ? 1 : 0;
  for (const DoctorTrial& t : d.trials) e.interrupted += t.verdict == "interrupted" || t.verdict.rfind("not run", 0) == 0;
  if (d.after_headline == "interrupted" || d.after_headline.rfind("not run", 0) == 0) ++e.interrupted;
  e.headline = "interrupted " + d.interrupted + (d.diagnosis_report.empty() ? "" : "; " + e.headline);
}

}  // namespace

std::vector<HistoryEntry> read_history(const std::string& results_dir) {
  std::error_code ec;
  if (!fs::is_directory(results_dir, ec)) throw InputError(results_dir + ": no such results folder");
  (void)side_file_limit_bytes();  // a bad TRAINLAB_MAX_FILE_MB is one line up front, not every run "unreadable"
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
  std::vector<HistoryEntry> entries;
  for (const fs::path& dir : dirs) {
    HistoryEntry e;
    e.id = dir.filename().string();
    e.path = (fs::path(results_dir) / e.id).string();
    e.created_utc = e.kind = e.scenario = "-";
    if (fs::exists(dir / "doctor.json", ec)) {
      read_doctor(dir, e);
      entries.push_back(e);
      continue;
    }
    if (fs::exists(dir / "run.json", ec)) {
      e.has_run_record = true;
      try {
        const RunRecord r = read_run_record(dir.string());
        e.created_utc = r.created_utc;
        e.kind = r.kind;
        e.scenario = r.scenario;
        read_run(r, run_state(dir.string()), e);
      } catch (const InputError& err) {
        e.problem = std::string("unreadable: ") + err.what();
        e.headline = e.problem;
        entries.push_back(e);
        continue;
      }
    } else {
      e.kind = "diagnose";
    }
    if (fs::exists(dir / "diagnosis.json", ec)) {
      try {
        const DiagnosisFile d = read_diagnosis_file((dir / "diagnosis.json").string());
        e.verdict = verdict_words(d.diagnoses.front());
        if (!e.has_run_record) {
          if (!d.created_utc.empty()) e.created_utc = d.created_utc;
          if (!d.input.empty()) e.scenario = d.input;
          e.headline = d.diagnoses.front().headline.empty() ? "-" : d.diagnoses.front().headline;
        }
      } catch (const InputError&) {
        if (!e.has_run_record) {
          e.problem = "unreadable diagnosis.json";
          e.headline = e.problem;
        }
      }
    }
    entries.push_back(e);
  }
  return entries;
}

}  // namespace trainlab
