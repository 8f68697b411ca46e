// Model bundles: manifest.json read into a ModelBundle, and the bundle as a scenario.
#include "scenarios/model_bundle.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/errors.h"
#include "core/hash.h"

namespace trainlab {
namespace {

BatchTensorSpec tensor_spec(const nlohmann::json& j) {
  BatchTensorSpec spec;
  spec.name = j.at("name").get<std::string>();
  spec.dtype = j.at("dtype").get<std::string>();
  spec.shape = j.at("shape").get<std::vector<int64_t>>();
  if (spec.shape.empty()) throw std::invalid_argument(spec.name + " has no batch dimension");
  if (j.contains("range")) {
    spec.has_range = true;
    spec.low = j.at("range").at(0).get<int64_t>();
    spec.high = j.at("range").at(1).get<int64_t>();
  }
  spec.mean = j.value("mean", 0.0);
  spec.std = j.value("std", 1.0);
  return spec;
}

}  // namespace

ModelBundle load_model_bundle(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path path = fs::absolute(dir, ec);
  if (ec || !fs::is_directory(path)) {
    throw InputError("--model " + dir + ": no such model bundle (make one with `trainlab model add FILE.py:FACTORY ...`)");
  }
  const std::string manifest_path = (path / "manifest.json").string();
  if (!fs::exists(manifest_path)) {
    throw InputError("--model " + dir + ": not a model bundle (no manifest.json; `trainlab model add` writes one)");
  }
  const std::string text = read_file(manifest_path);
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  ModelBundle bundle;
  bundle.dir = fs::weakly_canonical(path).string();
  bundle.manifest_hash = fnv1a(text);
  try {
    if (j.is_discarded()) throw std::invalid_argument("not JSON");
    if (j.at("format").get<int>() != 1) throw std::invalid_argument("format " + j.at("format").dump() + " is not 1");
    bundle.name = j.at("name").get<std::string>();
    bundle.source_file = j.at("source").at("file").get<std::string>();
    bundle.factory = j.at("source").at("factory").get<std::string>();
    for (const nlohmann::json& input : j.at("inputs")) bundle.inputs.push_back(tensor_spec(input));
    bundle.target = tensor_spec(j.at("target"));
    bundle.batch_size = j.at("batch_size").get<int64_t>();
    bundle.loss = j.at("loss").get<std::string>();
    bundle.optimizer = j.at("optimizer").at("name").get<std::string>();
    bundle.lr = j.at("optimizer").at("lr").get<double>();
    bundle.momentum = j.at("optimizer").value("momentum", 0.0);
    bundle.weight_decay = j.at("optimizer").value("weight_decay", 0.0);
    bundle.parameters = j.at("parameters").get<int64_t>();
    bundle.no_gradient = j.value("no_gradient", std::vector<std::string>{});
    bundle.tied = j.value("tied", std::map<std::string, std::string>{});
    if (j.contains("flops_per_sample") && j.at("flops_per_sample").is_number()) {
      bundle.flops_per_sample = j.at("flops_per_sample").get<double>();
    }
    bundle.torch_version = j.value("torch", std::string());
  } catch (const std::exception& e) {
    throw InputError("--model " + dir + ": manifest.json is not a model bundle's: " + e.what());
  }
  if (bundle.inputs.empty() || bundle.batch_size <= 0) {
    throw InputError("--model " + dir + ": manifest.json lists no inputs or no batch");
  }
  for (const char* file : {"model.pt", "loss.pt"}) {
    if (!fs::exists(path / file)) throw InputError("--model " + dir + ": the bundle lacks " + file + " (write it again)");
  }
  return bundle;
}

ScenarioInfo bundle_scenario_info(const ModelBundle& bundle) {
  ScenarioInfo info;
  info.name = bundle.name;
  info.description = "your model: " + bundle.source_file + ":" + bundle.factory + ", " +
                     std::to_string(bundle.parameters) + " parameters, loss " + bundle.loss;
  info.default_batch_size = bundle.batch_size;
  return info;
}

}  // namespace trainlab
