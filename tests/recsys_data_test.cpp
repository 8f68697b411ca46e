// Recsys data: deterministic generation, shard and decoded-cache sources giving identical batches,
// augmentation properties (crop, masking, negatives), stage timing, and clear errors on corrupt,
// truncated or missing files. Small specs keep the file under a few seconds.
#include "scenarios/data/recsys_data.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

namespace trainlab {
namespace {
namespace fs = std::filesystem;

// A fresh folder under the test temp dir, unique per test.
std::string fresh_root(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string root = ::testing::TempDir() + "trainlab-recsys-" + std::to_string(::getpid()) + "-" +
                           info->test_suite_name() + "-" + info->name() + "-" + name;
  fs::remove_all(root);
  fs::create_directories(root);
  return root;
}

RecsysDataSpec small_spec() {
  RecsysDataSpec spec;
  spec.samples = 300;  // 5 shards of 64 (the last 44), blocks of 8 (the last of each shard partial)
  spec.items = 500;
  spec.categories = 20;
  spec.actions = 4;
  spec.user_vocab = 50;
  spec.user_features = 3;
  spec.mean_history = 40;
  spec.max_history = 100;
  spec.records_per_block = 8;
  spec.records_per_shard = 64;
  spec.seed = 77;
  return spec;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

BatchRequest request_of(std::vector<int64_t> indices, uint64_t seed) {
  BatchRequest request;
  request.sample_indices = std::move(indices);
  request.augment_seed = seed;
  return request;
}

std::vector<int64_t> all_indices(int64_t n) {
  std::vector<int64_t> indices(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) indices[static_cast<size_t>(i)] = i;
  return indices;
}

std::vector<int64_t> scattered_indices(int64_t count, int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> indices;
  for (int64_t i = 0; i < count; ++i)
    indices.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(n)));
  return indices;
}

// Users' whole histories, read straight from the decoded cache file (format: recsys_data.cpp).
struct CachedUser {
  std::vector<int32_t> features, items, categories, actions;
};
std::vector<CachedUser> read_cache_file(const std::string& path, const RecsysDataSpec& spec) {
  const std::string bytes = file_bytes(path);
  const size_t h = static_cast<size_t>(spec.max_history), f = static_cast<size_t>(spec.user_features);
  const size_t row_ints = 1 + f + 3 * h;
  EXPECT_EQ(bytes.size(), 64 + static_cast<size_t>(spec.samples) * row_ints * 4);
  EXPECT_EQ(bytes.substr(0, 8), "TLRSDEC1");
  std::vector<CachedUser> users(static_cast<size_t>(spec.samples));
  for (size_t u = 0; u < users.size(); ++u) {
    std::vector<int32_t> row(row_ints);
    std::memcpy(row.data(), bytes.data() + 64 + u * row_ints * 4, row_ints * 4);
    const auto n = static_cast<size_t>(row[0]);
    users[u].features.assign(row.begin() + 1, row.begin() + 1 + static_cast<ptrdiff_t>(f));
    users[u].items.assign(row.begin() + static_cast<ptrdiff_t>(1 + f),
                          row.begin() + static_cast<ptrdiff_t>(1 + f + n));
    users[u].categories.assign(row.begin() + static_cast<ptrdiff_t>(1 + f + h),
                               row.begin() + static_cast<ptrdiff_t>(1 + f + h + n));
    users[u].actions.assign(row.begin() + static_cast<ptrdiff_t>(1 + f + 2 * h),
                            row.begin() + static_cast<ptrdiff_t>(1 + f + 2 * h + n));
  }
  return users;
}

template <class F>
std::string data_error_message(F&& f) {
  try {
    f();
  } catch (const DataError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("unexpected exception: ") + e.what();
  }
  return "no exception";
}

// Loads every sample, in batches of 64, through a freshly opened source.
void load_everything(const std::string& dir, bool cache) {
  const RecsysAugment augment;
  auto source = cache ? open_recsys_cache_source(dir, augment) : open_recsys_shard_source(dir, augment);
  const auto all = all_indices(source->num_samples());
  for (size_t begin = 0; begin < all.size(); begin += 64) {
    std::vector<int64_t> part(all.begin() + static_cast<ptrdiff_t>(begin),
                              all.begin() + static_cast<ptrdiff_t>(std::min(all.size(), begin + 64)));
    source->load_batch(request_of(part, 1), heap_allocator());
  }
}

// One prepared dataset (and its cache) shared by the read-only tests.
class RecsysDataTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ =
        new std::string(::testing::TempDir() + "trainlab-recsys-" + std::to_string(::getpid()) + "-shared");
    fs::remove_all(*root_);
    dir_ = new std::string(prepare_recsys_dataset(*root_, small_spec()).dir);
    prepare_recsys_decoded_cache(*dir_);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*root_);
    delete root_;
    delete dir_;
  }
  static std::string* root_;
  static std::string* dir_;
};
std::string* RecsysDataTest::root_ = nullptr;
std::string* RecsysDataTest::dir_ = nullptr;

TEST(RecsysGeneration, IsDeterministicAndReused) {
  const std::string root_a = fresh_root("a"), root_b = fresh_root("b");
  const PreparedDataset a = prepare_recsys_dataset(root_a, small_spec());
  const PreparedDataset b = prepare_recsys_dataset(root_b, small_spec());
  EXPECT_TRUE(a.generated);
  EXPECT_TRUE(b.generated);
  EXPECT_EQ(fs::path(a.dir).filename(), fs::path(b.dir).filename());
  for (const char* name : {"index.bin", "shard-00000.zst", "shard-00002.zst", "shard-00004.zst"}) {
    const std::string bytes = file_bytes(a.dir + "/" + name);
    EXPECT_FALSE(bytes.empty()) << name;
    EXPECT_EQ(bytes, file_bytes(b.dir + "/" + name)) << name;
  }
  EXPECT_FALSE(fs::exists(a.dir + "/shard-00005.zst"));

  const PreparedDataset again = prepare_recsys_dataset(root_a, small_spec());
  EXPECT_FALSE(again.generated);
  EXPECT_EQ(again.dir, a.dir);

  RecsysDataSpec other = small_spec();
  other.seed += 1;
  const PreparedDataset c = prepare_recsys_dataset(root_a, other);
  EXPECT_NE(c.dir, a.dir);
  EXPECT_NE(file_bytes(c.dir + "/shard-00000.zst"), file_bytes(a.dir + "/shard-00000.zst"));
  fs::remove_all(root_a);
  fs::remove_all(root_b);
}

TEST(RecsysGeneration, RejectsBadSpecs) {
  const std::string root = fresh_root("x");
  RecsysDataSpec spec = small_spec();
  spec.mean_history = spec.max_history + 1;
  EXPECT_THROW(prepare_recsys_dataset(root, spec), InputError);
  spec = small_spec();
  spec.items = 1;
  EXPECT_THROW(prepare_recsys_dataset(root, spec), InputError);
  fs::remove_all(root);
}

TEST_F(RecsysDataTest, HistoriesFollowTheSpec) {
  const RecsysDataSpec spec = small_spec();
  const auto users = read_cache_file(*dir_ + "/decoded_histories.bin", spec);
  double length_sum = 0;
  int64_t transitions = 0, markov_steps = 0;
  for (const CachedUser& u : users) {
    ASSERT_GE(u.items.size(), static_cast<size_t>(std::max<int64_t>(2, spec.mean_history / 4)));
    ASSERT_LE(u.items.size(), static_cast<size_t>(spec.max_history));
    length_sum += static_cast<double>(u.items.size());
    for (int32_t f : u.features) ASSERT_TRUE(f >= 0 && f < spec.user_vocab);
    for (size_t e = 0; e < u.items.size(); ++e) {
      ASSERT_TRUE(u.items[e] >= 0 && u.items[e] < spec.items);
      ASSERT_EQ(u.categories[e], u.items[e] % spec.categories);
      ASSERT_TRUE(u.actions[e] >= 0 && u.actions[e] < spec.actions);
      if (e > 0) {
        ++transitions;
        if (u.items[e] == (u.items[e - 1] * 31 + 7) % spec.items) ++markov_steps;
      }
    }
  }
  const double mean_length = length_sum / static_cast<double>(users.size());
  EXPECT_NEAR(mean_length, static_cast<double>(spec.mean_history),
              0.15 * static_cast<double>(spec.mean_history));
  EXPECT_NEAR(static_cast<double>(markov_steps) / static_cast<double>(transitions), 0.8, 0.03);
}

TEST_F(RecsysDataTest, ShardAndCacheSourcesGiveIdenticalBatches) {
  const RecsysAugment augment;
  auto shards = open_recsys_shard_source(*dir_, augment);
  auto cache = open_recsys_cache_source(*dir_, augment);
  ASSERT_EQ(shards->num_samples(), 300);
  ASSERT_EQ(cache->num_samples(), 300);
  EXPECT_NE(shards->describe().find("zstd shards: 300 users"), std::string::npos) << shards->describe();
  EXPECT_NE(shards->describe().find(*dir_), std::string::npos);
  EXPECT_NE(cache->describe().find("300 users"), std::string::npos) << cache->describe();

  const std::vector<BatchRequest> requests = {request_of(scattered_indices(64, 300, 1), 11),
                                              request_of({299, 0, 0, 63, 64, 7, 8, 298}, 12),
                                              request_of(all_indices(300), 13), request_of({}, 14)};
  for (const BatchRequest& request : requests) {
    const HostBatch a = shards->load_batch(request, heap_allocator());
    const HostBatch b = cache->load_batch(request, heap_allocator());
    EXPECT_EQ(hash_host_batch(a), hash_host_batch(b)) << request.sample_indices.size() << " samples";
    EXPECT_EQ(a.samples, static_cast<int64_t>(request.sample_indices.size()));
    EXPECT_EQ(b.stage_ns.decode_ns, 0);
  }
}

TEST_F(RecsysDataTest, BatchesArePureFunctionsOfIndicesAndSeed) {
  const RecsysAugment augment;
  auto shards = open_recsys_shard_source(*dir_, augment);
  const BatchRequest request = request_of(scattered_indices(64, 300, 2), 5);
  const uint64_t first = hash_host_batch(shards->load_batch(request, heap_allocator()));
  EXPECT_EQ(first, hash_host_batch(shards->load_batch(request, heap_allocator())));
  EXPECT_NE(first,
            hash_host_batch(shards->load_batch(request_of(request.sample_indices, 6), heap_allocator())));

  // Same hashes when built on several threads at once.
  std::vector<BatchRequest> requests;
  for (uint64_t i = 0; i < 8; ++i) requests.push_back(request_of(scattered_indices(32, 300, 100 + i), i));
  std::vector<uint64_t> serial, parallel(requests.size());
  for (const BatchRequest& r : requests)
    serial.push_back(hash_host_batch(shards->load_batch(r, heap_allocator())));
  std::vector<std::thread> threads;
  for (size_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = t; i < requests.size(); i += 4) {
        parallel[i] = hash_host_batch(shards->load_batch(requests[i], heap_allocator()));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(serial, parallel);
}

TEST_F(RecsysDataTest, ShapesTypesAndValues) {
  const RecsysDataSpec spec = small_spec();
  const auto users = read_cache_file(*dir_ + "/decoded_histories.bin", spec);
  RecsysAugment augment;
  augment.seq_len = 16;
  augment.intensity = 1.0;
  const int64_t negatives = recsys_negatives(augment);
  EXPECT_EQ(negatives, 32);
  auto source = open_recsys_shard_source(*dir_, augment);
  const BatchRequest request = request_of(scattered_indices(64, 300, 3), 9);
  const HostBatch batch = source->load_batch(request, heap_allocator());
  ASSERT_EQ(batch.inputs.size(), 5u);
  const std::vector<std::vector<int64_t>> shapes = {{64, 16}, {64, 16}, {64, 16}, {64, 3}, {64, negatives}};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(batch.inputs[i].type, ElementType::kInt64);
    EXPECT_EQ(batch.inputs[i].shape, shapes[i]);
  }
  EXPECT_EQ(batch.targets.type, ElementType::kInt64);
  EXPECT_EQ(batch.targets.shape, std::vector<int64_t>{64});
  EXPECT_EQ(batch.samples, 64);

  const int64_t mask = recsys_mask_token(spec.items), pad = recsys_pad_token(spec.items);
  int64_t masked = 0;
  for (int64_t b = 0; b < 64; ++b) {
    const CachedUser& user = users[static_cast<size_t>(request.sample_indices[static_cast<size_t>(b)])];
    const int64_t target = batch.targets.as<int64_t>()[b];
    EXPECT_TRUE(target >= 0 && target < spec.items);
    EXPECT_NE(std::find(user.items.begin() + 1, user.items.end(), target), user.items.end());
    const std::set<int64_t> history(user.items.begin(), user.items.end());
    for (int64_t k = 0; k < negatives; ++k) {
      const int64_t negative = batch.inputs[4].as<int64_t>()[b * negatives + k];
      EXPECT_TRUE(negative >= 0 && negative < spec.items) << negative;
      EXPECT_EQ(history.count(negative), 0u) << "negative " << negative << " is in user's history";
    }
    const int64_t* items = batch.inputs[0].as<int64_t>() + b * 16;
    const int64_t* categories = batch.inputs[1].as<int64_t>() + b * 16;
    EXPECT_NE(items[15], mask) << "the last input position is never masked";
    EXPECT_NE(items[15], pad);
    bool seen_real = false;
    for (int64_t s = 0; s < 16; ++s) {
      if (items[s] == pad) {
        EXPECT_FALSE(seen_real) << "padding is on the left";
        EXPECT_EQ(categories[s], 0);
        continue;
      }
      seen_real = true;
      if (items[s] == mask) {
        ++masked;
        continue;
      }
      EXPECT_TRUE(items[s] >= 0 && items[s] < spec.items);
      EXPECT_EQ(categories[s], items[s] % spec.categories);
      EXPECT_EQ(history.count(items[s]), 1u);
    }
    for (int64_t f = 0; f < 3; ++f) {
      EXPECT_EQ(batch.inputs[3].as<int64_t>()[b * 3 + f], user.features[static_cast<size_t>(f)]);
    }
  }
  EXPECT_GT(masked, 0);
}

TEST_F(RecsysDataTest, IntensityZeroMeansNoMaskAndNoNegatives) {
  const RecsysDataSpec spec = small_spec();
  const auto users = read_cache_file(*dir_ + "/decoded_histories.bin", spec);
  RecsysAugment augment;
  augment.seq_len = 200;  // longer than any history: the window is the whole prefix before the target
  augment.intensity = 0;
  EXPECT_EQ(recsys_negatives(augment), 0);
  auto source = open_recsys_cache_source(*dir_, augment);
  const BatchRequest request = request_of(all_indices(300), 4);
  const HostBatch batch = source->load_batch(request, heap_allocator());
  EXPECT_EQ(batch.inputs[4].shape, (std::vector<int64_t>{300, 0}));
  for (int64_t b = 0; b < 300; ++b) {
    const CachedUser& user = users[static_cast<size_t>(b)];
    const int64_t* items = batch.inputs[0].as<int64_t>() + b * 200;
    const int64_t* actions = batch.inputs[2].as<int64_t>() + b * 200;
    int64_t s = 0;
    while (s < 200 && items[s] == recsys_pad_token(spec.items)) ++s;
    const int64_t window = 200 - s;  // = target position t; the window is events [0, t)
    ASSERT_GE(window, 1);
    ASSERT_LT(window, static_cast<int64_t>(user.items.size()));
    for (int64_t j = 0; j < window; ++j) {
      ASSERT_EQ(items[s + j], user.items[static_cast<size_t>(j)]);
      ASSERT_EQ(actions[s + j], user.actions[static_cast<size_t>(j)]);
    }
    EXPECT_EQ(batch.targets.as<int64_t>()[b], user.items[static_cast<size_t>(window)]);
  }
}

TEST_F(RecsysDataTest, StagesAccountForTheWallTime) {
  auto shards = open_recsys_shard_source(*dir_, RecsysAugment{});
  auto cache = open_recsys_cache_source(*dir_, RecsysAugment{});
  for (const SampleSource* source : {shards.get(), cache.get()}) {
    // Best of a few tries: on a shared machine a preemption outside the stages can skew one call.
    double best_error = 1e9;
    for (int attempt = 0; attempt < 5 && best_error > 0.10; ++attempt) {
      const BatchRequest request =
          request_of(scattered_indices(64, 300, 40 + static_cast<uint64_t>(attempt)), 3);
      const int64_t start_ns = monotonic_ns();
      const HostBatch batch = source->load_batch(request, heap_allocator());
      const int64_t wall_ns = monotonic_ns() - start_ns;
      EXPECT_GT(batch.stage_ns.read_ns, 0);
      EXPECT_GT(batch.stage_ns.augment_ns, 0);
      EXPECT_GT(batch.stage_ns.collate_ns, 0);
      best_error = std::min(best_error, std::abs(static_cast<double>(batch.stage_ns.total_ns() - wall_ns)) /
                                            static_cast<double>(wall_ns));
    }
    EXPECT_LE(best_error, 0.10) << source->describe();
  }
}

TEST_F(RecsysDataTest, IndicesOutOfRangeThrow) {
  auto shards = open_recsys_shard_source(*dir_, RecsysAugment{});
  auto cache = open_recsys_cache_source(*dir_, RecsysAugment{});
  for (const SampleSource* source : {shards.get(), cache.get()}) {
    EXPECT_THROW(source->load_batch(request_of({0, 300}, 1), heap_allocator()), std::out_of_range);
    EXPECT_THROW(source->load_batch(request_of({-1}, 1), heap_allocator()), std::out_of_range);
  }
}

TEST(RecsysErrors, FlippedBytesInAShardAreReported) {
  const std::string root = fresh_root("flip");
  const std::string dir = prepare_recsys_dataset(root, small_spec()).dir;
  const std::string shard = dir + "/shard-00001.zst";
  {
    std::fstream file(shard, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(0, std::ios::end);
    const auto size = static_cast<int64_t>(file.tellg());
    for (int64_t i = size / 2; i < size / 2 + 16; ++i) {
      file.seekg(i);
      const char c = static_cast<char>(file.get());
      file.seekp(i);
      file.put(static_cast<char>(c ^ 0x5a));
    }
  }
  const std::string message = data_error_message([&] { load_everything(dir, false); });
  EXPECT_NE(message.find(shard), std::string::npos) << message;
  EXPECT_NE(message.find("corrupt shard"), std::string::npos) << message;
  // Building the cache decodes everything too: same error, and no cache file is left behind.
  const std::string cache_message = data_error_message([&] { prepare_recsys_decoded_cache(dir); });
  EXPECT_NE(cache_message.find(shard), std::string::npos) << cache_message;
  EXPECT_FALSE(fs::exists(dir + "/decoded_histories.bin"));
  fs::remove_all(root);
}

TEST(RecsysErrors, GarbageShardNeverCrashes) {
  const std::string root = fresh_root("garbage");
  const std::string dir = prepare_recsys_dataset(root, small_spec()).dir;
  const std::string shard = dir + "/shard-00000.zst";
  const auto size = static_cast<size_t>(fs::file_size(shard));
  std::mt19937_64 rng(5);
  std::string garbage(size, '\0');
  for (char& c : garbage) c = static_cast<char>(rng());
  { std::ofstream(shard, std::ios::binary | std::ios::trunc) << garbage; }
  const std::string message = data_error_message([&] { load_everything(dir, false); });
  EXPECT_NE(message.find(shard), std::string::npos) << message;
  fs::remove_all(root);
}

// Rewrites shard 0 and the index from their original bytes with block 0's decompressed payload
// changed by mutate, recompressed (with checksum) so that only the block parser can notice.
void rewrite_first_block(const std::string& dir, const std::string& original_shard,
                         const std::string& original_index,
                         const std::function<void(std::string& raw)>& mutate) {
  std::string index = original_index, shard;
  uint32_t blocks = 0;
  std::memcpy(&blocks, index.data() + 12, 4);
  for (uint32_t b = 0; b < blocks; ++b) {
    char* entry = index.data() + 24 + 32 * b;
    uint32_t shard_number = 0, compressed_bytes = 0, raw_bytes = 0;
    uint64_t offset = 0;
    std::memcpy(&shard_number, entry, 4);
    std::memcpy(&offset, entry + 16, 8);
    std::memcpy(&compressed_bytes, entry + 24, 4);
    std::memcpy(&raw_bytes, entry + 28, 4);
    if (shard_number != 0) break;
    std::string compressed = original_shard.substr(offset, compressed_bytes);
    if (b == 0) {
      std::string raw(raw_bytes, '\0');
      ASSERT_EQ(ZSTD_decompress(raw.data(), raw.size(), compressed.data(), compressed.size()), raw.size());
      mutate(raw);
      ZSTD_CCtx* cctx = ZSTD_createCCtx();
      ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
      compressed.resize(ZSTD_compressBound(raw.size()));
      const size_t n = ZSTD_compress2(cctx, compressed.data(), compressed.size(), raw.data(), raw.size());
      ZSTD_freeCCtx(cctx);
      ASSERT_FALSE(ZSTD_isError(n));
      compressed.resize(n);
      raw_bytes = static_cast<uint32_t>(raw.size());
      compressed_bytes = static_cast<uint32_t>(n);
    }
    offset = shard.size();
    shard += compressed;
    std::memcpy(entry + 16, &offset, 8);
    std::memcpy(entry + 24, &compressed_bytes, 4);
    std::memcpy(entry + 28, &raw_bytes, 4);
  }
  std::ofstream(dir + "/shard-00000.zst", std::ios::binary | std::ios::trunc) << shard;
  std::ofstream(dir + "/index.bin", std::ios::binary | std::ios::trunc) << index;
}

TEST(RecsysErrors, BadBlockPayloadIsReportedNeverCrashes) {
  const std::string root = fresh_root("payload");
  const std::string dir = prepare_recsys_dataset(root, small_spec()).dir;
  const std::string shard_path = dir + "/shard-00000.zst";
  const std::string shard = file_bytes(shard_path), index = file_bytes(dir + "/index.bin");

  // Block header: 7 varints (record count, first record, the byte sizes of the 5 columns).
  struct Header {
    size_t bytes = 0;
    uint64_t column_bytes[5] = {};
    size_t column_offset(int column) const {
      size_t offset = bytes;
      for (int c = 0; c < column; ++c) offset += column_bytes[c];
      return offset;
    }
  };
  auto parse_header = [](const std::string& raw) {
    Header h;
    for (int field = 0; field < 7; ++field) {
      uint64_t value = 0;
      for (int shift = 0;; shift += 7) {
        const auto byte = static_cast<unsigned char>(raw[h.bytes++]);
        value |= static_cast<uint64_t>(byte & 0x7f) << shift;
        if ((byte & 0x80) == 0) break;
      }
      if (field >= 2) h.column_bytes[field - 2] = value;
    }
    return h;
  };
  auto varint = [](uint64_t value) {
    std::string out;
    for (; value >= 0x80; value >>= 7) out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    out.push_back(static_cast<char>(value));
    return out;
  };
  const std::vector<std::pair<std::string, std::function<void(std::string&)>>> mutations = {
      {"history length", [&](std::string& raw) { raw[parse_header(raw).column_offset(0)] = 1; }},
      {"varint overflow in user features",
       [&](std::string& raw) {  // 11 bytes in place inside the 24-byte user feature column
         raw.replace(parse_header(raw).column_offset(1), 11, std::string(10, '\xff') + "\x01");
       }},
      {"user feature 127 out of range",
       [&](std::string& raw) { raw[parse_header(raw).column_offset(1)] = 127; }},
      {"item delta",
       [&](std::string& raw) { raw.replace(parse_header(raw).column_offset(2), 2, "\xff\x7f"); }},
      {"record count", [](std::string& raw) { raw[0] = 7; }},
      {"column size", [](std::string& raw) { raw.resize(raw.size() / 2); }},
      {"trailing bytes in actions",
       [&](std::string& raw) {  // one more byte in the actions column, its size in the header to match
         const Header h = parse_header(raw);
         std::string header;
         for (size_t p = 0, field = 0; field < 7; ++field) {
           const size_t begin = p;
           while (static_cast<unsigned char>(raw[p]) & 0x80) ++p;
           ++p;
           header += field == 6 ? varint(h.column_bytes[4] + 1) : raw.substr(begin, p - begin);
         }
         raw = header + raw.substr(h.bytes) + "\x01";
       }},
  };
  for (const auto& [expected, mutate] : mutations) {
    rewrite_first_block(dir, shard, index, mutate);
    const std::string message = data_error_message([&] { load_everything(dir, false); });
    EXPECT_NE(message.find(shard_path + ": corrupt shard: block 0"), std::string::npos) << message;
    EXPECT_NE(message.find(expected), std::string::npos) << message;
  }

  // Random byte changes in the payload: either still a valid block (e.g. another action id) or a
  // DataError naming the shard; never a crash, hang or other exception.
  std::mt19937_64 rng(11);
  int errors = 0;
  for (int trial = 0; trial < 200; ++trial) {
    rewrite_first_block(dir, shard, index, [&](std::string& raw) {
      for (int k = 0; k < 4; ++k) raw[rng() % raw.size()] = static_cast<char>(rng());
    });
    const std::string message = data_error_message([&] { load_everything(dir, false); });
    if (message == "no exception") continue;
    ++errors;
    EXPECT_NE(message.find(shard_path), std::string::npos) << message;
  }
  EXPECT_GT(errors, 20);
  fs::remove_all(root);
}

TEST(RecsysErrors, TruncatedShardIsReported) {
  const std::string root = fresh_root("truncate");
  const std::string dir = prepare_recsys_dataset(root, small_spec()).dir;
  const std::string shard = dir + "/shard-00002.zst";
  fs::resize_file(shard, fs::file_size(shard) / 2);
  const std::string message = data_error_message([&] { load_everything(dir, false); });
  EXPECT_NE(message.find(shard), std::string::npos) << message;
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
  fs::remove_all(root);
}

TEST(RecsysErrors, TruncatedOrMissingCacheIsReported) {
  const std::string root = fresh_root("cache");
  const std::string dir = prepare_recsys_dataset(root, small_spec()).dir;
  const std::string cache = dir + "/decoded_histories.bin";
  const std::string missing = data_error_message([&] { load_everything(dir, true); });
  EXPECT_NE(missing.find(cache), std::string::npos) << missing;
  EXPECT_EQ(prepare_recsys_decoded_cache(dir), cache);
  load_everything(dir, true);
  fs::resize_file(cache, fs::file_size(cache) - 100);
  const std::string truncated = data_error_message([&] { load_everything(dir, true); });
  EXPECT_NE(truncated.find(cache), std::string::npos) << truncated;
  EXPECT_NE(truncated.find("truncated"), std::string::npos) << truncated;
  fs::resize_file(cache, 10);
  const std::string tiny = data_error_message([&] { load_everything(dir, true); });
  EXPECT_NE(tiny.find(cache), std::string::npos) << tiny;
  fs::remove_all(root);
}

TEST(RecsysErrors, MissingFolderOrIndexIsReported) {
  const std::string root = fresh_root("missing");
  const std::string nowhere = root + "/no-such-dataset";
  for (bool cache : {false, true}) {
    try {
      load_everything(nowhere, cache);
      ADD_FAILURE() << "no exception";
    } catch (const InputError& e) {  // DataError is an InputError
      EXPECT_NE(std::string(e.what()).find(nowhere), std::string::npos) << e.what();
    }
  }
  const std::string dir = prepare_recsys_dataset(root, small_spec()).dir;
  fs::remove(dir + "/index.bin");
  const std::string message = data_error_message([&] { load_everything(dir, false); });
  EXPECT_NE(message.find(dir + "/index.bin"), std::string::npos) << message;
  { std::ofstream(dir + "/index.bin", std::ios::binary) << "TLRSIDX1 garbage"; }
  const std::string malformed = data_error_message([&] { load_everything(dir, false); });
  EXPECT_NE(malformed.find("malformed"), std::string::npos) << malformed;
  fs::remove_all(root);
}

}  // namespace
}  // namespace trainlab
