// The recsys scenario's data: users' interaction histories (item, category, action per event, plus
// categorical user features) stored as shards of zstd-compressed, column-oriented blocks, generated
// once from a seed by a Markov chain over items (so the next item is learnable). Reading a sample
// means decompressing its block and parsing its columns, like a row group of a columnar file.
// A decoded cache stores every history as fixed-size rows in one file, read through mmap.
// Augmentation: random window (sequence crop) ending before a target item, masking, and negative
// sampling with rejection against the user's history.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "scenarios/data/dataset_cache.h"
#include "scenarios/data/sample_source.h"

namespace trainlab {

struct RecsysDataSpec {
  int64_t samples = 4096;          // users
  int64_t items = 20000;           // catalogue size
  int64_t categories = 200;
  int64_t actions = 4;             // view, click, cart, buy
  int64_t user_vocab = 1000;
  int64_t user_features = 4;
  int64_t mean_history = 400;      // events per user, varies from mean/4 to max_history
  int64_t max_history = 1024;
  int64_t records_per_block = 128; // users per compressed block (a row group)
  int64_t records_per_shard = 1024;
  uint64_t seed = 1234;
};

struct RecsysAugment {
  int64_t seq_len = 32;      // window length fed to the model
  double intensity = 1.0;    // scales masking probability (0.15 x) and negatives (32 x)
};

// Ids the model must reserve beyond the catalogue: items..items+1 are mask and padding tokens.
inline int64_t recsys_mask_token(int64_t items) { return items; }
inline int64_t recsys_pad_token(int64_t items) { return items + 1; }
int64_t recsys_negatives(const RecsysAugment& augment);  // per sample

PreparedDataset prepare_recsys_dataset(const std::string& data_root, const RecsysDataSpec& spec);
std::string prepare_recsys_decoded_cache(const std::string& dataset_dir);

// Batches: inputs = {int64 item ids [B, S], int64 categories [B, S], int64 actions [B, S],
// int64 user features [B, F], int64 negatives [B, K]}, targets = int64 next item [B].
// Stage times: read = file bytes, decode = decompress + parse, augment = crop/mask/negatives,
// collate = writing the batch buffers.
std::unique_ptr<SampleSource> open_recsys_shard_source(const std::string& dataset_dir, const RecsysAugment& augment);
std::unique_ptr<SampleSource> open_recsys_cache_source(const std::string& dataset_dir, const RecsysAugment& augment);

}  // namespace trainlab
