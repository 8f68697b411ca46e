// vision: a small ResNet-style CNN trained on JPEG images from disk (vision_data.h): every sample
// is read, decoded with libjpeg-turbo and augmented on the CPU (random resized crop, flip, colour
// jitter, normalisation), the classic way an image pipeline starves the device.
// Knob cache=1 reads the decoded cache (decode once, keep the pixels) instead of the JPEGs.
#include <torch/torch.h>

#include "scenarios/data/vision_data.h"
#include "scenarios/registry.h"
#include "scenarios/workload.h"

namespace trainlab {
namespace {

namespace nn = torch::nn;

nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).bias(false));
}

// Two 3x3 convolutions with batch norm and a projection shortcut when the shape changes.
struct ResidualBlockImpl : nn::Module {
  ResidualBlockImpl(int64_t in, int64_t out, int64_t stride)
      : conv1(register_module("conv1", conv(in, out, 3, stride))),
        bn1(register_module("bn1", nn::BatchNorm2d(out))),
        conv2(register_module("conv2", conv(out, out, 3, 1))),
        bn2(register_module("bn2", nn::BatchNorm2d(out))) {
    if (stride != 1 || in != out) {
      shortcut = register_module("shortcut", nn::Sequential(conv(in, out, 1, stride), nn::BatchNorm2d(out)));
    }
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor y = torch::relu(bn1(conv1(x)));
    y = bn2(conv2(y));
    return torch::relu(y + (shortcut.is_empty() ? x : shortcut->forward(x)));
  }
  nn::Conv2d conv1, conv2;
  nn::BatchNorm2d bn1, bn2;
  nn::Sequential shortcut{nullptr};
};
TORCH_MODULE(ResidualBlock);

// Stem (stride 2), three stages (width, 2x width stride 2, 4x width stride 2), pool, classifier.
struct SmallResNetImpl : nn::Module {
  SmallResNetImpl(int64_t width, int64_t classes)
      : stem(register_module("stem", conv(3, width, 3, 2))),
        stem_bn(register_module("stem_bn", nn::BatchNorm2d(width))),
        stage1(register_module("stage1", ResidualBlock(width, width, 1))),
        stage2(register_module("stage2", ResidualBlock(width, 2 * width, 2))),
        stage3(register_module("stage3", ResidualBlock(2 * width, 4 * width, 2))),
        head(register_module("head", nn::Linear(4 * width, classes))) {}
  torch::Tensor forward(const torch::Tensor& images) {
    torch::Tensor x = torch::relu(stem_bn(stem(images)));
    x = stage3(stage2(stage1(x)));
    return head(x.mean({2, 3}));
  }
  nn::Conv2d stem;
  nn::BatchNorm2d stem_bn;
  ResidualBlock stage1, stage2, stage3;
  nn::Linear head;
};
TORCH_MODULE(SmallResNet);

class VisionWorkload : public Workload {
 public:
  explicit VisionWorkload(const WorkloadConfig& config)
      : config_(config), model_(config.knob_int("width"), config.knob_int("classes")) {}

  torch::nn::Module& model() override { return *model_; }
  torch::Tensor body(const std::vector<torch::Tensor>& prepared) override { return model_->forward(prepared.at(0)); }
  torch::Tensor loss(const torch::Tensor& output, const std::vector<torch::Tensor>& /*inputs*/,
                     const torch::Tensor& targets) override {
    return torch::nn::functional::cross_entropy(output, targets);
  }
  std::unique_ptr<torch::optim::Optimizer> make_optimizer() override {
    return std::make_unique<torch::optim::SGD>(model_->parameters(),
                                               torch::optim::SGDOptions(0.05).momentum(0.9).weight_decay(1e-4));
  }
  std::unique_ptr<Dataset> make_dataset() override {
    VisionDataSpec spec;
    spec.samples = config_.knob_int("samples");
    spec.image_size = config_.knob_int("image_size");
    spec.quality = config_.knob_int("quality");
    spec.classes = config_.knob_int("classes");
    spec.seed = static_cast<uint64_t>(config_.knob_int("data_seed"));
    const PreparedDataset prepared = prepare_vision_dataset(config_.data_root, spec);
    VisionAugment augment;
    augment.crop_size = config_.knob_int("crop");
    augment.intensity = config_.knob("augment");
    return open_disk_dataset(
        prepared, config_.knob_int("cache") != 0, config_.allocate, prepare_vision_decoded_cache,
        [&](const std::string& dir) { return open_vision_cache_source(dir, augment); },
        [&](const std::string& dir) { return open_vision_jpeg_source(dir, augment); });
  }

 private:
  WorkloadConfig config_;
  SmallResNet model_;
};

const WorkloadRegistrar kRegistrar("vision", [](const WorkloadConfig& config) -> std::unique_ptr<Workload> {
      if (config.knob_int("crop") > config.knob_int("image_size")) {
        throw InputError("vision: crop must not exceed image_size");
      }
      return std::make_unique<VisionWorkload>(config);
    });

}  // namespace
}  // namespace trainlab
