// history's renderings: the table fitted to a width, and the JSON (see history_report.h).
#include "harness/report/history_report.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "core/text.h"

namespace trainlab {

namespace {

// "abc..xyz" / "abcdef.." within width chars (ASCII, so the columns stay aligned).
std::string shorten(const std::string& text, size_t width, bool keep_end) {
  if (text.size() <= width || width < 4) return text;
  if (!keep_end) return text.substr(0, width - 2) + "..";
  const size_t head = (width - 2) / 2;
  return text.substr(0, head) + ".." + text.substr(text.size() - (width - 2 - head));
}

}  // namespace

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
    // A folder's name (and what a record says) may hold newlines or escape sequences: shown escaped.
    std::vector<TableCell> row = {text_cell(one_line(e.id)), text_cell(one_line(e.kind)), text_cell(one_line(best))};
    if (show_layout) row.push_back(text_cell(layout));
    row.push_back({samples_per_s, e.samples_per_s ? nlohmann::json(*e.samples_per_s) : nlohmann::json(nullptr)});
    row.push_back(text_cell(one_line(verdict)));
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
  return output_document("history", {{"results", results_dir}, {"runs", runs}});
}

std::string render_history_text(const std::string& results_dir, const std::vector<HistoryEntry>& entries) {
  if (entries.empty()) return "no runs in " + one_line(results_dir) + "\n";
  return render_table_text(history_table(entries, kHistoryWidthChars));
}

}  // namespace trainlab
