// compare's three renderings: the terminal table, markdown and the JSON document, each with the
// gate's footer (see compare_report.h).
#include "harness/report/compare_report.h"

#include "core/output_format.h"
#include "core/text.h"

namespace trainlab {

namespace {

std::string signed_pct(double value, bool points) { return format_text(points ? "%+.1f pt" : "%+.1f %%", value); }

// The comparison's rows: variant and metric (words), before, after, change, interval, U p, verdict.
Table compare_rows_table(const CompareOutcome& outcome) {
  std::vector<std::vector<std::string>> rows;
  for (const CompareRow& r : outcome.rows) {
    const char* value_format = r.metric == "samples/s" || r.metric == "peak memory MiB" ? "%.1f" : "%.2f";
    rows.push_back({r.variant, r.metric, format_text(value_format, r.before), format_text(value_format, r.after),
                    signed_pct(r.change.change_pct, r.in_points),
                    r.has_interval ? "[" + signed_pct(r.change.low_pct, r.in_points) + ", " +
                                         signed_pct(r.change.high_pct, r.in_points) + "]"
                                   : "-",
                    r.p_value ? format_text("%.3g", *r.p_value) : "-",
                    r.verdict + (r.gated || r.verdict == "unchanged" ? "" : " (not gated)")});
  }
  Table table = text_table({"variant", "metric", "before", "after", "change", "95 % interval", "U p", "verdict"}, rows,
                           /*left_align_last=*/true);
  table.columns[1].left = true;
  return table;
}

std::string footer(const CompareOutcome& outcome, const CompareOptions& options) {
  std::string out = "threshold " + format_text("%.1f", options.threshold_pct) + " %, max regression " +
                    format_text("%.1f", options.max_regression_pct) + " %: " +
                    (outcome.gate_failed ? "REGRESSION beyond the maximum" : "no gated regression beyond the maximum");
  if (!outcome.ungated_regressions.empty()) {
    std::string rows;
    for (const std::string& r : outcome.ungated_regressions) rows += (rows.empty() ? "" : ", ") + r;
    out += "\nnot gated: " + rows + " regressed beyond the maximum on fewer than 3 runs a side, which cannot tell "
           "a change from run-to-run drift; repeat both runs (--repeat 3) or run an interleaved A/B (run --ab) to gate";
  }
  return out;
}

}  // namespace

std::string render_compare_table(const CompareOutcome& outcome, const CompareOptions& options) {
  std::string out = "compare " + outcome.before_label + " -> " + outcome.after_label + "\n\n";
  for (const std::string& c : outcome.changed) out += "changed: " + c + "\n";
  if (!outcome.changed.empty()) out += "\n";
  out += render_table_text(compare_rows_table(outcome));
  for (const std::string& w : outcome.warnings) out += "warning: " + w + "\n";
  return out + footer(outcome, options) + "\n";
}

std::string render_compare_markdown(const CompareOutcome& outcome, const CompareOptions& options) {
  std::string out = "**trainlab compare** `" + outcome.before_label + "` → `" + outcome.after_label + "`\n\n" +
                    render_table_markdown(compare_rows_table(outcome)) + "\n";
  for (const std::string& c : outcome.changed) out += "> changed: " + c + "\n";
  for (const std::string& w : outcome.warnings) out += "> warning: " + w + "\n";
  return out + "\n" + footer(outcome, options) + "\n";
}

nlohmann::json compare_json(const CompareOutcome& outcome, const CompareOptions& options) {
  nlohmann::json rows = nlohmann::json::array();
  for (const CompareRow& r : outcome.rows) {
    rows.push_back({{"variant", r.variant},
                    {"metric", r.metric},
                    {"higher_is_better", r.higher_is_better},
                    {"unit_of_change", r.in_points ? "points" : "pct"},
                    {"before", r.before},
                    {"after", r.after},
                    {"change", r.change.change_pct},
                    {"interval", r.has_interval ? nlohmann::json::array({r.change.low_pct, r.change.high_pct})
                                                : nlohmann::json(nullptr)},
                    {"mann_whitney_p", r.p_value ? nlohmann::json(*r.p_value) : nlohmann::json(nullptr)},
                    {"verdict", r.verdict},
                    {"gated", r.gated}});
  }
  return output_document("compare", {{"before", outcome.before_label},
                                     {"after", outcome.after_label},
                                     {"threshold_pct", options.threshold_pct},
                                     {"max_regression_pct", options.max_regression_pct},
                                     {"rows", rows},
                                     {"warnings", outcome.warnings},
                                     {"changed", outcome.changed},
                                     {"gate_failed", outcome.gate_failed},
                                     {"ungated_regressions", outcome.ungated_regressions}});
}

}  // namespace trainlab
