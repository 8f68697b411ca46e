// The loader over the real on-disk datasets: the first batches are byte-identical whatever the
// worker count, and a batch's per-stage times account for its worker's measured busy time.
#include <gtest/gtest.h>

#include <algorithm>

#include <filesystem>
#include <memory>
#include <vector>

#include "harness/loader/epoch_sampler.h"
#include "harness/loader/ordered_loader.h"
#include "scenarios/data/recsys_data.h"
#include "scenarios/data/vision_data.h"

namespace trainlab {
namespace {

struct Fixture {
  std::unique_ptr<SampleSource> vision, recsys;
};

// Small datasets, generated once for the whole file.
const Fixture& fixture() {
  static const Fixture f = [] {
    const std::string root = ::testing::TempDir() + "/trainlab_loader_data_" + std::to_string(::getpid());
    std::filesystem::remove_all(root);
    VisionDataSpec vision;
    vision.samples = 192;
    vision.image_size = 64;
    RecsysDataSpec recsys;
    recsys.samples = 256;
    recsys.items = 500;
    recsys.mean_history = 60;
    recsys.max_history = 160;
    recsys.records_per_shard = 128;
    Fixture out;
    out.vision = open_vision_jpeg_source(prepare_vision_dataset(root, vision).dir, VisionAugment{48, 1.0});
    out.recsys = open_recsys_shard_source(prepare_recsys_dataset(root, recsys).dir, RecsysAugment{16, 1.0});
    return out;
  }();
  return f;
}

std::vector<uint64_t> first_batch_hashes(const SampleSource& source, int workers, int batches) {
  EpochSampler sampler(source.num_samples(), /*batch_size=*/16, /*seed=*/99);
  OrderedLoader<HostBatch> loader({workers, 2, true}, sampler.batches_per_epoch(), [&](int64_t k) {
    return source.load_batch(sampler.request(k), heap_allocator());
  });
  std::vector<uint64_t> hashes;
  for (int k = 0; k < batches; ++k) hashes.push_back(hash_host_batch(loader.next().batch));
  return hashes;
}

TEST(HostBufferTest, FreedHeapBuffersWaitForTheNextRequestOfTheirSize) {
  const size_t bytes = 3 * 1024 * 1024 + 7, rounded = (bytes + 63) / 64 * 64;  // a size no other test uses
  void* first = nullptr;
  size_t cached = 0;
  {
    const std::shared_ptr<void> a = heap_allocator()(bytes);
    first = a.get();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
    cached = heap_allocator_cached_bytes();
  }
  EXPECT_EQ(heap_allocator_cached_bytes(), cached + rounded);  // freed: kept for reuse
  const std::shared_ptr<void> again = heap_allocator()(bytes);
  EXPECT_EQ(again.get(), first);                      // the same buffer, no new allocation
  EXPECT_EQ(heap_allocator_cached_bytes(), cached);
  const std::shared_ptr<void> second = heap_allocator()(bytes);
  EXPECT_NE(second.get(), first);                     // in use buffers are never handed out twice
}

TEST(LoaderDataTest, FirstBatchesHashTheSameForWorkers0And1And4) {
  for (const SampleSource* source : {fixture().vision.get(), fixture().recsys.get()}) {
    // 14 batches: past the first epoch (12 batches of 16 from 192 images) for vision.
    const std::vector<uint64_t> serial = first_batch_hashes(*source, 0, 14);
    EXPECT_EQ(first_batch_hashes(*source, 1, 14), serial) << source->describe();
    EXPECT_EQ(first_batch_hashes(*source, 4, 14), serial) << source->describe();
    EXPECT_NE(serial[0], serial[1]);  // and the batches really differ from one another
  }
}

TEST(LoaderDataTest, StageTimesAddUpToTheWorkersBusyTime) {
  for (const SampleSource* source : {fixture().vision.get(), fixture().recsys.get()}) {
    EpochSampler sampler(source->num_samples(), 32, 5);
    OrderedLoader<HostBatch> loader({2, 2, true}, sampler.batches_per_epoch(), [&](int64_t k) {
      return source->load_batch(sampler.request(k), heap_allocator());
    });
    std::vector<double> stage_share;  // per batch: the stages' time over the worker's busy time
    for (int k = 0; k < 8; ++k) {
      const auto delivered = loader.next();
      const int64_t stages_ns = delivered.batch.stage_ns.total_ns();
      ASSERT_GT(delivered.busy_ns, 0);
      EXPECT_GT(delivered.batch.stage_ns.decode_ns + delivered.batch.stage_ns.augment_ns, 0);
      // The stages run inside the worker's busy span, so they never add up to more than it.
      EXPECT_LE(stages_ns, delivered.busy_ns + 1'000'000) << source->describe() << " batch " << k;
      stage_share.push_back(static_cast<double>(stages_ns) / static_cast<double>(delivered.busy_ns));
    }
    // And they cover it: the typical batch's stages are within 10 % of its busy time. (The median:
    // on a loaded machine a worker descheduled between two stages stretches that batch's busy time
    // alone; CI runs tests two at a time.)
    std::sort(stage_share.begin(), stage_share.end());
    const double median = (stage_share[3] + stage_share[4]) / 2;
    EXPECT_NEAR(median, 1.0, 0.10) << source->describe();
  }
}

}  // namespace
}  // namespace trainlab
