// The fused Adam/AdamW (scenarios/fused_adam.h) against LibTorch's own, step by step: the same
// parameters after each step, a parameter without a gradient left as it is, and one that skips a
// step keeping its own step count (the shared step tensor splits).
#include "scenarios/fused_adam.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace trainlab {
namespace {

std::vector<torch::Tensor> random_params(uint64_t seed) {
  torch::manual_seed(seed);
  return {torch::randn({16, 8}), torch::randn({8}), torch::randn({3, 4, 5}), torch::randn({7})};
}

void compare_with_libtorch(bool decoupled) {
  std::vector<torch::Tensor> ours = random_params(7), theirs = random_params(7);
  FusedAdamSettings settings;
  settings.lr = 1e-2;
  settings.weight_decay = 0.05;
  settings.decoupled_weight_decay = decoupled;
  ASSERT_TRUE(fused_adam_supports(ours));
  FusedAdam fused(ours, settings);
  std::unique_ptr<torch::optim::Optimizer> reference;
  if (decoupled) {
    reference = std::make_unique<torch::optim::AdamW>(theirs, torch::optim::AdamWOptions(1e-2).weight_decay(0.05));
  } else {
    reference = std::make_unique<torch::optim::Adam>(theirs, torch::optim::AdamOptions(1e-2).weight_decay(0.05));
  }
  const torch::Tensor untouched = ours.back().clone();
  for (int step = 0; step < 6; ++step) {
    torch::manual_seed(100 + step);
    for (size_t i = 0; i + 1 < ours.size(); ++i) {  // the last parameter never gets a gradient
      if (i == 1 && step == 2) continue;             // the second skips the third step
      const torch::Tensor grad = torch::randn_like(ours[i]);
      ours[i].mutable_grad() = grad.clone();
      theirs[i].mutable_grad() = grad.clone();
    }
    fused.step();
    reference->step();
    for (size_t i = 0; i < ours.size(); ++i) {
      ASSERT_TRUE(torch::allclose(ours[i], theirs[i], /*rtol=*/1e-5, /*atol=*/1e-6))
          << "parameter " << i << " after step " << step << ": max difference "
          << (ours[i] - theirs[i]).abs().max().item<double>();
    }
    fused.zero_grad(true);
    reference->zero_grad(true);
  }
  EXPECT_TRUE(torch::equal(ours.back(), untouched));
  EXPECT_FALSE(torch::allclose(ours.front(), random_params(7).front()));  // it did move
}

TEST(FusedAdamTest, AdamWMatchesLibTorchsStepByStep) { compare_with_libtorch(true); }
TEST(FusedAdamTest, AdamWithL2MatchesLibTorchsStepByStep) { compare_with_libtorch(false); }

// A channels-last weight (as an Inductor package binds convolution weights on CPU) whose
// gradient arrives contiguous: each element must be updated with its own gradient.
TEST(FusedAdamTest, AChannelsLastParameterWithAContiguousGradientIsUpdatedElementByElement) {
  torch::manual_seed(3);
  const torch::Tensor start = torch::randn({8, 4, 3, 3});
  torch::Tensor ours = torch::empty_strided(start.sizes(), {36, 1, 12, 4});
  ours.copy_(start);
  torch::Tensor theirs = start.clone();
  FusedAdamSettings settings;
  settings.lr = 1e-2;
  settings.decoupled_weight_decay = true;
  FusedAdam fused({ours}, settings);
  torch::optim::AdamW reference({theirs}, torch::optim::AdamWOptions(1e-2).weight_decay(0));
  for (int step = 0; step < 3; ++step) {
    const torch::Tensor grad = torch::randn({8, 4, 3, 3});  // contiguous
    ours.mutable_grad() = grad.clone();
    theirs.mutable_grad() = grad.clone();
    fused.step();
    reference.step();
    ASSERT_EQ(ours.strides().vec(), (std::vector<int64_t>{36, 1, 12, 4})) << "the parameter keeps its layout";
    ASSERT_TRUE(torch::allclose(ours, theirs, /*rtol=*/1e-5, /*atol=*/1e-6))
        << "after step " << step << ": max difference " << (ours - theirs).abs().max().item<double>();
  }
}

TEST(FusedAdamTest, MixedOrIntegerParametersFallBackToLibTorch) {
  EXPECT_FALSE(fused_adam_supports({}));
  EXPECT_FALSE(fused_adam_supports({torch::randn({2}), torch::zeros({2}, torch::kLong)}));
  FusedAdamSettings settings;
  settings.decoupled_weight_decay = true;
  EXPECT_NE(dynamic_cast<torch::optim::AdamW*>(make_adam({torch::zeros({2}, torch::kLong)}, settings).get()), nullptr);
  EXPECT_NE(dynamic_cast<FusedAdam*>(make_adam({torch::randn({2})}, settings).get()), nullptr);
}

}  // namespace
}  // namespace trainlab
