// Training a llama (tg::llm::TrainModel, apps/train_llm): a few AdamW steps lower the loss; the GGUF it writes gives, in
// tg::llm::Model (KV cache, RoPE of arch "llama", tested against llm_oracle.py in test_model.cpp), the logits of the
// training forward; the app trains on the fortunes and build/tg-llm completes a prompt with what it wrote.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>

#include "support/generated.h"
#include "tg/context.h"
#include "tg/llm.h"
#include "tg/llm_train.h"
#include "tg/optim.h"
#include "tg/state.h"

using namespace tg;
using namespace tg::llm;

namespace {

const test::GeneratedFiles& scratch() {
  static test::GeneratedFiles f("tg_llm_train", "true", "");
  return f;
}
Vocab tiny_vocab() {
  std::vector<std::string> texts = {"the cat sat on the mat and the dog sat on the log", "a cat and a dog"};
  return train_bpe(texts, 290);
}
TrainConfig tiny(int64_t vocab) { return {.vocab_size = vocab, .dim = 16, .n_layers = 2, .n_heads = 2, .hidden_dim = 32, .context = 16}; }

}  // namespace

TEST(TrainLlm, StepsLowerTheLoss) {
  Vocab v = tiny_vocab();
  Tokenizer tok(v);
  std::vector<int32_t> ids = tok.encode("the cat sat on the mat and the dog sat on the log");
  ASSERT_GE(ids.size(), 9u);
  int64_t T = 8;
  Tensor x = Tensor::from_vector(std::vector<int32_t>(ids.begin(), ids.begin() + T), {1, T});
  Tensor y = Tensor::from_vector(std::vector<int32_t>(ids.begin() + 1, ids.begin() + T + 1), {1, T});
  Tensor::manual_seed(3);
  TrainModel m(tiny(tok.n_vocab()));
  auto opt = nn::optim::AdamW(nn::state::get_parameters(m), 1e-2);
  float first = m.loss(x, y).item<float>();
  EXPECT_NEAR(first, std::log(double(tok.n_vocab())), 1.0);  // about uniform at the start
  float last = first;
  for (int i = 0; i < 8; i++) {
    Context train({{"TRAINING", 1}});
    opt.zero_grad();
    Tensor loss = m.loss(x, y);
    loss.backward();
    opt.step();
    last = loss.item<float>();
  }
  EXPECT_LT(last, first - 1.0f) << "first " << first << ", last " << last;
}

TEST(TrainLlm, GgufLogitsEqualTrainingForward) {
  ASSERT_TRUE(scratch().error.empty()) << scratch().error;
  Vocab v = tiny_vocab();
  Tensor::manual_seed(7);
  // plain, and grouped-query attention (4 query heads over 2 key/value heads) with tied embeddings
  TrainConfig gqa = tiny(int64_t(v.tokens.size()));
  gqa.n_heads = 4, gqa.n_kv_heads = 2, gqa.tied_embeddings = true;
  for (const TrainConfig& c : {tiny(int64_t(v.tokens.size())), gqa}) {
    SCOPED_TRACE(c.n_kv_heads);
    TrainModel m(c);
    std::string path = scratch().path("tiny.gguf");
    m.save(path, v);
    Model loaded = Model::load(path);
    EXPECT_EQ(loaded.config().n_kv_heads, c.n_kv_heads ? c.n_kv_heads : c.n_heads);
    EXPECT_EQ(loaded.config().tied_embeddings, c.tied_embeddings);
    EXPECT_EQ(loaded.config().arch, "llama");
    EXPECT_FALSE(loaded.config().rope_neox);
    EXPECT_EQ(loaded.config().max_context, 16);
    EXPECT_EQ(loaded.tokenizer().encode("the cat"), Tokenizer(v).encode("the cat"));
    std::vector<int32_t> ids = {v.bos.value(), 5, 260, 100, 33, 270, 2, 250, 261, 7, 9, 200};
    int64_t T = int64_t(ids.size());
    std::vector<float> want = m(Tensor::from_vector(ids, {1, T})).to_vector<float>();
    for (int64_t chunk : {int64_t(32), int64_t(5)}) {  // one forward; chunks through the cache (the last ones one token: decode)
      std::vector<float> got = loaded.logits(ids, 0, true, chunk);
      ASSERT_EQ(got.size(), want.size());
      double worst = 0;
      for (size_t i = 0; i < got.size(); i++) worst = std::max(worst, double(std::abs(got[i] - want[i])));
      EXPECT_LT(worst, 1e-4) << "chunk " << chunk;
    }
  }
}

TEST(TrainLlm, BadSizes) {
  try {
    TrainModel m({.vocab_size = 10, .dim = 6, .n_heads = 4});
    FAIL() << "no error";
  } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find("dim 6"), std::string::npos) << e.what(); }
  try {
    TrainModel m({.vocab_size = 10, .dim = 16, .n_heads = 4, .n_kv_heads = 3});
    FAIL() << "no error";
  } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find("kv heads 3"), std::string::npos) << e.what(); }
  TrainModel m(tiny(300));
  try {
    m.loss(Tensor::zeros({1, 17}, dtypes::int32), Tensor::zeros({1, 17}, dtypes::int32));
    FAIL() << "no error";
  } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find("T <= 16"), std::string::npos) << e.what(); }
  EXPECT_THROW(m.save(scratch().path("bad.gguf"), tiny_vocab()), Error);  // 290 tokens for a 300-row model
}

// the app as a user runs it, a handful of steps on the fortunes, then tg-llm on its GGUF
TEST(TrainLlm, AppThenCli) {
  ASSERT_TRUE(scratch().error.empty()) << scratch().error;
  std::string out = scratch().path("app.gguf");
  auto r = test::run_shell(test::shell_quote(TG_TRAIN_LLM) + " --steps 4 --dim 32 --layers 1 --heads 2 --kv-heads 1 --tied --warmup 2 --ffn 64 "
                           "--context 32 --vocab 300 --batch 4 --eval-every 2 --seed 2 --out " + test::shell_quote(out) + " 2>&1");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("step +4  train loss [0-9.]+  held-out loss [0-9.]+  [0-9]+ tok/s"))) << r.out;
  EXPECT_NE(r.out.find("wrote " + out), std::string::npos) << r.out;
  Config c = config_from_gguf(gguf::gguf_load(out));
  EXPECT_TRUE(c.n_kv_heads == 1 && c.n_heads == 2 && c.tied_embeddings);
  auto g = test::run_shell(test::shell_quote(TG_LLM_CLI) + " --model " + test::shell_quote(out) + " --prompt 'The cat' -n 8 --temp 0 2>&1");
  ASSERT_EQ(g.rc, 0) << g.out;
  EXPECT_EQ(g.out.rfind("The cat", 0), 0u) << g.out;
  EXPECT_NE(g.out.find("decode: 8 tokens"), std::string::npos) << g.out;
  auto bad = test::run_shell(test::shell_quote(TG_TRAIN_LLM) + " --dim 30 --heads 4 --steps 1 --out " + test::shell_quote(out) + " 2>&1");
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE(bad.out.find("dim 30"), std::string::npos) << bad.out;
}
