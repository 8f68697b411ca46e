// Adam and AdamW through ATen's fused kernels (fused_adam.h).
#include "scenarios/fused_adam.h"

#include <ATen/ATen.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>

namespace trainlab {

bool fused_adam_supports(const std::vector<torch::Tensor>& params) {
  if (params.empty()) return false;
  const c10::Device device = params.front().device();
  if (!device.is_cpu() && !device.is_cuda()) return false;
  for (const torch::Tensor& p : params) {
    if (p.device() != device || !p.is_floating_point()) return false;
  }
  return true;
}

FusedAdam::FusedAdam(const std::vector<torch::Tensor>& params, const FusedAdamSettings& settings)
    : torch::optim::Optimizer(std::vector<torch::optim::OptimizerParamGroup>{torch::optim::OptimizerParamGroup(params)},
                              std::make_unique<torch::optim::AdamWOptions>(settings.lr)),
      settings_(settings),
      exp_avg_(params.size()),
      exp_avg_sq_(params.size()),
      steps_(params.size()) {}

torch::Tensor FusedAdam::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  const std::vector<torch::Tensor>& params = param_groups().front().params();
  std::vector<torch::Tensor> with_grad, grads, exp_avgs, exp_avg_sqs, steps;
  for (size_t i = 0; i < params.size(); ++i) {
    const torch::Tensor& p = params[i];
    if (!p.grad().defined()) continue;
    if (!steps_[i].defined()) {  // its state, on its first gradient (as torch.optim creates it)
      exp_avg_[i] = torch::zeros_like(p, at::MemoryFormat::Preserve);
      exp_avg_sq_[i] = torch::zeros_like(p, at::MemoryFormat::Preserve);
      steps_[i] = torch::zeros({}, p.options().dtype(torch::kFloat32));
    }
    with_grad.push_back(p);
    grads.push_back(p.grad());
    exp_avgs.push_back(exp_avg_[i]);
    exp_avg_sqs.push_back(exp_avg_sq_[i]);
    steps.push_back(steps_[i]);
  }
  if (with_grad.empty()) return loss;
  at::_foreach_add_(steps, 1);
  const FusedAdamSettings& s = settings_;
  if (s.decoupled_weight_decay) {
    at::_fused_adamw_(with_grad, grads, exp_avgs, exp_avg_sqs, {}, steps, s.lr, s.beta1, s.beta2, s.weight_decay,
                      s.eps, /*amsgrad=*/false, /*maximize=*/false);
  } else {
    at::_fused_adam_(with_grad, grads, exp_avgs, exp_avg_sqs, {}, steps, s.lr, s.beta1, s.beta2, s.weight_decay,
                     s.eps, /*amsgrad=*/false, /*maximize=*/false);
  }
  return loss;
}

std::unique_ptr<torch::optim::Optimizer> make_adam(const std::vector<torch::Tensor>& params,
                                                   const FusedAdamSettings& settings) {
  if (fused_adam_supports(params)) return std::make_unique<FusedAdam>(params, settings);
  const auto betas = std::make_tuple(settings.beta1, settings.beta2);
  if (settings.decoupled_weight_decay) {
    return std::make_unique<torch::optim::AdamW>(
        params, torch::optim::AdamWOptions(settings.lr).betas(betas).eps(settings.eps).weight_decay(settings.weight_decay));
  }
  return std::make_unique<torch::optim::Adam>(
      params, torch::optim::AdamOptions(settings.lr).betas(betas).eps(settings.eps).weight_decay(settings.weight_decay));
}

}  // namespace trainlab
