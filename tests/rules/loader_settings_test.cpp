// The rule loader_settings (diagnostics/rules/loader_settings.cpp) on hand-built Summaries: on both sides of its
// thresholds (fires or not, severity, suspect, change, evidence equal to the inputs, saving), and silent
// when its inputs are absent.
#include "rule_test_support.h"

#include <gtest/gtest.h>

namespace trainlab::rule_test {
namespace {

TEST(RulesTest, LoaderWithoutWorkers) {
  Summary s = quiet();
  s.loader_workers = 0;
  s.shares.data_wait_pct = 12;
  auto f = find(s, "loader_settings");
  ASSERT_TRUE(fired_as(f, Severity::kModerate, Suspect::kDataPipeline, "more_workers"));
  EXPECT_TRUE(has_evidence(*f, "loader_workers", 0));
  EXPECT_TRUE(has_evidence(*f, "data_wait_pct", 12));
  EXPECT_TRUE(contains(f->title, "training thread")) << f->title;
  // The data wait is one action's (issue 55): input_bound, first in the table, claims it; this
  // finding's action is the same workers, with nothing left to save on its own.
  EXPECT_EQ(find(s, "input_bound")->saving_pct, 12);
  EXPECT_EQ(f->saving_pct, 0);

  s.shares.data_wait_pct = 4;  // no workers, but the loop does not wait
  EXPECT_FALSE(find(s, "loader_settings"));
  s.loader_workers.reset();
  s.shares.data_wait_pct = 50;
  EXPECT_FALSE(find(s, "loader_settings"));
}

TEST(RulesTest, LoaderOversubscribed) {
  Summary s = quiet();
  s.loader_workers = 16;
  auto f = find(s, "loader_settings");
  ASSERT_TRUE(fired_as(f, Severity::kInfo, Suspect::kDataPipeline, ""));
  EXPECT_TRUE(has_evidence(*f, "loader_workers", 16, 8));
  EXPECT_TRUE(contains(f->title, "16 loader workers oversubscribe 8 logical cores")) << f->title;
  s.shares.data_wait_pct = 6;
  EXPECT_EQ(find(s, "loader_settings")->severity, Severity::kModerate);
  s.loader_workers = 8;
  EXPECT_FALSE(find(s, "loader_settings"));
  s.loader_workers = 16;
  s.logical_cores = 0;  // unknown
  EXPECT_FALSE(find(s, "loader_settings"));
}

TEST(RulesTest, LoaderUnpinnedCopiesOnGpu) {
  Summary s = quiet_on_gpu();
  s.pin_memory = false;
  s.shares.host_to_device_pct = 6;
  auto f = find(s, "loader_settings");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->change, "pin_memory");
  EXPECT_TRUE(has_evidence(*f, "host_to_device_pct", 6, 5));
  EXPECT_EQ(f->saving_pct, 6);
  s.shares.host_to_device_pct = 4;
  EXPECT_FALSE(find(s, "loader_settings"));
  s.shares.host_to_device_pct = 6;
  s.pin_memory = true;
  EXPECT_FALSE(find(s, "loader_settings"));
  s.pin_memory = false;
  s.on_gpu = false;
  EXPECT_FALSE(find(s, "loader_settings"));
}

}  // namespace
}  // namespace trainlab::rule_test
