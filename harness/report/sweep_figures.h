// A sweep point as the recommendation, the table and the chart read it: the labels that name a
// point, its figures from one record (a round), and its rounds folded into one. Shared by the
// runner (progress lines, the recommendation, the table's layout) and the report (the table, the
// chart), so both name and measure a point alike. Torch-free.
#pragma once

#include <string>
#include <vector>

#include "core/run_record.h"
#include "harness/outcomes/sweep_outcome.h"

namespace trainlab {

// "workers=2 prefetch=2 pin=off", with " batch=N" when the grid sweeps the batch.
std::string sweep_point_label(const VariantSpec& spec, bool with_batch);
std::string sweep_figures_label(const SweepFigures& f, bool with_batch);

// One round's figures: not ok when the record failed or measured no step.
SweepFigures sweep_figures_of(const VariantRecord& record);
// A point's rounds as one: the median of each figure over the rounds that completed, and the
// range of their throughput.
SweepFigures median_of_rounds(const std::vector<SweepFigures>& rounds);

}  // namespace trainlab
