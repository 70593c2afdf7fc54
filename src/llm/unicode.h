#pragma once
// UTF-8 and the code point classes the tokenizer's pre-tokenizer regexes test (\p{L}, \p{N}, \s).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tg::llm::unicode {

enum class CpClass : uint8_t { OTHER, LETTER, NUMBER, SPACE };
struct CpRange {
  uint32_t first, last;
  CpClass cls;
};
extern const CpRange cp_ranges[];  // sorted, disjoint; code points not listed are OTHER (unicode_table.cpp, generated)
extern const size_t n_cp_ranges;
extern const char* const unicode_version;

CpClass cp_class(uint32_t cp);

// the code points of `s`, and where each starts in it (one more entry: s.size()); throws tg::Error naming `what` and
// the byte offset for invalid UTF-8 (bad lead or continuation byte, truncation, overlong form, surrogate, > U+10FFFF)
struct Decoded {
  std::vector<uint32_t> cps;
  std::vector<size_t> offsets;
};
Decoded utf8_decode(std::string_view s, const std::string& what);
// the length of the (valid) UTF-8 sequence whose first byte is `lead`
size_t utf8_len(uint8_t lead);
void utf8_append(std::string& out, uint32_t cp);
// appends `s` to `out` as valid UTF-8, each maximal ill-formed subpart replaced by one U+FFFD (Unicode's recommended
// practice, as browsers' TextDecoder and Python's errors="replace" do). Unless `final`, a sequence that is valid so far
// but cut off by the end is left out: returns how many bytes were used (the rest comes back with the next bytes)
size_t utf8_repair(std::string_view s, std::string& out, bool final = true);

}  // namespace tg::llm::unicode
