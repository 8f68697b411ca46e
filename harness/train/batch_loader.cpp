// Wires a Dataset to the epoch sampler and the ordered worker engine.
#include "harness/train/batch_loader.h"

namespace trainlab {

BatchLoader::BatchLoader(std::unique_ptr<Dataset> dataset, int64_t batch_size, uint64_t seed,
                         const LoaderOptions& options)
    : dataset_(std::move(dataset)),
      sampler_(dataset_->num_samples(), batch_size, seed),
      loader_(options, sampler_.batches_per_epoch(),
              [this](int64_t batch_index) { return dataset_->load_batch(sampler_.request(batch_index)); }) {}

BatchLoader::Delivered BatchLoader::next() { return loader_.next(); }

}  // namespace trainlab
