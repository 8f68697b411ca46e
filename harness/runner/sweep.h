// The dataloader sweep: every point of workers x prefetch x pinned memory x batch size runs in its
// own child process on the same data; then the recommendation: the cheapest point within a
// tolerance (5 %) of the best throughput. The table and the SVG chart of throughput against workers
// are the report's (harness/report/sweep_report.h); run_sweep writes them through it.
// Points that cannot apply here (pinned memory without a CUDA device; prefetch with 0 workers) are
// reported as such, never silently dropped or run as something else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "harness/outcomes/sweep_outcome.h"
#include "harness/runner/lab.h"

namespace trainlab {

struct SweepGrid {
  std::vector<int> workers;
  std::vector<int> prefetch;
  std::vector<bool> pin_memory;
  std::vector<int64_t> batch_sizes;  // empty: the base spec's batch size
  std::vector<bool> persistent;      // empty: the base spec's (a job's loader: persistent_workers)
};

// The most points a grid may have (each runs in its own child, --repeat times).
inline constexpr size_t kMaxSweepPoints = 256;

// A sweep list ("0,1,2,4", "off,on") of the run option `name` (workers, prefetch, pin-memory,
// batch): each value read by the run options table (its parser and its range, core/run_options.h),
// so a bad one is the same line as on `run`; the spec field the option sets, read back, duplicates
// once. InputError naming the option on an empty list or an empty value.
template <typename T>
std::vector<T> parse_setting_list(const std::string& name, const std::string& text, T VariantSpec::*field);

struct SweepOptions {
  LabOptions lab;                 // base spec (resolved), results folder, timeout
  SweepGrid grid;
  bool cuda_available = false;    // pinned memory applies only when batches go to a CUDA device
  double tolerance_pct = 5.0;     // "within 5 % of the best"
  bool live_progress = false;     // rewrite one progress line (a terminal) instead of a line per point
  // A sweep of the user's job (job_variants.h): the folder made before the grid (its discovery run
  // is there already); empty: run_sweep makes one.
  std::string run_dir;
  // More rounds while a comparison cannot be read yet (the job's sweep without --repeat): after the
  // planned rounds, the points `undecided` names (sweep_point_label without the batch) run another
  // round each, until it names none, extra_rounds rounds have run, or one more round as long as the
  // longest would end past rounds_budget_s seconds of extra rounds. Null: the planned rounds only.
  std::function<std::vector<std::string>(const RunRecord&)> undecided;
  int extra_rounds = 0;
  double rounds_budget_s = 0;
};

struct SweepPoint {
  VariantSpec spec;
  std::string not_applicable;     // non-empty: not run, and why
};

// The grid expanded in run order (validated; throws InputError when no point can run or the grid
// has more than kMaxSweepPoints points).
std::vector<SweepPoint> expand_sweep(const SweepOptions& options, std::vector<std::string>* notes);

struct SweepRecommendation {
  size_t index = 0;               // into the figures
  size_t best_index = 0;
  std::string reason;
  // The best point and the runner-up are not separated: the paired interval of their 2+ rounds
  // holds no change. Then the reason says so and no point is recommended (one round: a caveat only).
  bool tied = false;
};

// The cheapest point (fewest workers, then fewest batches in flight, then pin off, then smallest
// batch) whose throughput is within tolerance_pct of the best. When that is the best point itself, it
// is recommended only where its rounds beat the runner-up's: the paired robust interval of their
// per-round ratios (round k with round k; stats::paired_robust_change) lies above no change;
// otherwise the two are tied and `tied` is set (one round: the reason says it cannot tell). Empty
// when no point succeeded.
std::optional<SweepRecommendation> recommend_sweep_point(const std::vector<SweepFigures>& figures,
                                                         double tolerance_pct, double data_bound_pct);

SweepOutcome run_sweep(const SweepOptions& options, std::ostream& progress);

}  // namespace trainlab
