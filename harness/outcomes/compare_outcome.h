// What `trainlab compare` (and the end of `run --ab`) produces: the options it judged by, one row
// per variant and metric with its change, interval and verdict, and the gate. Plain data: the
// runner fills it (harness/runner/compare.h), the report renders it (harness/report/compare_report.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/comparison_stats.h"

namespace trainlab {

struct CompareOptions {
  double threshold_pct = 5.0;        // a change smaller than this is "unchanged" (points, for the data-wait share)
  double max_regression_pct = 10.0;  // a regression beyond this fails the gate (exit status 1)
  int iterations = 2000;             // bootstrap resamples
  int min_samples_for_u = 8;         // per side, for the U test
};

struct CompareRow {
  std::string variant;
  std::string metric;          // "samples/s", "step p50 ms", "step p95 ms", "data wait %", "peak memory MiB"
  bool higher_is_better = false;
  bool in_points = false;      // the change is a difference in percentage points, not a relative change
  double before = 0, after = 0;
  stats::ChangeEstimate change;
  bool has_interval = false;   // false: one value a side, no interval
  std::optional<double> p_value;  // Mann-Whitney U on the step times
  std::string verdict;         // "improved", "regressed", "unchanged"
  // Whether the row can fail the gate: only when each side has 3 or more repetitions. Separate
  // processes of the same configuration differ by more than the steps of one process do (the
  // machine's load, memory placement), so one run a side cannot tell a change from that drift.
  bool gated = true;
};

struct CompareOutcome {
  std::string before_label, after_label;  // run ids
  std::vector<CompareRow> rows;
  std::vector<std::string> warnings;      // environment differences, too few samples, unpaired variants
  // What the two runs were given differently where the record knows it: a job's training DataLoader
  // ("DataLoader at train.py:88: num_workers 0 -> 2, persistent_workers False -> True").
  std::vector<std::string> changed;
  bool gate_failed = false;               // a gated regression beyond max_regression_pct
  std::vector<std::string> ungated_regressions;  // "variant metric" rows beyond it, under 3 runs a side
};

}  // namespace trainlab
