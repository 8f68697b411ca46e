// The rules' shared helpers (declared, with what each reads, in rule_support.h).
#include "diagnostics/rules/rule_support.h"

#include <algorithm>

#include "core/text.h"
#include "diagnostics/text_format.h"

namespace trainlab::rules {

int64_t step_count(const Summary& s) {
  return s.step.count > 0 ? s.step.count : static_cast<int64_t>(s.step_ms.size());
}

bool has_steps(const Summary& s) { return step_count(s) > 0; }

const Distribution* metric(const Summary& s, const std::string& name) {
  auto it = s.system.find(name);
  return it != s.system.end() && it->second.count > 0 ? &it->second : nullptr;
}

const Distribution* gpu_util(const Summary& s, std::string* name) {
  if (const Distribution* d = metric(s, "gpu0.util_pct")) {
    *name = "gpu0.util_pct";
    return d;
  }
  for (const auto& [key, d] : s.system) {
    if (d.count > 0 && key.rfind("gpu", 0) == 0 && key.size() > 12 && ends_with(key, ".util_pct")) {
      *name = key;
      return &d;
    }
  }
  return nullptr;
}

int64_t step_number(const Summary& s, size_t i) {
  return s.step_numbers.size() == s.step_ms.size() ? s.step_numbers[i] : static_cast<int64_t>(i);
}

std::string list_steps(const Summary& s, const std::vector<size_t>& indices, size_t at_most) {
  std::string out;
  for (size_t k = 0; k < indices.size() && k < at_most; ++k) {
    out += (k ? ", " : "") + std::to_string(step_number(s, indices[k]));
  }
  if (indices.size() > at_most) out += ", ...";
  return out;
}

double sum(const std::vector<double>& values) {
  double total = 0;
  for (double v : values) total += v;
  return total;
}

std::string in_users_words(const Summary& s, const std::string& trainlab_words, const std::string& pytorch_words) {
  return s.source == "kineto" || s.source == "job" ? pytorch_words : trainlab_words;
}

bool compiled_in_place(const Summary& s) { return s.compiled_regions_per_step || !s.compiled_by.empty(); }

std::string compiled_evidence(const Summary& s) {
  if (s.compiled_regions_per_step) {
    return format_text("the trace enters %.3g %s span%s per step", *s.compiled_regions_per_step,
                       s.compiled_region_name.c_str(), *s.compiled_regions_per_step == 1 ? "" : "s");
  }
  return "the run is compiled (--compiled on, " + s.compiled_by + ")";
}

bool graph_breaks(const Summary& s) { return s.compiled_regions_per_step && *s.compiled_regions_per_step > 1.5; }

std::string after_compiling(const Summary& s, const Thresholds& t) {
  std::string out;
  if (s.compiled_share_pct && *s.compiled_share_pct < t.value(threshold::dispatch_overhead::compiled_share_pct)) {
    out = "Part of the model is already compiled (" + compiled_evidence(s) +
          format_text("), but only %.1f %% of %s runs in compiled code: compile what still runs eagerly (the "
                      "modules whose ops fall outside the compiled regions, or the whole step), not the same part "
                      "again. ",
                      *s.compiled_share_pct, s.compiled_share_of.c_str());
  } else {
    out = "The model is already compiled (" + compiled_evidence(s) +
          (s.compiled_share_pct ? format_text(", %.1f %% of %s in compiled code", *s.compiled_share_pct,
                                              s.compiled_share_of.c_str())
                                : std::string()) +
          "), so torch.compile is not the change. ";
  }
  if (graph_breaks(s)) {
    out += format_text("%.3g compiled regions per step are graph breaks (or submodules compiled one by one): each "
                       "boundary returns to eager Python and splits fusion; find them with "
                       "torch._dynamo.explain(model)(inputs) or TORCH_LOGS=graph_breaks and remove them (fullgraph=True "
                       "reports each). ",
                       *s.compiled_regions_per_step);
  }
  if (s.on_gpu && s.cuda_graph_launches_per_step) {
    out += format_text("CUDA graphs are already on (%.3g cudaGraphLaunch per step): ", *s.cuda_graph_launches_per_step) +
           "move the host work between graphs (loss, optimizer step, logging) into the compiled step.";
  } else if (s.on_gpu) {
    out += "Add CUDA graphs: torch.compile(model, mode=\"reduce-overhead\") replays the step's kernels without "
           "per-kernel launch cost (keep shapes static).";
  } else {
    out += "Bring more of the step inside the compiled region (the loss, the optimizer step: torch.compile the "
           "whole train step) so fewer ops are dispatched one by one.";
  }
  return out;
}

// The trace's device timeline shows how much collective time is hidden: where it does, that measured
// figure decides, and collectives launched from backward that still wait exposed are not overlap.
bool overlap_measured(const Summary& s) { return s.comm_total_pct && *s.comm_total_pct > 0 && s.comm_overlapped_pct; }

bool overlap_in_place(const Summary& s, const Thresholds& t) {
  if (s.comm_mode == "overlap") return true;
  if (s.comm_total_pct && *s.comm_total_pct > 0 &&
      s.shares.communication_pct / *s.comm_total_pct * 100.0 < t.value(threshold::exposed_communication::unhidden_share_pct))
    return true;
  if (overlap_measured(s)) return false;  // at least unhidden_share_pct of it exposed: not overlapping
  return s.comm_in_backward_pct && *s.comm_in_backward_pct >= t.value(threshold::exposed_communication::in_backward_pct);
}

bool launched_in_backward_but_exposed(const Summary& s, const Thresholds& t) {
  return s.comm_mode != "overlap" && !overlap_in_place(s, t) && s.comm_in_backward_pct &&
         *s.comm_in_backward_pct >= t.value(threshold::exposed_communication::in_backward_pct);
}

std::string overlap_evidence(const Summary& s, const Thresholds& t) {
  if (s.comm_mode == "overlap") {
    return "the run already overlaps (--comm-mode overlap" +
           (s.bucket_mb ? format_text(", --bucket-mb %g", *s.bucket_mb) : std::string()) + ")";
  }
  if (!overlap_measured(s) && s.comm_in_backward_pct &&
      *s.comm_in_backward_pct >= t.value(threshold::exposed_communication::in_backward_pct)) {
    return format_text("collectives already overlap with backward: %.0f %% of the %.3g collective calls per step are "
                       "launched while backward runs (inside autograd::engine::evaluate_function, from DDP's gradient "
                       "hooks)",
                       *s.comm_in_backward_pct, s.collective_calls_per_step.value_or(0));
  }
  return format_text("collectives already overlap with backward: %.1f %% of the step of the %.1f %% in collectives "
                     "is hidden under compute",
                     std::max(0.0, s.comm_total_pct.value_or(0) - s.shares.communication_pct), s.comm_total_pct.value_or(0));
}

std::optional<double> collective_calls(const Summary& s) {
  if (s.collective_calls_per_step) return s.collective_calls_per_step;
  if (s.collectives.empty()) return std::nullopt;
  double calls = 0;
  for (const CollectiveCalls& c : s.collectives) calls += c.calls_per_step;
  return calls;
}

bool workers_in_place(const Summary& s) {
  return (s.loader_workers && *s.loader_workers > 0) || s.loader_iterator == "_MultiProcessingDataLoaderIter";
}

std::string workers_evidence(const Summary& s) {
  if (s.loader_workers && *s.loader_workers > 0) {
    return format_text("the loader already has %lld worker%s", static_cast<long long>(*s.loader_workers),
                       *s.loader_workers == 1 ? "" : "s");
  }
  return "the trace's DataLoader __next__ is " + s.loader_iterator + ": worker processes already build the batches";
}

bool pinned_in_place(const Summary& s) { return s.pin_memory && *s.pin_memory; }

double model_syncs_per_step(const Summary& s) {
  double total = 0;
  for (const ModelSync& m : s.model_syncs) total += m.per_step;
  return total;
}

bool syncs_in_model(const Summary& s) {
  return s.host_syncs_per_step && *s.host_syncs_per_step > 0 && model_syncs_per_step(s) * 2 >= *s.host_syncs_per_step;
}

std::string model_sync_sites(const Summary& s) {
  std::string out;
  for (size_t i = 0; i < s.model_syncs.size() && i < 3; ++i) {
    out += (i ? ", " : "") + s.model_syncs[i].op + " in " + s.model_syncs[i].module +
           format_text(".forward (%.3g per step)", s.model_syncs[i].per_step);
  }
  if (s.model_syncs.size() > 3) out += ", ...";
  return out;
}

std::string model_sync_advice(const Summary& s) {
  const ModelSync& top = s.model_syncs.front();
  return "These synchronisations are in the model's own code, not in the training loop: " + model_sync_sites(s) +
         ". Look in " + top.module + ".forward for what reads a tensor on the host (" + top.op +
         " is .item(), a Python branch on a tensor such as `if mask.any():`, .tolist(), .nonzero() or boolean "
         "indexing): keep the value on the device (torch.where instead of the branch), use the model's option that "
         "skips the check, or compute it once outside the step.";
}

bool bf16_fast(const Summary& s) {
  return !s.on_gpu || s.rocm || !s.compute_capability || *s.compute_capability >= 8.0 - 1e-9;
}

std::string lower_precision_words(const Summary& s) {
  if (bf16_fast(s)) return "torch.autocast with bf16";
  return "torch.autocast with fp16 and a torch.amp.GradScaler (the " + s.device +
         format_text(", compute capability %.1f, has fp16 Tensor Cores but no bf16 fast path)", *s.compute_capability);
}

std::string allocator_calls(const Summary& s) { return s.rocm ? "hipMalloc/hipFree" : "cudaMalloc/cudaFree"; }

Finding make(const char* rule_id, Severity severity, Suspect suspect) {
  Finding f;
  f.rule_id = rule_id;
  f.severity = severity;
  f.suspect = suspect;
  return f;
}

int ranks_here(const Summary& s) { return s.ranks_on_machine.value_or(s.world_size); }

bool oversubscribed(const Summary& s) {
  return !s.on_gpu && ranks_here(s) > 1 && s.intra_op_threads && s.logical_cores > 0 &&
         ranks_here(s) * *s.intra_op_threads > s.logical_cores;
}

Finding slow_steps_finding(const char* rule_id, const Summary& s, const Thresholds& t,
                           const std::vector<size_t>& slow_steps, double excess_ms) {
  const double total = sum(s.step_ms);
  const double saving = total > 0 ? excess_ms / total * 100.0 : 0;
  Finding f = make(
      rule_id,
      saving >= t.value(threshold::slow_steps::moderate_excess_pct) ? Severity::kModerate : Severity::kInfo,
      Suspect::kNone);
  f.times_fired = static_cast<int64_t>(slow_steps.size());
  f.data_points = static_cast<int64_t>(s.step_ms.size());
  f.saving_pct = saving;
  f.step_indices = slow_steps;
  return f;
}

void fired_on_every_step(Finding& f, const Summary& s) { f.times_fired = f.data_points = step_count(s); }

}  // namespace trainlab::rules
