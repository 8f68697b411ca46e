// recsys: a transformer-based recommender. Item and item-category embeddings plus summed user
// feature embeddings feed a TransformerEncoder over a user's recent items; the last position
// predicts the next item over the whole catalogue with cross-entropy.
// The data slice follows a seeded Markov chain over items, so the loss really falls.
#include <torch/torch.h>

#include "scenarios/registry.h"
#include "scenarios/workload.h"

namespace trainlab {
namespace {

struct RecsysModelImpl : torch::nn::Module {
  RecsysModelImpl(int64_t items, int64_t categories, int64_t user_vocab, int64_t dim,
                  int64_t layers, int64_t heads, int64_t seq_len)
      : item_embedding(register_module("item_embedding", torch::nn::Embedding(items, dim))),
        category_embedding(register_module("category_embedding", torch::nn::Embedding(categories, dim))),
        user_embedding(register_module("user_embedding", torch::nn::Embedding(user_vocab, dim))),
        position(register_parameter("position", torch::randn({seq_len, 1, dim}) * 0.02)),
        encoder(register_module(
            "encoder",
            torch::nn::TransformerEncoder(torch::nn::TransformerEncoderOptions(
                torch::nn::TransformerEncoderLayerOptions(dim, heads).dim_feedforward(4 * dim).dropout(0.1),
                layers)))),
        norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})))),
        head(register_module("head", torch::nn::Linear(dim, items))) {}

  // item_ids, item_categories: [batch, seq]; user_features: [batch, features] -> [seq, batch, dim]
  torch::Tensor embed(const torch::Tensor& item_ids, const torch::Tensor& item_categories,
                      const torch::Tensor& user_features) {
    torch::Tensor x = item_embedding(item_ids) + category_embedding(item_categories);  // [B, S, D]
    torch::Tensor user = user_embedding(user_features).sum(1);                        // [B, D]
    return (x + user.unsqueeze(1)).transpose(0, 1);
  }
  // [seq, batch, dim] -> logits [batch, items]
  torch::Tensor encode_and_score(const torch::Tensor& x) {
    torch::Tensor h = encoder(x + position);
    return head(norm(h.select(0, h.size(0) - 1)));
  }

  torch::nn::Embedding item_embedding, category_embedding, user_embedding;
  torch::Tensor position;
  torch::nn::TransformerEncoder encoder;
  torch::nn::LayerNorm norm;
  torch::nn::Linear head;
};
TORCH_MODULE(RecsysModel);

class RecsysWorkload : public Workload {
 public:
  explicit RecsysWorkload(const WorkloadConfig& config)
      : config_(config),
        items_(config.knob_int("items")),
        categories_(config.knob_int("categories")),
        user_vocab_(config.knob_int("user_vocab")),
        user_features_(config.knob_int("user_features")),
        seq_len_(config.knob_int("seq_len")),
        model_(items_, categories_, user_vocab_, config.knob_int("dim"), config.knob_int("layers"),
               config.knob_int("heads"), seq_len_) {}

  torch::nn::Module& model() override { return *model_; }
  std::vector<torch::Tensor> prepare(const std::vector<torch::Tensor>& inputs) override {
    return {model_->embed(inputs.at(0), inputs.at(1), inputs.at(2))};
  }
  torch::Tensor body(const std::vector<torch::Tensor>& prepared) override {
    return model_->encode_and_score(prepared.at(0));
  }
  torch::Tensor loss(const torch::Tensor& output, const torch::Tensor& targets) override {
    return torch::nn::functional::cross_entropy(output, targets);
  }
  std::unique_ptr<torch::optim::Optimizer> make_optimizer() override {
    return std::make_unique<torch::optim::AdamW>(model_->parameters(),
                                                 torch::optim::AdamWOptions(1e-3).weight_decay(0.01));
  }
  std::unique_ptr<Dataset> make_dataset() override {
    const int64_t n = config_.batch_size * config_.slice_batches;
    torch::Generator gen = at::detail::createCPUGenerator(config_.seed ^ 0x5eed5eedULL);
    // Markov chain: the next item is a fixed function of the current one, plus occasional jumps.
    torch::Tensor seq = torch::empty({n, seq_len_ + 1}, torch::kLong);
    seq.select(1, 0).copy_(torch::randint(items_, {n}, gen, torch::kLong));
    for (int64_t t = 1; t <= seq_len_; ++t) {
      torch::Tensor step = (seq.select(1, t - 1) * 31 + 7).remainder(items_);
      torch::Tensor jump = torch::randint(items_, {n}, gen, torch::kLong);
      torch::Tensor take_jump = torch::rand({n}, gen) < 0.2;
      seq.select(1, t).copy_(torch::where(take_jump, jump, step));
    }
    torch::Tensor item_ids = seq.slice(1, 0, seq_len_).contiguous();
    torch::Tensor targets = seq.select(1, seq_len_).contiguous();
    torch::Tensor item_categories = item_ids.remainder(categories_);
    torch::Tensor user_features = torch::randint(user_vocab_, {n, user_features_}, gen, torch::kLong);
    return std::make_unique<TensorDataset>(
        std::vector<torch::Tensor>{item_ids, item_categories, user_features}, targets);
  }

 private:
  WorkloadConfig config_;
  int64_t items_, categories_, user_vocab_, user_features_, seq_len_;
  RecsysModel model_;
};

const ScenarioRegistrar kRegistrar(
    ScenarioInfo{"recsys",
                 "transformer recommender: item/feature embeddings, TransformerEncoder over recent "
                 "items, next-item cross-entropy over the catalogue",
                 /*default_batch_size=*/64,
                 {{"items", 20000, 16, 5'000'000, true, "catalogue size (output classes)"},
                  {"categories", 200, 1, 100'000, true, "item category vocabulary"},
                  {"user_vocab", 1000, 1, 1'000'000, true, "user feature vocabulary"},
                  {"user_features", 4, 1, 64, true, "categorical features per user"},
                  {"dim", 128, 8, 4096, true, "embedding / model width"},
                  {"layers", 2, 1, 48, true, "TransformerEncoder layers"},
                  {"heads", 4, 1, 64, true, "attention heads (must divide dim)"},
                  {"seq_len", 32, 2, 4096, true, "recent items per user"}}},
    [](const WorkloadConfig& config) -> std::unique_ptr<Workload> {
      if (config.knob_int("dim") % config.knob_int("heads") != 0) {
        throw std::invalid_argument("recsys: heads must divide dim");
      }
      return std::make_unique<RecsysWorkload>(config);
    });

}  // namespace
}  // namespace trainlab
