// The commands' orchestration: the three-run baseline lab (fp32, bf16, bf16+compiled) and the
// single-variant run, each variant in its own child process, results in results/<run-id>/.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "diagnostics/thresholds.h"
#include "core/run_record.h"
#include "harness/runner/launch_group.h"
#include "harness/runner/variant_runner.h"
#include "core/output_format.h"

namespace trainlab {

// The rounds a comparison may run in all when its gains stay undecided (the lab without --repeat,
// --ab up to --max-rounds), and the measured time they fit in.
inline constexpr int kDefaultMaxRounds = 20;
inline constexpr double kExtraRoundsBudgetS = 120;

struct LabOptions {
  VariantSpec base;                  // resolved; precision/compiled are set per variant
  std::string results_dir = "results";
  double variant_timeout_s = 1800;
  int64_t memory_limit_bytes = 0;  // per variant process (its ranks share it); 0: default_memory_limit_bytes()
  int repeat = 1;  // each variant this many times, the variants interleaved (A B C A B C ...)
  // The baseline lab and --ab: up to this many more rounds while a gain's interval holds its line
  // or is wide, as long as the rounds' measured steps (never compile or warm-up time) have taken
  // under rounds_budget_s seconds with room for one more round as long as the longest.
  int extra_rounds = 0;
  double rounds_budget_s = 0;
  // Per-variant settings applied on top of base, e.g. {"bf16", {{"batch", "64"}}}.
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> overrides;
  const Thresholds* thresholds = &Thresholds::defaults();
  // The baseline lab first probes bf16 on the CPU (one GEMM, fp32 vs bf16) and leaves its bf16
  // variants out where bf16 is emulated (lab.bf16_probe_skip_below_pct); true runs them anyway.
  bool run_emulated_bf16 = false;
  // Under an outside launcher (torchrun): this process's rank of the launch (launch_group.h). The
  // ranks share rank 0's run folder; variants run the same on every rank (no bf16 probe decides,
  // no extra rounds).
  std::optional<LauncherRank> launch;
  // Rewrite one progress line while each variant runs (stderr is a terminal): variant, step,
  // elapsed, time left. Off: one line per finished variant only.
  bool live_progress = false;
  // What measures one variant (a lab repetition, an A/B side, a sweep point). Empty: the built-in
  // trainer in its own child (run_variant_isolated). The comparing commands on the user's own job
  // (harness/runner/job_variants.h) run the job instead; their specs name no scenario to resolve
  // and have no Inductor package to build.
  std::function<VariantRecord(const VariantSpec&, const VariantRunOptions&)> measure;
};

class RunningMark;

struct LabOutcome {
  RunRecord record;
  std::string run_dir;
  // A launch's rank other than 0: it printed nothing and wrote no run.json (rank 0 reports the run).
  bool quiet = false;
  // The first rank on a machine other than rank 0's: quiet, with a run folder on its machine for
  // that machine's ranks (a copy of what they sent to rank 0), whose run.json it writes.
  bool remote_copy = false;
  // Held from the first run.json to the finished one (run_liveness.h).
  std::shared_ptr<RunningMark> running;
};

// The lab's three variant specs, overrides applied and validated (throws InputError).
std::vector<VariantSpec> baseline_variants(const LabOptions& options);

LabOutcome run_baseline_lab(const LabOptions& options, std::ostream& progress);
// One variant; `kind` names the run (its record's kind, the banner, the folder's suffix): "run", or
// "profile" for `trainlab profile`.
LabOutcome run_single_variant(const LabOptions& options, std::ostream& progress, const std::string& kind = "run");
// A/B: the base configuration (A) and the base with `changes` applied (B, apply_setting keys), run
// alternately A B A B ... options.repeat times each in one invocation, so drift on a shared machine
// hits both alike. Records are labelled "A" / "B"; the run's kind is "ab". Throws InputError on a
// bad change before anything runs.
LabOutcome run_ab(const LabOptions& options, const std::vector<std::pair<std::string, std::string>>& changes,
                  std::ostream& progress);

// Creates results/<YYYYmmdd-HHMMSS>-<scenario>-<kind>[-N]/ and returns its path; characters of
// <scenario> other than letters, digits and . _ + - become _, and a <scenario> longer than
// kMaxRunNameChars is cut to that length, ending in 8 hex digits of its hash.
inline constexpr size_t kMaxRunNameChars = 64;
std::string make_run_dir(const std::string& results_dir, const std::string& scenario,
                         const std::string& kind, std::string* run_id);

// The run folder (one holding run.json) that a child `trainlab` command created under `parent`,
// or "" when there is none (each child run makes exactly one).
std::string run_folder_in(const std::string& parent);

// Why a repetition's measured steps were disturbed past the lab's limits (thresholds lab.disturbed_*,
// judged on measured steps of lab.disturbance_min_measured_s or more), e.g. "another process took
// 48 % of the CPU"; "" when they were not, or the repetition failed.
std::string disturbance_past_limit(const VariantRecord& v, const Thresholds& thresholds);

// The guard the lab and the sweep apply to each run just measured. Disturbed past the limits and
// with *reruns under max_reruns: `ran.disturbed` is set (the run is left out of every figure),
// *reruns counted, "NAME re-run: WHY while it was measured" said, and kRerun returned. Disturbed
// with the re-runs spent: `ran.disturbed_kept` is set and kKept returned (the caller says why it
// keeps it). Otherwise kClean.
enum class DisturbanceCall { kClean, kRerun, kKept };
DisturbanceCall judge_disturbance(VariantRecord& ran, const Thresholds& thresholds, int max_reruns, int* reruns,
                                  const std::string& name, std::ostream& progress);

// The intra-op threads that fit beside other processes: the machine's cores less those others hold
// (a core they keep busy half the time or more counts as held), at least 1. Where a lab's variants
// ran at LibTorch's default (a thread per core) and a disturbed repetition shows others holding
// cores, the lab lowers its threads to this and measures every variant again (each count once,
// at most lab.thread_lowerings_max times), recorded in RunDetails::thread_lowerings.
int threads_left_beside(int machine_cores, double others_busy_cores);
// Before a comparing run's first repetition (the lab, --ab, --repeat 2+, the sweep): where other
// processes already keep busy cores that LibTorch's default threads (one per core) would need, the
// choice of the cores left, a ThreadLowering whose `after` is empty, from a sample of
// lab.start_load_sample_s; nothing where the specs' threads are not LibTorch's default to choose
// (--threads, OMP_NUM_THREADS, ranks), re-runs are off, others hold no core, the window is 0 or there
// is one core.
std::optional<ThreadLowering> threads_left_at_start(const std::vector<VariantSpec>& specs,
                                                   const Thresholds& thresholds);
// "other processes keep 1.0 of the 2 cores busy at the start: <what_runs> runs at 1 thread ...".
std::string threads_at_start_words(const ThreadLowering& chosen, const std::string& what_runs);
// "Measured at 1 thread from the start: ..." or "... from bf16 #1 on: ..." where a run's threads were
// chosen at its start or lowered (RunDetails::thread_lowerings); empty otherwise.
std::string thread_lowering_words(const RunRecord& record);
// "bf16 #1 was disturbed: ... the lab waited 23 s for them to go and measured it again at the same
// threads." for each wait for other processes that ended with them gone (RunDetails::quiet_waits);
// empty otherwise.
std::string quiet_wait_words(const RunRecord& record);
// Appends both of the above, where not empty, to the record's reading (a run's, --ab's, a sweep's).
void append_load_words(RunRecord& record);
// The measured loop time of variants[first...] (their measured steps), in seconds: what the lab's
// rounds budget counts, so compiling and warming up never use it up.
double measured_loop_s(const std::vector<VariantRecord>& variants, size_t first);

}  // namespace trainlab
