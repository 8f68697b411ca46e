// Loader throughput for real decode + augment work with a trivial model (a checksum of each
// batch), at 0, 1 and 2 worker threads: how well the worker engine scales the data pipeline; and
// the recsys decoded cache against its compressed shards.
// Datasets are generated once into $TRAINLAB_DATA_DIR (default results/datasets). On a shared
// machine compare worker counts by the medians of interleaved repetitions:
//   build/bench/trainlab_loader_bench --benchmark_counters_tabular=true --benchmark_filter=Vision \
//       --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
#include <benchmark/benchmark.h>

#include <memory>

#include "harness/loader/epoch_sampler.h"
#include "harness/loader/ordered_loader.h"
#include "scenarios/data/dataset_cache.h"
#include "scenarios/data/recsys_data.h"
#include "scenarios/data/vision_data.h"

namespace trainlab {
namespace {

constexpr int64_t kBatchSize = 64;

const SampleSource& vision_jpeg() {
  static const std::unique_ptr<SampleSource> source = [] {
    VisionDataSpec spec;  // the vision scenario's defaults
    spec.image_size = 320;
    return open_vision_jpeg_source(prepare_vision_dataset(default_data_root(), spec).dir, VisionAugment{112, 1.0});
  }();
  return *source;
}

const SampleSource& recsys_shards() {
  static const std::unique_ptr<SampleSource> source = [] {
    RecsysDataSpec spec;  // the recsys scenario's defaults
    return open_recsys_shard_source(prepare_recsys_dataset(default_data_root(), spec).dir, RecsysAugment{32, 1.0});
  }();
  return *source;
}

const SampleSource& recsys_cache() {
  static const std::unique_ptr<SampleSource> source = [] {
    const std::string dir = prepare_recsys_dataset(default_data_root(), RecsysDataSpec{}).dir;
    prepare_recsys_decoded_cache(dir);
    return open_recsys_cache_source(dir, RecsysAugment{32, 1.0});
  }();
  return *source;
}

// The trivial model: touch every byte of the batch once.
uint64_t checksum(const HostBatch& batch) {
  uint64_t sum = 0;
  for (const HostTensor& t : batch.inputs) {
    const auto* bytes = static_cast<const unsigned char*>(t.data);
    for (size_t i = 0; i < t.bytes(); i += 64) sum += bytes[i];
  }
  return sum;
}

void run_loader(benchmark::State& state, const SampleSource& source) {
  const int workers = static_cast<int>(state.range(0));
  EpochSampler sampler(source.num_samples(), kBatchSize, 1);
  OrderedLoader<HostBatch> loader({workers, 2, true}, sampler.batches_per_epoch(),
                                  [&](int64_t k) { return source.load_batch(sampler.request(k), heap_allocator()); });
  int64_t samples = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(checksum(loader.next().batch));
    samples += kBatchSize;
  }
  state.counters["samples_per_s"] = benchmark::Counter(static_cast<double>(samples), benchmark::Counter::kIsRate);
  state.counters["workers"] = workers;
  // The producer's own time per batch (whoever ran it): what the hand-off and the waits add on top.
  const LoaderCounters counters = loader.counters();
  state.counters["build_ms_per_batch"] =
      counters.batches > 0 ? static_cast<double>(counters.worker_busy_ns) / 1e6 / static_cast<double>(counters.batches) : 0;
}

void BM_VisionJpegLoader(benchmark::State& state) { run_loader(state, vision_jpeg()); }
void BM_RecsysShardLoader(benchmark::State& state) { run_loader(state, recsys_shards()); }
void BM_RecsysCacheLoader(benchmark::State& state) { run_loader(state, recsys_cache()); }

// Real time: with workers the main thread mostly waits, so CPU time would say nothing.
BENCHMARK(BM_VisionJpegLoader)->Arg(0)->Arg(1)->Arg(2)->UseRealTime()->MinTime(2.0)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RecsysShardLoader)->Arg(0)->Arg(1)->Arg(2)->UseRealTime()->MinTime(2.0)->Unit(benchmark::kMillisecond);
// The decoded cache ("decode once"): compare with BM_RecsysShardLoader/0.
BENCHMARK(BM_RecsysCacheLoader)->Arg(0)->UseRealTime()->MinTime(2.0)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace trainlab

BENCHMARK_MAIN();
