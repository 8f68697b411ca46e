// The Inductor-compiled step against eager LibTorch: a scenario's package (mlp, tinyops), exported
// from its Python twin and AOT-compiled by the installed PyTorch, gives the same loss and gradients
// as the C++ model for the same parameters (relative 1e-4, absolute 1e-6: fp32, another summation
// order) over three optimizer steps; it is cached (a cold build timed, then a hit); a scenario
// without a twin or a missing Python says why. Slow: a cold compile per test (~15-40 s).
#include "harness/train/inductor_step.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>

#include "core/atomic_file.h"
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

// A small configuration of a built-in scenario and one batch of its inputs.
struct Case {
  std::string scenario;
  std::map<std::string, double> knobs;
  int64_t batch;
  std::function<std::pair<torch::Tensor, torch::Tensor>()> batch_of;
};

InductorPackageRequest request_for(const Case& c) {
  InductorPackageRequest r;
  r.scenario = c.scenario;
  r.knobs_json = nlohmann::json(c.knobs).dump();
  r.batch = c.batch;
  r.precision = "fp32";
  r.device = "cpu";
  r.cache_root = cache_root();
  return r;
}

std::unique_ptr<Workload> workload_for(const Case& c) {
  WorkloadConfig config;
  config.batch_size = c.batch;
  config.slice_batches = 2;
  config.seed = 7;
  config.knobs = c.knobs;
  torch::manual_seed(7);
  return make_workload(c.scenario, config);
}

void expect_close(const torch::Tensor& a, const torch::Tensor& b, const std::string& what) {
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  EXPECT_TRUE(torch::allclose(a, b, /*rtol=*/1e-4, /*atol=*/1e-6))
      << what << ": max difference " << (a - b).abs().max().item<double>();
}

// Eager and the package from the same initial parameters, three optimizer steps: the same loss
// and gradients at each.
void expect_parity(const Case& c, const InductorPackage& package) {
  std::unique_ptr<Workload> eager = workload_for(c);
  std::unique_ptr<Workload> compiled = workload_for(c);  // same seed: the same initial parameters
  InductorStep step(package, compiled->model());
  auto eager_opt = eager->make_optimizer();
  auto compiled_opt = compiled->make_optimizer();
  for (int i = 0; i < 3; ++i) {
    const auto [x, y] = c.batch_of();
    torch::Tensor eager_loss = eager->loss(eager->forward({x}), {x}, y);
    eager_loss.backward();
    const torch::Tensor compiled_loss = step.forward_backward({x}, y);
    expect_close(compiled_loss, eager_loss.detach(), c.scenario + " loss, step " + std::to_string(i));
    const auto e = eager->model().named_parameters();
    const auto p = compiled->model().named_parameters();
    for (const auto& item : e) {
      ASSERT_TRUE(p[item.key()].grad().defined()) << item.key();
      expect_close(p[item.key()].grad(), item.value().grad(),
                   c.scenario + " " + item.key() + " gradient, step " + std::to_string(i));
    }
    eager_opt->step();
    eager_opt->zero_grad(true);
    compiled_opt->step();
    compiled_opt->zero_grad(true);
  }
}

const Case kMlp{"mlp", {{"in_features", 64}, {"hidden", 32}, {"layers", 2}, {"classes", 8}}, 16, [] {
                  return std::make_pair(torch::randn({16, 64}), torch::randint(0, 8, {16}));
                }};
const Case kTinyOps{"tinyops", {{"width", 16}, {"depth", 4}}, 8, [] {
                      torch::Tensor x = torch::randn({8, 16});
                      return std::make_pair(x, torch::tanh(x.roll(1, 1)));
                    }};

TEST(InductorStepTest, TheMlpPackageGivesEagerLossAndGradientsAndIsCached) {
  if (inductor_python().empty()) GTEST_SKIP() << "no Python side in this build";
  const InductorPackage cold = prepare_inductor_package(request_for(kMlp));
  EXPECT_FALSE(cold.cache_hit);
  EXPECT_GT(cold.build_s, 0.5);  // an export and a compile happened
  EXPECT_GT(cold.compile_s, 0.0);
  EXPECT_GT(cold.fused_kernels, 0);
  ASSERT_EQ(cold.gradients.size(), 6u);  // three Linear layers: weight and bias each
  EXPECT_EQ(cold.gradients.front(), "net.0.weight");
  const InductorPackage hit = prepare_inductor_package(request_for(kMlp));
  EXPECT_TRUE(hit.cache_hit);
  EXPECT_EQ(hit.build_s, 0.0);
  EXPECT_EQ(hit.path, cold.path);
  expect_parity(kMlp, hit);  // its last bias has 8 elements: kept a parameter, not inlined
  remove_tree(cache_root());
}

TEST(InductorStepTest, TheTinyOpsPackageGivesEagerLossAndGradients) {
  if (inductor_python().empty()) GTEST_SKIP() << "no Python side in this build";
  const InductorPackage package = prepare_inductor_package(request_for(kTinyOps));
  EXPECT_EQ(package.gradients.size(), 16u);  // four blocks: Linear and LayerNorm, weight and bias each
  expect_parity(kTinyOps, package);
  remove_tree(cache_root());
}

TEST(InductorStepTest, AScenarioWithoutATwinOrWithoutPythonSaysWhy) {
  if (inductor_python().empty()) GTEST_SKIP() << "no Python side in this build";
  InductorPackageRequest vision = request_for(kMlp);
  vision.scenario = "vision";
  try {
    prepare_inductor_package(vision);
    FAIL() << "vision has no twin yet";
  } catch (const InductorUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("no Python twin of scenario 'vision'"), std::string::npos) << e.what();
  }
  ::setenv("TRAINLAB_PYTHON", "/nonexistent/python3", 1);
  InductorPackageRequest other = request_for(kMlp);
  other.batch = 8;  // not cached
  EXPECT_THROW(prepare_inductor_package(other), InductorUnavailable);
  ::unsetenv("TRAINLAB_PYTHON");
  remove_tree(cache_root());
}

}  // namespace
}  // namespace trainlab
