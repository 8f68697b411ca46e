// What the run commands print (the renderings: harness/report/run_report.h) and their exit status
// (2 for a variant that failed on bad input, 1 when one failed).
#pragma once

#include "core/run_record.h"
#include "harness/outcomes/diagnose_outcome.h"
#include "harness/runner/lab.h"

namespace trainlab {

// A variant that failed on bad input (a corrupt or missing data file, an impossible knob
// combination), or nullptr.
const VariantRecord* bad_input_variant(const RunRecord& record);

// The command's exit status for a run: 2 a variant failed on bad input, 1 another failed, else 0.
int run_status(const LabOutcome& outcome);

// Prints a run's results to stdout; returns the command's exit status (run_status; the bad input
// line on stderr). json prints run_json with `extra`'s fields added; markdown render_run_markdown;
// table write_run_text.
int report_run(const LabOutcome& outcome, OutputFormat format = OutputFormat::kTable,
               const nlohmann::json& extra = nlohmann::json::object());

// Prints the diagnoses (render_diagnoses) and where they were written; the gate's reasons go to
// stderr; 1 when the --fail-on gate failed.
int report_diagnosis(const DiagnoseOutcome& outcome, OutputFormat format = OutputFormat::kTable, bool all = false);

}  // namespace trainlab
