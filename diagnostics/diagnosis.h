// The diagnosis of one Summary (DESIGN §1): the rules' findings and the verdict, the terminal text,
// the gate (--fail-on), and diagnosis.json both ways: written from Diagnoses, read back as the
// typed DiagnosisFile that doctor, validate and history use. Sees only Summary. No LibTorch.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "diagnostics/rules.h"
#include "diagnostics/summary.h"
#include "diagnostics/thresholds.h"
#include "diagnostics/verdict.h"

namespace trainlab {

// diagnosis.json's version. 2: the summary's per-step memory is "memory_mib" (1 called it
// "memory_mb", holding MiB). Readers take both.
inline constexpr int kDiagnosisSchemaVersion = 2;

struct Diagnosis {
  Summary summary;
  std::vector<Finding> findings;
  Verdict verdict;
};

Diagnosis diagnose_summary(Summary summary, const Thresholds& thresholds);

// Per-rank diagnoses of one job: each rank's own work per step (step p50 minus its exposed
// communication), the straggler and the spread between slowest and fastest, set on every Summary.
// The caller diagnoses the Summaries again.
void add_rank_spread(std::vector<Diagnosis>& diagnoses);

// --fail-on: "high", "moderate" or a rule id. Throws InputError for anything else.
void check_fail_on(const std::string& fail_on);
// The findings that trip the gate, as "label: rule (severity)"; empty when none does or fail_on is "".
std::vector<std::string> gate_reasons(const std::vector<Diagnosis>& diagnoses, const std::string& fail_on);

// The terminal summary of one diagnosis (verdict, attribution, findings, actions).
std::string render_diagnosis_text(const Diagnosis& diagnosis);

// A trace of a folder of rank traces that could not be read, so was not diagnosed: its file name
// and why (the import's error, without the path).
struct UnreadableTrace {
  std::string file;
  std::string reason;
};

// diagnosis.json: {schema_version, tool, kind, input, created_utc, gate_failed, gate_reasons,
// diagnoses: [{label, summary, findings, verdict}]}, and unreadable_traces: [{file, reason}] when
// some of a folder's traces were skipped.
nlohmann::json diagnosis_document(const std::vector<Diagnosis>& diagnoses, const std::string& input,
                                  const std::string& created_utc, const std::vector<std::string>& gate_reasons,
                                  const std::vector<UnreadableTrace>& unreadable_traces = {});

// diagnosis.json read back: per diagnosis, the verdict's words and its actions, and the findings.
struct FindingLine {
  std::string rule, title, severity, change;
};
struct ActionLine {
  std::string rule, change, action;
  double saving_pct = 0;
};
struct DiagnosisLine {
  std::string label;
  bool inconclusive = false;
  std::string primary;       // the primary suspect ("data", "compute", ...); empty when inconclusive
  std::string confidence, headline;
  std::vector<ActionLine> actions;
  std::vector<FindingLine> findings;
};
struct DiagnosisFile {
  int schema_version = kDiagnosisSchemaVersion;
  std::string input, created_utc;
  bool gate_failed = false;
  std::vector<DiagnosisLine> diagnoses;  // never empty in a file that reads
};
// One diagnosis as read back, as JSON again (doctor.json quotes the diagnosis it acted on).
nlohmann::json to_json(const DiagnosisLine& line);

// Throws InputError on a missing or malformed file, an unknown version, or no diagnosis in it.
DiagnosisFile read_diagnosis_file(const std::string& path);
DiagnosisFile diagnosis_file_from_json(const nlohmann::json& document);

}  // namespace trainlab
