#include "util/sha256.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

using tg::sha256;
using tg::to_hex;

// FIPS 180-4 / NIST CSRC example vectors
TEST(Sha256, Empty) {
  EXPECT_EQ(to_hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, Abc) {
  EXPECT_EQ(to_hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, TwoBlock448Bits) {
  EXPECT_EQ(to_hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, TwoBlock896Bits) {
  EXPECT_EQ(to_hex(sha256("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu")),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256, MillionA) {
  const char* want = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
  EXPECT_EQ(to_hex(sha256(std::string(1000000, 'a'))), want);
  tg::Sha256 s;  // same message streamed in uneven pieces
  std::string chunk(997, 'a');
  size_t left = 1000000;
  for (; left >= chunk.size(); left -= chunk.size()) s.update(chunk.data(), chunk.size());
  s.update(chunk.data(), left);
  EXPECT_EQ(to_hex(s.digest()), want);
}

static std::string pattern(size_t n) {
  std::string m(n, '\0');
  for (size_t i = 0; i < n; i++) m[i] = char((i * 7 + 3) & 255);
  return m;
}

// lengths around the padding boundaries (55/56 bytes: length fits / spills into a second block)
TEST(Sha256, PaddingBoundaries) {
  std::vector<std::pair<size_t, const char*>> cases = {
      {55, "e7313d333c272e639f790978283f9eb392e843d0f29b7016828bb1daa4aac70b"},
      {56, "4324d65f3c103567f5589c710bc08f8523f929a9272e3af36fc968e52abc6c27"},
      {57, "35df609437dcfea3279283ab79fd554e2bf78f8f7ae2de532d8ee300b09e8f73"},
      {63, "81c80242132f230c3bd41b3e63bbcff16107339549214a99614ff26664625055"},
      {64, "39e3d7b6b5d075d37d053ad89b24b41bef4f3c29760c84447cab3f3be1882241"},
      {65, "aacca6ff74fdbb296d165a45cecfa04e5127bc008770fbbdd48006f2d2fae95e"},
      {119, "9ce7368e4daf32341631b492e80359dc9f594b48453cd0dd5bf0b19279cc177e"},
      {120, "7836b787757e95e58b3ca5aec90b1b004e8deba1e50e9675af9cabf1a13a04b5"},
      {127, "a8d23e75d936f303d248888d9b165ee543f4cbafcad3c9dd2a79bd84faa11d07"},
      {128, "d2742f1f4ac6bb7ca2b239ee18402ba8b3f9f8e652d2a72973c2b9ba11c08cf6"},
  };
  for (auto& [n, want] : cases) EXPECT_EQ(to_hex(sha256(pattern(n))), want) << "length " << n;
}

// every two-way split of a 3-block message gives the one-shot hash; digest() resets the state
TEST(Sha256, StreamingSplits) {
  std::string m = pattern(150);
  auto want = sha256(m);
  tg::Sha256 s;
  for (size_t cut = 0; cut <= m.size(); cut++) {
    s.update(m.data(), cut);
    s.update(m.data() + cut, m.size() - cut);
    ASSERT_EQ(s.digest(), want) << "split at " << cut;
  }
  s.update(std::string_view("abc"));
  EXPECT_EQ(to_hex(s.digest()), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(to_hex(s.digest()), to_hex(sha256("")));
}
