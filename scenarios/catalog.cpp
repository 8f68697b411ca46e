// The built-in scenarios as they describe themselves: name, description, default batch size,
// knobs with ranges, presets. Torch-free, so the front binary lists and validates scenarios
// without LibTorch; each workload's translation unit registers its factory under the same name.
#include "scenarios/registry.h"

namespace trainlab {
namespace {

// The knobs of mlp.cpp's MLP, for each scenario built on it: the same names and ranges, the
// scenario's own defaults (and what its hidden width stands for).
std::vector<KnobInfo> mlp_knobs(double in_features, double hidden, double layers, double classes,
                                const std::string& hidden_description) {
  return {{"in_features", in_features, 1, 1'000'000, true, "input features"},
          {"hidden", hidden, 1, 1'000'000, true, hidden_description},
          {"layers", layers, 1, 64, true, "hidden layers"},
          {"classes", classes, 2, 1'000'000, true, "output classes"}};
}

}  // namespace

const std::vector<ScenarioInfo>& scenario_catalog() {
  static const std::vector<ScenarioInfo> catalog = {
      // recsys.cpp
      ScenarioInfo{"recsys",
                   "transformer recommender on zstd-compressed interaction shards: item/action/feature "
                   "embeddings, TransformerEncoder over a history window, next-item cross-entropy",
                   /*default_batch_size=*/64,
                   {{"items", 20000, 16, 5'000'000, true, "catalogue size (output classes)"},
                    {"categories", 200, 1, 100'000, true, "item category vocabulary"},
                    {"user_vocab", 1000, 1, 1'000'000, true, "user feature vocabulary"},
                    {"user_features", 4, 1, 64, true, "categorical features per user"},
                    {"dim", 128, 8, 4096, true, "embedding / model width"},
                    {"layers", 2, 1, 48, true, "TransformerEncoder layers"},
                    {"heads", 4, 1, 64, true, "attention heads (must divide dim)"},
                    {"dropout", 0.1, 0, 0.9, false, "TransformerEncoder dropout probability"},
                    {"seq_len", 32, 2, 4096, true, "history window fed to the model"},
                    {"samples", 4096, 64, 10'000'000, true, "users in the on-disk dataset"},
                    {"mean_history", 400, 8, 100'000, true, "mean events per user history"},
                    {"max_history", 1024, 8, 100'000, true, "longest history (and decoded-cache row length)"},
                    {"records_per_block", 128, 1, 65'536, true, "users per compressed block (a row group)"},
                    {"augment", 1, 0, 4, false, "augmentation intensity (masking 0.15x, negatives 32x)"},
                    {"cache", 0, 0, 1, true, "1: read the decoded cache instead of compressed shards"},
                    {"data_seed", 1234, 0, 1e9, true, "seed the dataset is generated from"}},
                   {{"data-bound",
                     "a light model (dim 32, 1 layer) over the same compressed shards: decoding and "
                     "augmenting the histories is most of the step",
                     {{"dim", 32}, {"layers", 1}}}},
                   {{KnobRelation::Kind::kDivides, "heads", "dim"}}},
      // vision.cpp
      ScenarioInfo{"vision",
                   "small ResNet-style CNN on JPEG images from disk: decode + random resized crop, "
                   "flip, colour jitter on the CPU",
                   /*default_batch_size=*/64,
                   {{"samples", 2048, 64, 10'000'000, true, "images in the on-disk dataset"},
                    {"image_size", 320, 16, 4096, true, "stored image side (pixels)"},
                    {"quality", 90, 1, 100, true, "JPEG quality"},
                    {"classes", 10, 2, 1000, true, "label classes"},
                    {"crop", 112, 8, 1024, true, "training crop side (pixels)"},
                    {"augment", 1, 0, 3, false, "augmentation intensity (0: centre crop only)"},
                    {"width", 8, 4, 512, true, "CNN base channel width"},
                    {"cache", 0, 0, 1, true, "1: read the decoded cache instead of the JPEG files"},
                    {"data_seed", 1234, 0, 1e9, true, "seed the dataset is generated from"}},
                   {},
                   {{KnobRelation::Kind::kAtMost, "crop", "image_size"}}},
      // mlp.cpp
      ScenarioInfo{"mlp",
                   "wide tabular MLP whose step is dominated by GEMMs (model-compute-bound)",
                   /*default_batch_size=*/256,
                   mlp_knobs(/*in_features=*/1024, /*hidden=*/2048, /*layers=*/3, /*classes=*/1000,
                             "hidden width")},
      // mlp.cpp
      ScenarioInfo{"commheavy",
                   "many parameters, little compute per sample: gradient all-reduce dominates data-parallel steps",
                   /*default_batch_size=*/16,
                   mlp_knobs(/*in_features=*/256, /*hidden=*/2048, /*layers=*/6, /*classes=*/10,
                             "hidden width (parameters grow with its square)")},
      // tinyops.cpp
      ScenarioInfo{"tinyops",
                   "deep stack of tiny layers at small batch: per-op dispatch dominates "
                   "(framework-overhead-bound)",
                   /*default_batch_size=*/16,
                   {{"width", 32, 1, 65536, true, "layer width"},
                    {"depth", 48, 1, 10000, true, "residual blocks"}}},
  };
  return catalog;
}

}  // namespace trainlab
