// 5. Loader settings that are wrong on their face: no workers while the loop waits on data, more
// workers than cores, unpinned copies on a GPU that spend a notable share on host-to-device copies.
#include "diagnostics/rules/rule_list.h"

#include <algorithm>

#include "diagnostics/rules/rule_support.h"
#include "diagnostics/text_format.h"

namespace trainlab::rules {

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

}  // namespace trainlab::rules
