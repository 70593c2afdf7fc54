// SHA-256 (FIPS 180-4): one-shot sha256() and a streaming Sha256. Used for cache keys.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tg {

using Sha256Digest = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  void update(std::string_view s) { update(s.data(), s.size()); }
  // Pads and returns the hash; the object is then reset and can hash a new message.
  Sha256Digest digest();

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t fill_ = 0;   // bytes waiting in buf_
  uint64_t bits_ = 0; // message length so far, in bits
};

Sha256Digest sha256(std::string_view data);
std::string to_hex(const Sha256Digest& d);  // 64 lowercase hex digits

}  // namespace tg
