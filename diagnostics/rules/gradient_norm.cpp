// 17b. Gradient norms that spike (non-finite, or above k x the run's median) or vanish (median tiny).
#include "diagnostics/rules/rule_list.h"

#include <algorithm>
#include <cmath>

#include "core/text.h"
#include "diagnostics/rules/rule_support.h"
#include "diagnostics/series.h"
#include "diagnostics/text_format.h"

namespace trainlab::rules {

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

}  // namespace trainlab::rules
