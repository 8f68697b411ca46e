// How a run's variants are shown: the variant table (the terminal's text; run_report's markdown and
// JSON take its rows) from the run's record. Torch-free.
#pragma once

#include <string>

#include "core/output_format.h"
#include "core/run_record.h"
#include "diagnostics/baseline_reading.h"

namespace trainlab {

// The variant table: variant, samples/s, step p50/p95, peak memory, ops/step, data wait, speed-up
// (rows for failed variants, their errors as notes); render_variant_table is its terminal text.
Table variant_table(const RunRecord& record);
std::string render_variant_table(const RunRecord& record);

// One lab variant's figures over its repetitions that count (VariantRecord::counts: failed,
// disturbed and superseded ones left out), in the order they ran: what the lab's reading reads.
LabVariantFigures lab_variant_figures(const RunRecord& record, const std::string& name);

// Whether the first loss of v read as a number is NaN or Inf: the table's divergence note, and the
// lab's reading (a compiled variant computing the wrong thing) asks it too.
bool first_loss_not_finite(const VariantRecord& v);

}  // namespace trainlab
