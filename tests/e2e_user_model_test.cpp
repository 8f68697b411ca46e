// End-to-end: the user's own model. Each example of examples/ (a CNN with BatchNorm and dropout, a
// small language model with tied embeddings and a custom loss, a two-tower recommender with
// several inputs, integer inputs feeding embeddings and parameters that get no gradient) is made a
// bundle at small size, then the lab gives its three variants with the compiled one Inductor's, the
// profile a verdict and the doctor its trials. User errors: one line, exit 2, nothing left behind.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "e2e_support.h"
#include "process_gone.h"

namespace trainlab::e2e {
namespace {

namespace fs = std::filesystem;

struct Example {
  std::string name, add_args;
};

const Example kCnn{"small_cnn",
                   "examples/small_cnn.py:small_cnn --arg width=8 --input images:float32[16,3,16,16] "
                   "--target labels:int64[16]:0..9"};
const Example kLm{"tiny_lm",
                  "examples/tiny_lm.py:tiny_lm --arg vocab=200 --arg dim=32 --arg layers=1 --arg heads=2 "
                  "--arg max_seq=16 --input tokens:int64[8,16]:0..199 --target next_tokens:int64[8,16]:0..199 "
                  "--loss lm_loss"};
const Example kTwoTower{"two_tower",
                        "examples/two_tower.py:two_tower --arg users=300 --arg items=500 --arg dim=16 "
                        "--input user_ids:int64[64]:0..299 --input user_features:float32[64,8] "
                        "--input item_ids:int64[64]:0..499 --input item_categories:int64[64]:0..49 "
                        "--target clicked:int64[64]:0..1 --loss click_loss --optimizer sgd --lr 0.05"};

std::string source(const std::string& relative) { return std::string(TRAINLAB_SOURCE_DIR) + "/" + relative; }

// `trainlab model add` of an example into a fresh folder of its own (`test`: the tests run in
// parallel, each needs its own); returns the bundle's path.
std::string add_example(const Example& e, const std::string& test, const std::string& extra = "") {
  const std::string dir = fresh_results_dir("bundle_" + e.name + "_" + test);
  const std::string bundle = dir + "/" + e.name;
  const CliResult r = run_trainlab("model add " + source("") + e.add_args + " --out " + bundle + " " + extra);
  EXPECT_EQ(r.exit_status, 0) << r.out << r.err;
  return bundle;
}

nlohmann::json read_json(const std::string& path) {
  return nlohmann::json::parse(slurp(path), nullptr, false);
}

void lab_profile_doctor(const Example& e) {
#ifndef TRAINLAB_TORCH_PYTHON
  GTEST_SKIP() << "no Python side in this build";
#endif
  const std::string bundle = add_example(e, "lab");
  const nlohmann::json manifest = read_json(bundle + "/manifest.json");
  ASSERT_FALSE(manifest.is_discarded());
  EXPECT_EQ(manifest["name"], e.name);
  EXPECT_GT(manifest["parameters"].get<int64_t>(), 0);
  EXPECT_GT(manifest["flops_per_sample"].get<double>(), 0);
  // model add built the compiled variant's package at the example batch, in the bundle.
  bool has_package = false;
  for (const auto& entry : fs::directory_iterator(bundle)) {
    has_package = has_package || (entry.is_directory() && entry.path().filename().string().rfind("inductor-", 0) == 0);
  }
  EXPECT_TRUE(has_package);

  // The lab: fp32, bf16 (run even where bf16 is emulated) and bf16+compiled, Inductor's.
  const std::string results = fresh_results_dir("lab_" + e.name);
  CliResult r = run_trainlab("baseline --model " + bundle + " --steps 4 --warmup 2 --repeat 1 --emulated-bf16 run "
                             "--results " + results);
  ASSERT_EQ(r.exit_status, 0) << r.out << r.err;
  const nlohmann::json lab = read_json(only_run_dir(results) + "/run.json");
  ASSERT_FALSE(lab.is_discarded());
  EXPECT_EQ(lab["scenario"], e.name);
  std::vector<std::string> names;
  for (const nlohmann::json& v : lab["variants"]) {
    if (v.contains("disturbed")) continue;  // left out and run again on a loaded machine
    names.push_back(v["spec"]["name"].get<std::string>());
    EXPECT_TRUE(!v.contains("error") || v["error"].is_null() || v["error"].get<std::string>().empty())
        << v.dump().substr(0, 600);
    EXPECT_EQ(v["spec"]["model"].get<std::string>(), fs::path(bundle).lexically_normal().string());
    ASSERT_FALSE(v["steps"].empty());
    EXPECT_TRUE(std::isfinite(v["steps"].back()["loss"].get<double>()));
    if (v["spec"]["compiled"].get<bool>()) {
      EXPECT_EQ(v["compile_info"]["method"], "inductor-aot") << v["compile_info"].dump();
      EXPECT_GT(v["compile_info"]["fusion_groups"].get<int64_t>(), 0);
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"fp32", "bf16", "bf16+compiled"}));

  // The profile names a bottleneck, or says which suspects it cannot tell apart.
  const std::string profiled = fresh_results_dir("profile_" + e.name);
  r = run_trainlab("profile --model " + bundle + " --steps 8 --warmup 2 --results " + profiled);
  ASSERT_EQ(r.exit_status, 0) << r.out << r.err;
  const nlohmann::json diagnosis = read_json(only_run_dir(profiled) + "/diagnosis.json");
  ASSERT_FALSE(diagnosis.is_discarded());
  ASSERT_FALSE(diagnosis["diagnoses"].empty());
  const nlohmann::json& verdict = diagnosis["diagnoses"][0]["verdict"];
  if (verdict.value("inconclusive", false)) {
    // Beside a busy process 8 steps can leave two suspects within each other's intervals (CI saw
    // framework overhead 18.9 % [0.0, 53.5] against data pipeline 18.5 % [5.9, 31.0]): then the
    // verdict names no primary and says which suspects it could not tell apart.
    EXPECT_TRUE(verdict["primary"].is_null()) << verdict.dump().substr(0, 800);
    EXPECT_FALSE(verdict["inconclusive_reasons"].empty()) << verdict.dump().substr(0, 800);
    EXPECT_EQ(verdict["headline"].get<std::string>().rfind("inconclusive: ", 0), 0u) << verdict["headline"];
  } else {
    const std::string primary = verdict["primary"].get<std::string>();
    EXPECT_TRUE(primary == "data_pipeline" || primary == "model_compute" || primary == "communication" ||
                primary == "framework_overhead")
        << verdict.dump().substr(0, 800);
    EXPECT_FALSE(verdict["headline"].get<std::string>().empty());
  }

  // The doctor tries at least one change, measured A/B.
  const std::string doctored = fresh_results_dir("doctor_" + e.name);
  r = run_trainlab("doctor --model " + bundle + " --steps 6 --warmup 2 --repeat 2 --max-changes 1 --results " + doctored);
  ASSERT_EQ(r.exit_status, 0) << r.out << r.err;
  const nlohmann::json doctor = read_json(only_run_dir(doctored) + "/doctor.json");
  ASSERT_FALSE(doctor.is_discarded());
  ASSERT_GE(doctor["trials"].size(), 1u) << doctor.dump().substr(0, 800);
  EXPECT_FALSE(doctor["trials"][0]["settings"].get<std::string>().empty());
  const std::vector<std::string> configuration = doctor["configuration"].get<std::vector<std::string>>();
  ASSERT_GE(configuration.size(), 2u);
  EXPECT_EQ(configuration[0], "--model");
}

TEST(UserModelE2E, CnnWithBatchNormRunsTheLabTheProfileAndTheDoctor) { lab_profile_doctor(kCnn); }
TEST(UserModelE2E, LanguageModelWithTiedWeightsRunsTheLabTheProfileAndTheDoctor) { lab_profile_doctor(kLm); }
TEST(UserModelE2E, TwoTowerWithUnusedParametersRunsTheLabTheProfileAndTheDoctor) { lab_profile_doctor(kTwoTower); }

// nanoGPT-style attention through scaled_dot_product_attention, as a file in `dir`.
std::string write_sdpa_model(const std::string& dir) {
  const std::string file = dir + "/sdpa_model.py";
  std::ofstream(file) << "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
                         "class Attention(nn.Module):\n"
                         "    def __init__(self, dim=16, heads=2):\n"
                         "        super().__init__()\n"
                         "        self.embedding = nn.Embedding(50, dim)\n"
                         "        self.qkv = nn.Linear(dim, 3 * dim)\n"
                         "        self.head = nn.Linear(dim, 50)\n"
                         "        self.dim, self.heads = dim, heads\n"
                         "    def forward(self, tokens):\n"
                         "        x = self.embedding(tokens)\n"
                         "        b, s = x.size(0), x.size(1)\n"
                         "        q, k, v = (t.view(b, s, self.heads, self.dim // self.heads).transpose(1, 2)\n"
                         "                   for t in self.qkv(x).split(self.dim, dim=2))\n"
                         "        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)\n"
                         "        return self.head(y.transpose(1, 2).reshape(b, s, self.dim))\n\n"
                         "def make():\n    return Attention()\n\n"
                         "def seq_loss(logits, next):\n"
                         "    return F.cross_entropy(logits.flatten(0, 1), next.flatten())\n";
  return file;
}

const char* const kSdpaBatch = ":make --input tokens:int64[4,8]:0..49 --target next:int64[4,8]:0..49 --loss seq_loss";

// Attention through scaled_dot_product_attention: torch 2.11's joint-graph export with the core
// ATen decompositions got its backward wrong (gradients ~100x off, measured) and the variant was
// refused; decomposed with Inductor's table, as torch.compile does, its gradients are eager's.
TEST(UserModelE2E, AttentionThroughSdpaCompilesWithEagersGradients) {
#ifndef TRAINLAB_TORCH_PYTHON
  GTEST_SKIP() << "no Python side in this build";
#endif
  const std::string dir = fresh_results_dir("user_sdpa");
  const CliResult r = run_trainlab("model add " + write_sdpa_model(dir) + kSdpaBatch + " --out " + dir + "/bundle");
  ASSERT_EQ(r.exit_status, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("compiled variant: will not run"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Inductor package built"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gradients vs eager autograd: max relative error"), std::string::npos) << r.out;
}

// A backward that is really wrong (the test-only switch doubles the joint graph's first gradient)
// is refused, not trained: one line naming the gradient, the full message in the bundle's
// compiled/fp32.log, and the refusal remembered, so the next run does not export again.
TEST(UserModelE2E, ADeliberatelyBrokenBackwardIsRefusedLoggedAndRemembered) {
#ifndef TRAINLAB_TORCH_PYTHON
  GTEST_SKIP() << "no Python side in this build";
#endif
  const std::string dir = fresh_results_dir("user_broken_backward");
  const std::string bundle = dir + "/bundle";
  const std::vector<std::pair<std::string, std::string>> broken = {{"TRAINLAB_TEST_CORRUPT_GRADIENT", "1"}};
  CliResult r = run_trainlab("model add " + write_sdpa_model(dir) + kSdpaBatch + " --out " + bundle, broken);
  ASSERT_EQ(r.exit_status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("compiled variant: will not run"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gets this model's backward wrong: the gradient of net.embedding.weight"), std::string::npos)
      << r.out;
  const std::string log = slurp(bundle + "/compiled/fp32.log");
  EXPECT_NE(log.find("gets this model's backward wrong"), std::string::npos) << log;
  r = run_trainlab("run --model " + bundle + " --compiled on --steps 2 --warmup 1 --results " + dir + "/results", broken);
  const std::string said = r.out + r.err;
  EXPECT_NE(said.find("refused by an earlier run"), std::string::npos) << said;
  EXPECT_NE(said.find("backward wrong"), std::string::npos) << said;
  // Without the switch the package is another one: built, and its gradients pass.
  r = run_trainlab("run --model " + bundle + " --compiled on --steps 2 --warmup 1 --results " + dir + "/sound");
  ASSERT_EQ(r.exit_status, 0) << r.out << r.err;
  const nlohmann::json run = read_json(only_run_dir(dir + "/sound") + "/run.json");
  ASSERT_FALSE(run.is_discarded());
  EXPECT_TRUE(run["variants"][0]["error"].is_null()) << run["variants"][0]["error"];
  EXPECT_EQ(run["variants"][0]["compile_info"]["method"], "inductor-aot");
}

// A model whose bf16 graph cannot be exported (it stands in for bf16 code generation Inductor
// fails on, seen with a ConvNeXt): the lab builds the compiled package before its rounds, and where
// bf16 is refused but fp32 compiles, its compiled run is fp32+compiled, read against fp32, and the
// refusal is said. The fp32 and bf16 runs are measured as always.
TEST(UserModelE2E, ABf16CompileRefusalLeavesTheLabAnFp32CompiledRun) {
#ifndef TRAINLAB_TORCH_PYTHON
  GTEST_SKIP() << "no Python side in this build";
#endif
  const std::string dir = fresh_results_dir("user_bf16_refused");
  const std::string file = dir + "/bf16_refused.py";
  std::ofstream(file) << "import torch\nimport torch.nn as nn\n\n"
                         "class Net(nn.Module):\n"
                         "    def __init__(self):\n"
                         "        super().__init__()\n"
                         "        self.fc = nn.Linear(16, 4)\n"
                         "    def forward(self, x):\n"
                         "        if torch.is_autocast_enabled('cpu'):\n"
                         "            raise NotImplementedError('no bf16 kernel for this op (on purpose)')\n"
                         "        return self.fc(x)\n\n"
                         "def make():\n    return Net()\n";
  const std::string bundle = dir + "/bundle";
  CliResult r = run_trainlab("model add " + file + ":make --input x:float32[8,16] --target y:int64[8]:0..3 "
                             "--no-package --out " + bundle);
  ASSERT_EQ(r.exit_status, 0) << r.out << r.err;
  r = run_trainlab("baseline --model " + bundle + " --steps 4 --warmup 2 --repeat 1 --emulated-bf16 run "
                   "--results " + dir + "/results");
  ASSERT_EQ(r.exit_status, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("bf16 cannot be compiled"), std::string::npos) << r.out << r.err;
  const nlohmann::json lab = read_json(only_run_dir(dir + "/results") + "/run.json");
  ASSERT_FALSE(lab.is_discarded());
  std::vector<std::string> names;
  for (const nlohmann::json& v : lab["variants"]) {
    if (v.contains("disturbed")) continue;
    names.push_back(v["spec"]["name"].get<std::string>());
    EXPECT_TRUE(v["error"].is_null()) << v["error"];
  }
  EXPECT_EQ(names, (std::vector<std::string>{"fp32", "bf16", "fp32+compiled"}));
  const std::string reading = lab["reading"].dump();
  EXPECT_NE(reading.find("bf16 could not be compiled ("), std::string::npos) << reading;
  EXPECT_NE(reading.find("NotImplementedError: no bf16 kernel for this op (on purpose)"), std::string::npos) << reading;
  EXPECT_NE(reading.find("fp32 -> compiled "), std::string::npos) << reading;
  EXPECT_NE(slurp(bundle + "/compiled/bf16.log").find("no bf16 kernel for this op"), std::string::npos);
}

// A gradient that is mathematically zero (a Linear's bias before BatchNorm) is rounding noise on
// both sides, and the dropout between an LSTM's layers draws other masks in each run: the check
// judged each gradient by its own norm and left RNN dropout on, and refused this correct export.
TEST(UserModelE2E, AZeroGradientAndRecurrentDropoutPassTheGradientCheck) {
#ifndef TRAINLAB_TORCH_PYTHON
  GTEST_SKIP() << "no Python side in this build";
#endif
  const std::string dir = fresh_results_dir("user_zero_gradient");
  const std::string file = dir + "/tower.py";
  std::ofstream(file) << "import torch.nn as nn\n\n"
                         "class Tower(nn.Module):\n"
                         "    def __init__(self):\n"
                         "        super().__init__()\n"
                         "        self.embedding = nn.Embedding(50, 8)\n"
                         "        self.rnn = nn.LSTM(8, 8, num_layers=2, dropout=0.5, batch_first=True)\n"
                         "        self.dense = nn.Linear(8, 16)\n"
                         "        self.norm = nn.BatchNorm1d(16)\n"
                         "        self.head = nn.Linear(16, 3)\n"
                         "    def forward(self, tokens):\n"
                         "        h, _ = self.rnn(self.embedding(tokens))\n"
                         "        return self.head(self.norm(self.dense(h[:, -1])).relu())\n\n"
                         "def make():\n    return Tower()\n";
  const CliResult r = run_trainlab("model add " + file + ":make --input tokens:int64[8,4]:0..49 "
                                   "--target label:int64[8]:0..2 --out " + dir + "/bundle");
  ASSERT_EQ(r.exit_status, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("compiled variant: will not run"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gradients vs eager autograd: max relative error"), std::string::npos) << r.out;
}

// A learning rate that makes training diverge: the loss goes NaN/Inf within a few steps. The run
// is a result (its steps kept, the divergence said with its step), not a lost variant.
TEST(UserModelE2E, ADivergingRunKeepsItsStepsAndSaysWhereTheLossWentNonFinite) {
  const std::string dir = fresh_results_dir("user_diverges");
  const std::string file = dir + "/diverging.py";
  std::ofstream(file) << "import torch.nn as nn\n\n"
                         "def make():\n    return nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))\n";
  CliResult r = run_trainlab("model add " + file + ":make --input x:float32[16,8] --target y:float32[16,1] --loss mse "
                             "--optimizer sgd --lr 100 --no-package --out " + dir + "/bundle");
  ASSERT_EQ(r.exit_status, 0) << r.out << r.err;
  const std::string results = dir + "/results";
  r = run_trainlab("run --model " + dir + "/bundle --steps 12 --warmup 2 --results " + results);
  ASSERT_EQ(r.exit_status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("fp32: the loss became"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kept: all "), std::string::npos) << r.out;
  const nlohmann::json run = read_json(only_run_dir(results) + "/run.json");
  ASSERT_FALSE(run.is_discarded());
  const nlohmann::json& variant = run["variants"][0];
  EXPECT_TRUE(variant["error"].is_null()) << variant["error"];
  // 2 warm-up steps or more (until step times settle), + 12 measured: all kept.
  ASSERT_EQ(variant["steps"].size(), variant["warmup_steps_taken"].get<size_t>() + 12);
  EXPECT_NE(r.out.find("kept: all " + std::to_string(variant["steps"].size()) + " steps"), std::string::npos) << r.out;
  int non_finite = 0;
  for (const nlohmann::json& step : variant["steps"]) {
    EXPECT_GT(step["step_ns"].get<int64_t>(), 0);
    non_finite += step["loss"].is_string() ? 1 : 0;  // "NaN" or "Infinity": JSON has neither
  }
  EXPECT_GT(non_finite, 0);
  // The record reads back everywhere: history and diagnose.
  EXPECT_EQ(run_trainlab("history --results " + results).exit_status, 0);
  EXPECT_EQ(run_trainlab("diagnose " + only_run_dir(results)).exit_status, 0);
}

TEST(UserModelE2E, DataParallelSweepAndSavedBatches) {
  const std::string bundle = add_example(kTwoTower, "nproc", "--no-package");
  // Two ranks over Gloo: the serving-only head gets no gradient on either rank; they stay equal.
  const std::string results = fresh_results_dir("user_nproc");
  CliResult r = run_trainlab("run --model " + bundle + " --nproc 2 --device cpu --steps 4 --warmup 1 --results " + results);
  ASSERT_EQ(r.exit_status, 0) << r.out << r.err;
  const nlohmann::json run = read_json(only_run_dir(results) + "/run.json");
  ASSERT_FALSE(run.is_discarded());
  EXPECT_EQ(run["variants"][0]["world_size"], 2);
  // The batch-size sweep (synthesized batches: the loader has nothing to tune).
  const std::string swept = fresh_results_dir("user_sweep");
  r = run_trainlab("sweep --model " + bundle + " --steps 3 --warmup 1 --results " + swept);
  ASSERT_EQ(r.exit_status, 0) << r.out << r.err;
  const nlohmann::json sweep = read_json(only_run_dir(swept) + "/run.json");
  std::vector<int64_t> batches;
  for (const nlohmann::json& v : sweep["variants"]) batches.push_back(v["spec"]["batch_size"].get<int64_t>());
  EXPECT_NE(std::find(batches.begin(), batches.end(), 32), batches.end());
  EXPECT_NE(std::find(batches.begin(), batches.end(), 128), batches.end());
  expect_bad_input("sweep --model " + bundle + " --workers 0,2", "needs --data");
  // Saved batches that do not match the bundle: one line, exit 2.
  const std::string data = swept + "/missing.pt";
  expect_bad_input("run --model " + bundle + " --data " + data, "no such file");
}

TEST(UserModelE2E, UserErrorsAreOneLineAndLeaveNothingBehind) {
  const std::string dir = fresh_results_dir("user_errors");
  const std::string out = " --out " + dir + "/bundle --no-package";
  expect_bad_input("model add " + source("examples/small_cnn.py") + ":no_such_factory --input x:float32[2,3,8,8] "
                   "--target y:int64[2]:0..9" + out, "has no factory 'no_such_factory'");
  // Four channels into a three-channel convolution: the user's file and line.
  expect_bad_input("model add " + source("examples/small_cnn.py") + ":small_cnn --input x:float32[2,4,8,8] "
                   "--target y:int64[2]:0..9" + out, "small_cnn.py:");
  expect_bad_input("model add " + source("examples/small_cnn.py") + ":small_cnn --input x:float32[2,3,8,8] "
                   "--target y:int64[2]" + out, "needs its value range");
  // Constructs trainlab cannot train: a sparse embedding, a branch on a tensor's value.
  const std::string file = dir + "/unsupported.py";
  std::ofstream(file) << "import torch\nimport torch.nn as nn\n\n"
                         "class Sparse(nn.Module):\n"
                         "    def __init__(self):\n"
                         "        super().__init__()\n"
                         "        self.embedding = nn.Embedding(10, 4, sparse=True)\n"
                         "    def forward(self, ids):\n"
                         "        return self.embedding(ids).sum(1)\n\n"
                         "class Branchy(nn.Module):\n"
                         "    def __init__(self):\n"
                         "        super().__init__()\n"
                         "        self.linear = nn.Linear(4, 2)\n"
                         "    def forward(self, x):\n"
                         "        if x.sum() > 0:\n"
                         "            return self.linear(x)\n"
                         "        return -self.linear(x)\n\n"
                         "def sparse():\n    return Sparse()\n\n"
                         "def branchy():\n    return Branchy()\n";
  expect_bad_input("model add " + file + ":sparse --input ids:int64[2,3]:0..9 --target y:int64[2]:0..3" + out,
                   "sparse=True");
  expect_bad_input("model add " + file + ":branchy --input x:float32[2,4] --target y:int64[2]:0..1" + out,
                   "unsupported.py:16");
  EXPECT_FALSE(fs::exists(dir + "/bundle"));
  for (const auto& entry : fs::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().filename().string().find(".bundle"), std::string::npos) << entry.path();
  }
  // --model with a folder that is not a bundle, or beside --scenario.
  expect_bad_input("run --model " + dir, "not a model bundle");
  expect_bad_input("run --model " + dir + "/none", "no such model bundle");
  expect_bad_input("run --scenario mlp --model " + dir, "exclude each other");
  expect_bad_input("run --scenario mlp --data " + file, "--data is for your own model");
}

// A model file `model.py` in dir: a linear model whose factory `make` first runs factory_code (from
// line 5) and whose forward runs forward_code on its output y (from line 13 when factory_code is
// empty); autograd functions (Python code a trace cannot save) whose backward raises, OutOfMemory
// (MemoryError) and BadGradient (ValueError), or passes the gradient on, Identity.
std::string hostile_model(const std::string& dir, const std::string& factory_code,
                          const std::string& forward_code = "") {
  auto indented = [](const std::string& code, const std::string& indent) {
    std::string out;
    std::istringstream lines(code);
    for (std::string line; std::getline(lines, line);) out += indent + line + "\n";
    return out;
  };
  const std::string file = dir + "/model.py";
  std::ofstream(file) << "import ctypes, os, subprocess, sys, time, torch\nimport torch.nn as nn\n\n"
                      << "def make():\n"
                      << indented(factory_code, "    ") << "    return Small()\n\n"
                      << "class Small(nn.Module):\n"
                         "    def __init__(self):\n"
                         "        super().__init__()\n"
                         "        self.linear = nn.Linear(4, 2)\n"
                         "    def forward(self, x):\n"
                         "        y = self.linear(x)\n"
                      << indented(forward_code, "        ") << "        return y\n\n"
                      << "class OutOfMemory(torch.autograd.Function):\n"
                         "    forward = staticmethod(lambda ctx, x: x.clone())\n"
                         "    @staticmethod\n"
                         "    def backward(ctx, gradient):\n"
                         "        raise MemoryError\n\n"
                         "class BadGradient(torch.autograd.Function):\n"
                         "    forward = staticmethod(lambda ctx, x: x.clone())\n"
                         "    @staticmethod\n"
                         "    def backward(ctx, gradient):\n"
                         "        raise ValueError('bad gradient')\n\n"
                         "class Identity(torch.autograd.Function):\n"
                         "    forward = staticmethod(lambda ctx, x: x.clone())\n"
                         "    backward = staticmethod(lambda ctx, gradient: gradient)\n";
  return file;
}

// `model add` of that model at a small batch, without the package, into dir/bundle.
CliResult add_hostile(const std::string& dir, const std::string& extra = "",
                      const std::vector<std::pair<std::string, std::string>>& env = {}) {
  const std::string batch = " --input x:float32[2,4] --target y:int64[2]:0..1 --no-package";
  return run_trainlab("model add " + dir + "/model.py:make" + batch + " --out " + dir + "/bundle " + extra, env);
}

void expect_one_line_no_bundle(const CliResult& r, const std::string& message_part, const std::string& dir,
                               const std::string& what) {
  EXPECT_EQ(r.exit_status, 2) << what << "\n" << r.out << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << what << "\n" << r.err;
  EXPECT_NE(r.err.find(message_part), std::string::npos) << what << "\n" << r.err;
  EXPECT_EQ(r.out.find("Model bundle:"), std::string::npos) << what << "\n" << r.out;
  EXPECT_FALSE(fs::exists(dir + "/bundle")) << what;
}

// --force replaces a bundle model add wrote (its manifest is the new one's); without it, one line.
TEST(UserModelE2E, ForceReplacesABundleModelAddWrote) {
#ifndef TRAINLAB_TORCH_PYTHON
  GTEST_SKIP() << "no Python side in this build";
#endif
  const std::string dir = fresh_results_dir("user_force");
  hostile_model(dir, "");
  CliResult r = add_hostile(dir);
  ASSERT_EQ(r.exit_status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("Model bundle: " + dir + "/bundle"), std::string::npos) << r.out;
  r = add_hostile(dir, "--name second");
  EXPECT_EQ(r.exit_status, 2) << r.err;
  EXPECT_NE(r.err.find("is a model bundle already (--force replaces it)"), std::string::npos) << r.err;
  EXPECT_EQ(read_json(dir + "/bundle/manifest.json")["name"], "make");
  r = add_hostile(dir, "--name second --force");
  ASSERT_EQ(r.exit_status, 0) << r.out << r.err;
  EXPECT_EQ(read_json(dir + "/bundle/manifest.json")["name"], "second");
  for (const auto& entry : fs::directory_iterator(dir)) {  // no set-aside old bundle left
    EXPECT_EQ(entry.path().filename().string().find(".bundle"), std::string::npos) << entry.path();
  }
}

// What the model's code does to the bundle writer (sys.exit, KeyboardInterrupt, a crash, running out
// of memory, os._exit(0) before anything was written) is one line and exit 2: never an internal
// error, never "Model bundle: ..." for a bundle that was not written.
TEST(UserModelE2E, TheModelsCodeEndingTheWriterIsOneLineNeverSuccessOrAnInternalError) {
#ifndef TRAINLAB_TORCH_PYTHON
  GTEST_SKIP() << "no Python side in this build";
#endif
  const std::string dir = fresh_results_dir("user_hostile_code");
  struct Case {
    std::string factory_code, forward_code, message_part;
  };
  const std::vector<Case> cases = {
      {"sys.exit('the factory gave up')", "",
       "model.py:5: the model's code called sys.exit('the factory gave up')"},
      {"raise KeyboardInterrupt", "", "model.py:5: KeyboardInterrupt"},
      {"ctypes.string_at(0)", "", "without writing the bundle: killed by signal 11"},
      {"bytearray(1 << 62)", "", "MemoryError"},
      {"os._exit(0)", "",
       "exit status 0 before the bundle was written (the model's code called sys.exit/os._exit?)"},
      {"os._exit(7)", "", "exit status 7 before the bundle was written"},
      // Raised in the backward of the first step (before the trace): the user's line.
      {"", "y = OutOfMemory.apply(y)", "model.py:20: out of memory (MemoryError)"},
      {"", "y = BadGradient.apply(y)", "model.py:26: the model's code failed: ValueError: bad gradient"},
      // A Python autograd function: its backward is Python the C++ loop cannot run: unsupported,
      // named, with its place.
      {"", "y = Identity.apply(y)",
       "a custom torch.autograd.Function (Identity): its backward is Python, which the C++ loop cannot run"},
      {"", "sys.exit(0)", "model.py:13: the model's code called sys.exit(0) before the bundle was written"},
      {"", "os._exit(0)", "exit status 0 before the bundle was written"},
  };
  for (const Case& c : cases) {
    hostile_model(dir, c.factory_code, c.forward_code);
    expect_one_line_no_bundle(add_hostile(dir), c.message_part, dir, c.factory_code + c.forward_code);
  }
  // A crash names the line of the user's file it happened on (Python's faulthandler stack).
  hostile_model(dir, "ctypes.string_at(0)");
  expect_one_line_no_bundle(add_hostile(dir), "at model.py:5", dir, "the crash's place");
}

// An interpreter that is missing, or no Python at all, is one line, checked before the bundle
// writer starts (one without torch, or with another torch: tests/ecosystem_test.py).
TEST(UserModelE2E, AnInterpreterThatIsMissingOrNotAPythonIsOneLine) {
  const std::string dir = fresh_results_dir("user_interpreter");
  hostile_model(dir, "");
  expect_one_line_no_bundle(add_hostile(dir, "", {{"TRAINLAB_PYTHON", dir + "/no-such-python"}}),
                            "no-such-python) is not executable", dir, "missing");
  expect_one_line_no_bundle(
      add_hostile(dir, "", {{"TRAINLAB_PYTHON", "/bin/false"}}),
      "$TRAINLAB_PYTHON /bin/false: not a Python that runs (exit status 1)", dir, "/bin/false");
  expect_one_line_no_bundle(add_hostile(dir, "", {{"TRAINLAB_PYTHON", "/bin/true"}}),
                            "$TRAINLAB_PYTHON /bin/true: not a Python that runs (exit status 0)", dir, "/bin/true");
  // --python is checked the same way, before the model's code runs.
  expect_one_line_no_bundle(add_hostile(dir, "--python /bin/true"),
                            "--python /bin/true: not a Python that runs (exit status 0)", dir, "--python /bin/true");
}

// Values the bundle writer must not take for its own options (they begin with '-'), and an integer
// range past int64: one line, exit 2.
TEST(UserModelE2E, DashedValuesAndRangesPastInt64AreTheUsersOneLine) {
#ifndef TRAINLAB_TORCH_PYTHON
  GTEST_SKIP() << "no Python side in this build";
#endif
  const std::string dir = fresh_results_dir("user_dashes");
  hostile_model(dir, "");
  const std::string model = "model add " + dir + "/model.py:make --no-package --out " + dir + "/bundle ";
  expect_one_line_no_bundle(run_trainlab(model + "--input=-x:float32[2,4] --target y:int64[2]:0..1"),
                            "--input '-x:float32[2,4]': expected NAME:DTYPE", dir, "--input=-x");
  expect_one_line_no_bundle(run_trainlab(model + "--input x:float32[2,4] --target=--help"),
                            "--target '--help': expected NAME:DTYPE", dir, "--target=--help");
  expect_one_line_no_bundle(
      run_trainlab(model + "--input x:float32[2,4] --target y:int64[2]:0..1 --arg=-w=1"),
      "--arg '-w=1': expected NAME=VALUE", dir, "--arg=-w=1");
  expect_one_line_no_bundle(
      run_trainlab(model + "--input x:float32[2,4] --target y:int64[2]:0..99999999999999999999"),
      "the range 0..99999999999999999999 does not fit int64", dir, "past int64");
  expect_one_line_no_bundle(run_trainlab(model + "--input x:float32[2,4] --target y:uint8[2]:0..256"),
                            "does not fit uint8 (0..255)", dir, "past uint8");
}

// A process the factory starts and leaves running ends with the bundle writer.
TEST(UserModelE2E, WhatTheFactoryStartsDoesNotOutliveModelAdd) {
#ifndef TRAINLAB_TORCH_PYTHON
  GTEST_SKIP() << "no Python side in this build";
#endif
  const std::string dir = fresh_results_dir("user_fork");
  hostile_model(
      dir, "p = subprocess.Popen(['sleep', '300'])\nopen('" + dir + "/sleep.pid', 'w').write(str(p.pid))");
  const CliResult r = add_hostile(dir);
  EXPECT_EQ(r.exit_status, 0) << r.out << r.err;
  pid_t sleeper = 0;
  std::ifstream(dir + "/sleep.pid") >> sleeper;
  ASSERT_GT(sleeper, 0);
  const bool gone = test_process::gone_within_5_s(sleeper);
  EXPECT_TRUE(gone) << "the factory's `sleep 300` (" << sleeper << ") outlived model add";
  if (!gone) ::kill(sleeper, SIGKILL);
}

// A factory that never returns is stopped at --timeout-s: one line, exit 2.
TEST(UserModelE2E, AFactoryThatNeverReturnsIsStoppedAtTimeoutS) {
#ifndef TRAINLAB_TORCH_PYTHON
  GTEST_SKIP() << "no Python side in this build";
#endif
  const std::string dir = fresh_results_dir("user_loop");
  hostile_model(dir, "while True:\n    time.sleep(1)");
  const CliResult r = add_hostile(dir, "--timeout-s 3");
  expect_one_line_no_bundle(r, "the bundle writer ran past --timeout-s 3 s and was stopped", dir, "loop");
  EXPECT_LT(r.wall_s, 60.0);
}

}  // namespace
}  // namespace trainlab::e2e
