#pragma once
// The op set of the IR, in tinygrad's order (the order drives toposort tie-breaks and canonical operand order).
#include <cstdint>
#include <initializer_list>
#include <string_view>

namespace tg {

#define TG_OPS(X) \
  X(SPECIAL) X(BUFFER) \
  X(NOOP) X(REWRITE_ERROR) X(PARAM) X(FUNCTION) X(CALL) \
  X(PROGRAM) X(LINEAR) X(SOURCE) X(BINARY) \
  X(SINK) X(AFTER) X(GROUP) X(STACK) X(TUPLE) X(GETTUPLE) X(GETADDR) \
  X(INDEX) X(SHRINK) X(LOAD) X(STORE) \
  X(WMMA) \
  X(CAST) X(BITCAST) X(EXP2) X(LOG2) X(SIN) X(SQRT) X(RECIPROCAL) X(NEG) X(TRUNC) \
  X(ADD) X(MUL) X(SHL) X(SHR) X(CDIV) X(MAX) X(CMOD) X(CMPLT) X(CMPNE) X(CMPEQ) X(XOR) X(OR) X(AND) \
  X(THREEFRY) X(SUB) X(FDIV) X(POW) X(FLOORDIV) X(FLOORMOD) \
  X(WHERE) X(MULACC) \
  X(BARRIER) X(RANGE) X(IF) X(END) X(ENDIF) X(WAIT) \
  X(CONST) X(CUSTOM) X(CUSTOMI) X(INS) \
  X(CONTIGUOUS) X(CONTIGUOUS_BACKWARD) X(DETACH) \
  X(STAGE) X(COPY) X(MSELECT) X(MSTACK) X(CUSTOM_FUNCTION) \
  X(RESHAPE) X(PERMUTE) X(EXPAND) X(PAD) X(FLIP) X(UNSHARD) \
  X(REDUCE) X(ALLREDUCE) \
  X(PYLITERAL)

// values start at 1 as tinygrad's do
enum class Ops : uint8_t {
  NONE_ = 0,
#define TG_OP_ENUM(n) n,
  TG_OPS(TG_OP_ENUM)
#undef TG_OP_ENUM
  COUNT_
};
inline constexpr int NUM_OPS = int(Ops::COUNT_);

std::string_view op_name(Ops op);  // "ADD"

// a set of Ops as a 128-bit mask
struct OpSet {
  uint64_t w[2] = {0, 0};
  constexpr OpSet() = default;
  constexpr OpSet(Ops op) { add(op); }
  constexpr OpSet(std::initializer_list<Ops> ops) { for (Ops o : ops) add(o); }
  constexpr void add(Ops o) { w[unsigned(o) >> 6] |= uint64_t(1) << (unsigned(o) & 63); }
  constexpr bool has(Ops o) const { return w[unsigned(o) >> 6] >> (unsigned(o) & 63) & 1; }
  constexpr bool empty() const { return !w[0] && !w[1]; }
  constexpr bool subset_of(const OpSet& o) const { return !(w[0] & ~o.w[0]) && !(w[1] & ~o.w[1]); }
  constexpr bool intersects(const OpSet& o) const { return (w[0] & o.w[0]) || (w[1] & o.w[1]); }
  constexpr int count() const { return __builtin_popcountll(w[0]) + __builtin_popcountll(w[1]); }
  constexpr OpSet operator|(const OpSet& o) const { OpSet r; r.w[0] = w[0] | o.w[0]; r.w[1] = w[1] | o.w[1]; return r; }
  constexpr OpSet operator-(const OpSet& o) const { OpSet r; r.w[0] = w[0] & ~o.w[0]; r.w[1] = w[1] & ~o.w[1]; return r; }
  constexpr bool operator==(const OpSet& o) const { return w[0] == o.w[0] && w[1] == o.w[1]; }
  template <class F> void each(F f) const { for (int i = 1; i < NUM_OPS; i++) if (has(Ops(i))) f(Ops(i)); }
};

namespace GroupOp {
using enum Ops;
inline constexpr OpSet Unary{EXP2, LOG2, SIN, SQRT, RECIPROCAL, NEG, TRUNC};
inline constexpr OpSet Binary{ADD, MUL, CDIV, MAX, CMOD, CMPLT, CMPNE, CMPEQ, XOR, SHL, SHR, OR, AND, THREEFRY, SUB, FDIV, POW,
                              FLOORDIV, FLOORMOD};
inline constexpr OpSet Ternary{WHERE, MULACC};
inline constexpr OpSet ALU = Unary | Binary | Ternary;
inline constexpr OpSet Broadcastable = Binary | Ternary;
inline constexpr OpSet Elementwise = ALU | OpSet{CAST, BITCAST};
inline constexpr OpSet Defines{PARAM, BUFFER};
inline constexpr OpSet Irreducible{CONST, SPECIAL, RANGE, PARAM, GETADDR};
inline constexpr OpSet Movement{RESHAPE, EXPAND, PERMUTE, PAD, SHRINK, FLIP};
inline constexpr OpSet Commutative{ADD, MUL, MAX, CMPNE, CMPEQ, XOR, AND, OR};
inline constexpr OpSet Associative{ADD, MUL, AND, OR, MAX};
inline constexpr OpSet Idempotent{OR, AND, MAX};
inline constexpr OpSet Reduce{ADD, MUL, MAX};
inline constexpr OpSet Comparison{CMPLT, CMPNE, CMPEQ};
inline constexpr OpSet All = [] { OpSet s; for (int i = 1; i < NUM_OPS; i++) s.add(Ops(i)); return s; }();
}  // namespace GroupOp

// where a node's closed ranges start among its sources (tinygrad's range_start); -1: it closes none
constexpr int range_start(Ops op) {
  switch (op) {
    case Ops::STAGE: case Ops::REDUCE: case Ops::END: case Ops::CALL: case Ops::FUNCTION: return 1;
    case Ops::WMMA: return 3;
    case Ops::LINEAR: return 0;
    default: return -1;
  }
}

// axis kinds of a RANGE, in tinygrad's order
enum class AxisType : uint8_t { DEVICE = 1, GLOBAL, WARP, LOCAL, WEAK, GROUP_REDUCE, REDUCE, UPCAST, UNROLL, THREAD, PLACEHOLDER, LOOP };
std::string_view axis_type_name(AxisType t);
char axis_letter(AxisType t);

enum class AddrSpace : uint8_t { GLOBAL = 1, LOCAL, REG, ALU };

}  // namespace tg
