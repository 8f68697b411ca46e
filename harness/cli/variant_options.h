// Options shared by every command that runs variants (run, profile, baseline, sweep, doctor's check):
// the CLI's fields, their flags, and how they become a VariantSpec and LabOptions.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "diagnostics/thresholds.h"
#include "harness/runner/lab.h"
#include "scenarios/registry.h"

namespace trainlab {

// Ranges of the commands' own numbers, checked by their options' validators (option_bounds.h) as
// the command line is read (the run options' ranges are the table's, core/run_options.h; doctor's
// --repeat and --max-changes are harness/runner/doctor.h's).
inline constexpr double kMaxVariantTimeoutS = 7 * 86400;  // --timeout-s: a week
inline constexpr double kMaxMemoryLimitGb = 1'000'000;    // --memory-limit-gb: a petabyte
inline constexpr int kMaxRepeat = 100;                    // --repeat

// Options shared by every command that runs variants: the run options (core/run_options.h) as
// given, by name, and the command's own (scenario, preset, knobs, --set, results, timeout, repeat,
// thresholds).
struct VariantOptions {
  std::string scenario;                 // empty: kDefaultScenario (unless --model)
  std::string preset;                   // a scenario's named knob setting (see `trainlab list`)
  std::vector<std::string> knobs;       // name=value
  std::vector<std::string> settings;    // --set NAME=VALUE[,...], --ab's syntax, applied last
  std::string results_dir = "results";
  double timeout_s = 1800;
  double memory_limit_gb = 0;           // 0: the default share of the machine (child_process.h)
  int repeat = 1;
  std::string thresholds_path;
  // Each run option's text as given ("" when not given); flags given read "on".
  std::map<std::string, std::string> given;
  std::map<std::string, bool> flags;    // where CLI11 puts the flags (--profile, --record-shapes)
  bool was_given(const std::string& name) const;
};

// Which command the options are for: the lab fixes precision/compiled per variant; the sweep takes
// lists for the loader settings and batch size (RunOption::commands).
enum class CommandKind { kRun, kLab, kSweep, kDoctor };

// Adds a flag for every run option the command offers, with the table's help text, and the
// command's own options.

void add_variant_options(CLI::App* cmd, VariantOptions& o, CommandKind kind);

// "NAME=VALUE" -> (NAME, VALUE); InputError naming `option` otherwise.
std::pair<std::string, std::string> split_setting(const std::string& text, const std::string& option);

// The options as a resolved spec: the given run options applied in the table's order, then the
// preset and knobs, then --set (scenario defaults filled, every value checked, --device cuda only
// where a device is usable); InputError otherwise.
VariantSpec build_spec(const VariantOptions& o);

// A spec that asks for --device cuda where the driver finds no device: InputError, one line with
// the driver's reason, before a run folder or a child exists (the child would fall back to saying
// "running on CPU" and then fail).
void check_device_usable(const VariantSpec& spec);


// A thresholds file laid over the defaults; InputError naming the file when it is malformed.
Thresholds load_thresholds(const std::string& path);

// Commands whose ranks cannot merge under an outside launcher (they decide what to run as they go):
// InputError naming --nproc when WORLD_SIZE says this process is one rank of several.
void refuse_under_launcher(const std::string& command);

// The lab's options (spec, results folder, timeout, repetitions, thresholds kept in *thresholds_storage).
LabOptions build_lab_options(const VariantOptions& o, Thresholds* thresholds_storage);

}  // namespace trainlab
