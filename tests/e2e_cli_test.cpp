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
  EXPECT_NE(r.out.find("your own model: trainlab model add"), std::string::npos) << r.out;
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

// Argument errors are tested in-process (tests/cli_test.cpp); here the binary's side of it: the exit
// status and the one line reach the shell.
TEST(CliE2E, BadInputIsOneLineAndExitTwo) {
  const std::string results = e2e::fresh_results_dir("bad");
  expect_bad_input("run --scenario nope --results " + results, "unknown scenario 'nope'");
  expect_bad_input("frobnicate", "frobnicate");
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
