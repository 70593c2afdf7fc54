#pragma once
// A restricted pickle machine: the opcodes of protocols 2 to 4 that torch.save writes, building plain values and
// recording (never running) calls of globals. An object is an index into the arena of a Pickle, so cyclic or shared
// structures cost nothing and nothing leaks. Anything else is a tg::Error naming the opcode and its byte offset.
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace tg::nn::pickle {

using Ref = uint32_t;
struct Obj {
  enum Kind : uint8_t { None, Bool, Int, BigInt, Float, Str, Bytes, Tuple, List, Dict, Global, Call, Persistent } kind = None;
  int64_t i = 0;                         // Bool, Int
  double f = 0;                          // Float
  std::string s;                         // Str, Bytes, BigInt (little-endian two's complement), Global ("module.name")
  std::vector<Ref> items;                // Tuple, List; Call: {callable, args tuple}; Persistent: {pid}
  std::vector<std::pair<Ref, Ref>> kv;   // Dict (insertion order)
  Ref state = 0;                         // Call: what BUILD set (0: none; the arena's 0 is None)
};

struct Pickle {
  std::vector<Obj> arena{Obj{}};  // [0] is None
  Ref root = 0;
  const Obj& operator[](Ref r) const { return arena[r]; }
};

// runs one pickle starting at bytes[pos]; pos is left just after its STOP. `what` prefixes every error
Pickle load(std::span<const uint8_t> bytes, uint64_t& pos, const std::string& what);

}  // namespace tg::nn::pickle
