// A model bundle: a user's PyTorch model as `trainlab model add` wrote it (scenarios/export/
// bundle_model.py): the TorchScript module and loss the eager variants train, the user's file the
// Inductor exporter imports, and manifest.json, read here. Torch-free, so the front binary
// validates --model and builds the bundle's ScenarioInfo without LibTorch.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "scenarios/scenario_info.h"

namespace trainlab {

// One tensor of the batch: its name, dtype ("float32", "int64", ...) and shape with the example's
// batch as dim 0; integers carry their value range, floating ones their mean and std.
struct BatchTensorSpec {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  bool has_range = false;
  int64_t low = 0, high = 0;  // inclusive
  double mean = 0, std = 1;
};

struct ModelBundle {
  std::string dir;            // absolute
  std::string name;
  std::string source_file;    // the user's file name, and its factory
  std::string factory;
  std::vector<BatchTensorSpec> inputs;
  BatchTensorSpec target;
  int64_t batch_size = 0;     // the example's
  std::string loss;            // a loss name, a function in the user's file, or "model"
  bool target_is_input = false;  // --loss model: the model takes the target and returns its own loss
  std::string optimizer = "adamw";
  double lr = 1e-3;
  double momentum = 0;        // sgd
  double weight_decay = 0;
  int64_t parameters = 0;
  std::vector<std::string> no_gradient;  // parameters the example step left without a gradient
  std::map<std::string, std::string> tied;  // parameter name -> the name it is tied to
  double flops_per_sample = -1;  // forward+backward per sample; -1 where nothing counted
  // Modules PyTorch's FLOP counter does not count ("nn.LSTM"): flops_per_sample leaves them out,
  // so it is partial and no efficiency may be read from it.
  std::vector<std::string> flops_not_counted;
  std::string torch_version;
  uint64_t manifest_hash = 0;   // of manifest.json's text: the bundle's identity in package caches
};

inline constexpr const char* kModelBundleScript = "bundle_model.py";

// Reads DIR/manifest.json. Throws InputError naming the bundle on a missing folder or file, or a
// manifest that is not a bundle's.
ModelBundle load_model_bundle(const std::string& dir);

// Whether DIR is a bundle `trainlab model add` wrote: a real folder (not a symbolic link) holding
// a manifest.json with the writer's keys (format 1, name, torch, inputs). Only such a folder is
// what --force may replace.
bool is_written_model_bundle(const std::string& dir);

// Why `trainlab model add` may not write its bundle at `out` (empty: it may): a symbolic link,
// anything there that is not a written bundle (a folder of other files, a file, a device, a
// FIFO), a bundle without `force`, or a parent that is not a folder. One line, naming what is there.
std::string bundle_destination_problem(const std::string& out, bool force);

// The bundle as a scenario: its name, a description, the example's batch size; no knobs.
ScenarioInfo bundle_scenario_info(const ModelBundle& bundle);

}  // namespace trainlab
