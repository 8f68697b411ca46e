// 11. Ranks with different step times: the fast ones wait for the slowest at every collective, so
// the time is lost in communication (suspect), though the cause sits on the slow rank.
#include "diagnostics/rules/rule_list.h"

#include <algorithm>

#include "diagnostics/rules/rule_support.h"
#include "diagnostics/text_format.h"

namespace trainlab::rules {

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

}  // namespace trainlab::rules
