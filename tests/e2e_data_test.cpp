// End to end: on-disk data and the loader through the real binary. A corrupt shard and a
// truncated JPEG each stop the run with one error naming the file and exit status 2 (never a hang:
// the child has a timeout, and so has the test); the sweep validates its lists, runs its points,
// reports the not-applicable ones, writes its chart and recommends a point, and one stopped
// midway (Ctrl-C, SIGKILL) keeps its measured points. A stale dataset folder is rebuilt.
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "e2e_support.h"
#include "core/run_record.h"

namespace trainlab {
namespace {
namespace fs = std::filesystem;
using e2e::run_trainlab;

// Every sample of these datasets is read in the first step (64 samples, batch 64).
constexpr const char* kTinyVision =
    "--scenario vision --batch 64 -k samples=64 -k image_size=40 -k crop=32 -k width=4 --warmup 0 --steps 2";
constexpr const char* kTinyRecsys =
    "--scenario recsys --batch 64 -k samples=64 -k items=300 -k mean_history=40 -k max_history=100 "
    "-k dim=16 -k heads=2 -k layers=1 -k seq_len=8 --warmup 0 --steps 2";

std::string only_dataset_dir(const std::string& data_root, const std::string& kind) {
  for (const auto& entry : fs::directory_iterator(data_root)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && name.rfind(kind + "-", 0) == 0 && name.find(".tmp") == std::string::npos) {
      return entry.path().string();
    }
  }
  return "";
}

std::string last_line(const std::string& text) {
  std::string trimmed = text;
  while (!trimmed.empty() && trimmed.back() == '\n') trimmed.pop_back();
  const auto nl = trimmed.rfind('\n');
  return nl == std::string::npos ? trimmed : trimmed.substr(nl + 1);
}

// A tiny run (kTinyVision or kTinyRecsys) with its dataset under a fresh results folder named after
// `name`, run once (it must succeed) so that the dataset is there.
struct DatasetRun {
  std::string args;     // the run's arguments
  std::string dataset;  // the dataset's folder
};
void run_once_making_the_dataset(const char* tiny, const std::string& kind, const std::string& name,
                                 DatasetRun* run) {
  const std::string results = e2e::fresh_results_dir(name);
  run->args = std::string("run ") + tiny + " --timeout-s 120 --results " + results + " --data-dir " +
              results + "/data";
  const auto first = run_trainlab(run->args);
  ASSERT_EQ(first.exit_status, 0) << first.err;
  run->dataset = only_dataset_dir(results + "/data", kind);
}

TEST(DataE2E, TruncatedJpegIsOneErrorNamingTheFileAndExitTwo) {
  DatasetRun run;
  ASSERT_NO_FATAL_FAILURE(run_once_making_the_dataset(kTinyVision, "vision", "jpeg", &run));
  const std::string image = run.dataset + "/images/000013.jpg";
  ASSERT_TRUE(fs::exists(image));
  fs::resize_file(image, fs::file_size(image) / 2);

  for (const char* workers : {"0", "2"}) {
    const auto r = run_trainlab(run.args + " --workers " + workers);
    EXPECT_EQ(r.exit_status, 2) << r.err;
    EXPECT_NE(last_line(r.err).find("000013.jpg"), std::string::npos) << r.err;
    EXPECT_EQ(last_line(r.err).rfind("trainlab: error: ", 0), 0u) << r.err;
    EXPECT_LT(r.wall_s, 120);
  }
}

TEST(DataE2E, CorruptShardIsOneErrorNamingTheFileAndExitTwo) {
  DatasetRun run;
  ASSERT_NO_FATAL_FAILURE(run_once_making_the_dataset(kTinyRecsys, "recsys", "shard", &run));
  const std::string shard = run.dataset + "/shard-00000.zst";
  ASSERT_TRUE(fs::exists(shard));
  {
    // Flip bytes across the whole shard so every block is damaged.
    std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
    const auto size = static_cast<std::streamoff>(fs::file_size(shard));
    for (std::streamoff at = 16; at < size; at += 97) {
      f.seekg(at);
      char c = 0;
      f.read(&c, 1);
      f.seekp(at);
      c = static_cast<char>(c ^ 0x5a);
      f.write(&c, 1);
    }
  }
  for (const char* workers : {"0", "3"}) {
    const auto r = run_trainlab(run.args + " --workers " + workers);
    EXPECT_EQ(r.exit_status, 2) << r.err;
    EXPECT_NE(last_line(r.err).find("shard-00000.zst"), std::string::npos) << r.err;
    EXPECT_LT(r.wall_s, 120);
  }
}

TEST(DataE2E, StaleDatasetFolderIsRebuilt) {
  // A dataset folder whose manifest does not match (an interrupted or older generation) is
  // removed and generated again; the run succeeds. (Regression: the removal once went through
  // libtorch.so's std::filesystem::remove_all, which crashes on a non-empty folder.)
  DatasetRun run;
  ASSERT_NO_FATAL_FAILURE(run_once_making_the_dataset(kTinyRecsys, "recsys", "stale", &run));
  std::ofstream(run.dataset + "/manifest.json") << "{}";
  std::ofstream(run.dataset + "/leftover.bin") << "stale";
  const auto again = run_trainlab(run.args);
  EXPECT_EQ(again.exit_status, 0) << again.err;
  EXPECT_FALSE(fs::exists(run.dataset + "/leftover.bin"));
  EXPECT_TRUE(fs::exists(run.dataset + "/index.bin"));
}

void expect_bad_sweep(const std::string& args, const std::string& message_part) {
  e2e::expect_bad_input("sweep " + args, message_part);
}

TEST(DataE2E, SweepRejectsImpossibleLists) {
  const std::string results = e2e::fresh_results_dir("badsweep");
  const std::string r = " --scenario vision --device cpu --results " + results;
  expect_bad_sweep("--workers ''" + r, "--workers: an empty value");
  expect_bad_sweep("--workers -1" + r, "--workers");
  expect_bad_sweep("--workers 0,,2" + r, "empty value in --workers");
  expect_bad_sweep("--workers 0,x" + r, "invalid value 'x'");
  expect_bad_sweep("--prefetch 0" + r, "invalid --prefetch 0 (must be 1 to 64)");
  expect_bad_sweep("--prefetch -2" + r, "--prefetch");
  expect_bad_sweep("--batch 0" + r, "invalid --batch 0 (must be 1 to");
  expect_bad_sweep("--batch ''" + r, "--batch: an empty value");
  expect_bad_sweep("--pin-memory maybe" + r, "expected on or off");
  expect_bad_sweep("--pin-memory on" + r, "impossible sweep");
  expect_bad_sweep("--tolerance-pct 150" + r, "--tolerance-pct");
  EXPECT_TRUE(e2e::only_run_dir(results).empty());  // nothing ran, nothing written
}

// A vision setting small enough for a sweep in a test: tiny images, a narrow model, 4 steps.
constexpr const char* kSweepVision =
    "--scenario vision --device cpu --batch 16 -k samples=128 -k image_size=48 -k crop=32 -k width=4 "
    "--steps 4 --warmup 1 ";

TEST(DataE2E, SweepRunsPointsReportsNotApplicableAndRecommends) {
  const std::string results = e2e::fresh_results_dir("sweep");
  const auto r = run_trainlab("sweep " + std::string(kSweepVision) +
                              "--workers 0,2 --prefetch 1,2 --pin-memory off,on --results " + results);
  ASSERT_EQ(r.exit_status, 0) << r.err;
  const std::string run_dir = e2e::only_run_dir(results.c_str());
  ASSERT_FALSE(run_dir.empty());
  const RunRecord run = e2e::read_measured_run(run_dir);
  EXPECT_EQ(run.kind, "sweep");
  // workers=0 once (prefetch does not apply), workers=2 with prefetch 1 and 2; pin=on not run.
  ASSERT_EQ(run.variants.size(), 3u);
  EXPECT_EQ(run.variants[0].spec.workers, 0);
  EXPECT_EQ(run.variants[1].spec.workers, 2);
  EXPECT_EQ(run.variants[2].spec.prefetch, 2);
  for (const VariantRecord& v : run.variants) {
    ASSERT_TRUE(v.ok()) << v.error;
    EXPECT_FALSE(v.spec.pin_memory);
    EXPECT_GT(aggregate(v).samples_per_s, 0);
    EXPECT_GT(v.cpu_util_pct, 0);
    EXPECT_GT(aggregate(v).data_stage_ms_mean[1], 0);  // decode time was measured
  }
  ASSERT_TRUE(run.details.sweep.has_value());
  EXPECT_EQ(run.details.sweep->not_applicable.size(), 3u);
  EXPECT_NE(r.out.find("n/a"), std::string::npos);
  ASSERT_TRUE(run.details.sweep->recommendation.has_value());
  // The recommendation indexes the whole record, where a point re-run as disturbed (a loaded CI
  // machine) keeps its first try: it must name a measured, undisturbed point.
  const RunRecord full = read_run_record(run_dir);
  const auto recommended = static_cast<size_t>(run.details.sweep->recommendation->variant_index);
  ASSERT_LT(recommended, full.variants.size());
  EXPECT_TRUE(full.variants[recommended].disturbed.empty()) << full.variants[recommended].disturbed;
  EXPECT_TRUE(full.variants[recommended].ok()) << full.variants[recommended].error;
  EXPECT_EQ(run.details.sweep->chart, "throughput_vs_workers.svg");
  EXPECT_NE(run.reading.at(0).find("Recommended: "), std::string::npos);
  const std::string svg = e2e::slurp(run_dir + "/throughput_vs_workers.svg");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("polyline"), std::string::npos);
}

TEST(DataE2E, SweepWithRepeatRunsTheGridInRoundsAndReportsTheirMedian) {
  const std::string results = e2e::fresh_results_dir("sweep-repeat");
  const auto r = run_trainlab("sweep " + std::string(kSweepVision) + "--workers 0,1 --repeat 2 --results " + results);
  ASSERT_EQ(r.exit_status, 0) << r.err;
  const RunRecord run = e2e::read_measured_run(e2e::only_run_dir(results.c_str()));
  // Rounds: workers 0, 1, then 0, 1 again.
  ASSERT_EQ(run.variants.size(), 4u);
  const int expected_workers[] = {0, 1, 0, 1}, expected_round[] = {0, 0, 1, 1};
  for (size_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(run.variants[i].ok()) << run.variants[i].error;
    EXPECT_EQ(run.variants[i].spec.workers, expected_workers[i]);
    EXPECT_EQ(run.variants[i].repetition, expected_round[i]);
  }
  ASSERT_TRUE(run.details.sweep.has_value());
  EXPECT_EQ(run.details.sweep->repeat, 2);
  EXPECT_NE(r.out.find("range (2 rounds)"), std::string::npos) << r.out;
  // The table's samples/s for workers=0 is the median (here the mean) of its two rounds.
  const double median = (aggregate(run.variants[0]).samples_per_s + aggregate(run.variants[2]).samples_per_s) / 2;
  char median_text[32];
  std::snprintf(median_text, sizeof median_text, "%.1f", median);
  EXPECT_NE(r.out.find(median_text), std::string::npos) << r.out << " median " << median;
  EXPECT_NE(r.err.find("[4/4]"), std::string::npos) << r.err;
}

// A sweep stopped after its first point, by Ctrl-C or by SIGKILL of the parent alone, leaves a
// run.json with that point measured and the rest marked interrupted (run.json is rewritten after
// every point), which history and diagnose read; Ctrl-C also prints the table and exits 130.
TEST(DataE2E, AnInterruptedSweepKeepsItsMeasuredPointsAndMarksTheRest) {
  for (const int signo : {SIGINT, SIGKILL}) {
    const std::string results = e2e::fresh_results_dir("sweep-interrupt" + std::to_string(signo));
    const std::string out_path = results + "/../sweep-interrupt" + std::to_string(signo) + ".out";
    const pid_t pid = e2e::spawn_trainlab({"sweep", "--scenario", "vision", "--device", "cpu", "--batch", "16", "-k",
                                           "samples=128", "-k", "image_size=48", "-k", "crop=32", "-k", "width=4",
                                           "--steps", "60", "--warmup", "1", "--workers", "0,1,2", "--results", results},
                                          out_path, "/dev/null");
    ASSERT_GE(pid, 0);
    const std::string run_dir = e2e::wait_for_run_record(results, /*finished_variant=*/true);
    ASSERT_FALSE(run_dir.empty()) << "no run.json with a finished point";
    const int exit_status = e2e::signal_and_wait(pid, signo);
    if (signo == SIGINT) {
      EXPECT_EQ(exit_status, 130);
      const std::string out = e2e::slurp(out_path);
      EXPECT_NE(out.find("not run (interrupted)"), std::string::npos) << out;
      EXPECT_NE(out.find("2 points not run"), std::string::npos) << out;
    }
    const RunRecord record = e2e::read_measured_run(run_dir);
    EXPECT_EQ(record.kind, "sweep");
    ASSERT_EQ(record.variants.size(), 3u);  // workers 0, 1, 2: all accounted for
    EXPECT_TRUE(record.variants[0].ok()) << record.variants[0].error;
    EXPECT_EQ(record.variants[0].spec.workers, 0);
    for (size_t i = 1; i < 3; ++i) {
      EXPECT_EQ(record.variants[i].error_kind, "interrupted") << record.variants[i].error;
      EXPECT_EQ(record.variants[i].spec.workers, static_cast<int>(i));
    }
    ASSERT_TRUE(record.details.sweep.has_value());
    if (signo == SIGINT) {
      EXPECT_TRUE(std::any_of(record.reading.begin(), record.reading.end(), [](const std::string& line) {
        return line.find("interrupted with 2 points of 3 not run") != std::string::npos;
      }));
    }
    const auto history = run_trainlab("history --results " + results);
    EXPECT_EQ(history.exit_status, 0) << history.err;
    EXPECT_NE(history.out.find("2 interrupted"), std::string::npos) << history.out;
    EXPECT_EQ(run_trainlab("diagnose " + run_dir).exit_status, 0);
  }
}

}  // namespace
}  // namespace trainlab
