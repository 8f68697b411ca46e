// The expected advice (issue 55): for every real trace of the development set (../shared/traces, public
// traces) and the torch.profiler traces made on this machine (tests/data/advice, make_traces.py), the
// verdict it must get, the first action it must get (a rule and a pattern in the action's words) and the
// advice that must not appear. Then what must hold for every one of them: the actions' savings add up
// to at most the step and each is time no other action claims; the first action is the verdict
// suspect's or says why it is not; overlap words agree with the overlap figures; collective counts
// agree with the trace; one device-busy figure; the printed verdict is the JSON's. Hand-built
// Summaries stand for the causes no trace here shows (a V100 in fp32, a blocking copy to the host, a
// ROCm job without its caching allocator). The seeded cases' half of the table is in
// configs/seeded_cases.json (first_action_rules, never), checked by `trainlab validate`. Torch-free.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "diagnostics/diagnosis.h"
#include "diagnostics/rules.h"
#include "diagnostics/summarise.h"
#include "diagnostics/text_format.h"
#include "profiler/chrome_trace.h"
#include "sample_traces.h"

namespace trainlab {
namespace {

struct Expected {
  std::string file;                      // in the shared traces, or "advice/<name>" for tests/data/advice
  std::string verdict;                   // to_string(Suspect) or "inconclusive"
  std::string first_rule;                // the first action's rule; "" when no action may come
  std::string first_words;               // a part of the first action's words ("" any)
  std::vector<std::string> never;        // words no action, finding or line of the text may hold
};

// The table. Real public traces (README.md of the shared folder): the class their published figures
// show. Traces made here: the pattern each was made with (make_traces.py).
const std::vector<Expected>& table() {
  static const std::vector<Expected> rows = {
      // pytorch/kineto's TensorBoard-plugin sample: ResNet50 on a V100, 4 workers, kernels 70 %.
      {"resnet50_v100_workers4.pt.trace.json.gz", "model_compute", "dispatch_overhead", "",
       {"dtype=torch.bfloat16", "autocast with bf16", "Something runs every few steps"}},
      // the same job with num_workers=0: DataLoader 33 % of the step.
      {"resnet50_v100_workers0_span2.pt.trace.json.gz", "data_pipeline", "input_bound", "num_workers",
       {"dtype=torch.bfloat16", "Something runs every few steps"}},
      // HTA's single-GPU SGD trace on a V100: compute-bound.
      {"single_gpu_sgd.pt.trace.json.gz", "model_compute", "", "", {"dtype=torch.bfloat16", "autocast with bf16"}},
      // TraceLens's B200 eager TP8 inference rank: launch-bound.
      {"b200_tp8_inference_eager.json.gz", "framework_overhead", "dispatch_overhead", "", {"hipMalloc"}},
      // TraceLens's torch.compile'd Triton model on an MI300X: compute.
      {"mi300x_torch_compile_triton.json.gz", "model_compute", "", "", {"cudaMalloc/cudaFree", "torch.compile(model) fuses"}},
      // HTA's MI250 mini toy (ROCm): too small to judge; ROCm's names where names are given.
      {"mi250_minitoy_train_rocm.json.gz", "", "", "", {"cudaMalloc/cudaFree"}},
      // HTA's CPU-only Gloo rank: one step waiting in all-reduce.
      {"cpu_only_gloo_rank34.pt.trace.json.gz", "communication", "exposed_communication", "", {"bfloat16"}},
      // HTA's TorchRec rank with its GPU events removed.
      {"cpu_events_only_rank.json.gz", "", "", "", {}},
      // Made here: a torch.compile'd MLP with one graph break.
      {"advice/compiled", "", "", "", {"torch.compile(model) fuses"}},
      // Made here: 2-rank Gloo DDP with 1 KiB buckets (rank 0).
      {"advice/ddp_overlap", "", "", "", {"Overlap the gradient all-reduce with backward"}},
      // Made here: a data-bound loop whose DataLoader already has 2 workers.
      {"advice/loader_workers", "data_pipeline", "input_bound", "Workers are not the missing piece",
       {"Build batches in DataLoader worker processes"}},
      // Made here: .item() inside the model's forward.
      {"advice/model_syncs", "", "", "", {"read them every N steps"}},
      // Made here: a sharded dataset read on the training thread: every 4th batch waits 40 ms.
      {"advice/data_starved", "data_pipeline", "input_bound", "num_workers",
       {"Something runs every few steps (checkpoint"}},
      // Made here: torchvision-style transforms reading random parameters with .item(), num_workers=0.
      {"advice/transform_syncs", "data_pipeline", "input_bound", "num_workers",
       {"host synchronisations per step", "read them every N steps"}},
      // Made here: a torch.compile'd MLP profiled from its first iteration: iteration 0 compiles.
      {"advice/cold_start", "", "", "", {"Start-up (model build"}},
  };
  return rows;
}

std::string path_of(const std::string& file) {
  if (file.rfind("advice/", 0) == 0) return std::string(TRAINLAB_ADVICE_TRACES_DIR) + "/" + file.substr(7) + ".pt.trace.json.gz";
  return test_data::sample(file);
}

Diagnosis diagnose_file(const std::string& file) {
  const TraceImport imported = import_trace(path_of(file));
  return diagnose_summary(summarise_trace(imported.profile, imported.metadata, file), Thresholds::defaults());
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Everything the diagnosis says: its text, every finding's title and recommendation.
std::string all_words(const Diagnosis& d) {
  std::string out = render_diagnosis_text(d);
  for (const Finding& f : d.findings) out += f.title + "\n" + f.recommendation + "\n";
  return out;
}

bool available(const std::string& file) {
  if (file.rfind("advice/", 0) == 0) return std::filesystem::exists(path_of(file));
  return !test_data::sample(file).empty();
}

TEST(ExpectedAdvice, EveryTraceGetsItsVerdictAndFirstActionAndNoneOfTheWrongAdvice) {
  int real = 0, checked = 0;
  for (const Expected& row : table()) {
    if (!available(row.file)) continue;
    ++checked;
    real += row.file.rfind("advice/", 0) == 0 ? 0 : 1;
    const Diagnosis d = diagnose_file(row.file);
    const std::string words = all_words(d);
    // The table's line, as the note lists it: verdict and first action.
    std::cout << "[advice] " << row.file << " | "
              << (d.verdict.inconclusive ? std::string("inconclusive") : to_string(d.verdict.primary)) << " ("
              << d.verdict.confidence << ") | "
              << (d.verdict.actions.empty() ? std::string("no action")
                                            : d.verdict.actions.front().rule_id + ": " +
                                                  d.verdict.actions.front().action.substr(0, 90) +
                                                  format_text(" (%.1f %%)", d.verdict.actions.front().saving_pct))
              << "\n";
    if (row.verdict == "inconclusive") {
      EXPECT_TRUE(d.verdict.inconclusive) << row.file << "\n" << words;
    } else if (!row.verdict.empty()) {
      EXPECT_FALSE(d.verdict.inconclusive) << row.file << "\n" << words;
      EXPECT_EQ(to_string(d.verdict.primary), row.verdict) << row.file << "\n" << words;
    }
    if (!row.first_rule.empty()) {
      ASSERT_FALSE(d.verdict.actions.empty()) << row.file << "\n" << words;
      EXPECT_EQ(d.verdict.actions.front().rule_id, row.first_rule) << row.file << "\n" << words;
      EXPECT_TRUE(contains(d.verdict.actions.front().action, row.first_words)) << row.file << "\n" << words;
    }
    for (const std::string& never : row.never) EXPECT_FALSE(contains(words, never)) << row.file << ": " << never << "\n" << words;
  }
  EXPECT_GE(checked, 7);  // the advice traces are in the checkout; the shared ones where there is a folder
  if (!test_data::sample("single_gpu_sgd.pt.trace.json.gz").empty()) EXPECT_EQ(real, 8);
}

// What holds for every trace, whatever its verdict.
TEST(ExpectedAdvice, NoDiagnosisContradictsItsOwnFigures) {
  for (const Expected& row : table()) {
    if (!available(row.file)) continue;
    const Diagnosis d = diagnose_file(row.file);
    const Summary& s = d.summary;
    const std::string text = render_diagnosis_text(d);
    // Savings from disjoint time: they add up to at most the step, finding and action alike.
    double actions = 0, findings = 0;
    for (const RankedAction& a : d.verdict.actions) {
      EXPECT_GT(a.saving_pct, 0) << row.file;
      actions += a.saving_pct;
    }
    for (const Finding& f : d.findings) findings += f.saving_pct;
    EXPECT_LE(actions, 100.0 + 1e-6) << row.file << "\n" << text;
    EXPECT_LE(findings, 100.0 + 1e-6) << row.file << "\n" << text;
    for (const RankedAction& a : d.verdict.actions) {
      bool same = false;
      for (const Finding& f : d.findings) same |= f.rule_id == a.rule_id && std::abs(f.saving_pct - a.saving_pct) < 1e-9;
      EXPECT_TRUE(same) << row.file << ": " << a.rule_id << " states one saving in the finding and another as an action";
    }
    // The first action is the verdict's suspect's, or says why another comes first.
    if (!d.verdict.inconclusive && !d.verdict.actions.empty()) {
      const RankedAction& first = d.verdict.actions.front();
      EXPECT_TRUE(first.suspect == d.verdict.primary || !first.why_first.empty() ||
                  std::none_of(d.verdict.actions.begin(), d.verdict.actions.end(),
                               [&](const RankedAction& a) { return a.suspect == d.verdict.primary; }))
          << row.file << "\n" << text;
      if (!first.why_first.empty()) EXPECT_TRUE(contains(text, first.why_first)) << row.file;
    }
    // Overlap words against overlap figures: "already overlap" only where the figures show time hidden.
    for (const Finding& f : d.findings) {
      if (!contains(f.recommendation, "already overlap") || !s.comm_overlapped_pct || !s.comm_total_pct) continue;
      EXPECT_GE(*s.comm_overlapped_pct / *s.comm_total_pct * 100.0,
                100.0 - Thresholds::defaults().value(threshold::exposed_communication::unhidden_share_pct) - 1e-9)
          << row.file << ": " << f.recommendation;
    }
    // One device-busy figure: the verdict's busy share is the Summary's.
    if (s.device_busy_pct && !d.verdict.inconclusive) EXPECT_NEAR(d.verdict.busy_pct, *s.device_busy_pct, 1e-9) << row.file;
    // The printed verdict is the JSON's.
    const nlohmann::json doc = diagnosis_document({d}, row.file, "2026-12-01T00:00:00Z", {});
    const DiagnosisFile back = diagnosis_file_from_json(doc);
    ASSERT_EQ(back.diagnoses.size(), 1u);
    if (!d.verdict.inconclusive) {
      EXPECT_TRUE(contains(text, "Verdict: " + suspect_words(d.verdict.primary))) << row.file;
      EXPECT_EQ(back.diagnoses[0].primary, to_string(d.verdict.primary)) << row.file;
    }
    // A collective count is the trace's: no host launch and its kernel counted twice.
    if (s.collective_calls_per_step && !s.collective_runs_ns.empty() && s.on_gpu) {
      EXPECT_NEAR(*s.collective_calls_per_step * static_cast<double>(s.step_ms.size()),
                  static_cast<double>(s.collective_runs_ns.size()), 0.5)
          << row.file;
    }
    // Sizes are per bucket, waits are no collective.
    for (const CollectiveCalls& c : s.collectives) EXPECT_EQ(c.name.find("wait"), std::string::npos) << row.file;
  }
}

// ---- causes no trace here shows: hand-built Summaries ------------------------------------------------

Summary gpu_trace() {
  Summary s;
  s.source = "kineto";
  s.on_gpu = true;
  s.device = "Tesla V100-SXM2-32GB";
  s.compute_capability = 7.0;
  s.step_ms = std::vector<double>(6, 100.0);
  s.step.count = 6;
  s.step.p50 = s.step.p95 = 100;
  s.shares.compute_pct = 90;
  s.shares.framework_pct = 10;
  s.device_busy_pct = 90;
  s.compute_dtype = "fp32";
  s.kernel_precision_ns = {{"fp32", 900}, {"other", 100}};
  s.gemm_time_pct = 80;  // convolutions and GEMMs
  return s;
}

TEST(ExpectedAdvice, AV100InFp32IsToldFp16WithAGradScalerNotBf16) {
  const Diagnosis d = diagnose_summary(gpu_trace(), Thresholds::defaults());
  const Finding* precision = nullptr;
  for (const Finding& f : d.findings)
    if (f.rule_id == "precision") precision = &f;
  ASSERT_TRUE(precision);
  EXPECT_TRUE(contains(precision->recommendation, "torch.float16")) << precision->recommendation;
  EXPECT_TRUE(contains(precision->recommendation, "GradScaler")) << precision->recommendation;
  EXPECT_FALSE(contains(precision->recommendation, "bfloat16")) << precision->recommendation;
  EXPECT_NEAR(precision->saving_pct, 90.0 * 0.8 * (1 - 1 / 1.5), 1e-9);  // the GEMMs and convolutions' share
  const std::string words = all_words(d);
  EXPECT_FALSE(contains(words, "autocast with bf16")) << words;

  Summary a100 = gpu_trace();  // compute capability 8.0: bf16 is the lever
  a100.device = "NVIDIA A100-SXM4-80GB";
  a100.compute_capability = 8.0;
  for (const Finding& f : run_rules(a100, Thresholds::defaults()))
    if (f.rule_id == "precision") EXPECT_TRUE(contains(f.recommendation, "torch.bfloat16")) << f.recommendation;
}

TEST(ExpectedAdvice, ABlockingCopyToTheHostIsItsOwnCauseNotLaunching) {
  Profile p;
  const auto host = [](EventKind kind, const char* name, int64_t from, int64_t to, int64_t correlation = -1) {
    TraceEvent e{kind, name, from, to};
    e.track = 1;
    e.correlation = correlation;
    return e;
  };
  const auto device = [](EventKind kind, const char* name, int64_t from, int64_t to, int64_t correlation) {
    TraceEvent e{kind, name, from, to};
    e.on_device = true;
    e.track = 7;
    e.correlation = correlation;
    return e;
  };
  for (int i = 0; i < 5; ++i) {
    const int64_t t0 = i * 10'000'000LL;
    p.events.push_back(host(EventKind::kStep, ("ProfilerStep#" + std::to_string(i + 1)).c_str(), t0, t0 + 10'000'000));
    p.events.push_back(host(EventKind::kRuntime, "cudaLaunchKernel", t0 + 10'000, t0 + 20'000, 100 + i));
    p.events.push_back(device(EventKind::kKernel, "volta_sgemm_128x64_nn", t0 + 30'000, t0 + 3'000'000, 100 + i));
    // loss.cpu(): aten::copy_ around the copy's launch and the stream synchronisation it waits in
    p.events.push_back(host(EventKind::kCpuOp, "aten::copy_", t0 + 40'000, t0 + 9'000'000));
    p.events.push_back(host(EventKind::kRuntime, "cudaMemcpyAsync", t0 + 50'000, t0 + 60'000, 200 + i));
    p.events.push_back(host(EventKind::kRuntime, "cudaStreamSynchronize", t0 + 60'000, t0 + 8'990'000));
    p.events.push_back(device(EventKind::kMemcpy, "Memcpy DtoH (Device -> Pageable)", t0 + 3'000'000,
                              t0 + 3'100'000, 200 + i));
    // with_stack=True: the user's function around the copy (4 steps in train_step, 1 in log_metrics),
    // inside the training loop's frame and around torch's own frame of Tensor.cpu.
    p.events.push_back(host(EventKind::kAnnotation, "train.py(90): main", t0 + 1'000, t0 + 9'999'000));
    p.events.push_back(host(EventKind::kAnnotation, i < 4 ? "train.py(42): train_step" : "train.py(60): log_metrics",
                            t0 + 35'000, t0 + 9'500'000));
    p.events.push_back(host(EventKind::kAnnotation, "torch/_tensor.py(1): cpu", t0 + 38'000, t0 + 9'100'000));
    for (size_t k = p.events.size() - 3; k < p.events.size(); ++k) p.events[k].args = {{"Python id", 10 + k}};
  }
  const Summary s = summarise_trace(p, nlohmann::json::object(), "copies");
  ASSERT_EQ(s.copy_to_host_python_frames.size(), 2u);
  EXPECT_EQ(s.copy_to_host_python_frames[0].frame, "train.py(42): train_step");
  EXPECT_NEAR(s.copy_to_host_python_frames[0].share_pct, 80.0, 1e-9);  // 4 of 5 equal copies
  EXPECT_EQ(s.copy_to_host_python_frames[1].frame, "train.py(60): log_metrics");
  ASSERT_TRUE(s.idle_cause_pct.count("copy"));
  EXPECT_GT(s.idle_cause_pct.at("copy"), 50.0);
  EXPECT_LT(s.idle_cause_pct.count("launch") ? s.idle_cause_pct.at("launch") : 0.0, 1.0);
  const Diagnosis d = diagnose_summary(s, Thresholds::defaults());
  ASSERT_FALSE(d.verdict.actions.empty());
  EXPECT_EQ(d.verdict.actions.front().rule_id, "dispatch_overhead");
  EXPECT_TRUE(contains(d.verdict.actions.front().action, "copies tensors to the host")) << d.verdict.actions.front().action;
  // Where they are made: the user's function, not torch's own frame or the loop around it.
  EXPECT_TRUE(contains(d.verdict.actions.front().action,
                       "The copies are called from train.py(42): train_step 80.0 %, train.py(60): log_metrics 20.0 % "
                       "of their time."))
      << d.verdict.actions.front().action;
  EXPECT_FALSE(contains(all_words(d), "torch.compile(model) fuses")) << all_words(d);
}

TEST(ExpectedAdvice, ARocmJobWhoseHipFreeFillsTheStepIsToldItsCachingAllocatorIsOff) {
  Summary s = gpu_trace();
  s.device = "AMD Instinct MI250X";
  s.rocm = true;
  s.compute_capability.reset();
  s.compute_dtype = "bf16";
  s.shares.compute_pct = 30;
  s.shares.framework_pct = 70;
  s.device_busy_pct = 30;
  s.idle_cause_pct = {{"allocator", 60}, {"launch", 5}, {"sync", 5}};
  const Diagnosis d = diagnose_summary(s, Thresholds::defaults());
  const std::string words = all_words(d);
  EXPECT_TRUE(contains(words, "hipMalloc/hipFree")) << words;
  EXPECT_FALSE(contains(words, "cudaMalloc")) << words;
  EXPECT_TRUE(contains(words, "caching allocator looks off")) << words;
  EXPECT_TRUE(contains(words, "PYTORCH_NO_HIP_MEMORY_CACHING")) << words;
}

TEST(ExpectedAdvice, CollectivesLaunchedInBackwardButExposedAreNotCalledOverlapped) {
  Summary s = gpu_trace();
  s.device = "NVIDIA H100";
  s.compute_capability = 9.0;
  s.world_size = 8;
  s.shares.compute_pct = 30;
  s.shares.communication_pct = 66;
  s.shares.framework_pct = 4;
  s.device_busy_pct = 30;
  s.comm_total_pct = 66;
  s.comm_overlapped_pct = 0;
  s.comm_in_backward_pct = 100;
  s.collective_calls_per_step = 404;
  const Diagnosis d = diagnose_summary(s, Thresholds::defaults());
  const std::string words = all_words(d);
  EXPECT_FALSE(contains(words, "already overlap")) << words;
  EXPECT_FALSE(contains(words, "Overlap is not the missing piece")) << words;
  EXPECT_TRUE(contains(words, "only 0.0 % of their time is hidden")) << words;
  EXPECT_TRUE(contains(words, "404 collectives per step")) << words;
}

}  // namespace
}  // namespace trainlab
