// Seeded epoch shuffling and drop-last batching over a Dataset.
#include "harness/train/batch_loader.h"

#include <numeric>
#include <random>
#include <stdexcept>

namespace trainlab {

BatchLoader::BatchLoader(std::unique_ptr<Dataset> dataset, int64_t batch_size, uint64_t seed)
    : dataset_(std::move(dataset)), batch_size_(batch_size), seed_(seed) {
  if (dataset_->num_samples() < batch_size_) {
    throw std::invalid_argument("dataset has fewer samples than one batch");
  }
  start_epoch();
}

void BatchLoader::start_epoch() {
  ++epoch_;
  order_.resize(static_cast<size_t>(dataset_->num_samples()));
  std::iota(order_.begin(), order_.end(), int64_t{0});
  std::mt19937_64 rng(seed_ * 1000003ULL + static_cast<uint64_t>(epoch_));
  std::shuffle(order_.begin(), order_.end(), rng);
  cursor_ = 0;
}

Batch BatchLoader::next() {
  if (cursor_ + static_cast<size_t>(batch_size_) > order_.size()) start_epoch();
  std::vector<int64_t> indices(order_.begin() + static_cast<std::ptrdiff_t>(cursor_),
                               order_.begin() + static_cast<std::ptrdiff_t>(cursor_ + batch_size_));
  cursor_ += static_cast<size_t>(batch_size_);
  return dataset_->load_batch(indices);
}

Batch BatchLoader::peek_first() {
  std::vector<int64_t> indices(static_cast<size_t>(batch_size_));
  std::iota(indices.begin(), indices.end(), int64_t{0});
  return dataset_->load_batch(indices);
}

}  // namespace trainlab
