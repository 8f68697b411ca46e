// The lab's variant table (see lab_report.h): a row per variant's repetition, notes for the failed,
// diverged, superseded and disturbed ones.
#include "harness/report/lab_report.h"

#include <algorithm>
#include <cmath>

#include "core/text.h"
#include "core/units.h"

namespace trainlab {

// Whether the first loss of v read as a number (steps whose loss was not read keep 0) is NaN or Inf.
bool first_loss_not_finite(const VariantRecord& v) {
  const auto first_read = std::find_if(v.steps.begin(), v.steps.end(), [](const StepRecord& s) { return s.loss != 0.0; });
  return first_read != v.steps.end() && !std::isfinite(first_read->loss);
}

namespace {
const VariantRecord* find_variant(const RunRecord& record, const std::string& name) {
  for (const VariantRecord& v : record.variants) {
    if (v.spec.name() == name && v.disturbed.empty()) return &v;
  }
  return nullptr;
}

// Whether every recorded loss of v is finite.
bool losses_finite(const VariantRecord& v) {
  return std::all_of(v.steps.begin(), v.steps.end(), [](const StepRecord& s) { return std::isfinite(s.loss); });
}

// "fp32: the loss became NaN at step 7 ...": a diverged run is a finding, and its steps stay. A
// compiled variant whose loss is not finite from its first step while the same model run eagerly
// at the same precision stays finite has not diverged: its compiled code computes the wrong thing.
std::string divergence_note(const std::string& label, const VariantRecord& v, const RunRecord& record) {
  for (const StepRecord& step : v.steps) {
    if (std::isfinite(step.loss)) continue;
    const std::string what = std::isnan(step.loss) ? "NaN" : step.loss > 0 ? "+Inf" : "-Inf";
    const auto eager_twin = std::find_if(record.variants.begin(), record.variants.end(), [&](const VariantRecord& e) {
      return e.ok() && !e.spec.compiled && e.spec.precision == v.spec.precision && !e.steps.empty() &&
             losses_finite(e);
    });
    if (v.spec.compiled && first_loss_not_finite(v) && eager_twin != record.variants.end()) {
      return label + ": the loss is " + what + " from its first step while " + eager_twin->spec.name() +
             " (the same model, not compiled) stays finite: the compiled code computes the wrong thing here, and its "
             "step times are not the model's";
    }
    return label + ": the loss became " + what + " at step " + std::to_string(step.index) +
           " (training diverged: lower the learning rate or clip gradients); kept: all " +
           count_noun(static_cast<int64_t>(v.steps.size()), "step") + ", and their times stand";
  }
  return "";
}
}  // namespace

Table variant_table(const RunRecord& record) {
  Table table;
  table.columns = {{"variant", "variant"},         {"samples/s", "samples_per_s"}, {"step p50 ms", "step_p50_ms"},
                   {"step p95 ms", "step_p95_ms"}, {"peak MiB", "peak_mib"},       {"ops/step", "ops_per_step"},
                   {"data wait", "data_wait_pct"}, {"vs fp32", "vs_fp32_x"}};
  const VariantRecord* fp32 = find_variant(record, "fp32");
  const double fp32_sps = (fp32 && fp32->ok()) ? aggregate(*fp32).samples_per_s : 0;
  for (const VariantRecord& v : record.variants) {
    if (!v.ok()) {
      const bool unavailable = v.error_kind == "unavailable";
      table.rows.push_back({text_cell(v.spec.name()), missing_cell(unavailable ? "not measured" : "error"),
                            missing_cell(), missing_cell(), missing_cell(), missing_cell(), missing_cell(),
                            missing_cell()});
      table.notes.push_back((unavailable ? "not measured: " : "error in ") + v.spec.name() + ": " + v.error);
      continue;
    }
    const VariantAggregate agg = aggregate(v);
    const bool repeated = std::any_of(record.variants.begin(), record.variants.end(),
                                      [](const VariantRecord& r) { return r.repetition > 0; });
    const std::string label = (v.label.empty() ? "" : v.label + " ") + v.spec.name() +
                              (repeated ? " #" + std::to_string(v.repetition + 1) : "");
    const double data_wait_pct = agg.phase_pct[static_cast<size_t>(Phase::kDataWait)];
    table.rows.push_back({text_cell(label), number_cell(agg.samples_per_s, "%.1f"),
                          number_cell(agg.step_ms_p50, "%.2f"), number_cell(agg.step_ms_p95, "%.2f"),
                          number_cell(bytes_to_mib(v.peak_memory_bytes), "%.0f"), number_cell(v.ops_per_step, "%.0f"),
                          {format_text("%.1f %%", data_wait_pct), data_wait_pct},
                          fp32_sps > 0 ? number_cell(agg.samples_per_s / fp32_sps, "%.2fx") : missing_cell()});
    if (const std::string note = divergence_note(label, v, record); !note.empty()) table.notes.push_back(note);
    if (!v.superseded.empty()) {
      table.rows.back().front() = text_cell(label + " (superseded)");
      table.notes.push_back(label + " left out of every figure: " + v.superseded);
    } else if (!v.disturbed.empty()) {
      table.rows.back().front() = text_cell(label + " (disturbed)");
      table.notes.push_back(label + " left out of every figure and run again: " + v.disturbed + " while it was measured");
    } else if (!v.disturbed_kept.empty()) {
      table.rows.back().front() = text_cell(label + " (under load)");
      table.notes.push_back(label + " kept, measured under load: " + v.disturbed_kept);
    }
  }
  return table;
}

LabVariantFigures lab_variant_figures(const RunRecord& record, const std::string& name) {
  LabVariantFigures figures;
  double ops_sum = 0;
  int ops_count = 0;
  for (const VariantRecord& v : record.variants) {
    if (v.spec.name() == name && !v.ok() && v.error_kind == "unavailable") figures.unavailable = v.error;
    if (v.spec.name() != name || !v.counts()) continue;  // a disturbed repetition was run again
    const VariantAggregate agg = aggregate(v);
    if (agg.measured_steps <= 0) continue;
    figures.ok = true;
    if (first_loss_not_finite(v)) figures.loss_not_finite_from_start = true;
    figures.samples_per_s.push_back(agg.samples_per_s);
    figures.data_wait_pct.push_back(agg.phase_pct[static_cast<size_t>(Phase::kDataWait)]);
    figures.compute_pct.push_back(agg.phase_pct[static_cast<size_t>(Phase::kForward)] +
                                  agg.phase_pct[static_cast<size_t>(Phase::kBackward)] +
                                  agg.phase_pct[static_cast<size_t>(Phase::kOptimizer)]);
    figures.step_ms.push_back(agg.step_ms_mean);
    if (v.ops_per_step > 0) {
      ops_sum += v.ops_per_step;
      ++ops_count;
    }
    if (!v.compile_info.empty()) {
      figures.compile_method = v.compile_info.method;
      // A job's torch.compile reports no fusion count (the kernels stay inside its process).
      if (v.compile_info.method != "torch.compile") figures.fused_groups = v.compile_info.fusion_groups;
      figures.compiler_workaround = v.compile_info.compiler_workaround;
    }
  }
  if (ops_count > 0) figures.ops_per_step = ops_sum / ops_count;
  return figures;
}

std::string render_variant_table(const RunRecord& record) { return render_table_text(variant_table(record)); }

}  // namespace trainlab
