// trainlab's command line: wires the subcommands (list, run, baseline) to the runner. Bad input
// anywhere becomes one line on stderr and exit status 2.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>

#include "diagnostics/thresholds.h"
#include "core/atomic_file.h"
#include "core/errors.h"
#include "harness/runner/compare.h"
#include "harness/runner/diagnose.h"
#include "harness/runner/doctor.h"
#include "harness/runner/history.h"
#include "harness/runner/lab.h"
#include "harness/runner/sweep.h"
#include "harness/runner/text_table.h"
#include "harness/runner/validate.h"
#include "harness/runner/cuda_check.h"
#include "scenarios/registry.h"

namespace trainlab {
namespace {

// Options shared by every command that runs variants.
struct VariantOptions {
  std::string scenario = kDefaultScenario;
  std::string precision = "fp32";
  std::string compiled = "off";
  int64_t batch = 0;
  int threads = 0;
  int64_t steps = -1;
  int64_t warmup = -1;
  std::string max_loop_s;  // "" = not given
  int64_t seed = -1;
  int64_t sync_every = -1;
  int64_t callback_every = -1;
  double callback_ms = -1;
  std::string keep_loss_graphs = "off";
  int64_t grad_norm_every = -1;
  std::string device = "auto";
  int workers = 0;
  int prefetch = 2;
  std::string persistent_workers = "on";
  std::string pin_memory = "off";
  std::string data_dir;
  std::string sampler = "on";
  bool profile = false;
  std::string window;                   // START:COUNT
  int64_t interval_ms = 500;
  bool record_shapes = false;
  std::string trace_format = "json.gz";
  int nproc = 1;
  std::string comm_mode = "overlap";
  double bucket_mb = 25.0;
  double dist_timeout_s = 60.0;
  std::string preset;                   // a scenario's named knob setting (see `trainlab list`)
  std::vector<std::string> settings;    // --set NAME=VALUE[,...], --ab's syntax, applied last
  std::vector<std::string> knobs;       // name=value
  std::string results_dir = "results";
  double timeout_s = 1800;
  int repeat = 1;
  std::string thresholds_path;
};

// Which command the options are for: the lab fixes precision/compiled per variant; the sweep takes
// lists for the loader settings and batch size.
enum class CommandKind { kRun, kLab, kSweep };

void add_variant_options(CLI::App* cmd, VariantOptions& o, CommandKind kind) {
  cmd->add_option("--scenario,-s", o.scenario, "built-in scenario (see `trainlab list`)");
  if (kind != CommandKind::kLab) {
    cmd->add_option("--precision", o.precision, "fp32 or bf16 (autocast)");
    cmd->add_option("--compiled", o.compiled, "on: TorchScript-traced forward run by the JIT fusers");
  }
  if (kind == CommandKind::kRun) {
    cmd->add_option("--set", o.settings,
                    "settings in --ab's syntax, applied last: NAME=VALUE[,...] with an option (workers=2, "
                    "precision=bf16) or a knob (cache=1); repeatable");
  }
  if (kind != CommandKind::kSweep) {
    cmd->add_option("--batch,-b", o.batch, "batch size (default: the scenario's)");
    cmd->add_option("--workers", o.workers, "data loader worker threads (0 = build batches in the training thread)");
    cmd->add_option("--prefetch", o.prefetch, "batches in flight per loader worker (default 2)");
    cmd->add_option("--pin-memory", o.pin_memory, "on: pinned staging buffers + non-blocking copies (CUDA only)");
  }
  cmd->add_option("--persistent-workers", o.persistent_workers, "off: restart loader workers every epoch (default on)");
  cmd->add_option("--sampler", o.sampler, "off: no system sampler (CPU, memory, disk, network, GPU every --interval-ms; default on)");
  cmd->add_flag("--profile", o.profile, "capture a window of steps (ops, phases) and write a Chrome trace per variant");
  cmd->add_option("--window", o.window, "capture window START:COUNT in measured steps (default 5:10, shrunk to fit)");
  cmd->add_option("--interval-ms", o.interval_ms, "system sampler period (default 500)");
  cmd->add_flag("--record-shapes", o.record_shapes, "record ops' input shapes in the trace");
  cmd->add_option("--trace-format", o.trace_format, "json.gz (default) or json");
  cmd->add_option("--data-dir", o.data_dir, "where on-disk datasets are generated once (default results/datasets or $TRAINLAB_DATA_DIR)");
  cmd->add_option("--threads", o.threads, "intra-op threads (default: LibTorch's)");
  cmd->add_option("--steps", o.steps, "measured steps (default 50)");
  cmd->add_option("--warmup", o.warmup, "warm-up steps, never timed (default 5)");
  cmd->add_option("--max-loop-s", o.max_loop_s,
                  kind == CommandKind::kLab
                      ? "wall-time budget of each variant's loop in seconds: warm-up ends early after a third, "
                        "measurement after all of it (at least 2 measured steps); default 5 for the lab, 0 = none"
                      : "wall-time budget of the loop in seconds (warm-up ends early after a third, measurement "
                        "after all of it, at least 2 measured steps); default 0 = none");
  cmd->add_option("--seed", o.seed, "seed for model init and the data slice (default 1234)");
  cmd->add_option("--sync-every", o.sync_every, "read the loss as a number every N steps (1 = each step, 0 = never; default 10)");
  cmd->add_option("--callback-every", o.callback_every, "run a host-side callback every N steps (default 0 = never)");
  cmd->add_option("--callback-ms", o.callback_ms, "cost of that callback in ms");
  cmd->add_option("--grad-norm-every", o.grad_norm_every,
                  "measure the global gradient norm every N steps (0 = never; default 10)");
  cmd->add_option("--keep-loss-graphs", o.keep_loss_graphs,
                  "on: keep every step's loss with its autograd graph (a seeded memory leak; default off)");
  cmd->add_option("--device", o.device, "auto, cpu or cuda");
  cmd->add_option("--nproc", o.nproc, "data parallel: launch N local ranks (c10d Gloo over loopback; default 1)");
  cmd->add_option("--comm-mode", o.comm_mode, "data parallel all-reduce: overlap (from gradient hooks during backward, default) or serial (after backward)");
  cmd->add_option("--bucket-mb", o.bucket_mb, "data parallel: gradient bucket cap in MiB (default 25)");
  cmd->add_option("--dist-timeout-s", o.dist_timeout_s, "data parallel: how long a rank waits for its peers before failing (default 60)");
  cmd->add_option("--preset", o.preset, "the scenario's named knob setting, e.g. recsys data-bound (see `trainlab list`; -k wins)");
  cmd->add_option("--knob,-k", o.knobs, "scenario knob NAME=VALUE (repeatable; see `trainlab list`)");
  cmd->add_option("--results", o.results_dir, "results folder (default ./results)");
  cmd->add_option("--timeout-s", o.timeout_s, "kill a variant that runs longer than this (default 1800)");
  cmd->add_option("--repeat", o.repeat,
                  kind == CommandKind::kSweep
                      ? "run the grid this many rounds (each point once a round); figures are the rounds' median"
                  : kind == CommandKind::kLab
                      ? "run the three variants this many times, interleaved (default 3: the gains' intervals)"
                      : "run each variant this many times, interleaved (default 1; compare uses them)");
  cmd->add_option("--thresholds", o.thresholds_path, "thresholds JSON replacing configs/thresholds.json");
}

std::pair<std::string, std::string> split_setting(const std::string& text, const std::string& option) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw InputError("invalid " + option + " '" + text + "' (expected NAME=VALUE)");
  }
  return {text.substr(0, eq), text.substr(eq + 1)};
}

VariantSpec build_spec(const VariantOptions& o) {
  VariantSpec spec;
  const ScenarioInfo& info = find_scenario(o.scenario);
  if (o.steps < -1 || o.warmup < -1 || o.seed < -1 || o.sync_every < -1 || o.callback_every < -1 ||
      (o.callback_ms < 0 && o.callback_ms != -1)) {
    throw InputError("negative values are not allowed for --steps, --warmup, --seed, --sync-every, "
                     "--callback-every, --callback-ms");
  }
  spec.precision = parse_precision(o.precision);
  spec.compiled = parse_on_off("--compiled", o.compiled);
  spec.batch_size = o.batch;  // 0: the scenario's default, filled in by resolve()
  spec.threads = o.threads;
  // -1 means "not given": keep VariantSpec's default.
  if (o.steps >= 0) spec.steps = o.steps;
  if (o.warmup >= 0) spec.warmup_steps = o.warmup;
  if (!o.max_loop_s.empty()) apply_setting(spec, "max-loop-s", o.max_loop_s);
  if (o.seed >= 0) spec.seed = static_cast<uint64_t>(o.seed);
  if (o.sync_every >= 0) spec.sync_every_steps = o.sync_every;
  if (o.callback_every >= 0) spec.callback_every_steps = o.callback_every;
  if (o.callback_ms >= 0) spec.callback_ms = o.callback_ms;
  spec.keep_loss_graphs = parse_on_off("--keep-loss-graphs", o.keep_loss_graphs);
  if (o.grad_norm_every < -1) throw InputError("invalid --grad-norm-every (must be 0 or more)");
  if (o.grad_norm_every >= 0) spec.grad_norm_every_steps = o.grad_norm_every;
  spec.device = parse_device(o.device);
  spec.workers = o.workers;
  spec.prefetch = o.prefetch;
  spec.persistent_workers = parse_on_off("--persistent-workers", o.persistent_workers);
  spec.pin_memory = parse_on_off("--pin-memory", o.pin_memory);
  spec.data_dir = o.data_dir;
  spec.system_sampler = parse_on_off("--sampler", o.sampler);
  spec.nproc = o.nproc;
  spec.comm_mode = parse_comm_mode(o.comm_mode);
  spec.bucket_mb = o.bucket_mb;
  spec.dist_timeout_s = o.dist_timeout_s;
  spec.profile = o.profile || !o.window.empty();
  if (!o.window.empty()) parse_window(o.window, &spec.window_start, &spec.window_steps);
  spec.sample_interval_ms = o.interval_ms;
  spec.record_shapes = o.record_shapes;
  if (o.trace_format != "json" && o.trace_format != "json.gz") {
    throw InputError("invalid --trace-format '" + o.trace_format + "' (expected json or json.gz)");
  }
  spec.trace_gzip = o.trace_format == "json.gz";
  if (!o.preset.empty()) {
    const ScenarioPreset* preset = info.find_preset(o.preset);
    if (preset == nullptr) {
      std::string names;
      for (const ScenarioPreset& p : info.presets) names += (names.empty() ? "" : ", ") + p.name;
      throw InputError("unknown preset '" + o.preset + "' for scenario " + info.name +
                       " (presets: " + (names.empty() ? "none" : names) + ")");
    }
    for (const auto& [name, value] : preset->knobs) spec.knobs[name] = value;
  }
  for (const std::string& knob : o.knobs) {
    auto [name, value] = split_setting(knob, "--knob");
    spec.knobs[name] = parse_double("--knob " + name, value);
  }
  resolve(spec, info);
  if (!o.settings.empty()) {
    for (const std::string& list : o.settings) {
      std::stringstream items(list);
      for (std::string item; std::getline(items, item, ',');) {
        auto [name, value] = split_setting(item, "--set");
        apply_setting(spec, name, value);
      }
    }
    resolve(spec, info);
  }
  if (spec.device == DeviceChoice::kCuda && !cuda_device_present()) {
    throw InputError("--device cuda requested but no CUDA device is usable here");
  }
  return spec;
}

Thresholds load_thresholds(const std::string& path) {
  try {
    return Thresholds::parse(read_file(path)).overriding(Thresholds::defaults());
  } catch (const std::invalid_argument& e) {
    throw InputError(path + ": " + e.what());
  }
}

LabOptions build_lab_options(const VariantOptions& o, Thresholds* thresholds_storage) {
  LabOptions lab;
  lab.base = build_spec(o);
  lab.results_dir = o.results_dir;
  if (!(o.timeout_s > 0)) throw InputError("invalid --timeout-s (must be positive)");
  lab.variant_timeout_s = o.timeout_s;
  if (o.repeat < 1 || o.repeat > 100) throw InputError("invalid --repeat (must be 1 to 100)");
  lab.repeat = o.repeat;
  if (!o.thresholds_path.empty()) {
    *thresholds_storage = load_thresholds(o.thresholds_path);
    lab.thresholds = thresholds_storage;
  }
  ensure_writable_dir(lab.results_dir);
  return lab;
}

int cmd_list() {
  for (const ScenarioInfo* info : all_scenarios()) {
    std::cout << info->name << (info->name == kDefaultScenario ? " (default)" : "") << "  "
              << info->description << "\n";
    std::cout << "    batch " << info->default_batch_size;
    for (const KnobInfo& knob : info->knobs) std::cout << ", " << knob.name << " " << knob.default_value;
    std::cout << "\n";
    for (const ScenarioPreset& preset : info->presets) {
      std::cout << "    preset " << preset.name << ":";
      for (const auto& [name, value] : preset.knobs) std::cout << " " << name << "=" << value;
      std::cout << "  " << preset.description << "\n";
    }
  }
  return kExitOk;
}

// A variant that failed on bad input (a corrupt or missing data file, an impossible knob
// combination): one error line and exit status 2; the run record is kept.
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
    if (v.world_size <= 1 || !v.ok() || !v.distributed.contains("buckets")) continue;
    const VariantAggregate agg = aggregate(v);
    const nlohmann::json& d = v.distributed;
    std::cout << "\nData parallel " << v.spec.name() << ": " << v.world_size << " ranks (" << d.value("backend", "")
              << ", " << d.value("comm_mode", "") << ", " << d.value("buckets", int64_t{0}) << " buckets, "
              << fmt("%.1f", d.value("gradient_bytes", int64_t{0}) / (1024.0 * 1024.0)) << " MiB of gradients): all-reduce "
              << fmt("%.1f", agg.comm_pct) << " % of the step, exposed (the step waiting on it) "
              << fmt("%.1f", agg.phase_pct[static_cast<size_t>(Phase::kCommunication)]) << " %";
    if (d.contains("slowest_rank")) {
      std::cout << "; ranks' own work differs by " << fmt("%.0f", d.value("busy_spread_pct", 0.0)) << " % (slowest rank "
                << d["slowest_rank"].get<int>() << ")";
    }
    std::cout << "\n";
  }
  // The system sampler's summary, one line per variant.
  bool first_system_line = true;
  for (const VariantRecord& v : outcome.record.variants) {
    if (!v.system.contains("metrics")) continue;
    const nlohmann::json& m = v.system["metrics"];
    // "-" where the run was too short for a rate (utilisation needs two samples).
    auto stat = [&](const char* metric, const char* which, const char* format = "%.0f", double scale = 1.0) {
      return m.contains(metric) ? fmt(format, m[metric].value(which, 0.0) * scale) : std::string("-");
    };
    std::cout << (first_system_line ? "\n" : "") << "System " << v.spec.name() << ": process CPU p50 "
              << stat("cpu.process_pct", "p50") << " % (p95 " << stat("cpu.process_pct", "p95")
              << " %), machine CPU p95 " << stat("cpu.total_pct", "p95") << " %, IO wait p95 "
              << stat("cpu.iowait_pct", "p95", "%.1f") << " %, RSS max "
              << stat("mem.rss_bytes", "max", "%.0f", 1.0 / (1024.0 * 1024.0)) << " MiB ("
              << (m.contains("mem.rss_bytes") ? m["mem.rss_bytes"].value("samples", int64_t{0}) : 0) << " samples every "
              << v.system.value("interval_ms", int64_t{0}) << " ms, " << v.system.value("missed_ticks", int64_t{0})
              << " missed; the sampler took " << fmt("%.2f", v.system.value("cost_pct_of_core", 0.0)) << " % of a core)\n";
    first_system_line = false;
  }
  for (const VariantRecord& v : outcome.record.variants) {
    if (v.profile.empty()) continue;
    std::cout << "\nProfile " << v.spec.name() << ": " << v.profile.value("events", int64_t{0}) << " events in steps "
              << v.profile.value("window_start", int64_t{0}) << ".."
              << v.profile.value("window_start", int64_t{0}) + v.profile.value("window_steps", int64_t{0}) - 1
              << " of the measured ones, trace " << outcome.run_dir << "/variants/" << v.profile.value("trace", std::string())
              << " (" << v.profile.value("trace_bytes_per_step", int64_t{0}) / 1024 << " KiB per step)";
    if (v.profile.contains("window_overhead_pct")) {
      std::cout << ", window steps " << std::showpos << std::fixed << std::setprecision(1)
                << v.profile["window_overhead_pct"].get<double>() << std::noshowpos << " % vs outside";
    }
    std::cout << "\n";
    for (const auto& note : v.profile.value("notes", nlohmann::json::array())) {
      std::cout << "  " << note.get<std::string>() << "\n";
    }
  }
  std::cout << "\nRun record: " << outcome.run_dir << "/run.json\n";
  for (const VariantRecord& v : outcome.record.variants) {
    if (!v.ok()) return kExitGateFailed;  // a variant failed: results are kept, status says so
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

// `trainlab doctor --scenario S [run options] [--repeat K] [--max-changes N] [--results DIR]`:
// the run options pass through to its child runs, which validate them.
int cmd_doctor(const std::vector<std::string>& args) {
  DoctorOptions options;
  options.scenario = kDefaultScenario;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has_value = i + 1 < args.size();
    if (a == "--help" || a == "-h") {
      std::cout << "trainlab doctor --scenario S [run options] [--repeat K (A/B repetitions, default 3)] "
                   "[--max-changes N (default 3)] [--results DIR]\n"
                   "profiles the configuration, tries the change each top finding suggests as an interleaved A/B run, "
                   "then the helpful ones together, and reports what each measurably bought\n";
      return kExitOk;
    }
    if ((a == "--repeat" || a == "--max-changes" || a == "--results") && !has_value) {
      throw InputError(a + " needs a value");
    }
    if (a == "--repeat") {
      options.repeat = static_cast<int>(parse_int_list("--repeat", args[++i], 2, 20).front());
    } else if (a == "--max-changes") {
      options.max_changes = static_cast<int>(parse_int_list("--max-changes", args[++i], 1, 8).front());
    } else if (a == "--results") {
      options.results_dir = args[++i];
    } else if (a == "--ab" || a == "--profile" || a == "--window") {
      throw InputError("doctor chooses " + a + " itself");
    } else {
      if ((a == "--scenario" || a == "-s") && has_value) options.scenario = args[i + 1];
      options.variant_args.push_back(a);
    }
  }
  // The configuration is checked the way `run` checks it, so bad input is one line before anything runs.
  {
    VariantOptions checked;
    CLI::App check{"doctor"};
    add_variant_options(&check, checked, CommandKind::kRun);
    std::vector<const char*> check_argv = {"trainlab-doctor"};
    for (const std::string& a : options.variant_args) check_argv.push_back(a.c_str());
    try {
      check.parse(static_cast<int>(check_argv.size()), check_argv.data());
    } catch (const CLI::ParseError& e) {
      throw InputError(e.what());
    }
    build_spec(checked);
  }
  if (std::find(options.variant_args.begin(), options.variant_args.end(), "--scenario") == options.variant_args.end() &&
      std::find(options.variant_args.begin(), options.variant_args.end(), "-s") == options.variant_args.end()) {
    options.variant_args.insert(options.variant_args.begin(), {"--scenario", options.scenario});
  }
  const DoctorOutcome outcome = run_doctor(options, std::cerr);
  std::cout << "\n" << render_doctor(outcome);
  return kExitOk;
}

int run_cli(int argc, char** argv) {
  CLI::App app{"trainlab: find out why training is slow, then verify the fix by measurement"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all");

  CLI::App* list = app.add_subcommand("list", "list the built-in scenarios and their knobs");

  VariantOptions run_options;
  CLI::App* run = app.add_subcommand("run", "run one variant of a scenario");
  add_variant_options(run, run_options, CommandKind::kRun);
  std::string ab_changes;
  run->add_option("--ab", ab_changes, "A/B: also run the variant with these changes (NAME=VALUE,...; e.g. workers=2), "
                                      "alternately A B A B --repeat times (default 3), then compare them");

  VariantOptions profile_options;
  CLI::App* profile = app.add_subcommand("profile", "one variant with the profiler on: record + Chrome trace");
  add_variant_options(profile, profile_options, CommandKind::kRun);

  VariantOptions lab_options;
  std::vector<std::string> overrides;
  CLI::App* baseline = app.add_subcommand("baseline", "the three-run lab: fp32, bf16, bf16+compiled");
  add_variant_options(baseline, lab_options, CommandKind::kLab);
  baseline->add_option("--override", overrides,
                       "per-variant setting VARIANT:NAME=VALUE, e.g. bf16:batch=32 (repeatable)");
  std::string emulated_bf16 = "skip";
  baseline->add_option("--emulated-bf16", emulated_bf16,
                       "skip (default): where a GEMM probe finds bf16 over 5x slower than fp32 on this CPU "
                       "(emulated), leave the bf16 runs out and compile the fp32 model; run: run them anyway");

  VariantOptions sweep_options;
  std::string sweep_workers = "0,1,2,4", sweep_prefetch = "2", sweep_pin = "off", sweep_batch;
  double sweep_tolerance_pct = 5.0;
  CLI::App* sweep = app.add_subcommand("sweep", "dataloader sweep: workers x prefetch x pinned memory x batch");
  add_variant_options(sweep, sweep_options, CommandKind::kSweep);
  sweep->add_option("--workers", sweep_workers, "loader worker counts, e.g. 0,1,2,4 (default)");
  sweep->add_option("--prefetch", sweep_prefetch, "prefetch depths per worker, e.g. 2,4 (default 2)");
  sweep->add_option("--pin-memory", sweep_pin, "off, on or off,on (on needs CUDA; default off)");
  sweep->add_option("--batch,-b", sweep_batch, "batch sizes, e.g. 32,64 (default: the scenario's)");
  sweep->add_option("--tolerance-pct", sweep_tolerance_pct, "recommend the cheapest point within this % of the best (default 5)");

  std::string fail_on, diagnose_out, diagnose_input, diagnose_thresholds;
  profile->add_option("--fail-on", fail_on, "exit 1 when a finding fires: high, moderate or a rule id");
  CLI::App* diagnose = app.add_subcommand(
      "diagnose", "name the bottleneck of a run folder, a PyTorch profiler trace (.json/.json.gz) or a folder of rank traces");
  diagnose->add_option("input", diagnose_input, "run folder, trace file or folder of traces")->required();
  diagnose->add_option("--fail-on", fail_on, "exit 1 when a finding fires: high, moderate or a rule id");
  diagnose->add_option("--out", diagnose_out, "folder for diagnosis.json and report.html (default: the run folder, "
                                              "or a new folder in results/ for traces)");
  diagnose->add_option("--thresholds", diagnose_thresholds, "rule thresholds file replacing configs/thresholds.json");

  CompareOptions compare_options;
  std::string compare_before, compare_after, compare_format = "table", compare_out;
  CLI::App* compare = app.add_subcommand("compare", "before/after: changes with confidence intervals; exit 1 on a regression");
  compare->add_option("before", compare_before, "run folder or run.json")->required();
  compare->add_option("after", compare_after, "run folder or run.json (leave out to compare an A/B run's A with its B)");
  compare->add_option("--threshold", compare_options.threshold_pct, "changes under this % are unchanged (default 5)");
  compare->add_option("--max-regression", compare_options.max_regression_pct,
                      "exit 1 when something regressed by more than this % (default 10)");
  compare->add_option("--format", compare_format, "table (default), markdown or json");
  compare->add_option("--out", compare_out, "also write the JSON result to this file");

  std::string history_dir = "results";
  CLI::App* history = app.add_subcommand("history", "list the runs in the results folder");
  history->add_option("--results", history_dir, "results folder (default ./results)");

  // doctor passes its run options through to child runs, so it parses its own arguments (cmd_doctor);
  // this entry is for the help listing.
  app.add_subcommand("doctor", "diagnose a configuration, try each finding's fix as an A/B run, report the verified gains")
      ->allow_extras();

  ValidateOptions validate_options;
  std::string validate_only;
  CLI::App* validate = app.add_subcommand(
      "validate", "run the seeded bottleneck cases and print the confusion matrix (expected vs named suspect)");
  validate->add_option("--cases", validate_options.cases_path, "seeded cases file replacing configs/seeded_cases.json");
  validate->add_option("--only", validate_only, "comma-separated case names to run");
  validate->add_flag("--ci", validate_options.ci_subset, "only the fast subset marked ci");
  validate->add_option("--results", validate_options.results_dir, "results folder (default ./results)");

  if (argc > 1 && std::string(argv[1]) == "doctor") return cmd_doctor(std::vector<std::string>(argv + 2, argv + argc));
  const std::set<std::string> commands = {"list",     "run",      "profile", "baseline", "sweep",
                                          "diagnose", "validate", "compare", "history",  "doctor"};
  if (argc > 1 && argv[1][0] != '-' && commands.count(argv[1]) == 0) {
    throw InputError(std::string("unknown command '") + argv[1] + "' (commands: list, run, profile, baseline, sweep, diagnose, validate, compare, history, doctor)");
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    std::cerr << "trainlab: error: " << e.what() << "\n";
    return kExitBadInput;
  }

  if (list->parsed()) return cmd_list();

  Thresholds thresholds_storage;
  if (sweep->parsed()) {
    SweepOptions options;
    options.grid.workers.clear();
    for (int64_t w : parse_int_list("--workers", sweep_workers, 0, kMaxLoaderWorkers)) options.grid.workers.push_back(static_cast<int>(w));
    for (int64_t p : parse_int_list("--prefetch", sweep_prefetch, 1, kMaxPrefetch)) options.grid.prefetch.push_back(static_cast<int>(p));
    options.grid.pin_memory = parse_on_off_list("--pin-memory", sweep_pin);
    if (!sweep_batch.empty() || sweep->count("--batch") > 0) {
      options.grid.batch_sizes = parse_int_list("--batch", sweep_batch, 1, kMaxBatchSize - 1);
    }
    if (!(sweep_tolerance_pct >= 0 && sweep_tolerance_pct < 100)) {
      throw InputError("invalid --tolerance-pct (must be 0 to under 100)");
    }
    options.tolerance_pct = sweep_tolerance_pct;
    options.lab = build_lab_options(sweep_options, &thresholds_storage);
    const bool cpu_only = options.lab.base.device == DeviceChoice::kCpu;
    options.cuda_available = !cpu_only && cuda_device_present();
    options.live_progress = ::isatty(STDERR_FILENO) == 1;
    expand_sweep(options, nullptr);  // validates the whole grid before anything runs
    const SweepOutcome outcome = run_sweep(options, std::cerr);
    if (const VariantRecord* bad = bad_input_variant(outcome.record)) {
      std::cerr << "trainlab: error: " << bad->error << "\n";
      return kExitBadInput;
    }
    std::cout << "\n" << outcome.table;
    std::cout << "\nReading:\n";
    for (const std::string& line : outcome.record.reading) std::cout << "  - " << line << "\n";
    if (outcome.record.details.contains("chart")) {
      std::cout << "\nChart: " << outcome.run_dir << "/" << outcome.record.details["chart"].get<std::string>() << "\n";
    }
    std::cout << "Run record: " << outcome.run_dir << "/run.json\n";
    for (const VariantRecord& v : outcome.record.variants) {
      if (!v.ok()) return kExitGateFailed;
    }
    return kExitOk;
  }
  if (history->parsed()) {
    std::cout << render_history(history_dir);
    return kExitOk;
  }
  if (compare->parsed()) {
    if (!(compare_options.threshold_pct >= 0) || !(compare_options.max_regression_pct >= 0)) {
      throw InputError("--threshold and --max-regression must be 0 or more");
    }
    if (compare_format != "table" && compare_format != "markdown" && compare_format != "json") {
      throw InputError("invalid --format '" + compare_format + "' (table, markdown or json)");
    }
    const CompareOutcome outcome =
        compare_after.empty() ? compare_ab(read_run_record(compare_before), compare_options)
                              : compare_runs(read_run_record(compare_before), read_run_record(compare_after), compare_options);
    const nlohmann::json result = to_json(outcome, compare_options);
    if (!compare_out.empty()) write_file_atomically(compare_out, result.dump(2) + "\n");
    if (compare_format == "json") std::cout << result.dump(2) << "\n";
    else if (compare_format == "markdown") std::cout << render_compare_markdown(outcome, compare_options);
    else std::cout << render_compare_table(outcome, compare_options);
    return outcome.gate_failed ? kExitGateFailed : kExitOk;
  }
  if (validate->parsed()) {
    std::stringstream names(validate_only);
    for (std::string name; std::getline(names, name, ',');) {
      if (!name.empty()) validate_options.only.push_back(name);
    }
    const ValidateOutcome outcome = run_validation(validate_options, std::cerr);
    std::cout << "\n" << render_validation(outcome);
    return outcome.all_correct ? kExitOk : kExitGateFailed;
  }
  if (diagnose->parsed()) {
    check_fail_on(fail_on);
    DiagnoseOptions options;
    if (!diagnose_thresholds.empty()) {
      thresholds_storage = load_thresholds(diagnose_thresholds);
      options.thresholds = &thresholds_storage;
    }
    options.fail_on = fail_on;
    options.out_dir = diagnose_out;
    return report_diagnosis(diagnose_path(diagnose_input, options));
  }
  if (profile->parsed()) {
    check_fail_on(fail_on);
    profile_options.profile = true;
    LabOptions lab = build_lab_options(profile_options, &thresholds_storage);
    const LabOutcome outcome = run_single_variant(lab, std::cerr);
    const int status = report_run(outcome);
    if (status != kExitOk) return status;
    DiagnoseOptions options;
    options.thresholds = lab.thresholds;
    options.fail_on = fail_on;
    std::cout << "\n";
    return report_diagnosis(diagnose_run(outcome.record, outcome.run_dir, options));
  }
  if (run->parsed()) {
    LabOptions lab = build_lab_options(run_options, &thresholds_storage);
    if (!ab_changes.empty()) {
      if (run->count("--repeat") == 0) lab.repeat = 3;  // the fewest repetitions a side that compare gates on
      std::vector<std::pair<std::string, std::string>> changes;
      std::stringstream items(ab_changes);
      for (std::string item; std::getline(items, item, ',');) changes.push_back(split_setting(item, "--ab"));
      const LabOutcome outcome = run_ab(lab, changes, std::cerr);
      const int status = report_run(outcome);
      if (status == kExitBadInput) return status;
      const CompareOptions options;
      std::cout << "\n" << render_compare_table(compare_ab(outcome.record, options), options);
      return status;
    }
    return report_run(run_single_variant(lab, std::cerr));
  }
  LabOptions lab = build_lab_options(lab_options, &thresholds_storage);
  for (const std::string& text : overrides) {
    const auto colon = text.find(':');
    if (colon == std::string::npos) {
      throw InputError("invalid --override '" + text + "' (expected VARIANT:NAME=VALUE)");
    }
    auto [name, value] = split_setting(text.substr(colon + 1), "--override");
    lab.overrides[text.substr(0, colon)].emplace_back(name, value);
  }
  // The lab's gains carry intervals over interleaved repetitions (fp32 bf16 compiled, three times):
  // three a side is the fewest that give Welch's interval something to stand on.
  // Without --repeat, a gain whose interval still holds its line after three gets more rounds (up to
  // 8 in all) while the rounds fit in 100 s, so the lab stays under 2 minutes with its probe and
  // start-up; --repeat N runs exactly N.
  if (baseline->count("--repeat") == 0) {
    lab.repeat = 3;
    lab.extra_rounds = 5;
    lab.rounds_budget_s = 100;
  }
  // ... and a 5 s loop budget per variant run, so that a variant far slower than the others (bf16
  // emulated on a CPU without bf16 instructions runs 15-100x slower) measures fewer steps instead of
  // stretching the lab to many minutes; its record says how many steps the budget cut.
  if (lab_options.max_loop_s.empty()) lab.base.max_loop_s = 5;
  if (emulated_bf16 != "skip" && emulated_bf16 != "run") {
    throw InputError("invalid --emulated-bf16 '" + emulated_bf16 + "' (skip or run)");
  }
  lab.run_emulated_bf16 = emulated_bf16 == "run";
  baseline_variants(lab);  // validates overrides before anything runs
  return report_run(run_baseline_lab(lab, std::cerr));
}

}  // namespace
}  // namespace trainlab

int main(int argc, char** argv) {
  try {
    return trainlab::run_cli(argc, argv);
  } catch (const trainlab::InputError& e) {
    std::cerr << "trainlab: error: " << e.what() << "\n";
    return trainlab::kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "trainlab: internal error: " << e.what() << "\n";
    return 3;
  }
}
