// What the training loop needs from a scenario: a model, its loss and optimizer, and a dataset
// the loader draws batches from. Implementations live one per file (recsys.cpp, mlp.cpp, ...).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "core/run_record.h"
#include "scenarios/data/dataset_cache.h"
#include "scenarios/data/sample_source.h"
#include "scenarios/registry.h"
#include "scenarios/workload_config.h"
#include "core/units.h"

namespace trainlab {

struct Batch {
  std::vector<torch::Tensor> inputs;
  torch::Tensor targets;
  int64_t samples = 0;
  StageTimes stage_ns;  // read / decode / augment / collate time spent building it
};

// Where batches come from. load_batch is called from several loader threads at once.
class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t num_samples() const = 0;
  virtual Batch load_batch(const BatchRequest& request) const = 0;
  // What the data is and where it lives, for the run record.
  virtual DatasetInfo info() const = 0;
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
  // inputs are the batch's inputs (some losses use more than the output, e.g. sampled negatives).
  virtual torch::Tensor loss(const torch::Tensor& output, const std::vector<torch::Tensor>& inputs,
                             const torch::Tensor& targets) = 0;
  virtual std::unique_ptr<torch::optim::Optimizer> make_optimizer() = 0;
  // The fixed, seeded data: in memory (config.slice_batches batches' worth of samples) or an
  // on-disk dataset generated once under config.data_root.
  virtual std::unique_ptr<Dataset> make_dataset() = 0;
  // Forward+backward FLOPs per sample where the workload counted them; -1: the loop estimates
  // them from the model's Linear layers.
  virtual double flops_per_sample() const { return -1; }
  // Module types flops_per_sample() leaves out (PyTorch's counter has no formula for them, e.g.
  // "nn.LSTM"): the count is partial.
  virtual std::vector<std::string> flops_not_counted() const { return {}; }
  // Other names of parameters in model() (tied weights: each tensor is in model() once, under its
  // first name), for binding an exported package that may use any of them.
  virtual std::vector<std::pair<std::string, torch::Tensor>> tied_parameters() const { return {}; }
};

// A user's model from a model bundle (scenarios/user_model.cpp): config.model_bundle.
std::unique_ptr<Workload> make_user_model_workload(const WorkloadConfig& config);

// An in-memory dataset: sample tensors stacked along dim 0; a batch is an index_select (all of
// its time counts as collate).
class TensorDataset : public Dataset {
 public:
  TensorDataset(std::vector<torch::Tensor> inputs, torch::Tensor targets)
      : inputs_(std::move(inputs)), targets_(std::move(targets)) {}
  int64_t num_samples() const override { return targets_.size(0); }
  Batch load_batch(const BatchRequest& request) const override {
    const int64_t start_ns = monotonic_ns();
    torch::Tensor index = torch::tensor(request.sample_indices, torch::kLong);
    Batch batch;
    for (const torch::Tensor& input : inputs_) batch.inputs.push_back(input.index_select(0, index));
    batch.targets = targets_.index_select(0, index);
    batch.samples = static_cast<int64_t>(request.sample_indices.size());
    batch.stage_ns.collate_ns = monotonic_ns() - start_ns;
    return batch;
  }
  DatasetInfo info() const override {
    DatasetInfo info;
    info.source = source_.empty() ? "in memory: " + std::to_string(num_samples()) + " samples generated from the seed"
                                  : source_;
    return info;
  }
  // Where the samples came from, for the run record (default: generated from the seed).
  void set_source(std::string source) { source_ = std::move(source); }

 private:
  std::vector<torch::Tensor> inputs_;
  torch::Tensor targets_;
  std::string source_;
};

// Batch buffers in page-locked host memory (LibTorch's pinned allocator), so host-to-device copies
// can run asynchronously. The deleter keeps the pinned tensor, so HostDataset can hand out views of
// it: a non-blocking copy then records its stream on the allocator's block, which is not reused
// until the copy is done.
struct PinnedBufferDeleter {
  torch::Tensor buffer;
  void operator()(void*) { buffer.reset(); }
};

inline BufferAllocator pinned_buffer_allocator() {
  return [](size_t bytes) {
    torch::Tensor buffer = torch::empty({static_cast<int64_t>(bytes)},
                                        torch::TensorOptions().dtype(torch::kUInt8).pinned_memory(true));
    void* data = buffer.data_ptr();
    return std::shared_ptr<void>(data, PinnedBufferDeleter{buffer});
  };
}

// An on-disk dataset: a SampleSource builds host batches; their buffers become tensors without a
// copy (the tensor keeps the buffer alive).
class HostDataset : public Dataset {
 public:
  HostDataset(std::unique_ptr<SampleSource> source, BufferAllocator allocate, DatasetInfo info)
      : source_(std::move(source)), allocate_(std::move(allocate)), info_(std::move(info)) {
    info_.source = source_->describe();
  }
  int64_t num_samples() const override { return source_->num_samples(); }
  Batch load_batch(const BatchRequest& request) const override {
    HostBatch host = source_->load_batch(request, allocate_);
    Batch batch;
    for (const HostTensor& t : host.inputs) batch.inputs.push_back(as_tensor(t));
    batch.targets = as_tensor(host.targets);
    batch.samples = host.samples;
    batch.stage_ns = host.stage_ns;
    return batch;
  }
  DatasetInfo info() const override { return info_; }

  static torch::Tensor as_tensor(const HostTensor& t) {
    torch::ScalarType type = torch::kFloat;
    switch (t.type) {
      case ElementType::kUInt8: type = torch::kUInt8; break;
      case ElementType::kInt32: type = torch::kInt; break;
      case ElementType::kInt64: type = torch::kLong; break;
      case ElementType::kFloat32: type = torch::kFloat; break;
    }
    if (const auto* pinned = std::get_deleter<PinnedBufferDeleter>(t.storage)) {
      return pinned->buffer.view(type).view(t.shape);  // same storage, allocator context intact
    }
    std::shared_ptr<void> keep_alive = t.storage;
    return torch::from_blob(t.data, t.shape, [keep_alive](void*) mutable { keep_alive.reset(); },
                            torch::TensorOptions().dtype(type));
  }

 private:
  std::unique_ptr<SampleSource> source_;
  BufferAllocator allocate_;
  DatasetInfo info_;
};

// Opens a prepared on-disk dataset: its decoded cache (built first if missing) when use_cache,
// else the encoded files. The run record learns where the data lives, whether this run generated
// it and how long that took.
template <class PrepareCache, class OpenCache, class OpenEncoded>
std::unique_ptr<Dataset> open_disk_dataset(const PreparedDataset& prepared, bool use_cache,
                                           const BufferAllocator& allocate, PrepareCache prepare_cache,
                                           OpenCache open_cache, OpenEncoded open_encoded) {
  DatasetInfo info;
  info.dir = prepared.dir;
  info.generated = prepared.generated;
  info.generate_s = prepared.generate_s;
  info.generated_because = prepared.generated_because;
  if (!use_cache) return std::make_unique<HostDataset>(open_encoded(prepared.dir), allocate, info);
  const int64_t start_ns = monotonic_ns();
  info.decoded_cache = prepare_cache(prepared.dir);
  info.decoded_cache_prepare_s = ns_to_s(monotonic_ns() - start_ns);
  return std::make_unique<HostDataset>(open_cache(prepared.dir), allocate, info);
}

inline std::unique_ptr<Workload> make_workload(const std::string& name, const WorkloadConfig& config) {
  if (!config.model_bundle.empty()) return make_user_model_workload(config);
  return find_workload_factory(name)(config);
}

}  // namespace trainlab
