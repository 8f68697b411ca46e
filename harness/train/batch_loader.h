// The loader interface the training loop draws batches from: sample order shuffled per epoch
// from the seed (so every variant sees identical batches), drop-last batching. Batches are built
// in the calling thread for now; worker threads and prefetch plug in behind next().
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "scenarios/workload.h"

namespace trainlab {

class BatchLoader {
 public:
  BatchLoader(std::unique_ptr<Dataset> dataset, int64_t batch_size, uint64_t seed);
  Batch next();
  // A batch outside the epoch order (e.g. an example input for tracing); does not advance.
  Batch peek_first();
  int64_t epoch() const { return epoch_; }

 private:
  void start_epoch();

  std::unique_ptr<Dataset> dataset_;
  int64_t batch_size_;
  uint64_t seed_;
  int64_t epoch_ = -1;
  std::vector<int64_t> order_;
  size_t cursor_ = 0;
};

}  // namespace trainlab
