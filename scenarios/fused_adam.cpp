// Adam and AdamW through ATen's fused kernels (fused_adam.h).
#include "scenarios/fused_adam.h"

#include <ATen/ATen.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>

namespace trainlab {

namespace {

// `t` laid out as `param` is: the fused kernels walk a parameter, its gradient and its moments
// element by element in memory order, so all four must share strides (a channels-last weight with
// a contiguous gradient would be updated with the wrong elements).
torch::Tensor laid_out_as(const torch::Tensor& t, const torch::Tensor& param) {
  if (t.strides() == param.strides()) return t;
  return torch::empty_like(param, at::MemoryFormat::Preserve).copy_(t);
}

}  // namespace

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
      step_counts_(params.size(), 0) {}

std::vector<torch::Tensor> FusedAdam::advance_steps(const std::vector<size_t>& updated) {
  const torch::TensorOptions options = param_groups().front().params().front().options().dtype(torch::kFloat32);
  // The usual step: every parameter that has a count is updated again, all at one count, so the
  // one shared tensor advances in place.
  const int64_t first = step_counts_[updated.front()];
  bool in_step = true;
  for (size_t i : updated) in_step = in_step && step_counts_[i] == first;
  size_t with_count = 0;
  for (int64_t count : step_counts_) with_count += count > 0 ? 1 : 0;
  in_step = in_step && (first == 0 ? with_count == 0 : with_count == updated.size());
  for (size_t i : updated) ++step_counts_[i];
  if (in_step && first > 0) {
    torch::Tensor shared = step_tensors_.at(first);
    shared.add_(1);
    step_tensors_ = {{first + 1, shared}};
  } else {
    // Counts went apart (a parameter skipped a step): one tensor per count still in use, never
    // changed in place while another count may hold it.
    std::map<int64_t, torch::Tensor> kept;
    for (int64_t count : step_counts_) {
      if (count == 0 || kept.count(count)) continue;
      const auto old = step_tensors_.find(count);
      kept[count] = old != step_tensors_.end() ? old->second : torch::full({}, static_cast<double>(count), options);
    }
    step_tensors_ = std::move(kept);
  }
  std::vector<torch::Tensor> steps;
  steps.reserve(updated.size());
  for (size_t i : updated) steps.push_back(step_tensors_.at(step_counts_[i]));
  return steps;
}

torch::Tensor FusedAdam::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  const std::vector<torch::Tensor>& params = param_groups().front().params();
  std::vector<torch::Tensor> with_grad, grads, exp_avgs, exp_avg_sqs;
  std::vector<size_t> updated;
  for (size_t i = 0; i < params.size(); ++i) {
    const torch::Tensor& p = params[i];
    if (!p.grad().defined()) continue;
    if (!exp_avg_[i].defined()) {  // its state, on its first gradient (as torch.optim creates it)
      exp_avg_[i] = torch::zeros_like(p, at::MemoryFormat::Preserve);
      exp_avg_sq_[i] = torch::zeros_like(p, at::MemoryFormat::Preserve);
    }
    exp_avg_[i] = laid_out_as(exp_avg_[i], p);  // the parameter may have been restrided since
    exp_avg_sq_[i] = laid_out_as(exp_avg_sq_[i], p);
    updated.push_back(i);
    with_grad.push_back(p);
    grads.push_back(laid_out_as(p.grad(), p));
    exp_avgs.push_back(exp_avg_[i]);
    exp_avg_sqs.push_back(exp_avg_sq_[i]);
  }
  if (with_grad.empty()) return loss;
  const std::vector<torch::Tensor> steps = advance_steps(updated);
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
