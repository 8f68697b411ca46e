// 7. Memory that keeps rising: over the second half of the run, the moving average (window max(3, n/10)
// steps), last window vs first. The first half is left out: allocator caches, loader buffers and the
// profiler's window grow memory early and then plateau; a leak keeps growing to the end.
#include "diagnostics/rules/rule_list.h"

#include "diagnostics/rules/rule_support.h"
#include "diagnostics/series.h"
#include "diagnostics/text_format.h"

namespace trainlab::rules {

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

}  // namespace trainlab::rules
