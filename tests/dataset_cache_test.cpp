// Generate-once dataset folders (scenarios/data/dataset_cache): a generation killed midway leaves
// a `<dir>.tmp-PID` folder that the next generation removes under the lock; a folder whose
// manifest is unreadable is generated again, and the result says why. Torch-free.
#include "scenarios/data/dataset_cache.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace trainlab {
namespace {
namespace fs = std::filesystem;

TEST(DatasetCacheTest, StaleTemporariesGoAndAnUnreadableManifestIsSaid) {
  const fs::path root = fs::temp_directory_path() / ("trainlab_dataset_cache_" + std::to_string(::getpid()));
  fs::remove_all(root);
  const nlohmann::json params = {{"samples", 3}};
  int generations = 0;
  auto generate = [&](const std::string& tmp_dir) {
    ++generations;
    std::ofstream(tmp_dir + "/data.bin") << "abc";
  };
  const PreparedDataset first = prepare_dataset(root.string(), "toy", 1, params, generate);
  EXPECT_TRUE(first.generated);
  EXPECT_EQ(first.generated_because, "no dataset for these parameters yet");
  EXPECT_FALSE(prepare_dataset(root.string(), "toy", 1, params, generate).generated);  // reused
  EXPECT_EQ(generations, 1);

  // A generator killed midway (SIGKILL) left its temporary folder; the manifest got corrupted.
  const fs::path stale = first.dir + ".tmp-999999";
  fs::create_directories(stale);
  std::ofstream(stale / "half.bin") << std::string(1 << 16, 'x');
  std::ofstream(first.dir + "/manifest.json") << "{\"kind\": \"toy\", \"format_ver";
  const PreparedDataset again = prepare_dataset(root.string(), "toy", 1, params, generate);
  EXPECT_TRUE(again.generated);
  EXPECT_EQ(generations, 2);
  EXPECT_NE(again.generated_because.find("manifest.json is unreadable"), std::string::npos) << again.generated_because;
  EXPECT_FALSE(fs::exists(stale)) << "the dead generator's temporary folder is still there";
  EXPECT_TRUE(fs::exists(again.dir + "/data.bin"));
  fs::remove_all(root);
}

}  // namespace
}  // namespace trainlab
