// `trainlab diagnose` (and the end of `trainlab profile`): a run folder, a PyTorch trace file or a
// folder of per-rank traces -> Summaries -> rules -> verdict, printed as a terminal summary and
// written as diagnosis.json (versioned) and report.html. Gating: --fail-on high|moderate|<rule id>
// makes the command exit 1 when such a finding fires. Torch-free.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "diagnostics/rules.h"
#include "diagnostics/summary.h"
#include "diagnostics/thresholds.h"
#include "diagnostics/verdict.h"
#include "core/run_record.h"

namespace trainlab {

inline constexpr int kDiagnosisSchemaVersion = 1;

struct Diagnosis {
  Summary summary;
  std::vector<Finding> findings;
  Verdict verdict;
};

struct DiagnoseOptions {
  const Thresholds* thresholds = &Thresholds::defaults();
  std::string fail_on;      // "", "high", "moderate" or a rule id (validated by parse_fail_on)
  std::string out_dir;      // where diagnosis.json and report.html go ("" = the run folder, or results/)
  std::string results_dir = "results";
};

struct DiagnoseOutcome {
  std::vector<Diagnosis> diagnoses;  // one per variant (runs) or per rank trace
  std::string out_dir;
  bool gate_failed = false;
  std::vector<std::string> gate_reasons;
};

// Throws InputError when the value is neither a severity nor a known rule id.
void check_fail_on(const std::string& fail_on);

Diagnosis diagnose_summary(Summary summary, const Thresholds& thresholds);

// A run folder (or its run.json), a trace file (.json / .json.gz) or a folder of trace files.
// Throws InputError on a missing path or malformed input.
DiagnoseOutcome diagnose_path(const std::string& path, const DiagnoseOptions& options);
// A run just recorded (trainlab profile): diagnoses its variants, writes into run_dir.
DiagnoseOutcome diagnose_run(const RunRecord& record, const std::string& run_dir, const DiagnoseOptions& options);

// The terminal summary of one diagnosis (verdict, attribution, findings, actions).
std::string render_diagnosis_text(const Diagnosis& diagnosis);

nlohmann::json diagnosis_document(const DiagnoseOutcome& outcome, const std::string& input);

}  // namespace trainlab
