// Sweep expansion and validation, the run loop with its live progress line (run.json rewritten
// after every point) and the recommendation; the table and the SVG chart come from the report
// (harness/report/sweep_report.h), which run_sweep calls to write them.
#include "harness/process/interrupt.h"
#include "harness/runner/run_liveness.h"
#include "harness/process/progress_ticker.h"
#include "harness/runner/sweep.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "core/atomic_file.h"
#include "core/comparison_stats.h"
#include "core/run_options.h"
#include "core/errors.h"
#include "core/text.h"
#include "harness/report/sweep_figures.h"
#include "harness/report/sweep_report.h"
#include "harness/runner/variant_runner.h"
#include "scenarios/registry.h"
#include "core/text.h"

namespace trainlab {
namespace fs = std::filesystem;
namespace {

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, ',')) parts.push_back(part);
  if (!text.empty() && text.back() == ',') parts.push_back("");
  return parts;
}

// Cost order: worker threads first (CPU cores), then batches in flight (memory), then pinned
// memory (page-locked RAM), then workers kept alive between epochs (their memory), then batch size.
std::tuple<int, int, int, int, int64_t> cost_of(const SweepFigures& f) {
  return {f.workers, f.workers * f.prefetch, f.pin_memory ? 1 : 0, f.workers > 0 && f.persistent_workers ? 1 : 0,
          f.batch_size};
}

// Whether the best point beats the runner-up beyond the noise of the rounds: their rounds paired
// (round k of each ran in the same pass over the grid), the gain's robust interval above 0. Sets
// `tied` and returns the words for the reason.
std::string separation_from(const SweepFigures& best, const SweepFigures& runner_up, bool with_batch, bool& tied) {
  std::vector<double> ours, theirs;
  for (size_t k = 0; k < std::min(best.round_samples_per_s.size(), runner_up.round_samples_per_s.size()); ++k) {
    if (best.round_samples_per_s[k] > 0 && runner_up.round_samples_per_s[k] > 0) {
      ours.push_back(best.round_samples_per_s[k]);
      theirs.push_back(runner_up.round_samples_per_s[k]);
    }
  }
  const std::string other = sweep_figures_label(runner_up, with_batch) + ", " + format_text("%.1f samples/s", runner_up.samples_per_s);
  if (ours.size() < 2) {  // a caveat, not a tie: nothing measured the noise
    return "from one round, which cannot tell it from the runner-up (" + other +
           ") beyond noise: --repeat 3 measures whether they are separated";
  }
  const stats::ChangeEstimate gain = stats::paired_robust_change(theirs, ours);
  const std::string figure = format_text("%+.1f %%", gain.change_pct) + " [" + format_text("%+.1f", gain.low_pct) + ", " +
                             format_text("%+.1f", gain.high_pct) + "] over " + std::to_string(gain.pairs) + " paired rounds";
  tied = !(gain.low_pct > 0);
  return tied ? "tied with the runner-up (" + other + "): " + figure + " holds no change"
              : "ahead of the runner-up (" + other + ") by " + figure;
}

}  // namespace

template <typename T>
std::vector<T> parse_setting_list(const std::string& name, const std::string& text, T VariantSpec::*field) {
  const RunOption* option = find_run_option(name);
  if (option == nullptr) throw std::logic_error("no run option " + name);
  if (text.empty()) throw InputError("--" + name + " needs at least one value (comma-separated, each " + option->value_name + ")");
  std::vector<T> values;
  for (const std::string& part : split_commas(text)) {
    if (part.empty()) throw InputError("empty value in --" + name + " '" + text + "'");
    VariantSpec spec;
    option->apply(spec, part);
    if (std::find(values.begin(), values.end(), spec.*field) == values.end()) values.push_back(spec.*field);
  }
  return values;
}

template std::vector<int> parse_setting_list(const std::string&, const std::string&, int VariantSpec::*);
template std::vector<int64_t> parse_setting_list(const std::string&, const std::string&, int64_t VariantSpec::*);
template std::vector<bool> parse_setting_list(const std::string&, const std::string&, bool VariantSpec::*);

std::vector<SweepPoint> expand_sweep(const SweepOptions& options, std::vector<std::string>* notes) {
  const SweepGrid& grid = options.grid;
  if (grid.workers.empty() || grid.prefetch.empty() || grid.pin_memory.empty()) {
    throw InputError("sweep needs at least one value for --workers, --prefetch and --pin-memory");
  }
  std::vector<int64_t> batches = grid.batch_sizes;
  if (batches.empty()) batches.push_back(options.lab.base.batch_size);
  const std::vector<bool> persistent =
      grid.persistent.empty() ? std::vector<bool>{options.lab.base.persistent_workers} : grid.persistent;
  size_t planned_per_setting = 0;  // per (batch, pin): workers=0 runs once, other counts once per prefetch
  for (int workers : grid.workers) planned_per_setting += workers == 0 ? 1 : grid.prefetch.size() * persistent.size();
  const size_t planned = planned_per_setting * batches.size() * grid.pin_memory.size();
  if (planned > kMaxSweepPoints) {
    throw InputError("invalid sweep grid of " + std::to_string(planned) + " points (must be 1 to " +
                     std::to_string(kMaxSweepPoints) + ": fewer --workers, --prefetch, --pin-memory or --batch values)");
  }
  std::vector<SweepPoint> points;
  bool prefetch_collapsed = false;
  for (int64_t batch : batches) {
    for (bool pin : grid.pin_memory) {
      for (int workers : grid.workers) {
        for (size_t p = 0; p < grid.prefetch.size(); ++p) {
          for (size_t k = 0; k < persistent.size(); ++k) {
            if (workers == 0 && (p > 0 || k > 0)) {  // with 0 workers nothing is prefetched: one point, not several
              prefetch_collapsed = true;
              continue;
            }
            SweepPoint point;
            point.spec = options.lab.base;
            point.spec.batch_size = batch;
            point.spec.workers = workers;
            point.spec.prefetch = grid.prefetch[p];
            point.spec.pin_memory = pin;
            point.spec.persistent_workers = workers > 0 ? bool(persistent[k]) : options.lab.base.persistent_workers;
            if (!options.lab.measure) resolve(point.spec, scenario_of(point.spec));  // validates every value
            if (pin && !options.cuda_available) {
              point.not_applicable = "pinned memory needs a CUDA device (batches stay on the CPU here)";
            }
            points.push_back(point);
          }
        }
      }
    }
  }
  if (prefetch_collapsed && notes != nullptr) {
    notes->push_back("prefetch does not apply with 0 workers (the training thread builds each batch when it "
                     "needs it): workers=0 runs once per pin/batch setting");
  }
  const bool any_runnable =
      std::any_of(points.begin(), points.end(), [](const SweepPoint& p) { return p.not_applicable.empty(); });
  if (!any_runnable) {
    throw InputError("impossible sweep: every point needs pinned memory, which needs a CUDA device "
                     "(add off to --pin-memory)");
  }
  if (notes != nullptr && !options.cuda_available &&
      std::find(grid.pin_memory.begin(), grid.pin_memory.end(), true) != grid.pin_memory.end()) {
    notes->push_back("pin-memory=on is not applicable here: no CUDA device, so batches are never copied to "
                     "one; those points are listed as n/a and not run");
  }
  return points;
}

std::optional<SweepRecommendation> recommend_sweep_point(const std::vector<SweepFigures>& figures,
                                                         double tolerance_pct, double data_bound_pct) {
  std::optional<size_t> best;
  for (size_t i = 0; i < figures.size(); ++i) {
    if (figures[i].ok && (!best || figures[i].samples_per_s > figures[*best].samples_per_s)) best = i;
  }
  if (!best) return std::nullopt;
  const double floor_sps = figures[*best].samples_per_s * (1.0 - tolerance_pct / 100.0);
  size_t pick = *best;
  for (size_t i = 0; i < figures.size(); ++i) {
    if (figures[i].ok && figures[i].samples_per_s >= floor_sps && cost_of(figures[i]) < cost_of(figures[pick])) {
      pick = i;
    }
  }
  std::set<int64_t> batches;
  for (const SweepFigures& f : figures) batches.insert(f.batch_size);
  const bool with_batch = batches.size() > 1;
  const SweepFigures& chosen = figures[pick];
  const SweepFigures& top = figures[*best];
  SweepRecommendation rec;
  rec.index = pick;
  rec.best_index = *best;
  std::string reason = sweep_figures_label(chosen, with_batch) + ": " + format_text("%.1f samples/s", chosen.samples_per_s);
  if (pick == *best) {
    reason += ", the best measured, and no cheaper setting came within " + format_text("%.0f %%", tolerance_pct) + " of it";
    std::optional<size_t> runner_up;
    for (size_t i = 0; i < figures.size(); ++i) {
      if (i != *best && figures[i].ok && (!runner_up || figures[i].samples_per_s > figures[*runner_up].samples_per_s))
        runner_up = i;
    }
    if (runner_up) reason += "; " + separation_from(top, figures[*runner_up], with_batch, rec.tied);
  } else {
    reason += ", " + format_text("%.1f %%", 100.0 * chosen.samples_per_s / top.samples_per_s) + " of the best (" +
              sweep_figures_label(top, with_batch) + ", " + format_text("%.1f samples/s", top.samples_per_s) +
              "): costlier settings gain less than " + format_text("%.0f %%", tolerance_pct);
  }
  reason += "; data wait " + format_text("%.1f %%", chosen.data_wait_pct) + " of the step";
  if (chosen.data_wait_pct >= data_bound_pct) {
    // Did workers hide the wait elsewhere in the grid without buying throughput?
    const SweepFigures* hidden = nullptr;
    for (const SweepFigures& f : figures) {
      if (f.ok && f.workers > 0 && f.data_wait_pct < data_bound_pct &&
          (hidden == nullptr || f.data_wait_pct < hidden->data_wait_pct)) {
        hidden = &f;
      }
    }
    if (hidden != nullptr) {
      reason += " - workers hide the wait (" + format_text("%.1f %%", hidden->data_wait_pct) + " at " +
                sweep_figures_label(*hidden, with_batch) + ") but buy no throughput: the CPU is saturated (" +
                format_text("%.0f %%", hidden->cpu_util_pct) + " utilised) and the data work takes the step's cores; "
                "give the step fewer threads (--threads) or make each sample cheaper (decoded cache, lighter "
                "augmentation)";
    } else {
      // What the grid says of more workers: measured and no better, failed, or not in it.
      const auto more_workers = [&](bool ok) {
        return std::any_of(figures.begin(), figures.end(),
                           [&](const SweepFigures& f) { return f.ok == ok && f.workers > chosen.workers; });
      };
      if (more_workers(true)) {
        reason += " - still input-bound: more workers do not remove it here; make each sample cheaper "
                  "(decoded cache, lighter augmentation) or add CPU cores";
      } else if (more_workers(false)) {
        reason += " - still input-bound, and more workers could not be measured: the job failed with them (the "
                  "errors above say why); make each sample cheaper (decoded cache, lighter augmentation) or make "
                  "the loader take workers";
      } else {
        reason += " - still input-bound: no point with more workers was in the grid (add them to --workers)";
      }
    }
  }
  // Where the curve flattens: the baseline point (0 workers, same other settings) for contrast.
  for (const SweepFigures& f : figures) {
    if (f.ok && f.workers == 0 && f.batch_size == chosen.batch_size && f.pin_memory == chosen.pin_memory &&
        chosen.workers > 0 && f.samples_per_s > 0) {
      reason += "; " + format_text("%.2fx", chosen.samples_per_s / f.samples_per_s) + " the throughput of workers=0 (" +
                format_text("data wait %.1f %%", f.data_wait_pct) + ")";
      break;
    }
  }
  rec.reason = reason;
  return rec;
}

namespace {

// What run_sweep's stages share: the grid, the record as it grows, the live line and the counts.
struct SweepRun {
  const SweepOptions& options;
  std::ostream& progress;
  SweepOutcome& outcome;
  std::vector<SweepPoint> points;
  bool with_batch = false;  // the grid sweeps the batch too: it is in the points' labels
  size_t repeat = 1;        // rounds of the grid (--repeat)
  size_t total = 0;         // point runs planned: the runnable points x the rounds
  size_t done = 0;
  std::vector<std::vector<size_t>> records_of_point;  // each point's records (indices into record.variants)
  std::vector<int> reruns_of_point;
  int max_reruns = 0;
  int kept_under_load = 0;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
};

// The runnable points not measured yet: the rest of round `rep` from point `next`, and the later
// rounds; each (point, record saying why it has no figures).
std::vector<std::pair<size_t, VariantRecord>> not_run_points(const SweepRun& run, size_t rep, size_t next,
                                                             const std::string& why) {
  std::vector<std::pair<size_t, VariantRecord>> rest;
  for (size_t r = rep; r < run.repeat; ++r) {
    for (size_t i = (r == rep ? next : 0); i < run.points.size(); ++i) {
      if (!run.points[i].not_applicable.empty()) continue;
      VariantRecord v;
      v.spec = run.points[i].spec;
      v.repetition = static_cast<int>(r);
      v.error = why;
      v.error_kind = "interrupted";
      rest.emplace_back(i, std::move(v));
    }
  }
  return rest;
}

// run.json as it stands when the sweep starts and after each point (the points not run yet marked
// so), so a sweep that is killed, even by SIGKILL, leaves a record that history, compare and
// diagnose read, and one still running reads as such (its running mark, run_liveness.h).
void write_sweep_progress(const SweepRun& run, size_t rep, size_t next) {
  RunRecord partial = run.outcome.record;
  const char* why = "not run yet: the sweep had not reached this point (still running, or killed)";
  for (auto& [point, v] : not_run_points(run, rep, next, why)) partial.variants.push_back(std::move(v));
  for (const VariantRecord& v : partial.variants) {
    if (v.ok()) {
      partial.environment = v.environment;
      break;
    }
  }
  write_run_record((fs::path(run.outcome.run_dir) / "run.json").string(), partial);
}

// Point i in round `rep`: measured in its own child, with the lab's disturbance guard (a point
// slowed by another process is left out and run again, at most lab.disturbance_reruns_per_variant
// times per point, then kept and said so); its line, and run.json after it.
void measure_point(SweepRun& run, ProgressTicker& ticker, size_t i, size_t rep, size_t point_number) {
  RunRecord& record = run.outcome.record;
  const std::string label =
      sweep_point_label(run.points[i].spec, run.with_batch) + (run.repeat > 1 ? " #" + std::to_string(rep + 1) : "");
  const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - run.start).count();
  VariantRunOptions run_options;
  if (ticker.live()) {
    run_options.progress_file = (fs::path(run.outcome.run_dir) / ".progress").string();
    ticker.start(run.done + 1, run.total, label, run_options.progress_file, elapsed_s,
                 run.done == 0 ? -1.0 : elapsed_s / static_cast<double>(run.done));
  }
  run_options.run_dir = run.outcome.run_dir;
  run_options.timeout_s = run.options.lab.variant_timeout_s;
  run_options.memory_limit_bytes = run.options.lab.memory_limit_bytes;
  run_options.file_stem =
      "point-" + std::to_string(point_number) + (run.repeat > 1 ? ".rep" + std::to_string(rep + 1) : "");
  const auto point_start = std::chrono::steady_clock::now();
  const std::string first_stem = run_options.file_stem;
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0) run_options.file_stem = first_stem + ".rerun" + std::to_string(attempt);
    record.variants.push_back(run.options.lab.measure ? run.options.lab.measure(run.points[i].spec, run_options)
                                                      : run_variant_isolated(run.points[i].spec, run_options));
    VariantRecord& ran = record.variants.back();
    ran.repetition = static_cast<int>(rep);
    const DisturbanceCall call = judge_disturbance(ran, *run.options.lab.thresholds, interrupted() ? 0 : run.max_reruns,
                                                   &run.reruns_of_point[i], label, run.progress);
    if (call == DisturbanceCall::kRerun) continue;
    if (call == DisturbanceCall::kKept) {
      ++run.kept_under_load;
      run.progress << label << " kept though disturbed (" << ran.disturbed_kept << "): its re-runs are spent"
                   << std::endl;
    }
    break;
  }
  ticker.stop();
  run.records_of_point[i].push_back(record.variants.size() - 1);
  ++run.done;
  const VariantRecord& v = record.variants.back();
  const double point_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - point_start).count();
  run.progress << "[" << run.done << "/" << run.total << "] " << label << ": "
               << (v.ok() ? format_text("%.1f samples/s", aggregate(v).samples_per_s) : "FAILED (" + v.error + ")")
               << format_text(", %.1f s", point_s) << std::endl;
  write_sweep_progress(run, rep, i + 1);
}

// Every round of the grid, point by point (with --repeat the grid runs in rounds, so drift on a
// shared machine hits each point alike); an interrupt records what is left as not run. True when
// the sweep was interrupted.
bool measure_the_grid(SweepRun& run, ProgressTicker& ticker) {
  RunRecord& record = run.outcome.record;
  for (size_t rep = 0; rep < run.repeat && !run.outcome.bad_input; ++rep) {
    size_t point_number = 0;
    for (size_t i = 0; i < run.points.size(); ++i) {
      if (!run.points[i].not_applicable.empty()) continue;
      if (interrupted()) {  // what is left is recorded as not run
        for (auto& [point, v] : not_run_points(run, rep, i, "not run: the sweep was interrupted")) {
          record.variants.push_back(std::move(v));
          run.records_of_point[point].push_back(record.variants.size() - 1);
        }
        return true;
      }
      measure_point(run, ticker, i, rep, ++point_number);
      if (record.variants.back().error_kind == "input") {  // e.g. a corrupt data file: every other point would fail the same way
        run.outcome.bad_input = true;
        break;
      }
    }
  }
  return false;
}

// After the planned rounds, more rounds of the points SweepOptions::undecided names, while it names
// any of the grid's and the rounds and their budget last (see SweepOptions); a note says what ran
// and why. An interrupt ends them (the planned rounds all ran).
void measure_undecided_rounds(SweepRun& run, ProgressTicker& ticker, std::vector<std::string>& notes) {
  const SweepOptions& options = run.options;
  if (!options.undecided || options.extra_rounds <= 0 || run.outcome.bad_input) return;
  const auto start = std::chrono::steady_clock::now();
  double longest_round_s = 0;
  size_t rounds = 0;
  std::set<std::string> points_run;
  std::string why_stopped;
  for (size_t rep = run.repeat; rep < run.repeat + static_cast<size_t>(options.extra_rounds); ++rep) {
    const std::vector<std::string> undecided = options.undecided(run.outcome.record);
    if (undecided.empty()) break;
    const double spent_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (spent_s + longest_round_s > options.rounds_budget_s) {
      why_stopped = format_text(", where another round would have ended past the %.0f s they may take", options.rounds_budget_s);
      break;
    }
    const auto round_start = std::chrono::steady_clock::now();
    size_t point_number = 0, measured = 0;  // as in the grid's rounds: the files of one point share their number
    for (size_t i = 0; i < run.points.size(); ++i) {
      if (!run.points[i].not_applicable.empty()) continue;
      ++point_number;
      const std::string label = sweep_point_label(run.points[i].spec, false);
      if (std::find(undecided.begin(), undecided.end(), label) == undecided.end()) continue;
      if (interrupted()) return;  // the planned rounds all ran: the extra ones just stop
      ++run.total;
      ++measured;
      measure_point(run, ticker, i, rep, point_number);
      points_run.insert(sweep_point_label(run.points[i].spec, run.with_batch));
      if (run.outcome.record.variants.back().error_kind == "input") {
        run.outcome.bad_input = true;
        return;
      }
    }
    if (measured == 0) break;  // it named no point of the grid
    longest_round_s = std::max(
        longest_round_s, std::chrono::duration<double>(std::chrono::steady_clock::now() - round_start).count());
    ++rounds;
    if (rounds == static_cast<size_t>(options.extra_rounds)) why_stopped = ", the most it adds";
  }
  if (rounds > 0) {
    std::string names;
    for (const std::string& p : points_run) names += (names.empty() ? "" : ", ") + p;
    notes.push_back(count_noun(rounds, "more round") + " of " + names + " after the " + std::to_string(run.repeat) +
                    ": their comparison could not be read yet (its paired interval held no change)" + why_stopped);
  }
}

// The recommendation over the measured points (a point's rounds folded into one figure each) into
// the reading and the details; returns the figures and, when there is one, the recommended index.
std::vector<SweepFigures> recommend_from_points(const SweepRun& run, SweepDetails& details,
                                                std::optional<size_t>* recommended) {
  RunRecord& record = run.outcome.record;
  std::vector<SweepFigures> figures;
  std::vector<int> figure_of_point(run.points.size(), -1);
  for (size_t i = 0; i < run.points.size(); ++i) {
    if (run.records_of_point[i].empty()) continue;
    std::vector<SweepFigures> rounds;
    for (size_t index : run.records_of_point[i]) rounds.push_back(sweep_figures_of(record.variants[index]));
    figure_of_point[i] = static_cast<int>(figures.size());
    figures.push_back(median_of_rounds(rounds));
  }
  const double data_bound_pct = run.options.lab.thresholds->value(threshold::input_bound::high_pct);
  const auto rec = recommend_sweep_point(figures, run.options.tolerance_pct, data_bound_pct);
  if (!rec) {
    record.reading.push_back("No recommendation: no point completed.");
    return figures;
  }
  *recommended = rec->index;
  size_t recommended_record = 0, best_record = 0;
  for (size_t i = 0; i < run.points.size(); ++i) {
    if (figure_of_point[i] == static_cast<int>(rec->index)) recommended_record = run.records_of_point[i].front();
    if (figure_of_point[i] == static_cast<int>(rec->best_index)) best_record = run.records_of_point[i].front();
  }
  if (rec->tied) {
    // The top points are not separated: no recommendation, and the reading says why.
    record.reading.push_back("No recommendation, the top points are tied: " + rec->reason + ".");
  } else {
    details.recommendation = RecommendedPoint{static_cast<int64_t>(recommended_record), static_cast<int64_t>(best_record),
                                              sweep_figures_label(figures[rec->index], run.with_batch), rec->reason};
    record.reading.push_back("Recommended: " + rec->reason + ".");
  }
  return figures;
}

// The notes under the sweep: points kept under load, an interrupt, and on a CPU device the loader's
// workers and the step's intra-op threads sharing the cores.
void add_sweep_notes(const SweepRun& run, bool stopped, std::vector<std::string>& notes) {
  const RunRecord& record = run.outcome.record;
  if (run.kept_under_load > 0) {
    notes.push_back(count_noun(static_cast<size_t>(run.kept_under_load), "point run") +
                    " measured under another process's load, kept once its re-runs were spent: the chart and "
                    "recommendation include them");
  }
  if (stopped) {
    const size_t not_run = static_cast<size_t>(std::count_if(
        record.variants.begin(), record.variants.end(), [](const VariantRecord& v) { return v.error_kind == "interrupted"; }));
    notes.push_back("the sweep was interrupted with " + count_noun(not_run, run.repeat > 1 ? "point round" : "point") +
                    " of " + std::to_string(run.total) + " not run; the recommendation weighs the measured ones only");
  }
}

void add_cpu_sharing_note(const RunRecord& record, std::vector<std::string>& notes) {
  for (const VariantRecord& v : record.variants) {
    const int cores = v.environment.logical_cores, threads = v.environment.intra_op_threads;
    if (v.ok() && v.device == "cpu" && cores > 0 && v.spec.workers + threads > cores) {
      notes.push_back("from workers=" + std::to_string(v.spec.workers) + " on, loader workers plus the step's " +
                      count_noun(threads, "intra-op thread") + " exceed the " + count_noun(cores, "core") +
                      ": they compete with the training step (--threads sets the step's share)");
      break;
    }
  }
}

// Where other processes already hold cores that the points' default threads (one per core) would
// need, every point runs at the cores left, as the lab does: a thread pool beside them waits for
// its slowest thread on every op, and the sweep would rank the points by that wait.
void choose_threads_at_start(SweepRun& run) {
  std::vector<VariantSpec> point_specs;
  for (const SweepPoint& p : run.points) point_specs.push_back(p.spec);
  if (const std::optional<ThreadLowering> chosen = threads_left_at_start(point_specs, *run.options.lab.thresholds)) {
    for (SweepPoint& p : run.points) p.spec.threads = chosen->to_threads;
    run.outcome.record.details.thread_lowerings.push_back(*chosen);
    run.progress << threads_at_start_words(*chosen, "every point") << std::endl;
  }
}

}  // namespace

SweepOutcome run_sweep(const SweepOptions& options, std::ostream& progress) {
  std::vector<std::string> notes;
  SweepOutcome outcome;
  SweepRun run{options, progress, outcome, expand_sweep(options, &notes)};
  RunRecord& record = outcome.record;
  record.kind = "sweep";
  record.scenario = options.lab.base.scenario;
  record.created_utc = utc_now("%Y-%m-%dT%H:%M:%SZ");
  if (options.run_dir.empty()) {
    outcome.run_dir = make_run_dir(options.lab.results_dir, record.scenario, "sweep", &record.run_id);
  } else {
    outcome.run_dir = options.run_dir;
    record.run_id = fs::path(options.run_dir).filename().string();
  }
  const RunningMark running(outcome.run_dir);  // from the first run.json to the finished one

  std::set<int64_t> batches;
  for (const SweepPoint& p : run.points) batches.insert(p.spec.batch_size);
  run.with_batch = batches.size() > 1;
  const size_t runnable = static_cast<size_t>(std::count_if(
      run.points.begin(), run.points.end(), [](const SweepPoint& p) { return p.not_applicable.empty(); }));
  progress << "trainlab sweep: " << (options.lab.measure ? "" : "scenario ") << record.scenario << ", " << count_noun(runnable, "point") << " to run"
           << (runnable < run.points.size() ? " (" + std::to_string(run.points.size() - runnable) + " not applicable)" : "")
           << ", results in " << outcome.run_dir << std::endl;
  choose_threads_at_start(run);

  ProgressTicker ticker(progress, options.live_progress);
  run.start = std::chrono::steady_clock::now();
  run.repeat = static_cast<size_t>(std::max(1, options.lab.repeat));
  run.total = runnable * run.repeat;
  run.records_of_point.resize(run.points.size());
  run.reruns_of_point.assign(run.points.size(), 0);
  run.max_reruns = static_cast<int>(options.lab.thresholds->value(threshold::lab::disturbance_reruns_per_variant));
  SweepDetails details;
  details.tolerance_pct = options.tolerance_pct;
  details.repeat = run.repeat;
  for (const SweepPoint& p : run.points) {
    if (!p.not_applicable.empty()) details.not_applicable.push_back({sweep_point_label(p.spec, run.with_batch), p.not_applicable});
  }
  record.details.sweep = details;
  write_sweep_progress(run, 0, 0);
  const bool stopped = measure_the_grid(run, ticker);  // Ctrl-C / SIGTERM: the points measured so far are recorded
  if (!stopped) measure_undecided_rounds(run, ticker, notes);
  for (const VariantRecord& v : record.variants) {
    if (v.ok()) {
      record.environment = v.environment;
      break;
    }
  }
  add_sweep_notes(run, stopped, notes);

  std::optional<size_t> recommended;
  const std::vector<SweepFigures> figures = recommend_from_points(run, details, &recommended);
  add_cpu_sharing_note(record, notes);
  for (const std::string& note : notes) record.reading.push_back("Note: " + note + ".");
  append_load_words(record);
  const std::string chart_name = "throughput_vs_workers.svg";
  if (std::any_of(figures.begin(), figures.end(), [](const SweepFigures& f) { return f.ok; })) {
    write_file_atomically((fs::path(outcome.run_dir) / chart_name).string(),
                          render_sweep_svg("trainlab sweep: " + record.scenario + " (" + record.run_id + ")", figures,
                                           recommended));
    details.chart = chart_name;
  }
  details.notes = notes;
  record.details.sweep = details;
  write_run_record((fs::path(outcome.run_dir) / "run.json").string(), record);

  // The table: the grid's points in order, the not-applicable ones where they fall.
  std::vector<SweepTableRow> layout;
  for (size_t i = 0; i < run.points.size(); ++i) {
    layout.push_back({sweep_point_label(run.points[i].spec, run.with_batch), run.points[i].not_applicable,
                      run.records_of_point[i]});
  }
  outcome.table = sweep_table(record, layout);
  return outcome;
}

}  // namespace trainlab