// tinyops: a deep stack of tiny residual blocks (Linear -> LayerNorm -> GELU) at small batch.
// Each op does almost no arithmetic, so per-op dispatch dominates (framework-overhead-bound).
#include <torch/torch.h>

#include "scenarios/registry.h"
#include "scenarios/workload.h"

namespace trainlab {
namespace {

struct TinyBlockImpl : torch::nn::Module {
  explicit TinyBlockImpl(int64_t width)
      : linear(register_module("linear", torch::nn::Linear(width, width))),
        norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({width})))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    return x + torch::gelu(norm(linear(x)));
  }
  torch::nn::Linear linear;
  torch::nn::LayerNorm norm;
};
TORCH_MODULE(TinyBlock);

class TinyOpsWorkload : public Workload {
 public:
  explicit TinyOpsWorkload(const WorkloadConfig& config)
      : config_(config), width_(config.knob_int("width")) {
    for (int64_t i = 0; i < config.knob_int("depth"); ++i) net_->push_back(TinyBlock(width_));
  }

  torch::nn::Module& model() override { return *net_; }
  torch::Tensor body(const std::vector<torch::Tensor>& prepared) override {
    return net_->forward(prepared.at(0));
  }
  torch::Tensor loss(const torch::Tensor& output, const std::vector<torch::Tensor>& /*inputs*/,
                     const torch::Tensor& targets) override {
    return torch::mse_loss(output.to(torch::kFloat), targets);
  }
  std::unique_ptr<torch::optim::Optimizer> make_optimizer() override {
    return std::make_unique<torch::optim::SGD>(net_->parameters(), torch::optim::SGDOptions(1e-3));
  }
  std::unique_ptr<Dataset> make_dataset() override {
    const int64_t n = config_.batch_size * config_.slice_batches;
    torch::Generator gen = at::detail::createCPUGenerator(config_.seed ^ 0x7171ULL);
    torch::Tensor x = torch::randn({n, width_}, gen);
    torch::Tensor y = torch::tanh(x.roll(1, 1));
    return std::make_unique<TensorDataset>(std::vector<torch::Tensor>{x}, y);
  }

 private:
  WorkloadConfig config_;
  int64_t width_;
  torch::nn::Sequential net_;
};

const WorkloadRegistrar kRegistrar("tinyops", [](const WorkloadConfig& config) -> std::unique_ptr<Workload> {
      return std::make_unique<TinyOpsWorkload>(config);
    });

}  // namespace
}  // namespace trainlab
