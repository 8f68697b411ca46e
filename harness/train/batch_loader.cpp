// Wires a Dataset to the epoch sampler and the ordered worker engine.
#include "harness/train/batch_loader.h"

#include "profiler/annotate.h"

namespace trainlab {

BatchLoader::BatchLoader(std::unique_ptr<Dataset> dataset, int64_t batch_size, uint64_t seed,
                         const LoaderOptions& options, int64_t shard_index, int64_t shard_count)
    : dataset_(std::move(dataset)),
      sampler_(dataset_->num_samples(), batch_size, seed, shard_index, shard_count),
      loader_(options, sampler_.batches_per_epoch(),
              [this](int64_t batch_index) {
                // On the worker's thread (or the training thread with 0 workers): a span in the
                // window's trace and an NVTX range, like PyTorch's DataLoader __next__ spans.
                Annotate scope("dataloader.load_batch");
                return dataset_->load_batch(sampler_.request(batch_index));
              }) {}

BatchLoader::Delivered BatchLoader::next() { return loader_.next(); }

}  // namespace trainlab
