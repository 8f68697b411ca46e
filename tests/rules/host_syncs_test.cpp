// The rule host_syncs (diagnostics/rules/host_syncs.cpp) on hand-built Summaries: on both sides of its
// thresholds (fires or not, severity, suspect, change, evidence equal to the inputs, saving), and silent
// when its inputs are absent.
#include "rule_test_support.h"

#include <gtest/gtest.h>

namespace trainlab::rule_test {
namespace {

TEST(RulesTest, HostSyncs) {
  Summary s = quiet();
  s.on_gpu = true;
  s.host_syncs_per_step = 3;
  auto f = find(s, "host_syncs");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::kModerate);
  EXPECT_EQ(f->suspect, Suspect::kFrameworkOverhead);
  EXPECT_EQ(f->evidence[0].value, 3);
  EXPECT_EQ(f->evidence[0].threshold, 1);
  EXPECT_TRUE(contains(f->title, ".item()")) << f->title;
  s.on_gpu = false;
  EXPECT_EQ(find(s, "host_syncs")->severity, Severity::kInfo);
  s.host_syncs_per_step = 1;
  EXPECT_FALSE(find(s, "host_syncs"));
  s.host_syncs_per_step.reset();
  EXPECT_FALSE(find(s, "host_syncs"));
}

}  // namespace
}  // namespace trainlab::rule_test
