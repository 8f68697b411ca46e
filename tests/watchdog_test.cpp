// The rendezvous watchdog (harness/dist/watchdog.h): a scope left in time lets the process go on;
// one that is not ends the process with exit status 1 and its one line on stderr (the rank's
// record then says why). Its thread and the scope's end race by design; the TSan stage runs this.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "harness/dist/watchdog.h"

namespace trainlab {
namespace {

TEST(Watchdog, AScopeLeftInTimeGoesOn) {
  for (int k = 0; k < 200; ++k) {  // leaving at once, many times: the thread must not fire or hang
    const Watchdog deadline(std::chrono::seconds(30), "should not fire");
  }
  const auto start = std::chrono::steady_clock::now();
  {
    const Watchdog deadline(std::chrono::seconds(30), "should not fire");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Leaving wakes the thread: no wait for the 30 s limit.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(WatchdogDeathTest, AScopeNotLeftInTimeExitsWithItsLine) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        const Watchdog deadline(std::chrono::milliseconds(50), "rendezvous did not complete (test)");
        std::this_thread::sleep_for(std::chrono::seconds(30));  // a blocking call that never returns
      },
      ::testing::ExitedWithCode(1), "trainlab: rendezvous did not complete \\(test\\)");
}

}  // namespace
}  // namespace trainlab
