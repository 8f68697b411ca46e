// `trainlab compare A B`: two runs' variants paired by name; for samples/s, step p50/p95, the
// data-wait share and peak memory, the change with a bootstrap confidence interval (over steps, or
// over repetitions where each side has several), a Mann-Whitney U test on the step times where
// there are enough of them, and a verdict per row. Only rows over repetitions gate (exit 1).
// Refuses different schemas or scenarios; warns when the environments differ. Torch-free.
#pragma once

#include "core/run_record.h"
#include "harness/outcomes/compare_outcome.h"

namespace trainlab {

// Throws InputError on different schemas or scenarios, or when no variant pairs up.
CompareOutcome compare_runs(const RunRecord& before, const RunRecord& after, const CompareOptions& options);
// An A/B run (trainlab run --ab): its "A" records against its "B" records, as one pair.
// Throws InputError when the run has no A and B records.
CompareOutcome compare_ab(const RunRecord& run, const CompareOptions& options);
// Two job runs' training DataLoader settings where they differ ("the training DataLoader at
// train.py:88: num_workers 0 -> 2, persistent_workers False -> True"); "" when they are the same or
// either run is not a job. compare_runs puts it in CompareOutcome::changed.
std::string job_loader_change(const RunRecord& before, const RunRecord& after);

}  // namespace trainlab
