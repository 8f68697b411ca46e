// Tests of the vision dataset: generate-once JPEG folders, the decoded cache, batch determinism,
// JPEG vs cache agreement, stage timing, and clear errors for truncated or missing files. Real
// files in a temporary folder; small images so the whole file runs in a few seconds.
#include "scenarios/data/vision_data.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace trainlab {
namespace {
namespace fs = std::filesystem;

std::string unique_temp_dir(const std::string& name) {
  static int counter = 0;
  const fs::path dir = fs::path(::testing::TempDir()) /
                       ("trainlab-vision-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

VisionDataSpec small_spec() {
  VisionDataSpec spec;
  spec.samples = 40;
  spec.image_size = 64;
  spec.quality = 90;
  spec.classes = 5;
  spec.seed = 77;
  return spec;
}

BatchRequest request_for(std::vector<int64_t> indices, uint64_t seed) {
  BatchRequest request;
  request.sample_indices = std::move(indices);
  request.augment_seed = seed;
  return request;
}

std::vector<int64_t> first_indices(int64_t n) {
  std::vector<int64_t> indices(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) indices[static_cast<size_t>(i)] = (i * 7) % 40;
  return indices;
}

// One dataset (with its decoded cache) shared by the read-only tests.
class VisionSourceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new std::string(unique_temp_dir("shared"));
    dir_ = new std::string(prepare_vision_dataset(*root_, small_spec()).dir);
    prepare_vision_decoded_cache(*dir_);
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(*root_, ec);
    delete root_;
    delete dir_;
  }
  static std::string* root_;
  static std::string* dir_;
};
std::string* VisionSourceTest::root_ = nullptr;
std::string* VisionSourceTest::dir_ = nullptr;

TEST(VisionDatasetTest, GenerationIsDeterministicAndReused) {
  const std::string root_a = unique_temp_dir("a"), root_b = unique_temp_dir("b");
  const PreparedDataset a = prepare_vision_dataset(root_a, small_spec());
  const PreparedDataset b = prepare_vision_dataset(root_b, small_spec());
  EXPECT_TRUE(a.generated);
  EXPECT_TRUE(b.generated);
  EXPECT_EQ(fs::path(a.dir).filename(), fs::path(b.dir).filename());
  for (int i = 0; i < small_spec().samples; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "/images/%06d.jpg", i);
    const std::string bytes_a = file_bytes(a.dir + name);
    ASSERT_GT(bytes_a.size(), 1000u) << a.dir + name;
    ASSERT_EQ(bytes_a, file_bytes(b.dir + name)) << name;
  }
  EXPECT_EQ(file_bytes(a.dir + "/labels.bin"), file_bytes(b.dir + "/labels.bin"));
  EXPECT_EQ(file_bytes(a.dir + "/labels.bin").size(), static_cast<size_t>(small_spec().samples) * 4);

  const PreparedDataset again = prepare_vision_dataset(root_a, small_spec());
  EXPECT_FALSE(again.generated);
  EXPECT_EQ(again.dir, a.dir);
  fs::remove_all(root_a);
  fs::remove_all(root_b);
}

TEST(VisionDatasetTest, DifferentParameterGivesDifferentFolder) {
  const std::string root = unique_temp_dir("params");
  VisionDataSpec other = small_spec();
  other.seed += 1;
  other.samples = 8;
  VisionDataSpec other_quality = other;
  other_quality.quality = 75;
  const std::string dir_a = prepare_vision_dataset(root, other).dir;
  const std::string dir_b = prepare_vision_dataset(root, other_quality).dir;
  EXPECT_NE(dir_a, dir_b);
  EXPECT_LT(fs::file_size(dir_b + "/images/000000.jpg"), fs::file_size(dir_a + "/images/000000.jpg"));
  fs::remove_all(root);
}

TEST(VisionDatasetTest, BadSpecIsInputError) {
  VisionDataSpec spec = small_spec();
  spec.quality = 0;
  const std::string root = unique_temp_dir("bad");
  EXPECT_THROW(prepare_vision_dataset(root, spec), InputError);
  spec = small_spec();
  spec.image_size = 4;
  EXPECT_THROW(prepare_vision_dataset(root, spec), InputError);
  fs::remove_all(root);
}

TEST_F(VisionSourceTest, ShapesTypesAndValueRange) {
  const auto source = open_vision_jpeg_source(*dir_, VisionAugment{48, 1.0});
  EXPECT_EQ(source->num_samples(), 40);
  EXPECT_NE(source->describe().find("jpeg: 40 images 64x64 q90, 5 classes"), std::string::npos) << source->describe();
  const HostBatch batch = source->load_batch(request_for(first_indices(12), 5), heap_allocator());
  EXPECT_EQ(batch.samples, 12);
  ASSERT_EQ(batch.inputs.size(), 1u);
  EXPECT_EQ(batch.inputs[0].type, ElementType::kFloat32);
  EXPECT_EQ(batch.inputs[0].shape, (std::vector<int64_t>{12, 3, 48, 48}));
  EXPECT_EQ(batch.targets.type, ElementType::kInt64);
  EXPECT_EQ(batch.targets.shape, (std::vector<int64_t>{12}));
  std::set<int64_t> classes;
  for (int64_t i = 0; i < 12; ++i) {
    const int64_t label = batch.targets.as<int64_t>()[i];
    EXPECT_GE(label, 0);
    EXPECT_LT(label, 5);
    classes.insert(label);
  }
  EXPECT_GE(classes.size(), 2u);
  // Normalised [0, 1] values lie in [(0 - 0.485) / 0.229, (1 - 0.406) / 0.225] = [-2.12, 2.64].
  const float* values = batch.inputs[0].as<float>();
  double sum = 0, sum_squares = 0;
  const int64_t n = batch.inputs[0].numel();
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_TRUE(std::isfinite(values[i]));
    ASSERT_GE(values[i], -2.12f);
    ASSERT_LE(values[i], 2.65f);
    sum += values[i];
    sum_squares += static_cast<double>(values[i]) * values[i];
  }
  const double mean = sum / static_cast<double>(n);
  const double sd = std::sqrt(sum_squares / static_cast<double>(n) - mean * mean);
  EXPECT_LT(std::abs(mean), 1.5);
  EXPECT_GT(sd, 0.2);

  const auto cache = open_vision_cache_source(*dir_, VisionAugment{48, 1.0});
  EXPECT_NE(cache->describe().find("decoded cache: 40 images 64x64"), std::string::npos) << cache->describe();
}

TEST_F(VisionSourceTest, SameRequestSameBatchOnAnyThread) {
  const auto source = open_vision_jpeg_source(*dir_, VisionAugment{40, 1.0});
  const BatchRequest request = request_for(first_indices(16), 42);
  const uint64_t expected = hash_host_batch(source->load_batch(request, heap_allocator()));
  std::vector<uint64_t> hashes(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < hashes.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int repeat = 0; repeat < 3; ++repeat) hashes[t] = hash_host_batch(source->load_batch(request, heap_allocator()));
    });
  }
  for (std::thread& t : threads) t.join();
  for (uint64_t hash : hashes) EXPECT_EQ(hash, expected);
}

TEST_F(VisionSourceTest, DifferentAugmentSeedDifferentBatch) {
  const auto source = open_vision_jpeg_source(*dir_, VisionAugment{40, 1.0});
  const auto indices = first_indices(8);
  EXPECT_NE(hash_host_batch(source->load_batch(request_for(indices, 1), heap_allocator())),
            hash_host_batch(source->load_batch(request_for(indices, 2), heap_allocator())));
  // At intensity 0 there is no randomness: the seed does not matter.
  const auto plain = open_vision_jpeg_source(*dir_, VisionAugment{40, 0.0});
  EXPECT_EQ(hash_host_batch(plain->load_batch(request_for(indices, 1), heap_allocator())),
            hash_host_batch(plain->load_batch(request_for(indices, 2), heap_allocator())));
}

TEST_F(VisionSourceTest, SamplesDependOnPositionNotOnBatchMates) {
  const auto source = open_vision_jpeg_source(*dir_, VisionAugment{32, 1.0});
  const HostBatch pair = source->load_batch(request_for({3, 9}, 11), heap_allocator());
  const HostBatch other_mate = source->load_batch(request_for({3, 17}, 11), heap_allocator());
  const size_t image_floats = 3 * 32 * 32;
  EXPECT_TRUE(std::equal(pair.inputs[0].as<float>(), pair.inputs[0].as<float>() + image_floats,
                         other_mate.inputs[0].as<float>()));
}

TEST_F(VisionSourceTest, JpegAndCacheSourcesAgree) {
  for (double intensity : {0.0, 1.0, 2.5}) {
    const VisionAugment augment{56, intensity};
    const auto jpeg = open_vision_jpeg_source(*dir_, augment);
    const auto cache = open_vision_cache_source(*dir_, augment);
    EXPECT_EQ(cache->num_samples(), jpeg->num_samples());
    const BatchRequest request = request_for(first_indices(20), 9);
    const HostBatch from_jpeg = jpeg->load_batch(request, heap_allocator());
    const HostBatch from_cache = cache->load_batch(request, heap_allocator());
    ASSERT_EQ(from_jpeg.targets.numel(), from_cache.targets.numel());
    for (int64_t i = 0; i < from_jpeg.targets.numel(); ++i) {
      EXPECT_EQ(from_jpeg.targets.as<int64_t>()[i], from_cache.targets.as<int64_t>()[i]);
    }
    // The cache holds exactly the decoded bytes, so the batches are identical, not just close.
    float max_difference = 0;
    for (int64_t i = 0; i < from_jpeg.inputs[0].numel(); ++i) {
      max_difference =
          std::max(max_difference, std::abs(from_jpeg.inputs[0].as<float>()[i] - from_cache.inputs[0].as<float>()[i]));
    }
    EXPECT_EQ(max_difference, 0.f) << "intensity " << intensity;
    EXPECT_EQ(hash_host_batch(from_jpeg), hash_host_batch(from_cache)) << "intensity " << intensity;
  }
}

TEST_F(VisionSourceTest, StageTimesAccountForWallTime) {
  const auto jpeg = open_vision_jpeg_source(*dir_, VisionAugment{64, 1.0});
  const auto cache = open_vision_cache_source(*dir_, VisionAugment{64, 1.0});
  std::vector<int64_t> indices(32);
  for (int64_t i = 0; i < 32; ++i) indices[static_cast<size_t>(i)] = (i * 13) % 40;
  const BatchRequest request = request_for(indices, 3);
  for (const SampleSource* source : {jpeg.get(), cache.get()}) {
    source->load_batch(request, heap_allocator());  // warm caches
    const int64_t start_ns = monotonic_ns();
    const HostBatch batch = source->load_batch(request, heap_allocator());
    const int64_t wall_ns = monotonic_ns() - start_ns;
    const StageTimes& stages = batch.stage_ns;
    EXPECT_GT(stages.read_ns, 0) << source->describe();
    EXPECT_GT(stages.augment_ns, 0) << source->describe();
    EXPECT_GT(stages.collate_ns, 0) << source->describe();
    if (source == jpeg.get()) {
      EXPECT_GT(stages.decode_ns, 0);
    } else {
      EXPECT_EQ(stages.decode_ns, 0);
    }
    EXPECT_LE(stages.total_ns(), wall_ns);
    EXPECT_GE(static_cast<double>(stages.total_ns()), 0.9 * static_cast<double>(wall_ns))
        << "stages " << stages.total_ns() << " ns of " << wall_ns << " ns wall, " << source->describe();
  }
}

TEST_F(VisionSourceTest, OutOfRangeIndexThrows) {
  const auto source = open_vision_jpeg_source(*dir_, VisionAugment{32, 1.0});
  EXPECT_THROW(source->load_batch(request_for({0, 40}, 1), heap_allocator()), std::out_of_range);
  EXPECT_THROW(source->load_batch(request_for({-1}, 1), heap_allocator()), std::out_of_range);
  const auto cache = open_vision_cache_source(*dir_, VisionAugment{32, 1.0});
  EXPECT_THROW(cache->load_batch(request_for({40}, 1), heap_allocator()), std::out_of_range);
}

TEST_F(VisionSourceTest, BadAugmentIsInputError) {
  EXPECT_THROW(open_vision_jpeg_source(*dir_, VisionAugment{0, 1.0}), InputError);
  EXPECT_THROW(open_vision_jpeg_source(*dir_, VisionAugment{32, -1.0}), InputError);
}

std::string expect_data_error(const std::function<void()>& action) {
  try {
    action();
  } catch (const DataError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected DataError, got: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected DataError, nothing thrown";
  return "";
}

VisionDataSpec tiny_spec(uint64_t seed) {
  VisionDataSpec spec = small_spec();
  spec.samples = 6;
  spec.seed = seed;
  return spec;
}

TEST(VisionErrorsTest, TruncatedJpegNamesTheFile) {
  const std::string root = unique_temp_dir("truncated-jpeg");
  const std::string dir = prepare_vision_dataset(root, tiny_spec(5)).dir;
  const std::string victim = dir + "/images/000002.jpg";
  fs::resize_file(victim, fs::file_size(victim) / 2);
  const auto source = open_vision_jpeg_source(dir, VisionAugment{32, 1.0});
  EXPECT_NO_THROW(source->load_batch(request_for({0, 1, 3}, 1), heap_allocator()));
  const std::string what = expect_data_error([&] { source->load_batch(request_for({1, 2}, 1), heap_allocator()); });
  EXPECT_NE(what.find(victim), std::string::npos) << what;
  EXPECT_NE(what.find("corrupt JPEG"), std::string::npos) << what;
  // Building the decoded cache decodes every file, so it fails the same way (and leaves no file).
  const std::string cache_what = expect_data_error([&] { prepare_vision_decoded_cache(dir); });
  EXPECT_NE(cache_what.find(victim), std::string::npos) << cache_what;
  EXPECT_FALSE(fs::exists(dir + "/decoded_rgb.bin"));
  fs::remove_all(root);
}

TEST(VisionErrorsTest, MissingJpegNamesTheFile) {
  const std::string root = unique_temp_dir("missing-jpeg");
  const std::string dir = prepare_vision_dataset(root, tiny_spec(6)).dir;
  const std::string victim = dir + "/images/000004.jpg";
  fs::remove(victim);
  const auto source = open_vision_jpeg_source(dir, VisionAugment{32, 1.0});
  const std::string what = expect_data_error([&] { source->load_batch(request_for({4}, 1), heap_allocator()); });
  EXPECT_NE(what.find(victim), std::string::npos) << what;
  fs::remove_all(root);
}

TEST(VisionErrorsTest, TruncatedCacheNamesTheFile) {
  const std::string root = unique_temp_dir("truncated-cache");
  const std::string dir = prepare_vision_dataset(root, tiny_spec(7)).dir;
  const std::string cache_path = prepare_vision_decoded_cache(dir);
  EXPECT_EQ(cache_path, dir + "/decoded_rgb.bin");
  EXPECT_EQ(fs::file_size(cache_path), 64u + 6u * 64 * 64 * 3);
  EXPECT_NO_THROW(open_vision_cache_source(dir, VisionAugment{32, 1.0}));
  fs::resize_file(cache_path, fs::file_size(cache_path) - 1000);
  const std::string what = expect_data_error([&] { open_vision_cache_source(dir, VisionAugment{32, 1.0}); });
  EXPECT_NE(what.find(cache_path), std::string::npos) << what;
  EXPECT_NE(what.find("truncated"), std::string::npos) << what;
  fs::resize_file(cache_path, 10);
  const std::string short_what = expect_data_error([&] { open_vision_cache_source(dir, VisionAugment{32, 1.0}); });
  EXPECT_NE(short_what.find(cache_path), std::string::npos) << short_what;
  fs::remove_all(root);
}

TEST(VisionErrorsTest, MissingFolderOrFilesNameThem) {
  const std::string root = unique_temp_dir("missing");
  const std::string absent = root + "/vision-nonexistent";
  std::string what = expect_data_error([&] { open_vision_jpeg_source(absent, VisionAugment{}); });
  EXPECT_NE(what.find(absent), std::string::npos) << what;
  what = expect_data_error([&] { open_vision_cache_source(absent, VisionAugment{}); });
  EXPECT_NE(what.find(absent), std::string::npos) << what;

  const std::string dir = prepare_vision_dataset(root, tiny_spec(8)).dir;
  // No decoded cache built yet.
  what = expect_data_error([&] { open_vision_cache_source(dir, VisionAugment{}); });
  EXPECT_NE(what.find(dir + "/decoded_rgb.bin"), std::string::npos) << what;
  // Labels of the wrong size.
  const std::string labels = dir + "/labels.bin";
  fs::resize_file(labels, 5);
  what = expect_data_error([&] { open_vision_jpeg_source(dir, VisionAugment{}); });
  EXPECT_NE(what.find(labels), std::string::npos) << what;
  // A malformed manifest.
  const std::string manifest = dir + "/manifest.json";
  std::ofstream(manifest) << "{not json";
  what = expect_data_error([&] { open_vision_jpeg_source(dir, VisionAugment{}); });
  EXPECT_NE(what.find(manifest), std::string::npos) << what;
  fs::remove(manifest);
  what = expect_data_error([&] { open_vision_jpeg_source(dir, VisionAugment{}); });
  EXPECT_NE(what.find(manifest), std::string::npos) << what;
  fs::remove_all(root);
}

}  // namespace
}  // namespace trainlab
