// 12. Per-op framework cost: on GPU a high framework share (host dispatch not covered by kernels)
// or mostly short kernels; on CPU a high framework share, or many ops per step with a median op about
// as short as its own dispatch.
#include "diagnostics/rules/rule_list.h"

#include "diagnostics/python_frames.h"
#include "diagnostics/rules/rule_support.h"
#include "diagnostics/text_format.h"

namespace trainlab::rules {

std::optional<Finding> dispatch_overhead(const Summary& s, const Thresholds& t) {
  if (!has_steps(s)) return std::nullopt;
  const double fw = s.shares.framework_pct;
  const double fw_min = t.value(threshold::dispatch_overhead::framework_pct);
  const bool fw_high = fw >= fw_min;
  Finding f = make("dispatch_overhead", Severity::kModerate, Suspect::kFrameworkOverhead);
  if (s.on_gpu) {
    const double short_min = t.value(threshold::dispatch_overhead::short_kernel_pct);
    const bool short_high = s.short_kernel_pct && *s.short_kernel_pct >= short_min;
    if (!fw_high && !short_high) return std::nullopt;
    if (!fw_high)
      f.severity = Severity::kInfo;  // many short kernels, but the device is not yet waiting on them
    f.evidence.push_back({"framework_pct", fw, fw_min, "pct"});
    if (s.short_kernel_pct) f.evidence.push_back({"short_kernel_pct", *s.short_kernel_pct, short_min, "pct"});
    f.title = format_text("framework overhead is %.1f %% of the step", fw) +
              (s.short_kernel_pct ? format_text("; %.1f %% of kernels are short", *s.short_kernel_pct)
                                  : std::string());
  } else {
    const double ops_min = t.value(threshold::dispatch_overhead::cpu_ops_per_step);
    const double op_us_max = t.value(threshold::dispatch_overhead::cpu_op_p50_us);
    const bool small_ops = s.ops_per_step && s.op_us && s.op_us->count > 0 && *s.ops_per_step >= ops_min &&
                           s.op_us->p50 < op_us_max;
    if (!fw_high && !small_ops) return std::nullopt;
    if (!fw_high)
      f.severity = Severity::kInfo;  // many small ops, but their dispatch is not yet a large share
    f.evidence.push_back({"framework_pct", fw, fw_min, "pct"});
    if (s.ops_per_step && s.op_us && s.op_us->count > 0) {
      f.evidence.push_back({"ops_per_step", *s.ops_per_step, ops_min, "count"});
      f.evidence.push_back({"op_us.p50", s.op_us->p50, op_us_max, "us"});
    }
    f.title = small_ops
                  ? format_text(
                        "%.0f ops per step with a median op of %.1f us: per-op dispatch is a large part of "
                        "the step",
                        *s.ops_per_step, s.op_us->p50)
                  : format_text("framework overhead is %.1f %% of the step", fw);
  }
  const auto cause = [&](const char* key) {
    auto it = s.idle_cause_pct.find(key);
    return it == s.idle_cause_pct.end() ? 0.0 : it->second;
  };
  const double caching_off_pct = t.value(threshold::dispatch_overhead::allocator_off_pct);
  if (cause("copy") > 0 && cause("copy") >= cause("launch") && cause("copy") >= cause("sync") &&
      cause("copy") >= cause("allocator")) {
    // A blocking copy to the host is neither a launch nor a loop-level .item(): its own cause.
    f.title += format_text("; the device idles %.1f %% of the step while the host waits on copies to the host "
                           "(aten::copy_ with a Memcpy DtoH)", cause("copy"));
    f.recommendation =
        "The step copies tensors to the host and waits for each copy (.cpu(), .numpy(), .tolist(), "
        "tensor.to(\"cpu\") on a device tensor: aten::copy_ with a Memcpy DtoH, then a stream synchronisation): "
        "keep the values on the device, copy every N steps instead of every step, or copy with "
        "non_blocking=True into a pinned buffer and synchronise once where the value is needed.";
    // With stacks, where the copies are made: the user's innermost function around them.
    if (const std::string where = calling_frames_words(s.copy_to_host_python_frames); !where.empty()) {
      f.title += " (" + where + ")";
      f.recommendation += " The copies are " + where + ".";
    }
  } else if (cause("allocator") > 0 && cause("allocator") >= cause("launch") && cause("allocator") >= cause("sync")) {
    if (cause("allocator") >= caching_off_pct) {
      // The caching allocator reuses freed blocks without calling the driver: this much time in the
      // driver's own allocation calls means it is not caching.
      f.title += format_text("; the device idles %.1f %% of the step while the host is in %s: the caching "
                             "allocator looks off",
                             cause("allocator"), allocator_calls(s).c_str());
      f.recommendation =
          "The host spends " + format_text("%.1f %% of the step", cause("allocator")) + " in " + allocator_calls(s) +
          ", which PyTorch's caching allocator avoids by reusing freed blocks: it looks switched off. Unset " +
          (s.rocm ? "PYTORCH_NO_HIP_MEMORY_CACHING / PYTORCH_NO_CUDA_MEMORY_CACHING"
                  : "PYTORCH_NO_CUDA_MEMORY_CACHING") +
          " in the job's environment, and remove torch.cuda.empty_cache() from the loop.";
    } else {
      f.title += format_text("; allocator churn: the device idles %.1f %% of the step while the host is in %s",
                             cause("allocator"), allocator_calls(s).c_str());
      f.recommendation = in_users_words(
          s, "Allocator churn: keep tensor shapes stable between steps so the caching allocator reuses blocks.",
          "Allocator churn: keep shapes stable between steps, avoid torch.cuda.empty_cache() in the loop, "
          "and try PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.");
    }
  } else if (cause("sync") > 0 && cause("sync") >= cause("launch")) {
    f.title += format_text("; the device idles %.1f %% of the step while the host synchronises", cause("sync"));
    if (syncs_in_model(s)) {
      f.recommendation = "The host waits on the device and then cannot feed it. " + model_sync_advice(s);
    } else f.recommendation = in_users_words(
        s, "The host waits on the device and then cannot feed it: read values every N steps (--sync-every N).",
        "The host waits on the device (torch.cuda.synchronize, .item(), .cpu(), printing a tensor) and then "
        "cannot feed it: read losses every N steps and keep running sums on the device.");
  } else if (compiled_in_place(s)) {
    if (s.compiled_regions_per_step) f.evidence.push_back({"compiled_regions_per_step", *s.compiled_regions_per_step, 1, "count"});
    f.recommendation = after_compiling(s, t);
  } else {
    f.recommendation = in_users_words(
        s,
        "Launch fewer, larger operations: fuse elementwise chains and batch small tensors into larger "
        "ones; --compiled on measures whether compiling fuses them on this machine (the lab's third run).",
        "Launch fewer, larger operations: torch.compile(model) fuses elementwise chains (mode=\"reduce-overhead\" "
        "adds CUDA graphs, which remove per-kernel launch cost on GPU); avoid Python-level loops over small "
        "tensors.");
  }
  // Compiling again tests nothing; nor does it remove copies to the host or allocator calls.
  f.change = compiled_in_place(s) || f.recommendation.rfind("The step copies", 0) == 0 ||
                     f.recommendation.rfind("The host spends", 0) == 0
                 ? ""
                 : "compiled";
  fired_on_every_step(f, s);
  f.saving_pct = fw;
  return f;
}

}  // namespace trainlab::rules
