// The command line in-process (run_cli), one test per subcommand: bad arguments give one clear line
// on stderr and exit status 2 before anything runs; the commands that do not train (diagnose,
// compare, history, list, help) run here for real on the previous version's results.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "diagnostics/diagnosis.h"
#include "cli_in_process.h"
#include "core/run_record.h"
#include "harness/process/child_process.h"
#include "harness/runner/cuda_check.h"
#include "harness/process/python_side.h"

namespace trainlab {
namespace {

using test_cli::CliResult;

// Splits on spaces (no quoting: the cases below need none) and runs the command line in-process.
CliResult run(const std::string& command_line) {
  std::vector<std::string> words;
  std::stringstream in(command_line);
  for (std::string w; in >> w;) words.push_back(w);
  return test_cli::run(words);
}

void expect_bad_input(const std::string& command_line, const std::string& message_part) {
  test_cli::expect_one_error_line(run(command_line), message_part, command_line);
}

std::string fresh_dir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("trainlab_cli_test_" + name);
  std::filesystem::remove_all(dir);
  return dir.string();
}

// Every subcommand's argument errors leave the results folder without a run folder.
void expect_nothing_ran(const std::string& results) {
  const bool made_nothing = !std::filesystem::exists(results) || std::filesystem::is_empty(results);
  EXPECT_TRUE(made_nothing) << results;
}

// A test's bad command lines, each given --results of the test's own fresh folder (`results`, which
// expect_nothing_ran checks afterwards).
struct BadArguments {
  std::string results;
  // `command_line --results RESULTS` is one error line holding message_part, exit 2.
  void expect(const std::string& command_line, const std::string& message_part) const {
    expect_bad_input(command_line + " --results " + results, message_part);
  }
};

const std::string kPrevious = std::string(TRAINLAB_FIXTURES_DIR) + "/results_previous";

TEST(CliTest, AnUnknownCommandOrNoneIsOneLine) {
  expect_bad_input("frobnicate", "unknown command 'frobnicate' (commands: list, run, profile, baseline, sweep");
  expect_bad_input("", "A subcommand is required");
  expect_bad_input("run --no-such-option", "no-such-option");
}

TEST(CliRunTest, BadSettingsAreOneLineAndExitTwoBeforeAnythingRuns) {
  const BadArguments bad{fresh_dir("run")};
  bad.expect("run --scenario nope", "unknown scenario 'nope'");
  bad.expect("run --precision fp8", "invalid precision 'fp8'");
  bad.expect("run --compiled maybe", "expected on or off");
  bad.expect("run --batch -5", "invalid --batch -5 (must be 1 to 2147483647)");
  bad.expect("run --batch 99999999999", "invalid --batch 99999999999 (must be 1 to 2147483647)");
  bad.expect("run --steps 0", "--steps");
  bad.expect("run --steps 1 --window 0:2", "the window must lie within the 1 measured step)");
  bad.expect("run -k nope=3", "unknown knob 'nope'");
  bad.expect("run -k hidden=0 --scenario mlp", "out of range");
  bad.expect("run --device tpu", "invalid device");
  bad.expect("run --ab workers", "invalid --ab 'workers' (expected NAME=VALUE)");
  bad.expect("run --thresholds " + bad.results + "/missing.json", "no such file");
  bad.expect("run --scenario recsys --preset fast",
             "unknown preset 'fast' for scenario recsys (presets: data-bound)");
  bad.expect("run --scenario mlp --preset data-bound", "(presets: none)");
  expect_bad_input("run --results /proc/trainlab-cannot-write", "results folder");
  expect_nothing_ran(bad.results);
}

// --python's torch check: the release must match, local build suffixes aside.
TEST(PythonSideTest, TheTorchReleaseMustMatchLocalSuffixesAside) {
  EXPECT_TRUE(same_torch_release("2.11.0+cpu", "2.11.0"));
  EXPECT_TRUE(same_torch_release("2.11.0", "2.11.0+cu130"));
  EXPECT_FALSE(same_torch_release("2.10.0+cpu", "2.11.0"));
  EXPECT_FALSE(same_torch_release("2.11.1", "2.11.0"));
  EXPECT_FALSE(same_torch_release("", "2.11.0"));
}

// --python names an interpreter that must exist: one line, exit 2, before anything runs; --help
// of the commands that run Python says where the default comes from.
TEST(CliTest, PythonIsCheckedAndDocumented) {
  expect_bad_input("model add m.py:make --python /nonexistent/python3",
                   "--python /nonexistent/python3: not an executable");
  expect_bad_input("baseline --python /nonexistent/python3", "--python /nonexistent/python3: not an executable");
  for (const std::string command : {"run", "baseline", "profile", "sweep", "doctor"}) {
    const CliResult help = run(command + " --help");
    EXPECT_NE(help.out.find("--python"), std::string::npos) << command;
    EXPECT_NE(help.out.find("$TRAINLAB_PYTHON"), std::string::npos) << command;
  }
  EXPECT_NE(run("model add --help").out.find("$TRAINLAB_PYTHON"), std::string::npos);
}

TEST(CliTest, AnEmptyValueIsRefusedNotTakenAsTheDefault) {
  // '' from an unset shell variable: `run --model ''` used to run the built-in recsys scenario.
  test_cli::expect_one_error_line(test_cli::run({"run", "--model", ""}), "--model: an empty value");
  test_cli::expect_one_error_line(test_cli::run({"run", "--scenario", "mlp", "--results", ""}), "--results: an empty value");
  test_cli::expect_one_error_line(test_cli::run({"history", "--results", ""}), "--results: an empty value");
  test_cli::expect_one_error_line(test_cli::run({"diagnose", ""}), ": an empty value (an unset shell variable?); give a value");
  test_cli::expect_one_error_line(test_cli::run({"compare", "a", "b", "--out", ""}), "--out: an empty value");
}

TEST(CliTest, AValueWithANewlineKeepsTheErrorOnOneLine) {
  test_cli::expect_one_error_line(test_cli::run({"diagnose", "no\nsuch\rtrace.json"}), "no\\nsuch\\rtrace.json");
}

TEST(CliProfileTest, AnUnknownGateIsOneLine) {
  const BadArguments bad{fresh_dir("profile")};
  bad.expect("profile --fail-on sometimes", "--fail-on");
  bad.expect("profile --window 5", "--window");
  expect_nothing_ran(bad.results);
}

TEST(CliBaselineTest, OverridesAreCheckedAndHelpNamesTheLabsOptions) {
  const BadArguments bad{fresh_dir("baseline")};
  bad.expect("baseline --override fp64:batch=3", "unknown lab variant");
  bad.expect("baseline --override bf16:precision=fp32", "cannot change precision");
  bad.expect("baseline --override bf16", "expected VARIANT:NAME=VALUE");
  bad.expect("baseline --emulated-bf16 maybe", "invalid --emulated-bf16 'maybe' (skip or run)");
  expect_nothing_ran(bad.results);
  const CliResult help = run("baseline --help");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("--emulated-bf16"), std::string::npos);
  EXPECT_NE(help.out.find("--override"), std::string::npos);
}

TEST(CliSweepTest, ImpossibleGridsAreOneLine) {
  const BadArguments bad{fresh_dir("sweep")};
  bad.expect("sweep --repeat 0", "invalid --repeat");
  bad.expect("sweep --workers 1,x", "--workers");
  bad.expect("sweep --tolerance-pct 100", "invalid --tolerance-pct");
  expect_nothing_ran(bad.results);
}

TEST(CliDiagnoseTest, ARunFolderIsDiagnosedInProcessAndBadInputIsOneLine) {
  const std::string out = fresh_dir("diagnose");
  const CliResult r = run("diagnose " + kPrevious + "/20261124-014025-mlp-run --out " + out);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("Diagnosis fp32 (rank 0 of 2)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Verdict: "), std::string::npos) << r.out;
  const DiagnosisFile written = read_diagnosis_file(out + "/diagnosis.json");
  EXPECT_EQ(written.schema_version, kDiagnosisSchemaVersion);
  EXPECT_FALSE(written.diagnoses.front().headline.empty());
  EXPECT_TRUE(std::filesystem::exists(out + "/report.html"));
  expect_bad_input("diagnose", "input is required");
  expect_bad_input("diagnose " + out + "/missing.json", "missing.json");
  expect_bad_input("diagnose " + kPrevious + "/20261124-014025-mlp-run --fail-on sometimes", "--fail-on");
}

TEST(CliCompareTest, AnABRunComparesInProcessAndBadOptionsAreOneLine) {
  const CliResult r = run("compare " + kPrevious + "/20261124-014015-mlp-ab");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("A -> B"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("samples/s"), std::string::npos) << r.out;
  const CliResult json = run("compare " + kPrevious + "/20261124-014015-mlp-ab --format json");
  EXPECT_EQ(json.status, 0) << json.err;
  EXPECT_FALSE(nlohmann::json::parse(json.out, nullptr, false).is_discarded()) << json.out;
  const std::string missing = fresh_dir("compare");
  expect_bad_input("compare " + missing + "/a " + missing + "/b --format xml",
                   "invalid --format 'xml' (table, json or markdown)");
  expect_bad_input("compare " + missing + "/a --threshold -1", "invalid --threshold -1 (must be 0 to 1000)");
  expect_bad_input("compare " + missing + "/a", "a");
}

TEST(CliHistoryTest, ListsTheFolderInProcess) {
  const CliResult r = run("history --results " + kPrevious);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("20261124-014015-mlp-ab"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("B: workers=1"), std::string::npos) << r.out;
  const std::string empty = fresh_dir("history");
  std::filesystem::create_directories(empty);
  EXPECT_EQ(run("history --results " + empty).status, 0);
  expect_bad_input("history --results " + empty + "/missing", "no such results folder");
}

TEST(CliValidateTest, UnknownCasesAreOneLine) {
  const BadArguments bad{fresh_dir("validate")};
  bad.expect("validate --only nope", "unknown seeded case 'nope'");
  bad.expect("validate --cases " + bad.results + "/missing.json", "missing.json");
  expect_nothing_ran(bad.results);
}

TEST(CliDoctorTest, ItsOwnOptionsAreCheckedAndHelpNamesThem) {
  expect_bad_input("doctor --repeat", "--repeat");
  expect_bad_input("doctor --profile", "doctor chooses --profile itself");
  expect_bad_input("doctor --scenario nope", "unknown scenario 'nope'");
  const CliResult help = run("doctor --help");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("--max-changes"), std::string::npos);
}

// Where the driver finds no CUDA device, --device cuda (as a flag, a --set or --ab setting or a lab
// override) is one line with the driver's reason, before anything runs or any folder is made.
TEST(CliDeviceTest, CudaWithoutAUsableDeviceIsOneLineUpFront) {
  if (cuda_device_present()) GTEST_SKIP() << "a CUDA device is usable here: --device cuda is valid";
  EXPECT_FALSE(cuda_absent_reason().empty());
  const BadArguments bad{fresh_dir("device_cuda")};
  std::filesystem::create_directories(bad.results);
  const std::string message = "--device cuda: no CUDA device is usable here (" + cuda_absent_reason() +
                              "); use --device cpu or auto";
  for (const std::string command_line :
       {"run --device cuda", "profile --set device=cuda", "run --ab device=cuda", "baseline --device cuda",
        "baseline --override bf16:device=cuda", "sweep --device cuda", "doctor --device cuda"}) {
    bad.expect(command_line + " --scenario mlp", message);
  }
  expect_nothing_ran(bad.results);
}

// `trainlab profile` names its run "profile" (banner, folder suffix, run.json's kind, history), not
// "run". Its child is a stand-in trainer that fails at once: the run is recorded without LibTorch.
TEST(CliProfileTest, TheBannerTheFolderAndTheRecordSayProfile) {
  const std::filesystem::path results = fresh_dir("profile_kind");
  std::filesystem::create_directories(results);
  const std::filesystem::path trainer = results.parent_path() / "trainlab_cli_test_failing_trainer.sh";
  std::ofstream(trainer) << "#!/bin/sh\nexit 1\n";
  std::filesystem::permissions(trainer, std::filesystem::perms::owner_all);
  set_trainer_executable(trainer.string());
  const CliResult r = run("profile --scenario mlp --steps 3 --warmup 0 --results " + results.string());
  set_trainer_executable("");
  EXPECT_NE(r.status, 0) << r.err;  // the stand-in trainer failed the variant
  EXPECT_EQ(r.err.rfind("trainlab profile: scenario mlp, 1 variant, results in ", 0), 0u) << r.err;  // not "1 variant(s)"
  EXPECT_EQ(r.err.find("trainlab run:"), std::string::npos) << r.err;
  std::vector<std::filesystem::path> runs;
  for (const auto& entry : std::filesystem::directory_iterator(results)) runs.push_back(entry.path());
  ASSERT_EQ(runs.size(), 1u);
  const std::string id = runs.front().filename().string();
  EXPECT_EQ(id.substr(id.size() - std::string("-mlp-profile").size()), "-mlp-profile") << id;
  const RunRecord record = read_run_record(runs.front().string());
  EXPECT_EQ(record.kind, "profile");
  EXPECT_EQ(record.run_id, id);
  const CliResult history = run("history --results " + results.string());
  EXPECT_EQ(history.status, 0) << history.err;
  EXPECT_NE(history.out.find(id), std::string::npos) << history.out;
  EXPECT_NE(history.out.find(" profile "), std::string::npos) << history.out;
  std::filesystem::remove(trainer);
}

TEST(CliVersionTest, VersionSaysTrainlabGitLibTorchAndCudaAndExitsZero) {
  const CliResult r = run("--version");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  std::vector<std::string> lines;
  std::stringstream in(r.out);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 4u) << r.out;
  EXPECT_EQ(lines[0], std::string("trainlab ") + TRAINLAB_EXPECTED_VERSION);
  // cmake/GitRevision.cmake: 12 hex digits, "-dirty" with uncommitted changes; "unknown" outside git.
  EXPECT_TRUE(std::regex_match(lines[1], std::regex("git revision: ([0-9a-f]{12}(-dirty)?|unknown)"))) << lines[1];
  EXPECT_EQ(lines[2], std::string("LibTorch: ") + TRAINLAB_EXPECTED_LIBTORCH_VERSION);
  EXPECT_EQ(lines[3], std::string("CUDA toolkit: ") + TRAINLAB_EXPECTED_CUDA_TOOLKIT_VERSION);
  // The configured values themselves: a version number, or "none" where the build has no LibTorch.
  EXPECT_TRUE(std::regex_match(lines[2], std::regex(R"(LibTorch: (\d+\.\d+.*|none \(torch-free build\)))")))
      << lines[2];
  EXPECT_TRUE(std::regex_match(lines[3], std::regex(R"(CUDA toolkit: (\d+\.\d+.*|none))"))) << lines[3];
}

TEST(CliListTest, HelpAndListAnswerWithoutRunningAnything) {
  const CliResult help = run("--help");
  EXPECT_EQ(help.status, 0);
  for (const char* command : {"list", "run", "profile", "baseline", "sweep", "diagnose", "validate", "compare",
                              "history", "doctor"}) {
    EXPECT_NE(help.out.find(command), std::string::npos) << command;
  }
  EXPECT_NE(help.out.find("--version"), std::string::npos) << help.out;
  const CliResult list = run("list");
  EXPECT_EQ(list.status, 0);
  EXPECT_NE(list.out.find("recsys (default)"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("preset data-bound: dim=32 layers=1"), std::string::npos) << list.out;
}

// Every command that prints a table takes --format; a bad value is one line naming the allowed
// ones, exit 2, before anything runs.
TEST(CliFormatTest, EveryTableCommandRefusesAnUnknownFormatInOneLine) {
  const BadArguments bad{fresh_dir("format")};
  for (const std::string command : {"run", "profile", "baseline", "sweep", "validate", "doctor"}) {
    bad.expect(command + " --format xml", "invalid --format 'xml' (table, json or markdown)");
  }
  expect_bad_input("diagnose " + kPrevious + "/20261124-014025-mlp-run --format xml --out " + bad.results,
                   "invalid --format 'xml' (table, json or markdown)");
  expect_bad_input("history --results " + kPrevious + " --format xml", "invalid --format 'xml' (table, json or markdown)");
  expect_bad_input("list --format xml", "invalid --format 'xml' (table, json or markdown)");
  expect_nothing_ran(bad.results);
}

// JSON: stdout is one document and nothing else; markdown: a header row and a |---| row.
TEST(CliFormatTest, HistoryDiagnoseCompareAndListPrintJsonAndMarkdownInProcess) {
  const auto json_of = [](const CliResult& r) {
    EXPECT_EQ(r.status, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j;
  };
  const auto expect_markdown_table = [](const CliResult& r, const std::string& header) {
    EXPECT_EQ(r.status, 0) << r.err;
    const size_t at = r.out.find(header + "\n");
    ASSERT_NE(at, std::string::npos) << r.out;
    EXPECT_EQ(r.out.compare(at + header.size() + 1, 7, "| --- |"), 0) << r.out;
  };

  const nlohmann::json history = json_of(run("history --results " + kPrevious + " --format json"));
  ASSERT_EQ(history["runs"].size(), 4u);
  EXPECT_EQ(history["runs"][2]["best"], "workers=0 pin=off batch=64");
  EXPECT_NEAR(history["runs"][2]["samples_per_s"].get<double>(), 422.4, 0.05);
  // The previous version's folder holds a 2-rank run: the ranks x threads column is there.
  expect_markdown_table(run("history --results " + kPrevious + " --format markdown"),
                        "| run | kind | best | ranks x thr | samples/s | verdict |");

  const std::string out = fresh_dir("diagnose_formats");
  const nlohmann::json diagnosis =
      json_of(run("diagnose " + kPrevious + "/20261124-014025-mlp-run --out " + out + " --format json"));
  EXPECT_EQ(diagnosis["kind"], "diagnosis");
  EXPECT_EQ(diagnosis["diagnosis_json"], out + "/diagnosis.json");
  ASSERT_FALSE(diagnosis["diagnoses"].empty());
  EXPECT_FALSE(diagnosis["diagnoses"][0]["summary"]["step_ms"].empty());
  const CliResult md = run("diagnose " + kPrevious + "/20261124-014025-mlp-run --out " + out + " --format markdown");
  expect_markdown_table(md, "| suspect | share % | low % | high % |");
  EXPECT_NE(md.out.find("**Verdict: "), std::string::npos) << md.out;

  const nlohmann::json compare = json_of(run("compare " + kPrevious + "/20261124-014015-mlp-ab --format json"));
  EXPECT_FALSE(compare["rows"].empty());
  expect_markdown_table(run("compare " + kPrevious + "/20261124-014015-mlp-ab --format markdown"),
                        "| variant | metric | before | after | change | 95 % interval | U p | verdict |");

  const nlohmann::json list = json_of(run("list --format json"));
  bool recsys_default = false;
  for (const nlohmann::json& s : list["scenarios"]) {
    if (s["scenario"] == "recsys") recsys_default = s["default"].get<bool>() && !s["knobs"].empty();
  }
  EXPECT_TRUE(recsys_default) << list.dump();
  expect_markdown_table(run("list --format markdown"), "| scenario | batch | presets | description |");
  // table stays what it was.
  EXPECT_NE(run("list --format table").out.find("preset data-bound: dim=32 layers=1"), std::string::npos);
}

}  // namespace
}  // namespace trainlab
