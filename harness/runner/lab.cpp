// Baseline lab and single run: spawn variants, collect records, read the lab, write run.json.
#include "harness/runner/lab.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <functional>
#include <optional>
#include <sstream>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/hash.h"
#include "core/json_text.h"
#include "core/run_record.h"
#include "core/text.h"
#include "core/units.h"
#include "diagnostics/baseline_reading.h"
#include "harness/dist/dist_env.h"
#include "harness/runner/compare.h"
#include "harness/process/child_process.h"
#include "harness/process/interrupt.h"
#include "harness/process/progress_ticker.h"
#include "harness/report/lab_report.h"
#include "harness/runner/run_liveness.h"
#include "harness/runner/variant_runner.h"
#include "profiler/disturbance.h"
#include "scenarios/registry.h"

namespace trainlab {
namespace fs = std::filesystem;
namespace {

void report_progress(std::ostream& progress, size_t k, size_t n, const VariantRecord& record, double wall_s) {
  progress << "[" << k << "/" << n << "] " << record.spec.name() << ": ";
  if (record.ok()) {
    progress << format_text("%.1f samples/s", aggregate(record).samples_per_s);
    if (record.steps_cut_by_budget > 0) {
      progress << " over " << aggregate(record).measured_steps << " measured steps"
               << format_text(" (the %.0f s loop budget)", record.spec.max_loop_s);
    } else if (record.steps_added_for_min_loop > 0) {
      progress << " over " << aggregate(record).measured_steps << " measured steps"
               << format_text(" (measured for %g s at least)", record.spec.min_loop_s);
    }
  } else if (record.error_kind == "unavailable") {
    progress << "not measured (" << record.error << ")";
  } else {
    progress << "FAILED (" << record.error << ")";
  }
  progress << format_text(", %.1f s", wall_s) << std::endl;
}

// The pending text of a variant the run has not reached when its run.json is written.
const char kNotRunYet[] = "not run yet: the run had not reached this variant (still running, or killed)";

// run.json as it stands: what finished, then `pending` (not run yet), so a run that is killed (even
// by SIGKILL) leaves a record history, compare and diagnose read, and one still running reads as
// such (its running mark, run_liveness.h).
void write_progress_record(const LabOutcome& outcome, std::vector<VariantRecord> pending) {
  if (outcome.quiet) return;
  RunRecord record = outcome.record;
  for (VariantRecord& v : pending) record.variants.push_back(std::move(v));
  for (const VariantRecord& v : record.variants) {
    if (v.ok()) {
      record.environment = v.environment;
      break;
    }
  }
  write_run_record((fs::path(outcome.run_dir) / "run.json").string(), record);
}

// A run's record and folder, marked running, before any variant ran. Under a launcher rank 0 makes
// the folder and names it to its peers, which wait for it (as long as a rendezvous would).
LabOutcome start_run(const LabOptions& options, const std::string& kind) {
  LabOutcome outcome;
  outcome.record.kind = kind;
  outcome.record.scenario = options.base.scenario;
  outcome.record.created_utc = utc_now("%Y-%m-%dT%H:%M:%SZ");
  if (options.launch && !options.launch->makes_folder()) {
    outcome.run_dir = wait_for_run_dir(*options.launch, options.results_dir, options.base.dist_timeout_s);
    outcome.record.run_id = fs::path(outcome.run_dir).filename().string();
    outcome.quiet = true;
    return outcome;
  }
  outcome.run_dir = make_run_dir(options.results_dir, options.base.scenario, kind, &outcome.record.run_id);
  outcome.running = std::make_shared<RunningMark>(outcome.run_dir);
  write_progress_record(outcome, {});
  if (options.launch) publish_run_dir(*options.launch, options.results_dir, outcome.run_dir);
  if (options.launch && options.launch->remote()) {
    // The first rank on another machine: a folder there for its machine's ranks (their records,
    // logs and traces, also sent to rank 0), quiet; the merged run is rank 0's.
    outcome.quiet = true;
    outcome.remote_copy = true;
  }
  return outcome;
}

// The run's record in its folder, finished (rank 0's job under a launcher); the launch's pointer
// and the running mark go.
void finish_run(const LabOptions& options, LabOutcome& outcome) {
  if (outcome.remote_copy) {
    write_run_record((fs::path(outcome.run_dir) / "run.json").string(), outcome.record);
    outcome.running.reset();
    withdraw_run_dir(*options.launch, options.results_dir);
    return;
  }
  if (outcome.quiet) return;
  write_run_record((fs::path(outcome.run_dir) / "run.json").string(), outcome.record);
  outcome.running.reset();
  if (options.launch) withdraw_run_dir(*options.launch, options.results_dir);
}

// Where a quiet rank's progress goes: nowhere.
std::ostream& null_stream() {
  static std::ostream sink(nullptr);
  return sink;
}

// The variants a run planned but has not run yet (the rest of round `rep` after index `next`, and
// the later planned rounds), each a record that says why it has no figures.
std::vector<VariantRecord> not_run_variants(const std::vector<VariantSpec>& specs, const std::vector<std::string>& labels,
                                            size_t rep, size_t next, size_t planned_rounds, const std::string& why) {
  std::vector<VariantRecord> rest;
  for (size_t r = rep; r < planned_rounds; ++r) {
    for (size_t i = (r == rep ? next : 0); i < specs.size(); ++i) {
      VariantRecord v;
      v.spec = specs[i];
      v.repetition = static_cast<int>(r);
      if (!labels.empty()) v.label = labels[i];
      v.error = why;
      v.error_kind = "interrupted";
      rest.push_back(std::move(v));
    }
  }
  return rest;
}

// Ranks x --threads above this machine's cores: every rank's compute waits for the others' threads.
void warn_of_oversubscription(const std::vector<VariantSpec>& specs, std::ostream& progress) {
  const int cores = usable_cores();
  for (const VariantSpec& spec : specs) {
    if (spec.nproc <= 1 || spec.threads <= 0 || spec.nproc * spec.threads <= cores) continue;
    progress << "warning: " << count_noun(spec.nproc, "rank") << " x " << count_noun(spec.threads, "thread") << " = "
             << spec.nproc * spec.threads << " threads on " << count_noun(cores, "core")
             << ": oversubscribed, each rank's compute waits for the others' threads (leave --threads out: each "
             << "rank then gets " << count_noun(std::max(1, cores / spec.nproc), "thread") << ")" << std::endl;
    return;
  }
}

// Whether the lab chooses its variants' threads: one rank each, no --threads, no OMP_NUM_THREADS
// (LibTorch's default, a thread per core). Then, where other processes come to hold cores, it
// lowers them (threads_beside_others); a count the user set is theirs and is kept.
bool lab_may_lower_threads(const std::vector<VariantSpec>& specs) {
  if (std::getenv("OMP_NUM_THREADS") != nullptr) return false;
  return std::all_of(specs.begin(), specs.end(),
                     [](const VariantSpec& s) { return s.threads <= 0 && s.nproc <= 1; });
}

// The threads that fit beside the sampled load: the cores it leaves (threads_left_beside), no more
// than this process may use.
int threads_fitting_beside(const OthersLoad& load) {
  return std::min(threads_left_beside(load.machine_cores, load.busy_cores), usable_cores());
}

// After a disturbed repetition `ran`: samples the cores other processes keep busy while the lab
// idles (lab.others_load_sample_s); where they hold cores that `ran`'s threads needed, the lowering
// to the cores left (threads_left_beside), else nothing.
std::optional<ThreadLowering> threads_beside_others(const VariantRecord& ran, const Thresholds& thresholds,
                                                    const std::string& ran_name) {
  const int threads = ran.environment.intra_op_threads;
  if (threads <= 1) return std::nullopt;
  const auto window_ms = static_cast<int>(1000 * thresholds.value(threshold::lab::others_load_sample_s));
  const std::optional<OthersLoad> load = sample_others_load(window_ms);
  if (!load) return std::nullopt;
  const int left = threads_fitting_beside(*load);
  if (left >= threads) return std::nullopt;
  return ThreadLowering{threads, left, load->machine_cores, load->busy_cores, ran_name};
}

// After a disturbed repetition `ran` at LibTorch's default threads, once an earlier repetition ran
// clean at them (the caller's rule: the load came after the lab began): where other processes hold cores
// those threads need, waits idle for them to go, a sample of lab.others_load_sample_s at a time,
// within what is left of the lab's lab.quiet_wait_s (*wait_left_s, spent as it waits). A passing
// burst then costs a wait and the repetition is measured again at the same threads; only a load
// that stays past the wait has the lab lower them (threads_beside_others), which changes what is
// measured. Nothing where nothing needs waiting for, or no wait is left; `went` with waited_s 0:
// the others had already gone.
std::optional<QuietWait> wait_for_others_to_go(const VariantRecord& ran, const Thresholds& thresholds,
                                               double* wait_left_s, const std::string& ran_name,
                                               std::ostream& progress) {
  const int threads = ran.environment.intra_op_threads;
  const double window_s = thresholds.value(threshold::lab::others_load_sample_s);
  if (threads <= 1 || !(window_s > 0)) return std::nullopt;
  const auto window_ms = static_cast<int>(1000 * window_s);
  std::optional<OthersLoad> load = sample_others_load(window_ms);
  if (!load) return std::nullopt;
  QuietWait wait{ran_name, load->machine_cores, load->busy_cores, 0.0, threads_fitting_beside(*load) >= threads};
  if (wait.went) return wait;
  if (*wait_left_s < window_s) return std::nullopt;
  progress << ran_name << ": other processes keep " << format_text("%.1f", load->busy_cores) << " of the "
           << count_noun(load->machine_cores, "core") << " busy; the lab waits up to " << format_text("%.0f", *wait_left_s)
           << " s for them to go before it lowers its threads (lab.quiet_wait_s)" << std::endl;
  const auto start = std::chrono::steady_clock::now();
  while (!interrupted()) {
    load = sample_others_load(window_ms);
    wait.waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!load) break;
    if (threads_fitting_beside(*load) >= threads) {
      wait.went = true;
      break;
    }
    if (wait.waited_s + window_s > *wait_left_s) break;
  }
  *wait_left_s = std::max(0.0, *wait_left_s - wait.waited_s);
  progress << ran_name << ": " << (wait.went ? "they went after " : "they stayed ") << format_text("%.0f", wait.waited_s)
           << " s" << (wait.went ? ", so it is measured again at " + count_noun(threads, "thread") : "") << std::endl;
  return wait;
}

// Before a comparing lab's first repetition (the baseline lab, --ab, --repeat 2+), its bf16 probe and
// its compiled package: where other processes already hold cores (threads_left_at_start), the lab
// runs every variant at the cores left from the start, rather than measure a disturbed first
// repetition and lower its threads then. Sets the specs' threads and records the choice; the
// threads chosen are then kept for the whole lab.
void choose_threads_at_start(std::vector<VariantSpec>& specs, const LabOptions& options, const std::string& kind,
                             LabOutcome& outcome, std::ostream& shown_progress) {
  const bool compares = kind == "baseline" || kind == "ab" || options.repeat >= 2;
  if (!compares || kind == "profile" || options.launch) return;
  const std::optional<ThreadLowering> chosen = threads_left_at_start(specs, *options.thresholds);
  if (!chosen) return;
  for (VariantSpec& spec : specs) spec.threads = chosen->to_threads;
  outcome.record.details.thread_lowerings.push_back(*chosen);
  std::ostream& progress = outcome.quiet ? null_stream() : shown_progress;
  progress << threads_at_start_words(*chosen, kind == "baseline" ? "every variant (and the bf16 probe)" : "every variant")
           << std::endl;
}

// Every repetition measured so far that counts leaves the figures (superseded, said why); the lab
// says what it does next. Counts the repetitions measured so far into `lowering`.
void supersede_measured(RunRecord& record, ThreadLowering& lowering, std::ostream& progress) {
  const std::string why = "measured at " + count_noun(lowering.from_threads, "thread") + "; " +
                          format_text("other processes then kept %.1f of the ", lowering.others_busy_cores) +
                          count_noun(lowering.machine_cores, "core") + " busy, so the lab measured every variant again at " +
                          count_noun(lowering.to_threads, "thread");
  for (VariantRecord& v : record.variants) {
    if (v.ok() && v.superseded.empty()) ++lowering.repetitions_before;
    if (v.counts()) v.superseded = why;
  }
  progress << lowering.after << ": other processes keep " << format_text("%.1f", lowering.others_busy_cores) << " of the "
           << count_noun(lowering.machine_cores, "core") << " busy; " << lowering.from_threads
           << " threads beside them wait for their slowest on every op, so the lab lowers its threads to "
           << lowering.to_threads << " and measures every variant again (measured so far at " << lowering.from_threads
           << " threads: " << count_noun(lowering.repetitions_before, "repetition")
           << ", kept in the record, out of the figures)" << std::endl;
}

// After a wait for other processes that went, within round `rep` (its first record at
// `round_first`): the round's repetitions measured before the wait leave the figures (superseded,
// said why), so that the whole round is measured again after it. Without this the round's pairs
// would be split by the wait: its first variants measured a minute or more before the others, on a
// machine whose speed drifts (fp32 286-514 samples/s from round to round on a quiet 2-vCPU VM), and
// that one pair kept a lab's interval undecided for 17 more rounds. Returns how many left.
int supersede_round_before_wait(RunRecord& record, size_t round_first, const QuietWait& wait, size_t rep,
                                size_t max_rounds, std::ostream& progress) {
  const std::string round = max_rounds > 1 ? "round " + std::to_string(rep + 1) : "the run";
  const std::string why = "measured before a wait of " + format_text("%.0f", wait.waited_s) + " s for other processes to go (after " +
                          wait.after + "); " + round + " was measured again after it, so that its pairs share the machine's state";
  int left = 0;
  for (size_t k = round_first; k < record.variants.size(); ++k) {
    VariantRecord& v = record.variants[k];
    if (!v.counts()) continue;
    v.superseded = why;
    ++left;
  }
  progress << wait.after << ": " << count_noun(left, "repetition") << " of " << round
           << " ran before the wait, so " << round << " is measured again from its first variant (what ran before stays in the record, out of the "
           << "figures)" << std::endl;
  return left;
}

// A repetition's name in the terminal's lines: "bf16 #1", "B bf16 #2".
std::string repetition_name(const VariantRecord& v, const std::string& label, size_t rounds) {
  return (label.empty() ? "" : label + " ") + v.spec.name() + (rounds > 1 ? " #" + std::to_string(v.repetition + 1) : "");
}

// The banner of a run's variants (scenario, how many, the rounds, the folder) and the warning of
// ranks x threads oversubscribing the machine.
void announce_variants(const LabOutcome& outcome, const std::vector<VariantSpec>& specs, const LabOptions& options,
                       size_t repeat, size_t max_rounds, std::ostream& progress) {
  const RunRecord& record = outcome.record;
  progress << "trainlab " << record.kind << ": scenario " << record.scenario << ", "
           << count_noun(specs.size(), "variant")
           << (repeat > 1 ? " x " + std::to_string(repeat) + " repetitions, interleaved" : std::string())
           << (max_rounds > repeat
                   ? " (up to " + std::to_string(max_rounds) +
                         " while a gain holds its line or its interval is wide, within " +
                         format_text("%.0f s)", options.rounds_budget_s)
                   : std::string())
           << ", results in " << outcome.run_dir << std::endl;
  warn_of_oversubscription(specs, progress);
}

// What run_variants_in carries from round to round and repetition to repetition: the run, the
// rounds planned, the live line, the measured time, the re-runs, thread lowerings and quiet wait
// left, and whether the run stopped.
struct VariantsLoop {
  VariantsLoop(LabOutcome& outcome, const std::vector<VariantSpec>& specs, const LabOptions& options,
               const std::vector<std::string>& labels, std::ostream& progress, size_t repeat, size_t max_rounds)
      : outcome(outcome),
        record(outcome.record),
        specs(specs),
        options(options),
        labels(labels),
        progress(progress),
        repeat(repeat),
        max_rounds(max_rounds),
        lab_start(std::chrono::steady_clock::now()),
        ticker(progress, options.live_progress && !outcome.quiet),
        reruns(specs.size(), 0),
        max_reruns(options.launch || record.kind == "profile"
                       ? 0
                       : static_cast<int>(options.thresholds->value(threshold::lab::disturbance_reruns_per_variant))),
        run_specs(specs),
        lowerings_left(max_reruns > 0 && lab_may_lower_threads(specs)
                           ? static_cast<int>(options.thresholds->value(threshold::lab::thread_lowerings_max))
                           : 0),
        quiet_wait_left_s(options.thresholds->value(threshold::lab::quiet_wait_s)) {}

  LabOutcome& outcome;
  RunRecord& record;
  const std::vector<VariantSpec>& specs;
  const LabOptions& options;
  const std::vector<std::string>& labels;
  std::ostream& progress;
  const size_t repeat, max_rounds;
  // Repetitions interleave the variants (A B A B ...), so drift on a shared machine hits each alike.
  const std::chrono::steady_clock::time_point lab_start;
  ProgressTicker ticker;
  double variants_s = 0;
  size_t variants_done = 0;
  double longest_round_s = 0;  // measured loop time of the longest round so far
  double measured_s = 0;       // measured loop time of every round so far
  // Re-runs of disturbed repetitions, per variant: not under a launcher (every rank must run the
  // same), and not for a profile (one run whose trace and diagnosis are the result; its record says
  // how disturbed it was).
  std::vector<int> reruns;
  const int max_reruns;
  bool bad_input = false;
  bool stopped = false;
  // The threads the variants run at: lowered (every variant measured again) when other processes
  // come to hold cores and the variants run at LibTorch's default (threads_beside_others).
  std::vector<VariantSpec> run_specs;
  int lowerings_left;
  std::string threads_stem;  // ".threads1" once lowered to 1: the files of the runs before stay as they are
  double quiet_wait_left_s;
  bool clean_at_these_threads = false;  // a repetition ran undisturbed since the threads were last set
  // A round split by a wait for other processes runs again from its first variant; its files then
  // end in ".again<N>" (N counts such rounds), so the ones before the wait stay.
  bool restarting = false;
  int rounds_again = 0;
};

// How a round ended early: a thread lowering (every variant again from the first round) or a wait
// for other processes that went (this round again from its first variant).
enum class RoundBreak { kNone, kLowered, kAgain };

// Where variant i's repetition `rep` (its attempt-th re-run) writes: the run folder, and the files'
// stem (.rep<N> where there are rounds or labels, then .again<N>, .rerun<N>).
VariantRunOptions repetition_run_options(const VariantsLoop& loop, size_t i, size_t rep,
                                         const std::string& round_suffix, int attempt) {
  VariantRunOptions run_options;
  run_options.run_dir = loop.outcome.run_dir;
  run_options.timeout_s = loop.options.variant_timeout_s;
  run_options.memory_limit_bytes = loop.options.memory_limit_bytes;
  run_options.launch = loop.options.launch ? &*loop.options.launch : nullptr;
  const std::string stem = (loop.labels.empty() ? loop.specs[i].name() : loop.labels[i]) + loop.threads_stem;
  if (loop.max_rounds > 1 || !loop.labels.empty()) run_options.file_stem = stem + ".rep" + std::to_string(rep + 1);
  if (!round_suffix.empty()) {
    run_options.file_stem = (run_options.file_stem.empty() ? stem : run_options.file_stem) + round_suffix;
  }
  if (attempt > 0) {
    run_options.file_stem =
        (run_options.file_stem.empty() ? stem : run_options.file_stem) + ".rerun" + std::to_string(attempt);
  }
  return run_options;
}

// Runs variant i's repetition `rep` in its child (the live line while it runs), appends its record
// and prints its line; returns the record.
VariantRecord& run_repetition(VariantsLoop& loop, size_t i, size_t rep, size_t total, const std::string& round_suffix,
                              int attempt) {
  const auto start = std::chrono::steady_clock::now();
  VariantRunOptions run_options = repetition_run_options(loop, i, rep, round_suffix, attempt);
  if (loop.ticker.live()) {
    run_options.progress_file = (fs::path(loop.outcome.run_dir) / ".progress").string();
    loop.ticker.start(rep * loop.specs.size() + i + 1, total,
                      (loop.labels.empty() ? "" : loop.labels[i] + " ") + loop.specs[i].name(),
                      run_options.progress_file,
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - loop.lab_start).count(),
                      loop.variants_done > 0 ? loop.variants_s / static_cast<double>(loop.variants_done) : -1.0);
  }
  RunRecord& record = loop.record;
  record.variants.push_back(loop.options.measure ? loop.options.measure(loop.run_specs[i], run_options)
                                                 : run_variant_isolated(loop.run_specs[i], run_options));
  loop.ticker.stop();
  record.variants.back().repetition = static_cast<int>(rep);
  if (!loop.labels.empty()) record.variants.back().label = loop.labels[i];
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  loop.variants_s += wall_s;
  ++loop.variants_done;
  report_progress(loop.progress, rep * loop.specs.size() + i + 1, total, record.variants.back(), wall_s);
  return record.variants.back();
}

// A repetition `ran` disturbed at threads the lab may lower: waits for other processes to go where
// it ran clean at these threads before, else lowers the threads where they hold cores (every
// variant measured again: kLowered); others gone after a wait within the round, its repetitions
// before the wait leave the figures (the round again: kAgain). kNone: go on as judged.
RoundBreak respond_to_disturbance(VariantsLoop& loop, const VariantRecord& ran, DisturbanceCall call,
                                  const std::string& ran_name, size_t i, size_t rep, size_t round_first) {
  if (call == DisturbanceCall::kClean || loop.lowerings_left <= 0 || interrupted()) return RoundBreak::kNone;
  RunRecord& record = loop.record;
  const Thresholds& thresholds = *loop.options.thresholds;
  // Waited for only once a repetition ran clean at these threads: the load came after the
  // lab began, a burst that may pass. A load there from the first repetition is lowered at once.
  // Only a repetition to be measured again is waited for: a kept one (its re-runs spent) gains nothing.
  const std::optional<QuietWait> wait =
      loop.clean_at_these_threads && call == DisturbanceCall::kRerun
          ? wait_for_others_to_go(ran, thresholds, &loop.quiet_wait_left_s, ran_name, loop.progress)
          : std::nullopt;
  if (wait && wait->waited_s > 0) record.details.quiet_waits.push_back(*wait);
  const bool others_went = wait && wait->went;  // the same threads again: nothing to lower
  if (std::optional<ThreadLowering> lowering =
          others_went ? std::nullopt : threads_beside_others(ran, thresholds, ran_name)) {
    --loop.lowerings_left;
    supersede_measured(record, *lowering, loop.progress);
    for (VariantSpec& spec : loop.run_specs) spec.threads = lowering->to_threads;
    loop.threads_stem = ".threads" + std::to_string(lowering->to_threads);
    loop.clean_at_these_threads = false;
    std::fill(loop.reruns.begin(), loop.reruns.end(), 0);
    loop.measured_s = loop.longest_round_s = 0;
    record.details.thread_lowerings.push_back(*lowering);
    return RoundBreak::kLowered;
  }
  if (others_went && wait->waited_s > 0 && i > 0) {
    record.details.quiet_waits.back().repetitions_again =
        supersede_round_before_wait(record, round_first, *wait, rep, loop.max_rounds, loop.progress);
    return RoundBreak::kAgain;
  }
  return RoundBreak::kNone;
}

// Why a disturbed repetition was kept: re-runs off (a profile, launched ranks, the threshold), or
// the variant's re-runs spent.
void say_kept(const VariantsLoop& loop, const VariantRecord& ran, DisturbanceCall call, const std::string& ran_name,
              size_t i) {
  if (call == DisturbanceCall::kKept && loop.max_reruns == 0) {
    loop.progress << ran_name << " disturbed: " << ran.disturbed_kept << " while it was measured (kept: "
                  << (loop.record.kind == "profile" ? "a profile is not re-run"
                      : loop.options.launch          ? "launched ranks are not re-run"
                                                     : "re-runs are off, lab.disturbance_reruns_per_variant")
                  << ")" << std::endl;
  } else if (call == DisturbanceCall::kKept) {
    loop.progress << ran_name << " kept though disturbed (" << ran.disturbed_kept << "): the lab's "
                  << count_noun(loop.max_reruns, "re-run") << " of " << loop.specs[i].name() << " are spent"
                  << std::endl;
  }
}

// Variant i's repetition in round `rep`, run again while it is disturbed and has re-runs left.
RoundBreak run_variant_attempts(VariantsLoop& loop, size_t i, size_t rep, size_t total, size_t round_first,
                                const std::string& round_suffix) {
  for (int attempt = 0;; ++attempt) {
    VariantRecord& ran = run_repetition(loop, i, rep, total, round_suffix, attempt);
    const std::string ran_name = repetition_name(ran, loop.labels.empty() ? "" : loop.labels[i], loop.max_rounds);
    const DisturbanceCall call = judge_disturbance(ran, *loop.options.thresholds, interrupted() ? 0 : loop.max_reruns,
                                                   &loop.reruns[i], ran_name, loop.progress);
    if (call == DisturbanceCall::kClean) loop.clean_at_these_threads = true;
    const RoundBreak ended = respond_to_disturbance(loop, ran, call, ran_name, i, rep, round_first);
    if (ended != RoundBreak::kNone) return ended;
    if (call == DisturbanceCall::kRerun) {
      write_progress_record(loop.outcome, not_run_variants(loop.specs, loop.labels, rep, i, loop.repeat, kNotRunYet));
      continue;
    }
    say_kept(loop, ran, call, ran_name, i);
    return RoundBreak::kNone;
  }
}

// Round `rep` (its first record at `round_first`): each variant once, in order; stops at Ctrl-C
// (the rest recorded as not run), at bad input, or where a repetition's disturbance breaks it.
RoundBreak run_round(VariantsLoop& loop, size_t rep, size_t round_first, const std::string& round_suffix) {
  RunRecord& record = loop.record;
  const std::vector<VariantSpec>& specs = loop.specs;
  const std::vector<std::string>& labels = loop.labels;
  const size_t total = specs.size() * std::max(loop.repeat, rep + 1);
  for (size_t i = 0; i < specs.size(); ++i) {
    // A variant that could not be built (compiling without the Python side) is not retried.
    const bool unavailable = std::any_of(record.variants.begin(), record.variants.end(), [&](const VariantRecord& v) {
      return v.error_kind == "unavailable" && v.spec.name() == specs[i].name() &&
             (labels.empty() || v.label == labels[i]);
    });
    if (unavailable) continue;
    if (interrupted()) {  // Ctrl-C / SIGTERM: what is left is recorded as not run
      const std::string why = "not run: the run was interrupted";
      for (VariantRecord& v : not_run_variants(specs, labels, rep, i, loop.repeat, why)) {
        record.variants.push_back(std::move(v));
      }
      loop.stopped = true;
      break;
    }
    const RoundBreak ended = run_variant_attempts(loop, i, rep, total, round_first, round_suffix);
    if (ended != RoundBreak::kNone) return ended;
    write_progress_record(loop.outcome, not_run_variants(specs, labels, rep, i + 1, loop.repeat, kNotRunYet));
    if (record.variants.back().error_kind == "input") {  // e.g. a corrupt data file: the rest would fail alike
      loop.bad_input = true;
      break;
    }
  }
  return RoundBreak::kNone;
}

// The run's environment: that of the figures (a repetition that counts), else the first that ran.
void set_run_environment(RunRecord& record) {
  const auto counted = std::find_if(record.variants.begin(), record.variants.end(),
                                    [](const VariantRecord& v) { return v.counts(); });
  const auto ran = std::find_if(record.variants.begin(), record.variants.end(),
                                [](const VariantRecord& v) { return v.ok(); });
  if (counted != record.variants.end()) {
    record.environment = counted->environment;
  } else if (ran != record.variants.end()) {
    record.environment = ran->environment;
  }
}

// Runs the variants into a started run (start_run) and fills its record: options.repeat rounds,
// then, with options.extra_rounds, more rounds while `undecided` says the record cannot be read yet
// and the next round (as long as the longest so far) fits in options.rounds_budget_s.
// labels: one per spec ("A", "B") or empty; a label also names the variant's files.
LabOutcome run_variants_in(LabOutcome outcome, const std::vector<VariantSpec>& specs, const LabOptions& options,
                           std::ostream& shown_progress, const std::vector<std::string>& labels = {},
                           const std::function<bool(const RunRecord&)>& undecided = nullptr) {
  std::ostream& progress = outcome.quiet ? null_stream() : shown_progress;
  RunRecord& record = outcome.record;
  const size_t repeat = static_cast<size_t>(std::max(1, options.repeat));
  const size_t max_rounds = repeat + static_cast<size_t>(undecided ? std::max(0, options.extra_rounds) : 0);
  announce_variants(outcome, specs, options, repeat, max_rounds, progress);
  VariantsLoop loop(outcome, specs, options, labels, progress, repeat, max_rounds);
  write_progress_record(outcome, not_run_variants(specs, labels, 0, 0, repeat, kNotRunYet));
  for (size_t rep = 0; rep < max_rounds && !loop.bad_input && !loop.stopped; ++rep) {
    if (rep >= repeat && !loop.restarting) {
      // The budget counts measured steps only: compile and warm-up time never use it up.
      if (!undecided(record) || loop.measured_s + loop.longest_round_s > options.rounds_budget_s) break;
    }
    const std::string round_suffix = loop.restarting ? ".again" + std::to_string(loop.rounds_again) : "";
    loop.restarting = false;
    const size_t round_first = record.variants.size();
    const RoundBreak ended = run_round(loop, rep, round_first, round_suffix);
    if (ended == RoundBreak::kLowered) {  // every variant again from the first round, at the new thread count
      write_progress_record(outcome, not_run_variants(specs, labels, 0, 0, repeat, kNotRunYet));
      rep = static_cast<size_t>(-1);
      continue;
    }
    if (ended == RoundBreak::kAgain) {  // this round again from its first variant (unsigned: --rep then ++rep is rep)
      write_progress_record(outcome, not_run_variants(specs, labels, rep, 0, repeat, kNotRunYet));
      ++loop.rounds_again;
      loop.restarting = true;
      --rep;
      continue;
    }
    const double round_measured_s = measured_loop_s(record.variants, round_first);
    loop.measured_s += round_measured_s;
    loop.longest_round_s = std::max(loop.longest_round_s, round_measured_s);
  }
  set_run_environment(record);
  return outcome;
}

// The bf16 pre-flight in a child process (LibTorch stays out of this one), its JSON kept in the
// run folder as evidence. Nothing when bf16 runs natively (a CUDA device) or the probe failed:
// then the lab runs its bf16 variants as usual.
// One run of the probe child; its timings, or nothing with the reason written to `progress`.
std::optional<Bf16ProbeTimings> run_bf16_probe_child(const LabOptions& options, const fs::path& out,
                                                     const fs::path& log, std::ostream& progress) {
  const ChildOutcome ended =
      run_trainer_child({"__bf16-probe", "--out", out.string(), "--device", to_string(options.base.device),
                         "--threads", std::to_string(options.base.threads)},
                        log.string(), /*timeout_s=*/120);
  std::optional<Bf16ProbeTimings> timings;
  try {
    if (ended.exited && ended.exit_status == 0) {
      timings = bf16_probe_from_json(nlohmann::json::parse(read_file(out.string())));
    }
  } catch (const std::exception&) {
    timings.reset();
  }
  if (!timings) {
    progress << "bf16 probe: " << ended.describe() << " (" << last_line_of(log.string())
             << "); the lab runs its bf16 variants" << std::endl;
  }
  return timings;
}

std::string probe_isa_words(const Bf16ProbeTimings& timings) {
  std::string isa;
  for (const auto& [flag, present] : timings.cpu_isa) {
    if (flag == "avx512_bf16" || flag == "amx_bf16" || flag == "avx512_bw") {
      isa += (isa.empty() ? "" : ", ") + flag + (present ? " yes" : " no");
    }
  }
  return isa;
}

// "3 of 9 repetitions in these figures were measured under load ...": the repetitions kept though
// disturbed (re-runs spent), which the estimates include; empty when none.
std::string under_load_caveat(const RunRecord& record) {
  int counted = 0, under_load = 0;
  std::string first;
  for (const VariantRecord& v : record.variants) {
    if (!v.counts()) continue;
    ++counted;
    if (v.disturbed_kept.empty()) continue;
    if (under_load++ == 0) first = v.disturbed_kept;
  }
  if (under_load == 0) return "";
  return std::to_string(under_load) + " of " + std::to_string(counted) +
         " repetitions in these figures were measured under load, kept once their re-runs were spent (e.g. " +
         first + "): the gains above are this machine's under that load, not its quiet speeds.";
}


std::optional<Bf16Probe> probe_bf16(const LabOptions& options, LabOutcome& outcome, std::ostream& progress) {
  const fs::path out = fs::path(outcome.run_dir) / "bf16_probe.json";
  const fs::path log = fs::path(outcome.run_dir) / "bf16_probe.log";
  const double skip_below_pct = options.thresholds->value(threshold::lab::bf16_probe_skip_below_pct);
  const double max_width_pct = options.thresholds->value(threshold::lab::bf16_probe_max_width_pct);
  constexpr int kProbeTries = 3;  // a probe whose interval another process widened is taken again
  std::optional<Bf16ProbeTimings> timings;
  std::optional<Bf16Probe> probe;
  for (int attempt = 1; attempt <= kProbeTries; ++attempt) {
    std::optional<Bf16ProbeTimings> taken = run_bf16_probe_child(options, out, log, progress);
    if (!taken) return std::nullopt;
    if (taken->device != "cpu") {
      outcome.record.details.bf16_probe = taken;
      return std::nullopt;
    }
    const Bf16Probe read =
        read_bf16_probe(taken->fp32_ns, taken->bf16_ns, probe_isa_words(*taken), skip_below_pct);
    if (!read.measured) {
      outcome.record.details.bf16_probe = taken;
      return std::nullopt;
    }
    const double width_pct = read.gemm_gain.high_pct - read.gemm_gain.low_pct;
    if (!probe || width_pct < probe->gemm_gain.high_pct - probe->gemm_gain.low_pct) {
      probe = read;
      timings = taken;
    }
    if (width_pct <= max_width_pct) break;
    if (attempt < kProbeTries) {
      progress << "bf16 probe: taken again, its interval [" << format_text("%+.1f", read.gemm_gain.low_pct) << ", "
               << format_text("%+.1f", read.gemm_gain.high_pct) << "] is wider than " << format_text("%.0f", max_width_pct)
               << " points (another process on the CPU?)" << std::endl;
    }
  }
  write_file_atomically(out.string(), json_text(to_json(*timings), 2) + "\n");  // the probe the lab reads
  outcome.record.details.bf16_probe = timings;
  const std::string isa = probe->cpu_isa;
  const GainEstimate& g = probe->gemm_gain;
  // "Emulated" only where the probe found no bf16 unit; with one, the words say what it measured.
  const std::string slow_words =
      probe_found_bf16_unit(*probe) ? "over 5x slower than fp32 here" : "emulated here";
  progress << "bf16 probe: one Linear layer's forward+backward " << format_text("%+.1f %%", g.gain_pct)
           << format_text(" [%+.1f,", g.low_pct) << format_text(" %+.1f]", g.high_pct) << " in bf16 against fp32 (" << isa
           << ")"
           << (!probe->bf16_left_out       ? ": the lab runs its bf16 variants"
               : options.run_emulated_bf16 ? ": " + slow_words + ", run anyway (--emulated-bf16 run)"
                                           : ": " + slow_words +
                                                 ", so the lab leaves its bf16 runs out (--emulated-bf16 "
                                                 "run measures them) and compiles the fp32 model")
           << (g.high_pct - g.low_pct > max_width_pct
                   ? " (the narrowest of " + std::to_string(kProbeTries) + " tries)"
                   : "")
           << std::endl;
  return probe;
}

// The compiled variant's Inductor package, built before the rounds (its export and compile stay out
// of them; the variant then loads it from the cache). Where bf16 cannot be compiled (the exporter or
// Inductor refused it) but fp32 can, the lab's compiled run becomes fp32+compiled, read against
// fp32: one precision's refusal does not take the compiled reading with it. Returns that refusal,
// or "" (bf16 compiled, nothing to build, or neither precision compiles). Where neither compiles,
// the compiled variant is recorded as unavailable with both reasons and is not run: its own try
// would build the same package a third time (a crash of the exporter is not remembered as a
// refusal is; on an H200 that third try took 60 s of a lab that had 200).
std::string build_compiled_package(std::vector<VariantSpec>& specs, const LabOptions& options,
                                   LabOutcome& outcome, std::ostream& progress) {
  VariantSpec& compiled = specs.back();
  // Ranks build at their shard's batch, inside their own children; a job compiles inside itself.
  if (options.measure || options.launch || !compiled.compiled || compiled.compiler != Compiler::kInductor || compiled.nproc > 1) return "";
  auto build = [&](const VariantSpec& spec, std::string* said) {
    const std::string stem = (fs::path(outcome.run_dir) / ("compiled_package_" + to_string(spec.precision))).string();
    write_file_atomically(stem + ".spec.json", json_text(nlohmann::json(spec), 1) + "\n");
    progress << "compiled variant: building its Inductor package (" << to_string(spec.precision)
             << "; export and compile, cached for later runs)" << std::endl;
    const ChildOutcome ended =
        run_trainer_child({"__inductor-package", "--spec", stem + ".spec.json"}, stem + ".log", options.variant_timeout_s);
    *said = last_line_of(stem + ".log");
    const std::string prefix = "trainlab: the compiled variant cannot run: ";
    if (said->rfind(prefix, 0) == 0) *said = said->substr(prefix.size());
    if (said->empty()) *said = ended.describe();
    return ended.exited && ended.exit_status == 0;
  };
  if (compiled.precision != Precision::kBf16 || interrupted()) return "";
  std::string bf16_said, fp32_said;
  if (build(compiled, &bf16_said) || interrupted()) return "";  // interrupted: the rounds mark every variant
  VariantSpec fp32 = compiled;
  fp32.precision = Precision::kFp32;
  if (!build(fp32, &fp32_said)) {
    progress << "compiled variant: neither bf16 nor fp32 compiles (" << fp32_said << ")" << std::endl;
    VariantRecord unavailable;
    unavailable.spec = compiled;
    unavailable.error = "its Inductor package could not be built" +
                        (bf16_said == fp32_said ? ": " + bf16_said : " (bf16: " + bf16_said + "; fp32: " + fp32_said + ")");
    unavailable.error_kind = "unavailable";
    outcome.record.variants.push_back(std::move(unavailable));
    return "";
  }
  progress << "compiled variant: bf16 cannot be compiled (" << bf16_said
           << "); the lab's compiled run is fp32+compiled, read against fp32" << std::endl;
  compiled = fp32;
  return bf16_said;
}

LabOutcome run_variants(std::vector<VariantSpec> specs, const LabOptions& options, const std::string& kind,
                        std::ostream& progress, const std::vector<std::string>& labels = {},
                        const std::function<bool(const RunRecord&)>& undecided = nullptr) {
  LabOutcome outcome = start_run(options, kind);
  choose_threads_at_start(specs, options, kind, outcome, progress);
  return run_variants_in(std::move(outcome), specs, options, progress, labels, undecided);
}

// Whether an A/B run's samples/s change cannot be read yet: its paired interval (compare_ab) is
// wider than lab.target_interval_width_pct, or holds compare's line (+-threshold_pct), so that the
// verdict could go either way. A failed repetition ends the rounds (more would fail alike).
bool ab_undecided(const RunRecord& record, const Thresholds& thresholds) {
  for (const VariantRecord& v : record.variants) {
    if (!v.ok() && v.error_kind != "unavailable") return false;
  }
  const CompareOptions options;
  CompareOutcome compared;
  try {
    compared = compare_ab(record, options);
  } catch (const InputError&) {
    return false;  // no A or no B figures: nothing more rounds could read
  }
  const double widest_pct = thresholds.value(threshold::lab::target_interval_width_pct);
  for (const CompareRow& row : compared.rows) {
    if (row.metric != "samples/s" || !row.has_interval) continue;
    const stats::ChangeEstimate& c = row.change;
    if (c.high_pct - c.low_pct > widest_pct) return true;
    for (const double line : {options.threshold_pct, -options.threshold_pct}) {
      if (c.low_pct < line && line < c.high_pct) return true;
    }
  }
  return false;
}

// "A/B ran 8 rounds: ..." where the run went past its --repeat; empty otherwise.
std::string ab_rounds_words(const RunRecord& record, const LabOptions& options) {
  int rounds = 0;
  for (const VariantRecord& v : record.variants) rounds = std::max(rounds, v.repetition + 1);
  if (rounds <= options.repeat) return "";
  return "A/B ran " + std::to_string(rounds) + " rounds: after " + std::to_string(options.repeat) +
         ", the samples/s change's interval was wider than " +
         format_text("%.0f", options.thresholds->value(threshold::lab::target_interval_width_pct)) +
         " points (lab.target_interval_width_pct) or held compare's +-" + format_text("%.0f", CompareOptions{}.threshold_pct) +
         " % line, so it ran more, up to " + std::to_string(options.repeat + options.extra_rounds) +
         " rounds while their measured steps fit in " + format_text("%.0f", options.rounds_budget_s) + " s (--max-rounds).";
}

}  // namespace

std::string make_run_dir(const std::string& results_dir, const std::string& scenario,
                         const std::string& kind, std::string* run_id) {
  ensure_writable_dir(results_dir);
  // The name part may come from a file name (diagnose): only portable characters go into the id.
  std::string name = scenario;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '+' && c != '-') c = '_';
  }
  // A long name (a trace's file name can be 250 characters) would make an id over the file system's
  // 255: it is cut, and a hash of the whole name keeps two long names that share a start apart.
  if (name.size() > kMaxRunNameChars) {
    const std::string hash = hex16(fnv1a(scenario)).substr(0, 8);
    name = name.substr(0, kMaxRunNameChars - hash.size() - 1) + "-" + hash;
  }
  const std::string base = utc_now("%Y%m%d-%H%M%S") + "-" + name + "-" + kind;
  for (int n = 1; n < 1000; ++n) {
    const std::string id = n == 1 ? base : base + "-" + std::to_string(n);
    const fs::path dir = fs::path(results_dir) / id;
    std::error_code ec;
    if (fs::create_directory(dir, ec)) {
      *run_id = id;
      return dir.string();
    }
    if (ec) throw InputError("cannot create run folder " + dir.string() + ": " + ec.message());
  }
  throw InputError("too many runs with the same id in " + results_dir);
}

std::vector<VariantSpec> baseline_variants(const LabOptions& options) {
  std::vector<VariantSpec> specs;
  for (auto [precision, compiled] : {std::pair{Precision::kFp32, false}, std::pair{Precision::kBf16, false},
                                     std::pair{Precision::kBf16, true}}) {
    VariantSpec spec = options.base;
    spec.precision = precision;
    spec.compiled = compiled;
    const std::string name = spec.name();
    if (auto it = options.overrides.find(name); it != options.overrides.end()) {
      for (const auto& [key, value] : it->second) {
        if (key == "precision" || key == "compiled") {
          throw InputError("--override cannot change " + key + " of lab variant " + name);
        }
        apply_setting(spec, key, value);
      }
    }
    if (!options.measure) resolve(spec, scenario_of(spec));
    specs.push_back(spec);
  }
  for (const auto& [name, settings] : options.overrides) {
    if (name != "fp32" && name != "bf16" && name != "bf16+compiled") {
      throw InputError("--override names unknown lab variant '" + name + "' (fp32, bf16, bf16+compiled)");
    }
  }
  return specs;
}

std::optional<ThreadLowering> threads_left_at_start(const std::vector<VariantSpec>& specs,
                                                   const Thresholds& thresholds) {
  if (!lab_may_lower_threads(specs) || thresholds.value(threshold::lab::disturbance_reruns_per_variant) <= 0) return std::nullopt;
  const double window_s = thresholds.value(threshold::lab::start_load_sample_s);
  const int cores = usable_cores();
  // LibTorch's default: a thread per physical core. The choice only ever lowers it (with SMT, 3 of
  // 4 logical cores left must not raise 2 threads to 3).
  const int default_threads = std::min(cores, physical_cores_usable());
  if (!(window_s > 0) || default_threads <= 1 || thresholds.value(threshold::lab::thread_lowerings_max) <= 0) return std::nullopt;
  const std::optional<OthersLoad> load = sample_others_load(static_cast<int>(1000 * window_s));
  if (!load) return std::nullopt;
  const int left = std::min(threads_left_beside(load->machine_cores, load->busy_cores), cores);
  if (left >= default_threads) return std::nullopt;
  return ThreadLowering{default_threads, left, load->machine_cores, load->busy_cores, /*after=*/"",
                        /*repetitions_before=*/0};
}

std::string threads_at_start_words(const ThreadLowering& chosen, const std::string& what_runs) {
  return "other processes keep " + format_text("%.1f", chosen.others_busy_cores) + " of the " +
         count_noun(chosen.machine_cores, "core") + " busy at the start: " + what_runs + " runs at " +
         count_noun(chosen.to_threads, "thread") + " instead of LibTorch's default " +
         std::to_string(chosen.from_threads) + " (a thread per core), so that no thread waits for a core";
}

// "Measured at 1 thread from bf16 #1 on: ..." where the lab lowered its threads; empty otherwise.
std::string thread_lowering_words(const RunRecord& record) {
  if (record.details.thread_lowerings.empty()) return "";
  const ThreadLowering& last = record.details.thread_lowerings.back();
  if (last.after.empty()) {  // chosen before the first repetition (choose_threads_at_start)
    return "Measured at " + count_noun(last.to_threads, "thread") + " from the start: other processes kept " +
           format_text("%.1f", last.others_busy_cores) + " of the machine's " + count_noun(last.machine_cores, "core") +
           " busy when the run began, so every variant ran at " + count_noun(last.to_threads, "thread") +
           " instead of LibTorch's default " + std::to_string(last.from_threads) + ". These figures are this machine's at " +
           count_noun(last.to_threads, "thread") + "; quiet, at its default threads, they can differ.";
  }
  int left_out = 0;
  for (const ThreadLowering& t : record.details.thread_lowerings) left_out += t.repetitions_before;
  return "Measured at " + count_noun(last.to_threads, "thread") + " from " + last.after + " on: other processes kept " +
         format_text("%.1f", last.others_busy_cores) + " of the machine's " + count_noun(last.machine_cores, "core") +
         " busy, so the lab lowered its threads from " + std::to_string(record.details.thread_lowerings.front().from_threads) +
         " and measured every variant again. These figures are this machine's at " +
         count_noun(last.to_threads, "thread") + "; quiet, at its default threads, they can differ (measured before: " +
         count_noun(left_out, "repetition") + ", kept in the record, out of the figures).";
}

void append_load_words(RunRecord& record) {
  for (const std::string& words : {quiet_wait_words(record), thread_lowering_words(record)}) {
    if (!words.empty()) record.reading.push_back(words);
  }
}

std::string quiet_wait_words(const RunRecord& record) {
  std::string out;
  for (const QuietWait& w : record.details.quiet_waits) {
    if (!w.went) continue;  // a wait that ran out ends in a lowering, which thread_lowering_words tells
    out += (out.empty() ? "" : " ") + w.after + " was disturbed: other processes kept " +
           format_text("%.1f", w.others_busy_cores) + " of the machine's " + count_noun(w.machine_cores, "core") +
           " busy; the lab waited " + format_text("%.0f", w.waited_s) + " s for them to go and measured it again at the same threads" +
           (w.repetitions_again > 0
                ? ", with the " + count_noun(w.repetitions_again, "repetition") + " of its round that ran before the wait."
                : ".");
  }
  return out;
}

LabOutcome run_baseline_lab(const LabOptions& options, std::ostream& progress) {
  std::vector<VariantSpec> specs = baseline_variants(options);
  LabOutcome outcome = start_run(options, "baseline");
  choose_threads_at_start(specs, options, "baseline", outcome, progress);
  LabOptions probe_options = options;  // the probe runs at the variants' threads
  probe_options.base.threads = specs.front().threads;
  // Under a launcher every rank must run the same variants: no probe decides, no extra rounds.
  std::optional<Bf16Probe> probe;
  if (!options.launch) probe = probe_bf16(probe_options, outcome, progress);
  if (probe && options.run_emulated_bf16) probe->bf16_left_out = false;
  if (probe && probe->bf16_left_out) {  // fp32 and fp32+compiled: what compiling does for the model that runs
    specs.erase(specs.begin() + 1);
    specs.back().precision = Precision::kFp32;
  }
  const std::string bf16_compile_refused = build_compiled_package(specs, options, outcome, progress);
  const Bf16Probe* probe_read = probe ? &*probe : nullptr;
  auto read_lab = [&](const RunRecord& record) {
    return read_baseline_lab(lab_variant_figures(record, "fp32"), lab_variant_figures(record, "bf16"),
                             lab_variant_figures(record, specs.back().name()), *options.thresholds, probe_read,
                             bf16_compile_refused);
  };
  // Another round only helps a gain whose interval holds its line; a failed variant ends the rounds
  // (one that could not be built is simply not part of them).
  std::function<bool(const RunRecord&)> undecided = [&](const RunRecord& record) {
    for (const VariantRecord& v : record.variants) {
      if (!v.ok() && v.error_kind != "unavailable") return false;
    }
    const LabReading so_far = read_lab(record);
    const double widest_pct = options.thresholds->value(threshold::lab::target_interval_width_pct);
    for (const auto& gain : {so_far.precision_gain, so_far.compile_gain}) {
      if (gain && gain->against_line == "at the line") return true;
      if (gain && gain->has_interval && gain->high_pct - gain->low_pct > widest_pct) return true;
    }
    return false;
  };
  outcome = run_variants_in(std::move(outcome), specs, options, progress, {},
                            options.launch ? nullptr : undecided);
  const LabReading reading = read_lab(outcome.record);
  outcome.record.reading = reading.lines;
  for (const std::string& caveat :
       {quiet_wait_words(outcome.record), thread_lowering_words(outcome.record), under_load_caveat(outcome.record)}) {
    if (!caveat.empty() && !outcome.record.reading.empty())
      outcome.record.reading.insert(outcome.record.reading.end() - 1, caveat);
  }
  finish_run(options, outcome);
  return outcome;
}

LabOutcome run_single_variant(const LabOptions& options, std::ostream& progress, const std::string& kind) {
  LabOutcome outcome = run_variants({options.base}, options, kind, progress);
  append_load_words(outcome.record);
  finish_run(options, outcome);
  return outcome;
}

LabOutcome run_ab(const LabOptions& options, const std::vector<std::pair<std::string, std::string>>& changes,
                  std::ostream& progress) {
  if (changes.empty()) throw InputError("--ab needs at least one change, e.g. --ab workers=2");
  VariantSpec b = options.base;
  for (const auto& [key, value] : changes) apply_setting(b, key, value);
  if (!options.measure) resolve(b, scenario_of(b));
  std::string described;
  for (const auto& [key, value] : changes) described += (described.empty() ? "" : ", ") + key + "=" + value;
  // More rounds (options.extra_rounds) while the change cannot be read yet; not under a launcher.
  const Thresholds& thresholds = *options.thresholds;
  std::function<bool(const RunRecord&)> undecided = [&](const RunRecord& record) {
    return ab_undecided(record, thresholds);
  };
  LabOutcome outcome = run_variants({options.base, b}, options, "ab", progress, {"A", "B"},
                                    options.launch || options.extra_rounds <= 0 ? nullptr : undecided);
  outcome.record.details.ab_changes = described;
  if (const std::string rounds = ab_rounds_words(outcome.record, options); !rounds.empty())
    outcome.record.reading.push_back(rounds);
  append_load_words(outcome.record);
  finish_run(options, outcome);
  return outcome;
}

// Disturbed means slowed by someone else: the run's threads waited in the run queue past the limit
// while other processes took past theirs, or the hypervisor stole past its limit. The other
// processes' CPU share alone does not decide, since a run that leaves a core idle is not slowed by
// the process that takes it (a one-thread run beside a busy core, or a nice'd build beside a lab:
// 9-12 % taken, 2 % waited); nor does the wait alone, since a run whose own threads exceed the cores
// (loader workers beside the step) waits on itself. Where schedstat could not be read, the
// other-CPU share decides.
//
// Not judged for a data-parallel variant (ranks > 1): its own ranks and their communication threads
// share the cores, so each rank's run-queue wait and "other" CPU are mostly its peers' (mlp on 2
// ranks of a 2-core machine: 27-28 % waited with nothing else running); its figures are recorded.
std::string disturbance_past_limit(const VariantRecord& v, const Thresholds& thresholds) {
  if (!v.ok() || ns_to_s(aggregate(v).measured_ns) < thresholds.value(threshold::lab::disturbance_min_measured_s)) return "";
  if (v.world_size > 1 || v.spec.nproc > 1) return "";
  const Disturbance& d = v.disturbance;
  if (d.steal_pct && *d.steal_pct > thresholds.value(threshold::lab::disturbed_steal_pct)) {
    return format_text("the hypervisor stole %.0f %% of the CPU", *d.steal_pct);
  }
  const std::string taken =
      d.other_cpu_pct ? format_text("another process took %.0f %% of the CPU", *d.other_cpu_pct) : "";
  const bool others_took_little =
      d.other_cpu_pct && *d.other_cpu_pct <= thresholds.value(threshold::lab::disturbed_other_cpu_pct);
  if (d.runqueue_wait_pct) {
    // Its own threads past the cores (loader workers beside the step's) wait as well: with others
    // taking little, the wait is the run's own.
    if (*d.runqueue_wait_pct <= thresholds.value(threshold::lab::disturbed_runqueue_wait_pct) || others_took_little)
      return "";
    const std::string waited =
        format_text("its threads waited for a CPU %.0f %% of the time they wanted one", *d.runqueue_wait_pct);
    return taken.empty() ? waited : taken + " (" + waited + ")";
  }
  if (d.other_cpu_pct && *d.other_cpu_pct > thresholds.value(threshold::lab::disturbed_other_cpu_pct)) return taken;
  return "";
}

DisturbanceCall judge_disturbance(VariantRecord& ran, const Thresholds& thresholds, int max_reruns, int* reruns,
                                  const std::string& name, std::ostream& progress) {
  const std::string disturbed = disturbance_past_limit(ran, thresholds);
  if (disturbed.empty()) return DisturbanceCall::kClean;
  if (*reruns < max_reruns) {
    ++*reruns;
    ran.disturbed = disturbed;
    progress << name << " re-run: " << disturbed << " while it was measured" << std::endl;
    return DisturbanceCall::kRerun;
  }
  ran.disturbed_kept = disturbed;
  return DisturbanceCall::kKept;
}

int threads_left_beside(int machine_cores, double others_busy_cores) {
  const int held = static_cast<int>(std::floor(std::max(0.0, others_busy_cores) + 0.5));
  return std::max(1, machine_cores - held);
}

double measured_loop_s(const std::vector<VariantRecord>& variants, size_t first) {
  double total_ns = 0;
  for (size_t k = first; k < variants.size(); ++k) {
    if (variants[k].ok()) total_ns += static_cast<double>(aggregate(variants[k]).measured_ns);
  }
  return total_ns / 1e9;
}

std::string run_folder_in(const std::string& parent) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(parent, ec)) {
    if (entry.is_directory(ec) && fs::exists(entry.path() / "run.json", ec)) return entry.path().string();
  }
  return "";
}

}  // namespace trainlab
