// Gathering a job's records to rank 0 through the rendezvous store (harness/dist/record_gather.h),
// with two real c10d process groups (Gloo on loopback) in one process, one thread per rank: a trace
// larger than a chunk arrives byte for byte, and a rank that sends nothing gets a record that says
// so by the deadline. (A store that is gone cannot be made in one process: c10d keeps rank 0's
// server alive past its DataParallel here.)
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <chrono>
#include <future>
#include <memory>
#include <random>
#include <string>

#include "core/atomic_file.h"
#include "harness/dist/data_parallel.h"
#include "harness/dist/dist_env.h"
#include "harness/dist/record_gather.h"

namespace trainlab {
namespace {
std::unique_ptr<DataParallel> join(int rank, int world_size, int port) {
  DistEnv env;
  env.rank = rank;
  env.local_rank = rank;
  env.world_size = world_size;
  env.master_addr = "127.0.0.1";
  env.master_port = port;
  env.store_prefix = "trainlab/gather-test";
  return std::make_unique<DataParallel>(env, std::vector<at::Tensor>{at::zeros({4})}, CommMode::kSerial,
                                        int64_t{1} << 20, std::chrono::milliseconds(5000));
}

// Both ranks' process groups, made together (the rendezvous waits for every rank).
std::vector<std::unique_ptr<DataParallel>> job_of(int world_size) {
  const int port = find_free_port();
  std::vector<std::future<std::unique_ptr<DataParallel>>> joining;
  for (int rank = 0; rank < world_size; ++rank) {
    joining.push_back(std::async(std::launch::async, [=] { return join(rank, world_size, port); }));
  }
  std::vector<std::unique_ptr<DataParallel>> ranks;
  for (auto& j : joining) ranks.push_back(j.get());
  return ranks;
}

std::string fresh_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/trainlab_gather_" + name;
  remove_tree(dir);  // not std::filesystem's: libtorch.so's copy of it crashes here (core/atomic_file.h)
  ensure_writable_dir(dir);
  return dir;
}

TEST(RecordGather, ARecordAndATraceOfSeveralChunksArriveWhole) {
  auto ranks = job_of(2);
  const std::string dir = fresh_dir("whole");
  std::string trace(static_cast<size_t>(kGatherChunkBytes * 2 + 12345), '\0');
  std::mt19937 gen(7);
  for (char& c : trace) c = static_cast<char>(gen());
  write_file_atomically(dir + "/sent.trace", trace);
  EXPECT_EQ(send_record_to_rank0(*ranks[1], 1, "{\"rank\": 1}\n", dir + "/sent.trace"), "");
  const int arrived = receive_records_from_ranks(
      *ranks[0], 1, 2, std::chrono::steady_clock::now() + std::chrono::seconds(5),
      [&](int rank) {
        return RankFiles{dir + "/r" + std::to_string(rank) + ".json", dir + "/traces/r" + std::to_string(rank) + ".trace"};
      },
      [](int, const std::string& why) { return why; });
  EXPECT_EQ(arrived, 1);
  EXPECT_EQ(read_file(dir + "/r1.json"), "{\"rank\": 1}\n");
  EXPECT_TRUE(read_file(dir + "/traces/r1.trace", int64_t{1} << 30) == trace);  // 3 chunks, byte for byte
}

TEST(RecordGather, ARankThatSendsNothingGetsARecordThatSaysSoByTheDeadline) {
  auto ranks = job_of(3);
  const std::string dir = fresh_dir("silent");
  EXPECT_EQ(send_record_to_rank0(*ranks[2], 2, "{\"rank\": 2}\n", ""), "");  // rank 2 sends, rank 1 does not
  const auto start = std::chrono::steady_clock::now();
  const int arrived = receive_records_from_ranks(
      *ranks[0], 1, 3, start + std::chrono::seconds(2),
      [&](int rank) { return RankFiles{dir + "/r" + std::to_string(rank) + ".json", ""}; },
      [](int rank, const std::string& why) { return "rank " + std::to_string(rank) + " " + why; });
  const double waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(arrived, 1);
  EXPECT_LT(waited_s, 4.0);
  EXPECT_EQ(read_file(dir + "/r2.json"), "{\"rank\": 2}\n");
  EXPECT_EQ(read_file(dir + "/r1.json"), "rank 1 sent nothing through the rendezvous store by the deadline");
}

}  // namespace
}  // namespace trainlab
