// End-to-end doctor: diagnose -> A/B trials of the top findings' changes -> the best configuration
// profiled again -> doctor.json and report.html; interrupted during the profile or a trial; bad input.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "e2e_support.h"

namespace trainlab::e2e {
namespace {

TEST(DoctorE2E, DiagnosesTriesTheTopChangeAndRecordsItsMeasuredGain) {
  const std::string results = fresh_results_dir("doctor");
  const int max_rounds = 6;  // each trial's A/B: 2 rounds (--repeat 2), more while its interval is wide
  // The data-bound preset: on a quiet machine its top findings' changes are more workers and the
  // decoded cache.
  const CliResult r = run_trainlab(
      "doctor --scenario recsys --preset data-bound --steps 8 --warmup 2 --repeat 2 --max-rounds " +
      std::to_string(max_rounds) + " --max-changes 2 --results " + results);
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_NE(r.out.find("Best measured configuration"), std::string::npos) << r.out;
  const std::string dir = only_run_dir(results);
  const nlohmann::json doc = nlohmann::json::parse(slurp(dir + "/doctor.json"), nullptr, false);
  ASSERT_FALSE(doc.is_discarded());
  EXPECT_EQ(doc["kind"], "doctor");
  // Which findings lead depends on the machine's load (more workers, the decoded cache, compiled):
  // one or two of them are tried.
  ASSERT_GE(doc["trials"].size(), 1u);
  // --max-changes 2, plus the helpful changes together when both improved the step.
  ASSERT_LE(doc["trials"].size(), 3u);
  if (doc["trials"].size() == 3u) {
    EXPECT_EQ(doc["trials"][0]["verdict"], "improved");
    EXPECT_EQ(doc["trials"][1]["verdict"], "improved");
    EXPECT_EQ(doc["trials"][2]["settings"].get<std::string>(),
              doc["trials"][0]["settings"].get<std::string>() + "," + doc["trials"][1]["settings"].get<std::string>());
  }
  const nlohmann::json& trial = doc["trials"][0];
  EXPECT_FALSE(trial["settings"].get<std::string>().empty());
  const std::string verdict = trial["verdict"].get<std::string>();
  EXPECT_TRUE(verdict == "improved" || verdict == "unchanged" || verdict == "regressed") << verdict;
  EXPECT_LE(trial["interval"][0].get<double>(), trial["gain_pct"].get<double>());
  EXPECT_GE(trial["interval"][1].get<double>(), trial["gain_pct"].get<double>());
  // The A/B run behind it: A and B alternately, the two rounds of --repeat 2 and, while its
  // interval is wide on a loaded machine, more rounds up to max_rounds (--max-rounds, passed on to run --ab).
  nlohmann::json ab = nlohmann::json::parse(slurp(trial["run_dir"].get<std::string>() + "/run.json"));
  // Repetitions the lab left out as disturbed or superseded (the shared machine's load) aside.
  nlohmann::json& ab_variants = ab["variants"];
  ab_variants.erase(std::remove_if(ab_variants.begin(), ab_variants.end(),
                                   [](const nlohmann::json& v) { return v.contains("disturbed") || v.contains("superseded"); }),
                    ab_variants.end());
  ASSERT_EQ(ab_variants.size() % 2, 0u);
  ASSERT_GE(ab_variants.size(), 4u);
  EXPECT_LE(ab_variants.size(), 2u * static_cast<size_t>(max_rounds));
  for (size_t i = 0; i < ab_variants.size(); ++i) EXPECT_EQ(ab_variants[i]["label"], i % 2 == 0 ? "A" : "B") << i;
  EXPECT_TRUE(std::filesystem::exists(doc["report"].get<std::string>()));
  // The folder's own HTML report: the trials with their settings, links to the profiles' reports.
  const std::string html = slurp(dir + "/report.html");
  EXPECT_NE(html.find("What each change measurably bought"), std::string::npos);
  for (const nlohmann::json& t : doc["trials"]) {
    EXPECT_NE(html.find("<code>" + t["settings"].get<std::string>() + "</code>"), std::string::npos) << t.dump();
  }
  EXPECT_NE(html.find("href=\"profile/"), std::string::npos);
  // The children ran the configuration rebuilt from the typed spec: the preset's knobs as -k.
  const std::vector<std::string> configuration = doc["configuration"].get<std::vector<std::string>>();
  ASSERT_GE(configuration.size(), 2u);
  EXPECT_EQ(configuration[0], "--scenario");
  EXPECT_EQ(configuration[1], "recsys");
  EXPECT_NE(std::find(configuration.begin(), configuration.end(), "dim=32"), configuration.end());
  // history reads the doctor folder back (typed): its line names the scenario.
  const CliResult history = run_trainlab("history --results " + results);
  ASSERT_EQ(history.exit_status, 0) << history.err;
  EXPECT_NE(history.out.find("doctor"), std::string::npos) << history.out;
  EXPECT_EQ(history.out.find("unreadable"), std::string::npos) << history.out;
  // The best configuration (whichever change measured best under this machine's load) profiled
  // again through `profile --set`: what remains.
  const std::string best = doc["best_settings"].get<std::string>();
  if (best.empty()) {
    EXPECT_EQ(doc["after"]["headline"], "");
    return;
  }
  EXPECT_GT(doc["best_gain_pct"].get<double>(), 0.0);
  EXPECT_FALSE(doc["after"]["headline"].get<std::string>().empty());
  EXPECT_EQ(doc["after"]["headline"].get<std::string>().rfind("failed", 0), std::string::npos);
  const nlohmann::json after_run = nlohmann::json::parse(
      slurp(std::filesystem::path(doc["after"]["report"].get<std::string>()).parent_path().string() + "/run.json"));
  const nlohmann::json& after_spec = after_run["variants"][0]["spec"];
  if (best.find("cache=1") != std::string::npos) EXPECT_EQ(after_spec["knobs"]["cache"].get<double>(), 1.0);
  if (best.find("workers=1") != std::string::npos) EXPECT_EQ(after_spec["workers"].get<int>(), 1);
  EXPECT_EQ(after_spec["knobs"]["dim"].get<double>(), 32.0);  // the preset still applies
  EXPECT_NE(r.out.find("With it: "), std::string::npos) << r.out;
  EXPECT_NE(html.find("What remains with it"), std::string::npos);
  EXPECT_NE(html.find("href=\"after/"), std::string::npos);
}

// The folder a doctor made in `results`, once a training child of its stage runs (its spec under
// DOCTOR_DIR/<stage>..., e.g. "profile" or "trial-"); empty when none ran within two minutes or the
// doctor ended first.
std::string wait_for_stage_training(const std::string& results, const std::string& stage, pid_t doctor) {
  for (int i = 0; i < 1200; ++i) {
    const std::string dir = only_run_dir(results);
    if (!dir.empty() && !run_command("pgrep -f '[_]_variant --spec " + dir + "/" + stage + "'").empty()) return dir;
    if (::waitpid(doctor, nullptr, WNOHANG) == doctor) return "";
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return "";
}

// Ctrl-C while the doctor profiles the configuration: it stops the profile, writes doctor.json
// (nothing diagnosed, stopped during the profile) and report.html, and exits 130; history lists it.
TEST(DoctorE2E, CtrlCDuringTheProfileRecordsWhereItStopped) {
  const std::string results = fresh_results_dir("doctor_sigint");
  const pid_t pid = spawn_trainlab({"doctor", "--scenario", "mlp", "--steps", "100000", "--warmup", "1", "--repeat",
                                    "2", "--max-changes", "1", "--timeout-s", "120", "--results", results},
                                   "/dev/null", results + "/../doctor_sigint.log");
  ASSERT_GE(pid, 0);
  const std::string dir = wait_for_stage_training(results, "profile", pid);
  ASSERT_FALSE(dir.empty()) << "the profile did not start";
  EXPECT_EQ(signal_and_wait(pid, SIGINT), 130);
  const nlohmann::json doc = nlohmann::json::parse(slurp(dir + "/doctor.json"), nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << "no doctor.json";
  EXPECT_EQ(doc["interrupted"], "during the profile of the configuration as given");
  EXPECT_EQ(doc["diagnosis"]["headline"], "not diagnosed: the doctor was interrupted during the profile");
  EXPECT_TRUE(doc["trials"].empty());
  EXPECT_NE(slurp(dir + "/report.html").find("Interrupted during the profile"), std::string::npos);
  const CliResult history = run_trainlab("history --results " + results);
  EXPECT_EQ(history.exit_status, 0) << history.err;
  EXPECT_NE(history.out.find("doctor"), std::string::npos) << history.out;
  EXPECT_NE(history.out.find("interrupted"), std::string::npos) << history.out;
  EXPECT_EQ(history.out.find("unreadable"), std::string::npos) << history.out;
}

// SIGTERM during an A/B trial: the diagnosis is kept, the trial is recorded as interrupted (its run
// folder with it), the trials after it as not run, and the doctor exits 143.
TEST(DoctorE2E, SigtermDuringATrialKeepsTheDiagnosisAndMarksTheTrials) {
  const std::string results = fresh_results_dir("doctor_sigterm");
  // The data-bound preset: its findings come with changes to try (see the test above).
  const pid_t pid = spawn_trainlab({"doctor", "--scenario", "recsys", "--preset", "data-bound", "--steps", "8",
                                    "--warmup", "2", "--repeat", "2", "--max-changes", "2", "--results", results},
                                   "/dev/null", results + "/../doctor_sigterm.log");
  ASSERT_GE(pid, 0);
  const std::string dir = wait_for_stage_training(results, "trial-", pid);
  ASSERT_FALSE(dir.empty()) << "no trial started: " << slurp(results + "/../doctor_sigterm.log");
  EXPECT_EQ(signal_and_wait(pid, SIGTERM), 143);
  const nlohmann::json doc = nlohmann::json::parse(slurp(dir + "/doctor.json"), nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << "no doctor.json";
  EXPECT_EQ(doc["interrupted"].get<std::string>().rfind("during the A/B of ", 0), 0u) << doc["interrupted"];
  EXPECT_FALSE(doc["diagnosis"]["headline"].get<std::string>().empty());
  ASSERT_GE(doc["trials"].size(), 1u);
  EXPECT_EQ(doc["trials"][0]["verdict"], "interrupted");
  EXPECT_TRUE(std::filesystem::exists(doc["trials"][0]["run_dir"].get<std::string>() + "/run.json"));
  for (size_t i = 1; i < doc["trials"].size(); ++i) {
    EXPECT_EQ(doc["trials"][i]["verdict"], "not run: the doctor was interrupted");
  }
  EXPECT_EQ(doc["best_settings"], "");
  const CliResult history = run_trainlab("history --results " + results + " --format json");
  ASSERT_EQ(history.exit_status, 0) << history.err;
  const nlohmann::json listed = nlohmann::json::parse(history.out);
  ASSERT_EQ(listed["runs"].size(), 1u);
  EXPECT_EQ(listed["runs"][0]["kind"], "doctor");
  EXPECT_EQ(listed["runs"][0]["interrupted"].get<int>(), static_cast<int>(doc["trials"].size()));
  EXPECT_EQ(listed["runs"][0]["headline"].get<std::string>().rfind("interrupted during the A/B of ", 0), 0u)
      << listed["runs"][0]["headline"];
}

TEST(DoctorE2E, BadInputIsOneLineAndExitTwo) {
  expect_bad_input("doctor --scenario nope", "nope");
  expect_bad_input("doctor --scenario mlp --repeat 1", "--repeat");
  expect_bad_input("doctor --scenario mlp --repeat 4 --max-rounds 3 --results " + fresh_results_dir("doctor_bad_rounds"),
                   "invalid --max-rounds 3 (must be at least --repeat 4)");
  expect_bad_input("doctor --scenario mlp --ab workers=1", "doctor chooses --ab itself");
  expect_bad_input("doctor --scenario mlp --steps -3 --results " + fresh_results_dir("doctor_bad"), "--steps");
  expect_bad_input("doctor --scenario mlp --set workers", "invalid --set 'workers' (expected NAME=VALUE)");
  expect_bad_input("doctor --scenario mlp --set nope=1", "nope");
}

}  // namespace
}  // namespace trainlab::e2e
