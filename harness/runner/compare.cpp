// compare: pairing, the per-metric samples, intervals and verdicts (the renderings: harness/report/compare_report.cpp).
//
// Samples. With several repetitions of a variant on both sides (runs made with --repeat, or the
// same variant recorded more than once), the unit is the repetition: its samples/s, step p50/p95,
// data-wait share and peak memory, so the interval includes run-to-run drift. Repetition k of one
// side is paired with repetition k of the other (run --ab interleaves A B A B, so a pair shared the
// machine's state), and the change is the median of the paired log-ratios (differences for the
// data-wait points) with the MAD-based interval of core/comparison_stats.h: one disturbed repetition
// moves it by one order statistic instead of widening it a hundredfold, as Welch's interval on the
// logarithms did. Before and after are then each side's median; the change is the median of the
// ratios, which need not equal after/before.
// With fewer than 3 a side, the unit is the measured step (peak memory then has one value a side
// and no interval), and the interval only covers step-to-step noise; the output says so.
//
// Steps of one run are not independent (the machine drifts), so their interval is a moving-block
// bootstrap with blocks of sqrt(n) steps, which widens it by the drift within the run.
//
// Verdict, conservative on a noisy machine: "improved" or "regressed" only when the whole interval
// lies beyond the threshold in that direction and, for the step-time rows of single runs, the U test
// finds the step times shifted (p < 0.05): a burst of slow steps from a neighbour on the machine
// moves the p95 but not the whole distribution; "unchanged" otherwise. The gate fails when the whole interval
// of a regression over repetitions lies beyond --max-regression. Rows of single runs never gate:
// identical runs in consecutive processes differ by more than one run's step interval covers
// (measured figures in README, "Compare").
#include "harness/runner/compare.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/errors.h"
#include "core/statistics.h"
#include "core/text.h"
#include "core/units.h"

namespace trainlab {
namespace {

struct Samples {
  std::vector<double> step_ms;
  std::vector<double> data_wait_pct;  // per step
  std::vector<double> throughput;     // per step: batch / step time
  // Per repetition.
  std::vector<double> rep_samples_per_s, rep_p50_ms, rep_p95_ms, rep_data_wait_pct, rep_peak_mib;
};

Samples samples_of(const std::vector<const VariantRecord*>& records) {
  Samples s;
  for (const VariantRecord* r : records) {
    std::vector<double> rep_steps;
    double wait_ns = 0, total_ns = 0;
    for (const StepRecord& step : r->steps) {
      if (step.warmup || step.step_ns <= 0) continue;
      const double ms = ns_to_ms(step.step_ns);
      const double wait = static_cast<double>(step.phase_ns[static_cast<size_t>(Phase::kDataWait)]);
      s.step_ms.push_back(ms);
      rep_steps.push_back(ms);
      s.data_wait_pct.push_back(100.0 * wait / static_cast<double>(step.step_ns));
      s.throughput.push_back(static_cast<double>(r->spec.batch_size) / ms_to_s(ms));
      wait_ns += wait;
      total_ns += static_cast<double>(step.step_ns);
    }
    if (rep_steps.empty()) continue;
    const VariantAggregate agg = aggregate(*r);
    s.rep_samples_per_s.push_back(agg.samples_per_s);
    s.rep_p50_ms.push_back(agg.step_ms_p50);
    s.rep_p95_ms.push_back(agg.step_ms_p95);
    s.rep_data_wait_pct.push_back(100.0 * wait_ns / total_ns);
    s.rep_peak_mib.push_back(bytes_to_mib(r->peak_memory_bytes));
  }
  return s;
}

// Samples/s of a set of per-step throughputs: total samples over total time (the harmonic mean).
double samples_per_s(const std::vector<double>& throughput) {
  double inverse = 0;
  for (double x : throughput) inverse += 1.0 / x;
  return static_cast<double>(throughput.size()) / inverse;
}
double p95(const std::vector<double>& xs) { return stats::percentile(xs, 95); }

void decide(CompareRow& row, const CompareOptions& options, CompareOutcome& outcome) {
  // The interval's bound nearest to no change (the point itself without an interval).
  const double low = row.has_interval ? row.change.low_pct : row.change.change_pct;
  const double high = row.has_interval ? row.change.high_pct : row.change.change_pct;
  const double nearest = low > 0 ? low : high < 0 ? high : 0.0;
  const bool u_agrees = !row.p_value || *row.p_value < 0.05;
  if (std::abs(nearest) < options.threshold_pct || !u_agrees) {
    row.verdict = "unchanged";
  } else {
    row.verdict = (nearest > 0) == row.higher_is_better ? "improved" : "regressed";
  }
  if (row.verdict == "regressed" && std::abs(nearest) > options.max_regression_pct) {
    if (row.gated) outcome.gate_failed = true;
    else outcome.ungated_regressions.push_back(row.variant + " " + row.metric);
  }
}

std::string env_line(const Environment& e) {
  return "threads " + std::to_string(e.intra_op_threads) + ", BLAS " + e.blas + ", LibTorch " +
         e.libtorch_version + ", device " + (e.cuda_device.empty() ? "cpu" : e.cuda_device) + ", CPU " +
         e.cpu_model + " x" + std::to_string(e.logical_cores);
}

}  // namespace

namespace {
CompareOutcome compare_groups(const RunRecord& before, const RunRecord& after, const CompareOptions& options,
                              const std::function<std::string(const VariantRecord&)>& key);

// The training DataLoader of a job run's first counted variant (rank 0's), or none.
const JobLoader* training_loader_of(const RunRecord& record) {
  for (const VariantRecord& v : record.variants) {
    if (!v.counts() || !v.job) continue;
    for (const JobLoader& l : v.job->loaders) {
      if (l.rank == 0 && l.training && *l.training) return &l;
    }
  }
  return nullptr;
}

}  // namespace

std::string job_loader_change(const RunRecord& before, const RunRecord& after) {
  const JobLoader* a = training_loader_of(before);
  const JobLoader* b = training_loader_of(after);
  if (a == nullptr || b == nullptr) return "";
  std::string changes;
  const auto add = [&](const std::string& name, const std::string& from, const std::string& to) {
    if (from != to) changes += (changes.empty() ? "" : ", ") + name + " " + from + " -> " + to;
  };
  const auto number = [](const std::optional<int64_t>& n) { return n ? std::to_string(*n) : std::string("default"); };
  const auto flag = [](bool on) { return std::string(on ? "True" : "False"); };
  add("num_workers", std::to_string(a->num_workers), std::to_string(b->num_workers));
  if (a->num_workers > 0 || b->num_workers > 0) {
    add("prefetch_factor", a->num_workers > 0 ? number(a->prefetch_factor) : "-",
        b->num_workers > 0 ? number(b->prefetch_factor) : "-");
    add("persistent_workers", flag(a->persistent_workers), flag(b->persistent_workers));
  }
  add("pin_memory", flag(a->pin_memory), flag(b->pin_memory));
  add("batch_size", number(a->batch_size), number(b->batch_size));
  if (changes.empty()) return "";
  const std::string at = a->file + ":" + std::to_string(a->line);
  const std::string b_at = b->file + ":" + std::to_string(b->line);
  return "the training DataLoader at " + at + (b_at != at ? " (after: " + b_at + ")" : "") + ": " + changes;
}

CompareOutcome compare_runs(const RunRecord& before, const RunRecord& after, const CompareOptions& options) {
  // A sweep's points share the variant name: they pair by loader settings and batch size too.
  const bool sweeps = before.kind == "sweep" && after.kind == "sweep";
  CompareOutcome outcome = compare_groups(before, after, options, [sweeps](const VariantRecord& v) {
    return sweeps ? v.spec.name() + " " + v.spec.loader_label() + " batch=" + std::to_string(v.spec.batch_size)
                  : v.spec.name();
  });
  if (const std::string loader = job_loader_change(before, after); !loader.empty()) outcome.changed.push_back(loader);
  return outcome;
}

CompareOutcome compare_ab(const RunRecord& run, const CompareOptions& options) {
  RunRecord a = run, b = run;
  a.variants.clear();
  b.variants.clear();
  for (const VariantRecord& v : run.variants) {
    if (v.label == "A") a.variants.push_back(v);
    if (v.label == "B") b.variants.push_back(v);
  }
  if (a.variants.empty() || b.variants.empty()) {
    throw InputError(run.run_id +
                     ": not an A/B run (no records labelled A and B; made by trainlab run --ab)");
  }
  a.run_id = "A";
  b.run_id = "B (" + (run.details.ab_changes.empty() ? std::string("changed") : run.details.ab_changes) + ")";
  return compare_groups(a, b, options, [](const VariantRecord&) { return std::string("A -> B"); });
}

namespace {

// Runs of different schemas or scenarios do not compare: throws InputError.
void check_comparable(const RunRecord& before, const RunRecord& after) {
  if (before.schema_version != after.schema_version) {
    throw InputError("cannot compare runs of different schemas (" + std::to_string(before.schema_version) +
                     " and " + std::to_string(after.schema_version) + ")");
  }
  if (before.scenario != after.scenario) {
    throw InputError("cannot compare different scenarios ('" + before.scenario + "' and '" + after.scenario +
                     "')");
  }
}

// The counted variants of both runs grouped by key, the keys in the order of the first run.
struct VariantGroups {
  std::vector<std::string> names;
  std::map<std::string, std::vector<const VariantRecord*>> by_name_before, by_name_after;
};

// Groups the variants by key (repetitions grouped); warns of the keys only in the second run.
VariantGroups group_variants(const RunRecord& before, const RunRecord& after,
                             const std::function<std::string(const VariantRecord&)>& key, CompareOutcome& outcome) {
  // Variants by name, in the order of the first run (repetitions grouped).
  VariantGroups groups;
  std::vector<std::string>& names = groups.names;
  auto& by_name_before = groups.by_name_before;
  auto& by_name_after = groups.by_name_after;
  for (const VariantRecord& v : before.variants) {
    if (!v.counts()) continue;  // failed, or disturbed and run again
    if (by_name_before.count(key(v)) == 0) names.push_back(key(v));
    by_name_before[key(v)].push_back(&v);
  }
  for (const VariantRecord& v : after.variants) {
    if (v.counts()) by_name_after[key(v)].push_back(&v);
  }
  for (const auto& [name, records] : by_name_after) {
    if (by_name_before.count(name) == 0)
      outcome.warnings.push_back("variant '" + name + "' is only in the second run");
  }
  return groups;
}

// What every row of one paired variant shares: its name, whether it is compared by repetition,
// the U test's p over its steps, and the options and outcome the rows go to.
struct VariantPairing {
  const std::string& name;
  bool by_repetition;
  std::optional<double> u_p;
  const CompareOptions& options;
  CompareOutcome& outcome;
};

// One metric's row: before and after, the change with its interval, the verdict; added to the outcome.
void add_row(const VariantPairing& pairing, const char* metric, bool higher_better, bool points,
             const std::vector<double>& xa, const std::vector<double>& xb,
             const std::function<double(const std::vector<double>&)>& stat, bool use_u) {
  const CompareOptions& options = pairing.options;
  const bool by_repetition = pairing.by_repetition;
  CompareRow row;
  row.variant = pairing.name;
  row.metric = metric;
  row.higher_is_better = higher_better;
  row.in_points = points;
  // A relative change needs positive values (a record without a peak-memory reading has 0).
  const auto positive = [](const std::vector<double>& xs) {
    return std::all_of(xs.begin(), xs.end(), [](double x) { return x > 0; });
  };
  if (!points && !(positive(xa) && positive(xb))) return;
  row.before = stat(xa);
  row.after = stat(xb);
  row.has_interval = xa.size() >= 2 && xb.size() >= 2;
  row.gated = by_repetition;
  if (row.has_interval && by_repetition) {
    // A few repetitions, paired by index: the robust paired interval (a bootstrap of 3 values
    // runs narrow; Welch's interval on means and standard deviations explodes on one bad round).
    row.change = stats::paired_robust_change(xa, xb, !points);
  } else if (row.has_interval) {
    const size_t block = static_cast<size_t>(std::lround(std::sqrt(std::min(xa.size(), xb.size()))));
    row.change =
        stats::bootstrap_relative_change(xa, xb, stat, options.iterations, 0.95, 12345, !points, block);
  } else {
    row.change.change_pct =
        points ? row.after - row.before : 100.0 * (row.after - row.before) / row.before;
    row.change.low_pct = row.change.high_pct = row.change.change_pct;
  }
  if (use_u) row.p_value = pairing.u_p;
  decide(row, options, pairing.outcome);
  pairing.outcome.rows.push_back(row);
}

// The Mann-Whitney U test's p over the two sides' steps; empty (with a warning) on too few steps.
std::optional<double> u_test_p(const std::string& name, const Samples& a, const Samples& b,
                               const CompareOptions& options, CompareOutcome& outcome) {
  std::optional<double> u_p;
  if (static_cast<int>(a.step_ms.size()) >= options.min_samples_for_u &&
      static_cast<int>(b.step_ms.size()) >= options.min_samples_for_u) {
    u_p = stats::mann_whitney_u(a.step_ms, b.step_ms).p_two_sided;
  } else {
    outcome.warnings.push_back(name + ": fewer than " + std::to_string(options.min_samples_for_u) +
                               " measured steps a side, no Mann-Whitney U test");
  }
  return u_p;
}

// One paired variant's rows: over repetitions with 3 or more a side, over steps otherwise.
void compare_variant(const std::string& name, const Samples& a, const Samples& b, const CompareOptions& options,
                     CompareOutcome& outcome) {
  const bool by_repetition = a.rep_samples_per_s.size() >= 3 && b.rep_samples_per_s.size() >= 3;
  if (!by_repetition) {
    outcome.warnings.push_back(name +
                               ": fewer than 3 runs a side, so the intervals are over steps and leave out "
                               "run-to-run drift, and no row gates (run each side with --repeat 3 or more, or "
                               "an interleaved A/B with run --ab, for intervals over repetitions)");
  }
  const std::optional<double> u_p = u_test_p(name, a, b, options, outcome);
  const VariantPairing pairing{name, by_repetition, u_p, options, outcome};
  if (by_repetition) {
    add_row(pairing, "samples/s", true, false, a.rep_samples_per_s, b.rep_samples_per_s, stats::median, false);
    add_row(pairing, "step p50 ms", false, false, a.rep_p50_ms, b.rep_p50_ms, stats::median, false);
    add_row(pairing, "step p95 ms", false, false, a.rep_p95_ms, b.rep_p95_ms, stats::median, false);
    add_row(pairing, "data wait %", false, true, a.rep_data_wait_pct, b.rep_data_wait_pct, stats::median, false);
  } else {
    add_row(pairing, "samples/s", true, false, a.throughput, b.throughput, samples_per_s, true);
    add_row(pairing, "step p50 ms", false, false, a.step_ms, b.step_ms, stats::median, true);
    add_row(pairing, "step p95 ms", false, false, a.step_ms, b.step_ms, p95, true);
    add_row(pairing, "data wait %", false, true, a.data_wait_pct, b.data_wait_pct, stats::mean, false);
  }
  add_row(pairing, "peak memory MiB", false, false, a.rep_peak_mib, b.rep_peak_mib, stats::geometric_mean, false);
}

// The two runs' variants paired by key, each pair's rows and verdicts; throws when none pairs.
CompareOutcome compare_groups(const RunRecord& before, const RunRecord& after, const CompareOptions& options,
                              const std::function<std::string(const VariantRecord&)>& key) {
  check_comparable(before, after);
  CompareOutcome outcome;
  outcome.before_label = before.run_id;
  outcome.after_label = after.run_id;
  if (env_line(before.environment) != env_line(after.environment)) {
    outcome.warnings.push_back("the environments differ: before " + env_line(before.environment) +
                               "; after " + env_line(after.environment));
  }
  VariantGroups groups = group_variants(before, after, key, outcome);
  int paired = 0;
  for (const std::string& name : groups.names) {
    if (groups.by_name_after.count(name) == 0) {
      outcome.warnings.push_back("variant '" + name + "' is only in the first run");
      continue;
    }
    const Samples a = samples_of(groups.by_name_before[name]), b = samples_of(groups.by_name_after[name]);
    if (a.step_ms.empty() || b.step_ms.empty()) continue;
    ++paired;
    compare_variant(name, a, b, options, outcome);
  }
  if (paired == 0) throw InputError("no variant of the first run pairs with one of the second (by name)");
  return outcome;
}
}  // namespace

}  // namespace trainlab
