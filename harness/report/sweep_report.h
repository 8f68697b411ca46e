// How a sweep is shown: its table (one row per grid point, the recommended and best points marked,
// errors and not-applicable reasons as notes) and the SVG chart of throughput against workers. The
// runner writes both through these (harness/runner/sweep.h). Torch-free.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/output_format.h"
#include "core/run_record.h"
#include "harness/outcomes/sweep_outcome.h"

namespace trainlab {

// An SVG line chart: samples/s against workers, one line per (prefetch, pin, batch) series,
// the recommended point ringed.
std::string render_sweep_svg(const std::string& title, const std::vector<SweepFigures>& figures,
                             std::optional<size_t> recommended);

// The table over a sweep's record: per row its figures (the median of its rounds, their range
// with --repeat), the recommended and the best point marked, failed points' errors and the
// not-applicable reasons as notes.
Table sweep_table(const RunRecord& record, const std::vector<SweepTableRow>& layout);
// The rows of a recorded sweep (run.json): its points in run order, then the not-applicable ones.
std::vector<SweepTableRow> sweep_layout(const RunRecord& record);

}  // namespace trainlab
