// history: one entry per run folder (run.json, with its diagnosis.json where there is one), per
// diagnosis folder (diagnosis.json alone) or per doctor folder (doctor.json); the table fitted to
// a width, and the JSON.
#include "harness/runner/history.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <vector>

#include "core/atomic_file.h"
#include "core/errors.h"
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

// "abc..xyz" / "abcdef.." within width chars (ASCII, so the columns stay aligned).
std::string shorten(const std::string& text, size_t width, bool keep_end) {
  if (text.size() <= width || width < 4) return text;
  if (!keep_end) return text.substr(0, width - 2) + "..";
  const size_t head = (width - 2) / 2;
  return text.substr(0, head) + ".." + text.substr(text.size() - (width - 2 - head));
}

}  // namespace

std::vector<HistoryEntry> read_history(const std::string& results_dir) {
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

Table history_table(const std::vector<HistoryEntry>& entries, size_t max_width_chars) {
  Table table;
  table.left_align_last = true;
  // Ranks x threads per rank, where some run had several ranks: there 2x2 and 2x1 on two cores are
  // runs apart; single-process folders keep their columns for the verdict.
  const bool show_layout = std::any_of(entries.begin(), entries.end(), [](const HistoryEntry& e) {
    return e.ranks && *e.ranks > 1;
  });
  table.columns = {{"run", "run"}, {"kind", "kind", /*left=*/true}, {"best", "best", /*left=*/true}};
  if (show_layout) table.columns.push_back({"ranks x thr", "ranks_x_threads"});
  table.columns.push_back({"samples/s", "samples_per_s"});
  table.columns.push_back({"verdict", "verdict"});
  for (const HistoryEntry& e : entries) {
    std::string best = e.best.empty() ? "-" : e.best;
    std::string samples_per_s = e.samples_per_s ? format_text("%.1f", *e.samples_per_s) : "-";
    if (e.gain_x) samples_per_s = format_text("%.2fx", *e.gain_x);
    std::string verdict = e.verdict.empty() ? "-" : e.verdict;
    if (e.verdict.empty() && e.a_samples_per_s && e.samples_per_s && *e.a_samples_per_s > 0) {
      verdict = "B/A " + format_text("%.2fx", *e.samples_per_s / *e.a_samples_per_s);
    }
    if (!e.problem.empty()) verdict = e.problem;
    if (e.running) verdict = "running";
    if (e.failed > 0) verdict += ", " + std::to_string(e.failed) + " failed";
    if (e.interrupted > 0) verdict += ", " + std::to_string(e.interrupted) + " interrupted";
    // "2x1": ranks x intra-op threads per rank ("2x?" where the threads were not recorded).
    const std::string layout =
        e.ranks ? std::to_string(*e.ranks) + "x" + (e.threads ? std::to_string(*e.threads) : "?") : "-";
    std::vector<TableCell> row = {text_cell(e.id), text_cell(e.kind), text_cell(best)};
    if (show_layout) row.push_back(text_cell(layout));
    row.push_back({samples_per_s, e.samples_per_s ? nlohmann::json(*e.samples_per_s) : nlohmann::json(nullptr)});
    row.push_back(text_cell(verdict));
    table.rows.push_back(row);
  }
  if (max_width_chars == 0) return table;
  // Too wide: shorten the best variant, then the verdict, then the run id (its middle), each down
  // to a floor, until the lines fit.
  const auto width_of = [&](size_t column) {
    size_t w = table.columns[column].title.size();
    for (const auto& row : table.rows) w = std::max(w, row[column].text.size());
    return w;
  };
  const auto total = [&] {
    size_t sum = 2 * (table.columns.size() - 1);
    for (size_t c = 0; c < table.columns.size(); ++c) sum += width_of(c);
    return sum;
  };
  const size_t verdict = table.columns.size() - 1;
  const std::pair<size_t, size_t> order[] = {{2, 15}, {verdict, 16}, {0, 24}, {verdict, 8}, {2, 8}};  // (column, floor)
  for (const auto& [column, floor] : order) {
    const size_t now = total();
    if (now <= max_width_chars) break;
    const size_t w = width_of(column);
    const size_t target = std::max(floor, w > now - max_width_chars ? w - (now - max_width_chars) : size_t{0});
    for (auto& row : table.rows) row[column].text = shorten(row[column].text, target, /*keep_end=*/column == 0);
  }
  return table;
}

nlohmann::json history_json(const std::string& results_dir, const std::vector<HistoryEntry>& entries) {
  nlohmann::json runs = nlohmann::json::array();
  const auto optional = [](const std::optional<double>& x) { return x ? nlohmann::json(*x) : nlohmann::json(nullptr); };
  const auto or_null = [](const std::string& s) { return s.empty() || s == "-" ? nlohmann::json(nullptr) : nlohmann::json(s); };
  for (const HistoryEntry& e : entries) {
    runs.push_back({{"run", e.id},
                    {"path", e.path},
                    {"created_utc", or_null(e.created_utc)},
                    {"kind", or_null(e.kind)},
                    {"scenario", or_null(e.scenario)},
                    {"has_run_record", e.has_run_record},
                    {"best", or_null(e.best)},
                    {"ranks", e.ranks ? nlohmann::json(*e.ranks) : nlohmann::json(nullptr)},
                    {"threads_per_rank", e.threads ? nlohmann::json(*e.threads) : nlohmann::json(nullptr)},
                    {"samples_per_s", optional(e.samples_per_s)},
                    {"a_samples_per_s", optional(e.a_samples_per_s)},
                    {"gain_x", optional(e.gain_x)},
                    {"repetitions", e.repetitions},
                    {"failed", e.failed},
                    {"interrupted", e.interrupted},
                    {"running", e.running},
                    {"verdict", or_null(e.verdict)},
                    {"headline", or_null(e.headline)},
                    {"problem", or_null(e.problem)}});
  }
  return {{"schema_version", 1}, {"tool", "trainlab"}, {"kind", "history"}, {"results", results_dir}, {"runs", runs}};
}

std::string render_history(const std::string& results_dir) {
  const std::vector<HistoryEntry> entries = read_history(results_dir);
  if (entries.empty()) return "no runs in " + results_dir + "\n";
  return render_table_text(history_table(entries, kHistoryWidthChars));
}

}  // namespace trainlab
