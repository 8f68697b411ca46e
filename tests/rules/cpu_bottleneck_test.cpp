// The rule cpu_bottleneck (diagnostics/rules/cpu_bottleneck.cpp) on hand-built Summaries: on both sides of its
// thresholds (fires or not, severity, suspect, change, evidence equal to the inputs, saving), and silent
// when its inputs are absent.
#include "rule_test_support.h"

#include <gtest/gtest.h>

namespace trainlab::rule_test {
namespace {

TEST(RulesTest, CpuBottleneckOnGpuRunsOnly) {
  Summary s = quiet_on_gpu();
  s.shares.data_wait_pct = 30;
  s.system["cpu.total_pct"] = dist(100, 95, 99);
  s.system["gpu0.util_pct"] = dist(100, 5, 9);
  auto f = find(s, "cpu_bottleneck");
  ASSERT_TRUE(fired_as(f, Severity::kHigh, Suspect::kDataPipeline));
  EXPECT_TRUE(has_evidence(*f, "cpu.total_pct.p50", 95, 90));
  EXPECT_TRUE(has_evidence(*f, "gpu0.util_pct.p50", 5, 10));
  EXPECT_EQ(f->saving_pct, 30);

  s.shares.data_wait_pct = 2;
  s.shares.framework_pct = 40;
  EXPECT_EQ(find(s, "cpu_bottleneck")->suspect, Suspect::kFrameworkOverhead);
  EXPECT_EQ(find(s, "cpu_bottleneck")->change, "compiled");

  s.system["cpu.total_pct"] = dist(100, 90, 99);
  EXPECT_FALSE(find(s, "cpu_bottleneck"));
  s.system["cpu.total_pct"] = dist(100, 95, 99);
  s.system["gpu0.util_pct"] = dist(100, 10, 20);
  EXPECT_FALSE(find(s, "cpu_bottleneck"));
  s.system["gpu0.util_pct"] = dist(100, 5, 9);
  s.on_gpu = false;  // the CPU is the device
  EXPECT_FALSE(find(s, "cpu_bottleneck"));
  s.on_gpu = true;
  s.system.erase("cpu.total_pct");
  EXPECT_FALSE(find(s, "cpu_bottleneck"));
}

}  // namespace
}  // namespace trainlab::rule_test
