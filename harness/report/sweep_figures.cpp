// A sweep point's labels and figures (see sweep_figures.h).
#include "harness/report/sweep_figures.h"

#include <algorithm>

#include "core/statistics.h"

namespace trainlab {

std::string sweep_point_label(const VariantSpec& spec, bool with_batch) {
  return spec.loader_label() + (with_batch ? " batch=" + std::to_string(spec.batch_size) : "");
}

SweepFigures sweep_figures_of(const VariantRecord& record) {
  SweepFigures f;
  f.workers = record.spec.workers;
  f.prefetch = record.spec.workers > 0 ? record.spec.prefetch : 0;
  f.pin_memory = record.spec.pin_memory;
  f.persistent_workers = record.spec.persistent_workers;
  f.batch_size = record.spec.batch_size;
  if (!record.ok()) return f;
  const VariantAggregate agg = aggregate(record);
  f.ok = agg.measured_steps > 0;
  f.samples_per_s = agg.samples_per_s;
  f.data_wait_pct = agg.phase_pct[static_cast<size_t>(Phase::kDataWait)];
  f.cpu_util_pct = record.cpu_util_pct;
  f.samples_per_s_min = f.samples_per_s_max = f.samples_per_s;
  f.round_samples_per_s = {f.samples_per_s};
  return f;
}

// A point's rounds as one: the median of each figure over the rounds that completed, and the
// range of their throughput.
SweepFigures median_of_rounds(const std::vector<SweepFigures>& rounds) {
  SweepFigures f = rounds.front();
  std::vector<double> samples_per_s, data_wait_pct, cpu_util_pct;
  f.round_samples_per_s.clear();
  for (const SweepFigures& r : rounds) {
    f.round_samples_per_s.push_back(r.ok ? r.samples_per_s : 0.0);
    if (!r.ok) continue;
    samples_per_s.push_back(r.samples_per_s);
    data_wait_pct.push_back(r.data_wait_pct);
    cpu_util_pct.push_back(r.cpu_util_pct);
  }
  f.ok = !samples_per_s.empty();
  if (!f.ok) return f;
  f.samples_per_s = stats::median(samples_per_s);
  f.data_wait_pct = stats::median(data_wait_pct);
  f.cpu_util_pct = stats::median(cpu_util_pct);
  f.samples_per_s_min = *std::min_element(samples_per_s.begin(), samples_per_s.end());
  f.samples_per_s_max = *std::max_element(samples_per_s.begin(), samples_per_s.end());
  return f;
}

std::string sweep_figures_label(const SweepFigures& f, bool with_batch) {
  std::string label = "workers=" + std::to_string(f.workers);
  if (f.workers > 0) label += " prefetch=" + std::to_string(f.prefetch);
  label += std::string(" pin=") + (f.pin_memory ? "on" : "off");
  if (f.workers > 0 && !f.persistent_workers) label += " restart";
  if (with_batch) label += " batch=" + std::to_string(f.batch_size);
  return label;
}


}  // namespace trainlab
