// End-to-end compare and history: two real runs, the three output formats, the exit statuses
// (0 without regression, 1 on a regression beyond the maximum, 2 on bad input), and the listing.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "e2e_support.h"

namespace trainlab::e2e {
namespace {

TEST(CompareE2E, TwoRunsComparedInEveryFormatAndListedInHistory) {
  const std::string results = fresh_results_dir("compare");
  // A run, then the same variant with its steps made several times slower by a 100 ms callback every
  // step (a change no machine noise hides; whether two separate identical runs agree depends on the
  // machine's load, which is measured, not tested: see the README).
  // Three interleaved repetitions each: the intervals are over repetitions.
  for (const std::string extra : {"--repeat 3", "--repeat 3 --callback-every 1 --callback-ms 100"}) {
    const CliResult r = run_trainlab("run --scenario mlp --threads 1 --steps 12 --warmup 2 -k hidden=256 --results " + results +
                                     " " + extra);
    ASSERT_EQ(r.exit_status, 0) << r.err;
  }
  std::vector<std::string> runs;
  for (const auto& entry : std::filesystem::directory_iterator(results)) {
    if (entry.is_directory() && std::filesystem::exists(entry.path() / "run.json")) runs.push_back(entry.path().string());
  }
  std::sort(runs.begin(), runs.end());
  ASSERT_EQ(runs.size(), 2u);

  const CliResult same = run_trainlab("compare " + runs[0] + " " + runs[0] + " --format json");
  EXPECT_EQ(same.exit_status, 0) << same.err;
  const nlohmann::json j = nlohmann::json::parse(same.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << same.out;
  EXPECT_EQ(j["rows"].size(), 5u);
  EXPECT_FALSE(j["gate_failed"].get<bool>());
  for (const nlohmann::json& row : j["rows"]) EXPECT_EQ(row["verdict"], "unchanged") << row.dump();

  nlohmann::json first = nlohmann::json::parse(slurp(runs[0] + "/run.json"));
  // Repetitions the lab left out as disturbed and ran again (the shared machine's load) aside.
  nlohmann::json& first_variants = first["variants"];
  first_variants.erase(std::remove_if(first_variants.begin(), first_variants.end(),
                                      [](const nlohmann::json& v) { return v.contains("disturbed"); }),
                       first_variants.end());
  ASSERT_EQ(first["variants"].size(), 3u);
  EXPECT_EQ(first["variants"][2]["repetition"].get<int>(), 2);

  const CliResult slower = run_trainlab("compare " + runs[0] + " " + runs[1] + " --max-regression 10");
  EXPECT_EQ(slower.exit_status, 1) << slower.out << slower.err;
  EXPECT_EQ(slower.out.find("fewer than 3 runs a side"), std::string::npos) << slower.out;
  EXPECT_NE(slower.out.find("regressed"), std::string::npos) << slower.out;
  EXPECT_NE(slower.out.find("REGRESSION beyond the maximum"), std::string::npos) << slower.out;

  const CliResult markdown = run_trainlab("compare " + runs[0] + " " + runs[1] + "/run.json --format markdown");
  EXPECT_NE(markdown.out.find("| variant | metric |"), std::string::npos) << markdown.out;

  expect_bad_input("compare " + runs[0] + " " + results + "/nothing-here", "nothing-here");
  expect_bad_input("compare " + runs[0] + " " + runs[1] + " --format yaml", "invalid --format 'yaml'");

  const CliResult history = run_trainlab("history --results " + results);
  EXPECT_EQ(history.exit_status, 0) << history.err;
  EXPECT_EQ(count_lines(history.out), 2 + 2) << history.out;  // header, rule, two runs
  EXPECT_NE(history.out.find("samples/s"), std::string::npos) << history.out;
  expect_bad_input("history --results " + results + "/missing", "no such results folder");
}

}  // namespace
}  // namespace trainlab::e2e
