#pragma once
// tg::llm::Tokenizer: text <-> token ids from the tokenizer data a GGUF file carries (tokenizer.ggml.*), llama.cpp's
// reading of it. Two models:
//   "gpt2"  byte-level BPE: text split by a pre-tokenizer regex ("gpt2"/"default", "llama3", "qwen2"), each piece's
//           bytes mapped to GPT-2's printable characters and merged by the rank of `merges` (lowest first).
//   "llama" SentencePiece BPE (llama 2): spaces become U+2581, a leading one is added (add_space_prefix), adjacent
//           pieces merged by the highest score; characters without a token fall back to the <0xNN> byte tokens.
// Tokens of type CONTROL, USER_DEFINED and UNKNOWN are matched in the text first (leftmost, longest), the rest is
// tokenized around them.
//
//   tg::llm::Vocab v{.model = "gpt2", .pre = "llama3", .tokens = ..., .token_type = ..., .merges = ..., .bos = 128000};
//   tg::llm::Tokenizer tok(v);
//   std::vector<int32_t> ids = tok.encode("Hello world");   // BOS first when add_bos
//   std::string text = tok.decode(ids);
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tg::llm {

// tokenizer.ggml.token_type (llama.cpp's llama_token_type, SentencePiece's piece types)
enum class TokenType : int32_t { UNDEFINED = 0, NORMAL = 1, UNKNOWN = 2, CONTROL = 3, USER_DEFINED = 4, UNUSED = 5, BYTE = 6 };

// the tokenizer.ggml.* values of a GGUF file (absent keys: empty vectors, nullopt)
struct Vocab {
  std::string model = "gpt2";         // tokenizer.ggml.model: "gpt2" or "llama"
  std::string pre = "default";        // tokenizer.ggml.pre (gpt2 only): "gpt-2", "llama3"/"llama-bpe", "qwen2";
                                      // "default" is gpt2's regex here (llama.cpp's fallback regex is not supported)
  std::vector<std::string> tokens;    // tokenizer.ggml.tokens; the id is the index
  std::vector<float> scores;          // tokenizer.ggml.scores ("llama": merge priority); empty: all 0
  std::vector<int32_t> token_type;    // tokenizer.ggml.token_type (TokenType numbers); empty: all NORMAL
  std::vector<std::string> merges;    // tokenizer.ggml.merges ("gpt2"): "left right", by rank
  std::optional<int32_t> bos, eos, unk;                    // tokenizer.ggml.{bos,eos,unknown}_token_id
  std::optional<bool> add_bos, add_eos, add_space_prefix;  // absent: the model's default ("llama": bos and prefix)
};

class Tokenizer {
 public:
  // checks the vocab: a tg::Error names an unknown model or pre-tokenizer, sizes that disagree, an id out of range,
  // a bad token type, or a merge that is malformed or names a token the vocabulary lacks
  explicit Tokenizer(const Vocab& vocab);

  // the ids of `text` (UTF-8; invalid UTF-8 is a tg::Error naming the byte offset). add_special: BOS/EOS as the vocab
  // says. parse_special: CONTROL and UNKNOWN token texts in `text` become those tokens (USER_DEFINED ones always do)
  std::vector<int32_t> encode(std::string_view text, bool add_special = true, bool parse_special = true) const;
  // the bytes of `ids` (may end inside a UTF-8 sequence); special: CONTROL/UNKNOWN tokens as their text, else nothing.
  // An id out of range is a tg::Error
  std::string decode(std::span<const int32_t> ids, bool special = true) const;
  // one token's bytes, as decode gives them mid-sequence (for streaming)
  std::string piece(int32_t id, bool special = true) const;

  int32_t n_vocab() const;
  const std::string& token(int32_t id) const;  // the vocab's text of `id`
  TokenType type(int32_t id) const;
  std::optional<int32_t> bos() const;
  std::optional<int32_t> eos() const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl;
};

}  // namespace tg::llm

namespace tg::llm {

// a byte-level BPE vocabulary (model "gpt2", pre "gpt2") trained on `texts`: the 256 byte tokens (ids 0..255, byte
// order), then one token per merge, then `specials` as CONTROL tokens (the first is BOS and EOS, added in front of
// encoded text). Each text is split by the gpt2 pre-tokenizer; pairs of adjacent tokens are counted over the distinct
// pieces weighted by how often each occurs, and the most frequent pair is merged (ties: the smallest left id, then the
// smallest right id; occurrences left to right, as encode applies them), until the vocabulary has vocab_size tokens or
// no pair occurs. A merge whose text is already a token reuses it. vocab_size below 256 + specials is a tg::Error
Vocab train_bpe(std::span<const std::string> texts, int32_t vocab_size, const std::vector<std::string>& specials = {"<|endoftext|>"});

}  // namespace tg::llm
