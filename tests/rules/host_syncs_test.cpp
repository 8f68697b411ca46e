// The rule host_syncs (diagnostics/rules/host_syncs.cpp) on hand-built Summaries: on both sides of its
// thresholds (fires or not, severity, suspect, change, evidence equal to the inputs, saving), and silent
// when its inputs are absent.
#include "rule_test_support.h"

#include <gtest/gtest.h>

namespace trainlab::rule_test {
namespace {

TEST(RulesTest, HostSyncs) {
  Summary s = quiet_on_gpu();
  s.host_syncs_per_step = 3;
  auto f = find(s, "host_syncs");
  ASSERT_TRUE(fired_as(f, Severity::kModerate, Suspect::kFrameworkOverhead));
  EXPECT_TRUE(first_evidence_is(*f, 3, 1));
  EXPECT_TRUE(contains(f->title, ".item()")) << f->title;
  s.on_gpu = false;
  EXPECT_EQ(find(s, "host_syncs")->severity, Severity::kInfo);
  expect_silent_at_and_without(s, "host_syncs", &Summary::host_syncs_per_step, 1);
}

}  // namespace
}  // namespace trainlab::rule_test
