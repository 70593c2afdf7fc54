// The pre-tokenizer regexes of tokenizer_impl.h, written out as scans over code points: each alternative is tried in
// order at the piece's start, with the backtracking the regex engine would do spelled out where it matters.
#include "llm/tokenizer_impl.h"
#include "llm/unicode.h"

namespace tg::llm {

using unicode::CpClass;

std::vector<size_t> pretokenize(const std::vector<uint32_t>& cps, Pre pre) {
  size_t n = cps.size();
  std::vector<CpClass> cls(n);
  for (size_t i = 0; i < n; i++) cls[i] = unicode::cp_class(cps[i]);
  auto is = [&](size_t j, CpClass c) { return j < n && cls[j] == c; };
  auto letter = [&](size_t j) { return is(j, CpClass::LETTER); };
  auto number = [&](size_t j) { return is(j, CpClass::NUMBER); };
  auto space = [&](size_t j) { return is(j, CpClass::SPACE); };
  auto other = [&](size_t j) { return is(j, CpClass::OTHER); };
  auto newline = [&](size_t j) { return j < n && (cps[j] == '\r' || cps[j] == '\n'); };
  auto run = [&](size_t j, auto pred) { while (pred(j)) j++; return j; };
  // `opt?run+`: the end of the match at i, or i for none
  auto opt_run = [&](size_t i, auto opt, auto pred) {
    if (opt(i) && pred(i + 1)) return run(i + 1, pred);
    return run(i, pred);
  };
  auto is_space_char = [&](size_t j) { return j < n && cps[j] == ' '; };
  bool fold = pre != Pre::GPT2;  // (?i:...) around the contractions
  auto lower = [&](size_t j) -> uint32_t {
    uint32_t c = j < n ? cps[j] : 0;
    if (fold && c >= 'A' && c <= 'Z') return c + 32;
    if (fold && c == 0x17F) return 's';  // LATIN SMALL LETTER LONG S case-folds to s
    return c;
  };
  auto contraction = [&](size_t i) -> size_t {
    if (cps[i] != '\'') return i;
    uint32_t a = lower(i + 1), b = lower(i + 2);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
    return i;
  };
  // \s+(?!\S)|\s+ : a run of whitespace leaves its last one to the piece that follows it
  auto spaces = [&](size_t i) {
    size_t j = run(i, space);
    return j == n || j - i == 1 ? j : j - 1;
  };

  std::vector<size_t> ends;
  for (size_t i = 0, e = 0; i < n; ends.push_back(e), i = e) {
    if ((e = contraction(i)) != i) continue;
    if (pre == Pre::GPT2) {
      if ((e = opt_run(i, is_space_char, letter)) != i) continue;
      if ((e = opt_run(i, is_space_char, number)) != i) continue;
      if ((e = opt_run(i, is_space_char, other)) != i) continue;
      e = spaces(i);
      continue;
    }
    auto not_crlf_letter_number = [&](size_t j) { return j < n && !newline(j) && !letter(j) && !number(j); };
    if ((e = opt_run(i, not_crlf_letter_number, letter)) != i) continue;
    if (number(i)) {
      e = pre == Pre::QWEN2 ? i + 1 : i + 1 + number(i + 1) + (number(i + 1) && number(i + 2));
      continue;
    }
    if ((e = opt_run(i, is_space_char, other)) != i) { e = run(e, newline); continue; }
    // \s*[\r\n]+ : whitespace up to and including its last \r or \n
    size_t j = run(i, space), last_nl = n;
    for (size_t k = i; k < j; k++) if (newline(k)) last_nl = k;
    e = last_nl != n ? last_nl + 1 : spaces(i);
  }
  return ends;
}

}  // namespace tg::llm
