// Seeded per-epoch permutations (a few recent epochs kept, since workers run ahead of the
// consumer) and per-batch augmentation seeds.
#include "harness/loader/epoch_sampler.h"

#include <algorithm>
#include <numeric>
#include <random>

namespace trainlab {

EpochSampler::EpochSampler(int64_t num_samples, int64_t batch_size, uint64_t seed, int64_t shard_index,
                           int64_t shard_count)
    : num_samples_(num_samples),
      batch_size_(batch_size),
      batches_per_epoch_(batch_size > 0 ? num_samples / batch_size : 0),
      shard_index_(shard_index),
      shard_count_(shard_count),
      seed_(seed) {
  if (batch_size_ <= 0 || batches_per_epoch_ == 0) {
    throw InputError("the dataset holds " + std::to_string(num_samples) + " samples, fewer than one batch of " +
                     std::to_string(batch_size));
  }
  if (shard_count_ < 1 || shard_index_ < 0 || shard_index_ >= shard_count_ || batch_size_ % shard_count_ != 0) {
    throw InputError("batch " + std::to_string(batch_size) + " does not split into " + std::to_string(shard_count) +
                     " equal data-parallel shards");
  }
}

std::shared_ptr<const std::vector<int64_t>> EpochSampler::order_for(int64_t epoch) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [cached_epoch, order] : recent_orders_) {
    if (cached_epoch == epoch) return order;
  }
  auto order = std::make_shared<std::vector<int64_t>>(static_cast<size_t>(num_samples_));
  std::iota(order->begin(), order->end(), int64_t{0});
  std::mt19937_64 rng(seed_ * 1000003ULL + static_cast<uint64_t>(epoch));
  std::shuffle(order->begin(), order->end(), rng);
  recent_orders_.emplace_back(epoch, order);
  if (recent_orders_.size() > 4) recent_orders_.pop_front();
  return order;
}

BatchRequest EpochSampler::request(int64_t batch_index) const {
  const int64_t epoch = epoch_of(batch_index);
  const int64_t position = batch_index % batches_per_epoch_;
  const auto order = order_for(epoch);
  BatchRequest request;
  const int64_t shard_size = batch_size_ / shard_count_;
  request.first_position = shard_index_ * shard_size;
  const auto first = order->begin() + position * batch_size_ + request.first_position;
  request.sample_indices.assign(first, first + shard_size);
  std::seed_seq mix{static_cast<uint32_t>(seed_), static_cast<uint32_t>(seed_ >> 32),
                    static_cast<uint32_t>(batch_index), static_cast<uint32_t>(batch_index >> 32), 0xa06u};
  std::mt19937_64 rng(mix);
  request.augment_seed = rng();
  return request;
}

}  // namespace trainlab
