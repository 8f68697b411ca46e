// The shared run options: flags (add_variant_options) and their conversion to a VariantSpec.
#include "harness/cli/variant_options.h"

#include <sstream>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "harness/runner/cuda_check.h"

namespace trainlab {

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

}  // namespace trainlab
