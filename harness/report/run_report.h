// What the run commands show: a run (the lab, run, --ab, profile) as one JSON document, as
// markdown and as the terminal's text (the variant table, the reading, data-parallel, system and
// profile lines), and a sweep's table, reading and chart in the three formats. The CLI prints
// them and sets the exit status (harness/cli/run_report.h). Torch-free.
#pragma once

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/output_format.h"
#include "core/run_record.h"
#include "harness/outcomes/sweep_outcome.h"

namespace trainlab {

// A run as one JSON document: kind, run id, scenario, run folder and record, the variant table's
// rows (samples_per_s, step_p50_ms, ...), its notes and the reading. Callers add their own parts
// (an A/B run's "compare", a profile's "diagnosis") before printing it.
nlohmann::json run_json(const RunRecord& record, const std::string& run_dir);
// A run in markdown: a title line, the variant table, the reading as a list, the record's path.
std::string render_run_markdown(const RunRecord& record, const std::string& run_dir);
// The terminal's text: the variants' table, the reading, data parallel, system and profile lines,
// the record's path.
void write_run_text(const RunRecord& record, const std::string& run_dir, std::ostream& out);

// What sweep prints: its table (the points; errors and not-applicable reasons as notes), the
// reading, the chart and the record; json: one document with the points as rows.
std::string render_sweep_report(const SweepOutcome& outcome, OutputFormat format);

}  // namespace trainlab
