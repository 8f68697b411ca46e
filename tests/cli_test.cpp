// The command line in-process (run_cli): bad arguments give one clear line on stderr and exit status
// 2 before anything runs; help and list answer without starting anything.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "harness/cli/cli.h"

namespace trainlab {
namespace {

struct CliResult {
  int status = -1;
  std::string out, err;
};

// Splits on spaces (no quoting: the cases below need none) and runs the command line in-process.
CliResult run(const std::string& command_line) {
  std::vector<std::string> words = {"trainlab"};
  std::stringstream in(command_line);
  for (std::string w; in >> w;) words.push_back(w);
  std::vector<const char*> argv;
  for (const std::string& w : words) argv.push_back(w.c_str());
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  CliResult r;
  r.status = run_cli(static_cast<int>(argv.size()), argv.data());
  r.out = testing::internal::GetCapturedStdout();
  r.err = testing::internal::GetCapturedStderr();
  return r;
}

void expect_bad_input(const std::string& command_line, const std::string& message_part) {
  const CliResult r = run(command_line);
  EXPECT_EQ(r.status, 2) << command_line << "\n" << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << command_line << "\n" << r.err;
  EXPECT_EQ(r.err.rfind("trainlab: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(message_part), std::string::npos) << command_line << "\n" << r.err;
}

std::string fresh_dir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("trainlab_cli_test_" + name);
  std::filesystem::remove_all(dir);
  return dir.string();
}

TEST(CliTest, BadArgumentsAreOneLineAndExitTwoBeforeAnythingRuns) {
  const std::string results = fresh_dir("bad");
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
  expect_bad_input("run --ab workers" + r, "invalid --ab 'workers' (expected NAME=VALUE)");
  expect_bad_input("baseline --override fp64:batch=3" + r, "unknown lab variant");
  expect_bad_input("baseline --override bf16:precision=fp32" + r, "cannot change precision");
  expect_bad_input("baseline --override bf16" + r, "expected VARIANT:NAME=VALUE");
  expect_bad_input("baseline --emulated-bf16 maybe" + r, "invalid --emulated-bf16 'maybe' (skip or run)");
  expect_bad_input("run --no-such-option" + r, "no-such-option");
  expect_bad_input("run --results /proc/trainlab-cannot-write", "results folder");
  expect_bad_input("run --thresholds " + results + "/missing.json" + r, "no such file");
  expect_bad_input("frobnicate", "unknown command 'frobnicate' (commands: list, run, profile, baseline, sweep");
  expect_bad_input("run --scenario recsys --preset fast" + r,
                   "unknown preset 'fast' for scenario recsys (presets: data-bound)");
  expect_bad_input("run --scenario mlp --preset data-bound" + r, "(presets: none)");
  expect_bad_input("sweep --repeat 0" + r, "invalid --repeat");
  expect_bad_input("sweep --workers 1,x" + r, "--workers");
  expect_bad_input("sweep --tolerance-pct 100" + r, "invalid --tolerance-pct");
  expect_bad_input("profile --fail-on sometimes" + r, "--fail-on");
  expect_bad_input("diagnose", "input is required");
  expect_bad_input("diagnose " + results + "/missing.json", "missing.json");
  expect_bad_input("compare " + results + "/a " + results + "/b --format xml", "invalid --format 'xml'");
  expect_bad_input("compare " + results + "/a --threshold -1", "must be 0 or more");
  expect_bad_input("doctor --repeat", "--repeat needs a value");
  expect_bad_input("doctor --profile", "doctor chooses --profile itself");
  expect_bad_input("doctor --scenario nope", "unknown scenario 'nope'");
  expect_bad_input("validate --only nope" + r, "unknown seeded case 'nope'");
  expect_bad_input("validate --cases " + results + "/missing.json" + r, "missing.json");
  expect_bad_input("history --results " + results + "/missing", "no such results folder");
  expect_bad_input("", "A subcommand is required");
  // Nothing ran: no run folder was made (the results folder itself may exist, empty).
  const bool made_nothing = !std::filesystem::exists(results) || std::filesystem::is_empty(results);
  EXPECT_TRUE(made_nothing);
}

TEST(CliTest, HelpAndListAnswerWithoutRunningAnything) {
  const CliResult help = run("--help");
  EXPECT_EQ(help.status, 0);
  for (const char* command : {"list", "run", "profile", "baseline", "sweep", "diagnose", "validate", "compare",
                              "history", "doctor"}) {
    EXPECT_NE(help.out.find(command), std::string::npos) << command;
  }
  const CliResult baseline_help = run("baseline --help");
  EXPECT_EQ(baseline_help.status, 0);
  EXPECT_NE(baseline_help.out.find("--emulated-bf16"), std::string::npos);
  EXPECT_NE(baseline_help.out.find("--override"), std::string::npos);
  const CliResult list = run("list");
  EXPECT_EQ(list.status, 0);
  EXPECT_NE(list.out.find("recsys (default)"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("preset data-bound: dim=32 layers=1"), std::string::npos) << list.out;
  const std::string empty = fresh_dir("history");
  std::filesystem::create_directories(empty);
  const CliResult history = run("history --results " + empty);
  EXPECT_EQ(history.status, 0) << history.err;
  const CliResult doctor_help = run("doctor --help");
  EXPECT_EQ(doctor_help.status, 0);
  EXPECT_NE(doctor_help.out.find("--max-changes"), std::string::npos);
}

}  // namespace
}  // namespace trainlab
