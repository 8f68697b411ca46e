// What `trainlab diagnose` (and the end of `trainlab profile`) produces: one diagnosis per variant
// or rank trace, the job's verdict over several ranks, where its files went and the --fail-on gate.
// Plain data: the runner fills it (harness/runner/diagnose.h), the report renders it
// (harness/report/diagnose_report.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/variant.h"
#include "diagnostics/diagnosis.h"
#include "diagnostics/job_diagnosis.h"

namespace trainlab {

struct DiagnoseOutcome {
  std::vector<Diagnosis> diagnoses;  // one per variant (runs) or per rank trace
  std::optional<JobDiagnosis> job;   // a folder of two or more rank traces: the job's one verdict
  std::string no_job_verdict;        // several ranks but no job verdict: why ("these traces are not one job: ...")
  std::string input;                 // the run folder or trace(s) as given
  bool from_run_record = false;      // a run folder, not traces
  VariantSpec spec;                  // a run folder's first variant: what to profile or doctor next
  std::string out_dir;
  bool gate_failed = false;
  std::vector<std::string> gate_reasons;
  std::vector<UnreadableTrace> unreadable_traces;  // a folder's traces that could not be read (skipped)
};

}  // namespace trainlab
