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

// A baseline lab's folder: the lab's answer, shown before any repetition's diagnosis.
struct LabRepetition {
  std::string label;           // "fp32 #2" (the variant's name where it ran once)
  bool counted = false;        // in the lab's figures (VariantRecord::counts)
  std::string left_out;        // why not: "disturbed (run again): ...", "superseded: ...", "failed: ..."
  double samples_per_s = 0;    // 0 where it failed
  std::optional<size_t> diagnosis;  // its index in DiagnoseOutcome::diagnoses; none where it failed
};
struct LabVariantAnswer {
  std::string name;                   // "fp32", "bf16", "bf16+compiled"
  std::vector<double> samples_per_s;  // its kept repetitions', in the order they ran
  double median_samples_per_s = 0;    // 0 where none was kept
  std::optional<LabMeasuredGain> gain;  // over the variant it changes (fp32 -> bf16, bf16 -> bf16+compiled)
  std::string not_measured;           // why it has no kept repetition (could not be built, failed)
};
struct LabAnswer {
  std::string scenario;
  std::vector<LabVariantAnswer> variants;  // in the lab's order
  std::vector<std::string> reading;        // run.json's reading, as the lab wrote it
  std::vector<LabRepetition> repetitions;  // in the order they ran
  size_t shown = 0;  // the diagnosis report.html shows: the first kept repetition of the first variant
  // The lab left its bf16 variants out (its probe found bf16 emulated): what the probe measured, one
  // Linear layer's forward+backward fp32 -> bf16, the only bf16 figure the lab has.
  std::optional<LabMeasuredGain> bf16_probe_gain;
};

struct DiagnoseOutcome {
  std::vector<Diagnosis> diagnoses;  // one per variant (runs) or per rank trace
  std::optional<JobDiagnosis> job;   // a folder of two or more rank traces: the job's one verdict
  std::string no_job_verdict;        // several ranks but no job verdict: why ("these traces are not one job: ...")
  std::string input;                 // the run folder or trace(s) as given
  bool from_run_record = false;      // a run folder, not traces
  VariantSpec spec;                  // a run folder's first variant: what to profile or doctor next
  std::vector<std::string> job_command;  // a job's run folder: the user's command (what to run next on it)
  std::string out_dir;
  bool gate_failed = false;
  std::vector<std::string> gate_reasons;
  std::vector<UnreadableTrace> unreadable_traces;  // a folder's traces that could not be read (skipped)
  std::optional<LabAnswer> lab;      // a baseline lab's folder (diagnoses: one per repetition, labelled "fp32 #2")
};

}  // namespace trainlab
