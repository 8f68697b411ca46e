// 16. Start-up time large next to the measured loop.
#include "diagnostics/rules/rule_list.h"

#include "diagnostics/rules/rule_support.h"
#include "diagnostics/text_format.h"

namespace trainlab::rules {

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

}  // namespace trainlab::rules
