// 6. Small batches: per-step fixed costs (framework dispatch, other host work per step) take a large
// share of the step, or on a GPU the device idles without data or communication to blame, and the
// batch is below the threshold. Formulation: those costs are paid once per step whatever the batch
// holds, so doubling the batch halves their share per sample: saving_pct = fixed share / 2 (on the
// idle-GPU path, half the idle share).
#include "diagnostics/rules/rule_list.h"

#include "diagnostics/rules/rule_support.h"
#include "diagnostics/text_format.h"

namespace trainlab::rules {

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
  fired_on_every_step(f, s);
  return f;
}

}  // namespace trainlab::rules
