// What `trainlab sweep` produces: one measured point's figures (as the recommendation, the table
// and the chart read them), the rows of its table, and the outcome (the record, the run folder, the
// table). Plain data: the runner fills it (harness/runner/sweep.h), the report renders it
// (harness/report/sweep_report.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/output_format.h"
#include "core/run_record.h"

namespace trainlab {

// One measured point as the recommendation sees it.
struct SweepFigures {
  bool ok = false;
  int workers = 0, prefetch = 0;
  bool pin_memory = false;
  bool persistent_workers = true;  // false: workers restart at each epoch ("restart" in labels)
  int64_t batch_size = 0;
  double samples_per_s = 0;
  double data_wait_pct = 0;
  double cpu_util_pct = 0;
  double samples_per_s_min = 0, samples_per_s_max = 0;  // over the point's rounds (--repeat)
  std::vector<double> round_samples_per_s;  // one per round, in round order; 0 for a round that failed
};

// One row of the sweep's table: a grid point's label, why it cannot apply here ("" when it can),
// and its records in the run's variants (one a round; none when it did not run).
struct SweepTableRow {
  std::string point;
  std::string not_applicable;
  std::vector<size_t> records;
};

struct SweepOutcome {
  RunRecord record;
  std::string run_dir;
  Table table;                    // the points, the not-applicable ones included; errors as notes
  bool bad_input = false;         // a point failed on bad input (e.g. a corrupt data file)
};

}  // namespace trainlab
