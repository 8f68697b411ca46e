// The vision scenario's data: JPEG images on disk (libjpeg-turbo), generated once from a seed, with
// labels; a decoded cache (every image's decoded RGB bytes in one file, read through mmap); and
// CPU augmentation with the cost real pipelines pay: random resized crop (bilinear), horizontal
// flip, colour jitter (brightness, contrast, saturation), normalisation to float CHW.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "scenarios/data/dataset_cache.h"
#include "scenarios/data/sample_source.h"

namespace trainlab {

struct VisionDataSpec {
  int64_t samples = 2048;   // images in the dataset
  int64_t image_size = 160; // stored images are image_size x image_size RGB
  int64_t quality = 90;     // JPEG quality 1..100
  int64_t classes = 10;
  uint64_t seed = 1234;
};

struct VisionAugment {
  int64_t crop_size = 96;   // output images are crop_size x crop_size
  double intensity = 1.0;   // 0: centre crop + normalise only; 1: standard; up to 3: stronger jitter
};

// Generates (or reuses) <data_root>/vision-<hash>/ holding images/<index>.jpg and labels.
PreparedDataset prepare_vision_dataset(const std::string& data_root, const VisionDataSpec& spec);

// Builds (or reuses) the decoded cache file inside a prepared vision dataset folder.
std::string prepare_vision_decoded_cache(const std::string& dataset_dir);

// Batches: inputs = {float32 [B, 3, crop, crop] normalised}, targets = int64 [B].
// Stage times: read = file read, decode = JPEG decode, augment = crop/flip/jitter/normalise into
// the batch buffer (collate is the remaining bookkeeping).
std::unique_ptr<SampleSource> open_vision_jpeg_source(const std::string& dataset_dir, const VisionAugment& augment);
std::unique_ptr<SampleSource> open_vision_cache_source(const std::string& dataset_dir, const VisionAugment& augment);

}  // namespace trainlab
