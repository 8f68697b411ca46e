// End-to-end doctor: diagnose -> A/B trial of the top finding's change -> doctor.json, and bad input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "e2e_support.h"

namespace trainlab::e2e {
namespace {

TEST(DoctorE2E, DiagnosesTriesTheTopChangeAndRecordsItsMeasuredGain) {
  const std::string results = fresh_results_dir("doctor");
  const CliResult r = run_trainlab("doctor --scenario recsys --steps 8 --warmup 2 --repeat 2 --max-changes 1 --results " +
                                   results);
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_NE(r.out.find("Best measured configuration"), std::string::npos) << r.out;
  const std::string dir = only_run_dir(results);
  const nlohmann::json doc = nlohmann::json::parse(slurp(dir + "/doctor.json"), nullptr, false);
  ASSERT_FALSE(doc.is_discarded());
  EXPECT_EQ(doc["kind"], "doctor");
  ASSERT_EQ(doc["trials"].size(), 1u);  // --max-changes 1
  const nlohmann::json& trial = doc["trials"][0];
  EXPECT_FALSE(trial["settings"].get<std::string>().empty());
  const std::string verdict = trial["verdict"].get<std::string>();
  EXPECT_TRUE(verdict == "improved" || verdict == "unchanged" || verdict == "regressed") << verdict;
  EXPECT_LE(trial["interval"][0].get<double>(), trial["gain_pct"].get<double>());
  EXPECT_GE(trial["interval"][1].get<double>(), trial["gain_pct"].get<double>());
  // The A/B run behind it: A and B alternately, two repetitions each.
  const nlohmann::json ab = nlohmann::json::parse(slurp(trial["run_dir"].get<std::string>() + "/run.json"));
  ASSERT_EQ(ab["variants"].size(), 4u);
  EXPECT_EQ(ab["variants"][0]["label"], "A");
  EXPECT_EQ(ab["variants"][1]["label"], "B");
  EXPECT_TRUE(std::filesystem::exists(doc["report"].get<std::string>()));
}

TEST(DoctorE2E, BadInputIsOneLineAndExitTwo) {
  expect_bad_input("doctor --scenario nope", "nope");
  expect_bad_input("doctor --scenario mlp --repeat 1", "--repeat");
  expect_bad_input("doctor --scenario mlp --ab workers=1", "doctor chooses --ab itself");
  expect_bad_input("doctor --scenario mlp --steps -3 --results " + fresh_results_dir("doctor_bad"), "--steps");
}

}  // namespace
}  // namespace trainlab::e2e
