// The run options table (see run_options.h): one entry per VariantSpec setting.
#include "core/run_options.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "core/errors.h"

namespace trainlab {
namespace {

std::string show_number(double value) {
  char text[40];
  std::snprintf(text, sizeof text, "%.15g", value);
  if (std::strtod(text, nullptr) != value) std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

std::string on_off(bool value) { return value ? "on" : "off"; }

// A path given on the command line, made absolute (variant children run in other folders).
std::string absolute_path(const std::string& text) {
  if (text.empty()) throw InputError("an empty path");
  std::error_code ec;
  const std::filesystem::path path = std::filesystem::absolute(text, ec);
  return ec ? text : path.lexically_normal().string();
}

// A path field that is usually unset: stored absolute; its run.json key (the option's name) only
// when set, so records without it read unchanged.
RunOption optional_path(const std::string& name, const std::string& value_name, std::string VariantSpec::*field,
                        std::string help) {
  RunOption o;
  o.name = name;
  o.value_name = value_name;
  o.help = std::move(help);
  o.apply = [field](VariantSpec& spec, const std::string& text) { spec.*field = absolute_path(text); };
  o.show = [field](const VariantSpec& spec) { return spec.*field; };
  o.write_json = [name, field](const VariantSpec& spec, nlohmann::json& j) {
    if (!(spec.*field).empty()) j[name] = spec.*field;
  };
  o.read_json = [name, field](const nlohmann::json& j, VariantSpec& spec) { spec.*field = j.value(name, std::string()); };
  return o;
}

// "(must be MIN to MAX)" for a range message, with what a value means after "; " when given.
std::string range_text(const std::string& min, const std::string& max, const std::string& note = "") {
  return " (must be " + min + " to " + max + (note.empty() ? "" : "; " + note) + ")";
}

// A whole-number field from min to max (within the field's type), checked as it is set, so that
// --set, --ab and --override name the range too, and on whole specs (check_range). `note` says what
// a value means ("0 = never").
template <typename T>
RunOption whole_number(const std::string& name, const std::string& key, T VariantSpec::*field, bool required,
                       int64_t min, int64_t max, std::string help, const std::string& note = "") {
  static_assert(sizeof(T) <= sizeof(int64_t), "whole-number fields fit int64_t");
  RunOption o;
  o.name = name;
  o.value_name = "INT";
  o.help = std::move(help);
  const std::string range = range_text(std::to_string(min), std::to_string(max), note);
  o.apply = [name, field, min, max, range](VariantSpec& spec, const std::string& text) {
    const int64_t value = parse_int("--" + name, text);
    if (value < min || value > max) throw InputError("invalid --" + name + " " + text + range);
    spec.*field = static_cast<T>(value);
  };
  o.check_range = [name, field, min, max, range](const VariantSpec& spec) {
    const int64_t value = static_cast<int64_t>(spec.*field);
    if (value < min || value > max) throw InputError("invalid --" + name + " " + std::to_string(value) + range);
  };
  o.show = [field](const VariantSpec& spec) { return std::to_string(spec.*field); };
  o.write_json = [key, field](const VariantSpec& spec, nlohmann::json& j) { j[key] = spec.*field; };
  o.read_json = [key, field, required](const nlohmann::json& j, VariantSpec& spec) {
    spec.*field = required ? j.at(key).get<T>() : j.value(key, VariantSpec{}.*field);
  };
  return o;
}

// A real-number field from min (above it, with min_exclusive) to max, checked as it is set and on
// whole specs (check_range; NaN fails every comparison, so it is out of every range).
RunOption real_number(const std::string& name, const std::string& key, double VariantSpec::*field, bool required,
                      double min, double max, bool min_exclusive, std::string help) {
  RunOption o;
  o.name = name;
  o.value_name = "FLOAT";
  o.help = std::move(help);
  const std::string range = min_exclusive
                                ? " (must be above " + show_number(min) + " and at most " + show_number(max) + ")"
                                : range_text(show_number(min), show_number(max));
  const auto in_range = [min, max, min_exclusive](double value) {
    return value >= min && value <= max && !(min_exclusive && value == min);
  };
  o.apply = [name, field, range, in_range](VariantSpec& spec, const std::string& text) {
    const double value = parse_double("--" + name, text);
    if (!in_range(value)) throw InputError("invalid --" + name + " " + text + range);
    spec.*field = value;
  };
  o.check_range = [name, field, range, in_range](const VariantSpec& spec) {
    if (!in_range(spec.*field)) throw InputError("invalid --" + name + " " + show_number(spec.*field) + range);
  };
  o.show = [field](const VariantSpec& spec) { return show_number(spec.*field); };
  o.write_json = [key, field](const VariantSpec& spec, nlohmann::json& j) { j[key] = spec.*field; };
  o.read_json = [key, field, required](const nlohmann::json& j, VariantSpec& spec) {
    spec.*field = required ? j.at(key).get<double>() : j.value(key, VariantSpec{}.*field);
  };
  return o;
}

RunOption on_off_option(const std::string& name, const std::string& key, bool VariantSpec::*field, bool required,
                        std::string help) {
  RunOption o;
  o.name = name;
  o.value_name = "on|off";
  o.help = std::move(help);
  o.apply = [name, field](VariantSpec& spec, const std::string& text) { spec.*field = parse_on_off("--" + name, text); };
  o.show = [field](const VariantSpec& spec) { return on_off(spec.*field); };
  o.write_json = [key, field](const VariantSpec& spec, nlohmann::json& j) { j[key] = spec.*field; };
  o.read_json = [key, field, required](const nlohmann::json& j, VariantSpec& spec) {
    spec.*field = required ? j.at(key).get<bool>() : j.value(key, VariantSpec{}.*field);
  };
  return o;
}

// A field shown and stored as text (an enum): parse and to_string.
template <typename T>
RunOption text_option(const std::string& name, const std::string& key, T VariantSpec::*field, bool required,
                      T (*parse)(const std::string&), std::string (*show)(T), std::string help) {
  RunOption o;
  o.name = name;
  o.help = std::move(help);
  o.apply = [field, parse](VariantSpec& spec, const std::string& text) { spec.*field = parse(text); };
  o.show = [field, show](const VariantSpec& spec) { return show(spec.*field); };
  o.write_json = [key, field, show](const VariantSpec& spec, nlohmann::json& j) { j[key] = show(spec.*field); };
  o.read_json = [key, field, required, parse, show](const nlohmann::json& j, VariantSpec& spec) {
    spec.*field = parse(required ? j.at(key).get<std::string>() : j.value(key, show(VariantSpec{}.*field)));
  };
  return o;
}

std::string show_precision(Precision p) { return to_string(p); }
std::string show_device(DeviceChoice d) { return to_string(d); }
std::string show_comm_mode(CommMode m) { return to_string(m); }
std::string show_compiler(Compiler c) { return to_string(c); }

std::vector<RunOption> make_table() {
  std::vector<RunOption> t;
  t.push_back(text_option("precision", "precision", &VariantSpec::precision, true, parse_precision, show_precision,
                          "fp32 or bf16 (autocast)"));
  t.back().value_name = "fp32|bf16";
  t.back().commands = kOnRun | kOnSweep;
  t.push_back(on_off_option("compiled", "compiled", &VariantSpec::compiled, true,
                            "on: the model compiled (--compiler: Inductor's forward+backward package by default)"));
  t.back().commands = kOnRun | kOnSweep;
  // In run.json only when it is TorchScript: records before the choice existed have no key (their
  // compile_info.method says what ran), and a record without it is Inductor's.
  t.push_back(text_option("compiler", "compiler", &VariantSpec::compiler, false, parse_compiler, show_compiler,
                          "what a compiled variant runs: inductor (AOT package built by the Python side) or "
                          "torchscript (the traced forward run by the JIT)"));
  t.back().value_name = "inductor|torchscript";
  t.back().commands = kOnRun | kOnSweep | kOnLab;
  t.back().write_json = [](const VariantSpec& spec, nlohmann::json& j) {
    if (spec.compiler != Compiler::kInductor) j["compiler"] = to_string(spec.compiler);
  };

  RunOption batch = whole_number("batch", "batch_size", &VariantSpec::batch_size, true, 1, kMaxBatchSize - 1,
                                 "batch size (default: the scenario's)");
  batch.short_flag = "-b";
  batch.commands = kOnRun | kOnLab;
  t.push_back(batch);
  t.push_back(whole_number("workers", "workers", &VariantSpec::workers, false, 0, kMaxLoaderWorkers,
                           "data loader worker threads (0 = build batches in the training thread)"));
  t.back().commands = kOnRun | kOnLab;
  t.push_back(whole_number("prefetch", "prefetch", &VariantSpec::prefetch, false, 1, kMaxPrefetch,
                           "batches in flight per loader worker (default 2)"));
  t.back().commands = kOnRun | kOnLab;
  t.push_back(on_off_option("pin-memory", "pin_memory", &VariantSpec::pin_memory, false,
                            "on: pinned staging buffers + non-blocking copies (CUDA only)"));
  t.back().commands = kOnRun | kOnLab;
  t.push_back(on_off_option("persistent-workers", "persistent_workers", &VariantSpec::persistent_workers, false,
                            "off: restart loader workers every epoch (default on)"));
  t.push_back(on_off_option("sampler", "system_sampler", &VariantSpec::system_sampler, false,
                            "off: no system sampler (CPU, memory, disk, network, GPU every --interval-ms; default on)"));

  RunOption profile = on_off_option("profile", "profile", &VariantSpec::profile, false,
                                    "capture a window of steps (ops, phases) and write a Chrome trace per variant");
  profile.is_flag = true;
  profile.doctor_chooses = true;
  t.push_back(profile);
  RunOption window;
  window.name = "window";
  window.value_name = "START:COUNT";
  window.help = "capture window START:COUNT in measured steps (default 5:10, shrunk to fit)";
  window.doctor_chooses = true;
  window.apply = [](VariantSpec& spec, const std::string& text) {
    parse_window(text, &spec.window_start, &spec.window_steps);
    spec.profile = true;  // a window is a capture
  };
  window.show = [](const VariantSpec& spec) {
    return spec.window_start < 0 ? std::string() : std::to_string(spec.window_start) + ":" + std::to_string(spec.window_steps);
  };
  window.write_json = [](const VariantSpec& spec, nlohmann::json& j) {
    j["window_start"] = spec.window_start;
    j["window_steps"] = spec.window_steps;
  };
  window.read_json = [](const nlohmann::json& j, VariantSpec& spec) {
    spec.window_start = j.value("window_start", int64_t{-1});
    spec.window_steps = j.value("window_steps", int64_t{-1});
  };
  t.push_back(window);
  t.push_back(whole_number("interval-ms", "sample_interval_ms", &VariantSpec::sample_interval_ms, false,
                           kMinSampleIntervalMs, kMaxSampleIntervalMs,
                           "system sampler period (default 500)"));
  RunOption shapes = on_off_option("record-shapes", "record_shapes", &VariantSpec::record_shapes, false,
                                   "record ops' input shapes in the trace");
  shapes.is_flag = true;
  t.push_back(shapes);
  RunOption sample = real_number("op-sample", "op_sample", &VariantSpec::op_sample, false, 0, 1, true,
                                 "share of ops the window records, each op sampled independently (default 1 = "
                                 "every op; e.g. 0.1 costs a fraction of a full capture, op times are then estimates)");
  // Only when sampling: a record of every op reads as the records written before this option.
  sample.write_json = [](const VariantSpec& spec, nlohmann::json& j) {
    if (spec.op_sample != 1.0) j["op_sample"] = spec.op_sample;
  };
  t.push_back(sample);
  RunOption format;
  format.name = "trace-format";
  format.value_name = "json.gz|json";
  format.help = "json.gz (default) or json";
  format.apply = [](VariantSpec& spec, const std::string& text) {
    if (text != "json" && text != "json.gz") {
      throw InputError("invalid --trace-format '" + text + "' (expected json or json.gz)");
    }
    spec.trace_gzip = text == "json.gz";
  };
  format.show = [](const VariantSpec& spec) { return std::string(spec.trace_gzip ? "json.gz" : "json"); };
  format.write_json = [](const VariantSpec& spec, nlohmann::json& j) { j["trace_gzip"] = spec.trace_gzip; };
  format.read_json = [](const nlohmann::json& j, VariantSpec& spec) { spec.trace_gzip = j.value("trace_gzip", true); };
  t.push_back(format);
  t.push_back(optional_path("model", "BUNDLE", &VariantSpec::model,
                            "train your own model: a bundle written by `trainlab model add` (instead of --scenario)"));
  t.push_back(optional_path("data", "FILE_OR_DIR", &VariantSpec::data,
                            "with --model: train on your saved batches (torch.save'd dicts of the bundle's tensors, "
                            "samples along dim 0; a folder: every .pt in it) instead of synthesized ones"));
  RunOption data_dir;
  data_dir.name = "data-dir";
  data_dir.value_name = "DIR";
  data_dir.help = "where on-disk datasets are generated once (default results/datasets or $TRAINLAB_DATA_DIR)";
  data_dir.apply = [](VariantSpec& spec, const std::string& text) { spec.data_dir = text; };
  data_dir.show = [](const VariantSpec& spec) { return spec.data_dir; };
  data_dir.write_json = [](const VariantSpec& spec, nlohmann::json& j) { j["data_dir"] = spec.data_dir; };
  data_dir.read_json = [](const nlohmann::json& j, VariantSpec& spec) { spec.data_dir = j.value("data_dir", std::string()); };
  t.push_back(data_dir);

  t.push_back(whole_number("threads", "threads", &VariantSpec::threads, true, 0, kMaxThreads, "intra-op threads (default: LibTorch's)",
                           "0 = LibTorch's default"));
  t.push_back(whole_number("steps", "steps", &VariantSpec::steps, true, 1, kMaxSteps, "measured steps (default 50)"));
  t.push_back(whole_number("warmup", "warmup_steps", &VariantSpec::warmup_steps, true, 0, kMaxSteps,
                           "warm-up steps, never timed (default 5)"));
  RunOption budget = real_number("max-loop-s", "max_loop_s", &VariantSpec::max_loop_s, false, 0, kMaxLoopBudgetS, false,
                                 "wall-time budget of the loop in seconds (warm-up ends early after a third, "
                                 "measurement after all of it, at least 2 measured steps); default 0 = none");
  budget.lab_help =
      "wall-time budget of each variant's loop in seconds: warm-up ends early after a third, measurement after "
      "all of it (at least 2 measured steps); default 5 for the lab, 0 = none";
  t.push_back(budget);
  RunOption floor = real_number("min-loop-s", "min_loop_s", &VariantSpec::min_loop_s, false, 0, kMaxLoopBudgetS, false,
                                "measure past --steps until the measured steps last this many seconds (at most "
                                "5000 steps); default 0 = none, 1 with --repeat 2+ or --ab when --steps is not given");
  // Only where set: records made before it was an option write back as they were.
  floor.write_json = [](const VariantSpec& spec, nlohmann::json& j) {
    if (spec.min_loop_s > 0) j["min_loop_s"] = spec.min_loop_s;
  };
  floor.lab_help = "measure past --steps until each variant's measured steps last this many seconds (at most 5000 "
                   "steps); default 1 when --steps is not given, 0 = none";
  t.push_back(floor);
  t.push_back(whole_number("seed", "seed", &VariantSpec::seed, true, 0, std::numeric_limits<int64_t>::max(),
                           "seed for model init and the data slice (default 1234)"));
  t.push_back(whole_number("sync-every", "sync_every_steps", &VariantSpec::sync_every_steps, true, 0, kMaxSteps,
                           "read the loss as a number every N steps (1 = each step, 0 = never; default 10)", "0 = never"));
  t.push_back(whole_number("callback-every", "callback_every_steps", &VariantSpec::callback_every_steps, true, 0, kMaxSteps,
                           "run a host-side callback every N steps (default 0 = never)", "0 = never"));
  t.push_back(real_number("callback-ms", "callback_ms", &VariantSpec::callback_ms, true, 0, kMaxCallbackMs, false, "cost of that callback in ms"));
  t.push_back(whole_number("grad-norm-every", "grad_norm_every_steps", &VariantSpec::grad_norm_every_steps, false, 0,
                           kMaxSteps,
                           "measure the global gradient norm every N steps (0 = never; default 10)", "0 = never"));
  t.push_back(on_off_option("keep-loss-graphs", "keep_loss_graphs", &VariantSpec::keep_loss_graphs, false,
                            "on: keep every step's loss with its autograd graph (a seeded memory leak; default off)"));
  t.push_back(text_option("device", "device", &VariantSpec::device, true, parse_device, show_device, "auto, cpu or cuda"));
  t.back().value_name = "auto|cpu|cuda";
  t.push_back(whole_number("nproc", "nproc", &VariantSpec::nproc, false, 1, kMaxLocalRanks,
                           "data parallel: launch N local ranks (c10d Gloo over loopback; default 1)"));
  t.push_back(text_option("comm-mode", "comm_mode", &VariantSpec::comm_mode, false, parse_comm_mode, show_comm_mode,
                          "data parallel all-reduce: overlap (from gradient hooks during backward, default) or "
                          "serial (after backward)"));
  t.back().value_name = "overlap|serial";
  t.push_back(real_number("bucket-mb", "bucket_mb", &VariantSpec::bucket_mb, false, 0, kMaxBucketMb, true,
                          "data parallel: gradient bucket cap in MiB (default 25)"));
  t.push_back(real_number("dist-timeout-s", "dist_timeout_s", &VariantSpec::dist_timeout_s, false, 1,
                          kMaxDistTimeoutS, false,
                          "data parallel: how long a rank waits for its peers before failing (default 60)"));
  return t;
}

}  // namespace

const std::vector<RunOption>& run_options() {
  static const std::vector<RunOption> table = make_table();
  return table;
}

const RunOption* find_run_option(const std::string& name) {
  for (const RunOption& o : run_options()) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

std::vector<std::string> spec_arguments(const VariantSpec& spec) {
  const VariantSpec defaults;
  // What runs comes first: the built-in scenario, or the user's model bundle.
  std::vector<std::string> args = spec.model.empty() ? std::vector<std::string>{"--scenario", spec.scenario}
                                                     : std::vector<std::string>{"--model", spec.model};
  for (const RunOption& o : run_options()) {
    if (o.doctor_chooses || o.name == "model") continue;
    const std::string value = o.show(spec);
    if (value == o.show(defaults)) continue;
    if (o.is_flag) {
      if (value == "on") args.push_back("--" + o.name);
      continue;
    }
    args.insert(args.end(), {"--" + o.name, value});
  }
  for (const auto& [name, value] : spec.knobs) args.insert(args.end(), {"-k", name + "=" + show_number(value)});
  return args;
}

}  // namespace trainlab
