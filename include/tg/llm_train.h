#pragma once
// tg::llm::TrainModel: the llama tg::llm::Model runs, as trainable tg::nn layers (apps/train_llm.cpp). Its forward
// takes whole windows (no KV cache: a causal mask), RoPE on pairs of neighbours (x[2i], x[2i+1]) as Model does for
// arch "llama"; save() writes the F32 GGUF (llama metadata, the tokenizer; GQA and tied embeddings as configured) that Model::load computes
// the same logits from.
//
//   tg::llm::TrainModel m({.vocab_size = 512, .dim = 64, .n_layers = 2});
//   Tensor loss = m.loss(x, y);                 // x, y (B, T) int32, y the next tokens of x
//   m.save("model.gguf", vocab);
#include <optional>
#include <string>
#include <vector>

#include "tg/gguf.h"
#include "tg/nn.h"
#include "tg/tokenizer.h"

namespace tg::llm {

struct TrainConfig {
  int64_t vocab_size = 0, dim = 256, n_layers = 4, n_heads = 4, hidden_dim = 768, context = 128;
  int64_t n_kv_heads = 0;        // grouped-query attention: heads of keys and values (0: n_heads; must divide n_heads)
  bool tied_embeddings = false;  // the output projection is the token embedding (no output.weight in the GGUF)
  double norm_eps = 1e-5, rope_theta = 10000.0;
};

class TrainModel : public nn::Module {
 public:
  explicit TrainModel(const TrainConfig& c);  // bad sizes (dim not a multiple of 2 * heads, ...) are a tg::Error
  Tensor operator()(const Tensor& tokens) const;  // (B, T) int, T <= context -> logits (B, T, vocab)
  Tensor loss(const Tensor& x, const Tensor& y) const;  // mean cross-entropy of the logits of x against y
  void visit_state(nn::StateVisitor& v) override;
  // the model as GGUF metadata (general.*, llama.*, tokenizer.ggml.* of `vocab`) and tensors named as llama.cpp does
  std::pair<gguf::KV, std::vector<std::pair<std::string, Tensor>>> to_gguf(const Vocab& vocab);
  void save(const std::string& path, const Vocab& vocab);
  const TrainConfig& config() const { return c_; }

 private:
  struct Block : nn::Module {
    nn::RMSNorm attn_norm, ffn_norm;
    nn::Linear q, k, v, o, gate, up, down;
    explicit Block(const TrainConfig& c);
    void visit_state(nn::StateVisitor& s) override;
  };
  Tensor rope(const Tensor& x) const;  // (B, heads, T, head_dim)
  TrainConfig c_;
  nn::Embedding embd_;
  std::vector<Block> blocks_;
  nn::RMSNorm norm_;
  std::optional<nn::Linear> output_;  // none with tied embeddings: token_embd's weight
  Tensor cos_, sin_;  // (context, head_dim / 2), not parameters
};

}  // namespace tg::llm
