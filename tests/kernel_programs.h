#pragma once
// Hand-linearized kernel programs, built exactly as tinygrad's renderer receives them (the same constructors as
// tests/tools/gen_cstyle_cases.py); shared by the renderer and linearizer tests.
#include <string>
#include <utility>
#include <vector>

#include "uop/uop.h"

namespace tg::testprogs {

using L = std::vector<UOp>;
inline const DType I32 = dtypes::int32;
inline UOp cc(ConstVal v, DType dt) { return UOp::make(Ops::CAST, dt, {UOp::const_(v)}, Arg(dt)); }  // a casted const
inline UOp param(int64_t slot, DType dt, int64_t n, bool vol = false) {
  ParamArg pa{slot, dt};
  pa.is_volatile = vol;
  return UOp::make(Ops::PARAM, dt, {cc(n, I32)}, Arg(pa));
}
inline UOp var(int64_t slot, const std::string& name, int64_t lo, int64_t hi) {
  ParamArg pa{slot, I32, std::pair<ConstVal, ConstVal>{lo, hi}, std::nullopt, name, AddrSpace::ALU};
  return UOp::make(Ops::PARAM, I32, {UOp::stack({})}, Arg(pa));
}
inline UOp rng(const UOp& end, int64_t axis, AxisType at = AxisType::WEAK, std::vector<UOp> extra = {}) {
  std::vector<UOp> s{end};
  s.insert(s.end(), extra.begin(), extra.end());
  return UOp::make(Ops::RANGE, end.dtype(), s, Arg(Arg::Ints{axis, int64_t(at)}));
}
inline UOp alu(Ops op, std::vector<UOp> s) {
  DType dt = (op == Ops::CMPLT || op == Ops::CMPNE || op == Ops::CMPEQ) ? dtypes::bool_ : s.back().dtype();
  return UOp::make(op, dt, s);
}
inline UOp idx(const UOp& b, const UOp& i) { return UOp::make(Ops::INDEX, b.dtype(), {b, i}); }
inline UOp load(const UOp& bidx, std::vector<UOp> rest = {}) {
  std::vector<UOp> s{bidx};
  s.insert(s.end(), rest.begin(), rest.end());
  return UOp::make(Ops::LOAD, bidx.dtype(), s);
}
inline UOp store(const UOp& bidx, const UOp& v) { return UOp::make(Ops::STORE, dtypes::void_, {bidx, v}); }
inline UOp end(const UOp& x, const UOp& r) { return UOp::make(Ops::END, dtypes::void_, {x, r}); }
inline UOp after(const UOp& b, std::vector<UOp> deps) {
  deps.insert(deps.begin(), b);
  return UOp::make(Ops::AFTER, b.dtype(), deps);
}
inline UOp cast(const UOp& x, DType dt) { return UOp::make(Ops::CAST, dt, {x}, Arg(dt)); }
inline UOp sink(const std::string& name, std::vector<UOp> s) { return UOp::make(Ops::SINK, dtypes::void_, s, Arg(name)); }

inline std::pair<std::string, L> prog_add() {
  UOp n = cc(16, I32), d0 = param(0, dtypes::float32, 16), d1 = param(1, dtypes::float32, 16), d2 = param(2, dtypes::float32, 16);
  UOp r = rng(n, 0);
  UOp i1 = idx(d1, r), l1 = load(i1), i2 = idx(d2, r), l2 = load(i2), i0 = idx(d0, r), a = alu(Ops::ADD, {l1, l2});
  UOp st = store(i0, a), e = end(st, r);
  return {"E_16", {n.src(0), n, d0, d1, d2, r, i1, l1, i2, l2, i0, a, st, e, sink("E_16", {e})}};
}

inline std::pair<std::string, L> prog_reduce() {
  UOp c4 = cc(4, I32), c16 = cc(16, I32), c1 = cc(1, I32), c0 = cc(0, I32), c2 = cc(2, I32), f0 = cc(0.0, dtypes::float32);
  UOp d0 = param(0, dtypes::float32, 4), d1 = param(1, dtypes::float32, 16);
  UOp acc = UOp::make(Ops::BUFFER, dtypes::float32, {c1}, Arg(ParamArg{0, dtypes::float32, {}, {}, {}, AddrSpace::REG}));
  UOp r1 = rng(c4, 1), a1 = after(acc, {r1}), ia = idx(a1, c0), shl = alu(Ops::SHL, {r1, c2});
  UOp st0 = store(ia, f0), r0 = rng(c4, 0, AxisType::REDUCE, {r1}), add = alu(Ops::ADD, {shl, r0});
  UOp i1 = idx(d1, add), l1 = load(i1), a2 = after(acc, {st0, r0}), ia2 = idx(a2, c0);
  UOp la = load(ia2), s = alu(Ops::ADD, {la, l1}), st1 = store(ia2, s);
  UOp e0 = end(st1, r0), a3 = after(acc, {e0}), ia3 = idx(a3, c0);
  UOp l3 = load(ia3), io = idx(d0, r1), st2 = store(io, l3), e1 = end(st2, r1);
  return {"r_4_4", {c4.src(0), c4, d0, c16.src(0), c16, d1, c1.src(0), c1, acc, c0.src(0), c0, c2.src(0), c2, f0.src(0), f0,
                    r1, a1, ia, shl, st0, r0, add, i1, l1, a2, ia2, la, s, st1, e0, a3, ia3, l3, io, st2, e1, sink("r_4_4", {e1})}};
}

inline std::pair<std::string, L> prog_idiv_half() {
  UOp c8 = cc(8, I32), c0 = cc(0, I32), c3 = cc(3, I32);
  UOp d0 = param(0, dtypes::float16, 8), d1 = param(1, I32, 8);
  UOp r = rng(c8, 0), i1 = idx(d1, r), v = load(i1), i0 = idx(d0, r);
  UOp m = alu(Ops::CMOD, {v, c3}), lt = alu(Ops::CMPLT, {v, c0}), ne = alu(Ops::CMPNE, {m, c0}), an = alu(Ops::AND, {ne, lt});
  UOp ci = cast(an, I32), dv = alu(Ops::CDIV, {v, c3}), sb = alu(Ops::SUB, {dv, ci});
  UOp ch = cast(sb, dtypes::float16), sq = alu(Ops::SQRT, {ch}), st = store(i0, sq), e = end(st, r);
  return {"E_8", {c8.src(0), c8, d0, d1, c0.src(0), c0, c3.src(0), c3, r, i1, v, i0, m, lt, ne, an, ci, dv, sb, ch, sq, st, e, sink("E_8", {e})}};
}

inline std::pair<std::string, L> prog_gated() {
  UOp c24 = cc(24, I32), c16 = cc(16, I32), cm4 = cc(-4, I32), c3 = cc(3, I32), c20 = cc(20, I32), f0 = cc(0.0, dtypes::float32);
  UOp d0 = param(0, dtypes::float32, 24), d1 = param(1, dtypes::float32, 16);
  UOp r = rng(c24, 0), ad = alu(Ops::ADD, {r, cm4}), i1 = idx(d1, ad), g1 = alu(Ops::CMPLT, {c3, r}), g2 = alu(Ops::CMPLT, {r, c20});
  UOp g = alu(Ops::AND, {g1, g2}), l = load(i1, {f0, g}), i0 = idx(d0, r), st = store(i0, l), e = end(st, r);
  return {"E_24", {c24.src(0), c24, d0, c16.src(0), c16, d1, cm4.src(0), cm4, c3.src(0), c3, c20.src(0), c20, f0.src(0), f0,
                   r, ad, i1, g1, g2, g, l, i0, st, e, sink("E_24", {e})}};
}

inline std::pair<std::string, L> prog_where_var() {
  UOp c32 = cc(32, I32), c8 = cc(8, I32), c0 = cc(0, I32), c2 = cc(2.5, dtypes::float32);
  UOp d0 = param(0, dtypes::float32, 32), d1 = param(1, dtypes::float32, 32);
  UOp n = var(2, "n", 1, 10), core = var(3, "core_id", 0, 3);
  UOp r = rng(c8, 0), m = alu(Ops::MUL, {core, c8}), ad = alu(Ops::ADD, {m, r}), i1 = idx(d1, ad), v = load(i1);
  UOp nf = cast(n, dtypes::float32), lt = alu(Ops::CMPLT, {v, nf}), mul = alu(Ops::MUL, {v, c2}), ng = alu(Ops::NEG, {v});
  UOp w = alu(Ops::WHERE, {lt, mul, ng}), i0 = idx(d0, ad), st = store(i0, w), e = end(st, r);
  return {"E_4_8", {c32.src(0), c32, d0, d1, n.src(0), n, core, c8.src(0), c8, c0.src(0), c0, c2.src(0), c2,
                    r, m, ad, i1, v, nf, lt, mul, ng, w, i0, st, e, sink("E_4_8", {e})}};
}

inline std::pair<std::string, L> prog_vec4() {
  UOp c16 = cc(16, I32), c0 = cc(0, I32), c1 = cc(1, I32), c2 = cc(2, I32), c3 = cc(3, I32), c4 = cc(4, I32);
  UOp d0 = param(0, dtypes::float32, 16), d1 = param(1, dtypes::float32, 16), d2 = param(2, dtypes::float32, 16);
  UOp r = rng(c4, 0), shl = alu(Ops::SHL, {r, c2});
  UOp s1 = UOp::make(Ops::SHRINK, dtypes::float32, {d1, shl, c4}), l1 = load(s1);
  UOp s2 = UOp::make(Ops::SHRINK, dtypes::float32, {d2, shl, c4}), l2 = load(s2);
  L g1, g2, adds;
  for (auto& c : {c0, c1, c2, c3}) g1.push_back(idx(l1, c));
  for (auto& c : {c0, c1, c2, c3}) g2.push_back(idx(l2, c));
  for (int i = 0; i < 4; i++) adds.push_back(alu(Ops::ADD, {g1[i], g2[i]}));
  UOp stk = UOp::make(Ops::STACK, dtypes::float32, adds), s0 = UOp::make(Ops::SHRINK, dtypes::float32, {d0, shl, c4});
  UOp st = store(s0, stk), grp = UOp::make(Ops::GROUP, dtypes::void_, {st, st, st, st}), e = end(grp, r);
  L lst{c16.src(0), c16, d0, d1, d2, c0.src(0), c0, c1.src(0), c1, c2.src(0), c2, c3.src(0), c3, c4.src(0), c4, r, shl, s1, l1, s2, l2};
  for (auto* v : {&g1, &g2, &adds}) lst.insert(lst.end(), v->begin(), v->end());
  lst.insert(lst.end(), {stk, s0, st, grp, e, sink("E_4_4", {e})});
  return {"E_4_4", lst};
}

inline std::pair<std::string, L> prog_consts() {
  using namespace dtypes;
  UOp c1 = cc(1, I32), c0 = cc(0, I32);
  UOp d0 = param(0, uint32, 1), d1 = param(1, int64, 1), d2 = param(2, uint64, 1), d3 = param(3, bool_, 1), d4 = param(4, int8, 1);
  UOp d5 = param(5, uint8, 1), d6 = param(6, float16, 1), d7 = param(7, float32, 1), d8 = param(8, float64, 1, true), d9 = param(9, int16, 1);
  UOp ku = cc(7, uint32), kl = cc(-5, int64), kul = cc(std::numeric_limits<int64_t>::min(), uint64), kb = cc(true, bool_);
  UOp kc = cc(-3, int8), kuc = cc(200, uint8), kh = cc(1.5, float16), kinf = cc(INFINITY, float32);
  UOp knan = cc(double(NAN), float64), kd = cc(0.25, float64), ks = cc(-7, int16), ku1 = cc(1, uint32);
  UOp iu = idx(d0, c0), lu = load(iu), xo = alu(Ops::XOR, {lu, ku}), sh = alu(Ops::SHR, {xo, ku1});
  UOp mlt = alu(Ops::CMPLT, {sh, ku}), mx = alu(Ops::WHERE, {mlt, ku, sh});
  UOp il = idx(d1, c0), ll = load(il), ml = alu(Ops::MUL, {ll, kl});
  UOp if_ = idx(d7, c0), lf = load(if_), tr = alu(Ops::TRUNC, {lf}), fd = alu(Ops::FDIV, {tr, kinf});
  UOp bc = UOp::make(Ops::BITCAST, uint32, {lf}, Arg(uint32)), eq = alu(Ops::CMPEQ, {bc, ku});
  UOp id = idx(d8, c0), ld = load(id), sq = alu(Ops::SQRT, {ld}), ad = alu(Ops::ADD, {sq, kd}), isn = alu(Ops::CMPNE, {ad, ad});
  UOp mxd = alu(Ops::WHERE, {isn, knan, ad});
  UOp s0 = store(iu, mx), s1 = store(il, ml), i2 = idx(d2, c0), s2 = store(i2, kul), i3 = idx(d3, c0), an = alu(Ops::AND, {eq, kb});
  UOp s3 = store(i3, an), i4 = idx(d4, c0), s4 = store(i4, kc), i5 = idx(d5, c0), s5 = store(i5, kuc), i6 = idx(d6, c0);
  UOp s6 = store(i6, kh), s7 = store(if_, fd), s8 = store(id, mxd), i9 = idx(d9, c0), s9 = store(i9, ks);
  L lst{c1.src(0), c1, d0, d1, d2, d3, d4, d5, d6, d7, d8, d9, c0.src(0), c0};
  for (auto& k : {ku, kl, kul, kb, kc, kuc, kh, kinf, knan, kd, ks}) lst.insert(lst.end(), {k.src(0), k});
  lst.insert(lst.end(), {ku1, iu, lu, xo, sh, mlt, mx, il, ll, ml, if_, lf, tr, fd, bc, eq, id, ld, sq, ad, isn, mxd,
                         s0, s1, i2, s2, i3, an, s3, i4, s4, i5, s5, i6, s6, s7, s8, i9, s9,
                         sink("consts", {s0, s1, s2, s3, s4, s5, s6, s7, s8, s9})});
  return {"consts", lst};
}

inline std::pair<std::string, L> prog_misc() {
  UOp c16 = cc(16, I32), c4 = cc(4, I32), c2 = cc(2, I32), c7 = cc(7, I32);
  UOp d0 = param(0, dtypes::float32, 16), d1 = param(1, dtypes::uint32, 16);
  UOp r = rng(c4, 0, AxisType::LOOP), shl = alu(Ops::SHL, {r, c2});
  UOp s1 = UOp::make(Ops::SHRINK, dtypes::uint32, {d1, shl, c4}), l1 = load(s1);
  UOp cv = cast(l1, dtypes::float32), s0 = UOp::make(Ops::SHRINK, dtypes::float32, {d0, shl, c4});
  UOp g = alu(Ops::CMPLT, {r, c2}), iff = UOp::make(Ops::IF, dtypes::void_, {g, s0}), st = store(s0, cv);
  UOp ei = UOp::make(Ops::ENDIF, dtypes::void_, {iff}), e = end(ei, r);
  UOp bc = UOp::make(Ops::BITCAST, dtypes::uint32, {d0}, Arg(dtypes::uint32)), bar = UOp::make(Ops::BARRIER, dtypes::void_, {e});
  UOp noop = UOp::make(Ops::NOOP, dtypes::void_, {});
  UOp lp = UOp::make(Ops::RANGE, dtypes::void_, {noop}, Arg(Arg::Ints{1, int64_t(AxisType::WEAK)}));
  UOp i7 = idx(bc, c7), l7 = load(i7), k1 = cc(1, dtypes::uint32), x = alu(Ops::XOR, {l7, k1});
  UOp st7 = store(i7, x), k0 = cc(0, dtypes::uint32), cnd = alu(Ops::CMPNE, {x, k0});
  UOp e2 = UOp::make(Ops::END, dtypes::void_, {st7, lp, cnd});
  return {"misc", {c16.src(0), c16, d0, d1, c4.src(0), c4, c2.src(0), c2, c7.src(0), c7, r, shl, s1, l1, cv, s0, g, iff, st, ei, e,
                   bc, bar, noop, lp, i7, l7, k1.src(0), k1, x, st7, k0.src(0), k0, cnd, e2, sink("misc", {e2, bar})}};
}

inline std::pair<std::string, L> prog_special() {
  UOp c16 = cc(16, I32), c4 = cc(4, I32), c2 = cc(2.0, dtypes::float32);
  UOp d0 = param(0, dtypes::float32, 16), d1 = param(1, dtypes::float32, 16);
  UOp g = UOp::make(Ops::SPECIAL, I32, {c4}, Arg("gidx0")), l = UOp::make(Ops::SPECIAL, I32, {c4}, Arg("lidx1"));
  UOp mu = alu(Ops::MUL, {g, c4}), a = alu(Ops::ADD, {mu, l}), i1 = idx(d1, a), v = load(i1), m = alu(Ops::MUL, {v, c2});
  UOp i0 = idx(d0, a), st = store(i0, m);
  return {"E_4_4n1", {c16.src(0), c16, d0, d1, c4.src(0), c4, c2.src(0), c2, g, l, mu, a, i1, v, m, i0, st, sink("E_4_4n1", {st})}};
}

}  // namespace tg::testprogs
