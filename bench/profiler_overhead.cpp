// What the profiler costs, measured in one invocation: a scenario (recsys by default) run in four
// modes, each variant its own child process, interleaved over rounds (the order rotates each round)
// so drift on a shared machine hits every mode alike:
//   none     no sampler, no window
//   none-2   the same again: the A/A control, i.e. the noise floor of the comparison
//   sampler  the system sampler alone (as every run has it by default)
//   window   sampler + the capture window (ops, phases, annotations, trace)
// Per round it pairs each mode with that round's `none` and states a cost (+ = slower): the whole
// measured loop's time per sample, and for `window` the median step time of the window's steps
// against the same steps of `none`. Prints the per-round figures, the medians, the sampler's own measured CPU cost and the
// trace size per step, and writes overhead.json into a run folder.
//
//   trainlab_profiler_overhead [--scenario recsys] [--rounds 5] [--steps 60] [--window 5:10]
//                              [--interval-ms 500] [--results results]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bench_main.h"
#include "core/errors.h"
#include "core/run_record.h"
#include "core/statistics.h"
#include "core/variant.h"
#include "harness/process/child_process.h"
#include "harness/runner/lab.h"
#include "core/text.h"
#include "core/output_format.h"
#include "harness/runner/variant_runner.h"
#include "harness/train/training_loop.h"
#include "scenarios/registry.h"
#include "core/units.h"

namespace trainlab {
namespace {

const std::vector<std::string> kModes = {"none", "none-2", "sampler", "window"};

VariantSpec mode_spec(const VariantSpec& base, const std::string& mode) {
  VariantSpec spec = base;
  spec.system_sampler = mode == "sampler" || mode == "window";
  spec.profile = mode == "window";
  return spec;
}

// Median measured step time (ms) over the steps whose index lies in [first, last].
double median_step_ms(const VariantRecord& record, int64_t first, int64_t last) {
  std::vector<double> ms;
  for (const StepRecord& s : record.steps) {
    if (!s.warmup && s.index >= first && s.index <= last) ms.push_back(ns_to_ms(s.step_ns));
  }
  return ms.empty() ? std::nan("") : stats::median(ms);
}

std::string pct(double ratio) { return format_text("%+.2f %%", 100.0 * (ratio - 1.0)); }

int bench_main(int argc, char** argv) {
  set_trainer_executable("/proc/self/exe");  // this binary is its own training child (`__variant` below)
  CLI::App app{"trainlab_profiler_overhead: the profiler's cost on a scenario, in one invocation"};
  std::string scenario = "recsys", window = "5:10", results_dir = "results";
  int rounds = 5;
  int64_t steps = 60, interval_ms = 500;
  app.add_option("--scenario", scenario, "built-in scenario (default recsys)");
  app.add_option("--rounds", rounds, "rounds of the four modes (default 5)");
  app.add_option("--steps", steps, "measured steps per run (default 60)");
  app.add_option("--window", window, "capture window START:COUNT in measured steps (default 5:10)");
  app.add_option("--interval-ms", interval_ms, "system sampler period (default 500)");
  app.add_option("--results", results_dir, "results folder (default ./results)");
  std::string spec_path, record_path;
  CLI::App* child = app.add_subcommand("__variant", "");  // the children re-run this binary
  child->group("");
  child->add_option("--spec", spec_path)->required();
  child->add_option("--out", record_path)->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    throw InputError(e.what());
  }
  if (child->parsed()) return variant_child_main(spec_path, record_path);
  if (rounds < 1 || rounds > 100) throw InputError("invalid --rounds " + std::to_string(rounds) + " (must be 1 to 100)");

  VariantSpec base;
  base.scenario = scenario;
  base.steps = steps;
  base.sample_interval_ms = interval_ms;
  base.profile = true;  // resolve() checks the window against the steps
  parse_window(window, &base.window_start, &base.window_steps);
  resolve(base, find_scenario(scenario));
  base.profile = false;
  const int64_t window_first = base.warmup_steps + base.window_start;
  const int64_t window_last = window_first + base.window_steps - 1;

  std::string run_id;
  const std::string run_dir = make_run_dir(results_dir, scenario, "profiler-overhead", &run_id);
  std::cout << "profiler overhead on " << scenario << ": " << rounds << " rounds x " << kModes.size()
            << " modes, " << steps << " measured steps each, window " << window << ", sampler every " << interval_ms
            << " ms; results in " << run_dir << "\n";

  // records[mode][round]
  std::map<std::string, std::vector<VariantRecord>> records;
  for (int round = 0; round < rounds; ++round) {
    for (size_t k = 0; k < kModes.size(); ++k) {
      const std::string& mode = kModes[(k + static_cast<size_t>(round)) % kModes.size()];
      VariantRunOptions options;
      options.run_dir = run_dir;
      options.file_stem = mode + "-round" + std::to_string(round + 1);
      options.timeout_s = 900;
      VariantRecord record = run_variant_isolated(mode_spec(base, mode), options);
      if (!record.ok()) {
        if (record.error_kind == "input") throw InputError(record.error);
        std::cerr << "trainlab_profiler_overhead: " << mode << " failed: " << record.error << "\n";
        return 1;
      }
      std::cout << "  round " << round + 1 << " " << mode << ": " << format_text("%.1f", aggregate(record).samples_per_s)
                << " samples/s\n"
                << std::flush;
      records[mode].push_back(std::move(record));
    }
  }

  // Paired ratios per round against that round's `none`.
  std::map<std::string, std::vector<double>> throughput_ratio;  // time per sample, mode over none (> 1 = slower)
  std::vector<double> window_step_ratio, window_step_ratio_control, in_run_ratio;
  std::vector<double> trace_bytes_per_step, events_per_step, sampler_cost_pct, record_cost_ns;
  for (int r = 0; r < rounds; ++r) {
    const VariantRecord& none = records["none"][r];
    const double none_sps = aggregate(none).samples_per_s;
    for (const std::string& mode : kModes) {
      if (mode != "none") throughput_ratio[mode].push_back(none_sps / aggregate(records[mode][r]).samples_per_s);
    }
    const double none_window_ms = median_step_ms(none, window_first, window_last);
    // Step-time ratio, window steps over the same steps of `none` (> 1 = slower).
    window_step_ratio.push_back(median_step_ms(records["window"][r], window_first, window_last) / none_window_ms);
    window_step_ratio_control.push_back(median_step_ms(records["none-2"][r], window_first, window_last) / none_window_ms);
    const ProfileWindow& profile = records["window"][r].profile;
    in_run_ratio.push_back(1.0 + profile.window_overhead_pct.value_or(0.0) / 100.0);
    trace_bytes_per_step.push_back(static_cast<double>(profile.trace_bytes_per_step));
    events_per_step.push_back(static_cast<double>(profile.events) /
                              static_cast<double>(base.window_steps));
    record_cost_ns.push_back(profile.record_cost_ns);
    sampler_cost_pct.push_back(records["sampler"][r].system.cost_pct_of_core);
  }

  auto row = [](const std::string& label, const std::vector<double>& ratios) {
    std::vector<std::string> cells = {label, pct(stats::median(ratios))};
    std::string rounds_text;
    for (double x : ratios) rounds_text += (rounds_text.empty() ? "" : " ") + format_text("%+.1f", 100.0 * (x - 1.0));
    cells.push_back(pct(stats::min(ratios)) + " .. " + pct(stats::max(ratios)));
    cells.push_back(rounds_text);
    return cells;
  };
  std::vector<std::vector<std::string>> rows = {
      row("time per sample, none-2 vs none (A/A control)", throughput_ratio["none-2"]),
      row("time per sample, sampler vs none", throughput_ratio["sampler"]),
      row("time per sample, window run vs none (whole loop)", throughput_ratio["window"]),
      row("window steps' p50, none-2 vs none (A/A control)", window_step_ratio_control),
      row("window steps' p50, window run vs none", window_step_ratio),
      row("window steps vs outside them, same run (mean)", in_run_ratio)};
  std::cout << "\n"
            << render_table_text(
                   text_table({"cost (+ = slower), paired per round", "median", "range", "rounds (%)"}, rows, true));

  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const double sampler_core_pct = stats::median(sampler_cost_pct);
  std::cout << "\nSampler's own cost: " << format_text("%.3f", sampler_core_pct) << " % of one core = "
            << format_text("%.3f", sampler_core_pct / cores) << " % of this " << cores << "-core machine (wall time per sample / interval)\n";
  std::cout << "Window: " << format_text("%.0f", stats::median(events_per_step)) << " events per step, "
            << format_text("%.1f", stats::median(trace_bytes_per_step) / 1024.0) << " KiB of gzipped trace per step, "
            << format_text("%.0f", stats::median(record_cost_ns)) << " ns per recorded event\n";
  std::cout << "Targets: sampler alone < 1 % (median cost " << pct(stats::median(throughput_ratio["sampler"]))
            << ", A/A control " << pct(stats::median(throughput_ratio["none-2"]))
            << "); window capture < 10 % inside the window (median " << pct(stats::median(window_step_ratio)) << ")\n";

  nlohmann::json out = {{"scenario", scenario}, {"rounds", rounds}, {"steps", steps}, {"window", window},
                        {"interval_ms", interval_ms}, {"cores", cores}};
  for (const auto& [mode, ratios] : throughput_ratio) out["time_per_sample_ratio_vs_none"][mode] = ratios;
  out["window_step_p50_ratio_vs_none"] = window_step_ratio;
  out["window_step_p50_ratio_control"] = window_step_ratio_control;
  out["window_vs_outside_same_run"] = in_run_ratio;
  out["sampler_cost_pct_of_core"] = sampler_cost_pct;
  out["trace_bytes_per_step"] = trace_bytes_per_step;
  out["events_per_step"] = events_per_step;
  out["record_cost_ns"] = record_cost_ns;
  for (const std::string& mode : kModes) {
    for (const VariantRecord& r : records[mode]) out["samples_per_s"][mode].push_back(aggregate(r).samples_per_s);
  }
  return write_bench_results(run_dir, "overhead.json", out);
}

}  // namespace
}  // namespace trainlab

int main(int argc, char** argv) {
  return trainlab::run_bench_main(trainlab::bench_main, "trainlab_profiler_overhead: error: ", argc, argv);
}
