// The Inductor-compiled step: package build (Python exporter in a child process) and the run.
#include "harness/train/inductor_step.h"

#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/torch.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "core/atomic_file.h"
#include "harness/runner/child_process.h"
#include "scenarios/data/dataset_cache.h"
#include "core/hash.h"

namespace trainlab {
namespace {

constexpr int kPackageFormatVersion = 1;
constexpr double kBuildTimeoutS = 1800;

std::string exporter_script() {
  if (const char* env = std::getenv("TRAINLAB_EXPORT_SCRIPT"); env != nullptr && *env != '\0') return env;
  return TRAINLAB_EXPORT_SCRIPT;
}

// "net.0.weight" -> "net_0_weight": how the package names its constants.
std::string constant_name(const std::string& fqn) {
  std::string name = fqn;
  for (char& c : name) {
    if (c == '.') c = '_';
  }
  return name;
}

}  // namespace

std::string inductor_python() {
  if (const char* env = std::getenv("TRAINLAB_PYTHON"); env != nullptr && *env != '\0') return env;
  const std::string built_with = TRAINLAB_TORCH_PYTHON;
  return !built_with.empty() && ::access(built_with.c_str(), X_OK) == 0 ? built_with : "";
}

InductorPackage prepare_inductor_package(const InductorPackageRequest& request) {
  const std::string python = inductor_python();
  if (python.empty()) {
    throw InductorUnavailable(
        "the compiled variant needs the Python side (the PyTorch trainlab was built against, or $TRAINLAB_PYTHON)");
  }
  const std::string script = exporter_script();
  std::string script_text;
  try {
    script_text = read_file(script);
  } catch (const std::exception& e) {
    throw InductorUnavailable(std::string("the compiled variant needs its exporter: ") + e.what());
  }
  const std::string script_hash = hex16(fnv1a(script_text));
  const nlohmann::json params = {{"scenario", request.scenario},
                                 {"knobs", nlohmann::json::parse(request.knobs_json)},
                                 {"batch", request.batch},
                                 {"precision", request.precision},
                                 {"device", request.device},
                                 {"torch", TORCH_VERSION},
                                 {"exporter", script_hash}};
  PreparedDataset prepared;
  try {
    prepared = prepare_dataset(
        request.cache_root, "inductor-" + request.scenario, kPackageFormatVersion, params,
        [&](const std::string& tmp_dir) {
          const std::string log = tmp_dir + "/build.log";
          ChildLaunch launch{{script, "--scenario", request.scenario, "--knobs", request.knobs_json, "--batch",
                              std::to_string(request.batch), "--precision", request.precision, "--device",
                              request.device, "--out", tmp_dir + "/model.pt2", "--report", tmp_dir + "/build.json"},
                             log,
                             {},
                             python,
                             python};
          const ChildOutcome ended = run_self_as_children({launch}, kBuildTimeoutS).front();
          if (!ended.exited || ended.exit_status != 0) {
            throw InductorUnavailable("export/compile " + ended.describe() + ": " + last_line_of(log));
          }
        });
  } catch (const InductorUnavailable&) {
    throw;
  } catch (const std::exception& e) {
    throw InductorUnavailable(std::string("building the Inductor package failed: ") + e.what());
  }
  InductorPackage package;
  package.path = prepared.dir + "/model.pt2";
  package.cache_hit = !prepared.generated;
  package.build_s = prepared.generate_s;
  const nlohmann::json build = nlohmann::json::parse(read_file(prepared.dir + "/build.json"), nullptr, false);
  if (build.is_discarded() || !build.contains("gradients")) {
    throw InductorUnavailable(prepared.dir + "/build.json: no gradient list from the exporter");
  }
  package.export_s = build.value("export_s", 0.0);
  package.compile_s = build.value("compile_s", 0.0);
  package.fused_kernels = build.value("fused_kernels", int64_t{0});
  package.gradients = build.at("gradients").get<std::vector<std::string>>();
  return package;
}

struct InductorStep::State {
  std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader;
  std::vector<torch::Tensor> parameters;  // in the package's gradient order
};

InductorStep::InductorStep(const InductorPackage& package, torch::nn::Module& model) : state_(std::make_unique<State>()) {
  try {
    state_->loader = std::make_unique<torch::inductor::AOTIModelPackageLoader>(package.path);
  } catch (const std::exception& e) {
    throw InductorUnavailable(std::string("loading ") + package.path + " failed: " + e.what());
  }
  const std::vector<std::string> fqns = state_->loader->get_constant_fqns();
  for (const std::string& fqn : package.gradients) {
    if (std::find(fqns.begin(), fqns.end(), fqn) == fqns.end()) {
      throw InductorUnavailable("the package baked parameter " + fqn + " into its code: it could not follow training");
    }
  }
  std::unordered_map<std::string, torch::Tensor> by_name;
  for (const auto& item : model.named_parameters()) by_name["net." + item.key()] = item.value();
  std::unordered_map<std::string, at::Tensor> constants;
  for (const std::string& fqn : package.gradients) {
    const auto it = by_name.find(fqn);
    if (it == by_name.end()) {
      throw InductorUnavailable("the package's parameter " + fqn + " is not the C++ model's: its twin differs");
    }
    state_->parameters.push_back(it->second);
    constants[constant_name(fqn)] = it->second.detach();
  }
  if (state_->parameters.size() != by_name.size()) {
    throw InductorUnavailable("the package has " + std::to_string(state_->parameters.size()) +
                              " parameters, the C++ model " + std::to_string(by_name.size()) + ": its twin differs");
  }
  // The package reads the parameters' own storage: the optimizer's in-place updates are what it runs.
  state_->loader->update_constant_buffer(constants, /*use_inactive=*/false, /*validate_full_updates=*/true,
                                         /*user_managed=*/true);
}

InductorStep::~InductorStep() = default;

at::Tensor InductorStep::forward_backward(const std::vector<at::Tensor>& inputs, const at::Tensor& targets) {
  std::vector<at::Tensor> args = inputs;
  args.push_back(targets);
  std::vector<at::Tensor> outputs = state_->loader->run(args);
  if (outputs.size() != state_->parameters.size() + 1) {
    throw std::runtime_error("the Inductor package returned " + std::to_string(outputs.size()) + " outputs, expected " +
                             std::to_string(state_->parameters.size() + 1));
  }
  for (size_t i = 0; i < state_->parameters.size(); ++i) state_->parameters[i].mutable_grad() = outputs[i + 1];
  return outputs[0];
}

}  // namespace trainlab
