#include "llm/unicode.h"

#include <algorithm>

#include "tg/error.h"

namespace tg::llm::unicode {

CpClass cp_class(uint32_t cp) {
  const CpRange* end = cp_ranges + n_cp_ranges;
  const CpRange* r = std::upper_bound(cp_ranges, end, cp, [](uint32_t c, const CpRange& x) { return c < x.first; });
  return r != cp_ranges && cp <= r[-1].last ? r[-1].cls : CpClass::OTHER;
}

size_t utf8_len(uint8_t lead) { return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4; }

Decoded utf8_decode(std::string_view s, const std::string& what) {
  Decoded d;
  d.cps.reserve(s.size()), d.offsets.reserve(s.size() + 1);
  auto bad = [&](size_t at, const char* why) {
    throw Error(what + ": invalid UTF-8 at byte " + std::to_string(at) + " (" + why + ")");
  };
  for (size_t i = 0; i < s.size();) {
    uint8_t b = uint8_t(s[i]);
    size_t n = b < 0x80 ? 1 : (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0) bad(i, "not a lead byte");
    if (i + n > s.size()) bad(i, "sequence cut off by the end of the text");
    uint32_t cp = n == 1 ? b : b & (0x7F >> n);
    for (size_t k = 1; k < n; k++) {
      uint8_t c = uint8_t(s[i + k]);
      if ((c & 0xC0) != 0x80) bad(i + k, "expected a continuation byte");
      cp = cp << 6 | (c & 0x3F);
    }
    static constexpr uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[n]) bad(i, "overlong encoding");
    if (cp >= 0xD800 && cp <= 0xDFFF) bad(i, "surrogate code point");
    if (cp > 0x10FFFF) bad(i, "code point past U+10FFFF");
    d.cps.push_back(cp), d.offsets.push_back(i);
    i += n;
  }
  d.offsets.push_back(s.size());
  return d;
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) { out += char(cp); return; }
  if (cp < 0x800) { out += char(0xC0 | cp >> 6); }
  else if (cp < 0x10000) { out += char(0xE0 | cp >> 12), out += char(0x80 | (cp >> 6 & 0x3F)); }
  else { out += char(0xF0 | cp >> 18), out += char(0x80 | (cp >> 12 & 0x3F)), out += char(0x80 | (cp >> 6 & 0x3F)); }
  out += char(0x80 | (cp & 0x3F));
}

size_t utf8_repair(std::string_view s, std::string& out, bool final) {
  size_t i = 0;
  while (i < s.size()) {
    uint8_t b = uint8_t(s[i]);
    size_t n = b < 0x80 ? 1 : b >= 0xC2 && b <= 0xDF ? 2 : b >= 0xE0 && b <= 0xEF ? 3 : b >= 0xF0 && b <= 0xF4 ? 4 : 0;
    // the second byte's range excludes overlong forms, surrogates and code points past U+10FFFF
    uint8_t lo = b == 0xE0 ? 0xA0 : b == 0xF0 ? 0x90 : 0x80, hi = b == 0xED ? 0x9F : b == 0xF4 ? 0x8F : 0xBF;
    size_t k = 1;
    for (; k < n && i + k < s.size(); k++) {
      uint8_t c = uint8_t(s[i + k]);
      if (k == 1 ? c < lo || c > hi : (c & 0xC0) != 0x80) break;
    }
    if (n > 0 && k == n) out.append(s.substr(i, n)), i += n;
    else if (n > 0 && i + k == s.size() && !final) break;
    else out += "\xEF\xBF\xBD", i += std::max<size_t>(k, 1);
  }
  return i;
}

}  // namespace tg::llm::unicode
