// Byte-level BPE (model "gpt2"): GPT-2's bytes<->printable characters map, merges by rank.
#include <queue>

#include "llm/tokenizer_impl.h"
#include "llm/unicode.h"
#include "tg/error.h"

namespace tg::llm {

std::array<uint32_t, 256> byte_to_cp() {
  std::array<uint32_t, 256> m{};
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; b++) m[b] = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174 ? b : next++;
  return m;
}

namespace {

// the bytes a byte-level token stands for, or nullopt when a character is not one of the 256
std::optional<std::string> token_bytes(const std::string& text) {
  static const std::unordered_map<uint32_t, uint8_t> cp_to_byte = [] {
    std::unordered_map<uint32_t, uint8_t> m;
    auto fwd = byte_to_cp();
    for (int b = 0; b < 256; b++) m[fwd[b]] = uint8_t(b);
    return m;
  }();
  std::string out;
  try {
    for (uint32_t cp : unicode::utf8_decode(text, "token").cps) {
      auto it = cp_to_byte.find(cp);
      if (it == cp_to_byte.end()) return std::nullopt;
      out += char(it->second);
    }
  } catch (const Error&) { return std::nullopt; }
  return out;
}

}  // namespace

void Tokenizer::Impl::init_bpe(const Vocab& v) {
  for (size_t id = 0; id < tokens.size(); id++) {
    if (types[id] != TokenType::NORMAL) continue;
    // a NORMAL token outside the byte-level alphabet can never be produced; it decodes as its text
    if (auto b = token_bytes(tokens[id])) bytes[id] = *b, normal.emplace(*b, int32_t(id));
  }
  for (int b = 0; b < 256; b++) {
    auto it = normal.find(std::string(1, char(b)));
    byte_token[b] = it == normal.end() ? -1 : it->second;
  }
  for (size_t rank = 0; rank < v.merges.size(); rank++) {
    const std::string& m = v.merges[rank];
    std::string what = "tokenizer: merge " + std::to_string(rank) + " '" + m + "'";
    size_t sp = m.find(' ', 1);
    if (sp == std::string::npos || m.find(' ', sp + 1) != std::string::npos)
      throw Error(what + ": not two tokens separated by one space");
    auto id_of = [&](const std::string& text) {
      auto b = token_bytes(text);
      auto it = b ? normal.find(*b) : normal.end();
      if (it == normal.end() || tokens[it->second] != text) throw Error(what + ": '" + text + "' is not a token of the vocabulary");
      return it->second;
    };
    int32_t a = id_of(m.substr(0, sp)), b = id_of(m.substr(sp + 1)), ab = id_of(m.substr(0, sp) + m.substr(sp + 1));
    merges.emplace(pair_key(a, b), std::pair{int32_t(rank), ab});  // a repeated merge keeps its first rank
  }
}

void Tokenizer::Impl::encode_bpe(std::string_view text, std::vector<int32_t>& out) const {
  auto cps = unicode::utf8_decode(text, "tokenizer encode");
  size_t start = 0;
  for (size_t end : pretokenize(cps.cps, pre)) {
    std::string_view word = text.substr(cps.offsets[start], cps.offsets[end] - cps.offsets[start]);
    start = end;
    if (ignore_merges) {
      if (auto it = normal.find(word); it != normal.end()) { out.push_back(it->second); continue; }
    }
    // symbols in a linked list; candidate merges in a heap by (rank, position), stale ones skipped when popped
    struct Sym { int32_t id; int prev, next; };
    std::vector<Sym> syms(word.size());
    for (size_t i = 0; i < word.size(); i++) {
      int32_t id = byte_token[uint8_t(word[i])];
      if (id < 0) {
        if (!unk) throw Error("tokenizer encode: the vocabulary has no token for byte " + std::to_string(uint8_t(word[i])) + " and no unknown token");
        id = *unk;
      }
      syms[i] = {id, int(i) - 1, i + 1 < word.size() ? int(i) + 1 : -1};
    }
    using Cand = std::tuple<int32_t, int, int32_t, int32_t>;  // rank, left position, left id, right id
    std::priority_queue<Cand, std::vector<Cand>, std::greater<>> heap;
    auto push = [&](int l) {
      if (l < 0 || syms[l].next < 0) return;
      auto it = merges.find(pair_key(syms[l].id, syms[syms[l].next].id));
      if (it != merges.end()) heap.emplace(it->second.first, l, syms[l].id, syms[syms[l].next].id);
    };
    for (int i = 0; i + 1 < int(syms.size()); i++) push(i);
    while (!heap.empty()) {
      auto [rank, l, a, b] = heap.top();
      heap.pop();
      int r = syms[l].next;
      if (syms[l].id != a || r < 0 || syms[r].id != b) continue;
      syms[l].id = merges.at(pair_key(a, b)).second;
      syms[l].next = syms[r].next;
      if (syms[r].next >= 0) syms[syms[r].next].prev = l;
      syms[r].id = -1;
      push(syms[l].prev), push(l);
    }
    for (int i = word.empty() ? -1 : 0; i >= 0; i = syms[i].next) out.push_back(syms[i].id);
  }
}

}  // namespace tg::llm
