// The shared run options: flags (add_variant_options) and their conversion to a VariantSpec.
#include "harness/cli/variant_options.h"

#include "harness/runner/doctor.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/run_options.h"
#include "harness/cli/option_bounds.h"
#include "harness/dist/dist_env.h"
#include "harness/runner/cuda_check.h"
#include "harness/runner/launch_group.h"

namespace trainlab {

bool VariantOptions::was_given(const std::string& name) const {
  const auto flag = flags.find(name);
  if (flag != flags.end() && flag->second) return true;
  const auto text = given.find(name);
  return text != given.end() && !text->second.empty();
}

void add_variant_options(CLI::App* cmd, VariantOptions& o, CommandKind kind) {
  const unsigned mask = kind == CommandKind::kLab ? kOnLab : kind == CommandKind::kSweep ? kOnSweep : kOnRun;
  cmd->add_option("--scenario,-s", o.scenario, "built-in scenario (see `trainlab list`; default recsys)");
  if (kind == CommandKind::kRun || kind == CommandKind::kDoctor) {
    cmd->add_option("--set", o.settings,
                    "settings in --ab's syntax, applied last: NAME=VALUE[,...] with an option (workers=2, "
                    "precision=bf16) or a knob (cache=1); repeatable");
  }
  for (const RunOption& option : run_options()) {
    if ((option.commands & mask) == 0) continue;
    const std::string flag = "--" + option.name + (option.short_flag.empty() ? "" : "," + option.short_flag);
    const std::string& help = kind == CommandKind::kLab && !option.lab_help.empty() ? option.lab_help : option.help;
    if (option.is_flag) {
      cmd->add_flag(flag, o.flags[option.name], help);
    } else {
      cmd->add_option(flag, o.given[option.name], help)->type_name(option.value_name);
    }
  }
  cmd->add_option("--preset", o.preset, "the scenario's named knob setting, e.g. recsys data-bound (see `trainlab list`; -k wins)");
  cmd->add_option("--knob,-k", o.knobs, "scenario knob NAME=VALUE (repeatable; see `trainlab list`)");
  cmd->add_option("--results", o.results_dir, "results folder (default ./results)");
  real_number_in(cmd->add_option("--timeout-s", o.timeout_s, "kill a variant that runs longer than this (default 1800)"),
                 0, kMaxVariantTimeoutS, /*min_exclusive=*/true);
  real_number_in(cmd->add_option("--memory-limit-gb", o.memory_limit_gb,
                                 "memory a variant's process may allocate on the CPU, in GiB (default: 3/4 of the "
                                 "machine's memory, shared by the ranks of a --nproc variant)"),
                 0, kMaxMemoryLimitGb, /*min_exclusive=*/false, "0: the default");
  const bool doctor = kind == CommandKind::kDoctor;
  whole_number_in(cmd->add_option("--repeat", o.repeat,
                                  doctor ? "A/B repetitions a side (2 to 20; default 3)"
                                  : kind == CommandKind::kSweep
                                      ? "run the grid this many rounds (each point once a round); figures are the "
                                        "rounds' median"
                                  : kind == CommandKind::kLab
                                      ? "run the three variants this many times, interleaved (default 3: the gains' "
                                        "intervals)"
                                      : "run each variant this many times, interleaved (default 1; compare uses them)"),
                  doctor ? kMinDoctorRepeat : 1, doctor ? kMaxDoctorRepeat : kMaxRepeat);
  cmd->add_option("--thresholds", o.thresholds_path, "thresholds JSON replacing configs/thresholds.json");
}

std::pair<std::string, std::string> split_setting(const std::string& text, const std::string& option) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw InputError("invalid " + option + " '" + text + "' (expected NAME=VALUE)");
  }
  return {text.substr(0, eq), text.substr(eq + 1)};
}

namespace {
// --data-dir: an existing writable folder, or a path whose nearest existing ancestor is one (the
// folder is made on first use). Said up front, not by the child after the run folder exists.
void check_data_dir(const std::string& data_dir) {
  std::error_code ec;
  std::filesystem::path probe = std::filesystem::absolute(data_dir, ec);
  while (!probe.empty() && !std::filesystem::exists(probe, ec)) {
    if (probe == probe.parent_path()) break;
    probe = probe.parent_path();
  }
  if (!std::filesystem::is_directory(probe, ec)) {
    throw InputError("--data-dir " + data_dir + ": " + probe.string() + " is not a folder");
  }
  if (::access(probe.c_str(), W_OK | X_OK) != 0) {
    throw InputError("--data-dir " + data_dir + ": " + probe.string() + " is not writable");
  }
}
}  // namespace

VariantSpec build_spec(const VariantOptions& o) {
  VariantSpec spec;
  for (const RunOption& option : run_options()) {
    if (!o.was_given(option.name)) continue;
    const auto text = o.given.find(option.name);
    option.apply(spec, option.is_flag ? std::string("on") : text->second);
  }
  if (!spec.model.empty() && !o.scenario.empty()) throw InputError("--scenario and --model exclude each other");
  if (spec.model.empty() && !spec.data.empty()) {
    throw InputError("--data is for your own model (--model BUNDLE); built-in scenarios make their own data");
  }
  if (!spec.data.empty() && !std::filesystem::exists(spec.data)) throw InputError("--data " + spec.data + ": no such file or folder");
  if (!spec.data_dir.empty()) check_data_dir(spec.data_dir);
  if (!spec.model.empty() && spec.compiler == Compiler::kTorchScript) {
    throw InputError("--compiler torchscript is for built-in scenarios; your model's compiled variant is Inductor's");
  }
  spec.scenario = o.scenario.empty() ? kDefaultScenario : o.scenario;
  const ScenarioInfo& info = scenario_of(spec);
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
  check_device_usable(spec);
  return spec;
}

void check_device_usable(const VariantSpec& spec) {
  if (spec.device == DeviceChoice::kCuda && !cuda_device_present()) {
    throw InputError("--device cuda: no CUDA device is usable here (" + cuda_absent_reason() +
                     "); use --device cpu or auto");
  }
}

Thresholds load_thresholds(const std::string& path) {
  try {
    return Thresholds::parse(read_file(path)).overriding(Thresholds::defaults());
  } catch (const std::invalid_argument& e) {
    throw InputError(path + ": " + e.what());
  }
}

void refuse_under_launcher(const std::string& command) {
  const DistEnv launched = dist_env_from_environment();
  if (!launched.distributed()) return;
  throw InputError("`trainlab " + command + "` does not run under a launcher (WORLD_SIZE=" +
                   std::to_string(launched.world_size) + "): run it once, with --nproc " +
                   std::to_string(launched.world_size) + " for data parallel variants; run, profile and baseline merge a launch's ranks");
}

LabOptions build_lab_options(const VariantOptions& o, Thresholds* thresholds_storage) {
  LabOptions lab;
  lab.base = build_spec(o);
  lab.results_dir = o.results_dir;
  lab.variant_timeout_s = o.timeout_s;
  lab.memory_limit_bytes = static_cast<int64_t>(o.memory_limit_gb * 1073741824.0);
  lab.repeat = o.repeat;
  if (!o.thresholds_path.empty()) {
    *thresholds_storage = load_thresholds(o.thresholds_path);
    lab.thresholds = thresholds_storage;
  }
  // Under a launcher (torchrun sets WORLD_SIZE, RANK, MASTER_*): its variables are checked here,
  // before a results folder or a child exists.
  const DistEnv launched = dist_env_from_environment();
  if (launched.distributed()) check_master_addr(launched.master_addr, std::min(lab.base.dist_timeout_s, 10.0));
  lab.launch = launcher_rank_from_environment();  // its ranks write one merged run (launch_group.h)
  lab.live_progress = ::isatty(STDERR_FILENO) == 1;
  if (lab.launch && lab.base.nproc > 1) {
    throw InputError("--nproc " + std::to_string(lab.base.nproc) + " under a launcher that already started " +
                     std::to_string(lab.launch->world_size) + " ranks (WORLD_SIZE): use one or the other");
  }
  // --nproc on each of several machines (NNODES, NODE_RANK, MASTER_ADDR, MASTER_PORT).
  if (lab.base.nproc > 1) {
    const NodesOfJob nodes = nodes_of_job_from_environment();
    if (nodes.several()) check_master_addr(nodes.master_addr, std::min(lab.base.dist_timeout_s, 10.0));
  }
  ensure_writable_dir(lab.results_dir);
  return lab;
}

}  // namespace trainlab
