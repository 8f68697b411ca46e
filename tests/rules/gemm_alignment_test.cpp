// The rule gemm_alignment (diagnostics/rules/gemm_alignment.cpp) on hand-built Summaries: on both sides of its
// thresholds (fires or not, severity, suspect, change, evidence equal to the inputs, saving), and silent
// when its inputs are absent.
#include "rule_test_support.h"

#include <gtest/gtest.h>

namespace trainlab::rule_test {
namespace {

TEST(RulesTest, GemmAlignment) {
  Summary s = quiet();
  s.compute_dtype = "bf16";
  s.gemm_ops = 10;
  s.gemm_unaligned_ops = 3;
  s.unaligned_gemm_examples = {"aten::addmm [4096,1000]x[1000,10]"};
  auto f = find(s, "gemm_alignment");
  ASSERT_TRUE(fired_as(f, Severity::kModerate, Suspect::kModelCompute));
  EXPECT_DOUBLE_EQ(f->evidence[0].value, 30);
  EXPECT_EQ(f->evidence[0].threshold, 25);
  EXPECT_TRUE(counts_are(*f, 3, 10));
  EXPECT_TRUE(contains(f->title, "aten::addmm [4096,1000]x[1000,10]")) << f->title;
  s.compute_dtype = "fp32";
  EXPECT_EQ(find(s, "gemm_alignment")->severity, Severity::kInfo);
  s.gemm_unaligned_ops = 2;
  EXPECT_FALSE(find(s, "gemm_alignment"));
  s.gemm_ops = 0;
  s.gemm_unaligned_ops = 0;
  EXPECT_FALSE(find(s, "gemm_alignment"));
}

}  // namespace
}  // namespace trainlab::rule_test
