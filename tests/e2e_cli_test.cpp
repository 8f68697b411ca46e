// End to end: bad input gives one clear line on stderr and exit status 2; `list` shows scenarios.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "e2e_support.h"

namespace trainlab {
namespace {
using e2e::expect_bad_input;
using e2e::run_trainlab;

TEST(CliE2E, ListShowsBuiltInScenarios) {
  const auto r = run_trainlab("list");
  ASSERT_EQ(r.exit_status, 0);
  for (const char* name : {"recsys (default)", "vision", "mlp", "tinyops"}) {
    EXPECT_NE(r.out.find(name), std::string::npos) << name;
  }
  EXPECT_NE(r.out.find("preset data-bound: dim=32 layers=1"), std::string::npos) << r.out;
}

TEST(CliE2E, PresetAndSetSettingsLandInTheRecordedSpec) {
  const std::string results = e2e::fresh_results_dir("settings");
  // --set is applied last: it wins over -k and the options; the preset sets its knobs, -k wins over it.
  const auto r = e2e::run_trainlab("run --scenario mlp --steps 2 --warmup 1 -k hidden=64 --set workers=1,hidden=32 "
                                   "--set precision=bf16 --results " + results);
  ASSERT_EQ(r.exit_status, 0) << r.err;
  const std::string record = e2e::slurp(e2e::only_run_dir(results) + "/run.json");
  EXPECT_NE(record.find("\"hidden\": 32.0"), std::string::npos);
  EXPECT_NE(record.find("\"workers\": 1"), std::string::npos);
  EXPECT_NE(record.find("\"precision\": \"bf16\""), std::string::npos);
}

TEST(CliE2E, BadInputIsOneLineAndExitTwo) {
  const std::string results = e2e::fresh_results_dir("bad");
  const std::string r = " --results " + results;
  expect_bad_input("run --scenario nope" + r, "unknown scenario 'nope'");
  expect_bad_input("run --precision fp8" + r, "invalid precision 'fp8'");
  expect_bad_input("run --compiled maybe" + r, "expected on or off");
  expect_bad_input("run --batch -5" + r, "impossible batch size");
  expect_bad_input("run --batch 99999999999" + r, "impossible batch size");
  expect_bad_input("run --steps 0" + r, "--steps");
  expect_bad_input("run -k nope=3" + r, "unknown knob 'nope'");
  expect_bad_input("run -k hidden=0 --scenario mlp" + r, "out of range");
  expect_bad_input("run --device tpu" + r, "invalid device");
  expect_bad_input("baseline --override fp64:batch=3" + r, "unknown lab variant");
  expect_bad_input("baseline --override bf16:precision=fp32" + r, "cannot change precision");
  expect_bad_input("baseline --emulated-bf16 maybe" + r, "invalid --emulated-bf16 'maybe' (skip or run)");
  expect_bad_input("run --no-such-option" + r, "no-such-option");
  expect_bad_input("run --results /proc/trainlab-cannot-write", "results folder");
  expect_bad_input("run --thresholds " + results + "/missing.json" + r, "no such file");
  expect_bad_input("frobnicate", "frobnicate");
  expect_bad_input("run --scenario recsys --preset fast" + r, "unknown preset 'fast' for scenario recsys (presets: data-bound)");
  expect_bad_input("run --scenario mlp --preset data-bound" + r, "(presets: none)");
  expect_bad_input("sweep --repeat 0" + r, "invalid --repeat");
  EXPECT_TRUE(e2e::only_run_dir(results).empty());  // nothing ran, nothing written
}

// The front binary (list, diagnose, compare, history, --help, the lab's orchestration) loads no
// LibTorch; the training child next to it does.
TEST(CliE2E, TheFrontBinaryLinksNoLibTorchAndItsTrainingChildDoes) {
  auto libraries_of = [](const std::string& binary) {
    std::string out;
    FILE* pipe = ::popen(("ldd '" + binary + "' 2>&1").c_str(), "r");
    if (pipe == nullptr) return out;
    char buffer[4096];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
    ::pclose(pipe);
    return out;
  };
  const std::string front = libraries_of(TRAINLAB_BINARY);
  const std::string trainer =
      libraries_of((std::filesystem::path(TRAINLAB_BINARY).parent_path() / "trainlab-train").string());
  ASSERT_NE(front.find("libc.so"), std::string::npos) << front;  // ldd ran
  EXPECT_EQ(front.find("libtorch"), std::string::npos) << front;
  EXPECT_EQ(front.find("libc10"), std::string::npos) << front;
  EXPECT_NE(trainer.find("libtorch"), std::string::npos) << trainer;
}

}  // namespace
}  // namespace trainlab
