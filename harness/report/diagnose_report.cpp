// diagnose's renderings: the three tables of a diagnosis, the terminal and markdown summaries, the
// JSON document printed and the one written as diagnosis.json (see diagnose_report.h).
#include "harness/report/diagnose_report.h"

#include "core/json_text.h"
#include "core/text.h"
#include "diagnostics/diagnosis.h"
#include "diagnostics/job_diagnosis.h"
#include "diagnostics/verdict.h"

namespace trainlab {

Table attribution_table(const Diagnosis& d) {
  Table table;
  table.columns = {{"suspect", "suspect"}, {"share %", "share_pct"}, {"low %", "low_pct"}, {"high %", "high_pct"}};
  for (const SuspectShare& a : d.verdict.attribution) {
    table.rows.push_back({{suspect_words(a.suspect), to_string(a.suspect)}, number_cell(a.share_pct, "%.1f"),
                          number_cell(a.low_pct, "%.1f"), number_cell(a.high_pct, "%.1f")});
  }
  return table;
}

Table findings_table(const Diagnosis& d) {
  Table table;
  table.left_align_last = true;
  table.columns = {{"severity", "severity"}, {"rule", "rule", /*left=*/true}, {"fired", "times_fired"},
                   {"of", "data_points"},    {"finding", "title"}};
  for (const Finding& f : d.findings) {
    table.rows.push_back({text_cell(to_string(f.severity)), text_cell(f.rule_id),
                          number_cell(static_cast<double>(f.times_fired), "%.0f"),
                          number_cell(static_cast<double>(f.data_points), "%.0f"), text_cell(f.title)});
  }
  return table;
}

Table actions_table(const Diagnosis& d) {
  Table table;
  table.left_align_last = true;
  table.columns = {{"#", "rank"}, {"saves %", "saving_pct"}, {"speed-up", "speedup_x"}, {"action", "action"}};
  int n = 0;
  for (const RankedAction& a : d.verdict.actions) {
    ++n;
    table.rows.push_back({number_cell(n, "%.0f"), number_cell(a.saving_pct, "%.1f"), number_cell(a.speedup, "%.1fx"),
                          text_cell(a.action)});
  }
  return table;
}

nlohmann::json diagnosis_file_json(const DiagnoseOutcome& outcome) {
  nlohmann::json document =
      diagnosis_document(outcome.diagnoses, outcome.input, utc_now("%Y-%m-%dT%H:%M:%SZ"), outcome.gate_reasons,
                         outcome.unreadable_traces);
  if (outcome.job) document["job"] = to_json(*outcome.job);
  if (!outcome.no_job_verdict.empty()) document["no_job_verdict"] = outcome.no_job_verdict;
  return document;
}

nlohmann::json diagnoses_json(const DiagnoseOutcome& outcome) {
  nlohmann::json document = diagnosis_file_json(outcome);
  document["diagnosis_json"] = outcome.out_dir + "/diagnosis.json";
  document["report_html"] = outcome.out_dir + "/report.html";
  return document;
}

std::string render_diagnoses(const DiagnoseOutcome& outcome, OutputFormat format) {
  const std::string diagnosis_json = outcome.out_dir + "/diagnosis.json";
  const std::string report_html = outcome.out_dir + "/report.html";
  if (format == OutputFormat::kJson) return json_text(diagnoses_json(outcome), 2) + "\n";
  std::string out;
  if (outcome.job) {
    out += format == OutputFormat::kTable ? render_job_text(*outcome.job) + "\n"
                                          : "### Job\n\n```\n" + render_job_text(*outcome.job) + "```\n\n";
  } else if (!outcome.no_job_verdict.empty()) {
    out += (format == OutputFormat::kTable ? "" : "**") + std::string("No job verdict") +
           (format == OutputFormat::kTable ? "" : "**") + ": " + outcome.no_job_verdict + "\n\n";
  }
  for (const Diagnosis& d : outcome.diagnoses) {
    if (format == OutputFormat::kTable) {
      out += render_diagnosis_text(d) + "\n";
      continue;
    }
    const Summary& s = d.summary;
    out += "### Diagnosis " + s.label +
           (s.world_size > 1 ? " (rank " + std::to_string(s.rank) + " of " + std::to_string(s.world_size) + ")" : "") +
           "\n\n" + std::to_string(s.step_ms.size()) + (s.step_ms.size() == 1 ? " step" : " steps") + ", step p50 " +
           format_text("%.1f", s.step.p50) + " ms (p95 " + format_text("%.1f", s.step.p95) + " ms), " + s.device + "\n\n";
    if (d.verdict.inconclusive) {
      out += "**Verdict: inconclusive**\n\n";
      for (const std::string& reason : d.verdict.inconclusive_reasons) out += "- " + reason + "\n";
    } else {
      out += "**Verdict: " + suspect_words(d.verdict.primary) + "** (confidence " + d.verdict.confidence + ") — " +
             d.verdict.headline + "\n\n";
      for (const std::string& reason : d.verdict.confidence_reasons) out += "- confidence: " + reason + "\n";
      for (const std::string& secondary : d.verdict.secondary) out += "- secondary: " + secondary + "\n";
    }
    out += "\nStep time by suspect:\n\n" + render_table_markdown(attribution_table(d));
    if (!d.findings.empty()) out += "\nFindings:\n\n" + render_table_markdown(findings_table(d));
    if (!d.verdict.actions.empty()) out += "\nActions, by the time they could save:\n\n" + render_table_markdown(actions_table(d));
    for (const std::string& note : s.notes) out += "\n> note: " + note + "\n";
    out += "\n";
  }
  for (const UnreadableTrace& t : outcome.unreadable_traces) out += "Not diagnosed: " + t.file + ": " + t.reason + "\n";
  return out + "Diagnosis: " + diagnosis_json + ", report " + report_html + "\n";
}

}  // namespace trainlab
