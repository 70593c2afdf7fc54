#pragma once
// The insides of tg::llm::Tokenizer, shared by tokenizer.cpp (vocab, special tokens, encode/decode),
// tokenizer_pre.cpp (the pre-tokenizer regexes), tokenizer_bpe.cpp (byte-level BPE) and tokenizer_spm.cpp (SentencePiece).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tg/tokenizer.h"

namespace tg::llm {

// the pre-tokenizer regexes (llama.cpp's llama-vocab.cpp, the tokenizer.json files of the models):
//   GPT2   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   LLAMA3 (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   QWEN2  as LLAMA3 with \p{N} for \p{N}{1,3} (one digit per piece)
enum class Pre { GPT2, LLAMA3, QWEN2 };
// the pieces of the code points `cps`, as the end index of each (the pieces are consecutive and cover them all)
std::vector<size_t> pretokenize(const std::vector<uint32_t>& cps, Pre pre);

// GPT-2's byte-level alphabet: printable bytes stand for themselves, the others for U+0100 + their rank among the
// non-printable ones (a "gpt2" token's text is its bytes in these characters)
std::array<uint32_t, 256> byte_to_cp();

struct Tokenizer::Impl {
  bool spm = false;                                 // model "llama"; else "gpt2"
  Pre pre = Pre::GPT2;
  bool ignore_merges = false;                       // llama3: a piece that is a token as a whole is that token
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<TokenType> types;
  std::optional<int32_t> bos, eos, unk;
  bool add_bos = false, add_eos = false, add_space_prefix = false;

  std::vector<std::string> bytes;                   // what each token decodes to (CONTROL/UNKNOWN: their text)
  struct Hash {  // lets find() take a string_view
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> normal;  // NORMAL tokens by their bytes ("gpt2") or text ("llama")
  std::array<int32_t, 256> byte_token;              // "gpt2": the token of one byte; "llama": <0xNN>; -1: none
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges;  // "gpt2": (left, right) -> (rank, merged token)
  std::array<std::vector<int32_t>, 256> specials;   // CONTROL/USER_DEFINED/UNKNOWN tokens by first byte, longest first

  static uint64_t pair_key(int32_t a, int32_t b) { return uint64_t(uint32_t(a)) << 32 | uint32_t(b); }
  void init_bpe(const Vocab& v);  // bytes, normal, byte_token, merges
  void init_spm(const Vocab& v);
  void encode_bpe(std::string_view text, std::vector<int32_t>& out) const;            // one fragment without specials
  void encode_spm(std::string_view text, bool prefix, std::vector<int32_t>& out) const;
};

}  // namespace tg::llm
