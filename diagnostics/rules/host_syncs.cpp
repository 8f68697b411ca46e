// 13. Host synchronisations beyond the one loss read per step, in the training loop (those inside the
// DataLoader are the data pipeline's: Summary::loader_syncs_per_step). On a CPU an .item() stalls no
// device: an info finding without an action.
#include "diagnostics/rules/rule_list.h"

#include "diagnostics/rules/rule_support.h"
#include "diagnostics/text_format.h"

namespace trainlab::rules {

std::optional<Finding> host_syncs(const Summary& s, const Thresholds& t) {
  if (!s.host_syncs_per_step || !has_steps(s)) return std::nullopt;
  const double max = t.value(threshold::host_syncs::per_step);
  if (!(*s.host_syncs_per_step > max)) return std::nullopt;
  // On CPU a value read stalls no queue of device work: worth knowing, not a bottleneck.
  Finding f =
      make("host_syncs", s.on_gpu ? Severity::kModerate : Severity::kInfo, Suspect::kFrameworkOverhead);
  f.evidence.push_back({"host_syncs_per_step", *s.host_syncs_per_step, max, "count"});
  if (syncs_in_model(s)) {
    const double in_model = model_syncs_per_step(s);
    f.evidence.push_back({"model_syncs_per_step", in_model, 0, "count"});
    f.title = format_text("%.1f host synchronisations per step, %.1f of them inside the model's forward: ",
                          *s.host_syncs_per_step, in_model) +
              model_sync_sites(s);
    f.recommendation = model_sync_advice(s);
    const double outside = *s.host_syncs_per_step - in_model;
    if (outside > max) {
      f.recommendation += format_text(" The other %.3g per step are outside the model: read losses and metrics every "
                                      "N steps.",
                                      outside);
    }
    fired_on_every_step(f, s);
    return f;
  }
  if (!s.on_gpu) {
    // On a CPU nothing runs ahead of the host: a value read is a read, not a stall. Worth knowing (the
    // same code stalls a GPU), with no action and no saving.
    f.title = format_text("%.1f value reads per step in the training loop (.item(), .tolist(), printing a tensor); "
                          "on the CPU they stall no device: not a bottleneck here, a synchronisation once the "
                          "loop runs on a GPU",
                          *s.host_syncs_per_step);
    fired_on_every_step(f, s);
    return f;
  }
  f.title =
      format_text("%.1f host synchronisations per step (e.g. .item(), .cpu(), printing a loss every step)",
                  *s.host_syncs_per_step);
  f.recommendation = in_users_words(
      s,
      "Each synchronisation stops the host from running ahead of the device: read losses and metrics every "
      "N steps (--sync-every N), keep running sums on the device, avoid data-dependent host branches.",
      "Each synchronisation (.item(), .cpu(), .tolist(), print(loss), torch.cuda.synchronize()) stops the "
      "host from running ahead of the device: read them every N steps and keep running sums on the device.");
  fired_on_every_step(f, s);
  return f;
}

}  // namespace trainlab::rules
