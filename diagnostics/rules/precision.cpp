// 14. fp32 compute on a compute-heavy step: bf16 autocast left on the table.
#include "diagnostics/rules/rule_list.h"

#include "diagnostics/lab_measured.h"
#include "diagnostics/rules/rule_support.h"
#include "diagnostics/text_format.h"

namespace trainlab::rules {

std::optional<Finding> precision(const Summary& s, const Thresholds& t) {
  if (s.compute_dtype != "fp32" || !has_steps(s)) return std::nullopt;
  if (oversubscribed(s)) return std::nullopt;  // the compute share is threads waiting for cores, not GEMMs
  const double compute_min = t.value(threshold::precision::compute_pct);
  const double fp32_min = t.value(threshold::precision::fp32_share_pct);
  if (s.shares.compute_pct < compute_min) return std::nullopt;
  Evidence fp32;
  if (s.on_gpu) {
    int64_t total_ns = 0;
    for (const auto& [dtype, ns] : s.kernel_precision_ns) total_ns += ns;
    auto it = s.kernel_precision_ns.find("fp32");
    if (total_ns <= 0 || it == s.kernel_precision_ns.end()) return std::nullopt;
    fp32 = {"fp32_kernel_time_pct", static_cast<double>(it->second) / static_cast<double>(total_ns) * 100.0,
            fp32_min, "pct"};
  } else {
    if (!s.fp32_op_share_pct) return std::nullopt;
    fp32 = {"fp32_op_share_pct", *s.fp32_op_share_pct, fp32_min, "pct"};
  }
  if (fp32.value < fp32_min) return std::nullopt;
  // What bf16 buys: measured on this device when the run measured it (a CPU without AVX512-BF16 or
  // AMX runs bf16 GEMMs emulated, far slower: then nothing is left on the table), else the guide's.
  const double speedup = s.bf16_gemm_speedup ? *s.bf16_gemm_speedup : t.value(threshold::precision::expected_speedup);
  if (s.bf16_gemm_speedup && speedup < t.value(threshold::precision::min_measured_speedup)) return std::nullopt;
  Finding f = make("precision", Severity::kModerate, Suspect::kModelCompute);
  f.evidence.push_back({"compute_pct", s.shares.compute_pct, compute_min, "pct"});
  f.evidence.push_back(fp32);
  if (s.bf16_gemm_speedup) {
    f.evidence.push_back({"bf16_gemm_speedup", speedup, t.value(threshold::precision::min_measured_speedup), "x"});
  }
  if (!bf16_fast(s)) {
    // fp16 Tensor Cores only (compute capability 7.x): bf16 would run at fp32 speed or slower.
    f.title = format_text("compute is %.1f %% of the step and runs in fp32: fp16 autocast left on the table (",
                          s.shares.compute_pct) +
              s.device + format_text(", compute capability %.1f: no bf16 fast path)", *s.compute_capability);
    f.recommendation =
        "Run forward and backward under torch.autocast(device_type=\"cuda\", dtype=torch.float16) with a "
        "torch.amp.GradScaler(\"cuda\") (scaler.scale(loss).backward(); scaler.step(optimizer); scaler.update()): "
        "the " + s.device + format_text(" (compute capability %.1f) has fp16 Tensor Cores but no bf16 fast path, so "
                                        "bf16 autocast would not speed it up.",
                                        *s.compute_capability);
    f.change = "";  // the lab's variants measure bf16, which this device does not speed up
  } else {
    f.title = format_text("compute is %.1f %% of the step and runs in fp32: bf16 autocast left on the table",
                          s.shares.compute_pct);
    f.recommendation = in_users_words(
        s, "Run forward and backward under bf16 autocast (--precision bf16; the optimizer state stays fp32)",
        "Run forward and backward under torch.autocast(device_type=\"" + std::string(s.on_gpu ? "cuda" : "cpu") +
            "\", dtype=torch.bfloat16) (keep the optimizer state in fp32)") +
                       std::string(s.on_gpu || lab_measured_for(s, "bf16") ? "."
                                                                            : "; on CPUs without AMX or AVX512-BF16 measure it first.");
    f.change = "bf16";
  }
  fired_on_every_step(f, s);
  // Lower precision speeds up the GEMMs and convolutions by the measured (or published) factor; the
  // rest of the compute (elementwise ops, the casts autocast inserts) gains nothing, so the prediction
  // weighs the speedup by their share (GPU: of kernel time; CPU: of op self time) when the profile
  // measured it.
  const double gemm_fraction = s.gemm_time_pct ? *s.gemm_time_pct / 100.0 : 1.0;
  if (s.gemm_time_pct) f.evidence.push_back({"gemm_time_pct", *s.gemm_time_pct, 0, "pct"});
  f.saving_pct = speedup > 1 ? s.shares.compute_pct * gemm_fraction * (1.0 - 1.0 / speedup) : 0;
  return f;
}

}  // namespace trainlab::rules
