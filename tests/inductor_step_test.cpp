// The Inductor-compiled step against eager LibTorch: every built-in scenario's package, exported
// from its Python twin and AOT-compiled by the installed PyTorch, gives the same loss, gradients
// and buffers as the C++ model for the same parameters over three optimizer steps (fp32: relative
// 1e-4, absolute 1e-6; bf16 against eager autocast: 3e-2 of the tensor's norm); it is cached (a
// cold build timed, then a hit); a scenario without a twin or a missing Python says why. Slow: a
// cold compile per test (~15-40 s).
#include "harness/train/inductor_step.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>

#include "core/atomic_file.h"
#include "harness/process/python_side.h"
#include "harness/train/autocast_scope.h"
#include "scenarios/registry.h"
#include "scenarios/workload.h"

namespace trainlab {
namespace {

// std::filesystem::remove_all is not called here: in a binary linked with LibTorch it resolved to
// libtorch.so's copy and crashed; core's remove_tree does the job.
namespace fs = std::filesystem;

std::string cache_root() {
  static const std::string root = [] {
    const fs::path dir = fs::temp_directory_path() / ("trainlab-inductor-test-" + std::to_string(::getpid()));
    remove_tree(dir.string());
    return dir.string();
  }();
  return root;
}

// A small configuration of a built-in scenario (the catalogue's defaults under the knobs given)
// and one batch of its inputs.
struct Case {
  std::string scenario;
  std::map<std::string, double> knobs;
  std::function<std::pair<std::vector<torch::Tensor>, torch::Tensor>()> batch_of;
  std::string precision = "fp32";
};

std::map<std::string, double> resolved_knobs(const Case& c) {
  std::map<std::string, double> knobs;
  for (const KnobInfo& k : find_scenario(c.scenario).knobs) knobs[k.name] = k.default_value;
  for (const auto& [name, value] : c.knobs) knobs[name] = value;
  return knobs;
}

InductorPackageRequest request_for(const Case& c) {
  InductorPackageRequest r;
  r.scenario = c.scenario;
  r.knobs_json = nlohmann::json(resolved_knobs(c)).dump();
  const auto [inputs, targets] = c.batch_of();
  r.inputs = batch_shapes(inputs, targets);
  r.precision = c.precision;
  r.device = "cpu";
  r.cache_root = cache_root();
  return r;
}

std::unique_ptr<Workload> workload_for(const Case& c) {
  WorkloadConfig config;
  config.batch_size = c.batch_of().second.size(0);
  config.slice_batches = 2;
  config.seed = 7;
  config.knobs = resolved_knobs(c);
  torch::manual_seed(7);
  return make_workload(c.scenario, config);
}

// fp32: relative 1e-4, absolute 1e-6 elementwise (the same arithmetic in another summation order).
// bf16: every rounding to bf16 (8 bits of mantissa, relative 2^-8) may land on the other side, so
// the whole tensor is compared: |a - b| / |b| (Frobenius norms) at most 3e-2. Measured: 3e-3 to
// 5.5e-3 on the mlp, where eager fp32 and eager bf16 differ by 0.4e-2 to 8.7e-2.
void expect_close(const torch::Tensor& a, const torch::Tensor& b, bool bf16, const std::string& what) {
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  if (bf16) {
    const double scale = std::max(b.to(torch::kFloat).norm().item<double>(), 1e-12);
    const double relative = (a.to(torch::kFloat) - b.to(torch::kFloat)).norm().item<double>() / scale;
    EXPECT_LE(relative, 3e-2) << what;
    return;
  }
  EXPECT_TRUE(torch::allclose(a, b, /*rtol=*/1e-4, /*atol=*/1e-6))
      << what << ": max difference " << (a - b).abs().max().item<double>();
}

// Eager (under autocast for bf16, as the training loop runs it) and the package from the same
// initial parameters, three optimizer steps: the same loss and gradients at each, and the same
// buffers (BatchNorm's running statistics) after each.
void expect_parity(const Case& c, const InductorPackage& package) {
  const bool bf16 = c.precision == "bf16";
  std::unique_ptr<Workload> eager = workload_for(c);
  std::unique_ptr<Workload> compiled = workload_for(c);  // same seed: the same initial parameters
  eager->model().train();
  compiled->model().train();
  InductorStep step(package, compiled->model());
  EXPECT_EQ(step.cuda_graph(), "not on a CUDA device");
  const auto bound = compiled->model().named_parameters();
  for (const auto& [fqn, strides] : package.parameter_strides) {  // bound with the package's strides
    ASSERT_TRUE(bound.contains(fqn.substr(4))) << fqn;
    EXPECT_EQ(bound[fqn.substr(4)].strides().vec(), strides) << fqn;
  }
  auto eager_opt = eager->make_optimizer();
  auto compiled_opt = compiled->make_optimizer();
  for (int i = 0; i < 3; ++i) {
    const auto [x, y] = c.batch_of();
    torch::Tensor eager_loss;
    {
      AutocastScope autocast(torch::kCPU, bf16);
      eager_loss = eager->loss(eager->forward(x), x, y);
    }
    eager_loss.backward();
    const torch::Tensor compiled_loss = step.forward_backward(x, y);
    const std::string at_step = ", step " + std::to_string(i);
    expect_close(compiled_loss, eager_loss.detach(), bf16, c.scenario + " loss" + at_step);
    const auto e = eager->model().named_parameters();
    const auto p = compiled->model().named_parameters();
    for (const auto& item : e) {
      ASSERT_TRUE(p[item.key()].grad().defined()) << item.key();
      expect_close(p[item.key()].grad(), item.value().grad(), bf16, c.scenario + " " + item.key() + " gradient" + at_step);
    }
    const auto eager_buffers = eager->model().named_buffers();
    const auto compiled_buffers = compiled->model().named_buffers();
    for (const auto& item : eager_buffers) {
      expect_close(compiled_buffers[item.key()].to(torch::kDouble), item.value().to(torch::kDouble), bf16,
                   c.scenario + " buffer " + item.key() + at_step);
    }
    eager_opt->step();
    eager_opt->zero_grad(true);
    compiled_opt->step();
    compiled_opt->zero_grad(true);
  }
}

std::pair<std::vector<torch::Tensor>, torch::Tensor> mlp_batch() {
  return {{torch::randn({16, 64})}, torch::randint(0, 8, {16})};
}
const Case kMlp{"mlp", {{"in_features", 64}, {"hidden", 32}, {"layers", 2}, {"classes", 8}}, mlp_batch};
const Case kMlpBf16{"mlp", {{"in_features", 64}, {"hidden", 32}, {"layers", 2}, {"classes", 8}}, mlp_batch, "bf16"};
const Case kCommHeavy{"commheavy", {{"in_features", 32}, {"hidden", 48}, {"layers", 3}, {"classes", 4}}, [] {
                        return std::make_pair(std::vector<torch::Tensor>{torch::randn({8, 32})},
                                              torch::randint(0, 4, {8}));
                      }};
const Case kTinyOps{"tinyops", {{"width", 16}, {"depth", 4}}, [] {
                      torch::Tensor x = torch::randn({8, 16});
                      return std::make_pair(std::vector<torch::Tensor>{x}, torch::tanh(x.roll(1, 1)));
                    }};
// recsys with dropout 0: the package and eager draw different random masks, so parity is checked
// on the deterministic model (the default 0.1 trains the same model under other random draws).
const Case kRecsys{"recsys",
                   {{"items", 50}, {"categories", 5}, {"user_vocab", 20}, {"user_features", 2}, {"dim", 16},
                    {"layers", 2}, {"heads", 2}, {"seq_len", 6}, {"dropout", 0}},
                   [] {
                     const int64_t batch = 8, seq = 6, negatives = 4;
                     std::vector<torch::Tensor> inputs{
                         torch::randint(0, 52, {batch, seq}), torch::randint(0, 5, {batch, seq}),
                         torch::randint(0, 4, {batch, seq}), torch::randint(0, 20, {batch, 2}),
                         torch::randint(0, 50, {batch, negatives})};
                     return std::make_pair(inputs, torch::randint(0, 50, {batch}));
                   }};
const Case kVision{"vision", {{"width", 4}, {"classes", 5}, {"crop", 16}, {"image_size", 16}}, [] {
                     return std::make_pair(std::vector<torch::Tensor>{torch::randn({8, 3, 16, 16})},
                                           torch::randint(0, 5, {8}));
                   }};

TEST(InductorStepTest, TheMlpPackageGivesEagerLossAndGradientsAndIsCached) {
  if (torch_python().empty()) GTEST_SKIP() << "no Python side in this build";
  const InductorPackage cold = prepare_inductor_package(request_for(kMlp));
  EXPECT_FALSE(cold.cache_hit);
  EXPECT_GT(cold.build_s, 0.5);  // an export and a compile happened
  EXPECT_GT(cold.compile_s, 0.0);
  EXPECT_GT(cold.fused_kernels, 0);
  ASSERT_EQ(cold.gradients.size(), 6u);  // three Linear layers: weight and bias each
  EXPECT_EQ(cold.gradients.front(), "net.0.weight");
  EXPECT_TRUE(cold.buffers.empty());
  const InductorPackage hit = prepare_inductor_package(request_for(kMlp));
  EXPECT_TRUE(hit.cache_hit);
  EXPECT_EQ(hit.build_s, 0.0);
  EXPECT_EQ(hit.path, cold.path);
  expect_parity(kMlp, hit);  // its last bias has 8 elements: kept a parameter, not inlined
  remove_tree(cache_root());
}

// bf16 is exported with autocast inside the forward. Its package must be eager autocast's
// training, not fp32's: at the first step its gradients are closer to eager bf16 than eager fp32
// is (an autocast around torch.export itself gave an all-fp32 graph that failed exactly this).
TEST(InductorStepTest, TheBf16MlpPackageIsEagerAutocastsTraining) {
  if (torch_python().empty()) GTEST_SKIP() << "no Python side in this build";
  const InductorPackage package = prepare_inductor_package(request_for(kMlpBf16));
  std::unique_ptr<Workload> reference = workload_for(kMlpBf16);
  std::unique_ptr<Workload> compiled = workload_for(kMlpBf16);
  InductorStep step(package, compiled->model());
  torch::manual_seed(11);
  const auto [x, y] = kMlpBf16.batch_of();
  step.forward_backward(x, y);
  std::map<std::string, torch::Tensor> fp32_grads, bf16_grads;
  reference->loss(reference->forward(x), x, y).backward();
  for (const auto& item : reference->model().named_parameters()) fp32_grads[item.key()] = item.value().grad().clone();
  reference->model().zero_grad(true);
  {
    AutocastScope autocast(torch::kCPU, true);
    const torch::Tensor loss = reference->loss(reference->forward(x), x, y);
    loss.backward();
  }
  double package_to_bf16 = 0, fp32_to_bf16 = 0;
  for (const auto& item : reference->model().named_parameters()) {
    const torch::Tensor& bf16_grad = item.value().grad();
    package_to_bf16 += (compiled->model().named_parameters()[item.key()].grad() - bf16_grad).norm().item<double>();
    fp32_to_bf16 += (fp32_grads[item.key()] - bf16_grad).norm().item<double>();
  }
  EXPECT_LT(package_to_bf16, 0.5 * fp32_to_bf16) << package_to_bf16 << " vs " << fp32_to_bf16;
  expect_parity(kMlpBf16, package);
  remove_tree(cache_root());
}

TEST(InductorStepTest, TheTinyOpsPackageGivesEagerLossAndGradients) {
  if (torch_python().empty()) GTEST_SKIP() << "no Python side in this build";
  const InductorPackage package = prepare_inductor_package(request_for(kTinyOps));
  EXPECT_EQ(package.gradients.size(), 16u);  // four blocks: Linear and LayerNorm, weight and bias each
  expect_parity(kTinyOps, package);
  remove_tree(cache_root());
}

TEST(InductorStepTest, TheCommHeavyPackageGivesEagerLossAndGradients) {
  if (torch_python().empty()) GTEST_SKIP() << "no Python side in this build";
  const InductorPackage package = prepare_inductor_package(request_for(kCommHeavy));
  EXPECT_EQ(package.gradients.size(), 8u);  // four Linear layers
  expect_parity(kCommHeavy, package);
  remove_tree(cache_root());
}

// Embedding lookups, the sampled-negative ranking term and a TransformerEncoder in one package.
TEST(InductorStepTest, TheRecsysPackageGivesEagerLossAndGradients) {
  if (torch_python().empty()) GTEST_SKIP() << "no Python side in this build";
  const InductorPackage package = prepare_inductor_package(request_for(kRecsys));
  // 4 embeddings, the position, per layer 12 (attention in/out, two Linear, two LayerNorm), norm 2, head 2.
  EXPECT_EQ(package.gradients.size(), 4u + 1u + 2u * 12u + 2u + 2u);
  expect_parity(kRecsys, package);
  remove_tree(cache_root());
}

// BatchNorm in training mode: the package updates the model's own running statistics in place.
TEST(InductorStepTest, TheVisionPackageGivesEagerLossGradientsAndRunningStatistics) {
  if (torch_python().empty()) GTEST_SKIP() << "no Python side in this build";
  const InductorPackage package = prepare_inductor_package(request_for(kVision));
  // 9 BatchNorms (stem, 2 per stage, 2 shortcuts): running mean, variance and batch count each.
  EXPECT_EQ(package.buffers.size(), 27u);
  // With oneDNN, every convolution weight is exported channels last (aot_compile.py
  // conv_weights_channels_last): the stem, 2 per stage and the 2 shortcuts.
  if (at::hasMKLDNN()) {
    EXPECT_EQ(package.parameter_strides.size(), 9u);
  }
  expect_parity(kVision, package);
  remove_tree(cache_root());
}

// On a CUDA device the step is captured as a CUDA graph after its warm-up calls and replayed; the
// replays train as eager does. Runs only where a GPU is (the device tool's machines).
TEST(InductorStepTest, OnCudaTheStepIsReplayedAsOneCudaGraphWithEagerLosses) {
  if (torch_python().empty()) GTEST_SKIP() << "no Python side in this build";
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device here";
  InductorPackageRequest request = request_for(kMlp);
  request.device = "cuda";
  const InductorPackage package = prepare_inductor_package(request);
  std::unique_ptr<Workload> eager = workload_for(kMlp);
  std::unique_ptr<Workload> compiled = workload_for(kMlp);
  eager->model().to(torch::kCUDA);
  compiled->model().to(torch::kCUDA);
  InductorStep step(package, compiled->model());
  EXPECT_EQ(step.cuda_graph(), "not captured yet (warming up)");
  auto eager_opt = eager->make_optimizer();
  auto compiled_opt = compiled->make_optimizer();
  for (int i = 0; i < kCudaGraphWarmupCalls + 3; ++i) {
    auto [x, y] = kMlp.batch_of();
    x[0] = x[0].cuda();
    y = y.cuda();
    torch::Tensor eager_loss = eager->loss(eager->forward(x), x, y);
    eager_loss.backward();
    const torch::Tensor compiled_loss = step.forward_backward(x, y);
    expect_close(compiled_loss.cpu(), eager_loss.detach().cpu(), false, "cuda loss, step " + std::to_string(i));
    eager_opt->step();
    eager_opt->zero_grad(true);
    compiled_opt->step();
    compiled_opt->zero_grad(true);
  }
  EXPECT_EQ(step.cuda_graph(), "captured");
  remove_tree(cache_root());
}

TEST(InductorStepTest, AScenarioWithoutATwinOrWithoutPythonSaysWhy) {
  if (torch_python().empty()) GTEST_SKIP() << "no Python side in this build";
  InductorPackageRequest unknown = request_for(kMlp);
  unknown.scenario = "nosuchscenario";
  try {
    prepare_inductor_package(unknown);
    FAIL() << "a scenario without a twin";
  } catch (const InductorUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("no Python twin of scenario 'nosuchscenario'"), std::string::npos)
        << e.what();
  }
  // The refusal is kept with its full message and remembered: asked again, no exporter runs.
  const std::string log = cache_root() + "/compiled/nosuchscenario-fp32.log";
  EXPECT_NE(read_file(log).find("no Python twin of scenario 'nosuchscenario'"), std::string::npos);
  try {
    prepare_inductor_package(unknown);
    FAIL() << "a scenario without a twin, again";
  } catch (const InductorUnavailable& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("refused by an earlier run"), std::string::npos) << what;
    EXPECT_NE(what.find(log), std::string::npos) << what;
    EXPECT_NE(what.find("no Python twin of scenario 'nosuchscenario'"), std::string::npos) << what;
  }
  // Another precision is another package: tried, not answered from the fp32 refusal.
  InductorPackageRequest bf16 = unknown;
  bf16.precision = "bf16";
  try {
    prepare_inductor_package(bf16);
    FAIL() << "a scenario without a twin, in bf16";
  } catch (const InductorUnavailable& e) {
    EXPECT_EQ(std::string(e.what()).find("refused by an earlier run"), std::string::npos) << e.what();
  }
  ::setenv("TRAINLAB_PYTHON", "/nonexistent/python3", 1);
  InductorPackageRequest other = request_for(kMlp);
  other.inputs.front().sizes.front() = 8;  // not cached
  EXPECT_THROW(prepare_inductor_package(other), InductorUnavailable);
  ::unsetenv("TRAINLAB_PYTHON");
  remove_tree(cache_root());
}

}  // namespace
}  // namespace trainlab
