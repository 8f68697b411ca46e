// The lab, the sweep and the doctor on the user's own job (job_variants.h).
#include "harness/runner/job_variants.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/comparison_stats.h"
#include "core/errors.h"
#include "core/statistics.h"
#include "core/text.h"
#include "diagnostics/rules.h"
#include "harness/process/interrupt.h"
#include "harness/report/lab_report.h"
#include "harness/report/sweep_figures.h"
#include "harness/runner/compare.h"
#include "harness/runner/diagnose.h"
#include "harness/runner/doctor.h"
#include "harness/runner/run_liveness.h"

namespace fs = std::filesystem;

namespace trainlab {
namespace {

double elapsed_s_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// "proc-12.jsonl: torch.compile(mode=default) applied, 21.4 s" (the records' override words):
// the seconds of the first compile.
std::optional<double> compile_seconds_of(const JobInfo& job) {
  for (const std::string& w : job.warnings) {
    const size_t at = w.find("torch.compile(mode=");
    const size_t applied = w.find(") applied, ", at == std::string::npos ? 0 : at);
    if (at == std::string::npos || applied == std::string::npos) continue;
    try {
      return std::stod(w.substr(applied + 11));
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// The recorder's line about a part it could not apply ("override failed: autocast: ..."), or "".
std::string override_failure(const JobInfo& job, const std::string& part) {
  const std::string marker = "override failed: " + part + ": ";
  for (const std::string& w : job.warnings) {
    const size_t at = w.find(marker);
    if (at != std::string::npos) return w.substr(at + marker.size());
  }
  return "";
}

bool override_applied(const JobInfo& job, const std::string& words) {
  return std::any_of(job.warnings.begin(), job.warnings.end(),
                     [&](const std::string& w) { return w.find(words) != std::string::npos; });
}

// The doctor's what-if of a decoded cache on a job: the knob cache=1 (as on a built-in scenario).
// The recorder then serves this many of the Dataset's samples, read before the loader is built.
constexpr int kJobDecodedCacheSamples = 256;
constexpr char kDecodedCacheChange[] = "decoded_cache";
bool wants_decoded_cache(const VariantSpec& spec) {
  const auto cache = spec.knobs.find("cache");
  return cache != spec.knobs.end() && cache->second >= 1;
}

// Where a variant asked for what the job could not take: recorded as not measured (the lab reads
// the others), with the one line that says why.
void mark_unapplied_variant(const VariantSpec& spec, VariantRecord& v) {
  if (!v.job) return;
  const JobInfo& job = *v.job;
  std::string why;
  if (spec.precision == Precision::kBf16) {
    if (const std::string failed = override_failure(job, "autocast"); !failed.empty()) {
      why = "bf16 autocast could not be applied: " + failed;
    } else if (v.ok() && !override_applied(job, "autocast ")) {
      why = "bf16 autocast was not applied: the recorder found no module trained by the optimizer (see docs/job.md)";
    }
  }
  if (why.empty() && spec.compiled) {
    if (const std::string failed = override_failure(job, "compile"); !failed.empty()) {
      why = failed;
    } else if (v.ok() && !override_applied(job, "torch.compile(")) {
      why = "torch.compile was not applied: the recorder found no module trained by the optimizer";
    }
  }
  if (why.empty() && wants_decoded_cache(spec)) {
    if (const std::string failed = override_failure(job, "decoded_cache"); !failed.empty()) {
      why = "the decoded cache could not be applied: " + failed;
    } else if (v.ok() && !override_applied(job, "decoded cache ")) {
      why = "the decoded cache was not applied: the recorder found no training DataLoader at its line";
    }
  }
  if (why.empty() && !v.ok() && (spec.precision != Precision::kFp32 || spec.compiled)) {
    why = spec.name() + " cannot run this job: " + v.error;  // e.g. a custom op that refuses bf16
  }
  if (why.empty()) return;
  v.error = why;
  v.error_kind = "unavailable";
}

// One run of the job for a variant: its folder run_dir/jobs/<stem>/ (the recorder's files, the job's
// output), the spec it stands for with what the job measured (batch, steps), and the record beside
// the built-in variants' (variants/<stem>.json).
VariantRecord measure_job_variant(const JobCompareOptions& options, const std::optional<JobTrainingLoader>& loader,
                                  const VariantSpec& spec, const VariantRunOptions& run) {
  JobOptions job = options.job;
  job.timeout_s = run.timeout_s > 0 ? run.timeout_s : options.run_timeout_s;
  const std::string stem = run.file_stem.empty() ? spec.name() : run.file_stem;
  const fs::path dir = fs::absolute(fs::path(run.run_dir) / "jobs" / stem);
  std::error_code ec;
  fs::remove_all(dir, ec);  // a re-run of the same stem starts clean (each has its own stem: never the user's files)
  fs::create_directories(dir);
  job.output_file = (dir / "output.log").string();
  job.environment = job_overrides_for(spec, loader ? &*loader : nullptr, options.compile_mode, run.run_dir);
  if (options.min_measured_s > 0) {
    job.environment.push_back({"TRAINLAB_JOB_MIN_MEASURED_S", format_text("%g", options.min_measured_s)});
    job.environment.push_back({"TRAINLAB_JOB_MAX_STEPS", std::to_string(job.warmup + kMaxExtendedSteps)});
  }
  VariantRecord v = measure_job_run(job, run.run_dir, dir.string(), stem);
  const VariantSpec measured = v.spec;
  v.spec = spec;
  // A loop without a DataLoader gives the recorder no batch size: its figures are then per step
  // (batch 1: "samples/s" reads steps/s; run_job_lab says so).
  v.spec.batch_size = measured.batch_size > 0 ? measured.batch_size : 1;
  v.spec.steps = measured.steps;
  v.spec.warmup_steps = measured.warmup_steps;
  v.spec.sample_interval_ms = measured.sample_interval_ms;
  if (!loader) {  // the job's own loader: what it ran
    v.spec.workers = measured.workers;
    v.spec.prefetch = measured.prefetch;
    v.spec.pin_memory = measured.pin_memory;
    v.spec.persistent_workers = measured.persistent_workers;
  }
  v.label.clear();
  if (spec.compiled && v.job) {
    v.compile_info.method = "torch.compile";
    if (const auto s = compile_seconds_of(*v.job)) v.compile_info.compile_s = *s;
  }
  v.disturbed_kept.clear();  // the lab's and the sweep's guard judge it (judge_disturbance)
  mark_unapplied_variant(spec, v);
  fs::create_directories(fs::path(run.run_dir) / "variants", ec);
  write_variant_record((fs::path(run.run_dir) / "variants" / (stem + ".json")).string(), v);
  return v;
}

LabOptions job_lab_options(const JobCompareOptions& options, const std::optional<JobTrainingLoader>& loader,
                           const VariantSpec& base) {
  LabOptions lab;
  lab.base = base;
  lab.results_dir = options.job.results_dir;
  lab.variant_timeout_s = options.run_timeout_s;
  lab.repeat = options.repeat;
  lab.thresholds = options.job.thresholds;
  lab.live_progress = options.live_progress;
  lab.measure = [options, loader](const VariantSpec& spec, const VariantRunOptions& run) {
    return measure_job_variant(options, loader, spec, run);
  };
  return lab;
}

// The spec every variant of a job starts from: the job's name as the scenario, its steps; the
// loader's settings as the job built them (when known).
VariantSpec job_base_spec(const JobCompareOptions& options, const std::optional<JobTrainingLoader>& loader) {
  VariantSpec base;
  base.scenario = "job " + job_name_of(options.job.command);
  base.warmup_steps = options.job.warmup;
  base.steps = std::max<int64_t>(0, options.job.steps - options.job.warmup);
  base.sample_interval_ms = options.job.sample_interval_ms;
  base.max_loop_s = 0;
  base.min_loop_s = 0;
  base.device = DeviceChoice::kAuto;
  base.threads = options.threads;
  if (loader) {
    base.workers = loader->workers;
    base.prefetch = loader->prefetch;
    base.pin_memory = loader->pin_memory;
    base.persistent_workers = loader->persistent_workers;
  }
  return base;
}

// A short run of the job as written, before a sweep or the doctor: which loader trains, with what
// settings, on which device. Its folder stays in the run folder (jobs/as-written/).
VariantRecord discover(const JobCompareOptions& options, const std::string& run_dir, std::ostream& progress) {
  progress << "trainlab: a short run of the job as written, to find its training DataLoader" << std::endl;
  JobCompareOptions shortened = options;
  shortened.job.steps = std::min<int64_t>(options.job.steps, options.job.warmup + 2);
  shortened.min_measured_s = 0;
  VariantRunOptions run;
  run.run_dir = run_dir;
  run.timeout_s = options.run_timeout_s;
  run.file_stem = "as-written";
  const VariantSpec base = job_base_spec(options, std::nullopt);
  return measure_job_variant(shortened, std::nullopt, base, run);
}

std::string loader_words(const JobTrainingLoader& l) {
  std::string w = "num_workers=" + std::to_string(l.workers);
  if (l.workers > 0) w += ", prefetch_factor=" + std::to_string(l.prefetch);
  w += std::string(", pin_memory=") + (l.pin_memory ? "True" : "False");
  if (l.workers > 0) w += std::string(", persistent_workers=") + (l.persistent_workers ? "True" : "False");
  return w;
}

std::vector<int> default_workers(const JobTrainingLoader& own, int cores) {
  std::set<int> workers = {0, own.workers};
  for (int w = 1; w <= std::max(1, cores); w *= 2) workers.insert(w);
  workers.insert(std::max(1, cores));
  return {workers.begin(), workers.end()};
}

// The counted rounds' samples/s of the points whose label is `label`, by round.
std::map<int, double> rounds_of(const RunRecord& record, const std::string& label) {
  std::map<int, double> out;
  for (const VariantRecord& v : record.variants) {
    if (!v.counts() || sweep_point_label(v.spec, false) != label) continue;
    const VariantAggregate agg = aggregate(v);
    if (agg.measured_steps > 0) out[v.repetition] = agg.samples_per_s;
  }
  return out;
}

struct PointGain {
  stats::ChangeEstimate change;
  bool has_interval = false;
};

std::optional<PointGain> paired_gain(const RunRecord& record, const std::string& from, const std::string& to) {
  const std::map<int, double> a = rounds_of(record, from), b = rounds_of(record, to);
  std::vector<double> av, bv;
  for (const auto& [round, sps] : a) {
    const auto it = b.find(round);
    if (it != b.end() && sps > 0 && it->second > 0) {
      av.push_back(sps);
      bv.push_back(it->second);
    }
  }
  if (av.empty()) return std::nullopt;
  PointGain g;
  if (av.size() >= 2) {
    g.change = stats::paired_robust_change(av, bv);
    g.has_interval = true;
  } else {
    g.change.change_pct = g.change.low_pct = g.change.high_pct = 100.0 * (bv[0] - av[0]) / av[0];
    g.change.pairs = 1;
  }
  return g;
}

std::string gain_words(const PointGain& g) {
  if (!g.has_interval) return format_text("%+.1f %% samples/s (one round: no interval)", g.change.change_pct);
  return format_text("%+.1f %% samples/s", g.change.change_pct) + " [" + format_text("%+.1f", g.change.low_pct) + ", " +
         format_text("%+.1f", g.change.high_pct) + "] over " + std::to_string(g.change.pairs) + " paired rounds";
}

// A counted record of the point `label` (the first), or null.
const VariantRecord* first_record_of(const RunRecord& record, const std::string& label) {
  for (const VariantRecord& v : record.variants) {
    if (v.counts() && sweep_point_label(v.spec, false) == label) return &v;
  }
  return nullptr;
}

double data_wait_pct_of(const VariantRecord& v) {
  return aggregate(v).phase_pct[static_cast<size_t>(Phase::kDataWait)];
}

// "its top stage is ColorJitter (33 % of the loader's time)": the stage the profile names first.
std::string top_stage_words(const VariantRecord& v) {
  if (!v.job || v.job->stage_groups.empty()) return "";
  const JobStageGroup* group = &v.job->stage_groups.front();
  for (const JobStageGroup& g : v.job->stage_groups) {
    if (g.busy_wall_ns > group->busy_wall_ns) group = &g;
  }
  if (group->stages.empty() || group->busy_wall_ns <= 0) return "";
  const JobStage& top = group->stages.front();
  return "its top stage is " + top.name + " (" + top.kind + ", " +
         format_text("%.0f %%", 100.0 * static_cast<double>(top.wall_ns) / static_cast<double>(group->busy_wall_ns)) +
         " of the loader's time)";
}

// The label of the point whose counted rounds' median samples/s is highest ("" when none counts).
std::string fastest_point(const RunRecord& record) {
  std::map<std::string, std::vector<double>> by_point;
  for (const VariantRecord& v : record.variants) {
    if (!v.counts()) continue;
    const VariantAggregate agg = aggregate(v);
    if (agg.measured_steps > 0) by_point[sweep_point_label(v.spec, false)].push_back(agg.samples_per_s);
  }
  std::string fastest;
  double best = -1;
  for (const auto& [label, sps] : by_point) {
    if (const double median = stats::median(sps); median > best) {
      best = median;
      fastest = label;
    }
  }
  return fastest;
}

// What persistent_workers changes at `spec`'s worker count: the median wait for each later epoch's
// first batch with the workers persistent and restarting, where the grid measured both and the
// measured steps began later epochs (the table's "epoch start s"); "" otherwise.
std::string epoch_start_words(const RunRecord& record, const VariantSpec& spec) {
  if (spec.workers <= 0) return "";
  const auto epoch_start_s = [&](bool persistent) -> std::optional<double> {
    VariantSpec point = spec;
    point.persistent_workers = persistent;
    const std::string label = sweep_point_label(point, false);
    std::vector<double> per_epoch_s;
    for (const VariantRecord& v : record.variants) {
      if (!v.counts() || !v.job || v.job->epoch_starts <= 0 || sweep_point_label(v.spec, false) != label) continue;
      per_epoch_s.push_back(static_cast<double>(v.job->epoch_start_wait_ns) / 1e9 /
                            static_cast<double>(v.job->epoch_starts));
    }
    if (per_epoch_s.empty()) return std::nullopt;
    return stats::median(per_epoch_s);
  };
  const std::optional<double> persistent_s = epoch_start_s(true), restarting_s = epoch_start_s(false);
  if (!persistent_s || !restarting_s) return "";
  return format_text("Each later epoch's first batch at num_workers=%d: %.3f s with persistent_workers=True against "
                     "%.3f s with the workers restarting (the median over the runs, the table's epoch start s).",
                     spec.workers, *persistent_s, *restarting_s);
}

// The sweep's answer in the user's code: the change to make at the DataLoader(...) call with its
// measured gain over the script's own settings, or why there is none; then the next knob where the
// loader still bounds the best point. candidate: set to the point the answer read against the script's own (its label; empty where none).
std::vector<std::string> job_sweep_answer(const SweepOutcome& outcome, const JobTrainingLoader& own,
                                          const VariantSpec& own_spec, const Thresholds& thresholds,
                                          std::string& candidate) {
  std::vector<std::string> lines;
  const RunRecord& record = outcome.record;
  const std::string own_label = sweep_point_label(own_spec, false);
  const VariantRecord* own_run = first_record_of(record, own_label);
  const double moderate_pct = thresholds.value(threshold::input_bound::moderate_pct);
  const double high_pct = thresholds.value(threshold::input_bound::high_pct);
  const std::string site = own.file + " line " + std::to_string(own.line);
  // The candidate: the sweep's recommendation, else (its top points tied) the fastest point; what
  // decides is whether it beats the script's own settings beyond noise.
  candidate.clear();
  if (record.details.sweep && record.details.sweep->recommendation) {
    const RecommendedPoint& rec = *record.details.sweep->recommendation;
    candidate = sweep_point_label(record.variants.at(static_cast<size_t>(rec.variant_index)).spec, false);
  } else {
    candidate = fastest_point(record);
  }
  if (own_run == nullptr) {
    lines.push_back("In your code: no recommendation; the script's own settings (" + loader_words(own) + ", " + site +
                    ") have no counted round to compare with.");
    return lines;
  }
  const double own_wait_pct = data_wait_pct_of(*own_run);
  const bool loader_bound = own_wait_pct >= moderate_pct;
  const std::string not_bound =
      loader_bound ? ""
                   : "The loader is not the bound: data wait " + format_text("%.1f %%", own_wait_pct) +
                         " of the step at the script's own settings (" + loader_words(own) + ", " + site + "). ";
  const VariantRecord* candidate_run = candidate.empty() ? nullptr : first_record_of(record, candidate);
  if (candidate_run == nullptr || candidate == own_label) {
    // Other points measured beside the script's own, or none of them (every other point failed).
    const bool others_measured = std::any_of(record.variants.begin(), record.variants.end(), [&](const VariantRecord& v) {
      return v.ok() && sweep_point_label(v.spec, false) != own_label;
    });
    lines.push_back(not_bound + "In your code: keep DataLoader(" + loader_words(own) + ") at " + site +
                    (others_measured ? ": the script's own settings measured best, or within the "
                                       "tolerance of the best at less cost."
                                     : ": no other point completed beside them (the errors say why)."));
    return lines;
  }
  const std::optional<PointGain> gain = paired_gain(record, own_label, candidate);
  std::string today;
  const std::string arguments = dataloader_arguments(candidate_run->spec, own, &today);
  const bool beyond_noise = gain && gain->has_interval && gain->change.low_pct > 0;
  if (!beyond_noise) {
    lines.push_back(not_bound + "In your code: no change. " + candidate + " measured " +
                    (gain ? gain_words(*gain) : std::string("no paired round")) +
                    " against the script's own settings (" + own_label + "), " +
                    (gain && gain->has_interval ? "within noise" : "which cannot tell it from noise: --repeat 3") + ".");
    return lines;
  }
  lines.push_back("In your code: set DataLoader(" + arguments + ") in " + site + " (today: " + today + "): " +
                  gain_words(*gain) + ".");
  const double best_wait_pct = data_wait_pct_of(*candidate_run);
  if (best_wait_pct >= high_pct) {
    const std::string stage = top_stage_words(*candidate_run);
    lines.push_back("Still input-bound at " + candidate + " (data wait " + format_text("%.1f %%", best_wait_pct) +
                    " of the step)" + (stage.empty() ? "" : ": " + stage) +
                    "; the next knob is the samples' own cost: cheaper transforms, caching decoded samples, or "
                    "augmenting on the GPU.");
  }
  return lines;
}

// The answer, then what persistent workers change at each later epoch's start at the point it read.
std::vector<std::string> job_sweep_reading(const SweepOutcome& outcome, const JobTrainingLoader& own,
                                           const VariantSpec& own_spec, const Thresholds& thresholds) {
  std::string candidate;
  std::vector<std::string> lines = job_sweep_answer(outcome, own, own_spec, thresholds, candidate);
  const VariantRecord* at = first_record_of(outcome.record, candidate);
  const std::string epochs = epoch_start_words(outcome.record, at != nullptr ? at->spec : own_spec);
  if (!epochs.empty()) lines.push_back(epochs);
  return lines;
}

void rewrite_run_json(const SweepOutcome& outcome) {
  write_run_record((fs::path(outcome.run_dir) / "run.json").string(), outcome.record);
}

}  // namespace

std::vector<std::string> undecided_against_own(const RunRecord& record, const std::string& own_label,
                                               double moderate_pct) {
  const VariantRecord* own_run = first_record_of(record, own_label);
  const std::string fastest = fastest_point(record);
  if (own_run == nullptr || fastest.empty() || fastest == own_label) return {};
  if (data_wait_pct_of(*own_run) < moderate_pct) return {};
  const std::optional<PointGain> gain = paired_gain(record, own_label, fastest);
  if (!gain || !gain->has_interval) return {};
  if (gain->change.low_pct < 0 && 0 < gain->change.high_pct) return {own_label, fastest};
  return {};
}

std::vector<std::pair<std::string, std::string>> job_overrides_for(const VariantSpec& spec,
                                                                   const JobTrainingLoader* loader,
                                                                   const std::string& compile_mode,
                                                                   const std::string& run_dir) {
  std::vector<std::pair<std::string, std::string>> env = {{"TRAINLAB_JOB_SEED", std::to_string(spec.seed)}};
  if (spec.precision == Precision::kBf16) env.push_back({"TRAINLAB_JOB_AUTOCAST", "bf16"});
  if (spec.compiled) {
    env.push_back({"TRAINLAB_JOB_COMPILE", compile_mode.empty() ? "default" : compile_mode});
    // Shared by the run's compiled repetitions: the later ones load what the first compiled.
    env.push_back({"TORCHINDUCTOR_CACHE_DIR", fs::absolute(fs::path(run_dir) / "inductor-cache").string()});
  }
  if (spec.threads > 0) {
    env.push_back({"TRAINLAB_JOB_THREADS", std::to_string(spec.threads)});
    env.push_back({"OMP_NUM_THREADS", std::to_string(spec.threads)});
  }
  if (loader != nullptr) {
    nlohmann::json l = {{"num_workers", spec.workers},
                        {"pin_memory", spec.pin_memory},
                        {"persistent_workers", spec.workers > 0 && spec.persistent_workers},
                        {"at", loader->at()}};
    l["prefetch_factor"] = spec.workers > 0 ? nlohmann::json(spec.prefetch) : nlohmann::json(nullptr);
    if (wants_decoded_cache(spec)) l["decoded_cache"] = kJobDecodedCacheSamples;
    env.push_back({"TRAINLAB_JOB_LOADER", l.dump()});
  }
  return env;
}

std::optional<JobTrainingLoader> training_loader_of(const VariantRecord& run) {
  if (!run.job || run.job->loaders.empty()) return std::nullopt;
  const JobLoader* chosen = nullptr;
  for (const JobLoader& l : run.job->loaders) {
    if (l.rank == 0 && l.training && *l.training) chosen = &l;
  }
  for (const JobLoader& l : run.job->loaders) {
    if (chosen == nullptr && l.rank == 0) chosen = &l;
  }
  if (chosen == nullptr) chosen = &run.job->loaders.front();
  JobTrainingLoader out;
  out.file = chosen->file;
  out.line = chosen->line;
  out.workers = static_cast<int>(chosen->num_workers);
  out.prefetch_given = chosen->prefetch_factor.has_value();
  out.prefetch = static_cast<int>(chosen->prefetch_factor.value_or(2));
  out.pin_memory = chosen->pin_memory;
  out.persistent_workers = chosen->persistent_workers;
  return out;
}

std::string dataloader_arguments(const VariantSpec& point, const JobTrainingLoader& today, std::string* today_words) {
  std::vector<std::pair<std::string, std::string>> changed, was;
  const auto py_bool = [](bool b) { return std::string(b ? "True" : "False"); };
  if (point.workers != today.workers) {
    changed.push_back({"num_workers", std::to_string(point.workers)});
    was.push_back({"num_workers", std::to_string(today.workers)});
  }
  if (point.workers > 0 && (point.prefetch != today.prefetch || today.workers == 0)) {
    if (point.prefetch != 2 || today.prefetch_given) {
      changed.push_back({"prefetch_factor", std::to_string(point.prefetch)});
      was.push_back({"prefetch_factor", today.workers > 0 ? std::to_string(today.prefetch) : "None"});
    }
  }
  if (point.pin_memory != today.pin_memory) {
    changed.push_back({"pin_memory", py_bool(point.pin_memory)});
    was.push_back({"pin_memory", py_bool(today.pin_memory)});
  }
  const bool persistent = point.workers > 0 && point.persistent_workers;
  if (persistent != today.persistent_workers) {
    changed.push_back({"persistent_workers", py_bool(persistent)});
    was.push_back({"persistent_workers", py_bool(today.persistent_workers)});
  }
  const auto join = [](const std::vector<std::pair<std::string, std::string>>& kv) {
    std::string out;
    for (const auto& [k, v] : kv) out += (out.empty() ? "" : ", ") + k + "=" + v;
    return out;
  };
  if (today_words != nullptr) *today_words = join(was);
  return join(changed);
}

ScriptChoiceWords script_choice_words(const RunRecord& record, bool lab) {
  const auto at = [](const JobScriptChoice& c) { return c.file + ":" + std::to_string(c.line); };
  const std::string no_integer = "a seed that is no integer";
  // The places, each once, over the runs that measured (autocast / compile as written: the runs
  // trainlab set neither on; reseeds: every run, whose seeds are compared).
  std::vector<const JobScriptChoice*> autocasts, compiles, reseeds;
  std::map<std::string, std::set<std::string>> seeds_by_place;  // "call at file:line" -> seeds seen
  int runs_with_reseeds = 0, measured_runs = 0;
  // Once per place; a reseed's detail holds its seed, so its place alone is the key.
  const auto add_once = [&](std::vector<const JobScriptChoice*>& to, const JobScriptChoice& c) {
    const bool seen = std::any_of(to.begin(), to.end(), [&](const JobScriptChoice* o) {
      return o->file == c.file && o->line == c.line && (c.kind == "reseed" || o->detail == c.detail);
    });
    if (!seen) to.push_back(&c);
  };
  for (const VariantRecord& v : record.variants) {
    if (!v.ok() || !v.job) continue;
    ++measured_runs;
    const bool as_written = v.spec.precision == Precision::kFp32 && !v.spec.compiled;
    bool reseeded = false;
    for (const JobScriptChoice& c : v.job->script_choices) {
      if (c.kind == "reseed") {
        reseeded = true;
        const std::string place = c.detail.substr(0, c.detail.find('(')) + " at " + at(c);
        seeds_by_place[place].insert(c.seed ? std::to_string(*c.seed) : no_integer);
        add_once(reseeds, c);
      } else if (as_written && c.kind == "autocast") {
        add_once(autocasts, c);
      } else if (as_written && c.kind == "compile") {
        add_once(compiles, c);
      }
    }
    runs_with_reseeds += reseeded ? 1 : 0;
  }
  const auto places = [&](const std::vector<const JobScriptChoice*>& list) {
    std::string out;
    for (size_t i = 0; i < list.size() && i < 3; ++i) out += std::string(i == 0 ? "" : "; ") + list[i]->detail + " at " + at(*list[i]);
    if (list.size() > 3) out += " and " + std::to_string(list.size() - 3) + " more";
    return out;
  };
  ScriptChoiceWords out;
  std::vector<std::string>& lines = out.lines;
  out.autocast = lab && !autocasts.empty();
  if (out.autocast) {
    out.autocast_places = places(autocasts);
    lines.push_back("The script enters autocast itself (" + places(autocasts) +
                    "): the run called fp32 is the job as written, at the script's own precision wherever that block "
                    "reaches, not fp32. The bf16 variant puts trainlab's bf16 autocast around the whole forward of the "
                    "trained module, and inside the script's block its own dtype still holds: the precision figures "
                    "give what bf16 adds to what the script already does, not fp32 against bf16.");
  }
  if (lab && !compiles.empty()) {
    lines.push_back("The script compiles itself (" + places(compiles) +
                    "): every run is compiled as the script does it, its compile time inside the run's warm-up steps; "
                    "where it compiles the trained module, the lab's compiled variant does not compile it again.");
  }
  if (!reseeds.empty()) {
    std::string differing;
    for (const auto& [place, seeds] : seeds_by_place) {
      const bool not_integer = seeds.count(no_integer) > 0;
      if (seeds.size() > 1 || not_integer) {
        std::string list;
        int shown = 0;
        for (const std::string& seed : seeds) {
          if (shown++ < 4) list += (list.empty() ? "" : ", ") + seed;
        }
        differing += (differing.empty() ? "" : "; ") + place + " (" + list + (seeds.size() > 4 ? ", ..." : "") + ")";
      }
    }
    const std::string where = places(reseeds);
    if (!differing.empty()) {
      lines.push_back("The script seeds again after trainlab's seed with seeds that are not the same in every run: " +
                      differing + ". Its runs do not see the same data slice and initial weights, so part of the "
                      "spread between runs is the data's, not the settings'; a fixed seed there (or none) lets the "
                      "runs compare alike.");
    } else if (measured_runs < 2) {
      lines.push_back("The script seeds again itself (" + where + "): its seed, not trainlab's, decides the data slice.");
    } else if (runs_with_reseeds == measured_runs) {
      lines.push_back("The script seeds again itself (" + where +
                      ") with the same seed in every run: the runs still see the same data slice.");
    } else {
      lines.push_back("The script seeds again itself (" + where + ") in " + std::to_string(runs_with_reseeds) + " of " +
                      std::to_string(measured_runs) + " runs: the others kept trainlab's seed, so not every run saw the same data slice.");
    }
  }
  return out;
}

namespace {

// The lab's probe as the reading uses it: bf16 GEMMs over fp32 on this CPU (none on a CUDA device,
// or where the probe failed).
std::optional<double> probe_gemm_x_of(const RunRecord& record) {
  const std::optional<Bf16ProbeTimings>& probe = record.details.bf16_probe;
  if (!probe || !probe->error.empty() || probe->fp32_ns.size() < 2) return std::nullopt;
  const Bf16Probe read = read_bf16_probe(probe->fp32_ns, probe->bf16_ns, "", /*skip_below_pct=*/-100);
  if (!read.measured) return std::nullopt;
  return 1.0 + read.gemm_gain.gain_pct / 100.0;
}

// Wider than this (points of gain), an interval that holds no change cannot say "nothing changed".
constexpr double kOwnAutocastUndecidedWidthPct = 20.0;

}  // namespace

std::string own_autocast_reading(const LabVariantFigures& as_written, const LabVariantFigures& bf16,
                                 const std::string& places, double input_high_pct, const std::string& job_command,
                                 std::optional<double> probe_gemm_x) {
  if (as_written.ok && !as_written.data_wait_pct.empty() && stats::mean(as_written.data_wait_pct) >= input_high_pct)
    return "";
  const std::string head = "Reading: the script enters autocast itself (" + places + "), so the job as written is "
                           "not fp32 and the probe's fp32-against-bf16 bound does not apply to it";
  const std::optional<GainEstimate> g = paired_gain(as_written, bf16, 0.0);
  if (!g) {
    return head + "; the bf16 variant gave no reading against it" +
           (!bf16.ok && !bf16.unavailable.empty() ? " (" + bf16.unavailable + ")" : std::string()) + ".";
  }
  const std::string gain =
      g->has_interval ? format_text("%+.1f %% [%+.1f, %+.1f]", g->gain_pct, g->low_pct, g->high_pct)
                      : format_text("%+.1f %% (one repetition: tentative)", g->gain_pct);
  const std::string added = ". trainlab's bf16 autocast around the whole forward of the trained module, on top of the "
                            "script's own block, ";
  std::string not_measured = " What the script's own block buys against fp32 is not measured here: every run "
                             "holds it.";
  if (probe_gemm_x && *probe_gemm_x < 1.0) {
    not_measured += format_text(" The probe measured bf16 GEMMs at %.2fx fp32 on this CPU, so that block may itself "
                                "cost time: the lab on the script without it measures what it buys.",
                                *probe_gemm_x);
  }
  if (g->low_pct > 0) {
    return head + added + "gained " + gain + ": part of the forward the script leaves in fp32 still pays for bf16; "
           "widening the script's autocast to the whole forward is worth measuring." + not_measured;
  }
  if (g->high_pct < 0) {
    return head + added + "made the step slower (" + gain + "): the script's own block already takes what bf16 gives "
           "here, and more of it costs (dtype conversions); keep the script's autocast as it is." + not_measured;
  }
  // An interval this wide says the rounds scatter, not that nothing changed.
  if (g->high_pct - g->low_pct > kOwnAutocastUndecidedWidthPct) {
    return head + added + format_text("cannot be told from noise yet (%s over %d paired repetitions): --repeat 5 "
                                      "measures more rounds.", gain.c_str(), g->repetitions) + not_measured;
  }
  return head + added + "changed nothing measurable (" + gain + "): what the script leaves in fp32 costs little, so "
         "more bf16 will not shorten this step; `trainlab profile -- " + job_command + "` splits it by op." + not_measured;
}

LabOutcome run_job_lab(const JobCompareOptions& options, std::ostream& progress) {
  check_job_options(options.job);
  const auto start = std::chrono::steady_clock::now();
  LabOptions lab = job_lab_options(options, std::nullopt, job_base_spec(options, std::nullopt));
  if (!options.repeat_given) {  // as the built-in lab: three rounds, more while a gain is undecided
    lab.repeat = 3;
    lab.extra_rounds = kDefaultMaxRounds - lab.repeat;
    lab.rounds_budget_s = kExtraRoundsBudgetS;
  }
  progress << "trainlab baseline: the three-run lab on " << quoted_job_command(options.job.command)
           << " (fp32 as written, its trained module under bf16 autocast, and compiled with torch.compile)"
           << std::endl;
  LabOutcome outcome = run_baseline_lab(lab, progress);
  // What the lab changed inside the job, and how long it took, after the reading.
  RunRecord& record = outcome.record;
  std::vector<double> compile_s;
  for (const VariantRecord& v : record.variants) {
    if (v.ok() && v.spec.compiled && v.compile_info.compile_s > 0) compile_s.push_back(v.compile_info.compile_s);
  }
  std::string notes = "Inside the job: every run seeded (TRAINLAB_JOB_SEED " + std::to_string(lab.base.seed) +
                      "); bf16 is torch.autocast around the forward of the module the optimizer trains, the optimizer "
                      "untouched; compiled is that module's forward through torch.compile (mode " +
                      options.compile_mode + ")";
  if (!compile_s.empty()) {
    notes += format_text(", its compile %.1f s", compile_s.front()) +
             (compile_s.size() > 1 ? format_text(" at the first run, %.1f s at the later ones (cache)",
                                                 stats::median({compile_s.begin() + 1, compile_s.end()}))
                                   : std::string()) +
             " kept out of the measured steps";
  }
  // The reading's pointers are the built-in scenarios'; on a job they are the job's commands.
  for (std::string& line : record.reading) {
    const std::string builtin = " (`trainlab sweep` finds the loader setting; -k cache=1 measures decode-once).";
    const size_t at = line.find(builtin);
    if (at != std::string::npos) {
      line.replace(at, builtin.size(), " (`trainlab sweep -- " + quoted_job_command(options.job.command) +
                                           "` finds the DataLoader setting; `trainlab profile -- ...` names the "
                                           "stage inside it).");
    }
  }
  const bool per_step = std::any_of(record.variants.begin(), record.variants.end(), [](const VariantRecord& v) {
    return v.ok() && v.job && v.job->loaders.empty();
  });
  if (per_step) notes += "; the job builds no DataLoader, so its batch size is unknown: samples/s here are steps/s";
  // What the script does itself comes first: the rest of the reading is read against it. Under the
  // script's own autocast, "fp32" is the job as written, and the probe's bound is partly taken.
  const ScriptChoiceWords choices = script_choice_words(record, /*lab=*/true);
  if (choices.autocast) {
    const std::string own_reading =
        own_autocast_reading(lab_variant_figures(record, "fp32"), lab_variant_figures(record, "bf16"),
                             choices.autocast_places, options.job.thresholds->value(threshold::input_bound::high_pct),
                             quoted_job_command(options.job.command), probe_gemm_x_of(record));
    for (std::string& line : record.reading) {
      if (line.rfind("fp32 -> bf16 ", 0) == 0) {
        line.replace(0, 4, "as written (the script's own autocast)");
        // The probe bounds fp32 against bf16; the job as written already runs part of its step in
        // bf16, so that bound (and "far less than the hardware could give") is not this change's.
        const size_t bound = line.find(": bf16 could give at most ");
        if (bound != std::string::npos) {
          line.erase(bound);
          line += ": the probe's fp32 -> bf16 bound does not apply, the job as written already runs the script's "
                  "own autocast block.";
        }
      }
      if (line.rfind("Reading: ", 0) == 0 && !own_reading.empty()) line = own_reading;
    }
  }
  record.reading.insert(record.reading.begin(), choices.lines.begin(), choices.lines.end());
  record.reading.push_back(notes + format_text(". The lab took %.0f s.", elapsed_s_since(start)));
  write_run_record((fs::path(outcome.run_dir) / "run.json").string(), record);
  return outcome;
}

SweepOutcome run_job_sweep(const JobCompareOptions& options, const JobSweepGrid& grid, std::ostream& progress) {
  check_job_options(options.job);
  const auto start = std::chrono::steady_clock::now();
  std::string run_id;
  const std::string run_dir =
      make_run_dir(options.job.results_dir, "job-" + job_name_of(options.job.command), "sweep", &run_id);
  VariantRecord first;
  {
    const RunningMark running(run_dir);
    first = discover(options, run_dir, progress);
  }
  const std::optional<JobTrainingLoader> own = training_loader_of(first);
  if (!own) {
    // Nothing to keep: the folder holds only this short run, which the line below says all of.
    std::error_code ec;
    if (first.ok()) fs::remove_all(run_dir, ec);
    if (!first.ok()) throw InputError("the job as written did not run to a step: " + first.error + " (its output: " + run_dir + "/jobs/as-written/output.log)");
    throw InputError("the job builds no torch.utils.data.DataLoader: there is no loader to sweep (trainlab profile -- " +
                     quoted_job_command(options.job.command) + " says where its time goes)");
  }
  if (own->file.empty() || own->line <= 0) {
    throw InputError("the job's DataLoader was built where the recorder could not name the file and line");
  }
  progress << "trainlab: the training DataLoader is at " << own->at() << " (" << loader_words(*own) << ")" << std::endl;

  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  SweepOptions sweep;
  sweep.run_dir = run_dir;
  sweep.tolerance_pct = grid.tolerance_pct;
  sweep.live_progress = options.live_progress;
  sweep.cuda_available = first.device.rfind("cuda", 0) == 0;
  const VariantSpec own_spec = job_base_spec(options, own);
  sweep.lab = job_lab_options(options, own, own_spec);
  sweep.grid.workers = grid.workers.empty() ? default_workers(*own, cores) : grid.workers;
  sweep.grid.prefetch = grid.prefetch.empty() ? std::vector<int>{own->prefetch} : grid.prefetch;
  sweep.grid.pin_memory = grid.pin_memory.empty() ? std::vector<bool>{own->pin_memory} : grid.pin_memory;
  // Workers that restart at every epoch (persistent_workers=False, DataLoader's default) pay their
  // start-up and first batches again each epoch: without a grid, both are measured.
  sweep.grid.persistent = !grid.persistent.empty()       ? grid.persistent
                          : own->persistent_workers       ? std::vector<bool>{true}
                                                          : std::vector<bool>{false, true};
  if (!options.repeat_given) {  // more rounds of the two points the answer compares while it cannot tell them
    const std::string own_label = sweep_point_label(own_spec, false);
    const double moderate_pct = options.job.thresholds->value(threshold::input_bound::moderate_pct);
    sweep.undecided = [own_label, moderate_pct](const RunRecord& record) {
      return undecided_against_own(record, own_label, moderate_pct);
    };
    sweep.extra_rounds = kDefaultMaxRounds - sweep.lab.repeat;
    sweep.rounds_budget_s = kExtraRoundsBudgetS;
  }
  std::vector<std::string> notes;
  expand_sweep(sweep, &notes);  // validates the grid before the points run
  SweepOutcome outcome = run_sweep(sweep, progress);
  RunRecord& record = outcome.record;
  const std::vector<std::string> answer = job_sweep_reading(outcome, *own, own_spec, *options.job.thresholds);
  record.reading.insert(record.reading.begin(), answer.begin(), answer.end());
  record.reading.push_back(format_text("Note: the sweep took %.0f s, ", elapsed_s_since(start)) +
                           "each point a run of the job with its DataLoader at " + own->at() +
                           " given the point's settings (TRAINLAB_JOB_LOADER), every run seeded alike.");
  for (const std::string& line : script_choice_words(record, /*lab=*/false).lines) record.reading.push_back(line);
  rewrite_run_json(outcome);
  return outcome;
}

DoctorOutcome run_job_doctor(const JobCompareOptions& options, int max_changes, int max_rounds, std::ostream& progress) {
  check_job_options(options.job);
  DoctorOutcome outcome;
  std::string run_id;
  outcome.out_dir = make_run_dir(options.job.results_dir, "job-" + job_name_of(options.job.command), "doctor", &run_id);
  outcome.created_utc = utc_now("%Y-%m-%dT%H:%M:%SZ");
  outcome.configuration = {quoted_job_command(options.job.command)};
  const Thresholds& thresholds = *options.job.thresholds;

  // [1] The job profiled as written, and its diagnosis.
  progress << "[1] profile the job as written" << std::endl;
  JobOptions profile = options.job;
  profile.results_dir = outcome.out_dir;
  profile.output_file = (fs::path(outcome.out_dir) / "profile-output.log").string();
  profile.timeout_s = options.run_timeout_s;  // --timeout-s: each run of the job, this one too
  const JobOutcome profiled = run_job(profile, progress);
  nlohmann::json diagnosis_json = nullptr;
  if (!profiled.measured) {
    progress << "trainlab: " << profiled.line << " (its output: " << profile.output_file << ")" << std::endl;
    outcome.diagnosis_headline = "the job measured no step: " + profiled.line;
    write_doctor_outcome(outcome, options.repeat, diagnosis_json);
    return outcome;
  }
  DiagnoseOptions diagnose_options;
  diagnose_options.thresholds = &thresholds;
  const DiagnoseOutcome diagnosis = diagnose_run(profiled.record, profiled.run_dir, diagnose_options);
  const Diagnosis& d = diagnosis.diagnoses.front();
  outcome.diagnosis_headline = d.verdict.headline;
  outcome.diagnosis_report = (fs::path(profiled.run_dir) / "report.html").string();
  diagnosis_json = {{"primary", to_string(d.verdict.primary)}, {"headline", d.verdict.headline}};
  progress << "    " << d.verdict.headline << std::endl;
  const VariantRecord& as_written = profiled.record.variants.front();
  const std::optional<JobTrainingLoader> own = training_loader_of(as_written);
  const double wait_pct = data_wait_pct_of(as_written);
  for (const Finding& f : d.findings) {
    if (f.suspect != Suspect::kDataPipeline) outcome.unaddressed_findings.push_back(f.title);
  }
  if (!own || (d.verdict.primary != Suspect::kDataPipeline &&
               wait_pct < thresholds.value(threshold::input_bound::moderate_pct))) {
    outcome.unaddressed_findings.insert(
        outcome.unaddressed_findings.begin(),
        !own ? "the job builds no DataLoader: no loader setting to try"
             : "the data pipeline is not the bound (data wait " + format_text("%.1f %%", wait_pct) +
                   " of the step): the doctor tries no loader change");
    write_doctor_outcome(outcome, options.repeat, diagnosis_json);
    return outcome;
  }

  // [2..] Each loader change as an A/B on the job: the script's own settings (A) against the change (B).
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> changes;
  // More workers, kept alive between epochs (DataLoader's default restarts them at every epoch, and
  // on the image test job that restart took most of what the workers bought: sweep, 5 rounds,
  // workers=2 +56 % over workers=2 restarting); then more batches in flight; then the decoded
  // cache's bound; then the workers alone.
  const int more = std::max(own->workers + 1, cores);
  const std::string workers = std::to_string(more);
  changes.push_back({"more_workers", {{"workers", workers}, {"persistent-workers", "on"}}});
  if (own->prefetch < 4) {
    changes.push_back({"workers_prefetch", {{"workers", workers}, {"prefetch", "4"}, {"persistent-workers", "on"}}});
  }
  // Then the what-if of a decoded cache (the recorder serves samples of the Dataset read before the
  // loader was built): what the steps would gain if the Dataset's own work cost nothing. A bound,
  // never a setting to make: it freezes the cached samples' random transforms.
  changes.push_back({kDecodedCacheChange, {{"cache", "1"}}});
  if (!own->persistent_workers) changes.push_back({"more_workers_restarting", {{"workers", workers}}});
  if (static_cast<int>(changes.size()) > max_changes) changes.resize(static_cast<size_t>(max_changes));
  const VariantSpec base = job_base_spec(options, own);
  int step = 2;
  for (const auto& [name, settings] : changes) {
    std::string described;
    for (const auto& [k, v] : settings) described += (described.empty() ? "" : ",") + k + "=" + v;
    const bool bound_only = name == kDecodedCacheChange;
    DoctorTrial trial{name, described, bound_only ? "input_bound (a bound: the cache freezes random transforms)" : "input_bound"};
    if (interrupted()) {
      trial.verdict = "not run: the doctor was interrupted";
      outcome.trials.push_back(trial);
      continue;
    }
    progress << "[" << step++ << "] A/B on the job: as written against "
             << (bound_only ? std::to_string(kJobDecodedCacheSamples) + " of its Dataset's samples" +
                                  " read once and served again (cache=1, a bound on what caching could buy)"
                            : described)
             << std::endl;
    JobCompareOptions ab_options = options;
    ab_options.job.results_dir = outcome.out_dir;
    LabOptions lab = job_lab_options(ab_options, own, base);
    lab.repeat = std::max(2, options.repeat);
    lab.extra_rounds = std::max(0, max_rounds - lab.repeat);
    lab.rounds_budget_s = kExtraRoundsBudgetS;
    const LabOutcome ab = run_ab(lab, settings, progress);
    trial.run_dir = ab.run_dir;
    read_ab_samples_per_s(ab.record, trial);
    progress << "    " << described << ": " << format_text("%+.1f %%", trial.gain_pct) << " ["
             << format_text("%+.1f", trial.low_pct) << ", " << format_text("%+.1f", trial.high_pct)
             << "]: " << trial.verdict << std::endl;
    if (!bound_only && trial.verdict == "improved" && trial.gain_pct > outcome.best_gain_pct) {
      outcome.best_gain_pct = trial.gain_pct;
      outcome.best_settings = described;
    }
    outcome.trials.push_back(trial);
  }

  // The best measured configuration profiled again: what remains.
  if (!outcome.best_settings.empty() && !interrupted()) {
    progress << "[" << step << "] profile the job with " << outcome.best_settings << std::endl;
    VariantSpec best = base;
    for (const DoctorTrial& t : outcome.trials) {
      if (t.settings != outcome.best_settings) continue;
      for (const auto& [name, settings] : changes) {
        if (name == t.change) {
          for (const auto& [k, v] : settings) apply_setting(best, k, v);
        }
      }
    }
    JobOptions after = options.job;
    after.results_dir = outcome.out_dir;
    after.output_file = (fs::path(outcome.out_dir) / "after-output.log").string();
    after.timeout_s = options.run_timeout_s;
    after.environment = job_overrides_for(best, &*own, options.compile_mode, outcome.out_dir);
    const JobOutcome again = run_job(after, progress);
    if (again.measured) {
      const DiagnoseOutcome diagnosed = diagnose_run(again.record, again.run_dir, diagnose_options);
      const Diagnosis& a = diagnosed.diagnoses.front();
      outcome.after_headline = a.verdict.headline;
      outcome.after_report = (fs::path(again.run_dir) / "report.html").string();
      for (const Finding& f : a.findings) outcome.after_findings.push_back(std::string(to_string(f.severity)) + ": " + f.title);
    }
  }
  write_doctor_outcome(outcome, options.repeat, diagnosis_json);
  return outcome;
}

}  // namespace trainlab
