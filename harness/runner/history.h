// `trainlab history`: the runs in a results folder, oldest first. Per folder: its id, when, kind,
// scenario (or a diagnosis's input), the best variant and its samples/s (the median over its
// repetitions; an A/B run's B, with A beside it), the verdict of its diagnosis where it has one,
// and the full headline line. The report (harness/report/history_report.h) shows them. Torch-free.
#pragma once

#include <string>
#include <vector>

#include "harness/outcomes/history_outcome.h"

namespace trainlab {

// Throws InputError when the folder does not exist; unreadable entries carry their problem.
std::vector<HistoryEntry> read_history(const std::string& results_dir);

}  // namespace trainlab
