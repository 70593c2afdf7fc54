// tg::llm's model against an independent float64 numpy forward (tests/llm/llm_oracle.py, which reads the files with
// gguf-py's GGUFReader) on tiny random models that gguf-py's writer makes: llama (SentencePiece), llama with GQA, linear
// rope scaling and tied embeddings (byte-level BPE), qwen2 (neox rope, q/k/v biases, one kv head), qwen3 (q/k norm, head
// dim != dim / heads), a Q8_0/Q4_0 llama, an IQ3_XXS/IQ3_S/IQ2_S one and a 512-wide F16 one (the oracle dequantizes with gguf.quants). Log-probs of every position
// within 1e-4 whole, in chunks and token by token through the KV cache; greedy continuations equal. The sampler against
// hand-derived distributions; chat templates against llama.cpp's formats written out by hand; build/tg-llm as a user
// runs it.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>

#include "llm_models.h"
#include "support/generated.h"
#include "tg/context.h"
#include "tg/llm.h"
#include "runtime/device.h"
#include "util/stats.h"
#include "uop/uop.h"

using namespace tg;
using namespace tg::llm;
using nlohmann::json;

namespace {

using Proc = test::Shell;
Proc sh(const std::string& cmd) { return test::run_shell(cmd); }
std::string q(const std::string& s) { return test::shell_quote(s); }

const test::LlmModels& models() { return test::llm_models(); }
#define NEED_MODELS() ASSERT_TRUE(models().error.empty()) << models().error

json oracle(const std::string& model, const std::vector<int32_t>& toks, int n_greedy = 0, const std::string& qdot = "") {
  std::string ids;
  for (int32_t t : toks) ids += (ids.empty() ? "" : ",") + std::to_string(t);
  Proc r = sh(q(TG_PYTHON) + " " + q(TG_LLM_ORACLE) + " forward " + q(models().model(model)) + " " + ids + " " + std::to_string(n_greedy) + (qdot.empty() ? "" : " " + qdot));
  if (r.rc != 0) throw std::runtime_error("llm_oracle.py forward failed: " + r.out);
  return json::parse(r.out);
}

std::vector<double> log_softmax(std::span<const float> l) {
  double mx = -INFINITY, s = 0;
  for (float x : l) mx = std::max(mx, double(x));
  for (float x : l) s += std::exp(double(x) - mx);
  std::vector<double> r;
  for (float x : l) r.push_back(double(x) - mx - std::log(s));
  return r;
}

// every position's log-softmax of our (T x vocab) logits against the oracle's
void expect_logprobs(const std::vector<float>& logits, int64_t V, const json& ref, double tol = 1e-4) {
  ASSERT_EQ(logits.size(), ref["logprobs"].size() * size_t(V));
  double worst = 0;
  for (size_t t = 0; t < ref["logprobs"].size(); t++) {
    std::vector<double> ours = log_softmax(std::span(logits).subspan(t * size_t(V), size_t(V)));
    for (size_t i = 0; i < size_t(V); i++) worst = std::max(worst, std::abs(ours[i] - ref["logprobs"][t][i].get<double>()));
  }
  EXPECT_LT(worst, tol);
}

const std::vector<int32_t> PROMPT = {1, 5, 17, 200, 3, 99, 250, 260};

}  // namespace

TEST(LlmModel, ConfigFromMetadata) {
  NEED_MODELS();
  Config l = config_from_gguf(gguf::gguf_load(models().model("llama")));
  EXPECT_EQ(l.arch, "llama");
  EXPECT_EQ(std::vector<int64_t>({l.n_layers, l.dim, l.hidden_dim, l.n_heads, l.n_kv_heads, l.head_dim, l.rope_dim, l.vocab_size, l.max_context}),
            std::vector<int64_t>({2, 64, 128, 4, 4, 16, 16, 300, 64}));
  EXPECT_FALSE(l.rope_neox || l.qk_norm || l.qkv_bias || l.tied_embeddings);
  EXPECT_EQ(l.rope_theta, 10000.0);
  EXPECT_FLOAT_EQ(l.norm_eps, 1e-5);
  Config g = config_from_gguf(gguf::gguf_load(models().model("gqa")), 32);
  EXPECT_EQ(g.n_kv_heads, 2); EXPECT_EQ(g.rope_scale, 2.0); EXPECT_EQ(g.rope_theta, 500000.0); EXPECT_EQ(g.max_context, 32);
  EXPECT_TRUE(g.tied_embeddings);
  Config q2 = config_from_gguf(gguf::gguf_load(models().model("qwen2")));
  EXPECT_TRUE(q2.rope_neox && q2.qkv_bias && !q2.qk_norm); EXPECT_EQ(q2.n_kv_heads, 1);
  Config q3 = config_from_gguf(gguf::gguf_load(models().model("qwen3")));
  EXPECT_TRUE(q3.rope_neox && q3.qk_norm && !q3.qkv_bias); EXPECT_EQ(q3.head_dim, 32); EXPECT_EQ(q3.dim, 64);
  Config y = config_from_gguf(gguf::gguf_load(models().model("qwen3yarn")));
  EXPECT_TRUE(y.rope_yarn && y.yarn_orig_context == 512 && y.rope_scale == 4.0 && y.yarn_beta_fast == 32 && y.yarn_beta_slow == 1 && y.attn_scale == 1);
  EXPECT_NEAR(y.rope_mscale, 1 + 0.1 * std::log(4.0), 1e-12);
  Config d = config_from_gguf(gguf::gguf_load(models().model("deepseek2lite")));  // deepseek: the magnitude on the scores
  EXPECT_NEAR(d.rope_mscale, 1, 1e-12);
  EXPECT_NEAR(d.attn_scale, std::pow(1 + 0.1 * 0.707 * std::log(4.0), 2), 1e-6);
}

TEST(LlmModel, WholePromptMatchesOracle) {
  NEED_MODELS();
  for (const char* name : {"llama", "gqa", "qwen2", "qwen3", "qwen3yarn"}) {
    SCOPED_TRACE(name);
    Model m = Model::load(models().model(name));
    expect_logprobs(m.logits(PROMPT, 0, true), m.config().vocab_size, oracle(name, PROMPT));
  }
}

// the same positions fed token by token (llama) or in chunks of 4 and 3 through the KV cache; a second pass over a
// shorter prompt reuses the cache and overwrites what was written after it. (A chunk of several tokens compiles its
// kernels for its positions; one token at a time runs the same kernels at every position.)
TEST(LlmModel, IncrementalMatchesOracle) {
  NEED_MODELS();
  const std::vector<int32_t>& p = PROMPT;
  for (auto [name, chunk] : {std::pair{"llama", 1}, {"qwen3", 4}, {"gqa", 3}, {"qwen2", 3}, {"qwen3yarn", 1}}) {
    SCOPED_TRACE(name);
    Model m = Model::load(models().model(name));
    json ref = oracle(name, p);
    expect_logprobs(m.logits(p, 0, true, chunk), m.config().vocab_size, ref);
    // positions 0..4 stay cached; 5.. are written again with other tokens, then the original ones
    std::vector<float> other = m.logits(std::vector<int32_t>{9, 9, 9}, 5, true, chunk);
    std::vector<float> again = m.logits(std::span(p).subspan(5), 5, true, chunk);
    json tail = ref;
    tail["logprobs"] = json(std::vector<json>(ref["logprobs"].begin() + 5, ref["logprobs"].end()));
    expect_logprobs(again, m.config().vocab_size, tail);
  }
}

// one token at a time the position is a bound Variable: after the first step, every further position compiles nothing
// a prompt chunk of 64 tokens with 512-wide F16 matrices takes the CPU's packed GEMM (tensor/gemm.cpp: the weights
// decoded and repacked as float32 panels per chunk) and the chunk path's own attention GEMMs; then a chunk of 8 and single
// tokens through the cache
TEST(LlmModel, WideChunksMatchOracle) {
  NEED_MODELS();
  Model m = Model::load(models().model("wide"));
  std::vector<int32_t> p;
  for (int64_t i = 0; i < 74; i++) p.push_back(int32_t(3 + (i * 37) % (m.config().vocab_size - 3)));
  json ref = oracle("wide", p);
  std::vector<float> l = m.logits(std::span(p).subspan(0, 72), 0, true, 64), tail = m.logits(std::span(p).subspan(72), 72, true, 1);
  l.insert(l.end(), tail.begin(), tail.end());
  expect_logprobs(l, m.config().vocab_size, ref);
}

TEST(LlmModel, DecodeCompilesOnce) {
  NEED_MODELS();
  Model m = Model::load(models().model("llama"));
  std::vector<float> all;
  for (size_t i = 0; i < PROMPT.size(); i++) {
    int64_t before = tg::engine_stats().programs_built;
    std::vector<float> l = m.logits(std::span(PROMPT).subspan(i, 1), int64_t(i), true);
    int64_t built = tg::engine_stats().programs_built - before;
    if (i > 0) {
      EXPECT_EQ(built, 0) << "position " << i;
    }
    all.insert(all.end(), l.begin(), l.end());
  }
  expect_logprobs(all, m.config().vocab_size, oracle("llama", PROMPT));
}

TEST(LlmModel, GreedyContinuationMatchesOracle) {
  NEED_MODELS();
  const std::vector<int32_t>& p = PROMPT;
  Model m = Model::load(models().model("llama"));
  std::vector<int32_t> ref = oracle("llama", p, 16)["greedy"].get<std::vector<int32_t>>();
  for (size_t i = 0; i < ref.size(); i++)  // generation stops after a stop token (eos), reporting it
    if (std::find(m.stop_tokens().begin(), m.stop_tokens().end(), ref[i]) != m.stop_tokens().end()) { ref.resize(i + 1); break; }
  Sampler greedy({.temperature = 0});
  GenerateStats st;
  std::vector<int32_t> seen;
  std::vector<int32_t> out = generate(m, p, 16, greedy, [&](int32_t t) { seen.push_back(t); return true; }, 0, &st);
  EXPECT_EQ(out, ref);
  EXPECT_EQ(seen, out);
  EXPECT_EQ(st.prompt_tokens, 8); EXPECT_EQ(st.generated, int64_t(out.size()));
  // stopping from the callback
  Sampler g2({.temperature = 0});
  EXPECT_EQ(generate(m, p, 20, g2, [&](int32_t) { return false; }).size(), 1u);
}

// mixtures of experts: qwen3moe, mixtral (llama with Q8_0 experts), qwen2moe (a gated shared expert, a dense first
// block, the sigmoid router) and olmoe (q and k normed over the whole projection): the whole prompt, chunks of 3, then single tokens (decode under TinyJit, the router's top-k
// in its kernels) through the cache, and a greedy continuation
namespace {
// PROMPT's log-probs whole, in chunks of 3 then one token at a time (decode under the JIT) through the cache, and an
// 8-token greedy continuation (cut after a stop token), against the oracle; returns that continuation
std::vector<int32_t> expect_model_matches_oracle(const char* name) {
  SCOPED_TRACE(name);
  const std::vector<int32_t>& p = PROMPT;
  json ref = oracle(name, p, 8);
  Model m = Model::load(models().model(name));
  int64_t V = m.config().vocab_size;
  expect_logprobs(m.logits(p, 0, true), V, ref);
  std::vector<float> l = m.logits(std::span(p).subspan(0, 5), 0, true, 3), tail = m.logits(std::span(p).subspan(5), 5, true, 1);
  l.insert(l.end(), tail.begin(), tail.end());
  expect_logprobs(l, V, ref);
  std::vector<int32_t> greedy = ref["greedy"].get<std::vector<int32_t>>();
  for (size_t i = 0; i < greedy.size(); i++)
    if (std::find(m.stop_tokens().begin(), m.stop_tokens().end(), greedy[i]) != m.stop_tokens().end()) { greedy.resize(i + 1); break; }
  Sampler s({.temperature = 0});
  EXPECT_EQ(generate(m, p, 8, s), greedy);
  return greedy;
}
}  // namespace

TEST(LlmModel, MixturesOfExpertsMatchOracle) {
  NEED_MODELS();
  Config q = config_from_gguf(gguf::gguf_load(models().model("qwen2moe")));
  EXPECT_EQ(std::vector<int64_t>({q.n_experts, q.n_experts_used, q.expert_hidden_dim, q.shared_hidden_dim, q.leading_dense_blocks, q.hidden_dim}),
            std::vector<int64_t>({6, 3, 32, 40, 1, 96}));
  EXPECT_TRUE(q.gating == Config::Gating::sigmoid && !q.expert_weights_norm);
  Config x = config_from_gguf(gguf::gguf_load(models().model("mixtral")));
  EXPECT_TRUE(x.gating == Config::Gating::softmax && x.expert_weights_norm && x.n_experts == 4 && x.hidden_dim == 0);
  Config o = config_from_gguf(gguf::gguf_load(models().model("olmoe")));
  EXPECT_TRUE(o.rope_neox && o.qk_norm && !o.expert_weights_norm && o.n_experts == 8);
  for (const char* name : {"moe", "mixtral", "qwen2moe", "olmoe"}) expect_model_matches_oracle(name);
}

// deepseek2: the model absorbs k_b into the queries and v_b after the weighted sum, the oracle decompresses every key
// and value per head; whole prompt, chunks (the compressed cache across calls) and decode under the JIT
TEST(LlmModel, LatentAttentionMatchesOracle) {
  NEED_MODELS();
  Config d = config_from_gguf(gguf::gguf_load(models().model("deepseek2")));
  EXPECT_EQ(std::vector<int64_t>({d.kv_lora_rank, d.q_lora_rank, d.head_dim, d.rope_dim, d.v_head_dim, d.shared_hidden_dim, d.n_expert_groups, d.n_expert_groups_used}),
            std::vector<int64_t>({32, 24, 24, 8, 16, 32, 4, 2}));
  EXPECT_TRUE(d.gating == Config::Gating::sigmoid && d.expert_weights_norm && d.expert_weights_scale == 2.5 && !d.rope_neox);
  Config lite = config_from_gguf(gguf::gguf_load(models().model("deepseek2lite")));
  EXPECT_EQ(std::vector<int64_t>({lite.kv_lora_rank, lite.q_lora_rank, lite.head_dim, lite.v_head_dim, lite.shared_hidden_dim}), std::vector<int64_t>({24, 0, 16, 12, 64}));
  EXPECT_TRUE(lite.gating == Config::Gating::softmax_weight && !lite.expert_weights_norm);
  EXPECT_TRUE(config_from_gguf(gguf::gguf_load(models().model("deepseek2sp"))).gating == Config::Gating::sqrt_softplus);
  for (const char* name : {"deepseek2", "deepseek2lite", "deepseek2sp"}) expect_model_matches_oracle(name);
}

// qwen35: gated delta nets between gated attention layers; the recurrent state carried across chunks and decode (under
// the JIT), restarted at position 0, and refused where it would have to rewind
TEST(LlmModel, GatedDeltaNetsMatchOracle) {
  NEED_MODELS();
  const std::vector<int32_t>& p = PROMPT;
  Config c = config_from_gguf(gguf::gguf_load(models().model("qwen35")));
  EXPECT_EQ(c.recurrent, std::vector<bool>({true, false, true, false}));
  EXPECT_EQ(std::vector<int64_t>({c.ssm_conv_kernel, c.ssm_state, c.ssm_k_heads, c.ssm_v_heads, c.ssm_inner, c.rope_dim, c.head_dim}),
            std::vector<int64_t>({4, 8, 2, 4, 32, 8, 16}));
  EXPECT_TRUE(c.attn_output_gate && c.qk_norm && c.rope_neox);
  EXPECT_TRUE(config_from_gguf(gguf::gguf_load(models().model("qwen35moe"))).expert_weights_norm);
  for (const char* name : {"qwen35", "qwen35moe"}) {
    std::vector<int32_t> greedy = expect_model_matches_oracle(name);
    SCOPED_TRACE(name);
    Model m = Model::load(models().model(name));
    EXPECT_TRUE(m.recurrent());
    m.logits(p, 0);
    EXPECT_THROW(m.logits(std::span(p).subspan(0, 2), 3), Error);  // positions 0..7 are in the state: 3 would rewind
    // a session: the same prompt again restarts (the state cannot drop its generated tokens), a longer one continues
    Session ss(m);
    Sampler s2({.temperature = 0});
    GenerateStats st;
    EXPECT_EQ(ss.generate(p, 8, s2, {}, &st), greedy);
    EXPECT_EQ(ss.generate(p, 8, s2, {}, &st), greedy);
    EXPECT_EQ(st.cached_tokens, 0);
    std::vector<int32_t> longer = ss.cached();
    longer.push_back(greedy.back());
    ss.generate(longer, 1, s2, {}, &st);
    EXPECT_EQ(st.cached_tokens, int64_t(longer.size() - 1));
  }
}

// a session with slots: conversation A, then B (A's cache kept as a snapshot), then A's next turn continues from A's
// snapshot and B's next turn from B's, each reply what a fresh model gives; without slots, A's next turn starts over
TEST(LlmModel, SessionSlotsKeepSeveralConversations) {
  NEED_MODELS();
  for (const char* name : {"llama", "deepseek2lite", "qwen35"}) {
    SCOPED_TRACE(name);
    Model m = Model::load(models().model(name)), fresh = Model::load(models().model(name));
    auto greedy = [] { return Sampler({.temperature = 0}); };
    std::vector<int32_t> a = PROMPT, b = {1, 9, 9, 30, 41, 2};
    for (size_t slots : {size_t(2), size_t(0)}) {
      SCOPED_TRACE(slots);
      Session ss(m, slots);
      GenerateStats st;
      Sampler s1 = greedy(), s2 = greedy(), s3 = greedy(), s4 = greedy();
      std::vector<int32_t> ra = ss.generate(a, 4, s1, {}, &st), a_seen = ss.cached();
      std::vector<int32_t> rb = ss.generate(b, 4, s2, {}, &st), b_seen = ss.cached();
      std::vector<int32_t> a2 = a_seen, b2 = b_seen;
      a2.insert(a2.end(), {ra.back(), 17, 3}), b2.insert(b2.end(), {rb.back(), 5});
      Sampler f1 = greedy(), f2 = greedy();
      EXPECT_EQ(ss.generate(a2, 4, s3, {}, &st), generate(fresh, a2, 4, f1));
      EXPECT_EQ(st.cached_tokens, slots ? int64_t(a_seen.size()) : name == std::string("qwen35") ? 0 : 1);  // (1: BOS in common)
      EXPECT_EQ(ss.generate(b2, 4, s4, {}, &st), generate(fresh, b2, 4, f2));
      EXPECT_EQ(st.cached_tokens, slots ? int64_t(b_seen.size()) : name == std::string("qwen35") ? 0 : 1);
      EXPECT_LE(ss.saved(), slots);
    }
  }
}

TEST(LlmModel, QuantizedMatchesDequantizedOracle) {
  NEED_MODELS();
  Model m = Model::load(models().model("quant"));
  EXPECT_EQ(m.gguf().info("blk.0.attn_q.weight").type, gguf::GGMLType::Q8_0);
  EXPECT_EQ(m.gguf().info("blk.1.ffn_down.weight").type, gguf::GGMLType::Q4_0);
  EXPECT_EQ(m.gguf().info("token_embd.weight").type, gguf::GGMLType::Q8_0);
  expect_logprobs(m.logits(PROMPT, 0, true, 7), m.config().vocab_size, oracle("quant", PROMPT));
}

// decode's and the shortest prompts' Q8_0 / Q4_K linears (token by token under the JIT, and chunks of 4 rows) as
// ggml's integer dot products: against the oracle that feeds those linears int8-quantized activations as ggml-cpu does
// (QUANT_DOT=2; 1, the default: the Q4_K ones only), against the plain dequantized one with QUANT_DOT=0; the oracles
// differ by far more than either tolerance (the activations' rounding)
TEST(LlmModel, QuantDotDecodeMatchesInt8ActivationOracle) {
  NEED_MODELS();
  json both = oracle("kquant", PROMPT, 0, "qdot"), q4k = oracle("kquant", PROMPT, 0, "qdot:Q4_K"), plain = oracle("kquant", PROMPT);
  auto apart = [&](const json& a, const json& b) {
    double d = 0;
    for (size_t t = 0; t < PROMPT.size(); t++)
      for (size_t i = 0; i < a["logprobs"][t].size(); i++) d = std::max(d, std::abs(a["logprobs"][t][i].get<double>() - b["logprobs"][t][i].get<double>()));
    return d;
  };
  EXPECT_GT(apart(both, plain), 1e-2);
  EXPECT_GT(apart(q4k, plain), 1e-2);
  EXPECT_GT(apart(both, q4k), 1e-2);
  for (int on : {2, 1, 0}) {
    Context c({{"QUANT_DOT", on}});
    Model m = Model::load(models().model("kquant"));
    EXPECT_EQ(m.gguf().info("blk.0.attn_q.weight").type, gguf::GGMLType::Q4_K);
    EXPECT_EQ(m.gguf().info("blk.1.ffn_down.weight").type, gguf::GGMLType::Q8_0);
    EXPECT_EQ(m.gguf().info("output.weight").type, gguf::GGMLType::Q4_K);
    // token by token (decode's kernels), and the prompt in two chunks of 4 rows (x's rows by W's, the second chunk
    // after the first's keys and values)
    for (int64_t chunk : {1, 4})
      expect_logprobs(m.logits(PROMPT, 0, true, chunk), m.config().vocab_size, on == 2 ? both : on == 1 ? q4k : plain, on ? 1e-3 : 1e-4);
  }
}

TEST(LlmModel, GridQuantizedMatchesDequantizedOracle) {
  NEED_MODELS();
  Model m = Model::load(models().model("grid"));
  EXPECT_EQ(m.gguf().info("blk.0.attn_k.weight").type, gguf::GGMLType::IQ3_XXS);
  EXPECT_EQ(m.gguf().info("blk.0.ffn_up.weight").type, gguf::GGMLType::IQ2_S);
  EXPECT_EQ(m.gguf().info("token_embd.weight").type, gguf::GGMLType::IQ3_S);
  expect_logprobs(m.logits(PROMPT, 0, true, 5), m.config().vocab_size, oracle("grid", PROMPT));
}

TEST(LlmModel, TokenizerAndTemplateFromGguf) {
  NEED_MODELS();
  Model l = Model::load(models().model("llama"), 16);
  std::vector<int32_t> ids = l.tokenizer().encode("the heat");
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], 1);  // <s>
  EXPECT_EQ(l.tokenizer().decode(ids, false), "the heat");
  EXPECT_EQ(l.stop_tokens(), std::vector<int32_t>({2}));
  Model g = Model::load(models().model("gqa"), 16);
  int32_t eot = int32_t(g.config().vocab_size - 1);  // the last special token written
  EXPECT_EQ(g.tokenizer().token(eot), "<|eot_id|>");
  EXPECT_EQ(g.tokenizer().encode("<|eot_id|>the", false), std::vector<int32_t>({eot, 116, 257}));  // t, then "h e" (merge 1: id 256 + 1); no "t he" merge
  std::vector<int32_t> stops = g.stop_tokens();
  std::sort(stops.begin(), stops.end());
  EXPECT_EQ(stops, std::vector<int32_t>({eot - 3, eot}));  // <|end_of_text|> (also eos), <|eot_id|>
  EXPECT_EQ(chat_template_name(l.gguf()), "llama2");
  EXPECT_EQ(chat_template_name(g.gguf()), "llama3");
  EXPECT_EQ(chat_template_name(gguf::gguf_load(models().model("qwen3"))), "chatml");
  gguf::GGUF ds = gguf::gguf_load(models().model("deepseek2"));  // its vocabulary has no <｜Assistant｜>
  EXPECT_EQ(chat_template_name(ds), "deepseek2");
  ds.kv["tokenizer.chat_template"] = gguf::Value{std::string("{{'<\uFF5CUser\uFF5C>' + m}}{{'<\uFF5CAssistant\uFF5C>'}}{{'<\uFF5Cend\u2581of\u2581sentence\uFF5C>'}}")};
  EXPECT_EQ(chat_template_name(ds), "deepseek3");
}

TEST(LlmModel, BadInputIsAnError) {
  NEED_MODELS();
  gguf::GGUF g = gguf::gguf_load(models().model("qwen2"));
  auto expect_err = [](auto f, const std::string& part) {
    try {
      f();
      ADD_FAILURE() << "no error, expected one mentioning " << part;
    } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what(); }
  };
  gguf::GGUF bad = g;
  bad.kv["general.architecture"] = gguf::Value{std::string("falcon")};
  expect_err([&] { config_from_gguf(bad); }, "falcon");
  bad = g, bad.kv.erase("qwen2.block_count");
  expect_err([&] { config_from_gguf(bad); }, "qwen2.block_count");
  bad = g, bad.kv["qwen2.attention.head_count_kv"] = gguf::Value{uint32_t(3)};
  expect_err([&] { config_from_gguf(bad); }, "must divide");
  gguf::GGUF moe = gguf::gguf_load(models().model("qwen2moe"));
  bad = moe, bad.kv["qwen2moe.expert_used_count"] = gguf::Value{uint32_t(7)};
  expect_err([&] { config_from_gguf(bad); }, "expert_used_count 7");
  bad = moe, bad.kv["qwen2moe.expert_gating_func"] = gguf::Value{uint32_t(5)};
  expect_err([&] { config_from_gguf(bad); }, "expert_gating_func 5");
  gguf::GGUF ds = gguf::gguf_load(models().model("deepseek2"));
  bad = ds, bad.kv["deepseek2.expert_group_count"] = gguf::Value{uint32_t(3)};
  expect_err([&] { config_from_gguf(bad); }, "bad expert groups: 3 groups of 8");
  bad = ds, bad.kv["deepseek2.rope.scaling.type"] = gguf::Value{std::string("longrope")};
  expect_err([&] { config_from_gguf(bad); }, "'longrope' is not supported");
  bad = ds, bad.kv["deepseek2.rope.scaling.type"] = gguf::Value{std::string("yarn")}, bad.kv["deepseek2.rope.scaling.original_context_length"] = gguf::Value{int32_t(-4)};
  expect_err([&] { config_from_gguf(bad); }, "original_context_length");
  bad = ds, bad.kv["deepseek2.rope.dimension_count"] = gguf::Value{uint32_t(24)};
  expect_err([&] { config_from_gguf(bad); }, "bad latent attention");
  bad = ds;
  for (auto& t : bad.tensors)
    if (t.name == "blk.2.attn_k_b.weight") t.shape = {4, 16, 32};
  expect_err([&] { Model m(bad); }, "blk.2.attn_k_b.weight");
  bad = moe;
  for (auto& t : bad.tensors)
    if (t.name == "blk.1.ffn_up_exps.weight") t.shape = {6, 32, 32};
  expect_err([&] { Model m(bad); }, "blk.1.ffn_up_exps.weight");
  bad = g;
  for (auto& t : bad.tensors)
    if (t.name == "blk.1.ffn_up.weight") t.shape = {64, 128};
  expect_err([&] { Model m(bad); }, "blk.1.ffn_up.weight");
  bad = g, bad.kv.erase("tokenizer.ggml.tokens");
  expect_err([&] { Model m(bad); }, "tokenizer");
  expect_err([&] { Model::load(models().dir + "/missing.gguf"); }, "missing.gguf");
  Model m(g, 8);
  expect_err([&] { m.logits(std::vector<int32_t>{1, 100000}); }, "100000");
  expect_err([&] { m.logits(std::vector<int32_t>(9, 1)); }, "context");
  expect_err([&] { m.forward(Tensor::zeros({2, 3}, dtypes::int32), 0); }, "(1, T)");
  Sampler s({.temperature = 0});
  expect_err([&] { generate(m, std::vector<int32_t>(9, 1), 2, s); }, "context");
}

// ** chat templates: llama.cpp's formats, written out by hand **

TEST(LlmChat, Templates) {
  std::vector<Message> msgs = {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello."}, {"user", "Why?"}};
  EXPECT_EQ(apply_chat_template("chatml", msgs),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n"
            "<|im_start|>user\nWhy?<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(apply_chat_template("llama3", msgs, false),
            "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhy?<|eot_id|>");
  EXPECT_EQ(apply_chat_template("llama2", msgs), "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello.</s><s>[INST] Why? [/INST]");
  EXPECT_EQ(apply_chat_template("deepseek2", msgs), "Be brief.\n\nUser: Hi\n\nAssistant: Hello.<\uFF5Cend\u2581of\u2581sentence\uFF5C>User: Why?\n\nAssistant:");
  EXPECT_EQ(apply_chat_template("deepseek3", msgs),
            "Be brief.\n\n<\uFF5CUser\uFF5C>Hi<\uFF5CAssistant\uFF5C>Hello.<\uFF5Cend\u2581of\u2581sentence\uFF5C><\uFF5CUser\uFF5C>Why?<\uFF5CAssistant\uFF5C>");
  EXPECT_THROW(apply_chat_template("vicuna", msgs), Error);
  EXPECT_THROW(apply_chat_template("chatml", {{"tool", "x"}}), Error);
}

// ** sampling **

namespace {
const std::vector<float> L4 = {float(std::log(4.0)), float(std::log(2.0)), 0.0f, 0.0f};  // softmax: 1/2, 1/4, 1/8, 1/8
SamplerParams plain(double temp = 1.0) { return {.temperature = temp, .top_k = 0, .top_p = 1.0, .min_p = 0.0}; }
void expect_dist(const Sampler& s, std::span<const float> l, const std::vector<std::pair<int32_t, double>>& want) {
  auto d = s.distribution(l);
  ASSERT_EQ(d.size(), want.size());
  for (size_t i = 0; i < d.size(); i++) {
    EXPECT_EQ(d[i].first, want[i].first);
    EXPECT_NEAR(d[i].second, want[i].second, 1e-6);
  }
}
}  // namespace

// log-probabilities by hand: logits (0, ln 3, ln 3, -inf-ish) -> probabilities (1/7, 3/7, 3/7, ~0)
TEST(LlmSampler, TokenLogprobByHand) {
  std::vector<float> l = {0.0f, std::log(3.0f), std::log(3.0f), -80.0f};
  std::vector<double> lp = tg::llm::log_softmax(l);
  EXPECT_NEAR(lp[0], std::log(1.0 / 7), 1e-6);
  EXPECT_NEAR(lp[1], std::log(3.0 / 7), 1e-6);
  tg::llm::TokenLogprob t = tg::llm::token_logprob(l, 0, 2);
  EXPECT_EQ(t.token, 0);
  EXPECT_NEAR(t.logprob, std::log(1.0 / 7), 1e-6);
  ASSERT_EQ(t.top.size(), 2u);
  EXPECT_EQ(t.top[0].first, 1);  // a tie: the lower id first
  EXPECT_EQ(t.top[1].first, 2);
  EXPECT_EQ(tg::llm::token_logprob(l, 3, 10).top.size(), 4u);  // at most the vocabulary
  EXPECT_THROW(tg::llm::token_logprob(l, 4), tg::Error);
  EXPECT_THROW(tg::llm::token_logprob(l, -1), tg::Error);
  l[2] = NAN;
  EXPECT_THROW(tg::llm::log_softmax(l), tg::Error);
}

TEST(LlmSampler, HandDerivedDistributions) {
  expect_dist(Sampler(plain()), L4, {{0, .5}, {1, .25}, {2, .125}, {3, .125}});
  expect_dist(Sampler(plain(0.5)), L4, {{0, 16. / 22}, {1, 4. / 22}, {2, 1. / 22}, {3, 1. / 22}});  // p^(1/T)
  SamplerParams p = plain();
  p.top_k = 3;  // the tie at 1/8 keeps the lower id
  expect_dist(Sampler(p), L4, {{0, 4. / 7}, {1, 2. / 7}, {2, 1. / 7}});
  p = plain(), p.top_p = 0.7;  // 1/2 < 0.7 <= 3/4: two tokens
  expect_dist(Sampler(p), L4, {{0, 2. / 3}, {1, 1. / 3}});
  p.top_p = 0.5;  // reached by the first alone
  expect_dist(Sampler(p), L4, {{0, 1.}});
  p = plain(), p.min_p = 0.3;  // p >= 0.15
  expect_dist(Sampler(p), L4, {{0, 2. / 3}, {1, 1. / 3}});
  p.min_p = 0.2;  // p >= 0.1: all
  expect_dist(Sampler(p), L4, {{0, .5}, {1, .25}, {2, .125}, {3, .125}});
  p = plain(), p.repeat_penalty = 2.0;  // log 4 / 2 = log 2 for the repeated token 0; negative logits are multiplied
  Sampler r(p);
  r.accept(0);
  expect_dist(r, L4, {{0, 2. / 6}, {1, 2. / 6}, {2, 1. / 6}, {3, 1. / 6}});
  std::vector<float> neg = {0.0f, float(-std::log(2.0))};
  r.accept(1);  // -log 2 * 2 = log 1/4: probabilities 4/5, 1/5
  expect_dist(r, neg, {{0, .8}, {1, .2}});
  p.repeat_last_n = 1;  // only the last token counts
  Sampler r1(p);
  r1.accept(0), r1.accept(1);
  double z = 6 + std::sqrt(2.0);  // token 1: log 2 / 2 = log sqrt(2)
  expect_dist(r1, L4, {{0, 4 / z}, {1, std::sqrt(2.0) / z}, {2, 1 / z}, {3, 1 / z}});
}

TEST(LlmSampler, DrawsFollowTheDistributionAndTheSeed) {
  Sampler a(plain()), b(plain());
  std::vector<int> count(4);
  std::vector<int32_t> da, db;
  for (int i = 0; i < 20000; i++) da.push_back(a.sample(L4)), db.push_back(b.sample(L4)), count[size_t(da.back())]++;
  EXPECT_EQ(da, db);  // the same seed, the same draws
  const double want[4] = {.5, .25, .125, .125};
  for (int i = 0; i < 4; i++) EXPECT_NEAR(count[size_t(i)] / 20000.0, want[i], 0.015);
  SamplerParams p = plain();
  p.seed = 1;
  Sampler c(p);
  std::vector<int32_t> dc;
  for (int i = 0; i < 200; i++) dc.push_back(c.sample(L4));
  EXPECT_NE(dc, std::vector<int32_t>(da.begin(), da.begin() + 200));
  a.reset();
  std::vector<int32_t> again;
  for (int i = 0; i < 200; i++) again.push_back(a.sample(L4));
  EXPECT_EQ(again, std::vector<int32_t>(da.begin(), da.begin() + 200));
}

TEST(LlmSampler, TopK1AndZeroTemperatureAreGreedy) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  SamplerParams k1;
  k1.top_k = 1, k1.temperature = 1.5, k1.seed = 9;
  Sampler s(k1), g({.temperature = 0});
  for (int i = 0; i < 50; i++) {
    std::vector<float> l(100);
    for (float& x : l) x = nd(rng);
    int32_t best = int32_t(std::max_element(l.begin(), l.end()) - l.begin());
    EXPECT_EQ(s.sample(l), best);
    EXPECT_EQ(g.sample(l), best);
  }
  EXPECT_THROW(s.sample(std::vector<float>{}), Error);
  EXPECT_THROW(s.sample(std::vector<float>{1.0f, NAN}), Error);
  EXPECT_THROW(Sampler({.top_p = 0}), Error);
}

// ** the command line **

TEST(LlmCli, LogprobsJsonMatchesOracle) {
  NEED_MODELS();
  Proc r = sh(q(TG_LLM_CLI) + " logprobs --model " + q(models().model("qwen3")) + " --tokens 1,5,17,200,3,40 --chunk 4");
  ASSERT_EQ(r.rc, 0) << r.out;
  json ours = json::parse(r.out), ref = oracle("qwen3", {1, 5, 17, 200, 3, 40});
  EXPECT_EQ(ours["tokens"], json({1, 5, 17, 200, 3, 40}));
  ASSERT_EQ(ours["logprobs"].size(), 6u);
  double worst = 0;
  for (size_t t = 0; t < 6; t++) {
    ASSERT_EQ(ours["logprobs"][t].size(), ref["logprobs"][t].size());
    for (size_t i = 0; i < ours["logprobs"][t].size(); i++)
      worst = std::max(worst, std::abs(ours["logprobs"][t][i].get<double>() - ref["logprobs"][t][i].get<double>()));
  }
  EXPECT_LT(worst, 1e-4);
}

TEST(LlmCli, CompletesChatsAndReportsSpeed) {
  NEED_MODELS();
  std::string m = q(models().model("llama"));
  Proc r = sh(q(TG_LLM_CLI) + " --model " + m + " --prompt 'the heat' -n 5 --temp 0 2>&1");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.out.rfind("the heat", 0), 0u) << r.out;  // the prompt first
  EXPECT_TRUE(std::regex_search(r.out, std::regex("prompt: [0-9]+ tokens, [0-9.]+ tok/s \\| decode: 5 tokens, [0-9.]+ tok/s"))) << r.out;
  Proc seeded1 = sh(q(TG_LLM_CLI) + " --model " + m + " --prompt 'the heat' -n 6 --temp 1 --seed 5 2>/dev/null");
  Proc seeded2 = sh(q(TG_LLM_CLI) + " --model " + m + " --prompt 'the heat' -n 6 --temp 1 --seed 5 2>/dev/null");
  EXPECT_EQ(seeded1.rc, 0); EXPECT_EQ(seeded1.out, seeded2.out);
  Proc chat = sh("printf 'hi\\nthe\\n' | " + q(TG_LLM_CLI) + " --model " + m + " -n 2 --temp 0 2>&1");
  ASSERT_EQ(chat.rc, 0) << chat.out;
  EXPECT_NE(chat.out.find("chat template llama2"), std::string::npos) << chat.out;
  size_t turns = 0;
  for (size_t p = chat.out.find("decode:"); p != std::string::npos; p = chat.out.find("decode:", p + 1)) turns++;
  EXPECT_EQ(turns, 2u) << chat.out;
}

// tg-llm bench: positive speeds, the weight bytes a decoded token reads (every tensor but the untied embedding table) as
// GGUFReader counts them, and the KV cache's bytes from its metadata (float32 keys and values, --ctx positions a layer)
TEST(LlmCli, BenchReportsSpeedsAndWeightBytes) {
  NEED_MODELS();
  std::string m = q(models().model("quant"));
  Proc r = sh(q(TG_LLM_CLI) + " bench --model " + m + " -p 8 -n 4 --reps 1 --ctx 64 2>/dev/null");
  ASSERT_EQ(r.rc, 0) << r.out;
  double pp = 0, tg = 0, first_ms = 0, rss = 0;
  long long wbytes = 0, kvbytes = 0;
  ASSERT_EQ(std::sscanf(r.out.c_str(), "%lf %lf %lf %lf %lld %lld", &pp, &tg, &first_ms, &rss, &wbytes, &kvbytes), 6) << r.out;
  EXPECT_GT(pp, 0); EXPECT_GT(tg, 0); EXPECT_GT(first_ms, 0); EXPECT_GT(rss, 1);
  Proc ref = sh(q(TG_PYTHON) + " -c 'import gguf, sys; print(sum(int(t.n_bytes) for t in gguf.GGUFReader(sys.argv[1]).tensors if t.name != \"token_embd.weight\"))' " + m);
  ASSERT_EQ(ref.rc, 0) << ref.out;
  EXPECT_EQ(wbytes, std::stoll(ref.out));
  Proc kv = sh(q(TG_PYTHON) + " -c 'import gguf, sys\n"
               "f = {x.name: x.contents() for x in gguf.GGUFReader(sys.argv[1]).fields.values() if x.name.startswith(\"llama.\")}\n"
               "h = f[\"llama.attention.head_count\"]; kvh = f.get(\"llama.attention.head_count_kv\", h)\n"
               "print(f[\"llama.block_count\"] * 2 * kvh * 64 * (f[\"llama.embedding_length\"] // h) * 4)' " + m);
  ASSERT_EQ(kv.rc, 0) << kv.out;
  EXPECT_EQ(kvbytes, std::stoll(kv.out));
}

TEST(LlmCli, ErrorsExitNonzeroWithAMessage) {
  NEED_MODELS();
  std::string cli = q(TG_LLM_CLI), m = q(models().model("llama"));
  for (std::string args : std::vector<std::string>{" --model /nonexistent.gguf --prompt x", " --prompt x", " --model " + m + " --temp hot", " --model " + m + " --bogus 1",
                           " logprobs --model " + m + " --tokens 1,,2", " logprobs --model " + m + " --tokens 1,99999",
                           " logprobs --model " + m, " --model " + m + " -n", " bench --model " + m + " -p 0",
                           " bench --model " + m + " -p 60 -n 10 --ctx 64"}) {
    Proc r = sh(cli + args + " 2>&1 </dev/null");
    EXPECT_EQ(r.rc, 1) << args << "\n" << r.out;
    EXPECT_EQ(r.out.rfind("tg-llm: ", 0), 0u) << args << "\n" << r.out;
  }
}

// one-token steps run through the model's TinyJit: the second step captures, every later position replays the captured
// launches (no schedule, no compile), and the logits equal the non-jit path's (JIT=0) and the oracle's
TEST(LlmModel, DecodeReplaysUnderJit) {
  NEED_MODELS();
  for (const char* name : {"llama", "qwen2"}) {
    SCOPED_TRACE(name);
    Model m = Model::load(models().model(name));
    EXPECT_EQ(m.decode_jit(), nullptr);
    std::vector<float> all = m.logits(std::span(PROMPT).subspan(0, 3), 0, true);  // a chunk of 3: no jit
    EXPECT_EQ(m.decode_jit(), nullptr);
    for (size_t i = 3; i < PROMPT.size(); i++) {
      int64_t sched = tg::engine_stats().schedules, built = tg::engine_stats().programs_built;
      std::vector<float> l = m.logits(std::span(PROMPT).subspan(i, 1), int64_t(i));
      ASSERT_NE(m.decode_jit(), nullptr);
      EXPECT_EQ(m.decode_jit()->calls(), int64_t(i - 2));
      EXPECT_EQ(m.decode_jit()->is_captured(), i > 3);
      if (i > 4) {  // replays
        EXPECT_EQ(tg::engine_stats().schedules - sched, 0) << "position " << i;
        EXPECT_EQ(tg::engine_stats().programs_built - built, 0) << "position " << i;
      }
      all.insert(all.end(), l.begin(), l.end());
    }
    EXPECT_GT(m.decode_jit()->captured_launches(), 0u);
    expect_logprobs(all, m.config().vocab_size, oracle(name, PROMPT));
    // the same steps without the jit give the same logits
    tg::Context no_jit({{"JIT", 0}});
    Model plain = Model::load(models().model(name));
    std::vector<float> ref = plain.logits(std::span(PROMPT).subspan(0, 3), 0, true);
    for (size_t i = 3; i < PROMPT.size(); i++)
      for (float x : plain.logits(std::span(PROMPT).subspan(i, 1), int64_t(i))) ref.push_back(x);
    EXPECT_FALSE(plain.decode_jit()->is_captured());
    ASSERT_EQ(ref.size(), all.size());
    float worst = 0;
    for (size_t i = 0; i < ref.size(); i++) worst = std::max(worst, std::abs(ref[i] - all[i]));
    EXPECT_LT(worst, 1e-5f);
  }
}

// after the capture, decode steps build nothing and keep nothing: no schedules, programs, UOps or buffers more per step
TEST(LlmModel, DecodeReplaysHoldSteady) {
  NEED_MODELS();
  Model m = Model::load(models().model("llama"));
  m.logits(std::span(PROMPT).subspan(0, 3), 0);
  int32_t t = PROMPT[3];
  auto step = [&](int64_t pos) {
    std::vector<float> l = m.logits(std::span<const int32_t>(&t, 1), pos);
    t = int32_t(std::max_element(l.begin(), l.end()) - l.begin());
  };
  step(3), step(4);  // the jit's first call and its capture
  ASSERT_TRUE(m.decode_jit()->is_captured());
  LRUAllocator& a = get_device("CPU").allocator();
  size_t uops = live_uops();
  int64_t sched = tg::engine_stats().schedules, built = tg::engine_stats().programs_built;
  uint64_t raw = a.stats().raw_allocs;
  for (int64_t pos = 5; pos < 40; pos++) step(pos);
  EXPECT_EQ(live_uops(), uops);
  EXPECT_EQ(tg::engine_stats().schedules, sched);
  EXPECT_EQ(tg::engine_stats().programs_built, built);
  EXPECT_EQ(a.stats().raw_allocs, raw);
}
