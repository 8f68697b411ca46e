// 17a. A loss that went NaN or Inf.
#include "diagnostics/rules/rule_list.h"

#include <cmath>

#include "core/text.h"
#include "diagnostics/rules/rule_support.h"
#include "diagnostics/text_format.h"

namespace trainlab::rules {

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

}  // namespace trainlab::rules
