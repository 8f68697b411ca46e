// 18. The well-fed loop: compute is the largest share and most of the step; the question is efficiency.
#include "diagnostics/rules/rule_list.h"

#include "diagnostics/rules/rule_support.h"
#include "diagnostics/text_format.h"

namespace trainlab::rules {

std::optional<Finding> model_compute(const Summary& s, const Thresholds& t) {
  if (!has_steps(s)) return std::nullopt;
  const StepShares& sh = s.shares;
  const double compute = sh.compute_pct;
  const double min = t.value(threshold::model_compute::pct);
  for (double other :
       {sh.data_wait_pct, sh.host_to_device_pct, sh.communication_pct, sh.framework_pct, sh.other_pct}) {
    if (other >= compute) return std::nullopt;
  }
  if (compute < min) return std::nullopt;
  Finding f = make("model_compute", Severity::kInfo, Suspect::kModelCompute);
  f.evidence.push_back({"compute_pct", compute, min, "pct"});
  f.title = format_text("the loop is well fed: model compute is %.1f %% of the step", compute);
  if (s.achieved_flops_per_s && s.peak_flops_per_s && *s.peak_flops_per_s > 0) {
    const double efficiency = *s.achieved_flops_per_s / *s.peak_flops_per_s * 100.0;
    f.evidence.push_back({"flops_efficiency_pct", efficiency, 0, "pct"});  // no threshold: context only
    f.title += format_text("; it reaches %.1f %% of the device's measured peak FLOP/s", efficiency);
  } else if (!s.flops_not_counted.empty()) {
    f.title += "; FLOPs not counted for: " + join_flops_not_counted(s) + " (no efficiency figure)";
  } else {
    f.title += "; efficiency unknown (no achieved or peak FLOP/s)";
  }
  const bool partly_compiled =
      s.compiled_share_pct && *s.compiled_share_pct < t.value(threshold::dispatch_overhead::compiled_share_pct);
  if (compiled_in_place(s)) {
    f.recommendation =
        "Faster steps now come from the model's own arithmetic; " +
        (partly_compiled ? format_text("only %.1f %% of %s runs compiled (", *s.compiled_share_pct,
                                       s.compiled_share_of.c_str()) +
                               compiled_evidence(s) + "): torch.compile what still runs eagerly, "
                         : "it is already compiled (" + compiled_evidence(s) + "): ") +
        in_users_words(s, "lower precision (--precision bf16), hardware-friendly shapes, a larger batch (--batch)",
                       lower_precision_words(s) + ", hardware-friendly shapes (multiples of 8), a larger batch") +
        (graph_breaks(s) ? ", fewer graph breaks" : "") + (s.on_gpu && !s.cuda_graph_launches_per_step ? ", CUDA graphs (mode=\"reduce-overhead\")." : ".");
    fired_on_every_step(f, s);
    return f;
  }
  f.recommendation = in_users_words(
      s,
      "Faster steps now come from the model's own arithmetic: lower precision (--precision bf16), fused or "
      "compiled kernels (--compiled on), hardware-friendly shapes, a larger batch (--batch) for more "
      "efficient GEMMs.",
      "Faster steps now come from the model's own arithmetic: " + lower_precision_words(s) +
          ", torch.compile, hardware-friendly shapes (multiples of 8), a larger batch for more efficient GEMMs.");
  fired_on_every_step(f, s);
  return f;
}

}  // namespace trainlab::rules
