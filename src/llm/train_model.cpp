// TrainModel (tg/llm_train.h): the llama forward over whole windows, and its GGUF.
#include <cmath>

#include "tg/error.h"
#include "tg/llm_train.h"

namespace tg::llm {

TrainModel::Block::Block(const TrainConfig& c)
    : attn_norm(c.dim, c.norm_eps), ffn_norm(c.dim, c.norm_eps), q(c.dim, c.dim, false), k(c.dim, c.dim / c.n_heads * c.n_kv_heads, false),
      v(c.dim, c.dim / c.n_heads * c.n_kv_heads, false),
      o(c.dim, c.dim, false), gate(c.dim, c.hidden_dim, false), up(c.dim, c.hidden_dim, false), down(c.hidden_dim, c.dim, false) {}

void TrainModel::Block::visit_state(nn::StateVisitor& s) {
  s("attn_norm", attn_norm), s("attn_q", q), s("attn_k", k), s("attn_v", v), s("attn_output", o), s("ffn_norm", ffn_norm);
  s("ffn_gate", gate), s("ffn_up", up), s("ffn_down", down);
}

static TrainConfig checked(TrainConfig c) {
  if (c.n_kv_heads == 0) c.n_kv_heads = c.n_heads;
  if (c.vocab_size <= 0 || c.dim <= 0 || c.n_layers <= 0 || c.n_heads <= 0 || c.hidden_dim <= 0 || c.context <= 0 || c.dim % (2 * c.n_heads) ||
      c.n_kv_heads < 0 || c.n_heads % c.n_kv_heads)
    throw Error("TrainModel: bad sizes: vocab " + std::to_string(c.vocab_size) + ", dim " + std::to_string(c.dim) + ", layers " +
                std::to_string(c.n_layers) + ", heads " + std::to_string(c.n_heads) + " / kv heads " + std::to_string(c.n_kv_heads) + ", ffn " +
                std::to_string(c.hidden_dim) + ", context " + std::to_string(c.context) +
                " (all positive, dim a multiple of 2 * heads, kv heads dividing heads)");
  return c;
}

TrainModel::TrainModel(const TrainConfig& c)
    : c_(checked(c)), embd_(c.vocab_size, c.dim), norm_(c.dim, c.norm_eps) {
  if (!c_.tied_embeddings) output_.emplace(c.dim, c.vocab_size, false);  // before the blocks: the seed's draws in the same order
  for (int64_t i = 0; i < c.n_layers; i++) blocks_.emplace_back(c_);
  int64_t h = c.dim / c.n_heads / 2;
  std::vector<float> cs(size_t(c.context * h)), sn(cs.size());
  for (int64_t p = 0; p < c.context; p++)
    for (int64_t i = 0; i < h; i++) {  // Model's angles: pos * theta^(-2i/head_dim), in double
      double a = double(p) * std::pow(c.rope_theta, -2.0 * double(i) / double(2 * h));
      cs[size_t(p * h + i)] = float(std::cos(a)), sn[size_t(p * h + i)] = float(std::sin(a));
    }
  cos_ = Tensor::from_vector(cs, {c.context, h}), sin_ = Tensor::from_vector(sn, {c.context, h});
}

void TrainModel::visit_state(nn::StateVisitor& v) {
  v("token_embd", embd_), v("blk", blocks_), v("output_norm", norm_);
  if (output_) v("output", *output_);
}

Tensor TrainModel::rope(const Tensor& x) const {
  int64_t B = x.shape()[0], H = x.shape()[1], T = x.shape()[2], h = x.shape()[3] / 2;
  Tensor cos = cos_.shrink({{0, T}, {0, h}}).reshape({1, 1, T, h}), sin = sin_.shrink({{0, T}, {0, h}}).reshape({1, 1, T, h});
  Tensor p = x.reshape({B, H, T, h, 2});
  Tensor a = p.shrink({{0, B}, {0, H}, {0, T}, {0, h}, {0, 1}}).squeeze(-1), b = p.shrink({{0, B}, {0, H}, {0, T}, {0, h}, {1, 2}}).squeeze(-1);
  return Tensor::stack({a * cos - b * sin, b * cos + a * sin}, -1).reshape({B, H, T, 2 * h});
}

Tensor TrainModel::operator()(const Tensor& tokens) const {
  if (tokens.ndim() != 2 || !tokens.dtype().is_int() || tokens.shape()[1] < 1 || tokens.shape()[1] > c_.context)
    throw Error("TrainModel: takes int tokens (B, T) with 1 <= T <= " + std::to_string(c_.context) + ", got " + tokens.shape_str() + " " +
                std::string(tokens.dtype().name()));
  int64_t B = tokens.shape()[0], T = tokens.shape()[1], H = c_.n_heads, KV = c_.n_kv_heads, hd = c_.dim / H;
  Tensor mask = Tensor::full({T, T}, -INFINITY).triu(1);
  Tensor x = embd_(tokens);
  for (const Block& l : blocks_) {
    Tensor n = l.attn_norm(x);
    auto heads = [&](const nn::Linear& w, int64_t h) { return w(n).reshape({B, T, h, hd}).transpose(1, 2); };
    // query head j reads key/value head j / (H / KV)
    Tensor q = rope(heads(l.q, H)), k = rope(heads(l.k, KV)).repeat_interleave(H / KV, 1), v = heads(l.v, KV).repeat_interleave(H / KV, 1);
    Tensor a = (q.matmul(k.transpose(-2, -1)) / std::sqrt(double(hd)) + mask).softmax(-1).matmul(v);
    Tensor h = x + l.o(a.transpose(1, 2).reshape({B, T, c_.dim}));
    Tensor f = l.ffn_norm(h);
    x = h + l.down(l.gate(f).silu() * l.up(f));
  }
  return output_ ? (*output_)(norm_(x)) : norm_(x).matmul(embd_.weight.transpose(0, 1));
}

Tensor TrainModel::loss(const Tensor& x, const Tensor& y) const {
  return (*this)(x).reshape({-1, c_.vocab_size}).sparse_categorical_crossentropy(y.reshape({-1}));
}

std::pair<gguf::KV, std::vector<std::pair<std::string, Tensor>>> TrainModel::to_gguf(const Vocab& vocab) {
  if (int64_t(vocab.tokens.size()) != c_.vocab_size)
    throw Error("TrainModel: the vocab has " + std::to_string(vocab.tokens.size()) + " tokens, the model " + std::to_string(c_.vocab_size));
  using gguf::Value, gguf::ValueType;
  auto u32 = [](int64_t x) { return Value{uint32_t(x)}; };
  auto strs = [](const std::vector<std::string>& s) {
    Value::Array a{ValueType::STRING, {}};
    for (const std::string& x : s) a.items.push_back({x});
    return Value{a};
  };
  Value::Array types{ValueType::INT32, {}};
  for (size_t i = 0; i < vocab.tokens.size(); i++) types.items.push_back({vocab.token_type.empty() ? int32_t(1) : vocab.token_type[i]});
  gguf::KV kv = {{"general.architecture", {std::string("llama")}}, {"general.name", {std::string("tinygrad.cpp train_llm")}},
                 {"llama.context_length", u32(c_.context)}, {"llama.embedding_length", u32(c_.dim)}, {"llama.block_count", u32(c_.n_layers)},
                 {"llama.feed_forward_length", u32(c_.hidden_dim)}, {"llama.attention.head_count", u32(c_.n_heads)},
                 {"llama.attention.head_count_kv", u32(c_.n_kv_heads)}, {"llama.rope.dimension_count", u32(c_.dim / c_.n_heads)},
                 {"llama.attention.layer_norm_rms_epsilon", {float(c_.norm_eps)}}, {"llama.rope.freq_base", {float(c_.rope_theta)}},
                 {"tokenizer.ggml.model", {vocab.model}}, {"tokenizer.ggml.pre", {vocab.pre}}, {"tokenizer.ggml.tokens", strs(vocab.tokens)},
                 {"tokenizer.ggml.token_type", {types}}, {"tokenizer.ggml.merges", strs(vocab.merges)}};
  if (vocab.bos) kv.push_back({"tokenizer.ggml.bos_token_id", u32(*vocab.bos)});
  if (vocab.eos) kv.push_back({"tokenizer.ggml.eos_token_id", u32(*vocab.eos)});
  if (vocab.add_bos) kv.push_back({"tokenizer.ggml.add_bos_token", {*vocab.add_bos}});
  std::vector<std::pair<std::string, Tensor>> ts;
  struct Collect : nn::StateVisitor {
    std::vector<std::pair<std::string, Tensor>>* out;
    void tensor(const std::string& name, Tensor& t) override { out->push_back({name, t.cast(dtypes::float32).contiguous()}); }
  } col;
  col.out = &ts;
  visit_state(col);
  return {kv, ts};
}

void TrainModel::save(const std::string& path, const Vocab& vocab) {
  auto [kv, ts] = to_gguf(vocab);
  gguf::write(path, kv, ts);
}

}  // namespace tg::llm
