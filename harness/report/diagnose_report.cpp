// diagnose's renderings: the three tables of a diagnosis, the terminal and markdown summaries, the
// JSON document printed and the one written as diagnosis.json (see diagnose_report.h).
#include "harness/report/diagnose_report.h"

#include "core/json_text.h"
#include "core/text.h"
#include "diagnostics/diagnosis.h"
#include "diagnostics/job_diagnosis.h"
#include "diagnostics/verdict.h"

#include <algorithm>
#include <map>

#include "diagnostics/lab_measured.h"
#include "diagnostics/series.h"

namespace trainlab {
namespace {

// The first clause of an action, for a one-line summary: up to " (", "; " or ". ", at most 72 characters.
std::string action_gist(const std::string& action) {
  size_t end = action.size();
  for (const char* stop : {" (", "; ", ". ", ": "}) end = std::min(end, action.find(stop));
  std::string gist = action.substr(0, end);
  if (!gist.empty() && gist.back() == '.') gist.pop_back();
  if (gist.size() > 72) gist = gist.substr(0, 69) + "...";
  return gist;
}

const Diagnosis* diagnosis_of(const DiagnoseOutcome& outcome, const LabRepetition& r) {
  return r.diagnosis && *r.diagnosis < outcome.diagnoses.size() ? &outcome.diagnoses[*r.diagnosis] : nullptr;
}

std::string suspect_of(const Diagnosis& d) {
  return d.verdict.inconclusive ? std::string("inconclusive") : suspect_words(d.verdict.primary);
}

// "3 fp32 #1, 2 bf16 #1: disturbed (run again)"-style: the left-out repetitions, in one line.
std::string left_out_line(const LabAnswer& lab) {
  std::vector<std::pair<std::string, int>> labels;  // in order, with how many times
  std::map<std::string, int> kinds;
  for (const LabRepetition& r : lab.repetitions) {
    if (r.counted) continue;
    auto it = std::find_if(labels.begin(), labels.end(), [&](const auto& l) { return l.first == r.label; });
    if (it == labels.end()) labels.push_back({r.label, 1}); else ++it->second;
    ++kinds[r.left_out.substr(0, r.left_out.find(':'))];
  }
  if (labels.empty()) return "";
  std::string names, why;
  for (const auto& [label, n] : labels) names += (names.empty() ? "" : ", ") + label + (n > 1 ? format_text(" (%d times)", n) : "");
  for (const auto& [kind, n] : kinds) why += (why.empty() ? "" : ", ") + std::to_string(n) + " " + kind;
  return "Left out of every figure: " + names + " (" + why + "; --all shows them).";
}

// The profile's answer for one variant over its kept repetitions: the suspect most of them name and
// the first action most of them rank first, with its median saving.
std::string variant_profile_line(const DiagnoseOutcome& outcome, const LabAnswer& lab, const std::string& name) {
  std::map<std::string, int> suspects;
  std::map<std::string, std::vector<double>> first_savings;
  std::map<std::string, std::string> first_text;
  int kept = 0;
  for (const LabRepetition& r : lab.repetitions) {
    const Diagnosis* d = diagnosis_of(outcome, r);
    if (!r.counted || d == nullptr || d->summary.label.rfind(name, 0) != 0) continue;
    const std::string rest = d->summary.label.substr(name.size());
    if (!rest.empty() && rest.rfind(" #", 0) != 0) continue;  // "bf16" is not "bf16+compiled #1"
    ++kept;
    ++suspects[suspect_of(*d)];
    if (!d->verdict.actions.empty()) {
      const RankedAction& a = d->verdict.actions.front();
      first_savings[a.rule_id].push_back(a.saving_pct);
      if (first_text.count(a.rule_id) == 0) first_text[a.rule_id] = action_gist(a.action);
    }
  }
  if (kept == 0) return "";
  const auto top_suspect = std::max_element(suspects.begin(), suspects.end(),
                                            [](const auto& a, const auto& b) { return a.second < b.second; });
  std::string line = name + ": " + top_suspect->first + " (" + std::to_string(top_suspect->second) + " of " +
                     std::to_string(kept) + ")";
  if (first_savings.empty()) return line + "; no action saves step time";
  const auto top_action = std::max_element(first_savings.begin(), first_savings.end(),
                                           [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
  return line + "; first action: " + first_text[top_action->first] +
         format_text(" (%.1f %% of the step, median of %zu)", series::median(top_action->second),
                     top_action->second.size());
}

}  // namespace

std::vector<std::string> lab_answer_lines(const DiagnoseOutcome& outcome) {
  std::vector<std::string> lines;
  if (!outcome.lab) return lines;
  const LabAnswer& lab = *outcome.lab;
  std::string names, kept;
  bool same_kept = true;
  for (const LabVariantAnswer& v : lab.variants) {
    names += (names.empty() ? "" : ", ") + v.name;
    kept += (kept.empty() ? "" : ", ") + std::to_string(v.samples_per_s.size());
    same_kept = same_kept && v.samples_per_s.size() == lab.variants.front().samples_per_s.size();
  }
  int left_out = 0;
  for (const LabRepetition& r : lab.repetitions) left_out += r.counted ? 0 : 1;
  lines.push_back("Lab" + (lab.scenario.empty() ? std::string() : " of " + lab.scenario) + ": " + names + "; " +
                  (same_kept ? count_noun(static_cast<int64_t>(lab.variants.front().samples_per_s.size()),
                                          "kept repetition") + " each"
                             : "kept repetitions " + kept) +
                  (left_out > 0 ? ", " + std::to_string(left_out) + " left out of every figure" : ""));
  size_t width = 7;
  for (const LabVariantAnswer& v : lab.variants) width = std::max(width, v.name.size());
  lines.push_back("  " + format_text("%-*s %10s  %s", static_cast<int>(width), "variant", "samples/s", "gain measured by the lab"));
  for (const LabVariantAnswer& v : lab.variants) {
    const std::string sps = v.samples_per_s.empty() ? "-" : format_text("%.1f", v.median_samples_per_s);
    const std::string gain = v.gain ? measured_gain_words(*v.gain)
                             : v.samples_per_s.empty() ? "not measured" + (v.not_measured.empty() ? "" : ": " + v.not_measured)
                                                       : "";
    std::string row = "  " + format_text("%-*s %10s  %s", static_cast<int>(width), v.name.c_str(), sps.c_str(), gain.c_str());
    while (!row.empty() && row.back() == ' ') row.pop_back();
    lines.push_back(std::move(row));
  }
  std::vector<std::string> profile;
  for (const LabVariantAnswer& v : lab.variants) {
    const std::string line = variant_profile_line(outcome, lab, v.name);
    if (!line.empty()) profile.push_back("  Profile, " + line);
  }
  // The reading as run.json holds it, within the 15 lines: the conclusion (its last line) always kept.
  const size_t budget = kLabAnswerMaxLines - lines.size() - profile.size();
  std::vector<std::string> reading = lab.reading;
  if (reading.size() > budget && budget >= 3) {
    const size_t cut = reading.size() - (budget - 2) - 1;
    std::vector<std::string> shorter(reading.begin(), reading.begin() + static_cast<long>(budget - 2));
    shorter.push_back(format_text("(%zu more lines of the lab's reading: run.json)", cut));
    shorter.push_back(reading.back());
    reading = std::move(shorter);
  }
  for (const std::string& line : reading) lines.push_back("  " + line);
  for (std::string& line : profile) lines.push_back(std::move(line));
  return lines;
}

std::vector<std::string> lab_repetition_lines(const DiagnoseOutcome& outcome) {
  std::vector<std::string> lines;
  if (!outcome.lab) return lines;
  const LabAnswer& lab = *outcome.lab;
  size_t width = 0;
  for (const LabRepetition& r : lab.repetitions) width = std::max(width, r.label.size());
  lines.push_back("Kept repetitions, one line each (--all: every repetition's full diagnosis):");
  for (const LabRepetition& r : lab.repetitions) {
    if (!r.counted) continue;
    const Diagnosis* d = diagnosis_of(outcome, r);
    std::string line = "  " + format_text("%-*s %8.1f samples/s", static_cast<int>(width), r.label.c_str(), r.samples_per_s);
    if (d != nullptr) {
      line += "  " + suspect_of(*d) + (d->verdict.inconclusive ? "" : " (" + d->verdict.confidence + ")");
      if (!d->verdict.actions.empty())
        line += format_text("; 1. %s (%.1f %%)", action_gist(d->verdict.actions.front().action).c_str(),
                            d->verdict.actions.front().saving_pct);
    }
    lines.push_back(line);
  }
  if (const std::string left = left_out_line(lab); !left.empty()) lines.push_back(left);
  return lines;
}

nlohmann::json to_json(const LabAnswer& lab) {
  nlohmann::json variants = nlohmann::json::array();
  for (const LabVariantAnswer& v : lab.variants) {
    nlohmann::json gain = nullptr;
    if (v.gain) {
      gain = {{"comparison", v.gain->comparison}, {"change", v.gain->change},     {"gain_pct", v.gain->gain_pct},
              {"low_pct", v.gain->low_pct},       {"high_pct", v.gain->high_pct}, {"has_interval", v.gain->has_interval},
              {"repetitions", v.gain->repetitions}};
    }
    variants.push_back({{"name", v.name},
                        {"kept_repetitions", v.samples_per_s.size()},
                        {"samples_per_s", v.samples_per_s},
                        {"median_samples_per_s", v.median_samples_per_s},
                        {"gain", gain},
                        {"not_measured", v.not_measured}});
  }
  nlohmann::json repetitions = nlohmann::json::array();
  for (const LabRepetition& r : lab.repetitions) {
    repetitions.push_back({{"label", r.label},
                           {"counted", r.counted},
                           {"left_out", r.left_out},
                           {"samples_per_s", r.samples_per_s},
                           {"diagnosis", r.diagnosis ? nlohmann::json(*r.diagnosis) : nlohmann::json(nullptr)}});
  }
  return {{"scenario", lab.scenario}, {"variants", variants}, {"reading", lab.reading},
          {"repetitions", repetitions}, {"report_shows", lab.shown}};
}

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
  if (outcome.lab) document["lab"] = to_json(*outcome.lab);
  return document;
}

nlohmann::json diagnoses_json(const DiagnoseOutcome& outcome) {
  nlohmann::json document = diagnosis_file_json(outcome);
  document["diagnosis_json"] = outcome.out_dir + "/diagnosis.json";
  document["report_html"] = outcome.out_dir + "/report.html";
  return document;
}

std::string render_diagnoses(const DiagnoseOutcome& outcome, OutputFormat format, bool all) {
  const std::string diagnosis_json = outcome.out_dir + "/diagnosis.json";
  const std::string report_html = outcome.out_dir + "/report.html";
  if (format == OutputFormat::kJson) return json_text(diagnoses_json(outcome), 2) + "\n";
  std::string out;
  if (outcome.lab) {
    // The lab's answer first, then one line per kept repetition; --all adds every full diagnosis.
    const bool table = format == OutputFormat::kTable;
    out += table ? "" : "### Lab\n\n```\n";
    for (const std::string& line : lab_answer_lines(outcome)) out += line + "\n";
    out += table ? "\n" : "```\n\n```\n";
    for (const std::string& line : lab_repetition_lines(outcome)) out += line + "\n";
    out += table ? "" : "```\n";
    if (!all) return out + "\nDiagnosis: " + diagnosis_json + ", report " + report_html + "\n";
    out += "\n";
  }
  if (outcome.job) {
    out += format == OutputFormat::kTable ? render_job_text(*outcome.job) + "\n"
                                          : "### Job\n\n```\n" + render_job_text(*outcome.job) + "```\n\n";
  } else if (!outcome.no_job_verdict.empty()) {
    out += (format == OutputFormat::kTable ? "" : "**") + std::string("No job verdict") +
           (format == OutputFormat::kTable ? "" : "**") + ": " + outcome.no_job_verdict + "\n\n";
  }
  for (size_t i = 0; i < outcome.diagnoses.size(); ++i) {
    const Diagnosis& d = outcome.diagnoses[i];
    if (outcome.lab && i < outcome.lab->repetitions.size() && !outcome.lab->repetitions[i].counted)
      out += (format == OutputFormat::kTable ? "" : "> ") + d.summary.label + ": left out of the lab's figures, " +
             outcome.lab->repetitions[i].left_out + "\n";
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
