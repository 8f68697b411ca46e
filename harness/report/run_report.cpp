// What a run shows (see run_report.h): its JSON document, markdown and terminal text, and the
// sweep's, around the variant table and the sweep table.
#include "harness/report/run_report.h"

#include <iomanip>
#include <map>
#include <string>
#include <vector>

#include "core/json_text.h"
#include "core/text.h"
#include "core/units.h"
#include "diagnostics/text_format.h"
#include "harness/report/lab_report.h"

namespace trainlab {

nlohmann::json run_json(const RunRecord& r, const std::string& run_dir) {
  const Table variants = variant_table(r);
  return output_document(r.kind, {{"run_id", r.run_id},
                                  {"scenario", r.scenario},
                                  {"run_dir", run_dir},
                                  {"run_record", run_dir + "/run.json"},
                                  {"variants", table_rows_json(variants)},
                                  {"notes", variants.notes},
                                  {"reading", r.reading}});
}

std::string render_run_markdown(const RunRecord& r, const std::string& run_dir) {
  std::string out = "**trainlab " + r.kind + "** `" + r.run_id + "` (" + r.scenario + ")\n\n" +
                    render_table_markdown(variant_table(r));
  if (!r.reading.empty()) out += "\n**Reading**\n\n";
  for (const std::string& line : r.reading) out += "- " + line + "\n";
  return out + "\nRun record: " + run_dir + "/run.json\n";
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
void write_data_parallel(const RunRecord& record, std::ostream& out) {
  for (const VariantRecord& v : record.variants) {
    if (v.world_size <= 1 || !v.ok() || v.distributed.backend.empty()) continue;
    const VariantAggregate agg = aggregate(v);
    const DistributedRun& d = v.distributed;
    const std::string machines = machines_of(d);
    out << "\nData parallel " << v.spec.name() << ": " << count_noun(v.world_size, "rank") << machines << " (" << d.backend << ", "
              << d.comm_mode << ", " << count_noun(d.buckets, "bucket") << ", "
              << format_text("%.1f", bytes_to_mib(d.gradient_bytes)) << " MiB of gradients): all-reduce "
              << format_text("%.1f", agg.comm_pct) << " % of the step, exposed (the step waiting on it) "
              << format_text("%.1f", agg.phase_pct[static_cast<size_t>(Phase::kCommunication)]) << " %";
    if (d.slowest_rank && d.busy_spread_pct) {
      out << "; ranks' own work differs by " << format_text("%.0f", *d.busy_spread_pct) << " % (slowest rank "
                << *d.slowest_rank << ")";
    }
    out << "\n";
  }
}

// The system sampler's summary, one line per variant.
void write_system_lines(const RunRecord& record, std::ostream& out) {
  bool first_system_line = true;
  for (const VariantRecord& v : record.variants) {
    if (v.system.empty()) continue;
    // "-" where the run was too short for a rate (utilisation needs two samples).
    auto stat = [&](const char* metric, double MetricSummary::*which, const char* format = "%.0f", double scale = 1.0) {
      const MetricSummary* m = v.system.find(metric);
      return m != nullptr ? format_text(format, m->*which * scale) : std::string("-");
    };
    const MetricSummary* rss = v.system.find("mem.rss_bytes");
    out << (first_system_line ? "\n" : "") << "System " << v.spec.name() << ": process CPU p50 "
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
// std::fixed and the precision set for the window's overhead stay on `out` afterwards, as before.
void write_profile_window(const std::string& run_dir, const VariantRecord& v, std::ostream& out) {
  const ProfileWindow& p = v.profile;
  // Steps are numbered as the trace's ProfilerStep#N and the report number them: from 0, warm-up included.
  const int64_t first_step = v.spec.warmup_steps + p.window_start;
  out << "\nProfile " << v.spec.name() << ": " << count_noun(p.events, "event") << " in steps " << first_step << ".."
            << first_step + p.window_steps - 1 << " (ProfilerStep#" << first_step << "..#"
            << first_step + p.window_steps - 1 << "; steps count from 0, the " << v.spec.warmup_steps
            << " warm-up steps included), trace " << trace_path_in_run(run_dir, v) << " ("
            << p.trace_bytes_per_step / 1024 << " KiB per step)";
  if (p.window_overhead_pct) {
    out << ", window steps " << std::showpos << std::fixed << std::setprecision(1) << *p.window_overhead_pct
              << std::noshowpos << " % vs outside";
  }
  out << "\n";
  // What an event cost: the calibration's figure, the run's own step times, the buffer write.
  out << "  profiler cost per event ("
            << (p.op_sample < 1 ? format_text("%g", 100 * p.op_sample) + " % of ops sampled, " : std::string())
            << format_text("%.0f", p.events_per_step) << " events per step): " << format_text("%.0f", p.event_cost_ns) << " ns measured on a calibration step";
  if (p.event_cost_from_steps_ns) {
    out << ", " << format_text("%.0f", *p.event_cost_from_steps_ns) << " ns from the steps in vs outside the window";
  }
  out << "; " << format_text("%.0f", p.record_cost_ns) << " ns of it writing the buffer\n";
  for (const std::string& note : p.notes) out << "  " << note << "\n";
  const std::string trace = trace_path_in_run(run_dir, v);
  const std::string folder = trace.substr(0, trace.find_last_of('/'));
  out << "  open it in Perfetto (ui.perfetto.dev) or chrome://tracing; the ranks' folder in Holistic Trace "
               "Analysis (TraceAnalysis(trace_dir=\""
            << folder << "\")) or TensorBoard (tensorboard --logdir " << folder.substr(0, folder.find_last_of('/'))
            << ", with torch-tb-profiler)\n";
}

// A job's own lines: the command and its Python, the loaders its code built, each process of its
// tree, how it ended, and its trace.
void write_job_lines(const std::string& run_dir, const VariantRecord& v, std::ostream& out) {
  const JobInfo& job = *v.job;
  std::string command;
  for (const std::string& a : job.command) command += (command.empty() ? "" : " ") + a;
  out << "\nJob: " << command << "\n  " << (job.interpreter.empty() ? "python ?" : job.interpreter)
      << (job.python_version.empty() ? "" : " (Python " + job.python_version + ")") << ", torch "
      << (job.torch_version.empty() ? "not imported" : job.torch_version) << ", on " << v.device
      << (job.device_name.empty() ? "" : " (" + job.device_name + ")") << "; " << count_noun(job.world_size, "rank")
      << "; ended: " << job.ended << (job.ended == "failed" ? " (" + v.error + ")" : "") << "\n";
  for (const JobLoader& l : job.loaders) {
    out << "  DataLoader at " << l.file << ":" << l.line << (job.world_size > 1 ? " (rank " + std::to_string(l.rank) + ")" : "")
        << ": num_workers=" << l.num_workers;
    if (l.prefetch_factor) out << ", prefetch_factor=" << *l.prefetch_factor;
    out << ", pin_memory=" << (l.pin_memory ? "True" : "False") << ", persistent_workers="
        << (l.persistent_workers ? "True" : "False");
    if (l.batch_size) out << ", batch_size=" << *l.batch_size;
    if (!l.dataset.empty()) out << "; dataset " << l.dataset;
    if (l.training && *l.training) out << " (the training loader)";
    if (!l.overridden.empty() && l.overridden != "{}") out << "; replaced: " << l.overridden;
    out << "\n";
  }
  const size_t shown = std::min<size_t>(job.processes.size(), 12);
  for (size_t i = 0; i < shown; ++i) {
    const JobProcess& p = job.processes[i];
    out << "  process " << p.pid << " " << p.label << ": CPU " << format_text("%.2f", p.cpu_s) << " s, peak RSS "
        << format_text("%.0f", bytes_to_mib(p.peak_rss_bytes)) << " MiB, read "
        << format_text("%.1f", bytes_to_mib(p.read_bytes)) << " MiB\n";
  }
  if (job.processes.size() > shown) out << "  ... " << job.processes.size() - shown << " more processes in run.json\n";
  out << "  the whole tree: peak RSS " << format_text("%.0f", bytes_to_mib(job.tree_peak_rss_bytes)) << " MiB";
  if (v.disturbance.other_cpu_pct || v.disturbance.runqueue_wait_pct) {
    out << "; while its steps ran, other processes took "
        << (v.disturbance.other_cpu_pct ? format_text("%.0f", *v.disturbance.other_cpu_pct) : std::string("?"))
        << " % of the CPU, its threads waited for a CPU "
        << (v.disturbance.runqueue_wait_pct ? format_text("%.0f", *v.disturbance.runqueue_wait_pct) : std::string("?"))
        << " % of the time";
  }
  out << (v.disturbed_kept.empty() ? "" : " (disturbed: " + v.disturbed_kept + ")") << "\n";
  if (!v.profile.trace.empty()) {
    out << "  trace of steps " << v.profile.window_start << ".." << v.profile.window_start + v.profile.window_steps - 1
        << ": " << trace_path_in_run(run_dir, v) << " (open it in Perfetto, ui.perfetto.dev, or chrome://tracing)\n";
  }
  for (const std::string& w : job.warnings) out << "  note: " << w << "\n";
}

// The runs of a comparing command on a job (the lab, the sweep, an A/B: job_variants.h): the job
// once, then a line a run (how it ended, the tree's peak, what was changed inside it or refused).
void write_job_runs(const RunRecord& record, std::ostream& out) {
  const VariantRecord& first = record.variants.front();
  const JobInfo& job = *first.job;
  std::string command;
  for (const std::string& a : job.command) command += (command.empty() ? "" : " ") + a;
  out << "\nJob: " << command << "\n  " << (job.interpreter.empty() ? "python ?" : job.interpreter)
      << ", torch " << (job.torch_version.empty() ? "not imported" : job.torch_version) << ", on " << first.device
      << "; " << count_noun(record.variants.size(), "run") << ", each in its folder jobs/<run>/ (output.log, the recorder's files)\n";
  for (const VariantRecord& v : record.variants) {
    std::string name = v.label.empty() ? v.spec.name() : v.label;
    if (record.kind == "sweep") name = v.spec.loader_label();
    out << "  " << name << " #" << v.repetition + 1 << ": ";
    if (!v.job) {
      out << (v.ok() ? "measured" : v.error) << "\n";
      continue;
    }
    out << v.job->ended << (v.ok() ? "" : " (" + v.error + ")") << ", tree peak "
        << format_text("%.0f", bytes_to_mib(v.job->tree_peak_rss_bytes)) << " MiB";
    if (!v.disturbed.empty()) out << "; left out, disturbed: " << v.disturbed;
    if (!v.disturbed_kept.empty()) out << "; disturbed: " << v.disturbed_kept;
    for (const std::string& w : v.job->warnings) {
      const size_t colon = w.find(": ");
      const std::string words = colon == std::string::npos ? w : w.substr(colon + 2);
      if (words.find("applied") != std::string::npos || words.find("override failed") != std::string::npos)
        out << "; " << words;
    }
    out << "\n";
  }
}

}  // namespace

void write_run_text(const RunRecord& record, const std::string& run_dir, std::ostream& out) {
  out << "\n" << render_variant_table(record);
  if (!record.reading.empty()) {
    out << "\nReading:\n";
    for (const std::string& line : record.reading) out << "  - " << line << "\n";
  }
  write_data_parallel(record, out);
  const bool job = !record.variants.empty() && record.variants.front().job;
  if (!job) write_system_lines(record, out);
  if (job && record.variants.size() > 1) write_job_runs(record, out);
  for (const VariantRecord& v : record.variants) {
    if (v.job) {
      if (record.variants.size() == 1) write_job_lines(run_dir, v, out);
      continue;
    }
    if (v.profile.empty()) continue;
    write_profile_window(run_dir, v, out);
  }
  out << "\nRun record: " << run_dir << "/run.json\n";
}

std::string render_sweep_report(const SweepOutcome& outcome, OutputFormat format) {
  const RunRecord& r = outcome.record;
  const std::string chart = r.details.sweep && !r.details.sweep->chart.empty()
                                ? outcome.run_dir + "/" + r.details.sweep->chart
                                : std::string();
  if (format == OutputFormat::kJson) {
    return json_text(output_document("sweep", {{"run_id", r.run_id},
                                               {"scenario", r.scenario},
                                               {"run_dir", outcome.run_dir},
                                               {"run_record", outcome.run_dir + "/run.json"},
                                               {"points", table_rows_json(outcome.table)},
                                               {"notes", outcome.table.notes},
                                               {"reading", r.reading},
                                               {"chart", chart.empty() ? nlohmann::json(nullptr)
                                                                       : nlohmann::json(chart)}}),
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
