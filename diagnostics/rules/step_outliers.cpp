// 8. Single slow steps beyond mean + k sigma.
#include "diagnostics/rules/rule_list.h"

#include <algorithm>

#include "core/statistics.h"
#include "diagnostics/rules/rule_support.h"
#include "diagnostics/series.h"
#include "diagnostics/text_format.h"

namespace trainlab::rules {

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
  Finding f = slow_steps_finding("step_outliers", s, t, outliers, excess);
  f.evidence.push_back({"outlier_steps", static_cast<double>(outliers.size()), 0, "count"});
  f.evidence.push_back({"max_step_ms", slowest, limit, "ms"});
  f.title = format_text("%zu step%s beyond mean + %.0f sigma (%.1f ms): step%s ", outliers.size(),
                        outliers.size() == 1 ? "" : "s", sigmas, limit, outliers.size() == 1 ? "" : "s") +
            list_steps(s, outliers) +
            format_text("; %.1f ms above the median step on average", excess / outliers.size());
  f.recommendation =
      "Look at what those steps do differently (a checkpoint, evaluation, garbage collection, a "
      "slow batch, another process); run it off the training thread or less often.";
  return f;
}

}  // namespace trainlab::rules
