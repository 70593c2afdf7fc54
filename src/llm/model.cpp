// The llama-family transformer of a GGUF file (tinygrad's llm/model.py, llama.cpp's metadata keys and RoPE types):
// 1. config and vocab from the metadata, 2. weights (native types typed on the device, quantized ones as raw bytes
// decoded in the kernels that read them), 3. forward with the KV cache, 4. logits in chunks.
#include <algorithm>
#include <cmath>

#include "tg/device.h"
#include "tg/error.h"
#include "tg/llm.h"
#include "util/settings.h"

namespace tg::llm {

namespace {

const gguf::Value* find(const gguf::GGUF& g, const std::string& key) {
  auto it = g.kv.find(key);
  return it == g.kv.end() ? nullptr : &it->second;
}
int64_t get_int(const gguf::GGUF& g, const std::string& key, std::optional<int64_t> dflt = std::nullopt) {
  if (const gguf::Value* v = find(g, key)) {
    // llama.cpp allows per-layer arrays for head counts; a uniform one is read as its first value
    if (v->type() == gguf::ValueType::ARRAY) {
      const auto& a = v->arr().items;
      if (a.empty() || !std::all_of(a.begin(), a.end(), [&](const gguf::Value& x) { return x == a[0]; }))
        throw Error("llm: " + key + " differs between layers, which is not supported");
      return a[0].as_int();
    }
    return v->as_int();
  }
  if (!dflt) throw Error("llm: the GGUF has no metadata key " + key);
  return *dflt;
}
double get_float(const gguf::GGUF& g, const std::string& key, std::optional<double> dflt = std::nullopt) {
  if (const gguf::Value* v = find(g, key)) return v->as_float();
  if (!dflt) throw Error("llm: the GGUF has no metadata key " + key);
  return *dflt;
}
bool has_tensor(const gguf::GGUF& g, const std::string& name) {
  return std::any_of(g.tensors.begin(), g.tensors.end(), [&](const gguf::TensorInfo& t) { return t.name == name; });
}
std::string shape_s(const Shape& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); i++) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

}  // namespace

// ** 1. config and vocab **

Config config_from_gguf(const gguf::GGUF& g, int64_t max_context) {
  Config c;
  const gguf::Value* a = find(g, "general.architecture");
  if (!a) throw Error("llm: the GGUF has no general.architecture");
  c.arch = a->str();
  if (c.arch == "llama" || c.arch == "mistral" || c.arch == "deepseek2") c.rope_neox = false;
  else if (c.arch == "qwen2" || c.arch == "qwen3" || c.arch == "qwen2moe" || c.arch == "qwen3moe" || c.arch == "olmoe" || c.arch == "qwen35" ||
           c.arch == "qwen35moe")
    c.rope_neox = true;  // (qwen35's interleaved M-RoPE is neox's rotation where a text token's positions are all equal)
  else throw Error("llm: architecture '" + c.arch + "' is not supported (llama, mistral, qwen2, qwen3, qwen2moe, qwen3moe, olmoe, deepseek2, qwen35, qwen35moe)");
  const std::string p = c.arch + ".";
  // (blocks after the first block_count - nextn_predict_layers predict further tokens: not run, as in llama.cpp's default)
  c.n_layers = get_int(g, p + "block_count") - get_int(g, p + "nextn_predict_layers", 0), c.dim = get_int(g, p + "embedding_length");
  c.n_experts = get_int(g, p + "expert_count", 0);
  if (c.n_experts > 0) {
    c.n_experts_used = get_int(g, p + "expert_used_count"), c.expert_hidden_dim = get_int(g, p + "expert_feed_forward_length");
    // deepseek2 counts its shared experts, each expert_feed_forward_length wide
    c.shared_hidden_dim = get_int(g, p + "expert_shared_feed_forward_length", get_int(g, p + "expert_shared_count", 0) * c.expert_hidden_dim);
    c.leading_dense_blocks = get_int(g, p + "leading_dense_block_count", 0);
    int64_t gating = get_int(g, p + "expert_gating_func", 1);
    if (gating < 1 || gating > 4)
      throw Error("llm: expert_gating_func " + std::to_string(gating) + " is not supported (1 softmax, 2 sigmoid, 3 softmax of the chosen, 4 sqrt softplus)");
    c.gating = Config::Gating(gating);
    c.n_expert_groups = get_int(g, p + "expert_group_count", 0), c.n_expert_groups_used = get_int(g, p + "expert_group_used_count", 0);
    if (c.n_expert_groups > 1 && (c.n_experts % c.n_expert_groups || c.n_expert_groups_used < 1 || c.n_expert_groups_used > c.n_expert_groups ||
                                  c.n_experts / c.n_expert_groups < 2))
      throw Error("llm: bad expert groups: " + std::to_string(c.n_expert_groups) + " groups of " + std::to_string(c.n_experts) + " experts, " +
                  std::to_string(c.n_expert_groups_used) + " used");
    // llama.cpp's defaults: mixtral (llama), qwen3moe and qwen35moe normalize the chosen experts' weights, qwen2moe and olmoe do not
    c.expert_weights_norm = find(g, p + "expert_weights_norm") ? find(g, p + "expert_weights_norm")->as_bool()
                                                               : c.arch == "llama" || c.arch == "qwen3moe" || c.arch == "qwen35moe";
    c.expert_weights_scale = get_float(g, p + "expert_weights_scale", 1.0);
    if (c.n_experts_used <= 0 || c.n_experts_used > c.n_experts || c.expert_hidden_dim <= 0 || c.shared_hidden_dim < 0 ||
        c.leading_dense_blocks < 0 || c.leading_dense_blocks > c.n_layers)
      throw Error("llm: bad experts: expert_count " + std::to_string(c.n_experts) + ", expert_used_count " + std::to_string(c.n_experts_used) +
                  ", expert_feed_forward_length " + std::to_string(c.expert_hidden_dim) + ", leading_dense_block_count " + std::to_string(c.leading_dense_blocks));
  }
  bool dense = c.n_experts == 0 || c.leading_dense_blocks > 0;
  c.hidden_dim = get_int(g, p + "feed_forward_length", dense ? std::nullopt : std::optional<int64_t>(0));
  c.n_heads = get_int(g, p + "attention.head_count"), c.n_kv_heads = get_int(g, p + "attention.head_count_kv", c.n_heads);
  if (c.n_layers <= 0 || c.dim <= 0 || (dense && c.hidden_dim <= 0) || c.n_heads <= 0 || c.n_kv_heads <= 0 || c.n_heads % c.n_kv_heads != 0)
    throw Error("llm: bad sizes: block_count " + std::to_string(c.n_layers) + ", embedding_length " + std::to_string(c.dim) + ", heads " +
                std::to_string(c.n_heads) + " / kv heads " + std::to_string(c.n_kv_heads) + " (must divide)");
  c.head_dim = get_int(g, p + "attention.key_length", c.dim / c.n_heads);
  c.v_head_dim = get_int(g, p + "attention.value_length", c.head_dim);
  c.kv_lora_rank = get_int(g, p + "attention.kv_lora_rank", 0), c.q_lora_rank = get_int(g, p + "attention.q_lora_rank", 0);
  if (c.kv_lora_rank > 0)  // llama.cpp's MLA files give the query and value heads' sizes as *_mla (key_length: the cache row)
    c.head_dim = get_int(g, p + "attention.key_length_mla", c.head_dim), c.v_head_dim = get_int(g, p + "attention.value_length_mla", c.v_head_dim);
  else if (c.v_head_dim != c.head_dim) throw Error("llm: attention.value_length != key_length is not supported");
  c.rope_dim = get_int(g, p + "rope.dimension_count", c.head_dim);
  if (c.head_dim <= 0 || c.rope_dim <= 0 || c.rope_dim > c.head_dim || c.rope_dim % 2)
    throw Error("llm: rope.dimension_count " + std::to_string(c.rope_dim) + " must be even and at most the head dim " + std::to_string(c.head_dim));
  if (c.kv_lora_rank < 0 || c.q_lora_rank < 0 || (c.kv_lora_rank > 0 && (c.v_head_dim <= 0 || c.rope_dim >= c.head_dim)))
    throw Error("llm: bad latent attention: kv_lora_rank " + std::to_string(c.kv_lora_rank) + ", q_lora_rank " + std::to_string(c.q_lora_rank) +
                ", query head " + std::to_string(c.head_dim) + " (rope " + std::to_string(c.rope_dim) + "), value head " + std::to_string(c.v_head_dim));
  c.norm_eps = get_float(g, p + "attention.layer_norm_rms_epsilon");
  c.rope_theta = get_float(g, p + "rope.freq_base", 10000.0);
  std::string scaling = find(g, p + "rope.scaling.type") ? find(g, p + "rope.scaling.type")->str() : "none";
  if (scaling == "linear" || scaling == "yarn") c.rope_scale = get_float(g, p + "rope.scaling.factor", 1.0);
  else if (scaling != "none") throw Error("llm: rope.scaling.type '" + scaling + "' is not supported (none, linear, yarn)");
  if (find(g, p + "rope.scale_linear")) c.rope_scale = get_float(g, p + "rope.scale_linear");
  if (!(c.rope_scale > 0)) throw Error("llm: rope scaling factor must be positive");
  c.max_context = get_int(g, p + "context_length");
  // the magnitudes as llama.cpp's context and deepseek2 graph derive them (mscale: 0.1 m ln(factor) + 1)
  c.rope_yarn = scaling == "yarn";
  double f = c.rope_scale, ln_f = std::log(f), attn_factor = 1.0;
  auto mscale = [&](double m) { return f <= 1 ? 1.0 : 0.1 * m * ln_f + 1; };
  double log_mul = c.arch == "deepseek2" ? get_float(g, p + "rope.scaling.yarn_log_multiplier", 0.0) / 0.1 : 0.0;  // (stored as 0.1 x mscale_all_dim)
  if (c.rope_yarn) {
    c.yarn_orig_context = get_int(g, p + "rope.scaling.original_context_length", c.max_context);
    c.yarn_ext_factor = get_float(g, p + "rope.scaling.yarn_ext_factor", 1.0);
    c.yarn_beta_fast = get_float(g, p + "rope.scaling.yarn_beta_fast", 32.0), c.yarn_beta_slow = get_float(g, p + "rope.scaling.yarn_beta_slow", 1.0);
    if (c.yarn_orig_context <= 0) throw Error("llm: rope.scaling.original_context_length must be positive");
    if (c.yarn_ext_factor != 0) {
      attn_factor = log_mul != 0 ? mscale(c.arch == "deepseek2" && log_mul != 1 ? log_mul : 1.0) / mscale(log_mul) : mscale(1.0);
      attn_factor /= 1 + 0.1 * ln_f;
    }
  }
  attn_factor *= get_float(g, p + "rope.scaling.attn_factor", 1.0);
  c.rope_mscale = attn_factor * (c.rope_yarn && c.yarn_ext_factor != 0 ? 1 + 0.1 * ln_f : 1.0);
  if (c.arch == "deepseek2") c.attn_scale = std::pow(attn_factor * (1 + 0.1 * ln_f) * (1 + 0.1 * log_mul * ln_f), 2);
  if (max_context > 0) c.max_context = std::min(c.max_context, max_context);
  if (c.max_context <= 0) throw Error("llm: context_length must be positive");
  if (c.arch == "qwen35" || c.arch == "qwen35moe") {
    c.attn_output_gate = true;
    c.ssm_conv_kernel = get_int(g, p + "ssm.conv_kernel"), c.ssm_inner = get_int(g, p + "ssm.inner_size"), c.ssm_state = get_int(g, p + "ssm.state_size");
    c.ssm_v_heads = get_int(g, p + "ssm.time_step_rank"), c.ssm_k_heads = get_int(g, p + "ssm.group_count");
    int64_t every = get_int(g, p + "full_attention_interval", 4);
    if (c.ssm_conv_kernel < 1 || c.ssm_state < 1 || c.ssm_k_heads < 1 || c.ssm_v_heads < 1 || c.ssm_v_heads % c.ssm_k_heads || c.ssm_inner % c.ssm_v_heads ||
        every < 1)
      throw Error("llm: bad gated delta net: conv_kernel " + std::to_string(c.ssm_conv_kernel) + ", state_size " + std::to_string(c.ssm_state) +
                  ", group_count " + std::to_string(c.ssm_k_heads) + ", time_step_rank " + std::to_string(c.ssm_v_heads) + ", inner_size " +
                  std::to_string(c.ssm_inner) + ", full_attention_interval " + std::to_string(every));
    for (int64_t i = 0; i < c.n_layers; i++) c.recurrent.push_back((i + 1) % every != 0);
    if (const gguf::Value* sec = find(g, p + "rope.dimension_sections"); sec && sec->arr().items.size() > 3 && sec->arr().items[3].as_int() != 0)
      throw Error("llm: rope.dimension_sections with a fourth section is not supported (text positions only)");
  }
  c.vocab_size = g.info("token_embd.weight").shape.at(0);
  std::string att = "blk." + std::to_string(std::find(c.recurrent.begin(), c.recurrent.end(), false) - c.recurrent.begin()) + ".";  // the first attention layer
  c.qk_norm = has_tensor(g, att + "attn_q_norm.weight");
  c.qkv_bias = has_tensor(g, att + "attn_q.bias");
  c.tied_embeddings = !has_tensor(g, "output.weight");
  return c;
}

Vocab vocab_from_gguf(const gguf::GGUF& g) {
  Vocab v;
  auto strs = [&](const std::string& k) {
    std::vector<std::string> r;
    if (const gguf::Value* x = find(g, k))
      for (auto& i : x->arr().items) r.push_back(i.str());
    return r;
  };
  auto id = [&](const std::string& k) -> std::optional<int32_t> {
    const gguf::Value* x = find(g, k);
    if (!x) return std::nullopt;
    int64_t i = x->as_int();
    if (i < 0 || i > INT32_MAX) throw Error("llm: " + k + " = " + std::to_string(i) + " is not a token id");
    return int32_t(i);
  };
  auto flag = [&](const std::string& k) -> std::optional<bool> { return find(g, k) ? std::optional(find(g, k)->as_bool()) : std::nullopt; };
  if (!find(g, "tokenizer.ggml.tokens")) throw Error("llm: the GGUF has no tokenizer (tokenizer.ggml.tokens)");
  if (const gguf::Value* m = find(g, "tokenizer.ggml.model")) v.model = m->str();
  if (const gguf::Value* m = find(g, "tokenizer.ggml.pre")) v.pre = m->str();
  v.tokens = strs("tokenizer.ggml.tokens"), v.merges = strs("tokenizer.ggml.merges");
  if (const gguf::Value* x = find(g, "tokenizer.ggml.scores"))
    for (auto& i : x->arr().items) v.scores.push_back(float(i.as_float()));
  if (const gguf::Value* x = find(g, "tokenizer.ggml.token_type"))
    for (auto& i : x->arr().items) v.token_type.push_back(int32_t(i.as_int()));
  v.bos = id("tokenizer.ggml.bos_token_id"), v.eos = id("tokenizer.ggml.eos_token_id"), v.unk = id("tokenizer.ggml.unknown_token_id");
  v.add_bos = flag("tokenizer.ggml.add_bos_token"), v.add_eos = flag("tokenizer.ggml.add_eos_token");
  v.add_space_prefix = flag("tokenizer.ggml.add_space_prefix");
  return v;
}

// ** 2. weights **

Model Model::load(const std::string& path, int64_t max_context, const std::string& device) {
  return Model(gguf::gguf_load(path), max_context, device);
}

Model::Model(gguf::GGUF g, int64_t max_context, const std::string& device)
    : g_(std::move(g)), cfg_(config_from_gguf(g_, max_context)), tok_(vocab_from_gguf(g_)), dev_(device) {
  const Config& c = cfg_;
  if (tok_.n_vocab() != c.vocab_size)
    throw Error("llm: the tokenizer has " + std::to_string(tok_.n_vocab()) + " tokens, token_embd.weight " + std::to_string(c.vocab_size) + " rows");
  std::vector<Tensor> raw;  // copied to the device in one schedule below; each weight decodes from its bytes when used
  auto weight = [&](const std::string& name, const Shape& shape) {
    const gguf::TensorInfo& t = g_.info(name);
    if (t.shape != shape) throw Error("llm: tensor " + name + " has shape " + shape_s(t.shape) + ", expected " + shape_s(shape));
    if (!gguf::ggml_type_supported(t.type)) throw Error("llm: tensor " + name + " has type " + gguf::ggml_type_name(uint32_t(t.type)) + ", which is not supported");
    int64_t b = int64_t(g_.parts.at(t.split).data_start + t.offset);
    Tensor r = gguf::ggml_data_to_device(g_.parts[t.split].file.shrink({{b, b + t.nbytes}}), t.numel(), t.type, dev_).contiguous();
    raw.push_back(r);
    return Linear{gguf::ggml_data_to_tensor(r, t.numel(), t.type).reshape(shape).cast(dtypes::float32), r, t.type};
  };
  auto linear = [&](const std::string& name, const Shape& shape) {
    Linear l = weight(name, shape);
    // (Q8_0's integer dot is slower than its float path on AVX-512: only QUANT_DOT=2 takes it)
    int64_t qd = settings().QUANT_DOT;
    if (!gguf::ggml_dot_supported(l.type) || qd <= 0 || (qd == 1 && l.type != gguf::GGMLType::Q4_K)) l.raw.reset();
    return l;
  };
  auto opt = [&](const std::string& name, const Shape& shape) { return has_tensor(g_, name) ? std::optional(weight(name, shape).w) : std::nullopt; };
  int64_t q = c.n_heads * c.head_dim, kv = c.n_kv_heads * c.head_dim;
  embd_ = g_.info("token_embd.weight");
  if (embd_.shape != Shape{c.vocab_size, c.dim} || !gguf::ggml_type_supported(embd_.type) || c.dim % gguf::ggml_block(embd_.type).first)
    throw Error("llm: token_embd.weight is " + shape_s(embd_.shape) + " " + gguf::ggml_type_name(uint32_t(embd_.type)) + ", not rows of whole blocks");
  output_norm_ = weight("output_norm.weight", {c.dim}).w;
  output_ = linear(c.tied_embeddings ? "token_embd.weight" : "output.weight", {c.vocab_size, c.dim});
  // latent attention's weights; k_b and v_b come split (attn_k_b, attn_v_b) or, in older files, as one attn_kv_b whose
  // rows are each head's nope key rows then its value rows
  auto latent = [&](const std::string& b, Layer& l) {
    int64_t H = c.n_heads, R = c.kv_lora_rank, nope = c.head_dim - c.rope_dim, V = c.v_head_dim;
    Layer::Latent m{.kv_a = linear(b + "attn_kv_a_mqa.weight", {R + c.rope_dim, c.dim}), .kv_a_norm = weight(b + "attn_kv_a_norm.weight", {R}).w};
    if (c.q_lora_rank > 0)
      m.q_a = linear(b + "attn_q_a.weight", {c.q_lora_rank, c.dim}), m.q_a_norm = weight(b + "attn_q_a_norm.weight", {c.q_lora_rank}).w,
      l.wq = linear(b + "attn_q_b.weight", {q, c.q_lora_rank});
    else l.wq = linear(b + "attn_q.weight", {q, c.dim});
    if (has_tensor(g_, b + "attn_k_b.weight")) m.k_b = weight(b + "attn_k_b.weight", {H, R, nope}).w, m.v_b = weight(b + "attn_v_b.weight", {H, V, R}).w;
    else {
      Tensor kvb = weight(b + "attn_kv_b.weight", {H * (nope + V), R}).w.reshape({H, nope + V, R});
      m.k_b = kvb.shrink({{0, H}, {0, nope}, {0, R}}).transpose(1, 2), m.v_b = kvb.shrink({{0, H}, {nope, nope + V}, {0, R}});
    }
    l.cache_kv = Tensor::zeros({1, 1, c.max_context, R + c.rope_dim}, dtypes::float32, dev_).contiguous();
    return m;
  };
  auto delta = [&](const std::string& b) {
    int64_t C = 2 * c.ssm_k_heads * c.ssm_state + c.ssm_inner, Hv = c.ssm_v_heads;
    return Layer::DeltaNet{linear(b + "attn_qkv.weight", {C, c.dim}), linear(b + "attn_gate.weight", {c.ssm_inner, c.dim}),
                           linear(b + "ssm_beta.weight", {Hv, c.dim}), linear(b + "ssm_alpha.weight", {Hv, c.dim}),
                           linear(b + "ssm_out.weight", {c.dim, c.ssm_inner}), weight(b + "ssm_conv1d.weight", {C, c.ssm_conv_kernel}).w,
                           weight(b + "ssm_dt.bias", {Hv}).w, weight(b + "ssm_a", {Hv}).w, weight(b + "ssm_norm.weight", {c.ssm_inner / Hv}).w,
                           Tensor::zeros({1, c.ssm_conv_kernel - 1, C}, dtypes::float32, dev_).contiguous(),
                           Tensor::zeros({1, Hv, c.ssm_inner / Hv, c.ssm_state}, dtypes::float32, dev_).contiguous()};
  };
  for (int64_t i = 0; i < c.n_layers; i++) {
    std::string b = "blk." + std::to_string(i) + ".";
    bool experts = c.n_experts > 0 && i >= c.leading_dense_blocks;
    auto dense = [&](const char* name, const Shape& shape) { return experts ? Linear{} : linear(b + name, shape); };
    Layer l{weight(b + "attn_norm.weight", {c.dim}).w};
    bool recurrent = !c.recurrent.empty() && c.recurrent[size_t(i)];
    if (recurrent) l.ssm = delta(b);
    else if (c.kv_lora_rank == 0)
      l.wq = linear(b + "attn_q.weight", {c.attn_output_gate ? 2 * q : q, c.dim}), l.wk = linear(b + "attn_k.weight", {kv, c.dim}),
      l.wv = linear(b + "attn_v.weight", {kv, c.dim}), l.cache_kv = Tensor::zeros({2, 1, c.n_kv_heads, c.max_context, c.head_dim}, dtypes::float32, dev_).contiguous();
    else l.mla = latent(b, l);
    if (!recurrent) l.wo = linear(b + "attn_output.weight", {c.dim, c.n_heads * c.v_head_dim});
    l.ffn_norm = weight(b + (has_tensor(g_, b + "post_attention_norm.weight") ? "post_attention_norm.weight" : "ffn_norm.weight"), {c.dim}).w;
    l.w_gate = dense("ffn_gate.weight", {c.hidden_dim, c.dim}), l.w_up = dense("ffn_up.weight", {c.hidden_dim, c.dim});
    l.w_down = dense("ffn_down.weight", {c.dim, c.hidden_dim});
    if (experts) {
      int64_t E = c.n_experts, F = c.expert_hidden_dim, S = c.shared_hidden_dim;
      l.moe = Layer::Experts{linear(b + "ffn_gate_inp.weight", {E, c.dim}), weight(b + "ffn_gate_exps.weight", {E, F, c.dim}).w,
                             weight(b + "ffn_up_exps.weight", {E, F, c.dim}).w, weight(b + "ffn_down_exps.weight", {E, c.dim, F}).w};
      l.moe->probs_bias = opt(b + "exp_probs_b.bias", {E});
      if (S > 0)
        l.moe->shared_gate = linear(b + "ffn_gate_shexp.weight", {S, c.dim}), l.moe->shared_up = linear(b + "ffn_up_shexp.weight", {S, c.dim}),
        l.moe->shared_down = linear(b + "ffn_down_shexp.weight", {c.dim, S}), l.moe->shared_gate_inp = opt(b + "ffn_gate_inp_shexp.weight", {c.dim});
    }
    if (c.qk_norm && !recurrent) {  // per head, or (olmoe) over the whole projection
      bool full = g_.info(b + "attn_q_norm.weight").shape == Shape{q};
      l.q_norm = weight(b + "attn_q_norm.weight", {full ? q : c.head_dim}).w, l.k_norm = weight(b + "attn_k_norm.weight", {full ? kv : c.head_dim}).w;
    }
    l.bq = opt(b + "attn_q.bias", {q}), l.bk = opt(b + "attn_k.bias", {kv}), l.bv = opt(b + "attn_v.bias", {kv});
    if (l.ssm) raw.insert(raw.end(), {l.ssm->conv_state, l.ssm->state});
    else raw.push_back(l.cache_kv);
    layers_.push_back(std::move(l));
  }
  // RoPE angles pos / scale * theta^(-2i/rope_dim) (llama3's rope_freqs.weight divides each frequency), on the host;
  // YaRN: pair i takes the unscaled angle below the ramp's low dim, the scaled one above its high dim, a blend between
  std::vector<float> ff(size_t(c.rope_dim / 2), 1.0f);
  if (has_tensor(g_, "rope_freqs.weight")) ff = g_.tensor("rope_freqs.weight", dev_).cast(dtypes::float32).to_vector<float>();
  if (int64_t(ff.size()) != c.rope_dim / 2) throw Error("llm: rope_freqs.weight has " + std::to_string(ff.size()) + " values, expected " + std::to_string(c.rope_dim / 2));
  double ext = c.rope_yarn ? c.yarn_ext_factor : 0.0, lo = 0, hi = 0;
  if (ext != 0) {  // the dims where beta rotations fit in the original context
    auto corr = [&](double rot) { return double(c.rope_dim) * std::log(double(c.yarn_orig_context) / (rot * 2 * M_PI)) / (2 * std::log(c.rope_theta)); };
    lo = std::max(0.0, std::floor(corr(c.yarn_beta_fast))), hi = std::min(double(c.rope_dim - 1), std::ceil(corr(c.yarn_beta_slow)));
  }
  std::vector<float> cs(size_t(c.max_context * c.rope_dim / 2)), sn(cs.size());
  for (int64_t p = 0; p < c.max_context; p++)
    for (int64_t i = 0; i < c.rope_dim / 2; i++) {
      double extrap = double(p) * std::pow(c.rope_theta, -2.0 * double(i) / double(c.rope_dim)) / double(ff[size_t(i)]), a = extrap / c.rope_scale;
      if (ext != 0) {
        double mix = (1 - std::clamp((double(i) - lo) / std::max(0.001, hi - lo), 0.0, 1.0)) * ext;
        a = a * (1 - mix) + extrap * mix;
      }
      cs[size_t(p * c.rope_dim / 2 + i)] = float(std::cos(a) * c.rope_mscale), sn[size_t(p * c.rope_dim / 2 + i)] = float(std::sin(a) * c.rope_mscale);
    }
  rope_cos_ = Tensor::from_vector(cs, {c.max_context, c.rope_dim / 2}, std::nullopt, dev_);
  rope_sin_ = Tensor::from_vector(sn, {c.max_context, c.rope_dim / 2}, std::nullopt, dev_);
  Tensor::realize(raw);
  // Q4_K's words and float16 as views of the realized bytes, its scales decoded: once, not in every decode graph
  std::vector<Tensor> dots;
  auto prepare = [&](Linear& l) {
    if (!l.raw || l.type != gguf::GGMLType::Q4_K) return;
    l.dot = gguf::ggml_dot_weight(*l.raw, l.w.shape()[0], l.w.shape()[1], l.type);
    dots.insert(dots.end(), {l.dot->words, l.dot->halves, l.dot->scales});
  };
  prepare(output_);
  for (auto& l : layers_) {
    for (Linear* x : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) prepare(*x);  // (a layer of experts: no dense FFN)
    if (l.mla && l.mla->q_a) prepare(*l.mla->q_a);
    if (l.mla) prepare(l.mla->kv_a);
    if (l.ssm)
      for (Linear* x : {&l.ssm->qkv, &l.ssm->gate, &l.ssm->beta, &l.ssm->alpha, &l.ssm->out}) prepare(*x);
  }
  Tensor::realize(dots);
  for (const char* s : {"<|eot_id|>", "<|end_of_text|>", "<|im_end|>", "<|endoftext|>", "</s>"})
    for (int32_t i = 0; i < tok_.n_vocab(); i++)
      if (tok_.token(i) == s && tok_.type(i) == TokenType::CONTROL) stop_.push_back(i);
  for (const char* k : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id"})
    if (const gguf::Value* v = find(g_, k); v && v->as_int() >= 0 && v->as_int() < tok_.n_vocab() &&
                                            std::find(stop_.begin(), stop_.end(), int32_t(v->as_int())) == stop_.end())
      stop_.push_back(int32_t(v->as_int()));
}

// ** 3. forward **

void Model::check_positions(int64_t start_pos, int64_t T) const {
  if (start_pos < 0 || start_pos + T > cfg_.max_context)
    throw Error("llm: positions " + std::to_string(start_pos) + ".." + std::to_string(start_pos + T - 1) + " exceed the context of " +
                std::to_string(cfg_.max_context));
}
sint Model::start_var() const { return tg::Variable("start_pos", 0, cfg_.max_context - 1); }

namespace {
Tensor rms(const Tensor& x, const Tensor& w, double eps) { return x.rms_norm(-1, eps) * w; }
}  // namespace

// x (1, T, K) @ W^T (+ b). A few rows of x (decode) with a quantized W: ggml's integer dot products on W's bytes, x
// quantized to int8 per block (where the float path converts and multiplies every weight). Not for more rows: a short
// prompt's integer kernels were 15-20 % slower at 8-16 rows, 10 % faster at 32-48, and took ~2.7 s more to generate
// for each new prompt length; from 64 rows the float path's panels win (docs/benchmarks.md, the Q4_K prompt)
Tensor Model::lin(const Tensor& x, const Linear& l, const std::optional<Tensor>& b) const {
  int64_t T = x.shape()[x.ndim() - 2], K = x.shape().back(), N = l.w.shape()[0];
  // (Q4_K's prompt GEMM from 64 rows, where packed_dot copies W into panels: see ggml_dequant_rows)
  Tensor w = l.dot && T >= 64 ? gguf::ggml_dequant_rows(*l.dot, N, K) : l.w;
  Tensor y = l.raw && T <= 4 ? gguf::ggml_dot(x.reshape({T, K}), *l.raw, N, l.type, l.dot).reshape({1, T, N}) : x.matmul(w.transpose(0, 1));
  return b ? y + *b : y;
}

// x (1, heads, T, head_dim) rotated at positions start_pos.. (the first rope_dim dims; the rest pass through)
Tensor Model::rope(const Tensor& x, const sint& start_pos) const {
  const Config& c = cfg_;
  int64_t T = x.shape()[2], h = c.rope_dim / 2;
  Tensor cos = rope_cos_.shrink({{start_pos, start_pos + T}, {0, h}}).reshape({1, 1, T, h});
  Tensor sin = rope_sin_.shrink({{start_pos, start_pos + T}, {0, h}}).reshape({1, 1, T, h});
  Tensor r = x.shrink({{0, 1}, {0, x.shape()[1]}, {0, T}, {0, c.rope_dim}}), out;
  if (c.rope_neox) {
    Tensor a = r.shrink({{0, 1}, {0, x.shape()[1]}, {0, T}, {0, h}}), b = r.shrink({{0, 1}, {0, x.shape()[1]}, {0, T}, {h, 2 * h}});
    out = Tensor::cat({a * cos - b * sin, b * cos + a * sin}, -1);
  } else {
    Tensor p = r.reshape({1, x.shape()[1], T, h, 2});
    Tensor a = p.shrink({{0, 1}, {0, x.shape()[1]}, {0, T}, {0, h}, {0, 1}}).squeeze(-1);
    Tensor b = p.shrink({{0, 1}, {0, x.shape()[1]}, {0, T}, {0, h}, {1, 2}}).squeeze(-1);
    out = Tensor::stack({a * cos - b * sin, b * cos + a * sin}, -1).reshape({1, x.shape()[1], T, c.rope_dim});
  }
  if (c.rope_dim == x.shape()[3]) return out;
  return out.cat(x.shrink({{0, 1}, {0, x.shape()[1]}, {0, T}, {c.rope_dim, x.shape()[3]}}), -1);
}

Tensor Model::attention(Layer& l, const Tensor& x, const sint& start_pos) {
  if (l.mla) return latent_attention(l, x, start_pos);
  const Config& c = cfg_;
  int64_t T = x.shape()[1];
  Tensor q = lin(x, l.wq, l.bq), k = lin(x, l.wk, l.bk);
  std::optional<Tensor> gate;  // qwen35: each query head's rows are followed by its output gate's
  if (c.attn_output_gate) {
    Tensor qg = q.reshape({1, T, c.n_heads, 2, c.head_dim});
    q = qg.shrink({{0, 1}, {0, T}, {0, c.n_heads}, {0, 1}, {0, c.head_dim}}).reshape({1, T, c.n_heads * c.head_dim});
    gate = qg.shrink({{0, 1}, {0, T}, {0, c.n_heads}, {1, 2}, {0, c.head_dim}}).reshape({1, T, c.n_heads * c.head_dim}).sigmoid();
  }
  bool full_norm = l.q_norm && l.q_norm->shape()[0] != c.head_dim;  // olmoe: q and k normed before they split into heads
  if (full_norm) q = rms(q, *l.q_norm, c.norm_eps), k = rms(k, *l.k_norm, c.norm_eps);
  q = q.reshape({1, T, c.n_heads, c.head_dim}), k = k.reshape({1, T, c.n_kv_heads, c.head_dim});
  Tensor v = lin(x, l.wv, l.bv).reshape({1, T, c.n_kv_heads, c.head_dim});
  if (l.q_norm && !full_norm) q = rms(q, *l.q_norm, c.norm_eps), k = rms(k, *l.k_norm, c.norm_eps);
  q = rope(q.transpose(1, 2), start_pos), k = rope(k.transpose(1, 2), start_pos), v = v.transpose(1, 2);
  // keys and values are GEMMs (matrix-vector products in decode) of their own: fused into the cache write (a stack of
  // two reduces), the kernel loses the GEMM tile (a prompt chunk's ran at a fraction of a GFLOP/s) or decode's 8 rows
  k = k.contiguous(), v = v.contiguous();
  sint end = start_pos + T;
  l.cache_kv.shrink({{0, 2}, {0, 1}, {0, c.n_kv_heads}, {start_pos, end}, {0, c.head_dim}}).assign(Tensor::stack({k, v}));
  // keys and values (1, kv heads, end, head_dim); end may be symbolic
  auto cached = [&](int64_t i) {
    return l.cache_kv.shrink({{i, i + 1}, {0, 1}, {0, c.n_kv_heads}, {0, end}, {0, c.head_dim}}).reshape({1, c.n_kv_heads, end, c.head_dim});
  };
  // query t sees positions <= start_pos + t (the lower-right causal mask, not is_causal's upper-left); one query sees everything
  std::optional<Tensor> mask;
  if (T > 1) mask = Tensor(-INFINITY, dtypes::float32).reshape({1, 1, 1, 1}).expand({1, 1, T, end}).triu(start_pos + 1);
  Tensor a;
  if (T == 1) a = q.scaled_dot_product_attention(cached(0), cached(1), mask, 0.0, false, true);
  else {
    // a prompt chunk: the scores and the softmax are kernels of their own, so both products are plain batched GEMMs
    // (fused, the rotary embedding of q is redone per key and the softmax's exp per output lane)
    int64_t g = c.n_heads / c.n_kv_heads;
    Tensor kk = cached(0).repeat_interleave(g, -3), vv = cached(1).repeat_interleave(g, -3);
    Tensor s = q.contiguous().matmul(kk.transpose(-2, -1)) / std::sqrt(double(c.head_dim)) + *mask;
    a = s.softmax(-1).contiguous().matmul(vv);
  }
  a = a.transpose(1, 2).reshape({1, T, c.n_heads * c.head_dim});
  return lin(gate ? a * *gate : a, l.wo);
}

// a gated delta net (llama.cpp's qwen35 linear attention, token by token as its autoregressive path): the projections
// through a causal depthwise convolution (its window continues from the conv state), q and k L2-normalized, then per
// value head the state S (v dim x k dim) decays by exp(g), learns v - S k at rate beta along k, and is read by q; the
// output is RMS-normed and gated by silu(z). Both states are written back once the chunk's outputs are computed
Tensor Model::delta_net(Layer& l, const Tensor& x) {
  const Config& c = cfg_;
  Layer::DeltaNet& d = *l.ssm;
  int64_t T = x.shape()[1], K = c.ssm_conv_kernel, Hk = c.ssm_k_heads, Kd = c.ssm_state, Hv = c.ssm_v_heads, Vd = c.ssm_inner / Hv;
  int64_t C = 2 * Hk * Kd + c.ssm_inner;
  Tensor beta = lin(x, d.beta).sigmoid(), decay = ((lin(x, d.alpha) + d.dt_bias).softplus() * d.a).exp();  // (1, T, Hv)
  Tensor win = Tensor::cat({d.conv_state, lin(x, d.qkv)}, 1);  // (1, K - 1 + T, C)
  Tensor conv = win.shrink({{0, 1}, {0, T}, {0, C}}) * d.conv1d.shrink({{0, C}, {0, 1}}).reshape({C});
  for (int64_t j = 1; j < K; j++) conv = conv + win.shrink({{0, 1}, {j, j + T}, {0, C}}) * d.conv1d.shrink({{0, C}, {j, j + 1}}).reshape({C});
  conv = conv.silu();
  auto heads = [&](int64_t from, int64_t n, int64_t dim) { return conv.shrink({{0, 1}, {0, T}, {from, from + n * dim}}).reshape({1, T, n, dim}); };
  auto l2 = [&](const Tensor& t) { return t * ((t * t).sum(-1, true) + c.norm_eps).rsqrt(); };
  // (value head h reads key head h % Hk: ggml_repeat tiles the key heads)
  Tensor q = l2(heads(0, Hk, Kd)).repeat({1, 1, Hv / Hk, 1}) * (1.0 / std::sqrt(double(Kd))), k = l2(heads(Hk * Kd, Hk, Kd)).repeat({1, 1, Hv / Hk, 1});
  Tensor v = heads(2 * Hk * Kd, Hv, Vd);
  auto at = [&](const Tensor& z, int64_t t) {  // token t of (1, T, Hv, ...) as (1, Hv, ...)
    Shape s = z.shape();
    SymPairs r;
    for (size_t i = 0; i < s.size(); i++) r.push_back(i == 1 ? std::pair<sint, sint>{t, t + 1} : std::pair<sint, sint>{0, s[i]});
    return z.shrink(r).squeeze(1);
  };
  Tensor S = d.state;
  std::vector<Tensor> outs;
  for (int64_t t = 0; t < T; t++) {
    Tensor kt = at(k, t).unsqueeze(2);  // (1, Hv, 1, Kd)
    S = S * at(decay, t).reshape({1, Hv, 1, 1});
    Tensor delta = (at(v, t) - (S * kt).sum(-1)) * at(beta, t).unsqueeze(-1);  // (1, Hv, Vd)
    S = S + delta.unsqueeze(-1) * kt;
    outs.push_back((S * at(q, t).unsqueeze(2)).sum(-1));
  }
  Tensor y = rms(Tensor::stack(outs, 1), d.norm, c.norm_eps) * lin(x, d.gate).reshape({1, T, Hv, Vd}).silu();
  Tensor out = lin(y.reshape({1, T, c.ssm_inner}), d.out), conv_next = win.shrink({{0, 1}, {T, T + K - 1}, {0, C}}).contiguous(), S_next = S.contiguous();
  Tensor::realize({out, conv_next, S_next});
  d.conv_state.assign(conv_next), d.state.assign(S_next);
  Tensor::realize({d.conv_state, d.state});
  return out;
}

void Model::reset_or_check_state(int64_t start_pos, int64_t T) {
  if (!recurrent()) return;
  if (start_pos != 0 && start_pos != state_pos_)
    throw Error("llm: this model's recurrent layers hold positions 0.." + std::to_string(state_pos_ - 1) + ": it continues at " +
                std::to_string(state_pos_) + " or restarts at 0, not at " + std::to_string(start_pos));
  if (start_pos == 0) {
    std::vector<Tensor> st;
    for (Layer& l : layers_)
      if (l.ssm) l.ssm->conv_state.assign(Tensor::zeros(l.ssm->conv_state.shape(), dtypes::float32, dev_)), l.ssm->state.assign(Tensor::zeros(l.ssm->state.shape(), dtypes::float32, dev_)),
                 st.insert(st.end(), {l.ssm->conv_state, l.ssm->state});
    Tensor::realize(st);
  }
  state_pos_ = start_pos + T;
}

// multi-head latent attention with the up-projections absorbed (llama.cpp's and tinygrad's MLA): a query head's nope part
// times k_b lands in the compressed space, so scores are one product with the cached rows (compressed | rotary), the
// values are the compressed rows themselves, and v_b lifts each head's weighted sum to v_head_dim afterwards
Tensor Model::latent_attention(Layer& l, const Tensor& x, const sint& start_pos) {
  const Config& c = cfg_;
  const Layer::Latent& m = *l.mla;
  int64_t T = x.shape()[1], H = c.n_heads, R = c.kv_lora_rank, nope = c.head_dim - c.rope_dim;
  Tensor q = m.q_a ? lin(rms(lin(x, *m.q_a), *m.q_a_norm, c.norm_eps), l.wq) : lin(x, l.wq);
  q = q.reshape({1, T, H, c.head_dim}).transpose(1, 2);  // (1, H, T, head_dim)
  Tensor q_nope = q.shrink({{0, 1}, {0, H}, {0, T}, {0, nope}}), q_rope = rope(q.shrink({{0, 1}, {0, H}, {0, T}, {nope, c.head_dim}}), start_pos);
  q = Tensor::cat({q_nope.matmul(m.k_b.transpose(-1, -2)), q_rope}, -1);  // (1, H, T, R + rope_dim)
  Tensor kv = lin(x, m.kv_a);  // (1, T, R + rope_dim)
  Tensor ckv = rms(kv.shrink({{0, 1}, {0, T}, {0, R}}), m.kv_a_norm, c.norm_eps).reshape({1, 1, T, R});
  Tensor k_rope = rope(kv.shrink({{0, 1}, {0, T}, {R, R + c.rope_dim}}).reshape({1, 1, T, c.rope_dim}), start_pos);
  sint end = start_pos + T;
  l.cache_kv.shrink({{0, 1}, {0, 1}, {start_pos, end}, {0, R + c.rope_dim}}).assign(Tensor::cat({ckv, k_rope}, -1).contiguous());
  Tensor k = l.cache_kv.shrink({{0, 1}, {0, 1}, {0, end}, {0, R + c.rope_dim}}), v = k.shrink({{0, 1}, {0, 1}, {0, end}, {0, R}});
  Tensor s = q.contiguous().matmul(k.transpose(-2, -1)) * (c.attn_scale / std::sqrt(double(c.head_dim)));  // (1, H, T, end)
  if (T > 1) s = s + Tensor(-INFINITY, dtypes::float32).reshape({1, 1, 1, 1}).expand({1, 1, T, end}).triu(start_pos + 1);
  Tensor a = s.softmax(-1).contiguous().matmul(v).matmul(m.v_b.transpose(-1, -2));  // (1, H, T, v_head_dim)
  return lin(a.transpose(1, 2).reshape({1, T, H * c.v_head_dim}), l.wo);
}

// a mixture of experts as llama.cpp's build_moe_ffn: the router's scores, each token's n_experts_used best (their scores
// normalized and scaled as the config says), each chosen expert's SwiGLU with its own weights (gathered by the expert's
// index: the one-hot gather folds into loads of that expert's rows), summed by score; plus the shared expert
Tensor Model::ffn(const Layer& l, const Tensor& x) const {
  if (!l.moe) return lin(lin(x, l.w_gate).silu().contiguous() * lin(x, l.w_up), l.w_down);
  const Config& c = cfg_;
  const Layer::Experts& e = *l.moe;
  Tensor logits = lin(x, e.router);  // (1, T, E)
  using G = Config::Gating;
  Tensor scores = c.gating == G::sigmoid ? logits.sigmoid() : c.gating == G::softmax ? logits.softmax(-1) : c.gating == G::softmax_weight ? logits
                                                                                                         : logits.softplus().sqrt();
  Tensor choose = e.probs_bias ? scores + *e.probs_bias : scores;
  if (c.n_expert_groups > 1) {  // only the experts of each token's best groups (a group's score: its two best experts')
    int64_t T = x.shape()[1], G = c.n_expert_groups;
    Tensor grouped = choose.reshape({1, T, G, c.n_experts / G});
    Tensor best = grouped.topk(2, -1).first.sum(-1);  // (1, T, G)
    Tensor keep = best >= best.topk(c.n_expert_groups_used, -1).first.min(-1, true);
    choose = keep.unsqueeze(-1).where(grouped, -INFINITY).reshape({1, T, c.n_experts});
  }
  Tensor sel = choose.topk(c.n_experts_used, -1).second;  // (1, T, k)
  Tensor w = scores.gather(-1, sel);
  if (c.gating == G::softmax_weight) w = w.softmax(-1);
  if (c.expert_weights_norm) w = w / w.sum(-1, true);
  if (c.expert_weights_scale != 1.0) w = w * c.expert_weights_scale;
  auto experts = [&](const Tensor& W, const Tensor& h) {  // h (1, T, 1 or k, in) -> (1, T, k, out)
    return h.unsqueeze(-2).matmul(W[sel].transpose(-1, -2)).squeeze(-2);
  };
  Tensor h = x.unsqueeze(2);
  Tensor y = experts(e.down, (experts(e.gate, h).silu() * experts(e.up, h)).contiguous());
  Tensor out = (y * w.unsqueeze(-1)).sum(2);
  if (e.shared_gate) {
    Tensor s = lin(lin(x, *e.shared_gate).silu().contiguous() * lin(x, *e.shared_up), *e.shared_down);
    if (e.shared_gate_inp) s = s * (x * *e.shared_gate_inp).sum(-1, true).sigmoid();
    out = out + s;
  }
  return out;
}

Tensor Model::forward(const Tensor& tokens, int64_t start_pos, bool all_logits) {
  if (tokens.ndim() != 2 || tokens.shape()[0] != 1 || tokens.shape()[1] < 1 || !tokens.dtype().is_int())
    throw Error("llm: forward takes int tokens of shape (1, T), got " + tokens.shape_str() + " " + std::string(tokens.dtype().name()));
  int64_t T = tokens.shape()[1];
  check_positions(start_pos, T);
  reset_or_check_state(start_pos, T);
  // one token at a time: the position is a bound Variable, so decode compiles its kernels once for every position
  return forward_at(embedding_rows(tokens.cast(dtypes::int32).to_vector<int32_t>()), T == 1 ? start_var().bind(start_pos) : sint(start_pos), all_logits);
}

// the embedding is the one weight a token reads a row of: read from the file on the host (the DISK device's pread), so
// an untied table's pages are never mapped into the process (a GEMM-free gather of the mapped table faults in 16 pages
// around each row it reads: 7-9 MiB of the 110M llama's table for a 128-token prompt)
Tensor Model::embedding_rows(std::span<const int32_t> ids) const {
  auto [blk, bytes] = gguf::ggml_block(embd_.type);
  int64_t row = cfg_.dim / blk * bytes, b = int64_t(g_.parts.at(embd_.split).data_start + embd_.offset);
  std::vector<uint8_t> out;
  out.reserve(ids.size() * size_t(row));
  for (int32_t id : ids) {
    if (id < 0 || id >= cfg_.vocab_size) throw Error("llm: token id " + std::to_string(id) + " is out of range (vocab " + std::to_string(cfg_.vocab_size) + ")");
    std::vector<uint8_t> r = g_.parts[embd_.split].file.shrink({{b + id * row, b + (id + 1) * row}}).data();
    out.insert(out.end(), r.begin(), r.end());
  }
  return Tensor::from_vector(out, {int64_t(ids.size()), row}, std::nullopt, dev_);
}

Tensor Model::forward_at(const Tensor& rows, const sint& pos, bool all_logits) {
  const Config& c = cfg_;
  int64_t T = rows.shape()[0];
  // decoded in a kernel of its own (as the gather was): fused into the first layer's kernels, the kquant test model's
  // second prompt chunk of 4 under QUANT_DOT=1 moved 0.06 in log-prob from the oracle's (likely an int8 activation at a
  // near-half rounding the other way: one such flip in the oracle, margin 4e-5, moves its log-probs by 0.07-0.08)
  Tensor x = gguf::ggml_data_to_tensor(rows.flatten(), T * c.dim, embd_.type).reshape({1, T, c.dim}).cast(dtypes::float32).contiguous();
  for (Layer& l : layers_) {
    Tensor n = rms(x, l.attn_norm, c.norm_eps);
    Tensor h = x + (l.ssm ? delta_net(l, n) : attention(l, n, pos));
    Tensor f = rms(h, l.ffn_norm, c.norm_eps);
    x = (h + ffn(l, f)).contiguous();
    // layer by layer: a prompt chunk's GEMMs repack their weights (tensor/gemm.cpp), and one schedule for the whole
    // model would hold every layer's packed copy at once; decode's capture would schedule the whole model's graph in
    // one go, its rewrites holding ~80K nodes at once (~35 MiB), where a layer's graph is a twelfth of that
    x.realize();
  }
  if (!all_logits) x = x.shrink({{0, 1}, {T - 1, T}, {0, c.dim}});
  return lin(rms(x, output_norm_, c.norm_eps), output_).reshape({-1, c.vocab_size});
}

namespace {
SymPairs first_positions(const Tensor& cache, int64_t n) {  // a KV cache's positions 0..n-1 (its next-to-last axis)
  SymPairs r;
  for (int64_t a = 0; a < cache.ndim(); a++) r.push_back({0, a == cache.ndim() - 2 ? n : cache.shape()[size_t(a)]});
  return r;
}
}  // namespace

// the cache's positions 0..n-1: the KV caches' rows, the recurrent states whole
Model::CacheSnapshot Model::save_cache(int64_t n) {
  check_positions(0, n);
  if (recurrent() && n != state_pos_)
    throw Error("llm: a recurrent model's state holds " + std::to_string(state_pos_) + " positions, not " + std::to_string(n));
  CacheSnapshot s{{}, n};
  for (Layer& l : layers_) {
    if (l.ssm) s.rows.insert(s.rows.end(), {l.ssm->conv_state.clone(), l.ssm->state.clone()});
    else s.rows.push_back(l.cache_kv.shrink(first_positions(l.cache_kv, n)).clone());
  }
  Tensor::realize(s.rows);
  return s;
}

void Model::restore_cache(const CacheSnapshot& s) {
  check_positions(0, s.n);
  size_t i = 0;
  std::vector<Tensor> done;
  for (Layer& l : layers_) {
    if (l.ssm) l.ssm->conv_state.assign(s.rows.at(i++)), l.ssm->state.assign(s.rows.at(i++)), done.insert(done.end(), {l.ssm->conv_state, l.ssm->state});
    else l.cache_kv.shrink(first_positions(l.cache_kv, s.n)).assign(s.rows.at(i++)), done.push_back(l.cache_kv);
  }
  if (i != s.rows.size()) throw Error("llm: the cache snapshot is not this model's");
  Tensor::realize(done);
  state_pos_ = s.n;
}

// ** 4. logits in chunks **

Tensor Model::decode(int32_t token, int64_t start_pos) {
  check_positions(start_pos, 1);
  if (!jit_ || jit_owner_ != this) {
    jit_ = std::make_shared<TinyJit<Tensor>>([this](const std::vector<Tensor>& in, const std::vector<sint>& v) { return forward_at(in[0], v[0], true); });
    jit_owner_ = this;
  }
  return (*jit_)({embedding_rows(std::span(&token, 1))}, {start_var().bind(start_pos)});
}

std::vector<float> Model::logits(std::span<const int32_t> tokens, int64_t start_pos, bool all_logits, int64_t chunk) {
  if (tokens.empty()) throw Error("llm: logits of no tokens");
  if (chunk < 1) throw Error("llm: chunk must be positive, got " + std::to_string(chunk));
  for (int32_t t : tokens)
    if (t < 0 || t >= cfg_.vocab_size) throw Error("llm: token id " + std::to_string(t) + " is out of range (vocab " + std::to_string(cfg_.vocab_size) + ")");
  check_positions(start_pos, int64_t(tokens.size()));
  reset_or_check_state(start_pos, int64_t(tokens.size()));
  std::vector<float> out;
  for (size_t i = 0; i < tokens.size(); i += size_t(chunk)) {
    size_t n = std::min(tokens.size() - i, size_t(chunk));
    std::span<const int32_t> t = tokens.subspan(i, n);
    if (n > 1) check_positions(start_pos + int64_t(i), int64_t(n));
    Tensor l = n == 1 ? decode(t[0], start_pos + int64_t(i)) : forward_at(embedding_rows(t), start_pos + int64_t(i), all_logits);
    // a chunk before the last one only fills the cache: realizing its (cheap) last logits writes its keys and values
    if (!all_logits && i + n < tokens.size()) l.realize();
    else for (float x : l.to_vector<float>()) out.push_back(x);
  }
  // the prompt's GEMMs leave their weights' float panels (a layer's worth, tensor/gemm.cpp) and activations in the
  // allocator's cache; decode reuses none of them (docs/benchmarks.md, the LLM's RSS)
  if (tokens.size() > 1) free_device_cache(dev_);
  return out;
}

}  // namespace tg::llm
