// SentencePiece BPE (model "llama"): spaces as U+2581, adjacent pieces merged by the score of the token they make
// (highest first, leftmost on ties), characters left without a token spelled as <0xNN> byte tokens.
#include <cstdio>
#include <queue>

#include "llm/tokenizer_impl.h"
#include "llm/unicode.h"
#include "tg/error.h"

namespace tg::llm {

static const std::string kSpace = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK

void Tokenizer::Impl::init_spm(const Vocab&) {
  byte_token.fill(-1);
  for (size_t id = 0; id < tokens.size(); id++) {
    const std::string& t = tokens[id];
    if (types[id] == TokenType::NORMAL) {
      normal.emplace(t, int32_t(id));
      std::string b;
      for (size_t i = 0; i < t.size();) {
        bool sp = t.compare(i, kSpace.size(), kSpace) == 0;
        b += sp ? std::string(" ") : t.substr(i, 1), i += sp ? kSpace.size() : 1;
      }
      bytes[id] = b;
    }
    unsigned v;
    char end;
    if (types[id] == TokenType::BYTE) {
      if (t.size() != 6 || std::sscanf(t.c_str(), "<0x%2X%c", &v, &end) != 2 || end != '>')
        throw Error("tokenizer: byte token " + std::to_string(id) + " '" + t + "' is not of the form <0xNN>");
      bytes[id] = std::string(1, char(v)), byte_token[v] = int32_t(id);
    }
  }
}

void Tokenizer::Impl::encode_spm(std::string_view frag, bool prefix, std::vector<int32_t>& out) const {
  std::string text;
  for (char c : (prefix ? " " : "") + std::string(frag)) c == ' ' ? text += kSpace : text += c;
  auto cps = unicode::utf8_decode(text, "tokenizer encode");
  struct Sym { size_t start, len; int prev, next; };
  std::vector<Sym> syms(cps.cps.size());
  for (size_t i = 0; i < syms.size(); i++)
    syms[i] = {cps.offsets[i], cps.offsets[i + 1] - cps.offsets[i], int(i) - 1, i + 1 < syms.size() ? int(i) + 1 : -1};
  struct Cand {
    float score;
    int left, right;
    size_t len;
    bool operator<(const Cand& o) const { return score < o.score || (score == o.score && left > o.left); }
  };
  std::priority_queue<Cand> heap;
  auto push = [&](int l) {
    if (l < 0 || syms[l].next < 0) return;
    int r = syms[l].next;
    auto it = normal.find(std::string_view(text).substr(syms[l].start, syms[l].len + syms[r].len));
    if (it != normal.end()) heap.push({scores[it->second], l, r, syms[l].len + syms[r].len});
  };
  for (int i = 0; i + 1 < int(syms.size()); i++) push(i);
  while (!heap.empty()) {
    Cand c = heap.top();
    heap.pop();
    Sym &l = syms[c.left], &r = syms[c.right];
    if (l.len == 0 || r.len == 0 || l.len + r.len != c.len || l.next != c.right) continue;
    l.len += r.len, r.len = 0, l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = c.left;
    push(l.prev), push(c.left);
  }
  for (int i = syms.empty() ? -1 : 0; i >= 0; i = syms[i].next) {
    std::string_view piece = std::string_view(text).substr(syms[i].start, syms[i].len);
    if (auto it = normal.find(piece); it != normal.end()) { out.push_back(it->second); continue; }
    for (unsigned char b : piece) {
      if (byte_token[b] >= 0) out.push_back(byte_token[b]);
      else if (unk) out.push_back(*unk);
      else throw Error("tokenizer encode: no token for '" + std::string(piece) + "', no <0x" + "0123456789ABCDEF"[b >> 4] + "0123456789ABCDEF"[b & 15] + "> byte token and no unknown token");
    }
  }
}

}  // namespace tg::llm
