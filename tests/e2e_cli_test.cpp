// End to end: bad input gives one clear line on stderr and exit status 2; `list` shows scenarios.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "core/run_record.h"
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

// Ctrl-C (SIGINT) or a closed terminal (SIGHUP) to the lab's parent, once its first variant has
// finished: the running child is stopped, exit status 128 + the signal, and run.json holds the
// finished variant and marks the rest interrupted; history and diagnose read it. SIGKILL to the
// parent leaves the run.json written after the last finished variant, the rest marked not run.
// On a terminal (a pseudo-terminal from script(1)) run rewrites one progress line with the step
// and the time left; with stderr in a file it prints no such line.
TEST(CliE2E, AProgressLineOnATerminalOnly) {
  const std::string args = "run --scenario mlp --batch 32 -k in_features=64 -k hidden=256 -k classes=10 --threads 1 "
                           "--warmup 2 --steps 60 --callback-every 1 --callback-ms 50 --sampler off --results " +
                           e2e::fresh_results_dir("progress");
  const std::string on_terminal =
      e2e::run_command("script -qec \"'" + std::string(TRAINLAB_BINARY) + "' " + args + "\" /dev/null 2>&1");
  EXPECT_NE(on_terminal.find("[1/1] fp32  step "), std::string::npos) << on_terminal;
  // 2 warm-up steps or more (until step times settle, at most 8) + 60 steps
  EXPECT_TRUE(std::regex_search(on_terminal, std::regex("step [0-9]+/6[2-8]  elapsed "))) << on_terminal;
  EXPECT_NE(on_terminal.find(" s left"), std::string::npos) << on_terminal;
  const e2e::CliResult piped = e2e::run_trainlab(args);
  ASSERT_EQ(piped.exit_status, 0) << piped.err;
  EXPECT_EQ(piped.err.find('\r'), std::string::npos) << piped.err;
  EXPECT_EQ(piped.err.find(" step "), std::string::npos) << piped.err;
}

TEST(CliE2E, AnInterruptedLabKeepsWhatFinishedAndMarksTheRest) {
  for (const int signo : {SIGINT, SIGHUP, SIGKILL}) {
    const std::string results = e2e::fresh_results_dir("interrupt" + std::to_string(signo));
    const pid_t pid = e2e::spawn_trainlab({"baseline", "--scenario", "tinyops", "--steps", "400", "--warmup", "1",
                                           "--emulated-bf16", "run", "--results", results},
                                          "/dev/null", results + "/../interrupt" + std::to_string(signo) + ".log");
    ASSERT_GE(pid, 0);
    // The lab builds its compiled variant's package before the first variant (export and compile:
    // minutes on a loaded 2-core machine the first time; cached for the later signals).
    const std::string run_dir =
        e2e::wait_for_run_record(results, /*finished_variant=*/true, std::chrono::seconds(420));
    ASSERT_FALSE(run_dir.empty()) << "no run.json with a finished variant";
    const int exit_status = e2e::signal_and_wait(pid, signo);
    if (signo != SIGKILL) {
      EXPECT_EQ(exit_status, 128 + signo);
    }
    // A first repetition disturbed by the machine's load is kept as such and run again (left out
    // here): the interrupt may then stop its re-run. The rest: 3 variants x 3 interleaved repetitions.
    const RunRecord record = e2e::read_measured_run(run_dir);
    ASSERT_EQ(record.variants.size(), 9u);  // all accounted for
    const bool first_finished = record.variants[0].ok();
    if (!first_finished) EXPECT_EQ(record.variants[0].error_kind, "interrupted") << record.variants[0].error;
    for (size_t i = 1; i < record.variants.size(); ++i) {
      EXPECT_FALSE(record.variants[i].ok());
      EXPECT_EQ(record.variants[i].error_kind, "interrupted") << record.variants[i].error;
    }
    // No child runs on after its parent.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const auto ps = e2e::run_command("pgrep -f '[_]_variant --spec " + run_dir + "' || true");
    EXPECT_TRUE(ps.empty()) << ps;
    const auto history = run_trainlab("history --results " + results);
    EXPECT_EQ(history.exit_status, 0);
    EXPECT_NE(history.out.find(first_finished ? "8 interrupted" : "9 interrupted"), std::string::npos) << history.out;
    EXPECT_EQ(run_trainlab("diagnose " + run_dir).exit_status, 0);
  }
}

// Output to a pipe whose reader has gone (`trainlab run ... 2>&1 | head` after head ended): the
// write fails instead of killing the lab, which stops as on SIGTERM: its run.json marks every
// variant it had not run interrupted, and it exits 128 + SIGPIPE.
TEST(CliE2E, AClosedOutputPipeStopsTheRunAndKeepsItsRecord) {
  const std::string results = e2e::fresh_results_dir("broken_pipe");
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  ::close(pipe_fds[0]);  // no reader: the first write to the pipe fails
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    ::dup2(pipe_fds[1], STDERR_FILENO);
    ::signal(SIGPIPE, SIG_DFL);  // as a shell starts it
    ::execl(TRAINLAB_BINARY, "trainlab", "run", "--scenario", "mlp", "--repeat", "3", "--steps", "30", "--warmup",
            "1", "--sampler", "off", "--results", results.c_str(), static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  ::close(pipe_fds[1]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGPIPE);
  const RunRecord record = e2e::read_measured_run(e2e::only_run_dir(results));
  ASSERT_EQ(record.variants.size(), 3u);
  for (const VariantRecord& v : record.variants) EXPECT_EQ(v.error_kind, "interrupted") << v.error;
  EXPECT_FALSE(std::filesystem::exists(e2e::only_run_dir(results) + "/.running"));  // finished: unmarked
}

// `run --scenario mlp` for far more steps than a test waits for (120 s at most), in the background;
// its output goes to results/../NAME.log.
pid_t spawn_endless_mlp_run(const std::string& results, const std::string& name) {
  return e2e::spawn_trainlab({"run", "--scenario", "mlp", "--steps", "100000", "--warmup", "1", "--timeout-s", "120",
                              "--sampler", "off", "--results", results},
                             "/dev/null", results + "/../" + name + ".log");
}

// A run folder reads as running from its start: run.json is there before any variant finished, and
// history, diagnose and compare say the run is still running (diagnose used to say the folder was
// not a run). Ctrl-C then ends it as usual.
TEST(CliE2E, ARunFolderReadsAsRunningBeforeAnyVariantFinished) {
  const std::string results = e2e::fresh_results_dir("running");
  const pid_t pid = spawn_endless_mlp_run(results, "running");
  ASSERT_GE(pid, 0);
  const std::string run_dir = e2e::wait_for_run_record(results, /*finished_variant=*/false,
                                                       std::chrono::seconds(30));
  ASSERT_FALSE(run_dir.empty()) << "no run.json at the start of the run";
  const auto history = run_trainlab("history --results " + results);
  EXPECT_EQ(history.exit_status, 0) << history.err;
  EXPECT_NE(history.out.find("running"), std::string::npos) << history.out;
  const auto diagnosed = run_trainlab("diagnose " + run_dir);
  EXPECT_EQ(diagnosed.exit_status, 2) << diagnosed.err;
  EXPECT_NE(diagnosed.err.find("the run is still running: no variant finished yet"), std::string::npos)
      << diagnosed.err;
  const auto compared = run_trainlab("compare " + run_dir + " " + run_dir);
  EXPECT_EQ(compared.exit_status, 2) << compared.err;
  EXPECT_NE(compared.err.find("the run is still running"), std::string::npos) << compared.err;
  EXPECT_EQ(e2e::signal_and_wait(pid, SIGINT), 130);
  EXPECT_FALSE(std::filesystem::exists(run_dir + "/.running"));  // the run ended: no longer marked
  const RunRecord record = e2e::read_measured_run(run_dir);
  ASSERT_EQ(record.variants.size(), 1u);
  EXPECT_EQ(record.variants[0].error_kind, "interrupted") << record.variants[0].error;
}

// The training child killed from outside (kill -9, no memory pressure): the variant is recorded as
// killed, not as out of memory over its limit, though SIGKILL is also what the kernel's OOM killer
// sends (the parent's own description of the end used to match its out-of-memory signs).
TEST(CliE2E, ATrainingChildKilledFromOutsideIsRecordedAsKilledNotOutOfMemory) {
  const std::string results = e2e::fresh_results_dir("child_killed");
  const pid_t pid = spawn_endless_mlp_run(results, "child_killed");
  ASSERT_GE(pid, 0);
  std::string child;  // the training child, once it runs
  for (int i = 0; i < 600 && child.empty(); ++i) {
    child = e2e::run_command("pgrep -f '[_]_variant --spec " + results + "/' | head -1");
    if (child.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(child.empty()) << "no training child";
  ASSERT_EQ(::kill(std::stoi(child), SIGKILL), 0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);  // the variant failed
  const RunRecord record = e2e::read_measured_run(e2e::only_run_dir(results));
  ASSERT_EQ(record.variants.size(), 1u);
  EXPECT_EQ(record.variants[0].error_kind, "killed") << record.variants[0].error;
  EXPECT_NE(record.variants[0].error.find("killed by signal 9 (SIGKILL) from outside"), std::string::npos)
      << record.variants[0].error;
  EXPECT_EQ(record.variants[0].error.find("over the variant's memory limit"), std::string::npos)
      << record.variants[0].error;
}

// Knobs in range can still ask for more memory than the machine has (recsys attention over 2048
// positions wants 4 GiB blocks): the variant's memory limit turns that into a recorded out of
// memory with the limit, in seconds, instead of the kernel's OOM killer taking the machine.
TEST(CliE2E, AVariantOverItsMemoryLimitIsRecordedAsOutOfMemory) {
  const std::string results = e2e::fresh_results_dir("memory_limit");
  const auto r = run_trainlab("run --scenario recsys -k seq_len=2048 -k samples=256 --steps 3 --memory-limit-gb 1.5 "
                              "--results " + results);
  EXPECT_EQ(r.exit_status, 1) << r.err;
  EXPECT_NE(r.err.find("out of memory: over the variant's memory limit of 1.5 GiB (--memory-limit-gb)"),
            std::string::npos)
      << r.err;
  const RunRecord record = e2e::read_measured_run(e2e::only_run_dir(results));
  ASSERT_EQ(record.variants.size(), 1u);
  EXPECT_EQ(record.variants[0].error_kind, "out_of_memory");
}

}  // namespace
}  // namespace trainlab
