// 9. Slow steps that recur with a fixed period (a callback every N steps). A step is slow above
// median x (1 + slow_over_median_pct / 100); consecutive slow steps count as one event (a callback
// that spills into the next step); the events' step numbers must have one period (+-jitter) for
// period_share_pct of their gaps. Where noise hides some occurrences (a loaded machine), folding the
// step times onto each period finds the phase whose steps all stand above the others
// (series::fold_period, at least min_folded_steps of them).
#include "diagnostics/rules/rule_list.h"

#include "diagnostics/rules/rule_support.h"
#include "diagnostics/series.h"
#include "diagnostics/text_format.h"

namespace trainlab::rules {

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
  const double per_period = excess / static_cast<double>(events.size());
  Finding f = slow_steps_finding("periodic_slow_steps", s, t, slow, excess);
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
  return f;
}

}  // namespace trainlab::rules
