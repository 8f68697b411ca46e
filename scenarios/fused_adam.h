// Adam and AdamW as one fused kernel over all parameters (ATen's _fused_adam_ / _fused_adamw_, the
// kernels behind torch.optim.Adam(fused=True) / AdamW(fused=True)), on CPU and CUDA. LibTorch's
// torch::optim::AdamW dispatches about 36 ops per parameter tensor each step (measured: 5112 ops per
// step for MobileNetV3-small's 142 tensors, 23 % of its compiled step); this is two ops per step.
// Parameters at the same step count share one step tensor, so the count advances with one add
// (torch.optim keeps a tensor per parameter: 142 adds, 0.25 ms of a 25 ms MobileNetV3 step here).
#pragma once

#include <torch/optim/optimizer.h>

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace trainlab {

struct FusedAdamSettings {
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool decoupled_weight_decay = false;  // true: AdamW (decay applied to the weights), false: Adam (L2 in the gradient)
};

// Whether the fused kernel can update these parameters: all floating point, all on one device,
// CPU or CUDA.
bool fused_adam_supports(const std::vector<torch::Tensor>& params);

// Adam/AdamW over `params` with the fused kernel; parameters without a gradient are skipped, as
// torch.optim does. Use fused_adam_supports first; make_adam picks this or LibTorch's.
class FusedAdam : public torch::optim::Optimizer {
 public:
  FusedAdam(const std::vector<torch::Tensor>& params, const FusedAdamSettings& settings);
  torch::Tensor step(LossClosure closure = nullptr) override;

 private:
  FusedAdamSettings settings_;
  std::vector<torch::Tensor> exp_avg_, exp_avg_sq_;  // per parameter; undefined until its first gradient
  std::vector<int64_t> step_counts_;                  // per parameter: the steps that updated it
  std::map<int64_t, torch::Tensor> step_tensors_;     // a step count -> the 0-dim float tensor holding it

  // Advances the step counts of the parameters in `updated` and returns their step tensors.
  std::vector<torch::Tensor> advance_steps(const std::vector<size_t>& updated);
};

// The fused optimizer where fused_adam_supports(params), LibTorch's Adam/AdamW otherwise.
std::unique_ptr<torch::optim::Optimizer> make_adam(const std::vector<torch::Tensor>& params,
                                                   const FusedAdamSettings& settings);

}  // namespace trainlab
