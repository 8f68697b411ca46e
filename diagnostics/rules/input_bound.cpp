// 1. Data wait share of the step, at the TensorFlow input-pipeline analyzer's two levels.
#include "diagnostics/rules/rule_list.h"

#include "diagnostics/rules/rule_support.h"
#include "diagnostics/loader_stages.h"
#include "diagnostics/text_format.h"

namespace trainlab::rules {
namespace {

// The loader's worker evidence, change and recommendation, by what it already has: a worker per core
// (pin the copies when they matter, else prefetch more), workers that are too few or too slow, or none.
void add_loader_action(Finding& f, const Summary& s, const Thresholds& t) {
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
}

}  // namespace

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
  add_loader_action(f, s, t);
  // A job: the action names the user's own DataLoader call and the stage that owns its time.
  const std::string job_action = job_loader_action(s);
  if (!job_action.empty()) f.recommendation = job_action;
  fired_on_every_step(f, s);  // only the aggregate share is known: it holds for the run
  f.saving_pct = share;
  return f;
}

}  // namespace trainlab::rules
