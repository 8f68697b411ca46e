// A user's own model as a workload: the model bundle's TorchScript module (traced in train mode by
// `trainlab model add`) run op by op through the JIT interpreter with its optimizations off (the
// eager variants stay eager: the same ATen ops, autocast applied at dispatch), its traced loss,
// the optimizer its manifest names, and batches synthesized from the manifest's specs with the
// seed, or read from the tensors the user saved (--data).
#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <unordered_set>

#include "core/errors.h"
#include "core/text.h"
#include "scenarios/fused_adam.h"
#include "scenarios/model_bundle.h"
#include "scenarios/workload.h"

namespace trainlab {
namespace {

namespace fs = std::filesystem;

// Synthesized data is kept under this size: fewer batches in the slice rather than more memory.
constexpr int64_t kMaxSynthesizedBytes = int64_t{512} << 20;

// The C++ model mirroring a TorchScript module: the same parameter and buffer tensors under the
// same names (a child module per submodule), each tensor once (a tied parameter under the first
// name met, in the module's own order). .to() and the optimizer act on the script's own tensors.
class ScriptedModel : public torch::nn::Module {
 public:
  ScriptedModel(const torch::jit::Module& script, const std::string& prefix, std::unordered_set<c10::TensorImpl*>& seen,
                std::vector<std::pair<std::string, torch::Tensor>>& tied) {
    for (const auto& p : script.named_parameters(/*recurse=*/false)) {
      if (seen.insert(p.value.unsafeGetTensorImpl()).second) {
        register_parameter(p.name, p.value, p.value.requires_grad());
      } else {
        tied.emplace_back(prefix + p.name, p.value);
      }
    }
    for (const auto& b : script.named_buffers(/*recurse=*/false)) {
      if (seen.insert(b.value.unsafeGetTensorImpl()).second) register_buffer(b.name, b.value);
    }
    for (const auto& child : script.named_children()) {
      register_module(child.name, std::make_shared<ScriptedModel>(child.value, prefix + child.name + ".", seen, tied));
    }
  }
};

torch::ScalarType scalar_type(const std::string& dtype) {
  if (dtype == "float32") return torch::kFloat;
  if (dtype == "int64") return torch::kLong;
  if (dtype == "int32") return torch::kInt;
  if (dtype == "uint8") return torch::kByte;
  if (dtype == "bool") return torch::kBool;
  throw InputError("model bundle: unsupported dtype " + dtype);
}

int64_t sample_bytes(const BatchTensorSpec& spec) {
  int64_t elements = 1;
  for (size_t d = 1; d < spec.shape.size(); ++d) elements *= spec.shape[d];
  return elements * static_cast<int64_t>(c10::elementSize(scalar_type(spec.dtype)));
}

// `samples` samples of one spec: integers uniform over its range, floats normal with its mean/std.
torch::Tensor synthesize(const BatchTensorSpec& spec, int64_t samples, torch::Generator& gen) {
  std::vector<int64_t> shape = spec.shape;
  shape[0] = samples;
  const torch::ScalarType type = scalar_type(spec.dtype);
  if (c10::isFloatingType(type)) return torch::randn(shape, gen) * spec.std + spec.mean;
  return torch::randint(spec.low, spec.high + 1, shape, gen, torch::TensorOptions().dtype(torch::kLong)).to(type);
}

// The .pt files of --data: the file, or every .pt in the folder (sorted).
std::vector<std::string> data_files(const std::string& path) {
  std::vector<std::string> files;
  if (fs::is_directory(path)) {
    for (const auto& entry : fs::directory_iterator(path)) {
      if (entry.is_regular_file() && entry.path().extension() == ".pt") files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) throw InputError("--data " + path + ": the folder holds no .pt files");
  } else if (fs::is_regular_file(path)) {
    files.push_back(path);
  } else {
    throw InputError("--data " + path + ": no such file or folder");
  }
  return files;
}

// One saved file: a dict of the bundle's tensors by name (torch.save), samples along dim 0.
std::vector<torch::Tensor> read_data_file(const std::string& file, const std::vector<BatchTensorSpec>& specs) {
  std::ifstream in(file, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  c10::IValue value;
  try {
    value = torch::pickle_load(bytes);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    throw InputError("--data " + file + ": not a torch.save'd dict of tensors (" + what.substr(0, what.find('\n')) + ")");
  }
  if (!value.isGenericDict()) throw InputError("--data " + file + ": expected a dict of tensors by name (torch.save({...}))");
  const c10::Dict<c10::IValue, c10::IValue> dict = value.toGenericDict();
  std::vector<torch::Tensor> tensors;
  for (const BatchTensorSpec& spec : specs) {
    const auto it = dict.find(c10::IValue(spec.name));
    if (it == dict.end() || !it->value().isTensor()) {
      throw InputError("--data " + file + ": no tensor '" + spec.name + "' (the bundle's batch is its inputs and target)");
    }
    torch::Tensor t = it->value().toTensor();
    if (t.scalar_type() != scalar_type(spec.dtype)) {
      throw InputError("--data " + file + ": '" + spec.name + "' is " + std::string(c10::toString(t.scalar_type())) +
                       ", the bundle's is " + spec.dtype);
    }
    const std::vector<int64_t> sample_shape(spec.shape.begin() + 1, spec.shape.end());
    if (t.dim() != static_cast<int64_t>(spec.shape.size()) || t.sizes().slice(1).vec() != sample_shape) {
      throw InputError("--data " + file + ": '" + spec.name + "' has shape " + c10::str(t.sizes()) +
                       ", the bundle's samples are " + c10::str(c10::IntArrayRef(sample_shape)) + " along dim 0");
    }
    if (!tensors.empty() && t.size(0) != tensors.front().size(0)) {
      throw InputError("--data " + file + ": '" + spec.name + "' has " + std::to_string(t.size(0)) + " samples, '" +
                       specs.front().name + "' " + std::to_string(tensors.front().size(0)));
    }
    tensors.push_back(t.contiguous());
  }
  return tensors;
}

class UserModelWorkload : public Workload {
 public:
  explicit UserModelWorkload(const WorkloadConfig& config) : config_(config), bundle_(load_model_bundle(config.model_bundle)) {
    // Interpreted op by op, as eager: no fusion, no specialisation (the compiled variant is Inductor's).
    torch::jit::setGraphExecutorOptimize(false);
    try {
      script_ = torch::jit::load(bundle_.dir + "/model.pt");
      loss_ = torch::jit::load(bundle_.dir + "/loss.pt");
    } catch (const std::exception& e) {
      const std::string what = e.what();
      throw InputError("--model " + bundle_.dir + ": the bundle's TorchScript does not load (" +
                       what.substr(0, what.find('\n')) + "); write it again with this PyTorch");
    }
    script_.train();
    loss_.train();
    std::unordered_set<c10::TensorImpl*> seen;
    model_ = std::make_shared<ScriptedModel>(script_, "", seen, tied_);
  }

  torch::nn::Module& model() override { return *model_; }
  torch::Tensor body(const std::vector<torch::Tensor>& prepared) override {
    std::vector<c10::IValue> args(prepared.begin(), prepared.end());
    return script_.forward(args).toTensor();
  }
  torch::Tensor loss(const torch::Tensor& output, const std::vector<torch::Tensor>& /*inputs*/,
                     const torch::Tensor& targets) override {
    return loss_.forward({output, targets}).toTensor();
  }
  std::unique_ptr<torch::optim::Optimizer> make_optimizer() override {
    std::vector<torch::Tensor> params = model_->parameters();
    if (bundle_.optimizer == "sgd") {
      return std::make_unique<torch::optim::SGD>(
          params, torch::optim::SGDOptions(bundle_.lr).momentum(bundle_.momentum).weight_decay(bundle_.weight_decay));
    }
    if (bundle_.optimizer == "adam" || bundle_.optimizer == "adamw") {  // torch.optim's defaults otherwise
      FusedAdamSettings settings;
      settings.lr = bundle_.lr;
      settings.weight_decay = bundle_.weight_decay;
      settings.decoupled_weight_decay = bundle_.optimizer == "adamw";
      return make_adam(params, settings);
    }
    throw InputError("--model " + bundle_.dir + ": unknown optimizer " + bundle_.optimizer);
  }
  std::unique_ptr<Dataset> make_dataset() override {
    std::vector<BatchTensorSpec> specs = bundle_.inputs;
    specs.push_back(bundle_.target);
    std::vector<torch::Tensor> tensors;
    DatasetInfo info;
    if (config_.data_path.empty()) {
      int64_t per_sample = 0;
      for (const BatchTensorSpec& spec : specs) per_sample += sample_bytes(spec);
      const int64_t wanted = config_.batch_size * config_.slice_batches;
      const int64_t samples = std::max(config_.batch_size, std::min(wanted, kMaxSynthesizedBytes / std::max<int64_t>(1, per_sample)));
      torch::Generator gen = at::detail::createCPUGenerator(config_.seed ^ 0x05e7ULL);
      for (const BatchTensorSpec& spec : specs) tensors.push_back(synthesize(spec, samples, gen));
      info.source = "synthesized: " + std::to_string(samples) + " samples from the bundle's specs and the seed";
    } else {
      std::vector<std::vector<torch::Tensor>> parts(specs.size());
      const std::vector<std::string> files = data_files(config_.data_path);
      for (const std::string& file : files) {
        std::vector<torch::Tensor> read = read_data_file(file, specs);
        for (size_t k = 0; k < specs.size(); ++k) parts[k].push_back(read[k]);
      }
      for (auto& part : parts) tensors.push_back(part.size() == 1 ? part.front() : torch::cat(part));
      const int64_t samples = tensors.front().size(0);
      if (samples < config_.batch_size) {
        throw InputError("--data " + config_.data_path + " holds " + std::to_string(samples) +
                         " samples, fewer than one batch of " + std::to_string(config_.batch_size));
      }
      info.source = config_.data_path + ": " + count_noun(samples, "sample") + " in " + count_noun(files.size(), "file") +
                    ", held in memory";
    }
    torch::Tensor targets = tensors.back();
    // --loss model: the model takes the target too (as the keyword it computes its loss from).
    if (!bundle_.target_is_input) tensors.pop_back();
    auto dataset = std::make_unique<TensorDataset>(std::move(tensors), std::move(targets));
    dataset->set_source(info.source);
    return dataset;
  }
  double flops_per_sample() const override { return bundle_.flops_per_sample; }
  std::vector<std::string> flops_not_counted() const override { return bundle_.flops_not_counted; }
  std::vector<std::pair<std::string, torch::Tensor>> tied_parameters() const override { return tied_; }

 private:
  WorkloadConfig config_;
  ModelBundle bundle_;
  torch::jit::Module script_, loss_;
  std::shared_ptr<ScriptedModel> model_;
  std::vector<std::pair<std::string, torch::Tensor>> tied_;
};

}  // namespace

std::unique_ptr<Workload> make_user_model_workload(const WorkloadConfig& config) {
  return std::make_unique<UserModelWorkload>(config);
}

}  // namespace trainlab
