// The loader the training loop draws batches from: the seeded epoch sampler (every variant and
// every worker count sees identical batches) feeding the ordered worker-thread engine
// (harness/loader/ordered_loader.h) that builds batches from a scenario's Dataset.
#pragma once

#include <cstdint>
#include <memory>

#include "harness/loader/epoch_sampler.h"
#include "harness/loader/ordered_loader.h"
#include "scenarios/workload.h"

namespace trainlab {

class BatchLoader {
 public:
  using Delivered = OrderedLoader<Batch>::Delivered;

  // batch_size is the global batch; a data-parallel rank loads shard shard_index of shard_count.
  BatchLoader(std::unique_ptr<Dataset> dataset, int64_t batch_size, uint64_t seed, const LoaderOptions& options,
              int64_t shard_index = 0, int64_t shard_count = 1);
  Delivered next();
  // Batch 0, built here outside the delivery order (an example input for tracing).
  Batch first_batch() const { return dataset_->load_batch(sampler_.request(0)); }
  LoaderCounters counters() const { return loader_.counters(); }
  const Dataset& dataset() const { return *dataset_; }

 private:
  std::unique_ptr<Dataset> dataset_;
  EpochSampler sampler_;
  OrderedLoader<Batch> loader_;
};

}  // namespace trainlab
