// mlp: a wide tabular MLP whose step is dominated by GEMMs (model-compute-bound). Labels come
// from a fixed random teacher network so the task is learnable. commheavy: the same network made
// wide and deep with a small batch: many parameters, little compute per sample, so under data
// parallelism the gradient all-reduce dominates the step (width, layers and batch tune how much).
#include <torch/torch.h>

#include "scenarios/registry.h"
#include "scenarios/workload.h"

namespace trainlab {
namespace {

class MlpWorkload : public Workload {
 public:
  explicit MlpWorkload(const WorkloadConfig& config)
      : config_(config),
        in_features_(config.knob_int("in_features")),
        classes_(config.knob_int("classes")) {
    const int64_t hidden = config.knob_int("hidden");
    int64_t width = in_features_;
    for (int64_t i = 0; i < config.knob_int("layers"); ++i) {
      net_->push_back(torch::nn::Linear(width, hidden));
      net_->push_back(torch::nn::ReLU());
      width = hidden;
    }
    net_->push_back(torch::nn::Linear(width, classes_));
  }

  torch::nn::Module& model() override { return *net_; }
  torch::Tensor body(const std::vector<torch::Tensor>& prepared) override {
    return net_->forward(prepared.at(0));
  }
  torch::Tensor loss(const torch::Tensor& output, const std::vector<torch::Tensor>& /*inputs*/,
                     const torch::Tensor& targets) override {
    return torch::nn::functional::cross_entropy(output, targets);
  }
  std::unique_ptr<torch::optim::Optimizer> make_optimizer() override {
    return std::make_unique<torch::optim::SGD>(net_->parameters(),
                                               torch::optim::SGDOptions(0.01).momentum(0.9));
  }
  std::unique_ptr<Dataset> make_dataset() override {
    const int64_t n = config_.batch_size * config_.slice_batches;
    torch::Generator gen = at::detail::createCPUGenerator(config_.seed ^ 0x3170ULL);
    torch::Tensor features = torch::randn({n, in_features_}, gen);
    torch::Tensor teacher = torch::randn({in_features_, classes_}, gen);
    torch::Tensor labels = features.matmul(teacher).argmax(1);
    return std::make_unique<TensorDataset>(std::vector<torch::Tensor>{features}, labels);
  }

 private:
  WorkloadConfig config_;
  int64_t in_features_, classes_;
  torch::nn::Sequential net_;
};

const WorkloadRegistrar kRegistrar("mlp", [](const WorkloadConfig& config) -> std::unique_ptr<Workload> {
      return std::make_unique<MlpWorkload>(config);
    });

const WorkloadRegistrar kCommHeavyRegistrar("commheavy", [](const WorkloadConfig& config) -> std::unique_ptr<Workload> {
      return std::make_unique<MlpWorkload>(config);
    });

}  // namespace
}  // namespace trainlab
