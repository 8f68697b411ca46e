// The rule memory_growth (diagnostics/rules/memory_growth.cpp) on hand-built Summaries: on both sides of its
// thresholds (fires or not, severity, suspect, change, evidence equal to the inputs, saving), and silent
// when its inputs are absent.
#include "rule_test_support.h"

#include <gtest/gtest.h>

namespace trainlab::rule_test {
namespace {

TEST(RulesTest, MemoryGrowthFromSeries) {
  Summary s = quiet();
  for (int i = 0; i < 30; ++i) s.memory_mib.push_back(100 + i);
  auto f = find(s, "memory_growth");  // second half: 115..129, window 3
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kModerate);
  EXPECT_NEAR(f->evidence[0].value, (128.0 - 116.0) / 116.0 * 100.0, 1e-9);
  EXPECT_EQ(f->evidence[0].threshold, 5);
  EXPECT_TRUE(counts_are(*f, 8, 15));  // 122..129 MB are above 116 MB x 1.05
  EXPECT_TRUE(contains(f->title, "116 MB -> 128 MB")) << f->title;

  // Growth that stopped half-way (warm-up, caches, the profiler's window) is not a leak.
  s.memory_mib.clear();
  for (int i = 0; i < 30; ++i) s.memory_mib.push_back(i < 15 ? 100 + 10 * i : 240);
  EXPECT_FALSE(find(s, "memory_growth"));

  s.memory_mib.assign(30, 100);
  s.memory_mib.back() = 200;  // one late spike: the last window's mean rises 33 %
  EXPECT_TRUE(find(s, "memory_growth"));
  s.memory_mib.assign(30, 100);
  s.memory_mib[28] = 104;
  s.memory_mib[29] = 110;  // last window 104.67: +4.67 %
  EXPECT_FALSE(find(s, "memory_growth"));
}

TEST(RulesTest, MemoryGrowthGivenByTheSource) {
  Summary s = quiet();
  s.memory_growth_pct = 6;
  auto f = find(s, "memory_growth");
  ASSERT_TRUE(f);
  EXPECT_TRUE(first_evidence_is(*f, 6));
  EXPECT_EQ(f->data_points, 0);
  expect_silent_at_and_without(s, "memory_growth", &Summary::memory_growth_pct, 5);
}

}  // namespace
}  // namespace trainlab::rule_test
