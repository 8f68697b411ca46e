// 15. GEMMs with a dimension that is not a multiple of 8 (Tensor Cores / AMX tiles run them padded).
#include "diagnostics/rules/rule_list.h"

#include "diagnostics/rules/rule_support.h"
#include "diagnostics/text_format.h"

namespace trainlab::rules {

std::optional<Finding> gemm_alignment(const Summary& s, const Thresholds& t) {
  if (s.gemm_ops <= 0) return std::nullopt;
  const double share = static_cast<double>(s.gemm_unaligned_ops) / static_cast<double>(s.gemm_ops) * 100.0;
  const double share_min = t.value(threshold::gemm_alignment::unaligned_share_pct);
  if (share < share_min || s.gemm_unaligned_ops <= 0) return std::nullopt;
  const bool low_precision = s.compute_dtype == "bf16" || s.compute_dtype == "fp16";
  Finding f =
      make("gemm_alignment", low_precision ? Severity::kModerate : Severity::kInfo, Suspect::kModelCompute);
  f.evidence.push_back({"unaligned_gemm_pct", share, share_min, "pct"});
  f.title =
      format_text("%lld of %lld GEMMs (%.1f %%) have a dimension that is not a multiple of 8",
                  static_cast<long long>(s.gemm_unaligned_ops), static_cast<long long>(s.gemm_ops), share);
  for (size_t i = 0; i < s.unaligned_gemm_examples.size() && i < 3; ++i) {
    f.title += (i ? ", " : ", e.g. ") + s.unaligned_gemm_examples[i];
  }
  f.recommendation =
      "Pad layer widths, vocabulary and batch to multiples of 8 (16 or 64 is better still) so "
      "bf16/fp16 GEMMs map onto whole Tensor Core / AMX tiles.";
  f.times_fired = s.gemm_unaligned_ops;
  f.data_points = s.gemm_ops;
  return f;
}

}  // namespace trainlab::rules
