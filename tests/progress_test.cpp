// The live progress line: the child's step file (written only when asked, at most every 250 ms,
// always on the last step), its reading, the line's text and the estimate of the time left.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/step_progress.h"
#include "harness/process/progress_ticker.h"

namespace trainlab {
namespace {

std::string temp_file(const std::string& name) {
  return ::testing::TempDir() + "/trainlab_progress_" + name + "_" + std::to_string(::getpid());
}

TEST(StepProgress, TheChildWritesOnlyWhenAskedAtMostEveryQuarterSecondAndAlwaysTheLastStep) {
  const std::string path = temp_file("steps");
  std::filesystem::remove(path);
  {
    ::unsetenv(kProgressFileVariable);
    StepProgressWriter unwatched;
    unwatched.step_done(1, 10, 1'000'000'000);
    EXPECT_FALSE(std::filesystem::exists(path));
  }
  ::setenv(kProgressFileVariable, path.c_str(), 1);
  StepProgressWriter writer;
  ::unsetenv(kProgressFileVariable);
  writer.step_done(1, 10, 1'000'000'000);
  ASSERT_TRUE(read_step_progress(path).has_value());
  EXPECT_EQ(read_step_progress(path)->done, 1);
  EXPECT_EQ(read_step_progress(path)->planned, 10);
  writer.step_done(2, 10, 1'100'000'000);  // 100 ms later: not written
  EXPECT_EQ(read_step_progress(path)->done, 1);
  writer.step_done(3, 10, 1'300'000'000);  // 300 ms after the last write
  EXPECT_EQ(read_step_progress(path)->done, 3);
  writer.step_done(10, 10, 1'310'000'000);  // the last step, at once
  EXPECT_EQ(read_step_progress(path)->done, 10);
}

TEST(StepProgress, ATornOrOddFileReadsAsUnknown) {
  const std::string path = temp_file("odd");
  EXPECT_FALSE(read_step_progress(path + ".missing").has_value());
  for (const char* text : {"", "12", "abc def", "5 0", "11 10", "-1 10"}) {
    std::ofstream(path) << text;
    EXPECT_FALSE(read_step_progress(path).has_value()) << "'" << text << "'";
  }
}

TEST(ProgressLine, SaysVariantStepElapsedAndTimeLeft) {
  EXPECT_EQ(progress_line(2, 9, "bf16", StepProgress{12, 55}, 31.4, 120.2),
            "[2/9] bf16  step 12/55  elapsed 31 s, about 120 s left");
  EXPECT_EQ(progress_line(1, 1, "fp32", std::nullopt, 3, -1), "[1/1] fp32  elapsed 3 s");
}

TEST(ProgressLine, TheEstimateUsesTheStepRateThenTheFinishedVariantsMean) {
  // 10 of 50 steps in 5 s: 20 s left of this one; 2 after it at the finished ones' mean of 30 s.
  EXPECT_DOUBLE_EQ(estimate_left_s(1, 3, 5.0, 10, 50, 30.0), 20.0 + 2 * 30.0);
  // No variant finished yet: the ones after at this one's projected time (25 s).
  EXPECT_DOUBLE_EQ(estimate_left_s(1, 3, 5.0, 10, 50, -1.0), 20.0 + 2 * 25.0);
  // No step yet: the mean, less what this one has run.
  EXPECT_DOUBLE_EQ(estimate_left_s(2, 3, 4.0, 0, 0, 30.0), 26.0 + 30.0);
  EXPECT_DOUBLE_EQ(estimate_left_s(1, 3, 4.0, 0, 0, -1.0), -1.0);  // nothing known
}

TEST(ProgressTicker, NotOnATerminalItPrintsNothing) {
  std::ostringstream out;
  {
    ProgressTicker ticker(out, /*live=*/false);
    ticker.start(1, 2, "fp32", "", 0, -1);
    ticker.stop();
  }
  EXPECT_EQ(out.str(), "");
  std::ostringstream live_out;
  {
    ProgressTicker ticker(live_out, /*live=*/true);
    ticker.start(1, 2, "fp32", "", 0, -1);
    ticker.stop();
  }
  EXPECT_EQ(live_out.str().rfind("\r\033[K[1/2] fp32  elapsed 0 s", 0), 0u) << live_out.str();
}

}  // namespace
}  // namespace trainlab
