// End-to-end diagnosis: `trainlab diagnose` on traces written by PyTorch itself (the repo's script
// run with the Python torch the build uses), on the sample traces in ../shared/traces (figures their
// README publishes), on a fresh trainlab run folder, gating with --fail-on, bad input, and the
// memory a folder of rank traces takes.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <vector>

#include "e2e_support.h"

namespace trainlab::e2e {
namespace {

namespace fs = std::filesystem;

nlohmann::json read_json(const std::string& path) {
  const nlohmann::json j = nlohmann::json::parse(slurp(path), nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << path;
  return j;
}

// diagnose INPUT --out OUT; returns the first diagnosis of diagnosis.json.
nlohmann::json diagnose(const std::string& input, const std::string& name, CliResult* result = nullptr) {
  const std::string out = ::testing::TempDir() + "/trainlab_diagnose_" + name;
  fs::remove_all(out);
  const CliResult r = run_trainlab("diagnose '" + input + "' --out '" + out + "'");
  EXPECT_EQ(r.exit_status, 0) << r.err;
  EXPECT_TRUE(fs::exists(out + "/report.html")) << out;
  if (result != nullptr) *result = r;
  const nlohmann::json doc = read_json(out + "/diagnosis.json");
  EXPECT_EQ(doc.value("schema_version", 0), 2);
  EXPECT_TRUE(doc["diagnoses"][0]["summary"].contains("memory_mib"));  // version 2: units in every key
  return doc["diagnoses"][0];
}

double share(const nlohmann::json& d, const char* name) { return d["summary"]["shares_pct"][name].get<double>(); }

#ifdef TRAINLAB_TORCH_PYTHON
// Three CPU training loops in PyTorch, each with one bottleneck, profiled by torch.profiler.
TEST(DiagnoseE2E, PyTorchTracesFromTheRepoScriptAreNamedCorrectly) {
  const std::string dir = ::testing::TempDir() + "/trainlab_pytorch_traces";
  fs::remove_all(dir);
  const std::string cmd = std::string("'") + TRAINLAB_TORCH_PYTHON + "' '" + TRAINLAB_SOURCE_DIR +
                          "/scripts/make_sample_traces.py' '" + dir + "' >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const std::map<std::string, std::string> expected = {
      {"dataloader", "data_pipeline"}, {"compute", "model_compute"}, {"tinyops", "framework_overhead"}};
  for (const auto& [name, suspect] : expected) {
    const nlohmann::json d = diagnose(dir + "/" + name + ".pt.trace.json.gz", "py_" + name);
    EXPECT_EQ(d["verdict"]["primary"], suspect) << name << ": " << d["verdict"].dump();
    EXPECT_EQ(d["summary"]["steps"].get<int>(), 10) << name;  // schedule(wait=1, warmup=1, active=10)
  }
}

// torch.profiler with schedule(..., repeat=2) and tensorboard_trace_handler writes one file per cycle
// (worker.timestamp.pt.trace.json): one process, one run of 6 steps, its spans named. Two processes
// writing one cycle each into one folder stay two runs.
TEST(DiagnoseE2E, CyclesOfOneProfilerScheduleAreOneRunAndOtherProcessesStayApart) {
  const std::string dir = ::testing::TempDir() + "/trainlab_schedule_spans";
  fs::remove_all(dir);
  const std::string script = dir + "/spans.py";
  fs::create_directories(dir);
  std::ofstream(script) << "import sys, torch, torch.nn as nn\n"
                           "from torch.profiler import profile, schedule, tensorboard_trace_handler\n"
                           "out, cycles = sys.argv[1], int(sys.argv[2])\n"
                           "net = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))\n"
                           "opt = torch.optim.SGD(net.parameters(), lr=0.01)\n"
                           "x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))\n"
                           "with profile(schedule=schedule(wait=1, warmup=1, active=3, repeat=cycles),\n"
                           "             on_trace_ready=tensorboard_trace_handler(out)) as prof:\n"
                           "    for i in range(5 * cycles + 1):\n"
                           "        opt.zero_grad(); nn.functional.cross_entropy(net(x), y).backward(); opt.step()\n"
                           "        prof.step()\n";
  const auto make = [&](const std::string& out, int cycles) {
    const std::string cmd = std::string("'") + TRAINLAB_TORCH_PYTHON + "' '" + script + "' '" + out + "' " +
                            std::to_string(cycles) + " >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  };
  make(dir + "/one_process", 2);
  ASSERT_EQ(std::distance(fs::directory_iterator(dir + "/one_process"), fs::directory_iterator()), 2);
  CliResult r;
  const std::string out = ::testing::TempDir() + "/trainlab_diagnose_schedule_spans";
  nlohmann::json d = diagnose(dir + "/one_process", "schedule_spans", &r);
  // The steady steps and the leading ones set aside as start-up (a first step more than twice the
  // median, which a loaded machine can make of a tiny step) are the trace's 6.
  const auto steps_with_start_up = [](const nlohmann::json& diagnosis) {
    return diagnosis["summary"]["steps"].get<int>() + diagnosis["summary"]["cold_start"]["steps"].get<int>();
  };
  EXPECT_EQ(steps_with_start_up(d), 6);
  EXPECT_EQ(read_json(out + "/diagnosis.json")["diagnoses"].size(), 1u);
  EXPECT_NE(r.out.find("2 spans of one process pooled as one run (a profiler schedule's cycles; steps #2-#4, #7-#9)"),
            std::string::npos) << r.out;
  make(dir + "/two_processes", 1);
  make(dir + "/two_processes", 1);
  d = diagnose(dir + "/two_processes", "two_processes", &r);
  EXPECT_EQ(steps_with_start_up(d), 3);
  EXPECT_EQ(read_json(::testing::TempDir() + "/trainlab_diagnose_two_processes/diagnosis.json")["diagnoses"].size(), 2u);
  EXPECT_EQ(r.out.find("spans of one process pooled"), std::string::npos) << r.out;
}
#endif

#ifdef TRAINLAB_SAMPLE_TRACES_DIR
// The PyTorch TensorBoard plugin's reference breakdown of this trace (tb_plugin/test/result_check_file.txt):
// kernel 70.28 %, memcpy 2.24 %, memset 0.07 %, runtime 7.49 %, DataLoader 0.84 %, CPU exec 16.07 %,
// other 3.01 %; average step 141068 us.
TEST(DiagnoseE2E, ResNet50TraceMatchesTheTensorBoardPluginBreakdown) {
  const nlohmann::json d = diagnose(std::string(TRAINLAB_SAMPLE_TRACES_DIR) + "/resnet50_v100_workers4.pt.trace.json.gz",
                                    "resnet50");
  EXPECT_NEAR(share(d, "compute"), 70.28, 1.0);
  EXPECT_NEAR(share(d, "data_wait"), 0.84, 0.5);
  EXPECT_NEAR(share(d, "host_to_device"), 2.24 + 0.07, 0.5);
  EXPECT_NEAR(share(d, "framework"), 7.49 + 16.07 + 3.01, 1.5);  // runtime + CPU exec + other: the GPU idle
  EXPECT_NEAR(d["summary"]["step_ms_stats"]["mean"].get<double>(), 141.068, 141.068 * 0.02);
  EXPECT_EQ(d["summary"]["steps"].get<int>(), 6);
  EXPECT_NE(d["verdict"]["primary"], "data_pipeline");  // "not data-bound"
}

// Peak resident memory (KiB) of `trainlab diagnose FOLDER --out OUT`, from that child's own rusage.
long diagnose_peak_rss_kib(const std::string& folder, const std::string& out) {
  const pid_t pid = spawn_trainlab({"diagnose", folder, "--out", out}, out + ".out", out + ".err");
  int status = 0;
  struct rusage usage {};
  EXPECT_EQ(::wait4(pid, &status, 0, &usage), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(out + ".err");
  return usage.ru_maxrss;
}

// Issue 31: a folder's rank traces are read one at a time, each rank's events dropped once it is
// summarised: 8 ResNet-sized ranks take about the memory of one (they took 8 times as much).
TEST(DiagnoseE2E, MemoryForAFolderOfRanksDoesNotGrowWithTheRankCount) {
  const std::string trace = std::string(TRAINLAB_SAMPLE_TRACES_DIR) + "/resnet50_v100_workers4.pt.trace.json.gz";
  const std::string dir = ::testing::TempDir() + "/trainlab_rank_memory";
  fs::remove_all(dir);
  for (const int ranks : {1, 8}) {
    fs::create_directories(dir + "/ranks" + std::to_string(ranks));
    for (int rank = 0; rank < ranks; ++rank) {
      fs::create_symlink(fs::absolute(trace), dir + "/ranks" + std::to_string(ranks) + "/rank" +
                                                  std::to_string(rank) + ".pt.trace.json.gz");
    }
  }
  const long one_kib = diagnose_peak_rss_kib(dir + "/ranks1", dir + "/out1");
  const long eight_kib = diagnose_peak_rss_kib(dir + "/ranks8", dir + "/out8");
  std::cout << "[memory] diagnose peak RSS: 1 rank " << one_kib << " KiB, 8 ranks " << eight_kib << " KiB\n";
  EXPECT_LT(eight_kib, one_kib * 3 / 2);
  EXPECT_EQ(read_json(dir + "/out8/diagnosis.json")["diagnoses"].size(), 8u);
}

TEST(DiagnoseE2E, SingleGpuTraceIsComputeBound) {
  const nlohmann::json d = diagnose(std::string(TRAINLAB_SAMPLE_TRACES_DIR) + "/single_gpu_sgd.pt.trace.json.gz", "sgd");
  EXPECT_EQ(d["verdict"]["primary"], "model_compute");
  EXPECT_GT(share(d, "compute"), 95.0);  // published: the GPU busy ~98.8 % of steps 102-105
  EXPECT_EQ(d["summary"]["world_size"].get<int>(), 1);
}

TEST(DiagnoseE2E, CpuOnlyGlooTraceKnowsItsRankAndGivesALowConfidenceVerdictOnOneStep) {
  const nlohmann::json d = diagnose(std::string(TRAINLAB_SAMPLE_TRACES_DIR) + "/cpu_only_gloo_rank34.pt.trace.json.gz",
                                    "gloo34");
  EXPECT_EQ(d["summary"]["rank"].get<int>(), 34);
  EXPECT_EQ(d["summary"]["world_size"].get<int>(), 300);
  EXPECT_FALSE(d["summary"]["on_gpu"].get<bool>());
  // One ProfilerStep, decisive: communication with low confidence, and the reason says why.
  EXPECT_FALSE(d["verdict"]["inconclusive"].get<bool>());
  EXPECT_EQ(d["verdict"]["primary"], "communication");
  EXPECT_EQ(d["verdict"]["confidence"], "low");
  EXPECT_NE(d["verdict"]["confidence_reasons"].dump().find("one step"), std::string::npos) << d["verdict"].dump();
  EXPECT_GT(share(d, "communication"), 50.0);
}
#endif

// An expert-parallel trace in DeepEP naming (collective_kinds_test.cpp has the same timeline): the
// custom all-to-all kernels are 88 % of each 10 ms step, 82 % under compute, 6 % exposed. The
// terminal, diagnosis.json and --format json all carry the split.
TEST(DiagnoseE2E, DeepEpAllToAllTraceReportsOverlappedAndExposedCommunication) {
  nlohmann::json events = nlohmann::json::array();
  const auto span = [&](const char* cat, const std::string& name, int pid, int tid, double ts_us, double dur_us) {
    events.push_back({{"ph", "X"}, {"cat", cat}, {"name", name}, {"pid", pid}, {"tid", tid}, {"ts", ts_us},
                      {"dur", dur_us}, {"args", nlohmann::json::object()}});
  };
  for (int step = 0; step < 5; ++step) {
    const double t0 = 1'000'000.0 + step * 10'000.0;
    span("user_annotation", "ProfilerStep#" + std::to_string(step + 1), 1, 1, t0, 10'000);
    span("cpu_op", "aten::linear", 1, 1, t0 + 100, 9'000);
    span("kernel", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", 0, 7, t0 + 200, 8'800);
    span("kernel", "void dpsk::ep::internode::dispatch<8, 16, 32>(int4*, float*)", 0, 20, t0 + 500, 4'000);
    span("kernel", "void dpsk::ep::internode::combine<__nv_bfloat16, 8>(void*, int*)", 0, 20, t0 + 4'800, 4'800);
  }
  const nlohmann::json trace = {{"schemaVersion", 1},
                                {"deviceProperties", nlohmann::json::array({{{"id", 0}, {"name", "NVIDIA H800"}}})},
                                {"traceEvents", events}};
  const std::string path = ::testing::TempDir() + "/deep_ep_e2e.json";
  std::ofstream(path) << trace.dump();

  CliResult terminal;
  const nlohmann::json d = diagnose(path, "deep_ep", &terminal);
  EXPECT_NE((terminal.out + terminal.err)
                .find("Communication: 88.0 % of the step, 82.0 % overlapped with compute, 6.0 % exposed "
                      "(kernels: expert_all_to_all 88.0 %)"),
            std::string::npos)
      << terminal.out << terminal.err;
  const nlohmann::json& comm = d["summary"]["communication"];
  EXPECT_NEAR(comm["total_pct"].get<double>(), 88.0, 1e-6);
  EXPECT_NEAR(comm["overlapped_pct"].get<double>(), 82.0, 1e-6);
  EXPECT_NEAR(comm["exposed_pct"].get<double>(), 6.0, 1e-6);
  EXPECT_NEAR(share(d, "communication"), 6.0, 1e-6);
  EXPECT_EQ(d["verdict"]["primary"], "model_compute");

  const CliResult json_run = run_trainlab("diagnose '" + path + "' --out '" + ::testing::TempDir() +
                                          "/trainlab_diagnose_deep_ep_json' --format json");
  ASSERT_EQ(json_run.exit_status, 0) << json_run.err;
  const nlohmann::json doc = nlohmann::json::parse(json_run.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << json_run.out;
  EXPECT_NEAR(doc["diagnoses"][0]["summary"]["communication"]["overlapped_pct"].get<double>(), 82.0, 1e-6);
  EXPECT_NEAR(doc["diagnoses"][0]["summary"]["communication"]["by_family_pct"]["expert_all_to_all"].get<double>(),
              88.0, 1e-6);
}

// A trainlab run folder: profile -> diagnosis written into it; the same folder diagnosed again;
// --fail-on a rule that fired exits 1, an unknown rule is bad input.
TEST(DiagnoseE2E, ProfileEndsWithADiagnosisAndGatesOnFindings) {
  const std::string results = fresh_results_dir("diagnose_profile");
  const CliResult r = run_trainlab("profile --scenario mlp --steps 12 --warmup 2 --window 2:6 --results " + results);
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_NE(r.out.find("Verdict: "), std::string::npos) << r.out;
  const std::string run_dir = only_run_dir(results);
  ASSERT_TRUE(fs::exists(run_dir + "/diagnosis.json"));
  ASSERT_TRUE(fs::exists(run_dir + "/report.html"));
  const nlohmann::json doc = read_json(run_dir + "/diagnosis.json");
  const nlohmann::json& d = doc["diagnoses"][0];
  EXPECT_EQ(d["summary"]["source"], "trainlab");
  EXPECT_EQ(d["summary"]["steps"].get<int>(), 12);
  EXPECT_GT(d["summary"]["ops_per_step"].get<double>(), 0);  // from the captured window
  EXPECT_GT(d["summary"]["peak_flops_per_s"].get<double>(), 0);  // measured GEMM peak
  EXPECT_GT(d["summary"]["model_flops_per_step"].get<double>(), 0);  // mlp: Linear layers only

  ASSERT_FALSE(d["findings"].empty());
  const std::string fired = d["findings"][0]["rule"].get<std::string>();
  const CliResult gated = run_trainlab("diagnose " + run_dir + " --fail-on " + fired);
  EXPECT_EQ(gated.exit_status, 1) << gated.err;
  EXPECT_NE(gated.err.find(fired), std::string::npos) << gated.err;
  const CliResult ungated = run_trainlab("diagnose " + run_dir + " --fail-on non_finite_loss");
  EXPECT_EQ(ungated.exit_status, 0) << ungated.err;
  expect_bad_input("diagnose " + run_dir + " --fail-on no_such_rule", "unknown --fail-on 'no_such_rule'");
}

// A three-run lab's folder (issue 55), made here by the tiny recsys lab of e2e_baseline_test: the
// lab's answer first in at most 15 lines, no action claiming more for bf16 or compiling than the lab
// measured for it (where it measured no gain, no such action at all), report.html leading with the
// lab and showing a kept repetition, and no diagnosis's actions adding up past the step.
TEST(DiagnoseE2E, ALabFolderGetsTheLabsAnswerFirstAndAdviceWithinWhatItMeasured) {
  const std::string results = fresh_results_dir("diagnose_lab");
  const CliResult lab = run_trainlab(
      "baseline --scenario recsys --batch 16 --steps 6 --warmup 3 -k items=500 -k dim=32 -k layers=1 -k heads=2 "
      "-k seq_len=8 -k user_vocab=50 -k categories=20 -k samples=128 -k mean_history=40 -k max_history=100 "
      "--repeat 2 --max-loop-s 0 --emulated-bf16 run --results " + results);
  ASSERT_EQ(lab.exit_status, 0) << lab.err;
  const std::string run_dir = only_run_dir(results);
  const CliResult r = run_trainlab("diagnose " + run_dir);
  ASSERT_EQ(r.exit_status, 0) << r.err;
  std::vector<std::string> lines;
  {
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.front().rfind("Lab of recsys: fp32, bf16, bf16+compiled;", 0), 0u) << r.out;
  size_t detail = 0;
  while (detail < lines.size() && lines[detail].rfind("Kept repetitions", 0) != 0 &&
         lines[detail].rfind("Diagnosis ", 0) != 0)
    ++detail;
  ASSERT_LT(detail, lines.size()) << r.out;
  EXPECT_EQ(lines[detail].rfind("Kept repetitions", 0), 0u) << r.out;
  EXPECT_LE(detail, 16u) << r.out;  // 15 lines of the lab's answer and the blank line after them
  EXPECT_EQ(r.out.find("Diagnosis fp32"), std::string::npos) << r.out;  // full diagnoses only with --all
  const CliResult all = run_trainlab("diagnose " + run_dir + " --all");
  EXPECT_NE(all.out.find("Diagnosis fp32 #1"), std::string::npos) << all.out;

  const nlohmann::json doc = read_json(run_dir + "/diagnosis.json");
  ASSERT_TRUE(doc.contains("lab")) << doc.dump(1).substr(0, 2000);
  const nlohmann::json& variants = doc["lab"]["variants"];
  ASSERT_EQ(variants.size(), 3u);
  EXPECT_EQ(variants[0]["name"], "fp32");
  EXPECT_EQ(variants[1]["name"], "bf16");
  EXPECT_EQ(variants[2]["name"], "bf16+compiled");
  int measured_advice_checked = 0;
  for (const nlohmann::json& d : doc["diagnoses"]) {
    double total = 0;
    for (const nlohmann::json& a : d["verdict"]["actions"]) total += a["saving_pct"].get<double>();
    EXPECT_LE(total, 100.0 + 1e-9) << d["label"];
    for (const nlohmann::json& m : d["summary"]["lab_measured"]) {
      const double gain = m["gain_pct"].get<double>();
      const double bound = gain > 0 ? 100.0 * (1.0 - 1.0 / (1.0 + gain / 100.0)) : 0.0;
      ++measured_advice_checked;
      for (const nlohmann::json& a : d["verdict"]["actions"]) {
        if (a["change"] != m["change"]) continue;
        EXPECT_GT(gain, 0) << d["label"] << ": " << a["action"];  // no action where it measured no gain
        EXPECT_LE(a["saving_pct"].get<double>(), bound + 1e-9) << d["label"] << ": " << a["action"];
        EXPECT_NE(a["action"].get<std::string>().find("The lab measured it here: " + m["comparison"].get<std::string>()),
                  std::string::npos) << a["action"];
      }
    }
  }
  EXPECT_GE(measured_advice_checked, 4);  // fp32 (bf16 and compiling) and bf16 (compiling), two repetitions each

  const std::string html = slurp(run_dir + "/report.html");
  const size_t first_section = html.find("<section");
  EXPECT_EQ(html.find("<section id=\"lab\">"), first_section);
  const size_t verdict = html.find("<section id=\"verdict\">");
  ASSERT_NE(verdict, std::string::npos);
  const std::string lab_html = html.substr(first_section, verdict - first_section);
  EXPECT_NE(lab_html.find("The lab · fp32, bf16, bf16+compiled"), std::string::npos);
  const size_t shown = doc["lab"]["report_shows"].get<size_t>();
  EXPECT_TRUE(doc["lab"]["repetitions"][shown]["counted"].get<bool>());
  for (const nlohmann::json& rep : doc["lab"]["repetitions"]) {
    if (rep["counted"].get<bool>()) {
      char sps[32];
      std::snprintf(sps, sizeof sps, "%.1f", rep["samples_per_s"].get<double>());
      EXPECT_NE(lab_html.find(sps), std::string::npos) << rep["label"];
    } else {
      EXPECT_NE(lab_html.find("<b>" + rep["label"].get<std::string>() + "</b>: "), std::string::npos) << rep["label"];
    }
  }
}

// A folder of per-rank traces (a 2-rank data-parallel profile's traces/fp32/): one diagnosis per rank,
// each knowing its rank, and the spread between the ranks.
TEST(DiagnoseE2E, AFolderOfRankTracesIsDiagnosedPerRank) {
  const std::string results = fresh_results_dir("diagnose_ranks");
  const CliResult r = run_trainlab("profile --scenario commheavy --nproc 2 --threads 1 --steps 8 --warmup 2 "
                                   "--window 2:4 -k hidden=512 --comm-mode serial --results " + results);
  ASSERT_EQ(r.exit_status, 0) << r.err;
  const std::string out = ::testing::TempDir() + "/trainlab_diagnose_ranks";
  fs::remove_all(out);
  const CliResult d = run_trainlab("diagnose " + only_run_dir(results) + "/traces/fp32 --out " + out);
  ASSERT_EQ(d.exit_status, 0) << d.err;
  const nlohmann::json doc = read_json(out + "/diagnosis.json");
  ASSERT_EQ(doc["diagnoses"].size(), 2u);
  for (int rank = 0; rank < 2; ++rank) {
    const nlohmann::json& s = doc["diagnoses"][rank]["summary"];
    EXPECT_EQ(s["rank"].get<int>(), rank);
    EXPECT_EQ(s["world_size"].get<int>(), 2);
    EXPECT_EQ(s["steps"].get<int>(), 4);  // the window's ProfilerStep spans
    EXPECT_GT(s["shares_pct"]["communication"].get<double>(), 0.0);  // trainlab's communication phase
    EXPECT_EQ(s["rank_step_p50_ms"].size(), 2u);
    EXPECT_TRUE(s["rank_spread_pct"].is_number());
  }
  EXPECT_NE(d.out.find("(rank 1 of 2)"), std::string::npos) << d.out;
}

TEST(DiagnoseE2E, MalformedTruncatedAndEmptyTracesAreBadInput) {
  const std::string dir = ::testing::TempDir() + "/trainlab_bad_traces";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name, std::ios::binary) << text;
    return dir + "/" + name;
  };
  expect_bad_input("diagnose " + write("empty.json", ""), "empty.json");
  expect_bad_input("diagnose " + write("truncated.json", R"({"traceEvents": [{"name": "a", "ph": "X", "ts": 1)"),
                   "truncated.json");
  expect_bad_input("diagnose " + write("notrace.json", R"({"schemaVersion": 1})"), "traceEvents");
  // Half of a gzip stream.
  const std::string gz = dir + "/whole.json.gz";
  const std::string make_gz = "printf '{\"traceEvents\": [' > " + dir + "/whole.json && for i in $(seq 1 2000); do printf "
                              "'{\"name\":\"aten::add\",\"ph\":\"X\",\"cat\":\"cpu_op\",\"ts\":%d,\"dur\":1},' $i; done >> " +
                              dir + "/whole.json && printf '{}]}' >> " + dir + "/whole.json && gzip -c " + dir +
                              "/whole.json > " + gz + " && head -c $(( $(stat -c %s " + gz + ") / 2 )) " + gz + " > " + dir +
                              "/cut.json.gz";
  ASSERT_EQ(std::system(make_gz.c_str()), 0);
  expect_bad_input("diagnose " + dir + "/cut.json.gz", "cut.json.gz");
  expect_bad_input("diagnose " + dir + "/missing.json", "missing.json");
  fs::create_directories(dir + "/nothing");
  expect_bad_input("diagnose " + dir + "/nothing", "neither a run folder");
}

}  // namespace
}  // namespace trainlab::e2e
