// The processes of one outside launch (torchrun) on one machine: which rank this is, the launch's
// key, and the run folder rank 0 names to its peers (published, waited for, withdrawn).
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "core/errors.h"
#include "harness/runner/launch_group.h"

namespace trainlab {
namespace {
namespace fs = std::filesystem;

const char* const kVariables[] = {"WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT",
                                  "LOCAL_WORLD_SIZE", "GROUP_RANK", "TORCHELASTIC_RUN_ID",
                                  "TORCHELASTIC_RESTART_COUNT"};

struct ScopedLaunch {
  ScopedLaunch(const std::string& rank, const std::string& local_world_size) {
    clear();
    ::setenv("WORLD_SIZE", "2", 1);
    ::setenv("RANK", rank.c_str(), 1);
    ::setenv("MASTER_ADDR", "127.0.0.1", 1);
    ::setenv("MASTER_PORT", "29511", 1);
    if (!local_world_size.empty()) ::setenv("LOCAL_WORLD_SIZE", local_world_size.c_str(), 1);
    ::setenv("TORCHELASTIC_RUN_ID", "job-7", 1);
    ::setenv("TORCHELASTIC_RESTART_COUNT", "0", 1);
  }
  ~ScopedLaunch() { clear(); }
  static void clear() {
    for (const char* name : kVariables) ::unsetenv(name);
  }
};

std::string fresh_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/trainlab_launch_" + name + "_" + std::to_string(::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(LaunchGroup, NoLaunchWithoutWorldSize) {
  ScopedLaunch::clear();
  EXPECT_FALSE(launcher_rank_from_environment().has_value());
}

// Across machines (1 of 2 ranks per machine): rank 0 makes the job's folder; the first rank on
// another machine makes a folder there and its records travel to rank 0 through the store.
TEST(LaunchGroup, AcrossMachinesTheFirstRankOfEachMachineMakesItsFolder) {
  {
    ScopedLaunch rank0("0", "1");
    const auto launch = launcher_rank_from_environment();
    ASSERT_TRUE(launch.has_value());
    EXPECT_TRUE(launch->multi_node);
    EXPECT_FALSE(launch->remote());
    EXPECT_TRUE(launch->makes_folder());
  }
  {
    ScopedLaunch rank1("1", "1");
    ::setenv("GROUP_RANK", "1", 1);
    ::setenv("LOCAL_RANK", "0", 1);
    const auto launch = launcher_rank_from_environment();
    ASSERT_TRUE(launch.has_value());
    EXPECT_EQ(launch->node_rank, 1);
    EXPECT_TRUE(launch->remote());
    EXPECT_TRUE(launch->makes_folder());
  }
  {
    ScopedLaunch one_machine("1", "2");  // rank 1 beside rank 0: it writes into rank 0's folder
    const auto launch = launcher_rank_from_environment();
    ASSERT_TRUE(launch.has_value());
    EXPECT_FALSE(launch->multi_node);
    EXPECT_FALSE(launch->makes_folder());
  }
}

TEST(LaunchGroup, TheRanksOfOneLaunchShareAKeyThatNamesTheLaunch) {
  std::string key0, key1;
  {
    ScopedLaunch launch("0", "2");
    const auto rank0 = launcher_rank_from_environment();
    ASSERT_TRUE(rank0.has_value());
    EXPECT_EQ(rank0->rank, 0);
    EXPECT_EQ(rank0->world_size, 2);
    key0 = rank0->launch_key;
  }
  {
    ScopedLaunch launch("1", "");
    key1 = launcher_rank_from_environment()->launch_key;
  }
  EXPECT_EQ(key0, key1);
  EXPECT_NE(key0.find("29511"), std::string::npos);
  EXPECT_NE(key0.find("job-7"), std::string::npos);
  EXPECT_EQ(key0.find('/'), std::string::npos);  // a file name
  ScopedLaunch restarted("0", "2");
  ::setenv("TORCHELASTIC_RESTART_COUNT", "1", 1);  // torchrun's restart: another launch
  EXPECT_NE(launcher_rank_from_environment()->launch_key, key0);
}

TEST(LaunchGroup, APeerFindsTheRunFolderRankZeroNamesAndTheNameGoesAfterwards) {
  ScopedLaunch launch("1", "2");
  const LauncherRank peer = *launcher_rank_from_environment();
  LauncherRank rank0 = peer;
  rank0.rank = 0;
  const std::string results = fresh_dir("share");
  const std::string run_dir = results + "/20261124-000000-mlp-run";
  fs::create_directories(run_dir);
  std::thread publisher([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the peer is already waiting
    publish_run_dir(rank0, results, run_dir);
  });
  EXPECT_EQ(wait_for_run_dir(peer, results, 10), run_dir);
  publisher.join();
  withdraw_run_dir(rank0, results);
  EXPECT_FALSE(fs::exists(results + "/.launches"));  // nothing left behind
}

TEST(LaunchGroup, APeerWhoseRankZeroNeverNamesAFolderFailsInOneLine) {
  ScopedLaunch launch("1", "2");
  const LauncherRank peer = *launcher_rank_from_environment();
  const auto start = std::chrono::steady_clock::now();
  try {
    (void)wait_for_run_dir(peer, fresh_dir("never"), 0.3);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("rank 1 of 2: rank 0 named no run folder"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos);
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
}

}  // namespace
}  // namespace trainlab
