// 3. CPU saturated while the GPU idles (GPU runs only: on CPU the CPU is the device).
#include "diagnostics/rules/rule_list.h"

#include "diagnostics/rules/rule_support.h"
#include "diagnostics/text_format.h"

namespace trainlab::rules {

std::optional<Finding> cpu_bottleneck(const Summary& s, const Thresholds& t) {
  if (!s.on_gpu) return std::nullopt;
  const Distribution* cpu = metric(s, "cpu.total_pct");
  std::string gpu_name;
  const Distribution* gpu = gpu_util(s, &gpu_name);
  if (!cpu || !gpu) return std::nullopt;
  const double cpu_min = t.value(threshold::cpu_bottleneck::cpu_p50_pct);
  const double gpu_max = t.value(threshold::cpu_bottleneck::gpu_util_p50_pct);
  if (!(cpu->p50 > cpu_min && gpu->p50 < gpu_max)) return std::nullopt;
  const bool data = s.shares.data_wait_pct >= s.shares.framework_pct;
  Finding f =
      make("cpu_bottleneck", Severity::kHigh, data ? Suspect::kDataPipeline : Suspect::kFrameworkOverhead);
  f.evidence.push_back({"cpu.total_pct.p50", cpu->p50, cpu_min, "pct"});
  f.evidence.push_back({gpu_name + ".p50", gpu->p50, gpu_max, "pct"});
  f.title = format_text("the CPU is saturated (median %.1f %%) while the GPU idles (median %.1f %%)",
                        cpu->p50, gpu->p50);
  if (data) {
    f.recommendation =
        "The host cannot prepare batches fast enough and has no cores to spare: cache decoded "
        "samples, simplify or move augmentation to the GPU; more workers will not help.";
    f.saving_pct = s.shares.data_wait_pct;
  } else {
    if (compiled_in_place(s)) {
      f.recommendation = "The host spends the step dispatching work. " + after_compiling(s, t);
    } else {
      f.change = "compiled";
      f.recommendation =
          "The host spends the step dispatching work: compile the step (fused graph, CUDA graph) to "
          "launch fewer, larger kernels.";
    }
    f.saving_pct = s.shares.framework_pct;
  }
  f.times_fired = (cpu->count + 1) / 2;  // a median above the threshold: at least half of the samples
  f.data_points = cpu->count;
  return f;
}

}  // namespace trainlab::rules
