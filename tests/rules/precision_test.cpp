// The rule precision (diagnostics/rules/precision.cpp) on hand-built Summaries: on both sides of its
// thresholds (fires or not, severity, suspect, change, evidence equal to the inputs, saving), and silent
// when its inputs are absent.
#include "rule_test_support.h"

#include <gtest/gtest.h>

namespace trainlab::rule_test {
namespace {

TEST(RulesTest, PrecisionOnCpu) {
  Summary s = fp32_run({0, 0, 70, 0, 10, 20});
  auto f = find(s, "precision");
  ASSERT_TRUE(fired_as(f, Severity::kModerate, Suspect::kModelCompute, "bf16"));
  EXPECT_TRUE(has_evidence(*f, "compute_pct", 70));
  EXPECT_TRUE(has_evidence(*f, "fp32_op_share_pct", 95));
  EXPECT_NEAR(f->saving_pct, 70.0 / 3.0, 1e-9);  // 1.5x on the compute share

  s.fp32_op_share_pct = 40;
  EXPECT_FALSE(find(s, "precision"));
  s.fp32_op_share_pct = 95;
  s.shares.compute_pct = 45;
  EXPECT_FALSE(find(s, "precision"));
  s.shares.compute_pct = 70;
  s.compute_dtype = "bf16";
  EXPECT_FALSE(find(s, "precision"));
  s.compute_dtype = "fp32";
  s.fp32_op_share_pct.reset();
  EXPECT_FALSE(find(s, "precision"));
}

TEST(RulesTest, PrecisionUsesTheMeasuredBf16GemmGain) {
  Summary s = fp32_run({0, 0, 80, 0, 10, 10});
  s.bf16_gemm_speedup = 2.0;  // e.g. AMX
  auto f = find(s, "precision");
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->saving_pct, 40.0, 1e-9);  // half of the 80 % compute share
  EXPECT_TRUE(has_evidence(*f, "bf16_gemm_speedup", 2.0, 1.2));
  s.bf16_gemm_speedup = 0.01;  // emulated bf16 (AVX2 only): nothing left on the table
  EXPECT_FALSE(find(s, "precision"));
  s.bf16_gemm_speedup = 1.19;
  EXPECT_FALSE(find(s, "precision"));
}

TEST(RulesTest, PrecisionWeighsTheGemmSpeedupByTheGemmsShareOfOpTime) {
  // tinyops-like: compute-heavy and fp32, but GEMMs are a fifth of the op time; bf16 GEMMs 3x faster
  // speed up only that fifth, so the prediction is 80 % x 20 % x (1 - 1/3), not 3x on the whole step.
  Summary s = fp32_run({0, 0, 80, 0, 10, 10});
  s.bf16_gemm_speedup = 3.0;
  s.gemm_time_pct = 20;
  auto f = find(s, "precision");
  ASSERT_TRUE(f);
  EXPECT_NEAR(f->saving_pct, 80.0 * 0.2 * (1.0 - 1.0 / 3.0), 1e-9);
  EXPECT_TRUE(has_evidence(*f, "gemm_time_pct", 20));
}

TEST(RulesTest, PrecisionOnGpuFromKernelTime) {
  Summary s = quiet_on_gpu();
  s.compute_dtype = "fp32";
  s.shares = {0, 0, 80, 0, 10, 10};
  s.kernel_precision_ns = {{"fp32", 600}, {"other", 400}};
  auto f = find(s, "precision");
  ASSERT_TRUE(f);
  EXPECT_DOUBLE_EQ(evidence(*f, "fp32_kernel_time_pct")->value, 60);
  s.kernel_precision_ns = {{"fp32", 300}, {"bf16", 700}};
  EXPECT_FALSE(find(s, "precision"));
  s.kernel_precision_ns.clear();
  EXPECT_FALSE(find(s, "precision"));
}

}  // namespace
}  // namespace trainlab::rule_test
