#pragma once
// tg::llm: a llama-family transformer read from a GGUF file (tinygrad's llm/model.py; llama.cpp's metadata keys), its
// tokenizer, chat templates and a sampler.
//
//   tg::llm::Model m = tg::llm::Model::load("model.gguf");
//   std::vector<int32_t> ids = m.tokenizer().encode("Once upon a time");
//   tg::llm::Sampler s({.temperature = 0.8, .seed = 1});
//   tg::llm::generate(m, ids, 32, s, [&](int32_t t) { std::cout << m.tokenizer().piece(t) << std::flush; return true; });
//
// Architectures: llama (llama 2/3, mistral, mixtral), qwen2 (q/k/v biases), qwen3 (q/k RMSNorm), qwen2moe and qwen3moe
// (mixtures of experts, a gated shared expert), olmoe (experts, q/k RMSNorm over the whole projection), deepseek2
// (multi-head latent attention, shared experts, grouped routing with a selection bias), qwen35 / qwen35moe (gated delta
// nets between output-gated attention layers). GQA, RoPE (llama's pairs of
// neighbours or neox's halves, rope.freq_base, linear and YaRN rope scaling), RMSNorm, SwiGLU, tied embeddings (no output.weight:
// token_embd). Weights stay in the file's type: the raw bytes are copied to the device once and every matmul decodes
// them in its own kernel. The KV cache is one (2, 1, kv heads, max_context, head_dim) float32 tensor per layer
// (latent attention: (1, 1, max_context, kv_lora_rank + rope_dim)), written in place.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tg/gguf.h"
#include "tg/jit.h"
#include "tg/tensor.h"
#include "tg/tokenizer.h"

namespace tg::llm {

// ** the model **

struct Config {
  std::string arch;          // general.architecture
  int64_t n_layers = 0, dim = 0, hidden_dim = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0, rope_dim = 0, vocab_size = 0;
  int64_t max_context = 0;   // the KV cache's length: {arch}.context_length, or less when asked
  double norm_eps = 1e-5, rope_theta = 10000.0, rope_scale = 1.0;  // rope_scale: positions are divided by it (linear)
  // YaRN (rope.scaling.type "yarn", llama.cpp's ggml rope): each frequency blends its interpolated (divided by
  // rope_scale) and extrapolated angle by a ramp over the dims between the corrections for beta_fast and beta_slow
  // rotations in yarn_orig_context positions; rope_mscale multiplies the rotated dims (YaRN's magnitude correction and
  // rope.scaling.attn_factor), attn_scale the attention scores (deepseek2's mscale squared)
  bool rope_yarn = false;
  int64_t yarn_orig_context = 0;
  double yarn_ext_factor = 1.0, yarn_beta_fast = 32.0, yarn_beta_slow = 1.0, rope_mscale = 1.0, attn_scale = 1.0;
  bool rope_neox = false;    // rotate (x[i], x[i + rope_dim/2]) (qwen) instead of (x[2i], x[2i+1]) (llama)
  bool qk_norm = false, qkv_bias = false, tied_embeddings = false;
  // a mixture of experts (n_experts > 0, llama.cpp's keys): each token's FFN is the sum of the SwiGLUs of its
  // n_experts_used best experts (hidden size expert_hidden_dim), weighted by the router's scores, plus a shared expert's
  // where there is one; the first leading_dense_blocks layers keep a dense FFN of hidden_dim
  int64_t n_experts = 0, n_experts_used = 0, expert_hidden_dim = 0, shared_hidden_dim = 0, leading_dense_blocks = 0;
  // the router's scores ({arch}.expert_gating_func); softmax_weight: the chosen experts' raw logits, softmaxed
  enum class Gating { softmax = 1, sigmoid = 2, softmax_weight = 3, sqrt_softplus = 4 } gating = Gating::softmax;
  bool expert_weights_norm = false;  // the chosen experts' scores divided by their sum (mixtral, qwen3moe)
  double expert_weights_scale = 1.0;
  // deepseek's routing: experts in n_expert_groups groups, a token choosing among the n_expert_groups_used groups whose
  // two best scores sum highest (0: no groups); a layer's exp_probs_b bias shifts the choice, not the weights
  int64_t n_expert_groups = 0, n_expert_groups_used = 0;
  // multi-head latent attention (deepseek2: kv_lora_rank > 0): a position's keys and values are one compressed row of
  // kv_lora_rank (RMS-normed) and one rotary part of rope_dim shared by all heads; a query head is head_dim wide
  // (head_dim - rope_dim "nope" dims, then rope_dim rotated ones) and an output head v_head_dim; queries come from x
  // directly or through a q_lora_rank bottleneck
  int64_t q_lora_rank = 0, kv_lora_rank = 0, v_head_dim = 0;
  // qwen35 / qwen35moe: every full_attention_interval-th layer is attention whose query heads come with a sigmoid gate
  // on their output (attn_output_gate); the others are gated delta nets (linear attention with a recurrent state per
  // value head: ssm_v_heads heads of ssm_inner / ssm_v_heads, keys and queries ssm_k_heads heads of ssm_state, a causal
  // convolution of ssm_conv_kernel taps over their projections)
  std::vector<bool> recurrent;  // per layer (empty: none)
  bool attn_output_gate = false;
  int64_t ssm_conv_kernel = 0, ssm_inner = 0, ssm_state = 0, ssm_v_heads = 0, ssm_k_heads = 0;
};

// the config a GGUF's metadata and tensors describe; a tg::Error names a missing key, an unsupported architecture or a
// shape that does not fit. max_context > 0 caps the context length
Config config_from_gguf(const gguf::GGUF& g, int64_t max_context = 0);
// the tokenizer.ggml.* values of a GGUF's metadata (tokens are required)
Vocab vocab_from_gguf(const gguf::GGUF& g);

class Model {
 public:
  // reads the GGUF header, builds the config and tokenizer and copies the weights' raw bytes to `device` (nothing decoded)
  static Model load(const std::string& path, int64_t max_context = 0, const std::string& device = "");
  Model(gguf::GGUF g, int64_t max_context = 0, const std::string& device = "");  // keeps g (moved in, or a copy)

  // the lazy logits of tokens (1, T) int32 at positions start_pos .. start_pos+T-1, writing their keys and values into
  // the cache: (T, vocab) when all_logits, else (1, vocab) for the last one. Positions >= start_pos are forgotten.
  // start_pos is the only place a position enters the graph (the cache write, the cache read and the RoPE slice); for one
  // token (T == 1) it enters as the bound Variable "start_pos", so every decode position runs the same kernels
  Tensor forward(const Tensor& tokens, int64_t start_pos, bool all_logits = false);
  // the float32 logits (row-major, T x vocab or 1 x vocab) of `tokens` fed from start_pos in chunks of at most `chunk`.
  // A chunk of one token runs through a TinyJit (tinygrad's decode): the second one-token call captures its kernels with start_pos
  // a bound Variable, every later one replays them at its position (JIT=0: no capture)
  std::vector<float> logits(std::span<const int32_t> tokens, int64_t start_pos = 0, bool all_logits = false, int64_t chunk = 32);

  const Config& config() const { return cfg_; }
  const Tokenizer& tokenizer() const { return tok_; }
  const gguf::GGUF& gguf() const { return g_; }
  const std::vector<int32_t>& stop_tokens() const { return stop_; }  // eos, eot and the families' end-of-turn tokens
  const std::string& device() const { return dev_; }
  const TinyJitBase* decode_jit() const { return jit_.get(); }  // the one-token TinyJit, once logits has made it
  // a recurrent layer's state holds everything before it: such a model is fed from 0 or where it stopped, never rewound
  bool recurrent() const { return std::find(cfg_.recurrent.begin(), cfg_.recurrent.end(), true) != cfg_.recurrent.end(); }
  // a copy of what the cache holds for positions 0..n-1 (every layer's keys and values, a recurrent layer's state:
  // then n must be where the model stopped), and its restoration: the model then continues at n as if it had fed them
  struct CacheSnapshot {
    std::vector<Tensor> rows;
    int64_t n = 0;
  };
  CacheSnapshot save_cache(int64_t n);
  void restore_cache(const CacheSnapshot& s);

 private:
  // a linear's weight as float32 (decoded from its bytes where read) and, for a type with an integer dot product, the
  // raw bytes that a few rows of x multiply with integers (gguf::ggml_dot; QUANT_DOT=0: never)
  struct Linear {
    Tensor w;
    std::optional<Tensor> raw;
    gguf::GGMLType type = gguf::GGMLType::F32;
    std::optional<gguf::DotWeight> dot;  // gguf::ggml_dot_weight of raw, where the type has one
  };
  Tensor lin(const Tensor& x, const Linear& l, const std::optional<Tensor>& b = std::nullopt) const;
  struct Layer {
    Tensor attn_norm;
    Linear wq, wk, wv, wo;
    Tensor ffn_norm;
    Linear w_gate, w_up, w_down;  // a dense FFN (empty in a layer of experts)
    Tensor cache_kv;
    struct Experts {
      Linear router;          // (n_experts, dim)
      Tensor gate, up, down;  // (n_experts, out, in) as float32, decoded where an expert's rows are read
      std::optional<Tensor> shared_gate_inp;  // (dim): the shared expert's sigmoid gate
      std::optional<Tensor> probs_bias;       // (n_experts): exp_probs_b, added to the scores only to choose
      std::optional<Linear> shared_gate, shared_up, shared_down;
    };
    std::optional<Experts> moe;
    std::optional<Tensor> q_norm, k_norm, bq, bk, bv;
    struct Latent {  // multi-head latent attention's weights (wq is attn_q, or attn_q_b after the bottleneck q_a)
      std::optional<Linear> q_a;
      std::optional<Tensor> q_a_norm;
      Linear kv_a;          // (kv_lora_rank + rope_dim, dim)
      Tensor kv_a_norm;     // (kv_lora_rank)
      Tensor k_b, v_b;      // (heads, kv_lora_rank, head_dim - rope_dim), (heads, v_head_dim, kv_lora_rank)
    };
    std::optional<Latent> mla;  // cache_kv is then (1, 1, context, kv_lora_rank + rope_dim)
    struct DeltaNet {  // a gated delta net's weights and its two states (conv: the last conv_kernel - 1 inputs)
      Linear qkv, gate, beta, alpha, out;
      Tensor conv1d, dt_bias, a, norm;  // (channels, conv_kernel), (v heads), (v heads): -exp(A_log), (v head dim)
      Tensor conv_state, state;         // (1, conv_kernel - 1, channels), (1, v heads, v head dim, k head dim)
    };
    std::optional<DeltaNet> ssm;
  };
  Tensor latent_attention(Layer& l, const Tensor& x, const sint& start_pos);
  Tensor delta_net(Layer& l, const Tensor& x);
  void reset_or_check_state(int64_t start_pos, int64_t T);  // recurrent layers: the state restarts at 0 and cannot rewind
  int64_t state_pos_ = 0;
  Tensor attention(Layer& l, const Tensor& x, const sint& start_pos);
  Tensor ffn(const Layer& l, const Tensor& x) const;  // the dense SwiGLU or the layer's experts
  Tensor forward_at(const Tensor& rows, const sint& start_pos, bool all_logits);
  Tensor embedding_rows(std::span<const int32_t> ids) const;  // the ids' rows of token_embd's bytes (T, row bytes) on dev_
  sint start_var() const;
  void check_positions(int64_t start_pos, int64_t T) const;
  Tensor decode(int32_t token, int64_t start_pos);  // forward of one token through jit_: realized logits (1, vocab)
  Tensor rope(const Tensor& x, const sint& start_pos) const;
  gguf::GGUF g_;
  Config cfg_;
  Tokenizer tok_;
  std::string dev_;
  Tensor output_norm_, rope_cos_, rope_sin_;
  gguf::TensorInfo embd_;  // token_embd.weight, read a row at a time (embedding_rows)
  Linear output_;
  std::vector<Layer> layers_;
  std::vector<int32_t> stop_;
  std::shared_ptr<TinyJit<Tensor>> jit_;  // built by logits for this object (jit_owner_): a moved Model makes a new one
  const Model* jit_owner_ = nullptr;
};

// ** chat templates (llama.cpp's built-in ones) **

struct Message {
  std::string role, content;  // role: system, user or assistant
};
// "llama2" ([INST] ... [/INST], <<SYS>> block), "llama3" (<|start_header_id|>role<|end_header_id|>), "chatml"
// (<|im_start|>role ... <|im_end|>, qwen). From tokenizer.chat_template when it names one of these, else by family:
// llama with SentencePiece -> llama2, llama with <|start_header_id|> in the vocab -> llama3, anything else -> chatml
std::string chat_template_name(const gguf::GGUF& g);
// the messages as text in template `name`, ending in the assistant's turn when add_generation_prompt (BOS is not
// included: the tokenizer adds it). An unknown name or role is a tg::Error
std::string apply_chat_template(const std::string& name, const std::vector<Message>& messages, bool add_generation_prompt = true);

// ** sampling (on the host, over read-back logits) **

struct SamplerParams {
  double temperature = 0.8;      // <= 0: greedy (argmax; ties to the lowest id)
  int64_t top_k = 40;            // <= 0: off
  double top_p = 0.95;           // >= 1: off
  double min_p = 0.05;           // <= 0: off
  double repeat_penalty = 1.0;   // 1: off; a repeated token's logit is divided by it (positive) or multiplied (negative)
  int64_t repeat_last_n = 64;    // how many of the last tokens count as repeated
  uint64_t seed = 0;
};

// llama.cpp's default chain: repetition penalty, top-k, top-p, min-p, temperature, then a draw from the softmax with a
// seeded generator (the same seed and logits give the same tokens)
class Sampler {
 public:
  explicit Sampler(SamplerParams p = {});
  // the candidates left after the penalty and the filters, with their probabilities at the temperature (summing to 1),
  // by falling probability (ties: lower id first). A wrong size or a non-finite logit is a tg::Error
  std::vector<std::pair<int32_t, double>> distribution(std::span<const float> logits) const;
  int32_t sample(std::span<const float> logits);  // a draw (or the argmax when greedy); does not accept it
  void accept(int32_t token);                     // remember a token for the repetition penalty
  void reset();                                   // forget the history, restart the generator at the seed
  const SamplerParams& params() const { return p_; }

 private:
  SamplerParams p_;
  std::vector<int32_t> history_;
  uint64_t state_;
};

// ** log-probabilities **

// the log-softmax of raw logits, in float64 (a non-finite logit is a tg::Error)
std::vector<double> log_softmax(std::span<const float> logits);
// a token's log-probability under the model (the log-softmax of the raw logits, before any sampler filter) and the `top`
// most likely tokens with theirs (by falling log-probability, ties to the lower id)
struct TokenLogprob {
  int32_t token = 0;
  double logprob = 0;
  std::vector<std::pair<int32_t, double>> top;
};
TokenLogprob token_logprob(std::span<const float> logits, int32_t token, int64_t top = 0);
struct Logprobs {  // given to generate: each sampled token's TokenLogprob with `top` alternatives, in order
  int64_t top = 0;
  std::vector<TokenLogprob> tokens;
};

// ** generation **

struct GenerateStats {
  int64_t prompt_tokens = 0, generated = 0;  // prompt_tokens: those fed (a Session's cached ones are not)
  int64_t cached_tokens = 0;                 // a Session's prompt tokens whose keys and values were in the cache
  double prompt_s = 0, decode_s = 0;  // wall time of the prompt's forward and of the generated-1 forwards after it
};
// feeds `prompt` (from start_pos, reusing the cache before it), then samples up to n tokens, calling on_token for each
// (return false to stop); stops after a stop token (which is reported) or at the context's end. Returns the new tokens
std::vector<int32_t> generate(Model& m, std::span<const int32_t> prompt, int64_t n, Sampler& s,
                              const std::function<bool(int32_t)>& on_token = {}, int64_t start_pos = 0, GenerateStats* stats = nullptr,
                              int64_t chunk = 32, Logprobs* logprobs = nullptr);

// the model's KV cache across generations (a chat's turns, a server's requests): each generate feeds only the prompt's
// tokens after the longest prefix the cache holds (all but the last at most: its logits are needed) and gives the
// sampler that prefix first, so the draws are a fresh generate's. One Session per Model: another writer of the cache
// (a plain generate or logits) makes it stale; clear() forgets it
class Session {
 public:
  // slots > 0: that many earlier sequences' caches are kept as snapshots (least recently used dropped first), and a
  // prompt that begins like one of them more than like the current cache continues from it
  explicit Session(Model& m, size_t slots = 0) : m_(m), slots_(slots) {}
  std::vector<int32_t> generate(std::span<const int32_t> prompt, int64_t n, Sampler& s, const std::function<bool(int32_t)>& on_token = {},
                                GenerateStats* stats = nullptr, int64_t chunk = 32, Logprobs* logprobs = nullptr);
  // each prompt token after the first given the ones before it (all positions' logits: the prompt is fed from 0)
  std::vector<TokenLogprob> prompt_logprobs(std::span<const int32_t> prompt, int64_t top = 0, int64_t chunk = 32);
  void clear() { cached_.clear(); }
  const std::vector<int32_t>& cached() const { return cached_; }  // the tokens whose keys and values the cache holds
  size_t saved() const { return saved_.size(); }                   // the snapshots kept

 private:
  size_t reusable(const std::vector<int32_t>& have, std::span<const int32_t> prompt) const;  // the beginning a prompt may skip
  Model& m_;
  std::vector<int32_t> cached_;
  size_t slots_;
  struct Saved {
    std::vector<int32_t> tokens;
    Model::CacheSnapshot cache;
  };
  std::vector<Saved> saved_;  // most recently used last
};

}  // namespace tg::llm
