#pragma once
// bytes as lowercase hex, as Python's bytes.hex() prints them (digests compared with hashlib's)
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace tg::test {
inline std::string hex(const std::vector<uint8_t>& v) {
  std::string s;
  char b[3];
  for (uint8_t x : v) snprintf(b, sizeof b, "%02x", x), s += b;
  return s;
}
}  // namespace tg::test
