// `trainlab profile [options] -- COMMAND...` end to end with the built binary: the fake recorder
// (tests/fixtures/job_fake_recorder, torch-free) and its loop (tests/fixtures/job_scripts/fake_loop.py)
// stand in for a training job, so the runner, its record, the stage in the verdict, the faults
// (command not found, a failing job, no steps, a timeout, Ctrl-C) and the readers of a job's folder
// (diagnose, compare, history) are tested here; tests/jobs/*.py run with the real recorder where
// torch is (e2e label).
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "tests/e2e_support.h"
#include "tests/process_gone.h"

namespace trainlab::e2e {
namespace {

namespace fs = std::filesystem;

std::string fixtures() { return TRAINLAB_FIXTURES_DIR; }
std::vector<std::pair<std::string, std::string>> fake_env() {
  return {{"TRAINLAB_JOB_RECORDER_DIR", fixtures() + "/job_fake_recorder"}};
}
std::string loop(const std::string& mode, int steps = 8) {
  return "python3 " + fixtures() + "/job_scripts/fake_loop.py " + mode + " " + std::to_string(steps);
}
nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(slurp(path)); }
// The real in-job recorder (profiler/job_recorder/, or $TRAINLAB_JOB_RECORDER_DIR) and the test jobs
// (tests/jobs/, or $TRAINLAB_JOB_SCRIPTS_DIR: another checkout's).
std::string real_recorder_dir() {
  const char* env = std::getenv("TRAINLAB_JOB_RECORDER_DIR");
  return env != nullptr && *env ? env : std::string(TRAINLAB_SOURCE_DIR) + "/profiler/job_recorder";
}
std::string jobs_dir() {
  const char* env = std::getenv("TRAINLAB_JOB_SCRIPTS_DIR");
  return env != nullptr && *env ? env : std::string(TRAINLAB_SOURCE_DIR) + "/tests/jobs";
}

TEST(JobE2E, CommandNotFoundIsOneLineAndExitTwo) {
  const std::string results = fresh_results_dir("job_not_found");
  const CliResult r = run_trainlab("profile --results " + results + " -- no-such-command-xyz --flag", fake_env());
  EXPECT_EQ(r.exit_status, 2) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("no-such-command-xyz: command not found"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_empty(results));  // nothing ran, no folder
}

// `profile --` with nothing after it is bad input, not the default scenario's profile (the hostile
// job campaign found it running recsys for minutes).
TEST(JobE2E, NothingAfterTheSeparatorIsOneLineAndExitTwo) {
  const std::string results = fresh_results_dir("job_nothing_after");
  const CliResult r = run_trainlab("profile --results " + results + " --", fake_env());
  EXPECT_EQ(r.exit_status, 2) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("nothing after --"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_empty(results));
}

TEST(JobE2E, DataBoundJobNamesTheStageAndTheUsersLoader) {
  const std::string results = fresh_results_dir("job_data");
  const CliResult r =
      run_trainlab("profile --results " + results + " --steps 10 --warmup 2 -- " + loop("data", 100), fake_env());
  ASSERT_EQ(r.exit_status, 0) << r.err << r.out;
  const std::string dir = only_run_dir(results);
  ASSERT_FALSE(dir.empty());
  for (const char* f : {"run.json", "variants/job.json", "diagnosis.json", "report.html"})
    EXPECT_TRUE(fs::exists(dir + "/" + f)) << f;
  const nlohmann::json run = read_json(dir + "/run.json");
  const nlohmann::json& v = run["variants"][0];
  EXPECT_EQ(v["label"], "job");
  EXPECT_EQ(v["steps"].size(), 10u);  // --steps 10 ended it (warm-up included), not its own 100
  EXPECT_EQ(v["job"]["ended"], "steps reached");
  EXPECT_EQ(v["job"]["loaders"][0]["file"], "fake_loop.py");
  EXPECT_GT(v["job"]["tree_peak_rss_bytes"].get<int64_t>(), 0);
  const nlohmann::json diagnosis = read_json(dir + "/diagnosis.json");
  const nlohmann::json& d = diagnosis["diagnoses"][0];
  EXPECT_EQ(d["verdict"]["primary"], "data_pipeline") << d["verdict"].dump();
  const nlohmann::json& stages = d["summary"]["loader_stages"];
  ASSERT_TRUE(stages.is_object());
  EXPECT_EQ(stages["stages"][0]["name"], "PIL.Image.Image.convert");
  // The script spins 30 / 15 / 5 ms: decode 60 % of the producer's time (within 10 points).
  EXPECT_NEAR(stages["stages"][0]["share_pct"].get<double>(), 60.0, 10.0);
  const std::string headline = d["verdict"]["headline"];
  EXPECT_NE(headline.find("decoding (PIL.Image.Image.convert)"), std::string::npos) << headline;
  EXPECT_NE(headline.find("RandomResizedCrop"), std::string::npos) << headline;
  bool names_loader = false;
  for (const auto& a : d["verdict"]["actions"]) {
    names_loader |= a["action"].get<std::string>().find("fake_loop.py:27 (today: num_workers=2") != std::string::npos;
  }
  EXPECT_TRUE(names_loader) << d["verdict"]["actions"].dump();
  EXPECT_NE(slurp(dir + "/report.html").find("Inside the data pipeline"), std::string::npos);

  // A job's folder is a run like any other.
  const CliResult again = run_trainlab("diagnose " + dir + " --out " + results + "/again");
  EXPECT_EQ(again.exit_status, 0) << again.err;
  EXPECT_NE(again.out.find("PIL.Image.Image.convert"), std::string::npos) << again.out;
  const CliResult history = run_trainlab("history --results " + results);
  EXPECT_EQ(history.exit_status, 0) << history.err;
}

TEST(JobE2E, ComputeBoundJobNamesNoStage) {
  const std::string results = fresh_results_dir("job_compute");
  const CliResult r = run_trainlab("profile --results " + results + " --warmup 1 -- " + loop("compute", 6), fake_env());
  ASSERT_EQ(r.exit_status, 0) << r.err;
  const nlohmann::json d = read_json(only_run_dir(results) + "/diagnosis.json")["diagnoses"][0];
  EXPECT_EQ(d["verdict"]["primary"], "model_compute") << d["verdict"].dump();
  EXPECT_EQ(d["verdict"]["headline"].get<std::string>().find("spend"), std::string::npos);
}

TEST(JobE2E, CompareReadsTwoJobs) {
  const std::string results = fresh_results_dir("job_compare");
  ASSERT_EQ(run_trainlab("profile --results " + results + "/a --warmup 1 -- " + loop("data", 8), fake_env()).exit_status, 0);
  ASSERT_EQ(run_trainlab("profile --results " + results + "/b --warmup 1 -- " + loop("compute", 8), fake_env()).exit_status, 0);
  const CliResult c = run_trainlab("compare " + only_run_dir(results + "/a") + " " + only_run_dir(results + "/b"));
  EXPECT_NE(c.exit_status, 2) << c.err;
  EXPECT_NE(c.out.find("job"), std::string::npos) << c.out;
}

TEST(JobE2E, FailingJobKeepsItsRecordAndSaysSoInOneLine) {
  const std::string results = fresh_results_dir("job_fail");
  const CliResult r = run_trainlab("profile --results " + results + " -- " + loop("fail"), fake_env());
  EXPECT_EQ(r.exit_status, 1) << r.err;
  EXPECT_NE(r.err.find("trainlab: the job ended with exit status 3: ValueError: the labels do not match the classes"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("Traceback"), std::string::npos);  // the job's stderr passed through
  EXPECT_NE(r.out.find("step 0 loss 2.30"), std::string::npos);  // and its stdout
  const nlohmann::json run = read_json(only_run_dir(results) + "/run.json");
  const nlohmann::json& job = run["variants"][0]["job"];
  EXPECT_EQ(job["exit_status"], 3);
  EXPECT_EQ(job["ended"], "failed");
  EXPECT_NE(job["stderr_tail"].get<std::string>().find("ValueError"), std::string::npos);
}

TEST(JobE2E, JobKilledBySigkillSaysSoAndKeepsItsRecord) {  // as the OOM killer does
  const std::string results = fresh_results_dir("job_sigkill");
  const CliResult r = run_trainlab("profile --results " + results + " -- sh -c 'echo dying >&2; kill -9 $$'", fake_env());
  EXPECT_EQ(r.exit_status, 1) << r.err;
  EXPECT_NE(r.err.find("trainlab: the job was killed by signal 9 (Killed): out of memory (the kernel's OOM killer) or "
                       "killed from outside: dying"),
            std::string::npos)
      << r.err;
  const nlohmann::json job = read_json(only_run_dir(results) + "/run.json")["variants"][0]["job"];
  EXPECT_EQ(job["signal"], 9);
  EXPECT_EQ(job["ended"], "failed");
}

TEST(JobE2E, JobWithoutStepsOffersTheStepFunction) {
  const std::string results = fresh_results_dir("job_nosteps");
  const CliResult r = run_trainlab("profile --results " + results + " -- " + loop("nosteps"), fake_env());
  EXPECT_EQ(r.exit_status, 1) << r.err;
  EXPECT_NE(r.err.find("without reaching a training step"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--step-function"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(only_run_dir(results) + "/run.json"));
}

TEST(JobE2E, TimeoutEndsTheJobAndKeepsTheRecord) {
  const std::string results = fresh_results_dir("job_timeout");
  const CliResult r = run_trainlab("profile --results " + results + " --timeout 2 -- " + loop("hang"), fake_env());
  EXPECT_EQ(r.exit_status, 1) << r.err;
  EXPECT_NE(r.err.find("timed out after 2 s"), std::string::npos) << r.err;
  EXPECT_LT(r.wall_s, 30);
  const nlohmann::json run = read_json(only_run_dir(results) + "/run.json");
  EXPECT_EQ(run["variants"][0]["job"]["ended"], "timed out");
}

TEST(JobE2E, CtrlCEndsTheTreeAndKeepsWhatWasMeasured) {
  const std::string results = fresh_results_dir("job_ctrl_c");
  const std::string pids = ::testing::TempDir() + "/job_ctrl_c.pids";
  fs::remove(pids);
  for (const auto& [k, v] : fake_env()) ::setenv(k.c_str(), v.c_str(), 1);
  const pid_t pid = spawn_trainlab({"profile", "--results", results, "--", fixtures() + "/job_scripts/tree_that_lingers.sh", pids},
                                   results + "/../job_ctrl_c.out", results + "/../job_ctrl_c.err");
  for (int i = 0; i < 100 && count_lines(slurp(pids)) < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_EQ(count_lines(slurp(pids)), 2);
  for (const auto& [k, v] : fake_env()) ::unsetenv(k.c_str());  // the other tests set it per run
  const int status = signal_and_wait(pid, SIGINT);
  EXPECT_EQ(status, 128 + SIGINT) << slurp(results + "/../job_ctrl_c.err");  // as every command that is interrupted
  std::ifstream in(pids);
  std::string what;
  int p = 0;
  while (in >> what >> p) EXPECT_TRUE(trainlab::test_process::process_gone(p)) << what << " " << p;
  EXPECT_TRUE(fs::exists(only_run_dir(results) + "/run.json"));
}

// The real in-job recorder (profiler/job_recorder/, or $TRAINLAB_JOB_RECORDER_DIR) on a small torch
// training script run unmodified: its steps, its DataLoader's file:line, the capture window's trace.
TEST(JobE2E, RealRecorderOnASmallTrainingScript) {
#ifndef TRAINLAB_TORCH_PYTHON
  GTEST_SKIP() << "no Python with torch configured";
#else
  const std::string recorder = real_recorder_dir();
  if (!fs::exists(recorder + "/sitecustomize.py")) GTEST_SKIP() << "no recorder in " << recorder;
  const std::string results = fresh_results_dir("job_real_recorder");
  const CliResult r = run_trainlab("profile --results " + results + " --steps 8 --warmup 2 --capture 4:2 -- " +
                                       TRAINLAB_TORCH_PYTHON + " " + fixtures() + "/job_scripts/small_train.py --device cpu",
                                   {{"TRAINLAB_JOB_RECORDER_DIR", recorder}});
  ASSERT_EQ(r.exit_status, 0) << r.err << r.out;
  EXPECT_EQ(r.out.find("final loss"), std::string::npos) << r.out;  // --steps ended it before its own end
  const std::string dir = only_run_dir(results);
  const nlohmann::json v = read_json(dir + "/run.json")["variants"][0];
  EXPECT_EQ(v["steps"].size(), 8u);
  EXPECT_EQ(v["job"]["ended"], "steps reached");
  EXPECT_NE(v["job"]["torch_version"].get<std::string>().find("2."), std::string::npos);
  ASSERT_FALSE(v["job"]["loaders"].empty());
  EXPECT_EQ(fs::path(v["job"]["loaders"][0]["file"].get<std::string>()).filename(), "small_train.py");
  EXPECT_TRUE(fs::exists(dir + "/traces/job/rank0.pt.trace.json"));
  EXPECT_TRUE(fs::exists(dir + "/diagnosis.json"));
#endif
}

// The compute-bound test job (tests/jobs/compute_train.py: an MLP on tensors made in the loop, no
// DataLoader), profiled unmodified through the real recorder: the verdict is model compute, and no
// loader stage is named. Ground truth: the script's steps wait on no loader at all.
TEST(JobE2E, ComputeTrainJobIsModelComputeAndNamesNoStage) {
#ifndef TRAINLAB_TORCH_PYTHON
  GTEST_SKIP() << "no Python with torch configured";
#else
  const std::string recorder = real_recorder_dir();
  const std::string script = jobs_dir() + "/compute_train.py";
  if (!fs::exists(recorder + "/sitecustomize.py") || !fs::exists(script)) GTEST_SKIP() << "no recorder or tests/jobs";
  const std::string results = fresh_results_dir("job_compute");
  const CliResult r = run_trainlab("profile --results " + results + " --steps 20 --warmup 2 -- " +
                                       std::string(TRAINLAB_TORCH_PYTHON) + " " + script + " --steps 100",
                                   {{"TRAINLAB_JOB_RECORDER_DIR", recorder}});
  ASSERT_EQ(r.exit_status, 0) << r.err << r.out;
  const nlohmann::json d = read_json(only_run_dir(results) + "/diagnosis.json")["diagnoses"][0];
  EXPECT_EQ(d["verdict"]["primary"], "model_compute") << d["verdict"]["headline"];
  EXPECT_FALSE(d["summary"].contains("loader_stages") && !d["summary"]["loader_stages"].is_null() &&
               !d["summary"]["loader_stages"]["stages"].empty())
      << d["summary"]["loader_stages"];
  const std::string headline = d["verdict"]["headline"];
  for (const char* stage_word : {"workers spend", "main process spends", "decoding"})
    EXPECT_EQ(headline.find(stage_word), std::string::npos) << headline;
#endif
}

// A 2-rank DDP job under torchrun (tests/jobs/ddp_train.py, Gloo on CPU), profiled unmodified with a
// captured window: DDP's all-reduce waits are inside backward in the step records, and the window's
// trace takes them out of compute. The ground truth, measured another way: the same script's steps
// timed by hand with and without model.no_sync() (ddp_train.py --by-hand), the all-reduce's share
// of the step's compute phases being 1 - no_sync / sync. The rank's verdict is communication, and
// its communication share of the compute phases is within 20 points of the hand-timed one.
TEST(JobE2E, DdpJobUnderTorchrunSplitsTheAllReduceOutOfComputeAsTheHandTimedShare) {
#ifndef TRAINLAB_TORCH_PYTHON
  GTEST_SKIP() << "no Python with torch configured";
#else
  const std::string recorder = real_recorder_dir();
  const std::string script = jobs_dir() + "/ddp_train.py";
  if (!fs::exists(recorder + "/sitecustomize.py") || !fs::exists(script)) GTEST_SKIP() << "no recorder or tests/jobs";
  const std::string torchrun = std::string(TRAINLAB_TORCH_PYTHON) + " -m torch.distributed.run --standalone --nproc-per-node 2 ";
  const std::string results = fresh_results_dir("job_ddp");
  const CliResult r = run_trainlab("profile --results " + results + " --steps 16 --warmup 2 --capture 6:6 -- " + torchrun +
                                       script + " --steps 100",
                                   {{"TRAINLAB_JOB_RECORDER_DIR", recorder}});
  ASSERT_EQ(r.exit_status, 0) << r.err << r.out;
  const std::string dir = only_run_dir(results);
  EXPECT_TRUE(fs::exists(dir + "/traces/job/rank0.pt.trace.json"));
  EXPECT_TRUE(fs::exists(dir + "/traces/job/rank1.pt.trace.json"));
  const nlohmann::json d = read_json(dir + "/diagnosis.json")["diagnoses"][0];
  const nlohmann::json& shares = d["summary"]["shares_pct"];
  const double comm = shares["communication"], busy = comm + shares["compute"].get<double>() + shares["framework"].get<double>();
  ASSERT_GT(busy, 0.0);
  const std::string report = results + "/by_hand.json";
  run_command(torchrun + script + " --by-hand " + report + " > /dev/null 2>&1");
  const nlohmann::json hand = read_json(report);
  const double hand_pct = 100.0 * (1.0 - hand["no_sync_ms"].get<double>() / hand["sync_ms"].get<double>());
  std::cout << "all-reduce share of the compute phases: ours " << 100.0 * comm / busy << " %, by hand " << hand_pct
            << " % (" << hand["sync_ms"] << " ms a step, " << hand["no_sync_ms"] << " ms under no_sync)\n";
  EXPECT_EQ(d["verdict"]["primary"], "communication") << d["verdict"]["headline"];
  EXPECT_NEAR(100.0 * comm / busy, hand_pct, 20.0);
  EXPECT_NE(r.out.find("communication from the captured window's trace"), std::string::npos) << r.out;
#endif
}

// A data-bound test job (tests/jobs/), profiled unmodified through the real recorder: the verdict is
// the data pipeline, and the stage it names first is the top stage of the same pipeline timed by
// hand (tests/jobs/stages_by_hand.py, CPU time, in a run without the recorder) or within 10 points
// of it, with a share within 10 points of the hand-timed one. `job_args`: the script and its
// arguments after the interpreter; `hand_args`: stages_by_hand.py's. Needs a Python with
// torchvision and pyarrow: $TRAINLAB_JOB_TEST_PYTHON (tests/job_recorder_test.py makes that side venv).
void expect_hand_timed_top_stage(const std::string& name, const std::string& job_args, const std::string& hand_args) {
  const std::string jobs = jobs_dir(), recorder = real_recorder_dir();
  const char* py = std::getenv("TRAINLAB_JOB_TEST_PYTHON");
  if (py == nullptr || !fs::exists(py) || !fs::exists(jobs + "/image_folder_train.py")) GTEST_SKIP() << "no tests/jobs or TRAINLAB_JOB_TEST_PYTHON";
  const std::string results = fresh_results_dir(name);
  const CliResult r = run_trainlab("profile --results " + results + " --steps 14 --warmup 2 -- " + py + " " + jobs + "/" +
                                       job_args,
                                   {{"TRAINLAB_JOB_RECORDER_DIR", recorder}});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  const nlohmann::json d = read_json(only_run_dir(results) + "/diagnosis.json")["diagnoses"][0];
  EXPECT_EQ(d["verdict"]["primary"], "data_pipeline") << d["verdict"]["headline"];
  const nlohmann::json& stages = d["summary"]["loader_stages"]["stages"];
  ASSERT_FALSE(stages.empty());
  const nlohmann::json hand = nlohmann::json::parse(run_command(std::string(py) + " " + jobs + "/stages_by_hand.py " + hand_args));
  // The recorder's stage names as the hand timing groups them (a file's read, its decode, the
  // Dataset's own code).
  const auto group_of = [](const nlohmann::json& st) -> std::string {
    const std::string stage = st["name"], kind = st["kind"];
    if (kind == "read" || kind == "decode" || kind == "collate" || kind == "handoff") return kind;
    if (kind == "dataset") return "own";
    return stage;
  };
  std::map<std::string, double> hand_pct, ours_pct;
  double hand_total = hand["total_cpu_ns"].get<double>();
  for (const auto& [stage, st] : hand["stages"].items()) hand_pct[stage] = 100.0 * st["cpu_ns"].get<double>() / hand_total;
  // Ours by CPU time too, from the record's own stage group (the summary's shares are by wall time
  // on a quiet machine).
  const nlohmann::json group = read_json(only_run_dir(results) + "/run.json")["variants"][0]["job"]["stage_groups"][0];
  for (const auto& st : group["stages"]) ours_pct[group_of(st)] += 100.0 * st["cpu_ns"].get<double>() / group["busy_cpu_ns"].get<double>();
  std::string hand_top, our_top;
  for (const auto& [k, v] : hand_pct) if (hand_top.empty() || v > hand_pct[hand_top]) hand_top = k;
  for (const auto& [k, v] : ours_pct) if (hand_pct.count(k) && (our_top.empty() || v > ours_pct[our_top])) our_top = k;
  ASSERT_FALSE(our_top.empty());
  std::cout << name << ": top stage " << our_top << " " << ours_pct[our_top] << " % of CPU; by hand " << hand_top << " "
            << hand_pct[hand_top] << " % (" << our_top << " " << hand_pct[our_top] << " %)\n";
  EXPECT_LE(hand_pct[hand_top] - hand_pct[our_top], 10.0) << "ours " << our_top << ", by hand " << hand_top;
  EXPECT_NEAR(ours_pct[our_top], hand_pct[our_top], 10.0) << our_top;
}

// JPEGs through ImageFolder and torchvision transforms, 2 workers.
TEST(JobE2E, ImageFolderJobNamesTheHandTimedTopStage) {
  const std::string data = ::testing::TempDir() + "/job_image_data";
  expect_hand_timed_top_stage("job_image_hand", "image_folder_train.py " + data + " --make-data 40 --workers 2 --steps 100",
                              "image " + data + " 96 2");
}

// The same pipeline with 0 workers: the main process builds each batch, and its stages are named.
TEST(JobE2E, ImageFolderJobWithoutWorkersNamesTheHandTimedTopStage) {
  const std::string data = ::testing::TempDir() + "/job_image_data";
  expect_hand_timed_top_stage("job_image_hand_w0",
                              "image_folder_train.py " + data + " --make-data 40 --workers 0 --steps 100",
                              "image " + data + " 96 0");
}

// Rows of a parquet file read through pyarrow in the Dataset, a Python augmentation, 2 workers.
TEST(JobE2E, ParquetJobNamesTheHandTimedTopStage) {
  const std::string rows = ::testing::TempDir() + "/job_rows.parquet";
  expect_hand_timed_top_stage("job_parquet_hand", "parquet_train.py " + rows + " --make-data 512 --workers 2 --steps 100",
                              "parquet " + rows + " 192 2");
}

}  // namespace
}  // namespace trainlab::e2e
