// Rendering of run results for the terminal (see run_report.h).
#include "harness/cli/run_report.h"

#include <iomanip>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/json_text.h"
#include "diagnostics/text_format.h"
#include "harness/report/diagnose_report.h"
#include "core/text.h"
#include "core/text.h"
#include "core/units.h"
#include "harness/report/lab_report.h"

namespace trainlab {

const VariantRecord* bad_input_variant(const RunRecord& record) {
  for (const VariantRecord& v : record.variants) {
    if (!v.ok() && v.error_kind == "input") return &v;
  }
  return nullptr;
}

int run_status(const LabOutcome& outcome) {
  if (bad_input_variant(outcome.record) != nullptr) return kExitBadInput;
  for (const VariantRecord& v : outcome.record.variants) {
    // The lab's compiled variant may be unavailable (no Python side): its reading says so and the
    // other variants stand. Any other failure: results are kept, the status says so.
    if (!v.ok() && !(outcome.record.kind == "baseline" && v.error_kind == "unavailable")) return kExitGateFailed;
  }
  return kExitOk;
}

nlohmann::json run_json(const LabOutcome& outcome) {
  const RunRecord& r = outcome.record;
  const Table variants = variant_table(r);
  return {{"schema_version", 1},
          {"tool", "trainlab"},
          {"kind", r.kind},
          {"run_id", r.run_id},
          {"scenario", r.scenario},
          {"run_dir", outcome.run_dir},
          {"run_record", outcome.run_dir + "/run.json"},
          {"variants", table_rows_json(variants)},
          {"notes", variants.notes},
          {"reading", r.reading}};
}

std::string render_run_markdown(const LabOutcome& outcome) {
  const RunRecord& r = outcome.record;
  std::string out = "**trainlab " + r.kind + "** `" + r.run_id + "` (" + r.scenario + ")\n\n" +
                    render_table_markdown(variant_table(r));
  if (!r.reading.empty()) out += "\n**Reading**\n\n";
  for (const std::string& line : r.reading) out += "- " + line + "\n";
  return out + "\nRun record: " + outcome.run_dir + "/run.json\n";
}

namespace {

// The machines the ranks ran on, where they were several: " on node-a (ranks 0-1), node-b (ranks 2-3)"
// ("" on one machine).
std::string machines_of(const DistributedRun& d) {
  std::map<std::string, std::vector<int>> ranks_by_host;
  for (const RankSummary& r : d.ranks) {
    if (!r.host.empty()) ranks_by_host[r.host].push_back(r.rank);
  }
  std::string machines;
  if (ranks_by_host.size() > 1) {
    for (const auto& [host, ranks] : ranks_by_host) {
      // Consecutive ranks as a range (torchrun's numbering), others one by one.
      const bool consecutive = ranks.back() - ranks.front() + 1 == static_cast<int>(ranks.size());
      std::string listed = std::to_string(ranks.front());
      if (ranks.size() > 1 && consecutive) listed += "-" + std::to_string(ranks.back());
      for (size_t i = 1; i < ranks.size() && !consecutive; ++i) listed += ", " + std::to_string(ranks[i]);
      machines += (machines.empty() ? " on " : ", ") + host + " (rank" + (ranks.size() > 1 ? "s " : " ") + listed + ")";
    }
  }
  return machines;
}

// Data parallel: the process group and how much of the step communication took, one line per variant.
void print_data_parallel(const RunRecord& record) {
  for (const VariantRecord& v : record.variants) {
    if (v.world_size <= 1 || !v.ok() || v.distributed.backend.empty()) continue;
    const VariantAggregate agg = aggregate(v);
    const DistributedRun& d = v.distributed;
    const std::string machines = machines_of(d);
    std::cout << "\nData parallel " << v.spec.name() << ": " << count_noun(v.world_size, "rank") << machines << " (" << d.backend << ", "
              << d.comm_mode << ", " << count_noun(d.buckets, "bucket") << ", "
              << format_text("%.1f", bytes_to_mib(d.gradient_bytes)) << " MiB of gradients): all-reduce "
              << format_text("%.1f", agg.comm_pct) << " % of the step, exposed (the step waiting on it) "
              << format_text("%.1f", agg.phase_pct[static_cast<size_t>(Phase::kCommunication)]) << " %";
    if (d.slowest_rank && d.busy_spread_pct) {
      std::cout << "; ranks' own work differs by " << format_text("%.0f", *d.busy_spread_pct) << " % (slowest rank "
                << *d.slowest_rank << ")";
    }
    std::cout << "\n";
  }
}

// The system sampler's summary, one line per variant.
void print_system_lines(const RunRecord& record) {
  bool first_system_line = true;
  for (const VariantRecord& v : record.variants) {
    if (v.system.empty()) continue;
    // "-" where the run was too short for a rate (utilisation needs two samples).
    auto stat = [&](const char* metric, double MetricSummary::*which, const char* format = "%.0f", double scale = 1.0) {
      const MetricSummary* m = v.system.find(metric);
      return m != nullptr ? format_text(format, m->*which * scale) : std::string("-");
    };
    const MetricSummary* rss = v.system.find("mem.rss_bytes");
    std::cout << (first_system_line ? "\n" : "") << "System " << v.spec.name() << ": process CPU p50 "
              << stat("cpu.process_pct", &MetricSummary::p50) << " % (p95 " << stat("cpu.process_pct", &MetricSummary::p95)
              << " %), machine CPU p95 " << stat("cpu.total_pct", &MetricSummary::p95) << " %, IO wait p95 "
              << stat("cpu.iowait_pct", &MetricSummary::p95, "%.1f") << " %, RSS max "
              << stat("mem.rss_bytes", &MetricSummary::max, "%.0f", 1.0 / kBytesPerMiB) << " MiB ("
              << count_noun(rss != nullptr ? rss->samples : 0, "sample") << " every " << v.system.interval_ms << " ms, "
              << v.system.missed_ticks << " missed; the sampler took " << format_text("%.2f", v.system.cost_pct_of_core)
              << " % of a core)\n";
    first_system_line = false;
  }
}

// One variant's profiled window: its steps and trace, what an event cost, and where to open the trace.
// std::fixed and the precision set for the window's overhead stay on std::cout afterwards, as before.
void print_profile_window(const std::string& run_dir, const VariantRecord& v) {
  const ProfileWindow& p = v.profile;
  // Steps are numbered as the trace's ProfilerStep#N and the report number them: from 0, warm-up included.
  const int64_t first_step = v.spec.warmup_steps + p.window_start;
  std::cout << "\nProfile " << v.spec.name() << ": " << count_noun(p.events, "event") << " in steps " << first_step << ".."
            << first_step + p.window_steps - 1 << " (ProfilerStep#" << first_step << "..#"
            << first_step + p.window_steps - 1 << "; steps count from 0, the " << v.spec.warmup_steps
            << " warm-up steps included), trace " << trace_path_in_run(run_dir, v) << " ("
            << p.trace_bytes_per_step / 1024 << " KiB per step)";
  if (p.window_overhead_pct) {
    std::cout << ", window steps " << std::showpos << std::fixed << std::setprecision(1) << *p.window_overhead_pct
              << std::noshowpos << " % vs outside";
  }
  std::cout << "\n";
  // What an event cost: the calibration's figure, the run's own step times, the buffer write.
  std::cout << "  profiler cost per event ("
            << (p.op_sample < 1 ? format_text("%g", 100 * p.op_sample) + " % of ops sampled, " : std::string())
            << format_text("%.0f", p.events_per_step) << " events per step): " << format_text("%.0f", p.event_cost_ns) << " ns measured on a calibration step";
  if (p.event_cost_from_steps_ns) {
    std::cout << ", " << format_text("%.0f", *p.event_cost_from_steps_ns) << " ns from the steps in vs outside the window";
  }
  std::cout << "; " << format_text("%.0f", p.record_cost_ns) << " ns of it writing the buffer\n";
  for (const std::string& note : p.notes) std::cout << "  " << note << "\n";
  const std::string trace = trace_path_in_run(run_dir, v);
  const std::string folder = trace.substr(0, trace.find_last_of('/'));
  std::cout << "  open it in Perfetto (ui.perfetto.dev) or chrome://tracing; the ranks' folder in Holistic Trace "
               "Analysis (TraceAnalysis(trace_dir=\""
            << folder << "\")) or TensorBoard (tensorboard --logdir " << folder.substr(0, folder.find_last_of('/'))
            << ", with torch-tb-profiler)\n";
}

// The terminal report: the variants' table, the reading, data parallel, system and profile lines.
void print_run_text(const LabOutcome& outcome) {
  std::cout << "\n" << render_variant_table(outcome.record);
  if (!outcome.record.reading.empty()) {
    std::cout << "\nReading:\n";
    for (const std::string& line : outcome.record.reading) std::cout << "  - " << line << "\n";
  }
  print_data_parallel(outcome.record);
  print_system_lines(outcome.record);
  for (const VariantRecord& v : outcome.record.variants) {
    if (v.profile.empty()) continue;
    print_profile_window(outcome.run_dir, v);
  }
  std::cout << "\nRun record: " << outcome.run_dir << "/run.json\n";
}

}  // namespace

// Prints the run in the format asked for (JSON with `extra` merged in) and returns its exit status.
int report_run(const LabOutcome& outcome, OutputFormat format, const nlohmann::json& extra) {
  if (outcome.quiet) return run_status(outcome);  // a launch's peer rank: rank 0 reports the run
  if (const VariantRecord* bad = bad_input_variant(outcome.record)) {
    std::cerr << "trainlab: error: " << bad->error << "\n";
    return kExitBadInput;
  }
  if (format == OutputFormat::kJson) {
    nlohmann::json document = run_json(outcome);
    document.update(extra);
    std::cout << json_text(document, 2) << "\n";
    return run_status(outcome);
  }
  if (format == OutputFormat::kMarkdown) {
    std::cout << render_run_markdown(outcome);
    return run_status(outcome);
  }
  print_run_text(outcome);
  return run_status(outcome);
}

int report_diagnosis(const DiagnoseOutcome& outcome, OutputFormat format) {
  std::cout << render_diagnoses(outcome, format);
  if (outcome.gate_failed) {
    for (const std::string& reason : outcome.gate_reasons) std::cerr << "trainlab: gate: " << reason << "\n";
    return kExitGateFailed;
  }
  return kExitOk;
}

std::string render_sweep_report(const SweepOutcome& outcome, OutputFormat format) {
  const RunRecord& r = outcome.record;
  const std::string chart = r.details.sweep && !r.details.sweep->chart.empty()
                                ? outcome.run_dir + "/" + r.details.sweep->chart
                                : std::string();
  if (format == OutputFormat::kJson) {
    return json_text({{"schema_version", 1},
                      {"tool", "trainlab"},
                      {"kind", "sweep"},
                      {"run_id", r.run_id},
                      {"scenario", r.scenario},
                      {"run_dir", outcome.run_dir},
                      {"run_record", outcome.run_dir + "/run.json"},
                      {"points", table_rows_json(outcome.table)},
                      {"notes", outcome.table.notes},
                      {"reading", r.reading},
                      {"chart", chart.empty() ? nlohmann::json(nullptr) : nlohmann::json(chart)}},
                     2) +
           "\n";
  }
  const bool markdown = format == OutputFormat::kMarkdown;
  std::string out = markdown ? "**trainlab sweep** `" + r.run_id + "` (" + r.scenario + ")\n\n" +
                                   render_table_markdown(outcome.table) + "\n**Reading**\n\n"
                             : "\n" + render_table_text(outcome.table) + "\nReading:\n";
  for (const std::string& line : r.reading) out += (markdown ? "- " : "  - ") + line + "\n";
  if (!chart.empty()) out += "\nChart: " + chart + "\n";
  return out + (markdown ? "\n" : "") + "Run record: " + outcome.run_dir + "/run.json\n";
}

}  // namespace trainlab
