// Model bundles: manifest.json read into a ModelBundle, and the bundle as a scenario.
#include "scenarios/model_bundle.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/bounded_json.h"
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

// What is at a path that is not a written bundle, for the message that refuses it.
std::string what_is_at(const std::filesystem::file_status& status) {
  namespace fs = std::filesystem;
  switch (status.type()) {
    case fs::file_type::directory:
      return "a folder that is not a model bundle (no manifest.json trainlab model add wrote)";
    case fs::file_type::regular:
      return "a file";
    case fs::file_type::character:
      return "a character device";
    case fs::file_type::block:
      return "a block device";
    case fs::file_type::fifo:
      return "a FIFO (named pipe)";
    case fs::file_type::socket:
      return "a socket";
    default:
      return "not a folder";
  }
}

constexpr std::uintmax_t kMaxManifestBytes = 64 << 20;  // far above any manifest bundle_model.py writes

}  // namespace

bool is_written_model_bundle(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(dir, ec))) return false;
  const fs::path manifest = fs::path(dir) / "manifest.json";
  if (!fs::is_regular_file(fs::symlink_status(manifest, ec))) return false;
  const std::uintmax_t bytes = fs::file_size(manifest, ec);
  if (ec || bytes > kMaxManifestBytes) return false;
  nlohmann::json j;
  try {
    j = parse_bounded_json(read_file(manifest.string()), manifest.string());
  } catch (const std::exception&) {
    return false;
  }
  return j.is_object() && j.contains("format") && j["format"].is_number_integer() && j["format"] == 1 &&
         j.contains("name") && j["name"].is_string() && j.contains("torch") && j["torch"].is_string() &&
         j.contains("inputs") && j["inputs"].is_array();
}

std::string bundle_destination_problem(const std::string& out, bool force) {
  namespace fs = std::filesystem;
  std::string path = out;  // "link/" would look through the link
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(path, ec);
  if (fs::is_symlink(status)) {
    return "--out " + out + " is a symbolic link: give the bundle folder itself (a link is not replaced)";
  }
  if (fs::exists(status)) {
    if (is_written_model_bundle(path)) {
      return force ? "" : "--out " + out + " is a model bundle already (--force replaces it)";
    }
    return "--out " + out + " is " + what_is_at(status) + ": " +
           (force ? "--force replaces only a model bundle" : "choose another --out") +
           "; nothing was touched";
  }
  // The first ancestor that exists must be a folder (a link to one is fine).
  for (fs::path above = fs::absolute(path, ec).parent_path(); !above.empty(); above = above.parent_path()) {
    const fs::file_status above_status = fs::status(above, ec);
    if (fs::exists(above_status)) {
      return fs::is_directory(above_status) ? ""
                                            : "--out " + out + ": " + above.string() + " is not a folder";
    }
    if (above == above.root_path()) break;
  }
  return "";
}

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
  const nlohmann::json j = parse_bounded_json(text, manifest_path);
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
    bundle.target_is_input = bundle.loss == "model";
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
    bundle.flops_not_counted = j.value("flops_not_counted", std::vector<std::string>{});
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
