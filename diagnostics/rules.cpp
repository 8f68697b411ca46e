// The rules of DESIGN §6: one small pure function each (Summary + Thresholds -> at most one Finding),
// run in a fixed order. Every number they compare against is a key of configs/thresholds.json; a rule
// whose inputs the Summary lacks (no steps, an empty optional, an absent system metric) does not fire.
// Evidence values are the Summary's own figures, unrounded. No LibTorch.
#include "diagnostics/rules.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include "core/statistics.h"
#include "core/text.h"
#include "diagnostics/series.h"
#include "diagnostics/text_format.h"

namespace trainlab {
namespace {

int64_t step_count(const Summary& s) {
  return s.step.count > 0 ? s.step.count : static_cast<int64_t>(s.step_ms.size());
}

// The shares are meaningful only when steps were measured.
bool has_steps(const Summary& s) { return step_count(s) > 0; }

// A system metric with at least one sample, or nullptr.
const Distribution* metric(const Summary& s, const std::string& name) {
  auto it = s.system.find(name);
  return it != s.system.end() && it->second.count > 0 ? &it->second : nullptr;
}

// Device utilisation samples: gpu0.util_pct, else the first gpu<N>.util_pct (a rank on another GPU).
const Distribution* gpu_util(const Summary& s, std::string* name) {
  if (const Distribution* d = metric(s, "gpu0.util_pct")) {
    *name = "gpu0.util_pct";
    return d;
  }
  for (const auto& [key, d] : s.system) {
    if (d.count > 0 && key.rfind("gpu", 0) == 0 && key.size() > 12 && ends_with(key, ".util_pct")) {
      *name = key;
      return &d;
    }
  }
  return nullptr;
}

// Samples above a p95 that is above a threshold: at least 5 % of them (at least one).
int64_t samples_above_p95(int64_t count) { return std::max<int64_t>(1, count / 20); }
// Samples below a p95 that is below a threshold: at least 95 % of them.
int64_t samples_below_p95(int64_t count) { return (count * 95 + 99) / 100; }

// The step number of the i-th measured step (its index when the numbers are missing).
int64_t step_number(const Summary& s, size_t i) {
  return s.step_numbers.size() == s.step_ms.size() ? s.step_numbers[i] : static_cast<int64_t>(i);
}

std::string list_steps(const Summary& s, const std::vector<size_t>& indices, size_t at_most = 10) {
  std::string out;
  for (size_t k = 0; k < indices.size() && k < at_most; ++k) {
    out += (k ? ", " : "") + std::to_string(step_number(s, indices[k]));
  }
  if (indices.size() > at_most) out += ", ...";
  return out;
}

double sum(const std::vector<double>& values) {
  double total = 0;
  for (double v : values) total += v;
  return total;
}

// Actions in the user's language: PyTorch's own knobs for an imported trace (the user runs PyTorch),
// trainlab's flags for a trainlab run (the user can rerun it with them).
std::string in_users_words(const Summary& s, const std::string& trainlab_words, const std::string& pytorch_words) {
  return s.source == "kineto" ? pytorch_words : trainlab_words;
}

// --- What the trace or the run record shows already in place (diagnostics/in_place.h): an action
// never proposes it again, and says what it read.

// A torch.compile'd model (the trace's compiled regions) or a --compiled on run.
bool compiled_in_place(const Summary& s) { return s.compiled_regions_per_step || !s.compiled_by.empty(); }

// "the trace enters 2 Torch-Compiled Region spans per step" / "the run is compiled (--compiled on, inductor)".
std::string compiled_evidence(const Summary& s) {
  if (s.compiled_regions_per_step) {
    return format_text("the trace enters %.3g %s span%s per step", *s.compiled_regions_per_step,
                       s.compiled_region_name.c_str(), *s.compiled_regions_per_step == 1 ? "" : "s");
  }
  return "the run is compiled (--compiled on, " + s.compiled_by + ")";
}

// More than one compiled region per step: graph breaks (or submodules compiled one by one).
bool graph_breaks(const Summary& s) { return s.compiled_regions_per_step && *s.compiled_regions_per_step > 1.5; }

// What is left once the model is compiled: fewer graph breaks, CUDA graphs on GPU (unless the trace
// already launches graphs), more of the step inside the compiled region.
std::string after_compiling(const Summary& s, const Thresholds& t) {
  std::string out;
  if (s.compiled_share_pct && *s.compiled_share_pct < t.value(threshold::dispatch_overhead::compiled_share_pct)) {
    out = "Part of the model is already compiled (" + compiled_evidence(s) +
          format_text("), but only %.1f %% of %s runs in compiled code: compile what still runs eagerly (the "
                      "modules whose ops fall outside the compiled regions, or the whole step), not the same part "
                      "again. ",
                      *s.compiled_share_pct, s.compiled_share_of.c_str());
  } else {
    out = "The model is already compiled (" + compiled_evidence(s) +
          (s.compiled_share_pct ? format_text(", %.1f %% of %s in compiled code", *s.compiled_share_pct,
                                              s.compiled_share_of.c_str())
                                : std::string()) +
          "), so torch.compile is not the change. ";
  }
  if (graph_breaks(s)) {
    out += format_text("%.3g compiled regions per step are graph breaks (or submodules compiled one by one): each "
                       "boundary returns to eager Python and splits fusion; find them with "
                       "torch._dynamo.explain(model)(inputs) or TORCH_LOGS=graph_breaks and remove them (fullgraph=True "
                       "reports each). ",
                       *s.compiled_regions_per_step);
  }
  if (s.on_gpu && s.cuda_graph_launches_per_step) {
    out += format_text("CUDA graphs are already on (%.3g cudaGraphLaunch per step): ", *s.cuda_graph_launches_per_step) +
           "move the host work between graphs (loss, optimizer step, logging) into the compiled step.";
  } else if (s.on_gpu) {
    out += "Add CUDA graphs: torch.compile(model, mode=\"reduce-overhead\") replays the step's kernels without "
           "per-kernel launch cost (keep shapes static).";
  } else {
    out += "Bring more of the step inside the compiled region (the loss, the optimizer step: torch.compile the "
           "whole train step) so fewer ops are dispatched one by one.";
  }
  return out;
}

// DDP-style overlap already on: collectives launched while backward runs (the trace), most of the
// collective time hidden under compute (a device timeline), or a run with --comm-mode overlap.
bool overlap_in_place(const Summary& s, const Thresholds& t) {
  if (s.comm_mode == "overlap") return true;
  if (s.comm_in_backward_pct && *s.comm_in_backward_pct >= t.value(threshold::exposed_communication::in_backward_pct)) return true;
  return s.comm_total_pct && *s.comm_total_pct > 0 &&
         s.shares.communication_pct / *s.comm_total_pct * 100.0 < t.value(threshold::exposed_communication::unhidden_share_pct);
}

std::string overlap_evidence(const Summary& s, const Thresholds& t) {
  if (s.comm_mode == "overlap") {
    return "the run already overlaps (--comm-mode overlap" +
           (s.bucket_mb ? format_text(", --bucket-mb %g", *s.bucket_mb) : std::string()) + ")";
  }
  if (s.comm_in_backward_pct && *s.comm_in_backward_pct >= t.value(threshold::exposed_communication::in_backward_pct)) {
    return format_text("collectives already overlap with backward: %.0f %% of the %.3g collective calls per step are "
                       "launched while backward runs (inside autograd::engine::evaluate_function, from DDP's gradient "
                       "hooks)",
                       *s.comm_in_backward_pct, s.collective_calls_per_step.value_or(0));
  }
  return format_text("collectives already overlap with backward: %.1f %% of the step of the %.1f %% in collectives "
                     "is hidden under compute",
                     std::max(0.0, s.comm_total_pct.value_or(0) - s.shares.communication_pct), s.comm_total_pct.value_or(0));
}

// Collective calls per step: the loop's launches from the trace, else the trace's collective args.
std::optional<double> collective_calls(const Summary& s) {
  if (s.collective_calls_per_step) return s.collective_calls_per_step;
  if (s.collectives.empty()) return std::nullopt;
  double calls = 0;
  for (const CollectiveCalls& c : s.collectives) calls += c.calls_per_step;
  return calls;
}

// DataLoader worker processes already on: the record's count, or the trace's iterator.
bool workers_in_place(const Summary& s) {
  return (s.loader_workers && *s.loader_workers > 0) || s.loader_iterator == "_MultiProcessingDataLoaderIter";
}

std::string workers_evidence(const Summary& s) {
  if (s.loader_workers && *s.loader_workers > 0) {
    return format_text("the loader already has %lld worker%s", static_cast<long long>(*s.loader_workers),
                       *s.loader_workers == 1 ? "" : "s");
  }
  return "the trace's DataLoader __next__ is " + s.loader_iterator + ": worker processes already build the batches";
}

bool pinned_in_place(const Summary& s) { return s.pin_memory && *s.pin_memory; }

double model_syncs_per_step(const Summary& s) {
  double total = 0;
  for (const ModelSync& m : s.model_syncs) total += m.per_step;
  return total;
}

// Host syncs mostly inside the model's own modules (a trace with module scopes): they are the model's
// code, not the user's loop. "aten::item in Gate (8 per step), aten::item in Embed (1 per step)".
bool syncs_in_model(const Summary& s) {
  return s.host_syncs_per_step && *s.host_syncs_per_step > 0 && model_syncs_per_step(s) * 2 >= *s.host_syncs_per_step;
}

std::string model_sync_sites(const Summary& s) {
  std::string out;
  for (size_t i = 0; i < s.model_syncs.size() && i < 3; ++i) {
    out += (i ? ", " : "") + s.model_syncs[i].op + " in " + s.model_syncs[i].module +
           format_text(".forward (%.3g per step)", s.model_syncs[i].per_step);
  }
  if (s.model_syncs.size() > 3) out += ", ...";
  return out;
}

std::string model_sync_advice(const Summary& s) {
  const ModelSync& top = s.model_syncs.front();
  return "These synchronisations are in the model's own code, not in the training loop: " + model_sync_sites(s) +
         ". Look in " + top.module + ".forward for what reads a tensor on the host (" + top.op +
         " is .item(), a Python branch on a tensor such as `if mask.any():`, .tolist(), .nonzero() or boolean "
         "indexing): keep the value on the device (torch.where instead of the branch), use the model's option that "
         "skips the check, or compute it once outside the step.";
}

Finding make(const char* rule_id, Severity severity, Suspect suspect) {
  Finding f;
  f.rule_id = rule_id;
  f.severity = severity;
  f.suspect = suspect;
  return f;
}

// 1. Data wait share of the step, at the TensorFlow input-pipeline analyzer's two levels.
std::optional<Finding> input_bound(const Summary& s, const Thresholds& t) {
  if (!has_steps(s)) return std::nullopt;
  const double share = s.shares.data_wait_pct;
  const double moderate = t.value(threshold::input_bound::moderate_pct);
  const double high = t.value(threshold::input_bound::high_pct);
  if (share < moderate) return std::nullopt;
  Finding f =
      make("input_bound", share >= high ? Severity::kHigh : Severity::kModerate, Suspect::kDataPipeline);
  f.evidence.push_back({"data_wait_pct", share, share >= high ? high : moderate, "pct"});
  f.title =
      share < 99.95
          ? format_text("data wait is %.1f %% of the step: up to %.1fx if removed", share,
                        100.0 / (100.0 - share))
          : format_text("data wait is %.1f %% of the step: the loop does little but wait for batches", share);

  const bool workers_saturated =
      s.loader_workers && s.logical_cores > 0 && *s.loader_workers >= s.logical_cores;
  const double h2d_min = t.value(threshold::loader_settings::h2d_pct);
  const bool pin_helps = s.on_gpu && s.pin_memory && !*s.pin_memory && s.shares.host_to_device_pct >= h2d_min;
  if (s.loader_workers && s.logical_cores > 0) {
    f.evidence.push_back({"loader_workers", static_cast<double>(*s.loader_workers),
                          static_cast<double>(s.logical_cores), "count"});
  }
  if (workers_saturated && pin_helps) {
    f.evidence.push_back({"host_to_device_pct", s.shares.host_to_device_pct, h2d_min, "pct"});
    f.change = "pin_memory";
    f.recommendation = in_users_words(
        s,
        "The loader already has a worker per core: pin the staging buffers (--pin-memory on) so batch "
        "copies to the device are asynchronous, and cache decoded samples (-k cache=1) to cut per-sample "
        "CPU work.",
        "The DataLoader already has a worker per core: set DataLoader(pin_memory=True) and copy with "
        ".to(device, non_blocking=True), and cache decoded samples to cut per-sample CPU work.");
  } else if (workers_saturated) {
    f.change = "more_prefetch";
    f.recommendation = in_users_words(
        s,
        "The loader already has a worker per core: prefetch more batches (--prefetch) to absorb slow "
        "ones, and cache decoded samples (-k cache=1) or simplify augmentation to cut per-sample CPU work.",
        "The DataLoader already has a worker per core: raise DataLoader(prefetch_factor=) to absorb slow "
        "batches, and cache decoded samples (or simplify augmentation) to cut per-sample CPU work.");
  } else if (workers_in_place(s)) {
    if (!s.loader_workers) f.evidence.push_back({"dataloader_worker_processes", 1, 1, "flag"});
    // Workers are on but too few or too slow: what is left is more of them (up to a core each),
    // deeper prefetch, and cheaper samples.
    f.change = "more_workers";
    const bool pin_left = s.on_gpu && !pinned_in_place(s);
    f.recommendation =
        "Workers are not the missing piece: " + workers_evidence(s) +
        (pinned_in_place(s) ? std::string(s.pin_memory_evidence.empty() ? "; pinned memory is on"
                                                                          : "; pinned memory is on (" + s.pin_memory_evidence + ")")
                            : std::string()) +
        ". What is left: " +
        in_users_words(
            s,
            "more workers up to one per core (--workers), a deeper prefetch (--prefetch)" +
                std::string(pin_left ? ", pinned staging buffers (--pin-memory on)" : "") +
                ", cheaper per-sample work (simpler augmentation), and decoding once and caching the decoded "
                "samples (-k cache=1).",
            "more workers up to one per core (num_workers), a deeper prefetch (prefetch_factor=, "
            "persistent_workers=True)" +
                std::string(pin_left ? ", pin_memory=True" : "") +
                ", cheaper transforms (or transforms batched on the device), and decoding once and caching the "
                "decoded samples.");
  } else {
    f.change = "more_workers";
    const bool pin_left = s.on_gpu && !pinned_in_place(s);
    f.recommendation = in_users_words(
        s,
        "Build batches on more loader workers (--workers, --prefetch" +
            std::string(pin_left ? ", --pin-memory on" : "") +
            "); cache decoded samples when decoding dominates (-k cache=1); `trainlab sweep` finds the "
            "setting.",
        "Build batches in DataLoader worker processes: DataLoader(num_workers=N, prefetch_factor=2, "
        "persistent_workers=True" +
            std::string(pin_left ? ", pin_memory=True" : "") +
            "); cache decoded samples when decoding dominates.");
  }
  f.times_fired = f.data_points = step_count(s);  // only the aggregate share is known: it holds for the run
  f.saving_pct = share;
  return f;
}

// 2. The device idles: sampled GPU utilisation p95 (or the trace's kernel busy share) on GPU, the
// compute share on CPU. The suspect is the largest non-compute share when it is notable.
std::optional<Finding> low_device_utilisation(const Summary& s, const Thresholds& t) {
  Finding f = make("low_device_utilisation", Severity::kModerate, Suspect::kNone);
  std::string what;
  double threshold = 0;
  if (s.on_gpu) {
    threshold = t.value(threshold::low_device_utilisation::util_p95_pct);
    std::string name;
    if (const Distribution* util = gpu_util(s, &name)) {
      if (util->p95 >= threshold) return std::nullopt;
      f.evidence.push_back({name + ".p95", util->p95, threshold, "pct"});
      f.data_points = util->count;
      f.times_fired = samples_below_p95(util->count);
      what = format_text("device utilisation p95 is %.1f %% (under %.0f %%)", util->p95, threshold);
      const double cv_max = t.value(threshold::low_device_utilisation::util_cv_pct);
      if (util->mean > 0 && util->stddev / util->mean * 100.0 > cv_max) {
        const double cv = util->stddev / util->mean * 100.0;
        f.evidence.push_back({name + ".cv", cv, cv_max, "pct"});
        what += format_text(", fluctuating (stddev %.0f %% of the mean)", cv);
      }
    } else if (s.device_busy_pct && has_steps(s)) {  // imported traces: kernel time union / step time
      if (*s.device_busy_pct >= threshold) return std::nullopt;
      f.evidence.push_back({"device_busy_pct", *s.device_busy_pct, threshold, "pct"});
      f.times_fired = f.data_points = step_count(s);
      what = format_text("kernels keep the device busy %.1f %% of the step (under %.0f %%)",
                         *s.device_busy_pct, threshold);
    } else {
      return std::nullopt;
    }
  } else {
    if (!s.device_busy_pct || !has_steps(s)) return std::nullopt;
    threshold = t.value(threshold::low_device_utilisation::cpu_busy_pct);
    if (*s.device_busy_pct >= threshold) return std::nullopt;
    f.evidence.push_back({"device_busy_pct", *s.device_busy_pct, threshold, "pct"});
    f.times_fired = f.data_points = step_count(s);
    what = format_text("compute is %.1f %% of the step (under %.0f %%)", *s.device_busy_pct, threshold);
  }

  struct Candidate {
    const char* metric;
    const char* words;
    double share;
    Suspect suspect;
    const char* change;
  };
  const Candidate candidates[] = {
      {"data_wait_pct", "data wait", s.shares.data_wait_pct, Suspect::kDataPipeline, "more_workers"},
      {"communication_pct", "exposed communication", s.shares.communication_pct, Suspect::kCommunication,
       "overlap_comm"},
      {"framework_pct", "framework overhead", s.shares.framework_pct, Suspect::kFrameworkOverhead,
       "compiled"},
  };
  const Candidate* largest = &candidates[0];
  for (const Candidate& c : candidates) {
    if (c.share > largest->share) largest = &c;
  }
  const double suspect_min = t.value(threshold::low_device_utilisation::suspect_min_pct);
  if (has_steps(s) && largest->share >= suspect_min) {
    // A symptom: the saving and the change belong to the suspect's own finding (not ranked twice).
    f.suspect = largest->suspect;
    f.evidence.push_back({largest->metric, largest->share, suspect_min, "pct"});
    f.title = what + format_text("; the largest non-compute share is %s, %.1f %% of the step", largest->words,
                                 largest->share);
    f.recommendation = "The device waits on " + std::string(largest->words) +
                       "; see that suspect's finding for what to change.";
  } else {
    f.severity = Severity::kInfo;
    f.title = what + "; no data, communication or framework share explains it";
    f.recommendation =
        "Idle time is not in a measured phase: look at the untraced host work between steps "
        "(logging, callbacks) and at the utilisation timeline.";
  }
  return f;
}

// 3. CPU saturated while the GPU idles (GPU runs only: on CPU the CPU is the device).
std::optional<Finding> cpu_bottleneck(const Summary& s, const Thresholds& t) {
  if (!s.on_gpu) return std::nullopt;
  const Distribution* cpu = metric(s, "cpu.total_pct");
  std::string gpu_name;
  const Distribution* gpu = gpu_util(s, &gpu_name);
  if (!cpu || !gpu) return std::nullopt;
  const double cpu_min = t.value(threshold::cpu_bottleneck::cpu_p50_pct);
  const double gpu_max = t.value(threshold::cpu_bottleneck::gpu_util_p50_pct);
  if (!(cpu->p50 > cpu_min && gpu->p50 < gpu_max)) return std::nullopt;
  const bool data = s.shares.data_wait_pct >= s.shares.framework_pct;
  Finding f =
      make("cpu_bottleneck", Severity::kHigh, data ? Suspect::kDataPipeline : Suspect::kFrameworkOverhead);
  f.evidence.push_back({"cpu.total_pct.p50", cpu->p50, cpu_min, "pct"});
  f.evidence.push_back({gpu_name + ".p50", gpu->p50, gpu_max, "pct"});
  f.title = format_text("the CPU is saturated (median %.1f %%) while the GPU idles (median %.1f %%)",
                        cpu->p50, gpu->p50);
  if (data) {
    f.recommendation =
        "The host cannot prepare batches fast enough and has no cores to spare: cache decoded "
        "samples, simplify or move augmentation to the GPU; more workers will not help.";
    f.saving_pct = s.shares.data_wait_pct;
  } else {
    if (compiled_in_place(s)) {
      f.recommendation = "The host spends the step dispatching work. " + after_compiling(s, t);
    } else {
      f.change = "compiled";
      f.recommendation =
          "The host spends the step dispatching work: compile the step (fused graph, CUDA graph) to "
          "launch fewer, larger kernels.";
    }
    f.saving_pct = s.shares.framework_pct;
  }
  f.times_fired = (cpu->count + 1) / 2;  // a median above the threshold: at least half of the samples
  f.data_points = cpu->count;
  return f;
}

// 4. The disk holds up the loader: IO wait p95 high while the loop waits on data.
std::optional<Finding> io_bottleneck(const Summary& s, const Thresholds& t) {
  const Distribution* iowait = metric(s, "cpu.iowait_pct");
  if (!iowait || !has_steps(s)) return std::nullopt;
  const double iowait_max = t.value(threshold::io_bottleneck::iowait_p95_pct);
  const double moderate = t.value(threshold::input_bound::moderate_pct);
  const double high = t.value(threshold::input_bound::high_pct);
  const double share = s.shares.data_wait_pct;
  if (!(iowait->p95 > iowait_max && share >= moderate)) return std::nullopt;
  Finding f =
      make("io_bottleneck", share >= high ? Severity::kHigh : Severity::kModerate, Suspect::kDataPipeline);
  f.evidence.push_back({"cpu.iowait_pct.p95", iowait->p95, iowait_max, "pct"});
  f.evidence.push_back({"data_wait_pct", share, share >= high ? high : moderate, "pct"});
  f.title =
      format_text("the loader waits on storage: IO wait p95 %.1f %% while data wait is %.1f %% of the step",
                  iowait->p95, share);
  f.recommendation =
      "Reads, not decoding, hold the loader up: keep more reads in flight (more workers, "
      "prefetch), cache the data set in memory or on local fast storage, or use fewer, larger files.";
  f.change = "more_workers";
  f.times_fired = samples_above_p95(iowait->count);
  f.data_points = iowait->count;
  f.saving_pct = share;
  return f;
}

// 5. Loader settings that are wrong on their face: no workers while the loop waits on data, more
// workers than cores, unpinned copies on a GPU that spend a notable share on host-to-device copies.
std::optional<Finding> loader_settings(const Summary& s, const Thresholds& t) {
  const double moderate = t.value(threshold::input_bound::moderate_pct);
  const double high = t.value(threshold::input_bound::high_pct);
  const double h2d_min = t.value(threshold::loader_settings::h2d_pct);
  const double wait = s.shares.data_wait_pct;
  Finding f = make("loader_settings", Severity::kInfo, Suspect::kDataPipeline);
  std::vector<std::string> parts;
  auto raise = [&f](Severity severity) { f.severity = std::max(f.severity, severity); };
  auto set_change = [&f](const char* change) {
    if (f.change.empty()) f.change = change;
  };

  if (s.loader_workers && *s.loader_workers == 0 && has_steps(s) && wait >= moderate) {
    raise(wait >= high ? Severity::kHigh : Severity::kModerate);
    f.evidence.push_back({"loader_workers", 0, 1, "count"});
    f.evidence.push_back({"data_wait_pct", wait, wait >= high ? high : moderate, "pct"});
    parts.push_back(format_text(
        "batches are built on the training thread (0 workers) and data wait is %.1f %% of the step", wait));
    set_change("more_workers");
    f.recommendation += in_users_words(s, "Use loader workers (--workers N) so batches are built while the step computes. ",
                                       "Use DataLoader(num_workers=N) so batches are built while the step computes. ");
    f.saving_pct = std::max(f.saving_pct, wait);
  }
  if (s.loader_workers && s.logical_cores > 0 && *s.loader_workers > s.logical_cores) {
    raise(has_steps(s) && wait >= moderate ? Severity::kModerate : Severity::kInfo);
    f.evidence.push_back({"loader_workers", static_cast<double>(*s.loader_workers),
                          static_cast<double>(s.logical_cores), "count"});
    parts.push_back(format_text("%lld loader workers oversubscribe %d logical cores",
                                static_cast<long long>(*s.loader_workers), s.logical_cores));
    f.recommendation += in_users_words(
        s, "Use at most one worker per logical core (--workers; fewer when the training step needs cores too). ",
        "Use at most one DataLoader worker per logical core (num_workers; fewer when the training step needs "
        "cores too). ");
  }
  if (s.on_gpu && s.pin_memory && !*s.pin_memory && has_steps(s) && s.shares.host_to_device_pct >= h2d_min) {
    raise(Severity::kModerate);
    f.evidence.push_back({"host_to_device_pct", s.shares.host_to_device_pct, h2d_min, "pct"});
    parts.push_back(
        format_text("batches are copied from pageable memory and the copies take %.1f %% of the step",
                    s.shares.host_to_device_pct));
    set_change("pin_memory");
    f.recommendation += in_users_words(s, "Pin the loader's staging buffers (--pin-memory on) so copies run asynchronously. ",
                                       "Set DataLoader(pin_memory=True) and .to(device, non_blocking=True) so copies "
                                       "run asynchronously. ");
    f.saving_pct = std::max(f.saving_pct, s.shares.host_to_device_pct);
  }
  if (parts.empty()) return std::nullopt;
  for (size_t i = 0; i < parts.size(); ++i) f.title += (i ? "; " : "") + parts[i];
  if (!f.recommendation.empty()) f.recommendation.pop_back();
  f.times_fired = f.data_points = std::max<int64_t>(1, step_count(s));  // settings hold for every step
  return f;
}

// 6. Small batches: per-step fixed costs (framework dispatch, other host work per step) take a large
// share of the step, or on a GPU the device idles without data or communication to blame, and the
// batch is below the threshold. Formulation: those costs are paid once per step whatever the batch
// holds, so doubling the batch halves their share per sample: saving_pct = fixed share / 2 (on the
// idle-GPU path, half the idle share).
std::optional<Finding> batch_too_small(const Summary& s, const Thresholds& t) {
  if (!has_steps(s) || s.batch_size <= 0) return std::nullopt;
  const double below = t.value(threshold::batch_too_small::batch_size_below);
  if (static_cast<double>(s.batch_size) >= below) return std::nullopt;
  const double fixed_min = t.value(threshold::batch_too_small::fixed_overhead_pct);
  const double fixed = s.shares.framework_pct + s.shares.other_pct;
  const double busy_min = t.value(threshold::low_device_utilisation::util_p95_pct);
  const bool overhead = fixed >= fixed_min;
  const bool gpu_idle = s.on_gpu && s.device_busy_pct && *s.device_busy_pct < busy_min &&
                        s.shares.data_wait_pct < t.value(threshold::input_bound::moderate_pct) &&
                        s.shares.communication_pct <= t.value(threshold::exposed_communication::pct);
  if (!overhead && !gpu_idle) return std::nullopt;
  Finding f = make("batch_too_small", Severity::kModerate, Suspect::kFrameworkOverhead);
  f.evidence.push_back({"batch_size", static_cast<double>(s.batch_size), below, "samples"});
  if (overhead) {
    f.evidence.push_back({"fixed_overhead_pct", fixed, fixed_min, "pct"});
    f.title = format_text(
        "batch of %lld with per-step overhead at %.1f %% of the step: a larger batch amortises it",
        static_cast<long long>(s.batch_size), fixed);
    f.saving_pct = fixed / 2.0;
  } else {
    f.evidence.push_back({"device_busy_pct", *s.device_busy_pct, busy_min, "pct"});
    f.title = format_text(
        "batch of %lld keeps the device busy only %.1f %% of the step: a larger batch gives it more work",
        static_cast<long long>(s.batch_size), *s.device_busy_pct);
    f.saving_pct = (100.0 - *s.device_busy_pct) / 2.0;
  }
  f.recommendation = in_users_words(
      s,
      "Use a larger batch (--batch; scale the learning rate with it), or accumulate several micro-batches "
      "per optimizer step, so per-step costs are spread over more samples.",
      "Use a larger DataLoader(batch_size=) (scale the learning rate with it), or accumulate several "
      "micro-batches per optimizer.step(), so per-step costs are spread over more samples.");
  f.change = "larger_batch";
  f.times_fired = f.data_points = step_count(s);
  return f;
}

// 7. Memory that keeps rising: over the second half of the run, the moving average (window max(3, n/10)
// steps), last window vs first. The first half is left out: allocator caches, loader buffers and the
// profiler's window grow memory early and then plateau; a leak keeps growing to the end.
std::optional<Finding> memory_growth(const Summary& s, const Thresholds& t) {
  const std::vector<double> half(s.memory_mib.begin() + static_cast<std::ptrdiff_t>(s.memory_mib.size() / 2),
                                 s.memory_mib.end());
  const std::optional<double> growth =
      s.memory_growth_pct ? s.memory_growth_pct : series::moving_average_growth_pct(half);
  if (!growth) return std::nullopt;
  const double growth_max = t.value(threshold::memory_growth::pct);
  if (!(*growth > growth_max)) return std::nullopt;
  Finding f = make("memory_growth", Severity::kModerate, Suspect::kNone);
  f.evidence.push_back({"memory_growth_pct", *growth, growth_max, "pct"});
  const size_t n = half.size();
  const size_t w = series::growth_window(n);
  if (!s.memory_growth_pct && n >= 2 * w) {
    const double first =
        series::mean(std::vector<double>(half.begin(), half.begin() + static_cast<std::ptrdiff_t>(w)));
    const double last =
        series::mean(std::vector<double>(half.end() - static_cast<std::ptrdiff_t>(w), half.end()));
    f.title = format_text(
        "memory still grows %.1f %% over the second half of the run (moving average of %zu steps: %.0f MB -> "
        "%.0f MB)",
        *growth, w, first, last);
    const double limit = first * (1.0 + growth_max / 100.0);
    for (double mb : half) f.times_fired += mb > limit ? 1 : 0;
    f.data_points = static_cast<int64_t>(n);
  } else {
    f.title = format_text("memory grows %.1f %% (moving average, first window to last)", *growth);
  }
  f.recommendation =
      "Look for tensors kept across steps (a loss summed with its graph, growing lists or caches, "
      "hooks holding activations); a rise that levels off is the allocator's cache warming up.";
  return f;
}

// 8. Single slow steps beyond mean + k sigma.
std::optional<Finding> step_outliers(const Summary& s, const Thresholds& t) {
  const double sigmas = t.value(threshold::step_outliers::sigmas);
  const std::vector<size_t> outliers = series::outliers_above(s.step_ms, sigmas);
  if (outliers.empty()) return std::nullopt;
  const double median = series::median(s.step_ms);
  const double limit = series::mean(s.step_ms) + sigmas * stats::population_stddev(s.step_ms);
  double excess = 0, slowest = 0;
  for (size_t i : outliers) {
    excess += s.step_ms[i] - median;
    slowest = std::max(slowest, s.step_ms[i]);
  }
  const double total = sum(s.step_ms);
  const double saving = total > 0 ? excess / total * 100.0 : 0;
  Finding f =
      make("step_outliers",
           saving >= t.value(threshold::slow_steps::moderate_excess_pct) ? Severity::kModerate : Severity::kInfo,
           Suspect::kNone);
  f.evidence.push_back({"outlier_steps", static_cast<double>(outliers.size()), 0, "count"});
  f.evidence.push_back({"max_step_ms", slowest, limit, "ms"});
  f.title = format_text("%zu step%s beyond mean + %.0f sigma (%.1f ms): step%s ", outliers.size(),
                        outliers.size() == 1 ? "" : "s", sigmas, limit, outliers.size() == 1 ? "" : "s") +
            list_steps(s, outliers) +
            format_text("; %.1f ms above the median step on average", excess / outliers.size());
  f.recommendation =
      "Look at what those steps do differently (a checkpoint, evaluation, garbage collection, a "
      "slow batch, another process); run it off the training thread or less often.";
  f.times_fired = static_cast<int64_t>(outliers.size());
  f.data_points = static_cast<int64_t>(s.step_ms.size());
  f.saving_pct = saving;
  return f;
}

// 9. Slow steps that recur with a fixed period (a callback every N steps). A step is slow above
// median x (1 + slow_over_median_pct / 100); consecutive slow steps count as one event (a callback
// that spills into the next step); the events' step numbers must have one period (+-jitter) for
// period_share_pct of their gaps. Where noise hides some occurrences (a loaded machine), folding the
// step times onto each period finds the phase whose steps all stand above the others
// (series::fold_period, at least min_folded_steps of them).
std::optional<Finding> periodic_slow_steps(const Summary& s, const Thresholds& t) {
  if (s.step_ms.empty()) return std::nullopt;
  const double median = series::median(s.step_ms);
  const double slow_pct = t.value(threshold::periodic_slow_steps::slow_over_median_pct);
  const double limit = median * (1.0 + slow_pct / 100.0);
  std::vector<size_t> slow;
  std::vector<int64_t> events;
  for (size_t i = 0; i < s.step_ms.size(); ++i) {
    if (!(s.step_ms[i] > limit)) continue;
    if (slow.empty() || slow.back() + 1 != i) events.push_back(step_number(s, i));
    slow.push_back(i);
  }
  const double min_events = t.value(threshold::periodic_slow_steps::min_slow_steps);
  const double share_min = t.value(threshold::periodic_slow_steps::period_share_pct);
  const int64_t min_period = static_cast<int64_t>(t.value(threshold::periodic_slow_steps::min_period_steps));
  std::optional<series::Period> period;
  if (static_cast<double>(events.size()) >= min_events) {
    period = series::find_period(events, static_cast<int64_t>(t.value(threshold::periodic_slow_steps::jitter_steps)),
                                 min_period, share_min / 100.0);
  }
  int64_t period_steps = 0;
  double period_share = 0, baseline_ms = median;
  if (period) {
    period_steps = period->period_steps;
    period_share = period->share();
  } else {
    const auto folded = series::fold_period(
        s.step_ms, min_period, static_cast<size_t>(t.value(threshold::periodic_slow_steps::min_folded_steps)), slow_pct);
    if (!folded) return std::nullopt;
    period_steps = folded->period;
    period_share = 1.0;  // every in-phase step is slow: that is what folding asks
    baseline_ms = folded->out_median;
    slow.clear();
    events.clear();
    for (size_t i = static_cast<size_t>(folded->phase); i < s.step_ms.size(); i += static_cast<size_t>(period_steps)) {
      slow.push_back(i);
      events.push_back(step_number(s, i));
    }
  }
  double excess = 0;
  for (size_t i : slow) excess += s.step_ms[i] - baseline_ms;
  const double total = sum(s.step_ms);
  const double saving = total > 0 ? excess / total * 100.0 : 0;
  const double per_period = excess / static_cast<double>(events.size());
  Finding f =
      make("periodic_slow_steps",
           saving >= t.value(threshold::slow_steps::moderate_excess_pct) ? Severity::kModerate : Severity::kInfo,
           Suspect::kNone);
  f.evidence.push_back({"period_steps", static_cast<double>(period_steps), static_cast<double>(min_period), "steps"});
  f.evidence.push_back({"period_share_pct", period_share * 100.0, share_min, "pct"});
  f.evidence.push_back({"extra_ms_per_period", per_period, baseline_ms * slow_pct / 100.0, "ms"});
  f.evidence.push_back({"slow_steps", static_cast<double>(slow.size()), min_events, "count"});
  f.title = format_text("every %lld steps a slow step: +%.1f ms per period (steps ",
                        static_cast<long long>(period_steps), per_period) +
            list_steps(s, slow, 5) + ")";
  f.recommendation =
      "Something runs every few steps on the training thread (checkpoint, logging, evaluation, a "
      "metric read that synchronises): move it to a background thread or run it less often.";
  f.times_fired = static_cast<int64_t>(slow.size());
  f.data_points = static_cast<int64_t>(s.step_ms.size());
  f.saving_pct = saving;
  return f;
}

// 10. Collective time not hidden behind compute.
std::optional<Finding> exposed_communication(const Summary& s, const Thresholds& t) {
  if (!has_steps(s)) return std::nullopt;
  const double exposed = s.shares.communication_pct;
  const double min = t.value(threshold::exposed_communication::pct);
  const double high = t.value(threshold::exposed_communication::high_pct);
  if (!(exposed > min)) return std::nullopt;
  Finding f = make("exposed_communication", exposed >= high ? Severity::kHigh : Severity::kModerate,
                   Suspect::kCommunication);
  f.evidence.push_back({"communication_pct", exposed, exposed >= high ? high : min, "pct"});
  f.title = format_text("exposed communication is %.1f %% of the step (above %.0f %%)", exposed, min);
  const double unhidden_min = t.value(threshold::exposed_communication::unhidden_share_pct);
  if (s.comm_total_pct && *s.comm_total_pct > 0) {
    f.evidence.push_back({"exposed_share_of_comm_pct", exposed / *s.comm_total_pct * 100.0, unhidden_min, "pct"});
  }
  if (s.comm_in_backward_pct) {
    f.evidence.push_back(
        {"comm_launched_in_backward_pct", *s.comm_in_backward_pct, t.value(threshold::exposed_communication::in_backward_pct), "pct"});
  }
  const std::optional<double> calls = collective_calls(s);
  const double many_calls = t.value(threshold::exposed_communication::many_calls_per_step);
  const bool many_small = calls && *calls >= many_calls;
  if (many_small) f.evidence.push_back({"collective_calls_per_step", *calls, many_calls, "count"});
  if (overlap_in_place(s, t)) {
    // Overlap is on: what is left is how many all-reduces there are and how full they are.
    f.change = "bucket_size";
    const std::string why = "Overlap is not the missing piece: " + overlap_evidence(s, t) + ". ";
    if (many_small) {
      f.recommendation =
          why +
          format_text("%.3g collectives per step are many small ones, each paying the collective's fixed latency: ",
                      *calls) +
          in_users_words(s,
                         "use larger gradient buckets (--bucket-mb) so fewer, fuller all-reduces go out, or accumulate "
                         "gradients over several micro-batches to all-reduce once per optimizer step.",
                         "raise DDP(bucket_cap_mb=) so fewer, fuller all-reduces go out, and accumulate gradients under "
                         "model.no_sync() over several micro-batches so only the last one all-reduces.");
    } else {
      f.recommendation =
          why + in_users_words(s,
                               "Part stays exposed: tune the gradient buckets (--bucket-mb; fewer, fuller all-reduces, "
                               "and a small last bucket) or accumulate gradients over several micro-batches.",
                               "Part stays exposed: tune DDP(bucket_cap_mb=) (fewer, fuller all-reduces, and a small "
                               "last bucket) or accumulate gradients under model.no_sync() over several micro-batches.");
    }
  } else {
    f.change = "overlap_comm";
    f.recommendation = in_users_words(
        s,
        "Overlap the gradient all-reduce with backward (--comm-mode overlap: bucketed, launched from "
        "gradient hooks), use bigger buckets (--bucket-mb), or accumulate gradients to communicate less often.",
        "Overlap the gradient all-reduce with backward (DistributedDataParallel does, from gradient hooks; "
        "raise bucket_cap_mb), or accumulate gradients under model.no_sync() to communicate less often.");
    if (many_small) {
      f.recommendation += format_text(" %.3g collectives per step are many small ones: fewer, fuller ones (buckets) "
                                      "pay the per-call latency less often.",
                                      *calls);
    }
  }
  f.times_fired = f.data_points = step_count(s);
  f.saving_pct = exposed;
  return f;
}

// 11. Ranks with different step times: the fast ones wait for the slowest at every collective, so
// the time is lost in communication (suspect), though the cause sits on the slow rank.
std::optional<Finding> rank_imbalance(const Summary& s, const Thresholds& t) {
  if (s.world_size <= 1) return std::nullopt;
  const std::vector<double>& p50 = s.rank_step_p50_ms;
  std::optional<double> spread = s.rank_spread_pct;
  double fastest = 0, slowest = 0;
  if (p50.size() >= 2) {
    fastest = *std::min_element(p50.begin(), p50.end());
    slowest = *std::max_element(p50.begin(), p50.end());
    if (!spread && fastest > 0) spread = (slowest - fastest) / fastest * 100.0;
  }
  if (!spread) return std::nullopt;
  const double spread_max = t.value(threshold::rank_imbalance::spread_pct);
  // With the job's paired interval, the low end must pass the line (noise between ranks does not).
  const bool paired = s.rank_spread_low_pct && s.rank_spread_high_pct;
  if (!((paired ? *s.rank_spread_low_pct : *spread) > spread_max)) return std::nullopt;
  Finding f = make("rank_imbalance", Severity::kModerate, Suspect::kCommunication);
  f.evidence.push_back({"rank_spread_pct", *spread, spread_max, "pct"});
  f.title = paired ? format_text("the slowest rank's own work a step (its step minus exposed communication) is "
                                 "%.1f %% [%.1f, %.1f] above the other ranks' median, step by step",
                                 *spread, *s.rank_spread_low_pct, *s.rank_spread_high_pct)
                   : format_text("the slowest rank's own work a step (its step minus exposed communication) is "
                                 "%.1f %% above the fastest rank's",
                                 *spread);
  if (p50.size() >= 2 && fastest > 0) {
    f.title += format_text(" (%.1f ms vs %.1f ms)", slowest, fastest);
    const double limit = fastest * (1.0 + spread_max / 100.0);
    for (double ms : p50) f.times_fired += ms > limit ? 1 : 0;
    f.data_points = static_cast<int64_t>(p50.size());
  } else {
    f.times_fired = 1;
    f.data_points = s.world_size;
  }
  f.recommendation =
      "Every rank waits for the slowest at each all-reduce: give ranks equal shards (samples, "
      "sequence lengths), the same loader workers and cores, and keep other work off the slow rank.";
  f.saving_pct = *spread / (100.0 + *spread) * 100.0;  // the slowest step's share that equal ranks would save
  return f;
}

// 12. Per-op framework cost: on GPU a high framework share (host dispatch not covered by kernels)
// or mostly short kernels; on CPU a high framework share, or many ops per step with a median op about
// as short as its own dispatch.
std::optional<Finding> dispatch_overhead(const Summary& s, const Thresholds& t) {
  if (!has_steps(s)) return std::nullopt;
  const double fw = s.shares.framework_pct;
  const double fw_min = t.value(threshold::dispatch_overhead::framework_pct);
  const bool fw_high = fw >= fw_min;
  Finding f = make("dispatch_overhead", Severity::kModerate, Suspect::kFrameworkOverhead);
  if (s.on_gpu) {
    const double short_min = t.value(threshold::dispatch_overhead::short_kernel_pct);
    const bool short_high = s.short_kernel_pct && *s.short_kernel_pct >= short_min;
    if (!fw_high && !short_high) return std::nullopt;
    if (!fw_high)
      f.severity = Severity::kInfo;  // many short kernels, but the device is not yet waiting on them
    f.evidence.push_back({"framework_pct", fw, fw_min, "pct"});
    if (s.short_kernel_pct) f.evidence.push_back({"short_kernel_pct", *s.short_kernel_pct, short_min, "pct"});
    f.title = format_text("framework overhead is %.1f %% of the step", fw) +
              (s.short_kernel_pct ? format_text("; %.1f %% of kernels are short", *s.short_kernel_pct)
                                  : std::string());
  } else {
    const double ops_min = t.value(threshold::dispatch_overhead::cpu_ops_per_step);
    const double op_us_max = t.value(threshold::dispatch_overhead::cpu_op_p50_us);
    const bool small_ops = s.ops_per_step && s.op_us && s.op_us->count > 0 && *s.ops_per_step >= ops_min &&
                           s.op_us->p50 < op_us_max;
    if (!fw_high && !small_ops) return std::nullopt;
    if (!fw_high)
      f.severity = Severity::kInfo;  // many small ops, but their dispatch is not yet a large share
    f.evidence.push_back({"framework_pct", fw, fw_min, "pct"});
    if (s.ops_per_step && s.op_us && s.op_us->count > 0) {
      f.evidence.push_back({"ops_per_step", *s.ops_per_step, ops_min, "count"});
      f.evidence.push_back({"op_us.p50", s.op_us->p50, op_us_max, "us"});
    }
    f.title = small_ops
                  ? format_text(
                        "%.0f ops per step with a median op of %.1f us: per-op dispatch is a large part of "
                        "the step",
                        *s.ops_per_step, s.op_us->p50)
                  : format_text("framework overhead is %.1f %% of the step", fw);
  }
  const auto cause = [&](const char* key) {
    auto it = s.idle_cause_pct.find(key);
    return it == s.idle_cause_pct.end() ? 0.0 : it->second;
  };
  if (cause("allocator") > 0 && cause("allocator") >= cause("launch") && cause("allocator") >= cause("sync")) {
    f.title += format_text("; allocator churn: the device idles %.1f %% of the step while the host is in "
                           "cudaMalloc/cudaFree", cause("allocator"));
    f.recommendation = in_users_words(
        s, "Allocator churn: keep tensor shapes stable between steps so the caching allocator reuses blocks.",
        "Allocator churn: keep shapes stable between steps, avoid torch.cuda.empty_cache() in the loop, "
        "and try PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.");
  } else if (cause("sync") > 0 && cause("sync") >= cause("launch")) {
    f.title += format_text("; the device idles %.1f %% of the step while the host synchronises", cause("sync"));
    if (syncs_in_model(s)) {
      f.recommendation = "The host waits on the device and then cannot feed it. " + model_sync_advice(s);
    } else f.recommendation = in_users_words(
        s, "The host waits on the device and then cannot feed it: read values every N steps (--sync-every N).",
        "The host waits on the device (torch.cuda.synchronize, .item(), .cpu(), printing a tensor) and then "
        "cannot feed it: read losses every N steps and keep running sums on the device.");
  } else if (compiled_in_place(s)) {
    if (s.compiled_regions_per_step) f.evidence.push_back({"compiled_regions_per_step", *s.compiled_regions_per_step, 1, "count"});
    f.recommendation = after_compiling(s, t);
  } else {
    f.recommendation = in_users_words(
        s,
        "Launch fewer, larger operations: fuse elementwise chains and batch small tensors into larger "
        "ones; --compiled on measures whether compiling fuses them on this machine (the lab's third run).",
        "Launch fewer, larger operations: torch.compile(model) fuses elementwise chains (mode=\"reduce-overhead\" "
        "adds CUDA graphs, which remove per-kernel launch cost on GPU); avoid Python-level loops over small "
        "tensors.");
  }
  f.change = compiled_in_place(s) ? "" : "compiled";  // compiling again tests nothing
  f.times_fired = f.data_points = step_count(s);
  f.saving_pct = fw;
  return f;
}

// 13. Host synchronisations beyond the one loss read per step.
std::optional<Finding> host_syncs(const Summary& s, const Thresholds& t) {
  if (!s.host_syncs_per_step || !has_steps(s)) return std::nullopt;
  const double max = t.value(threshold::host_syncs::per_step);
  if (!(*s.host_syncs_per_step > max)) return std::nullopt;
  // On CPU a value read stalls no queue of device work: worth knowing, not a bottleneck.
  Finding f =
      make("host_syncs", s.on_gpu ? Severity::kModerate : Severity::kInfo, Suspect::kFrameworkOverhead);
  f.evidence.push_back({"host_syncs_per_step", *s.host_syncs_per_step, max, "count"});
  if (syncs_in_model(s)) {
    const double in_model = model_syncs_per_step(s);
    f.evidence.push_back({"model_syncs_per_step", in_model, 0, "count"});
    f.title = format_text("%.1f host synchronisations per step, %.1f of them inside the model's forward: ",
                          *s.host_syncs_per_step, in_model) +
              model_sync_sites(s);
    f.recommendation = model_sync_advice(s);
    const double outside = *s.host_syncs_per_step - in_model;
    if (outside > max) {
      f.recommendation += format_text(" The other %.3g per step are outside the model: read losses and metrics every "
                                      "N steps.",
                                      outside);
    }
    f.times_fired = f.data_points = step_count(s);
    return f;
  }
  f.title =
      format_text("%.1f host synchronisations per step (e.g. .item(), .cpu(), printing a loss every step)",
                  *s.host_syncs_per_step);
  f.recommendation = in_users_words(
      s,
      "Each synchronisation stops the host from running ahead of the device: read losses and metrics every "
      "N steps (--sync-every N), keep running sums on the device, avoid data-dependent host branches.",
      "Each synchronisation (.item(), .cpu(), .tolist(), print(loss), torch.cuda.synchronize()) stops the "
      "host from running ahead of the device: read them every N steps and keep running sums on the device.");
  f.times_fired = f.data_points = step_count(s);
  return f;
}

// The ranks that share this rank's machine: a job across machines says how many (LOCAL_WORLD_SIZE);
// otherwise every rank ran here (--nproc, torchrun on one machine).
int ranks_here(const Summary& s) { return s.ranks_on_machine.value_or(s.world_size); }

// Ranks x intra-op threads above the machine's cores, on CPU: every rank's GEMMs wait for threads
// the other ranks on the machine hold.
bool oversubscribed(const Summary& s) {
  return !s.on_gpu && ranks_here(s) > 1 && s.intra_op_threads && s.logical_cores > 0 &&
         ranks_here(s) * *s.intra_op_threads > s.logical_cores;
}

// 13b. Oversubscribed ranks: what reads as compute is threads waiting for cores.
std::optional<Finding> oversubscription(const Summary& s, const Thresholds&) {
  if (!oversubscribed(s) || !has_steps(s)) return std::nullopt;
  Finding f = make("oversubscription", Severity::kHigh, Suspect::kFrameworkOverhead);
  const int threads = ranks_here(s) * *s.intra_op_threads;
  f.evidence.push_back({"rank_threads", static_cast<double>(threads), static_cast<double>(s.logical_cores), "count"});
  f.title = count_noun(ranks_here(s), "rank") + (ranks_here(s) < s.world_size ? " on this machine" : "") + " x " + count_noun(*s.intra_op_threads, "thread") + " = " +
            std::to_string(threads) + " threads on " + count_noun(s.logical_cores, "core") +
            ": oversubscribed, so the compute share counts threads waiting for cores";
  const int fair = std::max(1, s.logical_cores / ranks_here(s));
  f.recommendation = in_users_words(
      s, format_text("Give each rank %d intra-op thread%s (--threads %d, or leave --threads out: trainlab divides the "
                     "cores among the ranks).", fair, fair == 1 ? "" : "s", fair),
      format_text("Set torch.set_num_threads(%d) in each rank (or OMP_NUM_THREADS=%d, as torchrun does with 1).",
                  fair, fair));
  f.change = "fewer_threads";
  // What waiting for cores could cost at most: the part of the compute share the extra threads
  // cannot run in, 1 - cores / threads of it (2 ranks x 2 threads on 2 cores: half).
  f.saving_pct = s.shares.compute_pct * (1.0 - static_cast<double>(s.logical_cores) / threads);
  f.evidence.push_back({"compute_pct", s.shares.compute_pct, 0, "pct"});
  f.times_fired = f.data_points = step_count(s);
  return f;
}

// 14. fp32 compute on a compute-heavy step: bf16 autocast left on the table.
std::optional<Finding> precision(const Summary& s, const Thresholds& t) {
  if (s.compute_dtype != "fp32" || !has_steps(s)) return std::nullopt;
  if (oversubscribed(s)) return std::nullopt;  // the compute share is threads waiting for cores, not GEMMs
  const double compute_min = t.value(threshold::precision::compute_pct);
  const double fp32_min = t.value(threshold::precision::fp32_share_pct);
  if (s.shares.compute_pct < compute_min) return std::nullopt;
  Evidence fp32;
  if (s.on_gpu) {
    int64_t total_ns = 0;
    for (const auto& [dtype, ns] : s.kernel_precision_ns) total_ns += ns;
    auto it = s.kernel_precision_ns.find("fp32");
    if (total_ns <= 0 || it == s.kernel_precision_ns.end()) return std::nullopt;
    fp32 = {"fp32_kernel_time_pct", static_cast<double>(it->second) / static_cast<double>(total_ns) * 100.0,
            fp32_min, "pct"};
  } else {
    if (!s.fp32_op_share_pct) return std::nullopt;
    fp32 = {"fp32_op_share_pct", *s.fp32_op_share_pct, fp32_min, "pct"};
  }
  if (fp32.value < fp32_min) return std::nullopt;
  // What bf16 buys: measured on this device when the run measured it (a CPU without AVX512-BF16 or
  // AMX runs bf16 GEMMs emulated, far slower: then nothing is left on the table), else the guide's.
  const double speedup = s.bf16_gemm_speedup ? *s.bf16_gemm_speedup : t.value(threshold::precision::expected_speedup);
  if (s.bf16_gemm_speedup && speedup < t.value(threshold::precision::min_measured_speedup)) return std::nullopt;
  Finding f = make("precision", Severity::kModerate, Suspect::kModelCompute);
  f.evidence.push_back({"compute_pct", s.shares.compute_pct, compute_min, "pct"});
  f.evidence.push_back(fp32);
  if (s.bf16_gemm_speedup) {
    f.evidence.push_back({"bf16_gemm_speedup", speedup, t.value(threshold::precision::min_measured_speedup), "x"});
  }
  f.title = format_text("compute is %.1f %% of the step and runs in fp32: bf16 autocast left on the table",
                        s.shares.compute_pct);
  f.recommendation = in_users_words(
      s, "Run forward and backward under bf16 autocast (--precision bf16; the optimizer state stays fp32)",
      "Run forward and backward under torch.autocast(device_type=\"" + std::string(s.on_gpu ? "cuda" : "cpu") +
          "\", dtype=torch.bfloat16) (keep the optimizer state in fp32)") +
                     std::string(s.on_gpu ? "." : "; on CPUs without AMX or AVX512-BF16 measure it first.");
  f.change = "bf16";
  f.times_fired = f.data_points = step_count(s);
  // bf16 speeds up the GEMMs by the measured (or published) factor; the rest of the compute (elementwise
  // ops, the casts autocast inserts) gains nothing, so the prediction weighs the speedup by the GEMMs'
  // share of op time when the profile measured it.
  const double gemm_fraction = s.gemm_time_pct ? *s.gemm_time_pct / 100.0 : 1.0;
  if (s.gemm_time_pct) f.evidence.push_back({"gemm_time_pct", *s.gemm_time_pct, 0, "pct"});
  f.saving_pct = speedup > 1 ? s.shares.compute_pct * gemm_fraction * (1.0 - 1.0 / speedup) : 0;
  return f;
}

// 15. GEMMs with a dimension that is not a multiple of 8 (Tensor Cores / AMX tiles run them padded).
std::optional<Finding> gemm_alignment(const Summary& s, const Thresholds& t) {
  if (s.gemm_ops <= 0) return std::nullopt;
  const double share = static_cast<double>(s.gemm_unaligned_ops) / static_cast<double>(s.gemm_ops) * 100.0;
  const double share_min = t.value(threshold::gemm_alignment::unaligned_share_pct);
  if (share < share_min || s.gemm_unaligned_ops <= 0) return std::nullopt;
  const bool low_precision = s.compute_dtype == "bf16" || s.compute_dtype == "fp16";
  Finding f =
      make("gemm_alignment", low_precision ? Severity::kModerate : Severity::kInfo, Suspect::kModelCompute);
  f.evidence.push_back({"unaligned_gemm_pct", share, share_min, "pct"});
  f.title =
      format_text("%lld of %lld GEMMs (%.1f %%) have a dimension that is not a multiple of 8",
                  static_cast<long long>(s.gemm_unaligned_ops), static_cast<long long>(s.gemm_ops), share);
  for (size_t i = 0; i < s.unaligned_gemm_examples.size() && i < 3; ++i) {
    f.title += (i ? ", " : ", e.g. ") + s.unaligned_gemm_examples[i];
  }
  f.recommendation =
      "Pad layer widths, vocabulary and batch to multiples of 8 (16 or 64 is better still) so "
      "bf16/fp16 GEMMs map onto whole Tensor Core / AMX tiles.";
  f.times_fired = s.gemm_unaligned_ops;
  f.data_points = s.gemm_ops;
  return f;
}

// 16. Start-up time large next to the measured loop.
std::optional<Finding> initialisation_time(const Summary& s, const Thresholds& t) {
  if (!s.init_ms || !s.loop_ms || !(*s.loop_ms > 0)) return std::nullopt;
  const double pct = *s.init_ms / *s.loop_ms * 100.0;
  const double pct_max = t.value(threshold::initialisation_time::pct_of_loop);
  if (!(pct > pct_max)) return std::nullopt;
  Finding f = make("initialisation_time", Severity::kInfo, Suspect::kNone);
  f.evidence.push_back({"init_pct_of_loop", pct, pct_max, "pct"});
  f.evidence.push_back({"init_ms", *s.init_ms, *s.loop_ms * pct_max / 100.0, "ms"});
  f.title = format_text("start-up takes %.0f ms, %.1f %% of the measured loop (%.0f ms)", *s.init_ms, pct,
                        *s.loop_ms);
  f.recommendation =
      "Start-up (model build, data set indexing, compilation) weighs on short runs: cache what it "
      "builds, or measure over more steps.";
  f.times_fired = f.data_points = 1;
  return f;
}

// 17a. A loss that went NaN or Inf.
std::optional<Finding> non_finite_loss(const Summary& s, const Thresholds&) {
  int64_t bad = 0;
  size_t first = 0;
  for (size_t i = 0; i < s.losses.size(); ++i) {
    if (std::isfinite(s.losses[i])) continue;
    if (bad++ == 0) first = i;
  }
  if (bad == 0) return std::nullopt;
  Finding f = make("non_finite_loss", Severity::kHigh, Suspect::kNone);
  f.evidence.push_back({"non_finite_losses", static_cast<double>(bad), 0, "count"});
  const int64_t first_step =
      s.step_numbers.size() == s.losses.size() ? s.step_numbers[first] : static_cast<int64_t>(first);
  f.title = format_text("the loss is NaN/Inf at %lld of ", static_cast<long long>(bad)) +
            count_noun(s.losses.size(), "step") + format_text(", first at step %lld", static_cast<long long>(first_step));
  f.recommendation =
      "Training diverged: lower the learning rate or clip gradients; under fp16 use a gradient "
      "scaler (bf16 has fp32's range); check the inputs for NaN.";
  f.times_fired = bad;
  f.data_points = static_cast<int64_t>(s.losses.size());
  return f;
}

// 17b. Gradient norms that spike (non-finite, or above k x the run's median) or vanish (median tiny).
std::optional<Finding> gradient_norm(const Summary& s, const Thresholds& t) {
  std::vector<double> finite;
  for (double g : s.grad_norms) {
    if (std::isfinite(g)) finite.push_back(g);
  }
  if (finite.size() < 3) return std::nullopt;
  const double median = series::median(finite);
  const double factor = t.value(threshold::gradient_norm::explode_x_median);
  const double vanish = t.value(threshold::gradient_norm::vanish_below);
  int64_t spikes = 0;
  double largest_ratio = 0;
  for (double g : s.grad_norms) {
    if (!std::isfinite(g)) {
      ++spikes;
    } else if (median > 0 && g > factor * median) {
      ++spikes;
      largest_ratio = std::max(largest_ratio, g / median);
    }
  }
  Finding f = make("gradient_norm", Severity::kModerate, Suspect::kNone);
  f.data_points = static_cast<int64_t>(s.grad_norms.size());
  if (spikes > 0) {
    if (largest_ratio > 0) f.evidence.push_back({"max_grad_norm_x_median", largest_ratio, factor, "x"});
    if (spikes > 0 && finite.size() < s.grad_norms.size()) {
      f.evidence.push_back(
          {"non_finite_grad_norms", static_cast<double>(s.grad_norms.size() - finite.size()), 0, "count"});
    }
    f.title = format_text("the gradient norm explodes at %lld of ", static_cast<long long>(spikes)) +
              count_noun(s.grad_norms.size(), "step") +
              format_text(" (above %.0fx its median %.3g, or non-finite)", factor, median);
    f.recommendation =
        "Clip the gradient norm, lower the learning rate or add warm-up; look at the batches of the "
        "spiking steps.";
    f.times_fired = spikes;
    return f;
  }
  if (median < vanish) {
    f.evidence.push_back({"median_grad_norm", median, vanish, "norm"});
    f.title = format_text("the gradient norm vanishes: median %.3g (under %.3g)", median, vanish);
    f.recommendation =
        "Updates are too small to move the weights: check that the loss reaches the parameters "
        "(detached tensors, frozen layers), initialisation and normalisation.";
    for (double g : finite) f.times_fired += g < vanish ? 1 : 0;
    return f;
  }
  return std::nullopt;
}

// 18. The well-fed loop: compute is the largest share and most of the step; the question is efficiency.
std::optional<Finding> model_compute(const Summary& s, const Thresholds& t) {
  if (!has_steps(s)) return std::nullopt;
  const StepShares& sh = s.shares;
  const double compute = sh.compute_pct;
  const double min = t.value(threshold::model_compute::pct);
  for (double other :
       {sh.data_wait_pct, sh.host_to_device_pct, sh.communication_pct, sh.framework_pct, sh.other_pct}) {
    if (other >= compute) return std::nullopt;
  }
  if (compute < min) return std::nullopt;
  Finding f = make("model_compute", Severity::kInfo, Suspect::kModelCompute);
  f.evidence.push_back({"compute_pct", compute, min, "pct"});
  f.title = format_text("the loop is well fed: model compute is %.1f %% of the step", compute);
  if (s.achieved_flops_per_s && s.peak_flops_per_s && *s.peak_flops_per_s > 0) {
    const double efficiency = *s.achieved_flops_per_s / *s.peak_flops_per_s * 100.0;
    f.evidence.push_back({"flops_efficiency_pct", efficiency, 0, "pct"});  // no threshold: context only
    f.title += format_text("; it reaches %.1f %% of the device's measured peak FLOP/s", efficiency);
  } else if (!s.flops_not_counted.empty()) {
    f.title += "; FLOPs not counted for: " + join_flops_not_counted(s) + " (no efficiency figure)";
  } else {
    f.title += "; efficiency unknown (no achieved or peak FLOP/s)";
  }
  const bool partly_compiled =
      s.compiled_share_pct && *s.compiled_share_pct < t.value(threshold::dispatch_overhead::compiled_share_pct);
  if (compiled_in_place(s)) {
    f.recommendation =
        "Faster steps now come from the model's own arithmetic; " +
        (partly_compiled ? format_text("only %.1f %% of %s runs compiled (", *s.compiled_share_pct,
                                       s.compiled_share_of.c_str()) +
                               compiled_evidence(s) + "): torch.compile what still runs eagerly, "
                         : "it is already compiled (" + compiled_evidence(s) + "): ") +
        in_users_words(s, "lower precision (--precision bf16), hardware-friendly shapes, a larger batch (--batch)",
                       "torch.autocast with bf16, hardware-friendly shapes (multiples of 8), a larger batch") +
        (graph_breaks(s) ? ", fewer graph breaks" : "") + (s.on_gpu && !s.cuda_graph_launches_per_step ? ", CUDA graphs (mode=\"reduce-overhead\")." : ".");
    f.times_fired = f.data_points = step_count(s);
    return f;
  }
  f.recommendation = in_users_words(
      s,
      "Faster steps now come from the model's own arithmetic: lower precision (--precision bf16), fused or "
      "compiled kernels (--compiled on), hardware-friendly shapes, a larger batch (--batch) for more "
      "efficient GEMMs.",
      "Faster steps now come from the model's own arithmetic: torch.autocast with bf16, torch.compile, "
      "hardware-friendly shapes (multiples of 8), a larger batch for more efficient GEMMs.");
  f.times_fired = f.data_points = step_count(s);
  return f;
}

using Rule = std::function<std::optional<Finding>(const Summary&, const Thresholds&)>;

const std::vector<std::pair<std::string, Rule>>& rules() {
  static const std::vector<std::pair<std::string, Rule>> table = {
      {"input_bound", input_bound},
      {"low_device_utilisation", low_device_utilisation},
      {"cpu_bottleneck", cpu_bottleneck},
      {"io_bottleneck", io_bottleneck},
      {"loader_settings", loader_settings},
      {"batch_too_small", batch_too_small},
      {"memory_growth", memory_growth},
      {"step_outliers", step_outliers},
      {"periodic_slow_steps", periodic_slow_steps},
      {"exposed_communication", exposed_communication},
      {"rank_imbalance", rank_imbalance},
      {"dispatch_overhead", dispatch_overhead},
      {"host_syncs", host_syncs},
      {"oversubscription", oversubscription},
      {"precision", precision},
      {"gemm_alignment", gemm_alignment},
      {"initialisation_time", initialisation_time},
      {"non_finite_loss", non_finite_loss},
      {"gradient_norm", gradient_norm},
      {"model_compute", model_compute},
  };
  return table;
}

}  // namespace

const char* to_string(Severity severity) {
  switch (severity) {
    case Severity::kInfo:
      return "info";
    case Severity::kModerate:
      return "moderate";
    case Severity::kHigh:
      return "high";
  }
  return "info";
}

const char* to_string(Suspect suspect) {
  switch (suspect) {
    case Suspect::kDataPipeline:
      return "data_pipeline";
    case Suspect::kModelCompute:
      return "model_compute";
    case Suspect::kCommunication:
      return "communication";
    case Suspect::kFrameworkOverhead:
      return "framework_overhead";
    case Suspect::kNone:
      return "none";
  }
  return "none";
}

nlohmann::json to_json(const Finding& finding) {
  nlohmann::json evidence = nlohmann::json::array();
  for (const Evidence& e : finding.evidence) {
    evidence.push_back(
        {{"metric", e.metric}, {"value", e.value}, {"threshold", e.threshold}, {"unit", e.unit}});
  }
  return {{"rule", finding.rule_id},
          {"title", finding.title},
          {"severity", to_string(finding.severity)},
          {"suspect", to_string(finding.suspect)},
          {"evidence", evidence},
          {"recommendation", finding.recommendation},
          {"change", finding.change},
          {"times_fired", finding.times_fired},
          {"data_points", finding.data_points},
          {"saving_pct", finding.saving_pct}};
}

std::vector<Finding> run_rules(const Summary& summary, const Thresholds& thresholds) {
  std::vector<Finding> findings;
  for (const auto& [id, rule] : rules()) {
    if (std::optional<Finding> finding = rule(summary, thresholds)) findings.push_back(std::move(*finding));
  }
  return findings;
}

const std::vector<std::string>& rule_ids() {
  static const std::vector<std::string> ids = [] {
    std::vector<std::string> out;
    for (const auto& [id, rule] : rules()) out.push_back(id);
    return out;
  }();
  return ids;
}

}  // namespace trainlab
