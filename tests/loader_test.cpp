// The loader engine and sampler: ordered delivery whatever the worker count, the prefetch window,
// exceptions reaching the training thread without a hang, epoch restarts, sampler determinism.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <stdexcept>
#include <thread>

#include "harness/loader/epoch_sampler.h"
#include "harness/loader/ordered_loader.h"

namespace trainlab {
namespace {

// A producer whose batch is a pure function of its index, with uneven build times so that
// workers finish out of order.
int64_t slow_square(int64_t index) {
  std::this_thread::sleep_for(std::chrono::microseconds((index * 7919) % 5 * 300));
  return index * index;
}

TEST(OrderedLoaderTest, DeliversInOrderForAnyWorkerCount) {
  for (int workers : {0, 1, 3, 4}) {
    for (bool persistent : {true, false}) {
      OrderedLoader<int64_t> loader({workers, 2, persistent}, /*batches_per_epoch=*/5, slow_square);
      for (int64_t k = 0; k < 17; ++k) {
        auto delivered = loader.next();
        ASSERT_EQ(delivered.batch_index, k) << "workers=" << workers;
        ASSERT_EQ(delivered.batch, k * k) << "workers=" << workers;
        // Round robin from the first batch of each worker generation (each epoch when restarting).
        if (workers > 0) EXPECT_EQ(delivered.worker, (persistent ? k : k % 5) % workers);
      }
      EXPECT_EQ(loader.counters().batches, 17);
    }
  }
}

TEST(OrderedLoaderTest, NeverRunsMoreThanWorkersTimesPrefetchAhead) {
  std::atomic<int64_t> highest_started{-1};
  std::atomic<int64_t> consumed{0};
  std::atomic<int64_t> worst_lead{0};
  auto producer = [&](int64_t index) {
    int64_t seen = highest_started.load();
    while (index > seen && !highest_started.compare_exchange_weak(seen, index)) {
    }
    const int64_t lead = index - consumed.load();
    int64_t worst = worst_lead.load();
    while (lead > worst && !worst_lead.compare_exchange_weak(worst, lead)) {
    }
    return index;
  };
  OrderedLoader<int64_t> loader({3, 2, true}, 100, producer);
  for (int64_t k = 0; k < 40; ++k) {
    loader.next();
    consumed = k + 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // a slow consumer: workers fill the window
  }
  // Batch `consumed + 6` may start only once batch `consumed` was taken: a lead of at most 3 x 2.
  EXPECT_LE(worst_lead.load(), 6);
  EXPECT_GE(worst_lead.load(), 4);  // and the window was really used
}

TEST(OrderedLoaderTest, WorkerExceptionReachesTheTrainingThreadAtItsBatch) {
  for (int workers : {0, 1, 4}) {
    auto producer = [](int64_t index) -> int64_t {
      if (index == 6) throw std::runtime_error("bad record in shard-00003.zst");
      return index;
    };
    OrderedLoader<int64_t> loader({workers, 2, true}, 4, producer);
    for (int64_t k = 0; k < 6; ++k) EXPECT_EQ(loader.next().batch, k);
    try {
      loader.next();
      FAIL() << "expected the producer's exception, workers=" << workers;
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "bad record in shard-00003.zst");
    }
  }  // destructors join workers that are blocked on a full window: the test finishing proves no hang
}

TEST(OrderedLoaderTest, NonPersistentWorkersRestartEachEpoch) {
  OrderedLoader<int64_t> persistent({2, 2, true}, 4, [](int64_t i) { return i; });
  OrderedLoader<int64_t> restarting({2, 2, false}, 4, [](int64_t i) { return i; });
  for (int k = 0; k < 12; ++k) {
    EXPECT_EQ(persistent.next().batch, k);
    EXPECT_EQ(restarting.next().batch, k);
  }
  EXPECT_EQ(persistent.counters().worker_starts, 2);
  EXPECT_EQ(restarting.counters().worker_starts, 6);  // 3 epochs x 2 workers
}

TEST(OrderedLoaderTest, BusyTimeIsMeasuredPerBatch) {
  OrderedLoader<int64_t> loader({2, 2, true}, 10, [](int64_t i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return i;
  });
  int64_t busy_ns = 0;
  for (int k = 0; k < 6; ++k) {
    const auto delivered = loader.next();
    EXPECT_GE(delivered.busy_ns, 5'000'000);
    busy_ns += delivered.busy_ns;
  }
  EXPECT_GE(loader.counters().worker_busy_ns, busy_ns);  // workers may have built more ahead
}

TEST(OrderedLoaderTest, RejectsImpossibleOptions) {
  auto producer = [](int64_t i) { return i; };
  EXPECT_THROW(OrderedLoader<int64_t>({-1, 2, true}, 4, producer), std::invalid_argument);
  EXPECT_THROW(OrderedLoader<int64_t>({1, 0, true}, 4, producer), std::invalid_argument);
  EXPECT_THROW(OrderedLoader<int64_t>({1, 2, true}, 0, producer), std::invalid_argument);
}

TEST(EpochSamplerTest, EachEpochIsAPermutationAndBatchesAreDeterministic) {
  EpochSampler sampler(/*num_samples=*/100, /*batch_size=*/8, /*seed=*/7);
  ASSERT_EQ(sampler.batches_per_epoch(), 12);  // drop-last: 4 samples left out per epoch
  std::set<int64_t> seen;
  for (int64_t k = 0; k < 12; ++k) {
    const BatchRequest request = sampler.request(k);
    ASSERT_EQ(request.sample_indices.size(), 8u);
    for (int64_t i : request.sample_indices) EXPECT_TRUE(seen.insert(i).second) << "sample repeated";
  }
  EpochSampler again(100, 8, 7);
  EXPECT_EQ(again.request(13).sample_indices, sampler.request(13).sample_indices);
  EXPECT_EQ(again.request(13).augment_seed, sampler.request(13).augment_seed);
  EXPECT_NE(sampler.request(1).sample_indices, sampler.request(13).sample_indices);  // reshuffled
  EXPECT_NE(sampler.request(1).augment_seed, sampler.request(2).augment_seed);
  EXPECT_NE(EpochSampler(100, 8, 8).request(0).sample_indices, sampler.request(0).sample_indices);
}

TEST(EpochSamplerTest, DatasetSmallerThanABatchIsBadInput) {
  EXPECT_THROW(EpochSampler(10, 16, 1), InputError);
}

TEST(EpochSamplerTest, DataParallelShardsTogetherAreTheGlobalBatch) {
  const EpochSampler global(100, 12, 3);
  const EpochSampler shard0(100, 12, 3, /*shard_index=*/0, /*shard_count=*/3);
  const EpochSampler shard2(100, 12, 3, 2, 3);
  EXPECT_EQ(shard0.batches_per_epoch(), global.batches_per_epoch());
  EXPECT_EQ(shard0.shard_batch_size(), 4);
  for (int64_t k : {0, 5, 9}) {
    const BatchRequest whole = global.request(k);
    std::vector<int64_t> joined;
    for (int64_t r = 0; r < 3; ++r) {
      const BatchRequest part = EpochSampler(100, 12, 3, r, 3).request(k);
      EXPECT_EQ(part.first_position, 4 * r);
      EXPECT_EQ(part.augment_seed, whole.augment_seed);  // the per-sample randomness follows global positions
      joined.insert(joined.end(), part.sample_indices.begin(), part.sample_indices.end());
    }
    EXPECT_EQ(joined, whole.sample_indices);
  }
  EXPECT_NE(shard0.request(0).sample_indices, shard2.request(0).sample_indices);
  EXPECT_THROW(EpochSampler(100, 10, 1, 0, 3), InputError);  // 10 does not split into 3
  EXPECT_THROW(EpochSampler(100, 12, 1, 3, 3), InputError);  // no shard 3 of 3
}

}  // namespace
}  // namespace trainlab
