// Rendering of run results for the terminal (see run_report.h).
#include "harness/cli/run_report.h"

#include <iomanip>
#include <iostream>

#include "core/errors.h"
#include "diagnostics/text_format.h"
#include "harness/runner/text_table.h"
#include "core/text.h"
#include "core/units.h"

namespace trainlab {

const VariantRecord* bad_input_variant(const RunRecord& record) {
  for (const VariantRecord& v : record.variants) {
    if (!v.ok() && v.error_kind == "input") return &v;
  }
  return nullptr;
}

int report_run(const LabOutcome& outcome) {
  if (const VariantRecord* bad = bad_input_variant(outcome.record)) {
    std::cerr << "trainlab: error: " << bad->error << "\n";
    return kExitBadInput;
  }
  std::cout << "\n" << render_variant_table(outcome.record);
  if (!outcome.record.reading.empty()) {
    std::cout << "\nReading:\n";
    for (const std::string& line : outcome.record.reading) std::cout << "  - " << line << "\n";
  }
  // Data parallel: the process group and how much of the step communication took.
  for (const VariantRecord& v : outcome.record.variants) {
    if (v.world_size <= 1 || !v.ok() || v.distributed.backend.empty()) continue;
    const VariantAggregate agg = aggregate(v);
    const DistributedRun& d = v.distributed;
    std::cout << "\nData parallel " << v.spec.name() << ": " << count_noun(v.world_size, "rank") << " (" << d.backend << ", "
              << d.comm_mode << ", " << count_noun(d.buckets, "bucket") << ", "
              << fmt("%.1f", bytes_to_mib(d.gradient_bytes)) << " MiB of gradients): all-reduce "
              << fmt("%.1f", agg.comm_pct) << " % of the step, exposed (the step waiting on it) "
              << fmt("%.1f", agg.phase_pct[static_cast<size_t>(Phase::kCommunication)]) << " %";
    if (d.slowest_rank && d.busy_spread_pct) {
      std::cout << "; ranks' own work differs by " << fmt("%.0f", *d.busy_spread_pct) << " % (slowest rank "
                << *d.slowest_rank << ")";
    }
    std::cout << "\n";
  }
  // The system sampler's summary, one line per variant.
  bool first_system_line = true;
  for (const VariantRecord& v : outcome.record.variants) {
    if (v.system.empty()) continue;
    // "-" where the run was too short for a rate (utilisation needs two samples).
    auto stat = [&](const char* metric, double MetricSummary::*which, const char* format = "%.0f", double scale = 1.0) {
      const MetricSummary* m = v.system.find(metric);
      return m != nullptr ? fmt(format, m->*which * scale) : std::string("-");
    };
    const MetricSummary* rss = v.system.find("mem.rss_bytes");
    std::cout << (first_system_line ? "\n" : "") << "System " << v.spec.name() << ": process CPU p50 "
              << stat("cpu.process_pct", &MetricSummary::p50) << " % (p95 " << stat("cpu.process_pct", &MetricSummary::p95)
              << " %), machine CPU p95 " << stat("cpu.total_pct", &MetricSummary::p95) << " %, IO wait p95 "
              << stat("cpu.iowait_pct", &MetricSummary::p95, "%.1f") << " %, RSS max "
              << stat("mem.rss_bytes", &MetricSummary::max, "%.0f", 1.0 / kBytesPerMiB) << " MiB ("
              << count_noun(rss != nullptr ? rss->samples : 0, "sample") << " every " << v.system.interval_ms << " ms, "
              << v.system.missed_ticks << " missed; the sampler took " << fmt("%.2f", v.system.cost_pct_of_core)
              << " % of a core)\n";
    first_system_line = false;
  }
  for (const VariantRecord& v : outcome.record.variants) {
    const ProfileWindow& p = v.profile;
    if (p.empty()) continue;
    std::cout << "\nProfile " << v.spec.name() << ": " << count_noun(p.events, "event") << " in steps " << p.window_start << ".."
              << p.window_start + p.window_steps - 1 << " of the measured ones, trace " << outcome.run_dir
              << "/variants/" << p.trace << " (" << p.trace_bytes_per_step / 1024 << " KiB per step)";
    if (p.window_overhead_pct) {
      std::cout << ", window steps " << std::showpos << std::fixed << std::setprecision(1) << *p.window_overhead_pct
                << std::noshowpos << " % vs outside";
    }
    std::cout << "\n";
    // What an event cost: the calibration's figure, the run's own step times, the buffer write.
    std::cout << "  profiler cost per event ("
              << (p.op_sample < 1 ? fmt("%g", 100 * p.op_sample) + " % of ops sampled, " : std::string())
              << fmt("%.0f", p.events_per_step) << " events per step): " << fmt("%.0f", p.event_cost_ns) << " ns measured on a calibration step";
    if (p.event_cost_from_steps_ns) {
      std::cout << ", " << fmt("%.0f", *p.event_cost_from_steps_ns) << " ns from the steps in vs outside the window";
    }
    std::cout << "; " << fmt("%.0f", p.record_cost_ns) << " ns of it writing the buffer\n";
    for (const std::string& note : p.notes) std::cout << "  " << note << "\n";
  }
  std::cout << "\nRun record: " << outcome.run_dir << "/run.json\n";
  for (const VariantRecord& v : outcome.record.variants) {
    // The lab's compiled variant may be unavailable (no Python side): its reading says so and the
    // other variants stand. Any other failure: results are kept, the status says so.
    if (!v.ok() && !(outcome.record.kind == "baseline" && v.error_kind == "unavailable")) return kExitGateFailed;
  }
  return kExitOk;
}

int report_diagnosis(const DiagnoseOutcome& outcome) {
  for (const Diagnosis& d : outcome.diagnoses) std::cout << render_diagnosis_text(d) << "\n";
  std::cout << "Diagnosis: " << outcome.out_dir << "/diagnosis.json, report " << outcome.out_dir << "/report.html\n";
  if (outcome.gate_failed) {
    for (const std::string& reason : outcome.gate_reasons) std::cerr << "trainlab: gate: " << reason << "\n";
    return kExitGateFailed;
  }
  return kExitOk;
}

}  // namespace trainlab
