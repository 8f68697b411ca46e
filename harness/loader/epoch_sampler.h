// Which samples make up batch k: the dataset's order is shuffled per epoch from the seed,
// batches are drop-last slices of it, and each batch gets its own augmentation seed. A pure
// function of (seed, k), callable from any worker thread, so batches never depend on who builds them.
// Data parallel: shard r of W gets rows [r*B/W, (r+1)*B/W) of every global batch of B samples.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "scenarios/data/sample_source.h"

namespace trainlab {

class EpochSampler {
 public:
  // batch_size is the global batch. Throws InputError when the dataset holds fewer samples than
  // one batch, or the batch does not split evenly into shard_count shards.
  EpochSampler(int64_t num_samples, int64_t batch_size, uint64_t seed, int64_t shard_index = 0,
               int64_t shard_count = 1);

  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  int64_t shard_batch_size() const { return batch_size_ / shard_count_; }
  int64_t epoch_of(int64_t batch_index) const { return batch_index / batches_per_epoch_; }
  BatchRequest request(int64_t batch_index) const;

 private:
  std::shared_ptr<const std::vector<int64_t>> order_for(int64_t epoch) const;

  int64_t num_samples_, batch_size_, batches_per_epoch_, shard_index_, shard_count_;
  uint64_t seed_;
  mutable std::mutex mutex_;
  mutable std::deque<std::pair<int64_t, std::shared_ptr<const std::vector<int64_t>>>> recent_orders_;
};

}  // namespace trainlab
