// What the run commands print: the variant table, the lab's reading, data-parallel, system and
// profile lines, and the exit status (2 for a variant that failed on bad input, 1 when one failed).
#pragma once

#include "core/run_record.h"
#include "harness/runner/diagnose.h"
#include "harness/runner/lab.h"

namespace trainlab {

// A variant that failed on bad input (a corrupt or missing data file, an impossible knob
// combination), or nullptr.
const VariantRecord* bad_input_variant(const RunRecord& record);

// Prints a run's results to stdout; returns the command's exit status.
int report_run(const LabOutcome& outcome);

// Prints the diagnoses and where they were written; 1 when the --fail-on gate failed.
int report_diagnosis(const DiagnoseOutcome& outcome);

}  // namespace trainlab
