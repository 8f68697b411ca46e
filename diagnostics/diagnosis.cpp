// The diagnosis of one Summary, its text, the gate and diagnosis.json (see diagnosis.h).
#include "diagnostics/diagnosis.h"

#include <algorithm>
#include <sstream>

#include "core/bounded_json.h"
#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/json_fields.h"
#include "core/untrusted_input.h"
#include "diagnostics/summarise.h"
#include "diagnostics/text_format.h"

namespace trainlab {

Diagnosis diagnose_summary(Summary summary, const Thresholds& thresholds) {
  Diagnosis d;
  d.summary = std::move(summary);
  d.findings = run_rules(d.summary, thresholds);
  d.verdict = decide(d.summary, d.findings, thresholds);
  return d;
}

void add_rank_spread(std::vector<Diagnosis>& diagnoses) {
  if (diagnoses.size() < 2) return;
  std::vector<double> busy;
  for (const Diagnosis& d : diagnoses) {
    busy.push_back(d.summary.step.p50 * (1.0 - d.summary.shares.communication_pct / 100.0));
  }
  const auto [lo, hi] = std::minmax_element(busy.begin(), busy.end());
  const int straggler = diagnoses[static_cast<size_t>(hi - busy.begin())].summary.rank;
  for (Diagnosis& d : diagnoses) {
    d.summary.rank_step_p50_ms = busy;
    d.summary.straggler_rank = straggler;
    if (*lo > 0) d.summary.rank_spread_pct = 100.0 * (*hi / *lo - 1.0);
  }
}

void check_fail_on(const std::string& fail_on) {
  if (fail_on.empty() || fail_on == "high" || fail_on == "moderate") return;
  const std::vector<std::string>& ids = rule_ids();
  if (std::find(ids.begin(), ids.end(), fail_on) != ids.end()) return;
  std::string known;
  for (const std::string& id : ids) known += (known.empty() ? "" : ", ") + id;
  throw InputError("unknown --fail-on '" + fail_on + "' (high, moderate or a rule id: " + known + ")");
}

std::vector<std::string> gate_reasons(const std::vector<Diagnosis>& diagnoses, const std::string& fail_on) {
  std::vector<std::string> reasons;
  if (fail_on.empty()) return reasons;
  for (const Diagnosis& d : diagnoses) {
    for (const Finding& f : d.findings) {
      const bool hit = fail_on == f.rule_id || (fail_on == "high" && f.severity == Severity::kHigh) ||
                       (fail_on == "moderate" && f.severity != Severity::kInfo);
      if (hit) reasons.push_back(d.summary.label + ": " + f.rule_id + " (" + to_string(f.severity) + ")");
    }
  }
  return reasons;
}

// "Communication: 88.0 % of the step, 82.0 % overlapped with compute, 6.0 % exposed (kernels:
// expert_all_to_all 88.0 %)", then up to three collectives the trace's args name: only when the trace
// holds collective time (0.05 % of the step or more, as printed).
static std::string communication_line(const Summary& s) {
  if (!s.comm_total_pct || *s.comm_total_pct < 0.05) return "";
  std::string line =
      s.comm_overlapped_pct
          ? format_text("  Communication: %.1f %% of the step, %.1f %% overlapped with compute, %.1f %% exposed",
                        *s.comm_total_pct, *s.comm_overlapped_pct, s.shares.communication_pct)
          : format_text("  Communication: %.1f %% of the step, counted as exposed (the trace does not show what "
                        "ran under it: device collectives without their kernels, or trainlab's wait for its "
                        "all-reduces)",
                        *s.comm_total_pct);
  std::string families;
  for (const auto& [family, pct] : s.comm_family_pct)
    if (pct >= 0.05) families += (families.empty() ? "" : ", ") + family + format_text(" %.1f %%", pct);
  if (!families.empty()) line += " (kernels: " + families + ")";
  line += "\n";
  std::string calls;
  for (size_t i = 0; i < s.collectives.size() && i < 3; ++i) {
    const CollectiveCalls& c = s.collectives[i];
    calls += (calls.empty() ? "" : "; ") + c.name + format_text(" x%.1f, %.0f -> %.0f elements", c.calls_per_step,
                                                               c.median_in_nelems, c.median_out_nelems);
    if (!c.dtype.empty()) calls += " " + c.dtype;
    if (c.group_size > 0) calls += format_text(", group of %d", c.group_size);
  }
  if (s.collectives.size() > 3) calls += format_text("; %zu more sizes", s.collectives.size() - 3);
  if (!calls.empty()) line += "    collectives per step by size (the trace's args): " + calls + "\n";
  return line;
}

std::string render_diagnosis_text(const Diagnosis& d) {
  std::ostringstream out;
  const Summary& s = d.summary;
  out << "Diagnosis " << s.label
      << (s.world_size > 1 ? " (rank " + std::to_string(s.rank) + " of " + std::to_string(s.world_size) + ")"
                           : "")
      << ": " << s.step_ms.size() << (s.step_ms.size() == 1 ? " step" : " steps") << ", step p50 " << format_text("%.1f", s.step.p50) << " ms (p95 "
      << format_text("%.1f", s.step.p95) << " ms), " << s.device << "\n";
  if (!s.cold_start_line.empty() && !s.all_cold_start) out << "  Start-up: " << s.cold_start_line << "\n";
  if (d.verdict.inconclusive) {
    out << "  Verdict: INCONCLUSIVE";
    for (const std::string& reason : d.verdict.inconclusive_reasons) out << "\n    - " << reason;
    out << "\n";
  } else {
    out << "  Verdict: " << suspect_words(d.verdict.primary) << " (confidence " << d.verdict.confidence
        << ") — " << d.verdict.headline << "\n";
    for (const std::string& reason : d.verdict.confidence_reasons) out << "    confidence: " << reason << "\n";
    for (const std::string& secondary : d.verdict.secondary) out << "    secondary: " << secondary << "\n";
  }
  out << "  Step time" << (s.step_shares.size() >= 2 ? " (95 % intervals over the steps)" : "") << ":";
  for (const SuspectShare& a : d.verdict.attribution) {
    out << " " << suspect_words(a.suspect) << " " << format_text("%.1f", a.share_pct);
    if (a.high_pct - a.low_pct >= 0.05) out << " [" << format_text("%.1f", a.low_pct) << ", " << format_text("%.1f", a.high_pct) << "]";
    out << " %;";
  }
  out << "\n";
  out << communication_line(s);
  if (!d.findings.empty()) {
    out << "  Findings:\n";
    for (const Finding& f : d.findings) {
      out << "    [" << to_string(f.severity) << "] " << f.rule_id << ": " << f.title << " (" << f.times_fired
          << "/" << f.data_points << ")\n";
    }
  }
  if (!d.verdict.actions.empty()) {
    out << "  Actions, by the time they could save:\n";
    int n = 0;
    for (const RankedAction& a : d.verdict.actions) {
      out << "    " << ++n << ". " << a.action << " (up to " << format_text("%.1f", a.saving_pct)
          << " % of the step, " << format_text("%.1f", a.speedup) << "x)\n";
      if (!a.why_first.empty()) out << "       (" << a.why_first << ")\n";
      if (n == 5) break;
    }
  }
  for (const std::string& note : s.notes) out << "  note: " << note << "\n";
  return out.str();
}

nlohmann::json diagnosis_document(const std::vector<Diagnosis>& diagnoses, const std::string& input,
                                  const std::string& created_utc, const std::vector<std::string>& gate_reasons,
                                  const std::vector<UnreadableTrace>& unreadable_traces) {
  nlohmann::json entries = nlohmann::json::array();
  for (const Diagnosis& d : diagnoses) {
    nlohmann::json findings = nlohmann::json::array();
    for (const Finding& f : d.findings) findings.push_back(to_json(f));
    entries.push_back({{"label", d.summary.label},
                       {"summary", to_json(d.summary)},
                       {"findings", findings},
                       {"verdict", to_json(d.verdict)}});
  }
  nlohmann::json document = {{"schema_version", kDiagnosisSchemaVersion},
                              {"tool", "trainlab"},
                              {"kind", "diagnosis"},
                              {"input", input},
                              {"created_utc", created_utc},
                              {"gate_failed", !gate_reasons.empty()},
                              {"gate_reasons", gate_reasons},
                              {"diagnoses", entries}};
  if (!unreadable_traces.empty()) {
    nlohmann::json skipped = nlohmann::json::array();
    for (const UnreadableTrace& t : unreadable_traces) skipped.push_back({{"file", t.file}, {"reason", t.reason}});
    document["unreadable_traces"] = skipped;
  }
  return document;
}

DiagnosisFile diagnosis_file_from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("schema_version") || !j["schema_version"].is_number_integer()) {
    throw InputError("not a trainlab diagnosis (no integer schema_version)");
  }
  DiagnosisFile file;
  const int64_t version = j["schema_version"].get<int64_t>();  // read wide: 2^32+1 is not 1
  if (version < 1 || version > kDiagnosisSchemaVersion) {
    throw InputError("unsupported diagnosis schema_version " + std::to_string(version) +
                     " (this trainlab reads 1 to " + std::to_string(kDiagnosisSchemaVersion) + ")");
  }
  file.schema_version = static_cast<int>(version);
  try {
    file.input = required_field<std::string>(j, "input");
    file.created_utc = required_field<std::string>(j, "created_utc");
    file.gate_failed = required_field<bool>(j, "gate_failed");
    for (const nlohmann::json& d : required_member(j, "diagnoses")) {
      DiagnosisLine line;
      line.label = required_field<std::string>(d, "label");
      const nlohmann::json& v = required_member(d, "verdict");
      line.inconclusive = required_field<bool>(v, "inconclusive");
      // null where the verdict is inconclusive
      if (const nlohmann::json& primary = required_member(v, "primary"); !primary.is_null()) {
        line.primary = field_as<std::string>(primary, "primary");
      }
      line.confidence = required_field<std::string>(v, "confidence");
      line.headline = required_field<std::string>(v, "headline");
      for (const nlohmann::json& a : required_member(v, "actions")) {
        line.actions.push_back({required_field<std::string>(a, "rule"), required_field<std::string>(a, "change"),
                                required_field<std::string>(a, "action"), required_field<double>(a, "saving_pct")});
      }
      for (const nlohmann::json& f : required_member(d, "findings")) {
        line.findings.push_back({required_field<std::string>(f, "rule"), required_field<std::string>(f, "title"),
                                 required_field<std::string>(f, "severity"), required_field<std::string>(f, "change")});
      }
      file.diagnoses.push_back(std::move(line));
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("malformed diagnosis: ") + e.what());
  } catch (const InputError& e) {
    throw InputError(std::string("malformed diagnosis: ") + e.what());
  }
  if (file.diagnoses.empty()) throw InputError("the diagnosis holds no diagnoses");
  return file;
}

nlohmann::json to_json(const DiagnosisLine& line) {
  nlohmann::json actions = nlohmann::json::array();
  for (const ActionLine& a : line.actions) {
    actions.push_back({{"rule", a.rule}, {"change", a.change}, {"action", a.action}, {"saving_pct", a.saving_pct}});
  }
  nlohmann::json findings = nlohmann::json::array();
  for (const FindingLine& f : line.findings) {
    findings.push_back({{"rule", f.rule}, {"title", f.title}, {"severity", f.severity}, {"change", f.change}});
  }
  return {{"label", line.label},
          {"inconclusive", line.inconclusive},
          {"primary", line.primary.empty() ? nlohmann::json(nullptr) : nlohmann::json(line.primary)},
          {"confidence", line.confidence},
          {"headline", line.headline},
          {"actions", actions},
          {"findings", findings}};
}

DiagnosisFile read_diagnosis_file(const std::string& path) {
  const std::string text = read_file(path);
  const nlohmann::json j = parse_bounded_json(text, path);
  if (j.is_discarded()) {
    const std::string encoding = non_json_encoding(text.data(), text.size());
    throw InputError(path + ": " + (encoding.empty() ? "malformed JSON" : encoding));
  }
  try {
    return diagnosis_file_from_json(j);
  } catch (const InputError& e) {
    throw InputError(path + ": " + e.what());
  }
}

}  // namespace trainlab
