// tg::llm::Tokenizer against Hugging Face `tokenizers` (tests/tools/gen_tokenizer_cases.py, run here with setup.sh's
// .venv): vocabularies trained on Debian's fortune cookies, ids and pre-tokenizer pieces for a text set with unicode,
// whitespace runs, digits, contractions and special tokens; decode(encode(s)) == s. Then small vocabularies whose
// ids are worked out by hand, and bad input, which must give a tg::Error naming what is wrong.
#include <gtest/gtest.h>
#include <stdio.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "llm/tokenizer_impl.h"
#include "llm/unicode.h"
#include "tg/error.h"
#include "tg/tokenizer.h"

using namespace tg;
using namespace tg::llm;
using nlohmann::json;

namespace {

struct Oracle {
  std::string error;
  json j;
  Oracle() {
    std::string out_path = std::filesystem::temp_directory_path() / ("tg_tokenizer_" + std::to_string(::getpid()) + ".json");
    std::string cmd = std::string("'") + TG_PYTHON + "' '" + TG_TOKENIZER_SCRIPT + "' '" + out_path + "' 2>&1";
    FILE* p = ::popen(cmd.c_str(), "r");
    std::string out;
    char buf[512];
    while (p && fgets(buf, sizeof buf, p)) out += buf;
    int rc = p ? ::pclose(p) : -1;
    if (rc != 0) { error = "`" + cmd + "` failed (rc " + std::to_string(rc) + "; setup.sh makes the venv with tokenizers):\n" + out; return; }
    j = json::parse(std::ifstream(out_path));
    std::filesystem::remove(out_path);
  }
};
const Oracle& oracle() {
  static Oracle o;
  return o;
}
#define NEED_ORACLE() ASSERT_TRUE(oracle().error.empty()) << oracle().error

Vocab vocab_of(const json& v, const std::string& model, const std::string& pre) {
  Vocab r{.model = model, .pre = pre};
  r.tokens = v["tokens"].get<std::vector<std::string>>();
  r.token_type = v["token_type"].get<std::vector<int32_t>>();
  if (v.contains("merges")) r.merges = v["merges"].get<std::vector<std::string>>();
  if (v.contains("scores")) r.scores = v["scores"].get<std::vector<float>>();
  if (v.contains("bos")) r.bos = v["bos"].get<int32_t>(), r.eos = v["eos"].get<int32_t>(), r.unk = v["unk"].get<int32_t>();
  return r;
}

std::string show(const std::string& s) { return ::testing::PrintToString(s); }
bool has_special(const std::string& s) {
  for (const char* t : {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "[SEP]", "<s>", "</s>", "<unk>"})
    if (s.find(t) != std::string::npos) return true;
  return false;
}

// every case's ids as `tokenizers` gives them, and the text back from them
void expect_cases(const Tokenizer& tok, const json& cases, bool add_special, bool parse_special, bool round_trip) {
  ASSERT_GT(cases.size(), 100u);
  int checked_round_trips = 0;
  for (const json& c : cases) {
    std::string text = c["text"].get<std::string>();
    std::vector<int32_t> want = c["ids"].get<std::vector<int32_t>>();
    std::vector<int32_t> got = tok.encode(text, add_special, parse_special);
    EXPECT_EQ(got, want) << "text " << show(text);
    if (!tok.bos()) {  // byte-level: the streamed pieces add up to the decoded text
      std::string streamed;
      for (int32_t id : got) streamed += tok.piece(id);
      EXPECT_EQ(streamed, tok.decode(got)) << "pieces of " << show(text);
    }
    if (!round_trip || (tok.bos() && tok.token(*tok.bos()) == "<s>" && has_special(text))) continue;
    EXPECT_EQ(tok.decode(got, /*special=*/!add_special), text) << "round trip of " << show(text);
    checked_round_trips++;
  }
  EXPECT_GT(checked_round_trips, 100);
}

}  // namespace

// ** the pre-tokenizer regexes: pieces as the regex engine of `tokenizers` (Oniguruma) cuts them **

TEST(TokenizerOracle, PreTokenizerPieces) {
  NEED_ORACLE();
  const json& b = oracle().j["bpe"];
  size_t texts = 0;
  for (auto [name, pre] : {std::pair{"gpt2", Pre::GPT2}, {"llama3", Pre::LLAMA3}, {"qwen2", Pre::QWEN2}}) {
    const json& cases = b["cases"][name];
    const json& pieces = b["pieces"][name];
    ASSERT_EQ(cases.size(), pieces.size());
    for (size_t i = 0; i < cases.size(); i++, texts++) {
      std::string text = cases[i]["text"].get<std::string>();
      auto d = unicode::utf8_decode(text, "test");
      std::vector<std::string> got;
      size_t start = 0;
      for (size_t end : pretokenize(d.cps, pre)) got.push_back(text.substr(d.offsets[start], d.offsets[end] - d.offsets[start])), start = end;
      EXPECT_EQ(got, pieces[i].get<std::vector<std::string>>()) << name << " pieces of " << show(text);
    }
  }
  EXPECT_GT(texts, 300u);
}

// ** byte-level BPE ("gpt2") **

TEST(TokenizerOracle, Gpt2) {
  NEED_ORACLE();
  const json& b = oracle().j["bpe"];
  expect_cases(Tokenizer(vocab_of(b, "gpt2", "gpt2")), b["cases"]["gpt2"], false, true, true);
  expect_cases(Tokenizer(vocab_of(b, "gpt2", "gpt-2")), b["cases"]["gpt2"], false, true, true);
  expect_cases(Tokenizer(vocab_of(b, "gpt2", "default")), b["cases"]["gpt2"], false, true, true);
}
TEST(TokenizerOracle, Llama3) {
  NEED_ORACLE();
  const json& b = oracle().j["bpe"];
  expect_cases(Tokenizer(vocab_of(b, "gpt2", "llama3")), b["cases"]["llama3"], false, true, true);
  expect_cases(Tokenizer(vocab_of(b, "gpt2", "llama-bpe")), b["cases"]["llama3"], false, true, true);
}
TEST(TokenizerOracle, Qwen2) {
  NEED_ORACLE();
  const json& b = oracle().j["bpe"];
  expect_cases(Tokenizer(vocab_of(b, "gpt2", "qwen2")), b["cases"]["qwen2"], false, true, true);
}
// parse_special=false: control tokens in the text are plain text, user-defined ones are still matched
TEST(TokenizerOracle, Gpt2ParseSpecialOff) {
  NEED_ORACLE();
  const json& b = oracle().j["bpe"];
  expect_cases(Tokenizer(vocab_of(b, "gpt2", "gpt2")), b["cases"]["gpt2_raw"], false, false, true);
}
// BOS and EOS around what encode gives without them (the vocab's own control tokens)
TEST(TokenizerOracle, Gpt2BosEos) {
  NEED_ORACLE();
  Vocab v = vocab_of(oracle().j["bpe"], "gpt2", "llama3");
  auto at = [&](const char* t) { return int32_t(std::find(v.tokens.begin(), v.tokens.end(), t) - v.tokens.begin()); };
  v.bos = at("<|im_start|>"), v.eos = at("<|endoftext|>");
  std::vector<int32_t> plain = Tokenizer(v).encode("Hello world", true);  // add_bos/add_eos default off for gpt2
  EXPECT_EQ(plain, Tokenizer(v).encode("Hello world", false));
  v.add_bos = true, v.add_eos = true;
  Tokenizer tok(v);
  std::vector<int32_t> want{*v.bos};
  want.insert(want.end(), plain.begin(), plain.end());
  want.push_back(*v.eos);
  EXPECT_EQ(tok.encode("Hello world"), want);
  EXPECT_EQ(tok.decode(want), "<|im_start|>Hello world<|endoftext|>");
  EXPECT_EQ(tok.decode(want, /*special=*/false), "Hello world");
  EXPECT_EQ(tok.encode(""), (std::vector<int32_t>{*v.bos, *v.eos}));
}

// ** SentencePiece BPE ("llama") **

TEST(TokenizerOracle, Llama) {
  NEED_ORACLE();
  const json& s = oracle().j["spm"];
  Tokenizer tok(vocab_of(s, "llama", "default"));
  expect_cases(tok, s["cases"]["llama"], true, true, true);
  // byte fallback happened: some case holds <0xNN> tokens, and decodes back all the same
  int bytes = 0;
  for (const json& c : s["cases"]["llama"])
    for (int32_t id : c["ids"].get<std::vector<int32_t>>()) bytes += tok.type(id) == TokenType::BYTE;
  EXPECT_GT(bytes, 20);
}

// ** small vocabularies worked out by hand **

namespace {
// byte-level text of a string of printable ASCII, with ' ' as GPT-2's U+0120
std::string bl(const std::string& s) {
  std::string r;
  for (char c : s) c == ' ' ? r += "\xC4\xA0" : r += c;
  return r;
}
Vocab tiny_bpe() {  // the printable ASCII bytes, then ab, abc, " a" and "aa"
  Vocab v{.model = "gpt2", .pre = "gpt2"};
  for (int c = 32; c < 127; c++) v.tokens.push_back(bl(std::string(1, char(c))));
  for (const char* t : {"ab", "abc", " a", "aa"}) v.tokens.push_back(bl(t));
  v.merges = {"a b", "ab c", bl(" ") + " a", "a a"};
  return v;
}
int32_t ascii(char c) { return int32_t(c - 32); }
}  // namespace

TEST(Tokenizer, BpeMergesByRank) {
  Tokenizer tok(tiny_bpe());
  const int32_t ab = 95, abc = 96, sp_a = 97, aa = 98;
  // "abc": (a,b) rank 0 then (ab,c) rank 1. " abc": (a,b) rank 0 goes before (" ",a) rank 2, and nothing joins " "+abc
  EXPECT_EQ(tok.encode("abc abc"), (std::vector<int32_t>{abc, ascii(' '), abc}));
  // " ab": (a,b) first again; " aab": (a,a) rank 3 loses to (a,b) rank 0, then (" ",a) rank 2 -> " a", ab
  EXPECT_EQ(tok.encode(" aab"), (std::vector<int32_t>{sp_a, ab}));
  // "aaa": equal ranks merge leftmost first
  EXPECT_EQ(tok.encode("aaa"), (std::vector<int32_t>{aa, ascii('a')}));
  EXPECT_EQ(tok.decode(tok.encode("abc aab aaa")), "abc aab aaa");
}

// llama3 (ignore_merges): a piece that is a token as a whole is that token, whatever the merges would make of it
TEST(Tokenizer, Llama3IgnoreMerges) {
  Vocab v = tiny_bpe();
  v.merges = {"a b"};  // nothing makes abc
  EXPECT_EQ(Tokenizer(v).encode("abc"), (std::vector<int32_t>{95, ascii('c')}));
  v.pre = "llama3";
  EXPECT_EQ(Tokenizer(v).encode("abc"), (std::vector<int32_t>{96}));
  v.pre = "qwen2";
  EXPECT_EQ(Tokenizer(v).encode("abc"), (std::vector<int32_t>{95, ascii('c')}));
}

TEST(Tokenizer, BpeSpecialTokensLongestFirst) {
  Vocab v = tiny_bpe();
  v.tokens.push_back("<x>"), v.tokens.push_back("<x>>"), v.tokens.push_back("<u>");
  v.token_type.assign(v.tokens.size(), 1);
  v.token_type[99] = 3, v.token_type[100] = 3, v.token_type[101] = 4;
  Tokenizer tok(v);
  EXPECT_EQ(tok.encode("a<x>>b<x><u>"), (std::vector<int32_t>{ascii('a'), 100, ascii('b'), 99, 101}));
  // parse_special=false: the control tokens are text, the user-defined one is still matched
  EXPECT_EQ(tok.encode("<x><u>", true, false), (std::vector<int32_t>{ascii('<'), ascii('x'), ascii('>'), 101}));
  EXPECT_EQ(tok.decode(std::vector<int32_t>{99, 101}, /*special=*/false), "<u>");
}

TEST(Tokenizer, LlamaScoresAndByteFallback) {
  // <unk> <s> </s> <0xC3> <0xA9> then pieces; "▁ab" beats "▁a" because "ab" (score -1) merges before "▁a" (-2)
  Vocab v{.model = "llama"};
  v.tokens = {"<unk>", "<s>", "</s>", "<0xC3>", "<0xA9>", "\xE2\x96\x81", "a", "b", "ab", "\xE2\x96\x81" "a", "\xE2\x96\x81" "ab"};
  v.token_type = {2, 3, 3, 6, 6, 1, 1, 1, 1, 1, 1};
  v.scores = {0, 0, 0, 0, 0, -10, -10, -10, -1, -2, -3};
  v.bos = 1, v.eos = 2, v.unk = 0;
  Tokenizer tok(v);
  EXPECT_EQ(tok.encode("ab"), (std::vector<int32_t>{1, 10}));
  // "▁a▁b": ▁a (-2) is the only merge; "é" has no piece: its two bytes
  EXPECT_EQ(tok.encode("a b\xC3\xA9", false), (std::vector<int32_t>{9, 5, 7, 3, 4}));
  EXPECT_EQ(tok.decode(tok.encode("a b\xC3\xA9")), "<s> a b\xC3\xA9");  // the prefix space stays after <s>
  EXPECT_EQ(tok.decode(tok.encode(" a b\xC3\xA9"), false), " a b\xC3\xA9");
  // a character with neither a piece nor byte tokens: <unk> per byte
  EXPECT_EQ(tok.encode("z", false), (std::vector<int32_t>{5, 0}));
  // after a special token the next fragment gets its own space prefix
  EXPECT_EQ(tok.encode("</s>ab", false), (std::vector<int32_t>{2, 10}));
}

// ** bad input **

namespace {
void expect_error(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no tg::Error (wanted one saying '" << needle << "')";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}
}  // namespace

TEST(Tokenizer, InvalidUtf8) {
  Tokenizer tok(tiny_bpe());
  std::pair<std::string, std::string> bad[] = {
      {"ab\xFF", "invalid UTF-8 at byte 2 (not a lead byte)"}, {"a\xC3", "at byte 1 (sequence cut off"},
      {"\xE2\x82z", "at byte 2 (expected a continuation byte)"}, {"\xC0\xAF", "at byte 0 (overlong encoding)"},
      {"x\xED\xA0\x80", "at byte 1 (surrogate"}, {"\xF4\x90\x80\x80", "past U+10FFFF"}, {"\x80", "not a lead byte"}};
  for (auto& [s, msg] : bad) expect_error([&] { tok.encode(s); }, msg);
  Vocab sv{.model = "llama", .tokens = {"<unk>", "a"}, .token_type = {2, 1}, .unk = 0, .add_bos = false};
  Tokenizer spm(sv);
  expect_error([&] { spm.encode("a\xC3(", false); }, "invalid UTF-8 at byte 2");
}

// random bytes: a tg::Error exactly when they are not well-formed UTF-8 (surrogates, overlong forms and code points past
// U+10FFFF included), else the text back from its ids
TEST(Tokenizer, RandomBytes) {
  Tokenizer bpe(tiny_bpe());
  Vocab sv{.model = "llama", .tokens = {"<unk>", "<s>", "\xE2\x96\x81"}, .token_type = {2, 3, 1}, .bos = 1, .unk = 0};
  for (int b = 0; b < 256; b++) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    sv.tokens.push_back(name), sv.token_type.push_back(6);
  }
  Tokenizer spm(sv);
  std::mt19937 rng(15);
  int valid = 0, invalid = 0;
  for (int n = 0; n < 3000; n++) {
    std::string s(rng() % 12, '\0');
    for (char& c : s) c = char(rng() % 4 == 0 ? 0x80 + rng() % 0x80 : rng() % 3 == 0 ? 0xC0 + rng() % 0x40 : rng() % 0x80);
    // well-formed, as the Unicode standard's table 3-7 lists the byte sequences
    bool ok = true;
    for (size_t i = 0; i < s.size() && ok;) {
      uint8_t a = uint8_t(s[i]);
      auto in = [&](size_t k, int lo, int hi) { return i + k < s.size() && uint8_t(s[i + k]) >= lo && uint8_t(s[i + k]) <= hi; };
      size_t len = a <= 0x7F ? 1 : a >= 0xC2 && a <= 0xDF && in(1, 0x80, 0xBF) ? 2
                 : a == 0xE0 && in(1, 0xA0, 0xBF) && in(2, 0x80, 0xBF) ? 3
                 : ((a >= 0xE1 && a <= 0xEC) || a == 0xEE || a == 0xEF) && in(1, 0x80, 0xBF) && in(2, 0x80, 0xBF) ? 3
                 : a == 0xED && in(1, 0x80, 0x9F) && in(2, 0x80, 0xBF) ? 3
                 : a == 0xF0 && in(1, 0x90, 0xBF) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4
                 : a >= 0xF1 && a <= 0xF3 && in(1, 0x80, 0xBF) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4
                 : a == 0xF4 && in(1, 0x80, 0x8F) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
      ok = len != 0, i += len;
    }
    for (const Tokenizer* tok : {&bpe, &spm}) {
      try {
        std::vector<int32_t> ids = tok->encode(s, false);
        EXPECT_TRUE(ok) << "accepted " << show(s);
        EXPECT_EQ(tok->decode(ids), s);
        valid++;
      } catch (const Error& e) {
        std::string msg = e.what();
        if (msg.find("invalid UTF-8") != std::string::npos) {
          EXPECT_FALSE(ok) << "refused " << show(s) << ": " << msg;
          invalid++;
        } else {  // tiny_bpe spells only printable ASCII; the SentencePiece vocab has every byte
          EXPECT_TRUE(tok == &bpe && msg.find("no token for byte") != std::string::npos) << msg;
        }
      }
    }
  }
  EXPECT_GT(valid, 500);
  EXPECT_GT(invalid, 1000);
}

TEST(Tokenizer, DecodeUnknownId) {
  Tokenizer tok(tiny_bpe());
  expect_error([&] { tok.decode(std::vector<int32_t>{0, 99}); }, "token id 99 is out of range (99 tokens)");
  expect_error([&] { tok.decode(std::vector<int32_t>{-1}); }, "token id -1 is out of range");
  expect_error([&] { tok.token(1000); }, "token id 1000");
}

TEST(Tokenizer, BadVocab) {
  auto with = [](auto edit) { Vocab v = tiny_bpe(); edit(v); return [v] { Tokenizer t(v); }; };
  expect_error(with([](Vocab& v) { v.merges.push_back("a q\xC4\xA0"); }), "merge 4 'a q\xC4\xA0': 'q\xC4\xA0' is not a token");
  expect_error(with([](Vocab& v) { v.merges.push_back("c a"); }), "merge 4 'c a': 'ca' is not a token");
  expect_error(with([](Vocab& v) { v.merges.push_back("abc"); }), "merge 4 'abc': not two tokens");
  expect_error(with([](Vocab& v) { v.merges.push_back("a b c"); }), "merge 4 'a b c': not two tokens");
  expect_error(with([](Vocab& v) { v.model = "bert"; }), "unsupported model 'bert'");
  expect_error(with([](Vocab& v) { v.pre = "falcon"; }), "unsupported pre-tokenizer 'falcon'");
  expect_error(with([](Vocab& v) { v.scores = {1.0f}; }), "scores has 1 entries for 99 tokens");
  expect_error(with([](Vocab& v) { v.token_type.assign(99, 1), v.token_type[7] = 9; }), "token 7 has type 9");
  expect_error(with([](Vocab& v) { v.bos = 99; }), "bos token id 99 is out of range");
  expect_error(with([](Vocab& v) { v.unk = -2; }), "unknown token id -2 is out of range");
  expect_error(with([](Vocab& v) { v.add_bos = true; }), "add_bos is set but there is no bos token id");
  expect_error(with([](Vocab& v) { v.tokens.clear(), v.merges.clear(); }), "no tokens");
  expect_error([] { Tokenizer t(Vocab{.model = "llama", .tokens = {"<s>", "<0xZZ>"}, .token_type = {3, 6}, .add_bos = false}); },
               "byte token 1 '<0xZZ>' is not of the form <0xNN>");
  // a byte the vocabulary cannot spell, and no unknown token
  expect_error([] { Tokenizer(tiny_bpe()).encode("\xC3\xA9"); }, "no token for byte 195");
  expect_error([] { Tokenizer(Vocab{.model = "llama", .tokens = {"a"}, .add_bos = false}).encode("b"); }, "no token for '\xE2\x96\x81'");
}
