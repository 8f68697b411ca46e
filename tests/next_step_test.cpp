// The next-step line each command ends with: the functions on both sides of their branches, and
// the line as the real commands print it last on stderr (in-process), with the user's relative
// paths kept.
#include "harness/cli/next_step.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_in_process.h"

namespace trainlab {
namespace {

const std::string kPrevious = std::string(TRAINLAB_FIXTURES_DIR) + "/results_previous";

std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  return t.substr(t.rfind('\n') == std::string::npos ? 0 : t.rfind('\n') + 1);
}

TEST(NextStepTest, RunsGoToDiagnoseAndProfilesToTheTraceThenDoctor) {
  EXPECT_EQ(next_after_run("results/20261124-014008-recsys-baseline"),
            "next: trainlab diagnose results/20261124-014008-recsys-baseline");
  VariantSpec spec;
  spec.scenario = "vision";
  EXPECT_EQ(next_after_profile("results/x/variants/fp32.trace.json.gz", spec),
            "next: open results/x/variants/fp32.trace.json.gz in https://ui.perfetto.dev (or chrome://tracing), then "
            "trainlab doctor --scenario vision");
  spec.model = "models/mine";
  EXPECT_EQ(next_after_profile("", spec), "next: trainlab doctor --model models/mine");
  EXPECT_EQ(next_after_list("commheavy"), "next: trainlab baseline --scenario commheavy");
}

TEST(NextStepTest, DiagnoseSuggestsDoctorOnAVerdictAndProfileWhenInconclusive) {
  DiagnoseOutcome o;
  o.from_run_record = true;
  o.spec.scenario = "recsys";
  o.out_dir = "results/r";
  o.diagnoses.resize(1);
  EXPECT_EQ(next_after_diagnose(o).rfind("next: trainlab doctor --scenario recsys", 0), 0u) << next_after_diagnose(o);
  o.diagnoses[0].verdict.inconclusive = true;
  EXPECT_EQ(next_after_diagnose(o).rfind("next: trainlab profile --scenario recsys", 0), 0u) << next_after_diagnose(o);
  o.from_run_record = false;  // a trace from elsewhere: no scenario to run
  EXPECT_NE(next_after_diagnose(o).find("diagnose the new trace"), std::string::npos) << next_after_diagnose(o);
  o.diagnoses[0].verdict.inconclusive = false;
  EXPECT_NE(next_after_diagnose(o).find("open results/r/report.html"), std::string::npos) << next_after_diagnose(o);
}

TEST(NextStepTest, DiagnoseOfAJobNamesTheJobsOwnCommandNotAScenario) {
  DiagnoseOutcome o;
  o.from_run_record = true;
  o.out_dir = "results/j";
  o.job_command = {"torchrun", "--nproc-per-node", "2", "train.py", "--data dir a"};
  o.diagnoses.resize(1);
  o.diagnoses[0].verdict.primary = Suspect::kDataPipeline;
  EXPECT_EQ(next_after_diagnose(o), "next: trainlab doctor -- torchrun --nproc-per-node 2 train.py '--data dir a' "
                                    "(tries the loader's fixes on the job and measures them)");
  o.diagnoses[0].verdict.primary = Suspect::kModelCompute;
  EXPECT_EQ(next_after_diagnose(o).rfind("next: trainlab baseline -- torchrun ", 0), 0u) << next_after_diagnose(o);
  o.diagnoses[0].verdict.primary = Suspect::kCommunication;
  EXPECT_EQ(next_after_diagnose(o).rfind("next: open results/j/report.html", 0), 0u) << next_after_diagnose(o);
  o.diagnoses[0].verdict.inconclusive = true;
  EXPECT_EQ(next_after_diagnose(o).rfind("next: trainlab profile --steps 60 --capture 40:5 -- torchrun ", 0), 0u)
      << next_after_diagnose(o);
  EXPECT_EQ(next_after_diagnose(o).find("--scenario"), std::string::npos);
}

TEST(NextStepTest, CompareHistoryDoctorAndValidateEachHaveTheirBranches) {
  EXPECT_EQ(next_after_compare("a", "b", true, false), "next: trainlab diagnose b (what the slower run waits on)");
  EXPECT_EQ(next_after_compare("a", "b", false, false), "next: trainlab diagnose b");
  EXPECT_NE(next_after_compare("a", "b", false, true).find("--repeat 3"), std::string::npos);
  EXPECT_NE(next_after_compare("ab", "", false, true).find("then trainlab compare ab"), std::string::npos);

  HistoryEntry old_run, newer_doctor;
  old_run.path = "results/1-mlp-run";
  old_run.has_run_record = true;
  newer_doctor.path = "results/2-mlp-doctor";
  EXPECT_EQ(next_after_history({old_run, newer_doctor}), "next: trainlab diagnose results/1-mlp-run");
  EXPECT_EQ(next_after_history({newer_doctor}), "next: open results/2-mlp-doctor/report.html");
  EXPECT_EQ(next_after_history({}).rfind("next: trainlab baseline", 0), 0u);

  DoctorOutcome d;
  d.out_dir = "results/doc";
  d.configuration = {"--scenario", "vision"};
  EXPECT_EQ(next_after_doctor(d), "next: open results/doc/report.html (the findings no change addressed)");
  d.best_settings = "workers=2";
  EXPECT_EQ(next_after_doctor(d), "next: trainlab run --scenario vision --set workers=2 (the best measured settings)");

  ValidateOutcome v;
  CaseResult ok, wrong;
  ok.correct = true;
  wrong.seeded.name = "tiny_ops";
  wrong.run_dir = "results/v/cases/tiny_ops/run";
  v.cases = {ok};
  EXPECT_EQ(next_after_validate(v, "results"), "next: trainlab history --results results");
  v.cases.push_back(wrong);
  EXPECT_EQ(next_after_validate(v, "results"), "next: trainlab diagnose results/v/cases/tiny_ops/run (tiny_ops, misnamed)");
}

TEST(NextStepTest, TheCommandsPrintItLastOnStderrInEveryFormatWithTheirPathsAsGiven) {
  // history on a relative results folder: the newest run, relative.
  const std::filesystem::path cwd = std::filesystem::current_path();
  std::filesystem::current_path(TRAINLAB_FIXTURES_DIR);
  for (const char* format : {"table", "json", "markdown"}) {
    const test_cli::CliResult r = test_cli::run({"history", "--results", "results_previous", "--format", format});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(last_line(r.err), "next: trainlab diagnose results_previous/20261124-014025-mlp-run") << format << r.err;
    EXPECT_EQ(r.out.find("next:"), std::string::npos) << format;
  }
  std::filesystem::current_path(cwd);

  // diagnose of a lab folder with a verdict: doctor on its scenario.
  const std::string out = (std::filesystem::temp_directory_path() / "trainlab_next_step_diagnose").string();
  const test_cli::CliResult d = test_cli::run({"diagnose", kPrevious + "/20261124-014008-mlp-baseline", "--out", out});
  EXPECT_EQ(d.status, 0) << d.err;
  EXPECT_EQ(last_line(d.err), "next: trainlab doctor --scenario mlp (tries the findings' fixes and measures them)");

  const test_cli::CliResult list = test_cli::run({"list"});
  EXPECT_EQ(last_line(list.err), "next: trainlab baseline --scenario commheavy");
  // Bad input stays one line: no hint after it.
  test_cli::expect_one_error_line(test_cli::run({"history", "--results", out + "/missing"}), "no such results folder");
}

}  // namespace
}  // namespace trainlab
