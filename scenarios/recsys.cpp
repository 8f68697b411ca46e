// recsys: a transformer-based recommender trained from on-disk data. Users' interaction histories
// live in zstd-compressed, column-oriented shards (recsys_data.h), generated once by a Markov chain
// over items so the loss really falls; each sample is a random window of a history (sequence crop,
// masking, sampled negatives). Item, category and action embeddings plus summed user-feature
// embeddings feed a TransformerEncoder; the last position scores the whole catalogue
// (cross-entropy on the next item) and the sampled negatives add a pairwise ranking term.
// Knob cache=1 reads the decoded cache instead of the compressed shards.
#include <torch/torch.h>

#include "scenarios/data/recsys_data.h"
#include "scenarios/registry.h"
#include "scenarios/workload.h"

namespace trainlab {
namespace {

struct RecsysModelImpl : torch::nn::Module {
  RecsysModelImpl(int64_t items, int64_t categories, int64_t actions, int64_t user_vocab, int64_t dim,
                  int64_t layers, int64_t heads, int64_t seq_len, double dropout)
      // Two ids beyond the catalogue: the mask and padding tokens.
      : item_embedding(register_module("item_embedding", torch::nn::Embedding(items + 2, dim))),
        category_embedding(register_module("category_embedding", torch::nn::Embedding(categories, dim))),
        action_embedding(register_module("action_embedding", torch::nn::Embedding(actions, dim))),
        user_embedding(register_module("user_embedding", torch::nn::Embedding(user_vocab, dim))),
        position(register_parameter("position", torch::randn({seq_len, 1, dim}) * 0.02)),
        encoder(register_module(
            "encoder",
            torch::nn::TransformerEncoder(torch::nn::TransformerEncoderOptions(
                torch::nn::TransformerEncoderLayerOptions(dim, heads).dim_feedforward(4 * dim).dropout(dropout),
                layers)))),
        norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})))),
        head(register_module("head", torch::nn::Linear(dim, items))) {}

  // item_ids, item_categories, actions: [batch, seq]; user_features: [batch, features]
  // -> [seq, batch, dim]
  torch::Tensor embed(const torch::Tensor& item_ids, const torch::Tensor& item_categories,
                      const torch::Tensor& actions, const torch::Tensor& user_features) {
    torch::Tensor x = item_embedding(item_ids) + category_embedding(item_categories) +
                      action_embedding(actions);                                     // [B, S, D]
    torch::Tensor user = user_embedding(user_features).sum(1);                        // [B, D]
    return (x + user.unsqueeze(1)).transpose(0, 1);
  }
  // [seq, batch, dim] -> logits [batch, items]
  torch::Tensor encode_and_score(const torch::Tensor& x) {
    torch::Tensor h = encoder(x + position);
    return head(norm(h.select(0, h.size(0) - 1)));
  }

  torch::nn::Embedding item_embedding, category_embedding, action_embedding, user_embedding;
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
        data_spec_(data_spec(config)),
        model_(data_spec_.items, data_spec_.categories, data_spec_.actions, data_spec_.user_vocab,
               config.knob_int("dim"), config.knob_int("layers"), config.knob_int("heads"),
               config.knob_int("seq_len"), config.knob("dropout")) {}

  torch::nn::Module& model() override { return *model_; }
  std::vector<torch::Tensor> prepare(const std::vector<torch::Tensor>& inputs) override {
    return {model_->embed(inputs.at(0), inputs.at(1), inputs.at(2), inputs.at(3))};
  }
  torch::Tensor body(const std::vector<torch::Tensor>& prepared) override {
    return model_->encode_and_score(prepared.at(0));
  }
  torch::Tensor loss(const torch::Tensor& output, const std::vector<torch::Tensor>& inputs,
                     const torch::Tensor& targets) override {
    torch::Tensor loss = torch::nn::functional::cross_entropy(output, targets);
    const torch::Tensor& negatives = inputs.at(4);  // [B, K]
    if (negatives.size(1) > 0) {
      // Pairwise ranking: the next item should score above each sampled negative.
      torch::Tensor positive = output.gather(1, targets.unsqueeze(1));
      loss = loss + 0.1 * torch::nn::functional::softplus(output.gather(1, negatives) - positive).mean();
    }
    return loss;
  }
  std::unique_ptr<torch::optim::Optimizer> make_optimizer() override {
    return std::make_unique<torch::optim::AdamW>(model_->parameters(),
                                                 torch::optim::AdamWOptions(1e-3).weight_decay(0.01));
  }
  std::unique_ptr<Dataset> make_dataset() override {
    const PreparedDataset prepared = prepare_recsys_dataset(config_.data_root, data_spec_);
    RecsysAugment augment;
    augment.seq_len = config_.knob_int("seq_len");
    augment.intensity = config_.knob("augment");
    return open_disk_dataset(
        prepared, config_.knob_int("cache") != 0, config_.allocate, prepare_recsys_decoded_cache,
        [&](const std::string& dir) { return open_recsys_cache_source(dir, augment); },
        [&](const std::string& dir) { return open_recsys_shard_source(dir, augment); });
  }

 private:
  static RecsysDataSpec data_spec(const WorkloadConfig& config) {
    RecsysDataSpec spec;
    spec.samples = config.knob_int("samples");
    spec.items = config.knob_int("items");
    spec.categories = config.knob_int("categories");
    spec.user_vocab = config.knob_int("user_vocab");
    spec.user_features = config.knob_int("user_features");
    spec.mean_history = config.knob_int("mean_history");
    spec.max_history = std::max(spec.mean_history, config.knob_int("max_history"));
    spec.records_per_block = config.knob_int("records_per_block");
    spec.seed = config.knob_int("data_seed");
    return spec;
  }

  WorkloadConfig config_;
  RecsysDataSpec data_spec_;
  RecsysModel model_;
};

const WorkloadRegistrar kRegistrar("recsys", [](const WorkloadConfig& config) -> std::unique_ptr<Workload> {
      if (config.knob_int("dim") % config.knob_int("heads") != 0) {
        throw InputError("recsys: heads must divide dim");
      }
      return std::make_unique<RecsysWorkload>(config);
    });

}  // namespace
}  // namespace trainlab
