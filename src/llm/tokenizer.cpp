// tg::llm::Tokenizer: the vocab checked and indexed, special tokens split off, the two models dispatched.
#include <algorithm>

#include "llm/tokenizer_impl.h"
#include "llm/unicode.h"
#include "tg/error.h"

namespace tg::llm {

Tokenizer::Tokenizer(const Vocab& v) {
  auto m = std::make_shared<Impl>();
  size_t n = v.tokens.size();
  if (v.model != "gpt2" && v.model != "llama")
    throw Error("tokenizer: unsupported model '" + v.model + "' (tokenizer.ggml.model: gpt2 or llama)");
  m->spm = v.model == "llama";
  if (!m->spm) {
    if (v.pre == "default" || v.pre == "gpt2" || v.pre == "gpt-2" || v.pre == "olmo" || v.pre == "mpt") m->pre = Pre::GPT2;  // (llama.cpp: one regex)
    else if (v.pre == "llama3" || v.pre == "llama-bpe" || v.pre == "llama-v3") m->pre = Pre::LLAMA3, m->ignore_merges = true;
    else if (v.pre == "qwen2") m->pre = Pre::QWEN2;
    else throw Error("tokenizer: unsupported pre-tokenizer '" + v.pre + "' (tokenizer.ggml.pre: default, gpt-2, llama3, llama-bpe, qwen2)");
  }
  if (n == 0) throw Error("tokenizer: the vocabulary has no tokens");
  if (n > size_t(INT32_MAX)) throw Error("tokenizer: " + std::to_string(n) + " tokens do not fit int32 ids");
  auto sized = [&](size_t got, const char* what) {
    if (got != 0 && got != n)
      throw Error(std::string("tokenizer: ") + what + " has " + std::to_string(got) + " entries for " + std::to_string(n) + " tokens");
  };
  sized(v.scores.size(), "scores"), sized(v.token_type.size(), "token_type");
  m->tokens = v.tokens;
  m->scores = v.scores.empty() ? std::vector<float>(n, 0.0f) : v.scores;
  m->types.resize(n, TokenType::NORMAL);
  for (size_t i = 0; i < v.token_type.size(); i++) {
    if (v.token_type[i] < 0 || v.token_type[i] > 6)
      throw Error("tokenizer: token " + std::to_string(i) + " has type " + std::to_string(v.token_type[i]) + " (known: 0..6)");
    m->types[i] = TokenType(v.token_type[i]);
  }
  auto id = [&](std::optional<int32_t> x, const char* what) {
    if (x && (*x < 0 || size_t(*x) >= n))
      throw Error(std::string("tokenizer: ") + what + " token id " + std::to_string(*x) + " is out of range (" + std::to_string(n) + " tokens)");
    return x;
  };
  m->bos = id(v.bos, "bos"), m->eos = id(v.eos, "eos"), m->unk = id(v.unk, "unknown");
  m->add_bos = v.add_bos.value_or(m->spm), m->add_eos = v.add_eos.value_or(false);
  m->add_space_prefix = v.add_space_prefix.value_or(m->spm);
  if (m->add_bos && !m->bos) throw Error("tokenizer: add_bos is set but there is no bos token id");
  if (m->add_eos && !m->eos) throw Error("tokenizer: add_eos is set but there is no eos token id");

  m->bytes = m->tokens;  // CONTROL, USER_DEFINED, UNKNOWN, UNUSED: the text as it is
  m->spm ? m->init_spm(v) : m->init_bpe(v);
  for (size_t i = 0; i < n; i++) {
    TokenType t = m->types[i];
    if ((t == TokenType::CONTROL || t == TokenType::USER_DEFINED || t == TokenType::UNKNOWN) && !m->tokens[i].empty())
      m->specials[uint8_t(m->tokens[i][0])].push_back(int32_t(i));
  }
  for (auto& s : m->specials)
    std::stable_sort(s.begin(), s.end(), [&](int32_t a, int32_t b) { return m->tokens[a].size() > m->tokens[b].size(); });
  impl = std::move(m);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  const Impl& m = *impl;
  unicode::utf8_decode(text, "tokenizer encode");  // the whole text's offsets in the error, not a fragment's
  std::vector<int32_t> out;
  if (add_special && m.add_bos) out.push_back(*m.bos);
  bool prev_special = true;  // "llama": each fragment after a special token (or at the start) gets the space prefix
  auto flush = [&](size_t from, size_t to) {
    if (from == to) return;
    m.spm ? m.encode_spm(text.substr(from, to - from), m.add_space_prefix && prev_special, out) : m.encode_bpe(text.substr(from, to - from), out);
    prev_special = false;
  };
  size_t start = 0;
  for (size_t i = 0; i < text.size();) {
    int32_t hit = -1;
    for (int32_t s : m.specials[uint8_t(text[i])]) {
      if (!parse_special && m.types[s] != TokenType::USER_DEFINED) continue;
      if (text.substr(i).starts_with(m.tokens[s])) { hit = s; break; }
    }
    if (hit < 0) { i++; continue; }
    flush(start, i);
    out.push_back(hit), prev_special = true;
    start = i += m.tokens[hit].size();
  }
  flush(start, text.size());
  if (add_special && m.add_eos) out.push_back(*m.eos);
  return out;
}

static void check_id(size_t n, int32_t id) {
  if (id < 0 || size_t(id) >= n) throw Error("tokenizer decode: token id " + std::to_string(id) + " is out of range (" + std::to_string(n) + " tokens)");
}

std::string Tokenizer::piece(int32_t id, bool special) const {
  const Impl& m = *impl;
  check_id(m.tokens.size(), id);
  TokenType t = m.types[id];
  if (!special && (t == TokenType::CONTROL || t == TokenType::UNKNOWN)) return "";
  return m.bytes[id];
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool special) const {
  std::string out;
  for (int32_t id : ids) out += piece(id, special);
  // "llama": the space encode put in front of the text
  if (impl->spm && impl->add_space_prefix && !out.empty() && out[0] == ' ') out.erase(0, 1);
  return out;
}

int32_t Tokenizer::n_vocab() const { return int32_t(impl->tokens.size()); }
const std::string& Tokenizer::token(int32_t id) const { check_id(impl->tokens.size(), id); return impl->tokens[id]; }
TokenType Tokenizer::type(int32_t id) const { check_id(impl->tokens.size(), id); return impl->types[id]; }
std::optional<int32_t> Tokenizer::bos() const { return impl->bos; }
std::optional<int32_t> Tokenizer::eos() const { return impl->eos; }

}  // namespace tg::llm
