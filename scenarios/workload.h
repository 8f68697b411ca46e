// What the training loop needs from a scenario: a model, its loss and optimizer, and a dataset
// the loader draws batches from. Implementations live one per file (recsys.cpp, mlp.cpp, ...).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "scenarios/registry.h"
#include "scenarios/workload_config.h"

namespace trainlab {

struct Batch {
  std::vector<torch::Tensor> inputs;
  torch::Tensor targets;
  int64_t samples = 0;
};

// Where batches come from. load_batch may be called from several loader threads at once.
class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t num_samples() const = 0;
  virtual Batch load_batch(const std::vector<int64_t>& sample_indices) = 0;
};

class Workload {
 public:
  virtual ~Workload() = default;
  virtual torch::nn::Module& model() = 0;
  // The forward in two parts. prepare() runs eagerly and takes what TorchScript's autodiff and
  // fusers handle badly (sparse embedding lookups); body() is a function of tensors only and is
  // what the compiled variant traces. Default prepare() passes the inputs through.
  virtual std::vector<torch::Tensor> prepare(const std::vector<torch::Tensor>& inputs) { return inputs; }
  virtual torch::Tensor body(const std::vector<torch::Tensor>& prepared) = 0;
  torch::Tensor forward(const std::vector<torch::Tensor>& inputs) { return body(prepare(inputs)); }
  virtual torch::Tensor loss(const torch::Tensor& output, const torch::Tensor& targets) = 0;
  virtual std::unique_ptr<torch::optim::Optimizer> make_optimizer() = 0;
  // The fixed, seeded data slice (config.slice_batches batches' worth of samples).
  virtual std::unique_ptr<Dataset> make_dataset() = 0;
};

// An in-memory dataset: sample tensors stacked along dim 0; a batch is an index_select.
class TensorDataset : public Dataset {
 public:
  TensorDataset(std::vector<torch::Tensor> inputs, torch::Tensor targets)
      : inputs_(std::move(inputs)), targets_(std::move(targets)) {}
  int64_t num_samples() const override { return targets_.size(0); }
  Batch load_batch(const std::vector<int64_t>& sample_indices) override {
    torch::Tensor index = torch::tensor(sample_indices, torch::kLong);
    Batch batch;
    for (const torch::Tensor& input : inputs_) batch.inputs.push_back(input.index_select(0, index));
    batch.targets = targets_.index_select(0, index);
    batch.samples = static_cast<int64_t>(sample_indices.size());
    return batch;
  }

 private:
  std::vector<torch::Tensor> inputs_;
  torch::Tensor targets_;
};

inline std::unique_ptr<Workload> make_workload(const std::string& name, const WorkloadConfig& config) {
  return find_workload_factory(name)(config);
}

}  // namespace trainlab
