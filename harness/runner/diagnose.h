// `trainlab diagnose` (and the end of `trainlab profile`): a run folder, a PyTorch trace file or a
// folder of per-rank traces -> Summaries -> rules -> verdict, printed as a terminal summary and
// written as diagnosis.json (versioned) and report.html. Gating: --fail-on high|moderate|<rule id>
// makes the command exit 1 when such a finding fires. Torch-free.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/run_record.h"
#include "diagnostics/diagnosis.h"
#include "diagnostics/job_diagnosis.h"
#include "diagnostics/thresholds.h"
#include "core/output_format.h"

namespace trainlab {

struct DiagnoseOptions {
  const Thresholds* thresholds = &Thresholds::defaults();
  std::string fail_on;      // "", "high", "moderate" or a rule id (validated by check_fail_on)
  std::string out_dir;      // where diagnosis.json and report.html go ("" = the run folder, or results/)
  std::string results_dir = "results";
};

struct DiagnoseOutcome {
  std::vector<Diagnosis> diagnoses;  // one per variant (runs) or per rank trace
  std::optional<JobDiagnosis> job;   // a folder of two or more rank traces: the job's one verdict
  std::string input;                 // the run folder or trace(s) as given
  bool from_run_record = false;      // a run folder, not traces
  VariantSpec spec;                  // a run folder's first variant: what to profile or doctor next
  std::string out_dir;
  bool gate_failed = false;
  std::vector<std::string> gate_reasons;
  std::vector<UnreadableTrace> unreadable_traces;  // a folder's traces that could not be read (skipped)
};

// A run folder (or its run.json), a trace file (.json / .json.gz) or a folder of trace files.
// A folder's traces are read one at a time (memory does not grow with the rank count); those that
// cannot be read are skipped and named in unreadable_traces. Throws InputError on a missing path,
// a malformed trace file, or a folder none of whose traces can be read.
DiagnoseOutcome diagnose_path(const std::string& path, const DiagnoseOptions& options);
// A run just recorded (trainlab profile): diagnoses its variants, writes into run_dir.
DiagnoseOutcome diagnose_run(const RunRecord& record, const std::string& run_dir, const DiagnoseOptions& options);

// One diagnosis's step time by suspect (share with its 95 % interval), its findings and its
// actions ranked by the time they could save.
Table attribution_table(const Diagnosis& diagnosis);
Table findings_table(const Diagnosis& diagnosis);
Table actions_table(const Diagnosis& diagnosis);
// What diagnose prints: table, the terminal summary of each diagnosis; markdown, the same with
// the three tables; json, diagnosis.json's document with where the files are. Then where they are.
std::string render_diagnoses(const DiagnoseOutcome& outcome, OutputFormat format);
nlohmann::json diagnoses_json(const DiagnoseOutcome& outcome);

}  // namespace trainlab
