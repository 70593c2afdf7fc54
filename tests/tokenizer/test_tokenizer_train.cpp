// tg::llm::train_bpe: merges on a tiny text worked out by hand (the tie-break rule of tg/tokenizer.h), decode(encode(s))
// == s, and Hugging Face `tokenizers` built from the trained vocab and merges giving the same ids on a text set.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/generated.h"
#include "tg/error.h"
#include "tg/tokenizer.h"

using namespace tg;
using namespace tg::llm;
using nlohmann::json;

TEST(TrainBpe, MergesByHand) {
  // pieces "aaab", " aab", " ab" (Ġ = the space). Pair counts: a a 3, a b 3, Ġ a 2; the tie goes to the smaller right id
  // (a < b): a+a. Then a+b (2: "aa a b" -> "aa ab", " ab"); then all pairs occur once: Ġ+aa (32 < 256), Ġ+ab, aa+ab,
  // Ġaa+b; then no pair is left, so a vocab_size of 300 stops at 256 + 6 merges + the special token
  std::vector<std::string> texts = {"aaab aab ab"};
  Vocab v = train_bpe(texts, 300);
  EXPECT_EQ(v.merges, (std::vector<std::string>{"a a", "a b", "\u0120 aa", "\u0120 ab", "aa ab", "\u0120aa b"}));
  ASSERT_EQ(v.tokens.size(), 263u);
  EXPECT_EQ(std::vector<std::string>(v.tokens.begin() + 256, v.tokens.end()),
            (std::vector<std::string>{"aa", "ab", "\u0120aa", "\u0120ab", "aaab", "\u0120aab", "<|endoftext|>"}));
  EXPECT_EQ(v.tokens[32], "\u0120");  // GPT-2's character for the space byte
  EXPECT_EQ(v.token_type[262], int32_t(TokenType::CONTROL));
  EXPECT_EQ(v.bos, 262);
  EXPECT_EQ(v.eos, 262);
  Tokenizer tok(v);
  EXPECT_EQ(tok.encode("aaab aab ab"), (std::vector<int32_t>{262, 260, 261, 259}));
  EXPECT_EQ(tok.encode("aaa", false), (std::vector<int32_t>{256, 'a'}));  // left to right, as trained
  // a smaller vocab keeps the first merges
  Vocab small = train_bpe(texts, 256 + 2 + 1);
  EXPECT_EQ(small.merges, (std::vector<std::string>{"a a", "a b"}));
}

TEST(TrainBpe, RoundTrip) {
  std::vector<std::string> texts = {"the cat sat on the mat", "the dog ate the cat's food", "naïve café, déjà vu", "日本語のテキスト 日本"};
  Tokenizer tok(train_bpe(texts, 320));
  for (std::string s : {"the cat", "catalogue of the mats", "  spaces\n\nand lines\t", "naïve 日本語 😀 Ω", "x'y 12345 !!", ""}) {
    std::vector<int32_t> ids = tok.encode(s, false);
    EXPECT_EQ(tok.decode(ids), s);
    EXPECT_EQ(tok.encode(s), [&] { auto r = ids; r.insert(r.begin(), *tok.bos()); return r; }());
  }
  EXPECT_LT(tok.encode("the cat", false).size(), 7u);  // merged, not bytes
}

TEST(TrainBpe, MatchesHuggingFace) {
  static test::GeneratedFiles dir("tg_train_bpe", "true", "");
  auto read = [](const std::string& f) {
    std::stringstream ss;
    ss << std::ifstream("/usr/share/games/fortunes/" + f).rdbuf();
    return ss.str();
  };
  std::vector<std::string> corpus = {read("computers"), read("science")};
  ASSERT_GT(corpus[0].size(), 1000u) << "Debian's fortunes package (setup.sh) provides /usr/share/games/fortunes";
  Vocab v = train_bpe(corpus, 800);
  EXPECT_EQ(v.tokens.size(), 800u);
  std::string lit = read("literature");
  std::vector<std::string> texts = {lit.substr(0, 3000), "Hello, World! It's 2026-12-06 -- don't     panic.\n\n\tx",
                                    "naïve café 日本語 😀 Ελληνικά", "   trailing   ", "a\r\nb\u00a0c", "computers science"};
  json in = {{"tokens", v.tokens}, {"merges", v.merges}, {"texts", texts}};
  std::ofstream(dir.path("in.json")) << in.dump();
  auto sh = test::run_shell(test::shell_quote(TG_PYTHON) + " " + test::shell_quote(TG_HF_BPE_SCRIPT) + " " + dir.path("in.json") + " " +
                            dir.path("out.json") + " 2>&1");
  ASSERT_EQ(sh.rc, 0) << sh.out << "(setup.sh makes the venv with tokenizers)";
  json out = json::parse(std::ifstream(dir.path("out.json")));
  Tokenizer tok(v);
  for (size_t i = 0; i < texts.size(); i++) EXPECT_EQ(tok.encode(texts[i], false), out[i].get<std::vector<int32_t>>()) << texts[i];
}

TEST(TrainBpe, BadInput) {
  std::vector<std::string> texts = {"abc"};
  try {
    train_bpe(texts, 200);
    FAIL() << "no error";
  } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find("vocab_size 200"), std::string::npos) << e.what(); }
  std::vector<std::string> bad = {"ok", std::string("\xff\xfe")};
  try {
    train_bpe(bad, 300);
    FAIL() << "no error";
  } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find("train_bpe text"), std::string::npos) << e.what(); }
}
