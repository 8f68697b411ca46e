// Options shared by every command that runs variants (run, profile, baseline, sweep, doctor's check):
// the CLI's fields, their flags, and how they become a VariantSpec and LabOptions.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "diagnostics/thresholds.h"
#include "harness/runner/lab.h"
#include "scenarios/registry.h"

namespace trainlab {

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

void add_variant_options(CLI::App* cmd, VariantOptions& o, CommandKind kind);

// "NAME=VALUE" -> (NAME, VALUE); InputError naming `option` otherwise.
std::pair<std::string, std::string> split_setting(const std::string& text, const std::string& option);

// The options as a resolved spec (scenario defaults filled, every value checked); InputError otherwise.
VariantSpec build_spec(const VariantOptions& o);

// A thresholds file laid over the defaults; InputError naming the file when it is malformed.
Thresholds load_thresholds(const std::string& path);

// The lab's options (spec, results folder, timeout, repetitions, thresholds kept in *thresholds_storage).
LabOptions build_lab_options(const VariantOptions& o, Thresholds* thresholds_storage);

}  // namespace trainlab
