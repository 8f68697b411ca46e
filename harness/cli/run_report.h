// What the run commands print: the variant table, the lab's reading, data-parallel, system and
// profile lines, and the exit status (2 for a variant that failed on bad input, 1 when one failed).
#pragma once

#include "core/run_record.h"
#include "harness/outcomes/diagnose_outcome.h"
#include "harness/runner/lab.h"
#include "harness/outcomes/sweep_outcome.h"

namespace trainlab {

// A variant that failed on bad input (a corrupt or missing data file, an impossible knob
// combination), or nullptr.
const VariantRecord* bad_input_variant(const RunRecord& record);

// The command's exit status for a run: 2 a variant failed on bad input, 1 another failed, else 0.
int run_status(const LabOutcome& outcome);

// A run as one JSON document: kind, run id, scenario, run folder and record, the variant table's
// rows (samples_per_s, step_p50_ms, ...), its notes and the reading. Callers add their own parts
// (an A/B run's "compare", a profile's "diagnosis") before printing it.
nlohmann::json run_json(const LabOutcome& outcome);
// A run in markdown: a title line, the variant table, the reading as a list, the record's path.
std::string render_run_markdown(const LabOutcome& outcome);

// Prints a run's results to stdout; returns the command's exit status (run_status; the bad input
// line on stderr). json prints run_json with `extra`'s fields added; markdown the variant table, the
// reading and the record's path; table all of today's text.
int report_run(const LabOutcome& outcome, OutputFormat format = OutputFormat::kTable,
               const nlohmann::json& extra = nlohmann::json::object());

// Prints the diagnoses (render_diagnoses) and where they were written; the gate's reasons go to
// stderr; 1 when the --fail-on gate failed.
int report_diagnosis(const DiagnoseOutcome& outcome, OutputFormat format = OutputFormat::kTable);

// What sweep prints: its table (the points; errors and not-applicable reasons as notes), the
// reading, the chart and the record; json: one document with the points as rows.
std::string render_sweep_report(const SweepOutcome& outcome, OutputFormat format);

}  // namespace trainlab
