// tinygrad's codegen/decomp/op.py (integer division/modulo, threefry2x32, MAX, shifts, NEG/SUB, comparisons, MULACC, FDIV).
#include "codegen/decomp/op.h"

#include <algorithm>

#include "uop/pattern_helpers.h"

namespace tg {

namespace {
using enum Ops;
using namespace pat;
DTypeSet uints() { return DTypeSet{dtypes::uint8, dtypes::uint16, dtypes::uint32, dtypes::uint64}; }
DTypeSet sints() { return DTypeSet{dtypes::int8, dtypes::int16, dtypes::int32, dtypes::int64}; }
int log2_exact(const ConstVal& c) {  // v where c == 2**v (v >= 1), else 0 (as tinygrad's powers_of_two.get(c, 0))
  if (!c.is_int() || c.i <= 0 || (c.i & (c.i - 1))) return 0;
  return __builtin_ctzll(uint64_t(c.i));
}
__int128 imin(DType d) { return d.min().i; }
__int128 imax(DType d) { return d == dtypes::uint64 ? __int128(UINT64_MAX) : __int128(d.max().i); }
int bit_length(__int128 v) { int n = 0; while (v > 0) v >>= 1, n++; return n; }

std::pair<__int128, int> magicgu(__int128 vmax, __int128 d) {
  __int128 nc = (vmax + 1) / d * d - 1;
  int nbits = bit_length(vmax);
  for (int s = 0; s <= 2 * nbits; s++) {
    __int128 p = __int128(1) << s;
    if (p > nc * (d - 1 - (p - 1) % d)) return {(p + d - 1 - (p - 1) % d) / d, s};
  }
  internal_error("magicgu found no magic number");
}

UOp fast_idiv(const UOp& x, int64_t d, bool dont_cast = false) {
  bool is_unsigned = !(x.vmin() < ConstVal(int64_t(0))) || uints().has(x.dtype());
  __int128 vmin = std::max<__int128>(x.vmin().i, imin(x.dtype())), vmax = std::min<__int128>(x.vmax().i, imax(x.dtype()));
  if (vmin > -d && vmax < d) return x.const_like(0);
  auto [m, s] = magicgu(std::max(vmax, vmin < 0 ? -vmin : vmin), d);
  auto build = [&](const UOp& xx) { return (xx * int64_t(m)) >> int64_t(s); };
  if (m * vmin >= imin(x.dtype()) && m * vmax <= imax(x.dtype()))
    return is_unsigned ? build(x) : build(x) + (x < 0).where(x.ufix(1), lit(0));
  if (int64_t f = d & -d; f > 1)
    if (UOp r = fast_idiv(x.alu(CDIV, {x.const_like(f)}), d / f, true)) return r;
  if (dont_cast) return UOp();
  DType next = x.dtype() == dtypes::int8 ? dtypes::int16 : x.dtype() == dtypes::int16 ? dtypes::int32 : x.dtype() == dtypes::int32 ? dtypes::int64
             : x.dtype() == dtypes::int64 ? dtypes::uint64 : x.dtype() == dtypes::uint8 ? dtypes::uint16 : x.dtype() == dtypes::uint16 ? dtypes::uint32
             : x.dtype() == dtypes::uint32 ? dtypes::uint64 : dtypes::void_;
  if (next == dtypes::void_ || !(m * vmin >= imin(next) && m * vmax <= imax(next))) return UOp();
  UOp r = build(x.cast(next)).cast(x.dtype());
  return is_unsigned ? r : r + (x < 0).where(x.ufix(1), lit(0));
}

// Threefry-2x32 with 20 rounds: the counter x and the key each carry two uint32 words packed in a uint64 (low word
// first); the result packs the two output words the same way
UOp threefry2x32(const UOp& x, const UOp& key) {
  const DType u32 = dtypes::uint32, u64 = dtypes::uint64;
  UOp k0 = key.cast(u32), k1 = (key >> 32).cast(u32);
  const UOp sched[3] = {k1, k0 ^ k1 ^ 0x1BD11BDA, k0};
  static constexpr int rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  UOp a = x.cast(u32) + sched[2], b = (x >> 32).cast(u32) + sched[0];
  for (int i = 0; i < 5; i++) {
    for (int r : rot[i % 2]) {
      UOp sum = a + b;
      b = sum ^ ((b << r) + (b >> (32 - r)));
      a = sum;
    }
    a = a + sched[i % 3];
    b = b + sched[(i + 1) % 3] + i + 1;
  }
  return (b.cast(u64) << 32) | a.cast(u64);
}

bool nonneg_div(const UOp& a, const UOp& b) {
  ConstVal z(int64_t(0));
  return (!(a.vmin() < z) && z < b.vmin()) || (!(z < a.vmax()) && b.vmax() < z);
}
}  // namespace

PatternMatcher get_simplifying_rewrite_patterns(OpSet ops) {
  std::vector<Rule> pat;
  if (ops.has(SHR)) pat.push_back((V("x", dtypes::ints()) / C("c")) >> [](M m) {
    int v = log2_exact(m["c"].val());
    return v ? m["x"] >> int64_t(v) : UOp();
  });
  pat.push_back((V("a") / V("b")) >> [](M m) {
    const UOp &a = m["a"], &b = m["b"];
    if (nonneg_div(a, b)) return a.alu(CDIV, {b});
    return a.alu(CDIV, {b}) - (a.alu(CMOD, {b}).ne(lit(0)) & (a < 0).ne(b < 0));
  });
  if (ops.has(AND)) pat.push_back((V("x", dtypes::ints()) % C("c")) >> [](M m) {
    const ConstVal& c = m["c"].val();
    return c.is_int() && c.i > 0 && !(c.i & (c.i - 1)) ? m["x"] & (c.i - 1) : UOp();
  });
  pat.push_back((V("a") % V("b")) >> [](M m) {
    const UOp &a = m["a"], &b = m["b"];
    if (nonneg_div(a, b)) return a.alu(CMOD, {b});
    UOp r = a.alu(CMOD, {b});
    return r + (r.ne(lit(0)) & (a < 0).ne(lit(0) > b)).where(b, b.const_like(0));
  });
  if (!ops.has(THREEFRY)) pat.push_back(U(THREEFRY, dtypes::uint64, {V("x"), V("key")}) >> [](M m) { return threefry2x32(m["x"], m["key"]); });
  if (!ops.has(MAX) && ops.has(CMPLT))
    pat.push_back(U(MAX, {}, {}, {}, "m") >> [](M m) { return (m["m"].src(0) < m["m"].src(1)).where(m["m"].src(1), m["m"].src(0)); });
  return PatternMatcher(pat);
}

PatternMatcher get_late_rewrite_patterns(OpSet ops, bool disable_fast_idiv) {
  std::vector<Rule> pat;
  if (ops.has(OR)) pat.push_back((V("x", dtypes::bool_).logical_not() & V("y", dtypes::bool_).logical_not()) >> [](M m) {
    return (m["x"] | m["y"]).logical_not();
  });
  if (ops.has(SHL)) pat.push_back((V("x", dtypes::ints()) * C("c")) >> [](M m) {
    int v = log2_exact(m["c"].val());
    return v ? m["x"] << int64_t(v) : UOp();
  });
  if (ops.has(SHR)) {
    pat.push_back(U(CDIV, {}, {V("x", uints()), C("c")}) >> [](M m) {
      int v = log2_exact(m["c"].val());
      return v ? m["x"] >> int64_t(v) : UOp();
    });
    pat.push_back(U(CDIV, {}, {V("x", dtypes::ints()), C("c")}) >> [](M m) {
      int v = log2_exact(m["c"].val());
      if (!v) return UOp();
      const UOp &x = m["x"], &c = m["c"];
      UOp l = x < 0;
      UOp cond = l.vmin() == l.vmax() ? l.const_like(l.vmin()) : l;
      return (x + cond.where(c - 1, lit(0))) >> int64_t(v);
    });
    if (!disable_fast_idiv) {
      pat.push_back(U(CDIV, {}, {V("x", dtypes::ints()), C("d")}) >> [](M m) {
        const UOp& x = m["x"];
        if (!(!(x.vmin() < ConstVal(int64_t(0))) || uints().has(x.dtype()))) return UOp();
        return fast_idiv(x, m["d"].val().i);
      });
      pat.push_back(U(CMOD, {}, {V("x", dtypes::ints()), V("d")}) >> [](M m) {
        const UOp &x = m["x"], &d = m["d"];
        if (!(!(x.vmin() < ConstVal(int64_t(0))) || uints().has(x.dtype()))) return UOp();
        return x - d * x.alu(CDIV, {d});
      });
    }
  }
  if (ops.has(NEG)) {
    pat.push_back((V("x") * -1) >> [](M m) { return m["x"].alu(NEG); });
    if (ops.has(SUB)) pat.push_back((V("x") + U(NEG, {}, {V("y")})) >> [](M m) { return m["x"].alu(SUB, {m["y"]}); });
  }
  if (ops.has(CMPLT)) {
    pat.push_back((V("x", sints()) < C("c")).logical_not() >> [](M m) { return m["c"] - 1 < m["x"]; });
    pat.push_back((C("c") < V("x", sints())).logical_not() >> [](M m) { return m["x"] < m["c"] + 1; });
    pat.push_back((V("x", sints()) * -1 < V("y", sints()) * C("c")) >> [](M m) { return m["y"] * (-m["c"]) < m["x"]; });
    pat.push_back((V("x", sints()) * -1 < C("c")) >> [](M m) { return -m["c"] < m["x"]; });
    pat.push_back(((C("c1") < V("x", sints())) & (V("x", sints()) < C("c2"))) >> [](M m) {
      const ConstVal &c1 = m["c1"].val(), &c2 = m["c2"].val();
      return c1.is_int() && c2.is_int() && c1.i + 1 == c2.i - 1 ? m["x"].eq(m["c1"] + 1) : UOp();
    });
  }
  if (ops.has(CMPEQ)) pat.push_back(V("x").ne(V("y")).logical_not() >> [](M m) { return m["x"].alu(CMPEQ, {m["y"]}); });
  if (ops.has(MULACC)) {
    pat.push_back((V("a") * V("b") + V("c")) >> [](M m) { return m["a"].alu(MULACC, {m["b"], m["c"]}); });
    if (ops.has(SHL)) pat.push_back((U(SHL, {}, {V("x"), C("n")}) + V("c")) >> [](M m) {
      return m["x"].alu(MULACC, {m["x"].const_like(int64_t(1) << m["n"].val().i), m["c"]});
    });
  }
  if (ops.has(FDIV)) {
    pat.push_back(V("x").reciprocal() >> [](M m) { return UOp::const_(1.0).binop(FDIV, m["x"]); });
    pat.push_back((V("a") * U(FDIV, dtypes::floats(), {UPat::cnst(ConstVal(int64_t(1))), V("b")})) >> [](M m) {
      return m["a"].alu(FDIV, {m["b"]});
    });
  }
  return PatternMatcher(pat);
}

}  // namespace tg
