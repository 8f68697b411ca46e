// `trainlab diagnose` (and the end of `trainlab profile`): a run folder, a PyTorch trace file or a
// folder of per-rank traces -> Summaries -> rules -> verdict, printed as a terminal summary and
// written as diagnosis.json (versioned) and report.html. Gating: --fail-on high|moderate|<rule id>
// makes the command exit 1 when such a finding fires. Torch-free. What it prints and writes is
// rendered by harness/report/diagnose_report.h.
#pragma once

#include <string>

#include "core/run_record.h"
#include "diagnostics/thresholds.h"
#include "harness/outcomes/diagnose_outcome.h"

namespace trainlab {

struct DiagnoseOptions {
  const Thresholds* thresholds = &Thresholds::defaults();
  std::string fail_on;      // "", "high", "moderate" or a rule id (validated by check_fail_on)
  std::string out_dir;      // where diagnosis.json and report.html go ("" = the run folder, or results/)
  std::string results_dir = "results";
};

// A run folder (or its run.json), a trace file (.json / .json.gz) or a folder of trace files.
// A folder's traces are read one at a time (memory does not grow with the rank count); those that
// cannot be read are skipped and named in unreadable_traces. Throws InputError on a missing path,
// a malformed trace file, or a folder none of whose traces can be read.
DiagnoseOutcome diagnose_path(const std::string& path, const DiagnoseOptions& options);
// A run just recorded (trainlab profile): diagnoses its variants, writes into run_dir.
DiagnoseOutcome diagnose_run(const RunRecord& record, const std::string& run_dir, const DiagnoseOptions& options);

}  // namespace trainlab
