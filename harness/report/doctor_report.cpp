// doctor's renderings: the trials table, the terminal and markdown report, the JSON document and
// the folder's report.html with each trial's gain drawn (see doctor_report.h).
#include "harness/report/doctor_report.h"

#include <algorithm>
#include <filesystem>

#include "core/json_text.h"
#include "core/text.h"

namespace fs = std::filesystem;

namespace trainlab {

// "" as null in doctor.json (and in doctor_json's document).
nlohmann::json string_or_null(const std::string& text) {
  return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text);
}

Table doctor_trials_table(const DoctorOutcome& outcome) {
  Table table;
  table.left_align_last = true;
  table.columns = {{"change", "change"},
                   {"settings", "settings"},
                   {"samples/s", "gain_pct"},
                   {"95 % interval", "interval_pct"},
                   {"verdict", "verdict"}};
  for (const DoctorTrial& t : outcome.trials) {
    table.rows.push_back({text_cell(t.change), text_cell(t.settings), number_cell(t.gain_pct, "%+.1f %%"),
                          {"[" + format_text("%+.1f", t.low_pct) + ", " + format_text("%+.1f", t.high_pct) + "]",
                           nlohmann::json::array({t.low_pct, t.high_pct})},
                          text_cell(t.verdict)});
  }
  return table;
}

nlohmann::json doctor_json(const DoctorOutcome& outcome) {
  return output_document(
      "doctor", {{"doctor", outcome.out_dir + "/doctor.json"},
                 {"report", outcome.out_dir + "/report.html"},
                 {"configuration", outcome.configuration},
                 {"interrupted", string_or_null(outcome.interrupted)},
                 {"diagnosis", outcome.diagnosis_headline},
                 {"trials", table_rows_json(doctor_trials_table(outcome))},
                 {"best_settings", outcome.best_settings},
                 {"best_gain_pct", outcome.best_gain_pct},
                 {"after", {{"headline", outcome.after_headline}, {"findings", outcome.after_findings}}},
                 {"unaddressed_findings", outcome.unaddressed_findings}});
}

std::string render_doctor(const DoctorOutcome& outcome, OutputFormat format) {
  if (format == OutputFormat::kJson) return json_text(doctor_json(outcome), 2) + "\n";
  const bool markdown = format == OutputFormat::kMarkdown;
  const std::string item = markdown ? "- " : "  - ";
  std::string out = outcome.interrupted.empty() ? ""
                    : "Interrupted " + outcome.interrupted + ": what finished is kept, the rest did not run.\n";
  out += "Diagnosis: " + outcome.diagnosis_headline + "\n\n";
  out += outcome.trials.empty() ? "No finding came with a change to try.\n"
         : markdown             ? render_table_markdown(doctor_trials_table(outcome))
                                : render_table_text(doctor_trials_table(outcome));
  out += "\nBest measured configuration: " +
         (outcome.best_settings.empty()
              ? std::string("the one given (no change measurably helped)")
              : outcome.best_settings + " (" + format_text("%.2fx", 1.0 + outcome.best_gain_pct / 100.0) +
                    " samples/s)") +
         "\n";
  if (!outcome.after_headline.empty()) {
    out += "With it: " + outcome.after_headline + "\n";
    for (const std::string& f : outcome.after_findings) out += item + f + "\n";
  }
  if (!outcome.unaddressed_findings.empty()) {
    out += "Findings no trial addressed:\n";
    for (const std::string& f : outcome.unaddressed_findings) out += item + f + "\n";
  }
  return out + "Doctor: " + outcome.out_dir + "/doctor.json, report " + outcome.out_dir + "/report.html\n";
}

namespace {

// Whether a trial has a measured gain (not failed, interrupted or not run).
bool measured(const DoctorTrial& t) {
  return t.verdict == "improved" || t.verdict == "unchanged" || t.verdict == "regressed";
}

// A path relative to the doctor's folder, for links that survive moving the folder.
std::string relative_to(const std::string& path, const std::string& dir) {
  std::error_code ec;
  const fs::path rel = fs::relative(path, dir, ec);
  return ec || rel.empty() ? path : rel.string();
}

// One trial's gain as a bar from 0 with its interval as a whisker, on a common scale.
std::string gain_svg(const DoctorTrial& t, double scale_low, double scale_high) {
  const double width = 260, height = 22;
  const auto x_of = [&](double pct) { return width * (pct - scale_low) / (scale_high - scale_low); };
  const bool failed = !measured(t);
  const char* colour = t.verdict == "improved" ? "#2e7d32" : t.verdict == "regressed" ? "#c62828" : "#9e9e9e";
  std::string svg = "<svg width=\"" + format_text("%.0f", width) + "\" height=\"" + format_text("%.0f", height) + "\">";
  svg += "<line x1=\"" + format_text("%.1f", x_of(0)) + "\" y1=\"0\" x2=\"" + format_text("%.1f", x_of(0)) + "\" y2=\"" +
         format_text("%.0f", height) + "\" stroke=\"#333\"/>";
  if (!failed) {
    const double x0 = x_of(std::min(0.0, t.gain_pct)), x1 = x_of(std::max(0.0, t.gain_pct));
    svg += "<rect x=\"" + format_text("%.1f", x0) + "\" y=\"6\" width=\"" + format_text("%.1f", std::max(1.0, x1 - x0)) +
           "\" height=\"10\" fill=\"" + colour + "\"/>";
    svg += "<line x1=\"" + format_text("%.1f", x_of(t.low_pct)) + "\" y1=\"11\" x2=\"" + format_text("%.1f", x_of(t.high_pct)) +
           "\" y2=\"11\" stroke=\"#000\" stroke-width=\"1.5\"/>";
    for (double end : {t.low_pct, t.high_pct}) {
      svg += "<line x1=\"" + format_text("%.1f", x_of(end)) + "\" y1=\"5\" x2=\"" + format_text("%.1f", x_of(end)) +
             "\" y2=\"17\" stroke=\"#000\" stroke-width=\"1.5\"/>";
    }
  }
  return svg + "</svg>";
}

}  // namespace

std::string render_doctor_html(const DoctorOutcome& outcome) {
  std::string configuration;
  for (const std::string& a : outcome.configuration) configuration += (configuration.empty() ? "" : " ") + a;
  double low = 0, high = 0;
  for (const DoctorTrial& t : outcome.trials) {
    if (!measured(t)) continue;
    low = std::min({low, t.low_pct, t.gain_pct});
    high = std::max({high, t.high_pct, t.gain_pct});
  }
  const double pad = std::max(5.0, 0.05 * (high - low));
  low -= pad;
  high += pad;
  const auto link = [&](const std::string& path, const std::string& text) {
    return "<a href=\"" + escape_html(relative_to(path, outcome.out_dir)) + "\">" + escape_html(text) + "</a>";
  };
  std::string html =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>trainlab doctor</title><style>"
      "body{font-family:sans-serif;margin:2em;max-width:70em;color:#222}"
      "table{border-collapse:collapse}td,th{padding:4px 10px;border-bottom:1px solid #ddd;text-align:left}"
      "td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}.improved{color:#2e7d32;font-weight:bold}"
      ".regressed{color:#c62828;font-weight:bold}.box{background:#f5f5f5;padding:0.8em 1em;margin:1em 0}"
      "</style></head><body>\n";
  html += "<h1>trainlab doctor</h1>\n<p>Configuration: <code>" + escape_html(configuration) + "</code></p>\n";
  if (!outcome.interrupted.empty()) {
    html += "<div class=\"box\">Interrupted " + escape_html(outcome.interrupted) +
            ": what finished is kept, the rest did not run.</div>\n";
  }
  html += "<h2>1. Diagnosis</h2>\n<div class=\"box\">" + escape_html(outcome.diagnosis_headline) + "</div>\n";
  if (!outcome.diagnosis_report.empty()) {
    html += "<p>" + link(outcome.diagnosis_report, "the profile's full report") + "</p>\n";
  }
  html += "<h2>2. What each change measurably bought</h2>\n";
  if (outcome.trials.empty()) {
    html += "<p>No finding came with a change to try.</p>\n";
  } else {
    html += "<p>Samples/s of the changed configuration (B) against the one given (A), measured as interleaved "
            "A/B runs; the whisker is the 95 % interval, the scale runs from " +
            format_text("%+.0f %%", low) + " to " + format_text("%+.0f %%", high) + ".</p>\n<table><tr><th>change</th>"
            "<th>settings</th><th>from finding</th><th>samples/s</th><th>95 % interval</th><th></th>"
            "<th>verdict</th></tr>\n";
    for (const DoctorTrial& t : outcome.trials) {
      const bool failed = !measured(t);
      html += "<tr><td>" + escape_html(t.change) + "</td><td><code>" + escape_html(t.settings) + "</code></td><td>" +
              escape_html(t.from_rule) + "</td><td class=\"num\">" + (failed ? "-" : format_text("%+.1f %%", t.gain_pct)) +
              "</td><td class=\"num\">" +
              (failed ? "-" : "[" + format_text("%+.1f", t.low_pct) + ", " + format_text("%+.1f", t.high_pct) + "]") + "</td><td>" +
              gain_svg(t, low, high) + "</td><td class=\"" + escape_html(t.verdict) + "\">" + escape_html(t.verdict) +
              (t.run_dir.empty() ? "" : " (" + link(t.run_dir + "/run.json", "run") + ")") + "</td></tr>\n";
    }
    html += "</table>\n";
  }
  html += "<h2>3. Best measured configuration</h2>\n<div class=\"box\">";
  html += outcome.best_settings.empty()
              ? std::string("The one given: no change measurably helped.")
              : "<code>" + escape_html(outcome.best_settings) + "</code>: " +
                    format_text("%.2fx", 1.0 + outcome.best_gain_pct / 100.0) + " the samples/s of the configuration given";
  html += "</div>\n";
  if (!outcome.after_headline.empty()) {
    html += "<h2>4. What remains with it</h2>\n<div class=\"box\">" + escape_html(outcome.after_headline) +
            "</div>\n<ul>";
    for (const std::string& f : outcome.after_findings) html += "<li>" + escape_html(f) + "</li>";
    html += "</ul>\n";
    if (!outcome.after_report.empty()) html += "<p>" + link(outcome.after_report, "its profile's full report") + "</p>\n";
  }
  if (!outcome.unaddressed_findings.empty()) {
    html += "<h2>Findings no trial addressed</h2>\n<ul>";
    for (const std::string& f : outcome.unaddressed_findings) html += "<li>" + escape_html(f) + "</li>";
    html += "</ul>\n";
  }
  return html + "</body></html>\n";
}

}  // namespace trainlab
