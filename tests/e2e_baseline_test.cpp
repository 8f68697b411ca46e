// End to end: the three-run lab and single runs on tiny scenario sizes, through the real binary
// (each variant in its own child process), checked through the run record. The BusyMachineE2E tests
// start processes that burn every core: ctest runs them alone (tests/CMakeLists.txt), since their
// burners would disturb a neighbour and a neighbour's load would blur the burst they time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "e2e_support.h"
#include "diagnostics/baseline_reading.h"
#include "core/run_record.h"
#include "harness/dist/dist_env.h"
#include "profiler/disturbance.h"

namespace trainlab {
namespace {
using e2e::run_trainlab;

constexpr const char* kTinyRecsys =
    "--scenario recsys --batch 16 --steps 6 --warmup 3 -k items=500 -k dim=32 -k layers=1 -k heads=2 "
    "-k seq_len=8 -k user_vocab=50 -k categories=20 -k samples=128 -k mean_history=40 -k max_history=100";
constexpr const char* kTinyMlp =
    "--scenario mlp --batch 16 --steps 5 --warmup 2 -k in_features=64 -k hidden=64 -k classes=10";

// The record without the repetitions the lab left out (disturbed and run again, or measured at a
// thread count it then lowered: how many there are is the shared machine's load; the tests that use
// this are about the rest).
RunRecord counted(RunRecord run) {
  run.variants.erase(std::remove_if(run.variants.begin(), run.variants.end(),
                                    [](const VariantRecord& v) { return !v.disturbed.empty() || !v.superseded.empty(); }),
                     run.variants.end());
  return run;
}

const VariantRecord& variant(const RunRecord& run, const std::string& name) {
  for (const VariantRecord& v : run.variants) {
    if (v.spec.name() == name) return v;
  }
  throw std::runtime_error("no variant " + name);
}

TEST(BaselineLabE2E, ThreeVariantsInterleavedWithConsistentFigures) {
  const std::string results = e2e::fresh_results_dir("lab");
  // Two repetitions (interleaved fp32 bf16 compiled fp32 bf16 compiled), no loop budget: every step runs;
  // bf16 runs even where the probe finds it emulated.
  const auto r = run_trainlab(std::string("baseline ") + kTinyRecsys +
                              " --repeat 2 --max-loop-s 0 --emulated-bf16 run --results " + results);
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_NE(r.out.find("samples/s"), std::string::npos);  // the table
  EXPECT_NE(r.out.find("Reading:"), std::string::npos);
  EXPECT_NE(r.out.find("over 2 paired repetitions"), std::string::npos) << r.out;  // the gains' intervals

  const RunRecord run = counted(e2e::read_measured_run(e2e::only_run_dir(results)));
  EXPECT_EQ(run.kind, "baseline");
  ASSERT_EQ(run.variants.size(), 6u);
  for (size_t rep = 0; rep < 2; ++rep) {
    EXPECT_EQ(run.variants[3 * rep].spec.name(), "fp32");
    EXPECT_EQ(run.variants[3 * rep + 1].spec.name(), "bf16");
    EXPECT_EQ(run.variants[3 * rep + 2].spec.name(), "bf16+compiled");
    EXPECT_EQ(run.variants[3 * rep].repetition, static_cast<int>(rep));
  }
  EXPECT_EQ(run.reading.back().rfind("Reading: ", 0), 0u) << run.reading.back();  // one conclusion, last
  EXPECT_FALSE(run.environment.libtorch_version.empty());
  EXPECT_GT(run.environment.logical_cores, 0);
  EXPECT_FALSE(run.reading.empty());

  for (const VariantRecord& v : run.variants) {
    ASSERT_TRUE(v.ok()) << v.spec.name() << ": " << v.error;
    // 3 warm-up steps or more, until step times settle (at most 4x), + 6 measured
    const int64_t warmup_taken = v.warmup_steps_taken.value_or(-1);
    EXPECT_GE(warmup_taken, 3);
    EXPECT_LE(warmup_taken, 12);
    ASSERT_EQ(static_cast<int64_t>(v.steps.size()), warmup_taken + 6);
    int64_t measured_ns = 0;
    for (const StepRecord& s : v.steps) {
      if (s.warmup) continue;
      measured_ns += s.step_ns;
      int64_t phases = 0;
      for (int64_t p : s.phase_ns) phases += p;
      EXPECT_NEAR(static_cast<double>(phases), static_cast<double>(s.step_ns), 0.01 * s.step_ns);
    }
    const VariantAggregate agg = aggregate(v);
    EXPECT_EQ(agg.measured_steps, 6);
    // samples/s = batch x measured steps / measured time, and that time fits in the wall clock.
    EXPECT_NEAR(agg.samples_per_s, 16.0 * 6 / (measured_ns / 1e9), 1e-6 * agg.samples_per_s);
    EXPECT_GT(measured_ns, 0);
    EXPECT_LT(measured_ns / 1e9, r.wall_s);
    EXPECT_GT(v.peak_memory_bytes, 10 << 20);
    EXPECT_GT(v.ops_per_step, 10);
  }

  const VariantRecord& fp32 = variant(run, "fp32");
  const VariantRecord& bf16 = variant(run, "bf16");
  const VariantRecord& compiled = variant(run, "bf16+compiled");
  // bf16 is really used: ops ran on bf16 inputs and the model output is bf16.
  EXPECT_EQ(fp32.op_input_dtypes.count("BFloat16"), 0u);
  EXPECT_EQ(fp32.forward_output_dtype, "Float");
  ASSERT_EQ(bf16.op_input_dtypes.count("BFloat16"), 1u);
  EXPECT_GT(bf16.op_input_dtypes.at("BFloat16"), 10);
  EXPECT_EQ(bf16.forward_output_dtype, "BFloat16");
  // The compiled variant is Inductor's bf16 package (exported under autocast; its parity with eager
  // autocast is inductor_step_test's), and the record counts the host ops of one forward+backward
  // both ways. (Here the bf16 package dispatches more ATen ops than eager does, measured 1669 vs
  // 1266: the ops Inductor leaves to ATen; tinyops' fp32 package cuts them, tested below.)
  EXPECT_EQ(compiled.compile_info.method, kInductorMethod);
  EXPECT_GT(compiled.compile_info.fusion_groups, 0);
  EXPECT_GT(compiled.compile_info.forward_backward_ops_eager, 50);
  EXPECT_GT(compiled.compile_info.forward_backward_ops_compiled, 0);
  EXPECT_EQ(compiled.compile_info.cuda_graph, "not on a CUDA device");
  EXPECT_TRUE(bf16.compile_info.empty());
}

// Without the Python side the compiled variant cannot be built: it is recorded as not measured
// with the reason, the other two variants run, the reading says compiling could not be measured,
// and the lab still exits 0. TorchScript stays available under its own name (--compiler).
TEST(BaselineLabE2E, WithoutPythonCompilingIsNotMeasuredAndTheOtherVariantsRun) {
  const std::string results = e2e::fresh_results_dir("nopython");
  const auto r = run_trainlab(std::string("baseline ") + kTinyMlp + " --repeat 2 --emulated-bf16 run --results " +
                                  results,
                              {{"TRAINLAB_PYTHON", "/nonexistent/python3"}});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  const RunRecord run = counted(e2e::read_measured_run(e2e::only_run_dir(results)));
  // fp32 and bf16 in every round (two, or more while a gain holds its line); the compiled variant
  // once: it is not retried.
  const auto count = [&](const std::string& name) {
    return std::count_if(run.variants.begin(), run.variants.end(),
                         [&](const VariantRecord& v) { return v.spec.name() == name; });
  };
  EXPECT_GE(count("fp32"), 2);
  EXPECT_EQ(count("bf16"), count("fp32"));
  EXPECT_EQ(count("bf16+compiled"), 1);
  const VariantRecord& compiled = variant(run, "bf16+compiled");
  EXPECT_EQ(compiled.error_kind, "unavailable");
  EXPECT_NE(compiled.error.find("needs the Python side"), std::string::npos) << compiled.error;
  // The lab's own builds (bf16, then fp32) failed: the variant is recorded from them, never started
  // to build the same package a third time.
  const std::filesystem::path run_dir = e2e::only_run_dir(results);
  EXPECT_TRUE(std::filesystem::exists(run_dir / "compiled_package_fp32.log"));
  EXPECT_FALSE(std::filesystem::exists(run_dir / "variants" / "bf16_compiled.rep1.spec.json"));
  EXPECT_TRUE(variant(run, "fp32").ok());
  EXPECT_TRUE(variant(run, "bf16").ok());
  bool said = false;
  for (const std::string& line : run.reading) said |= line.find("compiling could not be measured") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_NE(r.out.find("not measured"), std::string::npos) << r.out;

  const std::string ts_results = e2e::fresh_results_dir("torchscript");
  const auto ts = run_trainlab(std::string("run ") + kTinyMlp + " --compiled on --compiler torchscript --results " +
                                   ts_results,
                               {{"TRAINLAB_PYTHON", "/nonexistent/python3"}});
  ASSERT_EQ(ts.exit_status, 0) << ts.err;
  const VariantRecord traced = e2e::read_measured_run(e2e::only_run_dir(ts_results)).variants.at(0);
  EXPECT_EQ(traced.spec.name(), "fp32+torchscript");
  EXPECT_EQ(traced.compile_info.method, "torchscript-trace");
  EXPECT_GT(traced.compile_info.traced_graph_nodes, 3);
}

// The compiled variant is Inductor's where the scenario has a twin: the package is built before
// the loop (timed, then found in the cache by the next run), runs forward and backward in one call,
// and the record says what it generated.
TEST(BaselineLabE2E, TheCompiledVariantRunsInductorsPackageAndFindsItCachedNextTime) {
  const std::string results = e2e::fresh_results_dir("inductor");
  const std::string data = results + "/data";
  const std::string args = "run --scenario tinyops --batch 8 -k width=16 -k depth=4 --steps 6 --warmup 2 "
                           "--compiled on --data-dir " + data + " --results " + results;
  const auto cold = run_trainlab(args);
  ASSERT_EQ(cold.exit_status, 0) << cold.err;
  const auto warm = run_trainlab(args);
  ASSERT_EQ(warm.exit_status, 0) << warm.err;
  std::vector<std::string> runs;
  for (const auto& entry : std::filesystem::directory_iterator(results)) {
    if (std::filesystem::exists(entry.path() / "run.json")) runs.push_back(entry.path().string());
  }
  std::sort(runs.begin(), runs.end());
  ASSERT_EQ(runs.size(), 2u);
  const VariantRecord first = e2e::read_measured_run(runs[0]).variants.at(0);
  const VariantRecord second = e2e::read_measured_run(runs[1]).variants.at(0);
  ASSERT_TRUE(first.ok()) << first.error;
  EXPECT_EQ(first.compile_info.method, kInductorMethod);
  EXPECT_GT(first.compile_info.fusion_groups, 0);
  EXPECT_GT(first.compile_info.compile_s, 0.5);
  EXPECT_FALSE(first.compile_info.cache_hit);
  EXPECT_TRUE(second.compile_info.cache_hit);
  // tinyops is many small ops: the package runs its forward+backward with a fraction of them.
  EXPECT_GT(first.compile_info.forward_backward_ops_eager, 100);
  EXPECT_LT(first.compile_info.forward_backward_ops_compiled, first.compile_info.forward_backward_ops_eager / 2);
  EXPECT_EQ(second.compile_info.compile_s, first.compile_info.compile_s);  // the build's time, kept with it
  // Real losses, and the package's build is not in any step: the init time holds it.
  for (const StepRecord& step : first.steps) EXPECT_TRUE(std::isfinite(step.loss)) << step.index;
  EXPECT_GT(first.init_ns / 1e9, first.compile_info.compile_s);
}

TEST(BaselineLabE2E, TheLoopBudgetEndsMeasurementEarlyAndSaysHowManyStepsItCut) {
  const std::string results = e2e::fresh_results_dir("budget");
  const auto r = run_trainlab("run --scenario mlp --batch 16 -k in_features=64 -k hidden=64 -k classes=10 "
                              "--steps 100000 --warmup 2 --max-loop-s 1 --results " + results);
  ASSERT_EQ(r.exit_status, 0) << r.err;
  const RunRecord run = counted(e2e::read_measured_run(e2e::only_run_dir(results)));
  const VariantRecord& v = run.variants.at(0);
  const VariantAggregate agg = aggregate(v);
  EXPECT_GE(agg.measured_steps, kMinBudgetedSteps);
  EXPECT_LT(agg.measured_steps, 100000);
  // Steps run + steps cut = warm-up taken + measured steps asked for (warm-up may itself end after its
  // first step when that step alone takes a third of the budget, or go on until step times settle).
  const int64_t accounted = v.steps_cut_by_budget + static_cast<int64_t>(v.steps.size());
  ASSERT_TRUE(v.warmup_steps_taken.has_value());
  EXPECT_EQ(accounted, 100000 + *v.warmup_steps_taken);
  EXPECT_GE(*v.warmup_steps_taken, 1);
  EXPECT_LE(*v.warmup_steps_taken, 8);
  EXPECT_LT(r.wall_s, 60.0);
}

TEST(BaselineLabE2E, SameSeedGivesSameFp32Losses) {
  std::vector<std::vector<double>> losses;
  for (int i = 0; i < 2; ++i) {
    const std::string results = e2e::fresh_results_dir("seed" + std::to_string(i));
    const auto r = run_trainlab(std::string("run ") + kTinyMlp + " --seed 7 --results " + results);
    ASSERT_EQ(r.exit_status, 0) << r.err;
    const RunRecord run = counted(e2e::read_measured_run(e2e::only_run_dir(results)));
    ASSERT_EQ(run.variants.size(), 1u);
    std::vector<double> l;
    for (const StepRecord& s : run.variants[0].steps) l.push_back(s.loss);
    losses.push_back(l);
  }
  // 2 warm-up steps or more (until step times settle) + 5 measured: the steps both runs ran match.
  ASSERT_GE(losses[0].size(), 7u);
  ASSERT_GE(losses[1].size(), 7u);
  const size_t common = std::min(losses[0].size(), losses[1].size());
  EXPECT_EQ(std::vector<double>(losses[0].begin(), losses[0].begin() + common),
            std::vector<double>(losses[1].begin(), losses[1].begin() + common));
  EXPECT_NE(losses[0].front(), losses[0].back());  // it trained: the loss moved
}

TEST(BaselineLabE2E, FailingVariantIsRecordedAndOthersComplete) {
  const std::string results = e2e::fresh_results_dir("failing");
  // A batch this large cannot be allocated: the bf16 child fails, the lab goes on.
  const auto r = run_trainlab(std::string("baseline ") + kTinyMlp +
                              " --repeat 1 --emulated-bf16 run --override bf16:batch=1000000000 --results " + results);
  EXPECT_EQ(r.exit_status, 1) << r.err;  // results kept, status says a variant failed
  const RunRecord run = counted(e2e::read_measured_run(e2e::only_run_dir(results)));
  ASSERT_EQ(run.variants.size(), 3u);
  EXPECT_TRUE(variant(run, "fp32").ok());
  EXPECT_TRUE(variant(run, "bf16+compiled").ok());
  const VariantRecord& failed = variant(run, "bf16");
  EXPECT_FALSE(failed.ok());
  EXPECT_FALSE(failed.error.empty());
  EXPECT_EQ(failed.spec.batch_size, 1000000000);
  EXPECT_NE(r.out.find("error in bf16"), std::string::npos);
}

TEST(BaselineLabE2E, TheBf16ProbeDecidesWhichVariantsRunAndTheRecordShowsWhy) {
  const std::string results = e2e::fresh_results_dir("probe");
  const auto r = run_trainlab(std::string("baseline ") + kTinyMlp + " --repeat 2 --results " + results);
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_NE(r.err.find("bf16 probe: "), std::string::npos) << r.err;
  const RunRecord run = counted(e2e::read_measured_run(e2e::only_run_dir(results)));
  ASSERT_TRUE(run.details.bf16_probe.has_value());
  const Bf16ProbeTimings& probe_timings = *run.details.bf16_probe;
  ASSERT_EQ(probe_timings.device, "cpu");
  EXPECT_EQ(probe_timings.cpu_isa.count("avx2"), 1u);
  const std::vector<double>& fp32_ns = probe_timings.fp32_ns;
  const std::vector<double>& bf16_ns = probe_timings.bf16_ns;
  ASSERT_EQ(fp32_ns.size(), 15u);
  ASSERT_EQ(bf16_ns.size(), 15u);
  for (size_t i = 0; i < fp32_ns.size(); ++i) {
    EXPECT_GT(fp32_ns[i], 1000);  // a Linear layer's forward+backward takes microseconds at least
    EXPECT_GT(bf16_ns[i], 1000);
  }
  // The lab ran what the rule says for the timings it recorded: this CPU's answer, either way.
  const Bf16Probe probe =
      read_bf16_probe(fp32_ns, bf16_ns, "", Thresholds::defaults().value(threshold::lab::bf16_probe_skip_below_pct));
  ASSERT_TRUE(probe.measured);
  const std::vector<std::string> expected = probe.bf16_left_out
                                                ? std::vector<std::string>{"fp32", "fp32+compiled"}
                                                : std::vector<std::string>{"fp32", "bf16", "bf16+compiled"};
  ASSERT_EQ(run.variants.size(), 2 * expected.size());
  for (size_t i = 0; i < run.variants.size(); ++i) {
    EXPECT_EQ(run.variants[i].spec.name(), expected[i % expected.size()]);
    EXPECT_TRUE(run.variants[i].ok()) << run.variants[i].error;
  }
  ASSERT_GE(run.reading.size(), 3u);
  EXPECT_EQ(run.reading[0].rfind(probe.bf16_left_out ? "fp32 -> bf16 not run" : "fp32 -> bf16 ", 0), 0u)
      << run.reading[0];
  EXPECT_EQ(run.reading[1].rfind(probe.bf16_left_out ? "fp32 -> compiled" : "bf16 -> compiled", 0), 0u)
      << run.reading[1];
  EXPECT_EQ(run.reading.back().rfind("Reading: ", 0), 0u);
}

}  // namespace
}  // namespace trainlab

namespace trainlab {
namespace {

// The pid of a process whose command line holds `folder` and `needle` (its arguments joined by
// spaces), or 0.
pid_t find_process_with(const std::string& folder, const std::string& needle) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = e2e::slurp(entry.path().string() + "/cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(folder) != std::string::npos && cmdline.find(needle) != std::string::npos) {
      return static_cast<pid_t>(std::stoi(name));
    }
  }
  return 0;
}

// Processes that each keep a core busy until killed.
std::vector<pid_t> start_cpu_burners(int count) {
  std::vector<pid_t> burners;
  for (int k = 0; k < count; ++k) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      volatile uint64_t spin = 0;
      for (;;) spin = spin + 1;
    }
    burners.push_back(pid);
  }
  return burners;
}

void stop(const std::vector<pid_t>& pids) {
  for (pid_t pid : pids) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
}

// Burns the cores (three burners on a 2-core machine: a one-thread run waits for a CPU about half
// the time) while the child whose spec file ends in `spec_suffix` runs, and only then; waits for
// `parent` to exit and returns whether it exited 0. False (with the reason in `why`) when that
// child never started.
// The child whose command line holds `results` and `spec_suffix`, once it starts (within 120 s);
// 0 when it never does.
pid_t wait_for_child(const std::string& results, const std::string& spec_suffix) {
  pid_t child = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (child == 0 && std::chrono::steady_clock::now() < give_up) {
    child = find_process_with(results, spec_suffix);
    if (child == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return child;
}

bool disturb_while_child_runs(pid_t parent, const std::string& results, const std::string& spec_suffix,
                              std::string& why) {
  const pid_t child = wait_for_child(results, spec_suffix);
  if (child == 0) {
    why = "no child with " + spec_suffix + " started";
    return false;
  }
  const std::vector<pid_t> burners = start_cpu_burners(3);
  while (::kill(child, 0) == 0 && find_process_with(results, spec_suffix) == child) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  stop(burners);
  int status = 0;
  ::waitpid(parent, &status, 0);
  why = "exit status " + std::to_string(status);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Issue 33: sweep has the lab's guard. Burners run while the first point's child does: the point is
// left out of the table and recommendation, run again, and the terminal says so.
TEST(BusyMachineE2E, ASweepPointDisturbedOnPurposeIsRerunAndLeftOutOfTheTable) {
  const std::string results = e2e::fresh_results_dir("sweep-disturbed");
  const std::string out = results + "/sweep.out", err = results + "/sweep.err";
  const pid_t sweep = e2e::spawn_trainlab(
      {"sweep", "--scenario", "mlp", "--batch", "32,64", "--workers", "0", "--threads", "1", "-k",
       "hidden=256", "--steps", "200", "--warmup", "2", "--sampler", "off", "--results", results},
      out, err);
  std::string why;
  ASSERT_TRUE(disturb_while_child_runs(sweep, results, "/variants/point-1.spec.json", why))
      << why << e2e::slurp(err);
  const RunRecord run = read_run_record(e2e::only_run_dir(results));
  ASSERT_GE(run.variants.size(), 3u);
  EXPECT_NE(run.variants[0].disturbed.find("its threads waited for a CPU"), std::string::npos)
      << run.variants[0].disturbed;
  EXPECT_FALSE(run.variants[0].counts());
  EXPECT_EQ(run.variants[1].spec.batch_size, run.variants[0].spec.batch_size);  // the same point again
  const std::string terminal = e2e::slurp(err);
  EXPECT_NE(terminal.find(" re-run: another process took "), std::string::npos) << terminal;
  // The table has one row a point: the disturbed record is not a row of its own.
  const std::string table = e2e::slurp(out);
  size_t rows = 0;
  for (size_t at = table.find("\nworkers=0"); at != std::string::npos; at = table.find("\nworkers=0", at + 1))
    ++rows;
  EXPECT_EQ(rows, 2u) << table;
}

// Runs trainlab with `args` beside `burners` processes burning CPU, started before it so that its
// first sample of the load sees them, until it exits; then stops them. Whether it exited with 0.
bool run_beside_burners(const std::vector<std::string>& args, int burners, const std::string& out,
                        const std::string& err) {
  const std::vector<pid_t> burning = start_cpu_burners(burners);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const pid_t child = e2e::spawn_trainlab(args, out, err);
  int status = 0;
  ::waitpid(child, &status, 0);
  stop(burning);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Issue 33: a sweep at the default threads beside processes that already hold the cores runs every
// point at the cores left, chosen before the first point, as the lab does; the reading says so.
TEST(BusyMachineE2E, ASweepChoosesItsThreadsAtTheStartWhenOthersHoldTheCores) {
  const int cores = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  if (std::min(usable_cores(), physical_cores_usable()) < 2)
    GTEST_SKIP() << "one physical core: LibTorch's default is one thread, nothing to choose";
  const std::string results = e2e::fresh_results_dir("sweep-threads-at-start");
  const std::string err = results + "/sweep.err";
  ASSERT_TRUE(run_beside_burners({"sweep", "--scenario", "mlp", "--batch", "32,64", "--workers", "0", "-k",
                                  "hidden=256", "--steps", "20", "--warmup", "2", "--sampler", "off", "--results",
                                  results},
                                 cores + 1, results + "/sweep.out", err))
      << e2e::slurp(err);
  const RunRecord run = read_run_record(e2e::only_run_dir(results));
  ASSERT_EQ(run.details.thread_lowerings.size(), 1u) << e2e::slurp(err);
  EXPECT_EQ(run.details.thread_lowerings.front().after, "");
  EXPECT_EQ(run.details.thread_lowerings.front().to_threads, 1);
  ASSERT_GE(run.variants.size(), 2u);
  for (const VariantRecord& v : run.variants) {
    EXPECT_EQ(v.spec.threads, 1);
    if (v.ok()) EXPECT_EQ(v.environment.intra_op_threads, 1);
  }
  EXPECT_NE(e2e::slurp(err).find("busy at the start: every point runs at 1 thread"), std::string::npos)
      << e2e::slurp(err);
  ASSERT_FALSE(run.reading.empty());
  EXPECT_EQ(run.reading.back().rfind("Measured at 1 thread from the start", 0), 0u) << run.reading.back();
}

// Issue 33: a repetition disturbed on purpose (two processes burning the cores while the first
// repetition's child runs, and only then) is detected, left out, run again, and recorded as such;
// the terminal names it.
TEST(BusyMachineE2E, ARepetitionDisturbedOnPurposeIsDetectedRerunAndRecorded) {
  const std::string results = e2e::fresh_results_dir("disturbed");
  const std::string out = results + "/lab.out", err = results + "/lab.err";
  const pid_t lab = e2e::spawn_trainlab(
      {"run", "--scenario", "mlp", "--repeat", "2", "--threads", "1", "--batch", "32", "-k", "hidden=256",
       "--steps", "200", "--warmup", "2", "--sampler", "off", "--results", results},
      out, err);
  // The first repetition's child (its spec is fp32.rep1.spec.json; a re-run's is fp32.rep1.rerun1...).
  std::string why;
  ASSERT_TRUE(disturb_while_child_runs(lab, results, "/variants/fp32.rep1.spec.json", why))
      << why << e2e::slurp(err);
  const RunRecord run = read_run_record(e2e::only_run_dir(results));
  ASSERT_GE(run.variants.size(), 3u);
  const VariantRecord& disturbed = run.variants[0];
  EXPECT_EQ(disturbed.repetition, 0);
  ASSERT_TRUE(disturbed.ok()) << disturbed.error;
  ASSERT_TRUE(disturbed.disturbance.other_cpu_pct.has_value());
  EXPECT_GT(*disturbed.disturbance.other_cpu_pct, 25.0);
  ASSERT_TRUE(disturbed.disturbance.runqueue_wait_pct.has_value());
  EXPECT_GT(*disturbed.disturbance.runqueue_wait_pct, 25.0);
  EXPECT_NE(disturbed.disturbed.find("another process took"), std::string::npos) << disturbed.disturbed;
  EXPECT_NE(disturbed.disturbed.find("its threads waited for a CPU"), std::string::npos)
      << disturbed.disturbed;
  EXPECT_FALSE(disturbed.counts());
  // Run again: the first repetition has a record that counts (re-run on a quieter machine, or kept
  // once the re-runs were spent), and the second repetition follows.
  EXPECT_TRUE(std::any_of(run.variants.begin() + 1, run.variants.end(),
                          [](const VariantRecord& v) { return v.repetition == 0 && v.counts(); }));
  EXPECT_EQ(run.variants.back().repetition, 1);
  // Warm-up ran until step times settled, within its cap (4x --warmup), and the record says how long;
  // the measured steps are all there after it.
  for (const VariantRecord& v : run.variants) {
    const auto warmup = std::count_if(v.steps.begin(), v.steps.end(), [](const StepRecord& s) { return s.warmup; });
    EXPECT_EQ(v.warmup_steps_taken.value_or(-1), warmup);
    EXPECT_GE(warmup, 2);
    EXPECT_LE(warmup, 8);
    EXPECT_EQ(static_cast<int64_t>(v.steps.size()) - warmup, 200);
    EXPECT_TRUE(v.disturbance.runqueue_wait_pct.has_value());
  }
  const std::string terminal = e2e::slurp(err);
  EXPECT_NE(terminal.find("fp32 #1 re-run: another process took "), std::string::npos) << terminal;
  EXPECT_NE(terminal.find("% of the CPU"), std::string::npos) << terminal;
  // The report's table marks it and says why.
  const std::string table = e2e::slurp(out);
  EXPECT_NE(table.find("fp32 #1 (disturbed)"), std::string::npos) << table;
  EXPECT_NE(table.find("left out of every figure and run again"), std::string::npos) << table;
}

// --min-loop-s: measurement goes on past --steps until the measured steps have lasted that long;
// the record says how many steps that added. Without it, --steps is what runs.
TEST(BaselineLabE2E, MinLoopTimeMeasuresPastTheStepsUntilItIsReached) {
  const std::string results = e2e::fresh_results_dir("min-loop");
  ASSERT_EQ(run_trainlab(std::string("run ") + kTinyMlp + " --threads 1 --sampler off --min-loop-s 0.5 --results " +
                         results).exit_status, 0);
  // A repetition disturbed by another process is run again: the one that counts is checked, and
  // every one measured past the floor alike.
  const RunRecord all = read_run_record(e2e::only_run_dir(results));
  for (const VariantRecord& each : all.variants) EXPECT_GE(aggregate(each).measured_ns, 500'000'000);
  const RunRecord run = e2e::read_measured_run(e2e::only_run_dir(results));
  ASSERT_EQ(run.variants.size(), 1u);
  const VariantRecord& v = run.variants.front();
  const VariantAggregate agg = aggregate(v);
  EXPECT_GE(agg.measured_ns, 500'000'000);
  EXPECT_GT(v.steps_added_for_min_loop, 0);
  EXPECT_EQ(agg.measured_steps, 5 + v.steps_added_for_min_loop);
  EXPECT_DOUBLE_EQ(v.spec.min_loop_s, 0.5);

  const std::string plain = e2e::fresh_results_dir("min-loop-off");
  ASSERT_EQ(run_trainlab(std::string("run ") + kTinyMlp + " --threads 1 --sampler off --results " + plain).exit_status, 0);
  const VariantRecord fixed = e2e::read_measured_run(e2e::only_run_dir(plain)).variants.front();
  EXPECT_EQ(aggregate(fixed).measured_steps, 5);
  EXPECT_EQ(fixed.steps_added_for_min_loop, 0);
}

// `run --scenario mlp --repeat 2` at LibTorch's default threads with lab.quiet_wait_s as given and no
// load sample at its start: a machine already loaded (CI keeps a core busy) would have the lab
// choose 1 thread from the start (ThreadsAreChosenAtTheStart...), leaving nothing to wait or lower.
// `extra` adds arguments (e.g. an --ab, whose two variants then make each round).
pid_t spawn_default_threads_lab(const std::string& results, int quiet_wait_s,
                                const std::vector<std::string>& extra = {}) {
  const std::string thresholds = results + "/thresholds.json";
  std::ofstream(thresholds) << R"({"schema_version": 1, "thresholds": {
      "lab.start_load_sample_s": {"value": 0, "unit": "s", "source": "test"},
      "lab.quiet_wait_s": {"value": )" << quiet_wait_s << R"(, "unit": "s", "source": "test"}}})";
  std::vector<std::string> args = {"run", "--scenario", "mlp", "--repeat", "2", "--batch", "32", "-k", "hidden=256",
                                   "--steps", "200", "--warmup", "2", "--sampler", "off", "--thresholds", thresholds,
                                   "--results", results};
  args.insert(args.end(), extra.begin(), extra.end());
  return e2e::spawn_trainlab(args, results + "/lab.out", results + "/lab.err");
}

// Burners on every core (one more than there are) from the child whose files are `stem` (e.g.
// "fp32.rep2", "B.rep1") until `enough` says so, the lab ends, or 300 s pass; then waits for the
// lab and returns whether it exited 0. False (nothing burnt) when that child never started.
bool burn_from_child(const std::string& results, pid_t lab, const std::string& stem, const std::function<bool()>& enough) {
  const int cores = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  if (wait_for_child(results, "/variants/" + stem + ".spec.json") == 0) return false;
  const std::vector<pid_t> burners = start_cpu_burners(cores + 1);
  const auto burn_limit = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  while (!enough() && ::waitpid(lab, nullptr, WNOHANG) == 0 && std::chrono::steady_clock::now() < burn_limit) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  stop(burners);
  int status = 0;
  ::waitpid(lab, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// A burst for the two burst tests: burners from the child whose files are `stem` until 2 s after
// the lab (its stderr in results/lab.err) says it waits for them to go; burn_from_child's result.
bool burst_until_the_lab_waits(const std::string& results, pid_t lab, const std::string& stem) {
  std::optional<std::chrono::steady_clock::time_point> waiting_since;
  return burn_from_child(results, lab, stem, [&] {
    if (!waiting_since && e2e::slurp(results + "/lab.err").find("waits up to") != std::string::npos)
      waiting_since = std::chrono::steady_clock::now();
    return waiting_since && std::chrono::steady_clock::now() - *waiting_since > std::chrono::seconds(2);
  });
}

// Why no burst can pass here (other processes already keep half a core busy: a load that stays
// outlasts any wait, and the lab lowers instead, which the lowering test checks); empty otherwise.
std::string others_already_busy() {
  const std::optional<OthersLoad> before = sample_others_load(1000);
  if (!before || before->busy_cores < 0.5) return "";
  return "other processes keep " + std::to_string(before->busy_cores) + " cores busy: no burst can pass here";
}

// Issue 33: a lab at LibTorch's default threads (a thread per core) beside processes that come to
// hold the cores: its threads wait for their slowest on every op, so the lab samples the load,
// lowers its threads to the cores left, and measures every variant again at the new count. The
// repetitions measured before stay in the record, out of the figures; the reading says so.
TEST(BusyMachineE2E, DefaultThreadsAreLoweredAndEveryVariantMeasuredAgainWhenOthersHoldTheCores) {
  const int cores = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  if (cores < 2) GTEST_SKIP() << "one core: LibTorch's default is one thread, nothing to lower";
  const std::string results = e2e::fresh_results_dir("threads-lowered");
  const std::string out = results + "/lab.out", err = results + "/lab.err";
  // The burners come with the first repetition: no repetition ran clean before them, so the lab
  // lowers at once without waiting for them to go (lab.quiet_wait_s, long here).
  const pid_t lab = spawn_default_threads_lab(results, 120);
  // Burning until the lab runs its first child at 1 thread (files named .threads1).
  ASSERT_TRUE(burn_from_child(
      results, lab, "fp32.rep1", [&] { return find_process_with(results, ".threads1.rep1.spec.json") != 0; }))
      << e2e::slurp(err);

  const RunRecord run = read_run_record(e2e::only_run_dir(results));
  ASSERT_EQ(run.details.thread_lowerings.size(), 1u) << e2e::slurp(err);
  const ThreadLowering& lowering = run.details.thread_lowerings.front();
  EXPECT_EQ(lowering.to_threads, 1);
  EXPECT_EQ(lowering.from_threads, run.variants.front().environment.intra_op_threads);
  EXPECT_GE(lowering.from_threads, 2);
  EXPECT_EQ(lowering.machine_cores, cores);
  EXPECT_GT(lowering.others_busy_cores, cores - 0.5);  // the burners, sampled while the lab idled
  EXPECT_EQ(lowering.after, "fp32 #1");
  EXPECT_EQ(lowering.repetitions_before, 1);
  EXPECT_TRUE(run.details.quiet_waits.empty()) << e2e::slurp(err);
  // The first repetition: measured at the default threads, disturbed, out of the figures.
  const VariantRecord& first = run.variants.front();
  EXPECT_FALSE(first.disturbed.empty());
  EXPECT_FALSE(first.counts());
  // What counts: both repetitions again, at 1 thread, in order.
  std::vector<const VariantRecord*> measured;
  for (const VariantRecord& v : run.variants) {
    if (v.counts()) measured.push_back(&v);
  }
  ASSERT_EQ(measured.size(), 2u);
  for (size_t k = 0; k < measured.size(); ++k) {
    EXPECT_EQ(measured[k]->repetition, static_cast<int>(k));
    EXPECT_EQ(measured[k]->spec.threads, 1);
    EXPECT_EQ(measured[k]->environment.intra_op_threads, 1);
  }
  EXPECT_EQ(run.environment.intra_op_threads, 1);  // the run's environment is that of its figures
  const std::string terminal = e2e::slurp(err);
  EXPECT_NE(terminal.find("so the lab lowers its threads to 1 and measures every variant again"), std::string::npos)
      << terminal;
  ASSERT_FALSE(run.reading.empty());
  EXPECT_EQ(run.reading.back().rfind("Measured at 1 thread from fp32 #1 on", 0), 0u) << run.reading.back();
  // The first repetition's files are still there beside the ones at 1 thread.
  const std::string variants = e2e::only_run_dir(results) + "/variants";
  EXPECT_TRUE(std::filesystem::exists(variants + "/fp32.rep1.spec.json"));
  EXPECT_TRUE(std::filesystem::exists(variants + "/fp32.threads1.rep1.spec.json"));
}

// Issue 33: a burst of other processes' load that comes after a clean repetition and passes: after
// the disturbed repetition the lab waits for them to go instead of lowering its threads, then
// measures that repetition again at LibTorch's default threads; nothing is lowered and the reading
// says how long it waited.
TEST(BusyMachineE2E, APassingBurstIsWaitedOutAndMeasuredAgainAtTheSameThreads) {
  const int cores = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  if (cores < 2) GTEST_SKIP() << "one core: LibTorch's default is one thread, nothing to lower";
  if (const std::string busy = others_already_busy(); !busy.empty()) GTEST_SKIP() << busy;
  const std::string results = e2e::fresh_results_dir("burst-waited-out");
  const std::string err = results + "/lab.err";
  const pid_t lab = spawn_default_threads_lab(results, 120);
  ASSERT_TRUE(burst_until_the_lab_waits(results, lab, "fp32.rep2")) << e2e::slurp(err);  // the second repetition

  const RunRecord run = read_run_record(e2e::only_run_dir(results));
  EXPECT_TRUE(run.details.thread_lowerings.empty()) << e2e::slurp(err);
  ASSERT_EQ(run.details.quiet_waits.size(), 1u) << e2e::slurp(err);
  const QuietWait& wait = run.details.quiet_waits.front();
  EXPECT_EQ(wait.after, "fp32 #2");
  EXPECT_TRUE(wait.went);
  EXPECT_GE(wait.waited_s, 1.0);    // the 2 s the burners stayed after the lab began to wait
  EXPECT_LT(wait.waited_s, 120.0);  // not the whole allowance
  EXPECT_GT(wait.others_busy_cores, cores - 0.5);
  EXPECT_EQ(wait.machine_cores, cores);
  // The first repetition ran clean; the second, disturbed, is out of the figures and ran again;
  // what counts ran at the default threads.
  ASSERT_GE(run.variants.size(), 3u);
  EXPECT_TRUE(run.variants[0].counts());
  EXPECT_EQ(run.variants[1].repetition, 1);
  EXPECT_FALSE(run.variants[1].disturbed.empty());
  EXPECT_FALSE(run.variants[1].counts());
  const int default_threads = run.variants.front().environment.intra_op_threads;
  EXPECT_GE(default_threads, 2);
  int counted = 0;
  for (const VariantRecord& v : run.variants) {
    if (!v.counts()) continue;
    ++counted;
    EXPECT_EQ(v.environment.intra_op_threads, default_threads);
  }
  EXPECT_EQ(counted, 2);
  const std::string terminal = e2e::slurp(err);
  EXPECT_NE(terminal.find("fp32 #2: they went after"), std::string::npos) << terminal;
  ASSERT_FALSE(run.reading.empty());
  bool said = false;
  for (const std::string& line : run.reading) said = said || line.rfind("fp32 #2 was disturbed: other processes kept", 0) == 0;
  EXPECT_TRUE(said) << run.reading.back();
}

// Issue 33: a burst that comes within a round (A/B: A #1 ran clean, B #1 disturbed) and passes: the
// lab waits it out and measures the whole round again, A #1 included, so that the round's pair is
// not split by the wait (A measured a minute before B); A #1 from before stays in the record, out of
// the figures, and its files stay beside the round's new ones.
TEST(BusyMachineE2E, ABurstWithinARoundHasTheWholeRoundMeasuredAgainAfterTheWait) {
  const int cores = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  if (cores < 2) GTEST_SKIP() << "one core: LibTorch's default is one thread, nothing to wait for";
  if (const std::string busy = others_already_busy(); !busy.empty()) GTEST_SKIP() << busy;
  const std::string results = e2e::fresh_results_dir("burst-round-again");
  const std::string err = results + "/lab.err";
  const pid_t lab = spawn_default_threads_lab(results, 120, {"--ab", "batch=16", "--max-rounds", "2"});
  ASSERT_TRUE(burst_until_the_lab_waits(results, lab, "B.rep1")) << e2e::slurp(err);

  const RunRecord run = read_run_record(e2e::only_run_dir(results));
  EXPECT_TRUE(run.details.thread_lowerings.empty()) << e2e::slurp(err);
  ASSERT_EQ(run.details.quiet_waits.size(), 1u) << e2e::slurp(err);
  const QuietWait& wait = run.details.quiet_waits.front();
  EXPECT_EQ(wait.after, "B fp32 #1");
  EXPECT_TRUE(wait.went);
  EXPECT_EQ(wait.repetitions_again, 1);
  // A #1 (clean, then superseded), B #1 (disturbed), A #1 and B #1 again, then round 2.
  ASSERT_EQ(run.variants.size(), 6u) << e2e::slurp(err);
  EXPECT_EQ(run.variants[0].label, "A");
  EXPECT_TRUE(run.variants[0].disturbed.empty());
  EXPECT_NE(run.variants[0].superseded.find("measured before a wait of"), std::string::npos)
      << run.variants[0].superseded;
  EXPECT_FALSE(run.variants[1].disturbed.empty());
  for (size_t k = 2; k < 6; ++k) {
    EXPECT_TRUE(run.variants[k].counts()) << k;
    EXPECT_EQ(run.variants[k].repetition, static_cast<int>(k / 4)) << k;
    EXPECT_EQ(run.variants[k].label, k % 2 == 0 ? "A" : "B") << k;
  }
  const std::string variants = e2e::only_run_dir(results) + "/variants";
  EXPECT_TRUE(std::filesystem::exists(variants + "/A.rep1.spec.json"));
  EXPECT_TRUE(std::filesystem::exists(variants + "/A.rep1.again1.spec.json"));
  EXPECT_TRUE(std::filesystem::exists(variants + "/B.rep1.again1.spec.json"));
  EXPECT_NE(e2e::slurp(err).find("so round 1 is measured again from its first variant"), std::string::npos)
      << e2e::slurp(err);
  bool said = false;
  for (const std::string& line : run.reading)
    said = said || line.find("with the 1 repetition of its round that ran before the wait") != std::string::npos;
  EXPECT_TRUE(said);
}

// Issue 33: `run --ab` runs more rounds than --repeat while the samples/s change cannot be read yet
// (here: a target width of 0 points, which no interval meets), up to --max-rounds, and says so;
// --max-rounds equal to --repeat runs exactly --repeat.
TEST(BaselineLabE2E, AbRunsMoreRoundsWhileItsIntervalIsWideUpToMaxRounds) {
  const std::string results = e2e::fresh_results_dir("ab-rounds");
  const std::string thresholds = results + "/thresholds.json";
  std::ofstream(thresholds) << R"({"schema_version": 1, "thresholds": {
      "lab.target_interval_width_pct": {"value": 0, "unit": "pct", "source": "test"}}})";
  const auto rounds_of = [](const RunRecord& run) {
    int rounds = 0;
    for (const VariantRecord& v : run.variants) rounds = std::max(rounds, v.repetition + 1);
    return rounds;
  };
  for (const int max_rounds : {4, 2}) {
    const std::string dir = results + "/max" + std::to_string(max_rounds);
    const auto r = run_trainlab(std::string("run --scenario mlp --batch 32 -k hidden=64 --steps 20 --warmup 2 ") +
                                "--threads 1 --sampler off --ab batch=16 --repeat 2 --max-rounds " +
                                std::to_string(max_rounds) + " --thresholds " + thresholds + " --results " + dir);
    ASSERT_EQ(r.exit_status, 0) << r.err;
    const RunRecord run = read_run_record(e2e::only_run_dir(dir));
    EXPECT_EQ(rounds_of(run), max_rounds) << r.err;
    bool said = false;
    for (const std::string& line : run.reading) said = said || line.rfind("A/B ran 4 rounds: after 2,", 0) == 0;
    EXPECT_EQ(said, max_rounds == 4);
  }
}

// Issue 33: other processes already hold the cores when a comparing lab starts: it samples them
// first and runs every repetition at the cores left from the start, so nothing is measured at the
// default threads, nothing is superseded, and the choice is recorded and said.
TEST(BusyMachineE2E, ThreadsAreChosenAtTheStartWhenOthersAlreadyHoldTheCores) {
  const int cores = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  if (std::min(usable_cores(), physical_cores_usable()) < 2)
    GTEST_SKIP() << "one physical core: LibTorch's default is one thread, nothing to choose";
  const std::string results = e2e::fresh_results_dir("threads-at-start");
  const std::string err = results + "/lab.err";
  ASSERT_TRUE(run_beside_burners({"run", "--scenario", "mlp", "--repeat", "2", "--batch", "32", "-k", "hidden=256",
                                  "--steps", "20", "--warmup", "2", "--sampler", "off", "--results", results},
                                 cores + 1, results + "/lab.out", err))
      << e2e::slurp(err);

  const RunRecord run = read_run_record(e2e::only_run_dir(results));
  ASSERT_EQ(run.details.thread_lowerings.size(), 1u) << e2e::slurp(err);
  const ThreadLowering& chosen = run.details.thread_lowerings.front();
  EXPECT_EQ(chosen.after, "");  // before the first repetition
  EXPECT_EQ(chosen.repetitions_before, 0);
  EXPECT_EQ(chosen.from_threads, std::min(usable_cores(), physical_cores_usable()));  // LibTorch's default
  EXPECT_EQ(chosen.to_threads, 1);
  EXPECT_EQ(chosen.machine_cores, cores);
  EXPECT_GT(chosen.others_busy_cores, cores - 0.5);
  int counted = 0;
  for (const VariantRecord& v : run.variants) {
    EXPECT_TRUE(v.superseded.empty());
    EXPECT_EQ(v.spec.threads, 1);
    if (v.ok()) EXPECT_EQ(v.environment.intra_op_threads, 1);
    if (v.counts()) ++counted;
  }
  EXPECT_EQ(counted, 2);
  const std::string terminal = e2e::slurp(err);
  EXPECT_NE(terminal.find("busy at the start: every variant runs at 1 thread"), std::string::npos) << terminal;
  ASSERT_FALSE(run.reading.empty());
  EXPECT_EQ(run.reading.back().rfind("Measured at 1 thread from the start", 0), 0u) << run.reading.back();
  EXPECT_FALSE(std::filesystem::exists(e2e::only_run_dir(results) + "/variants/fp32.threads1.rep1.spec.json"));
}

}  // namespace
}  // namespace trainlab
