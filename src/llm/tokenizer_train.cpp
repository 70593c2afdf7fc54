// train_bpe: byte-level BPE merges learned greedily from pair counts (tg/tokenizer.h), updated incrementally per merge.
#include <algorithm>
#include <unordered_map>

#include "llm/tokenizer_impl.h"
#include "llm/unicode.h"
#include "tg/error.h"

namespace tg::llm {

Vocab train_bpe(std::span<const std::string> texts, int32_t vocab_size, const std::vector<std::string>& specials) {
  if (vocab_size < 256 + int64_t(specials.size()))
    throw Error("train_bpe: vocab_size " + std::to_string(vocab_size) + " is below the 256 byte tokens + " + std::to_string(specials.size()) + " special tokens");
  Vocab v{.model = "gpt2", .pre = "gpt2"};
  auto cp = byte_to_cp();
  for (int b = 0; b < 256; b++) unicode::utf8_append(v.tokens.emplace_back(), cp[b]);
  std::unordered_map<std::string, int32_t> ids;
  for (int32_t i = 0; i < 256; i++) ids[v.tokens[i]] = i;

  std::unordered_map<std::string, int64_t> counts;  // the distinct pieces
  for (const std::string& t : texts) {
    auto d = unicode::utf8_decode(t, "train_bpe text");
    size_t start = 0;
    for (size_t end : pretokenize(d.cps, Pre::GPT2)) counts[t.substr(d.offsets[start], d.offsets[end] - d.offsets[start])]++, start = end;
  }
  std::vector<std::vector<int32_t>> words;
  std::vector<int64_t> freq;
  for (auto& [w, c] : counts) words.emplace_back(w.begin(), w.end()), freq.push_back(c);
  for (auto& w : words)
    for (int32_t& x : w) x = uint8_t(x);

  auto key = [](int32_t a, int32_t b) { return uint64_t(uint32_t(a)) << 32 | uint32_t(b); };
  std::unordered_map<uint64_t, int64_t> pairs;               // pair -> occurrences
  std::unordered_map<uint64_t, std::vector<int32_t>> where;  // pair -> words that had it (may be stale or repeated)
  auto add = [&](int32_t w, int64_t sign) {
    for (size_t i = 0; i + 1 < words[w].size(); i++) {
      uint64_t k = key(words[w][i], words[w][i + 1]);
      if ((pairs[k] += sign * freq[w]) == 0) pairs.erase(k);
      if (sign > 0) where[k].push_back(w);
    }
  };
  for (int32_t w = 0; w < int32_t(words.size()); w++) add(w, 1);

  int32_t n_normal = vocab_size - int32_t(specials.size());
  std::vector<int32_t> seen(words.size(), -1);
  while (int32_t(v.tokens.size()) < n_normal && !pairs.empty()) {
    auto best = pairs.begin();
    for (auto it = pairs.begin(); it != pairs.end(); ++it)
      if (it->second > best->second || (it->second == best->second && it->first < best->first)) best = it;
    uint64_t k = best->first;
    int32_t a = int32_t(k >> 32), b = int32_t(uint32_t(k));
    std::string text = v.tokens[a] + v.tokens[b];
    auto [it, fresh] = ids.emplace(text, int32_t(v.tokens.size()));
    if (fresh) v.tokens.push_back(text);
    v.merges.push_back(v.tokens[a] + " " + v.tokens[b]);
    int32_t ab = it->second, merge_no = int32_t(v.merges.size());
    std::vector<int32_t> ws = std::move(where[k]);
    where.erase(k);
    for (int32_t w : ws) {
      if (seen[w] == merge_no) continue;
      seen[w] = merge_no;
      auto& s = words[w];
      bool has = false;
      for (size_t i = 0; i + 1 < s.size() && !has; i++) has = s[i] == a && s[i + 1] == b;
      if (!has) continue;
      add(w, -1);
      std::vector<int32_t> out;
      for (size_t i = 0; i < s.size(); i++) {
        if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) out.push_back(ab), i++;
        else out.push_back(s[i]);
      }
      s = std::move(out);
      add(w, 1);
    }
  }
  v.token_type.assign(v.tokens.size(), int32_t(TokenType::NORMAL));
  for (const std::string& s : specials) {
    if (ids.count(s)) throw Error("train_bpe: special token '" + s + "' is also a learned token");
    v.tokens.push_back(s), v.token_type.push_back(int32_t(TokenType::CONTROL));
  }
  if (!specials.empty()) v.bos = v.eos = int32_t(v.tokens.size() - specials.size()), v.add_bos = true;
  return v;
}

}  // namespace tg::llm
