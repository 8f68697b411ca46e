// The development set (issue 14): every real PyTorch trace in ../shared/traces whose README states a
// class is named with it — imported, summarised, judged by the rules and the verdict in-process,
// exactly as `trainlab diagnose` does — and none of them is inconclusive. Traces without a stated
// class must still get a verdict (with its confidence) or a reason. Skips without the folder.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "diagnostics/rules.h"
#include "diagnostics/summarise.h"
#include "diagnostics/verdict.h"
#include "profiler/chrome_trace.h"
#include "sample_traces.h"

namespace trainlab {
namespace {

#ifdef TRAINLAB_SAMPLE_TRACES_DIR
struct Judged {
  Summary summary;
  std::vector<Finding> findings;
  Verdict verdict;
};

Judged judge(const std::string& file) {
  const TraceImport imported = import_trace(test_data::sample(file));
  Judged j;
  j.summary = summarise_trace(imported.profile, imported.metadata, file);
  j.findings = run_rules(j.summary, Thresholds::defaults());
  j.verdict = decide(j.summary, j.findings, Thresholds::defaults());
  return j;
}

bool has_traces() { return !test_data::sample("single_gpu_sgd.pt.trace.json.gz").empty(); }

// The classes the traces' README states (bold): the published figures' reading.
const std::map<std::string, Suspect>& stated_classes() {
  static const std::map<std::string, Suspect> classes = {
      {"resnet50_v100_workers4.pt.trace.json.gz", Suspect::kModelCompute},
      {"single_gpu_sgd.pt.trace.json.gz", Suspect::kModelCompute},
      {"resnet50_v100_workers0_span2.pt.trace.json.gz", Suspect::kDataPipeline},
      {"b200_tp8_inference_eager.json.gz", Suspect::kFrameworkOverhead},
      {"mi300x_torch_compile_triton.json.gz", Suspect::kModelCompute},
  };
  return classes;
}

TEST(SampleTraceVerdicts, EveryTraceWithAStatedClassIsNamedWithIt) {
  if (!has_traces()) GTEST_SKIP() << "no ../shared/traces";
  for (const auto& [file, expected] : stated_classes()) {
    const Judged j = judge(file);
    EXPECT_FALSE(j.verdict.inconclusive) << file << ": " << j.verdict.headline;
    EXPECT_EQ(to_string(j.verdict.primary), std::string(to_string(expected))) << file << ": " << j.verdict.headline;
    EXPECT_FALSE(j.verdict.confidence.empty()) << file;
    EXPECT_FALSE(j.verdict.policy.empty()) << file;
  }
}

TEST(SampleTraceVerdicts, TheWellFedResNetSampleHasFrameworkOverheadAsASecondaryFinding) {
  if (!has_traces()) GTEST_SKIP() << "no ../shared/traces";
  // README: "kernels 70 % of the step: well fed; the runtime/CPU-exec share is a secondary finding".
  const Judged j = judge("resnet50_v100_workers4.pt.trace.json.gz");
  ASSERT_FALSE(j.verdict.secondary.empty()) << j.verdict.headline;
  EXPECT_NE(j.verdict.secondary.front().find("framework overhead"), std::string::npos) << j.verdict.secondary.front();
}

TEST(SampleTraceVerdicts, TracesWithoutAClassStillGetAVerdictWithItsConfidence) {
  if (!has_traces()) GTEST_SKIP() << "no ../shared/traces";
  // The tiny ROCm job: too small to judge well; an honest, low-confidence answer.
  const Judged tiny = judge("mi250_minitoy_train_rocm.json.gz");
  EXPECT_FALSE(tiny.verdict.inconclusive) << tiny.verdict.headline;
  EXPECT_EQ(tiny.verdict.confidence, "low") << tiny.verdict.headline;
  EXPECT_FALSE(tiny.verdict.confidence_reasons.empty());
  // One CPU step of a Gloo rank that waits in all-reduce: communication, low confidence (one step).
  const Judged gloo = judge("cpu_only_gloo_rank34.pt.trace.json.gz");
  EXPECT_EQ(gloo.verdict.primary, Suspect::kCommunication) << gloo.verdict.headline;
  EXPECT_EQ(gloo.verdict.confidence, "low");
  // A GPU job's rank with its GPU events removed: its CPU step still gets a verdict.
  const Judged cpu_only = judge("cpu_events_only_rank.json.gz");
  EXPECT_FALSE(cpu_only.verdict.inconclusive) << cpu_only.verdict.headline;
}

TEST(SampleTraceVerdicts, PyTorchTracesGetActionsInPyTorchsWords) {
  if (!has_traces()) GTEST_SKIP() << "no ../shared/traces";
  const Judged j = judge("resnet50_v100_workers0_span2.pt.trace.json.gz");
  ASSERT_FALSE(j.verdict.actions.empty());
  bool names_a_pytorch_knob = false;
  for (const RankedAction& a : j.verdict.actions) {
    EXPECT_EQ(a.action.find("--workers"), std::string::npos) << a.action;  // no trainlab flags for a trace
    if (a.action.find("DataLoader(") != std::string::npos || a.action.find("torch.") != std::string::npos)
      names_a_pytorch_knob = true;
  }
  EXPECT_TRUE(names_a_pytorch_knob);
}
#endif

}  // namespace
}  // namespace trainlab
