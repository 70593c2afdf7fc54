// The symbolic rules (tinygrad's uop/symbolic.py), in phases: 1. generic folding, 2. symbolic, 3. valid-aware sym,
// 4. tuplize order, 5. the rules of sym and symbolic_simple that only codegen runs.
#include "uop/symbolic.h"
#include "uop/movement.h"
#include "uop/nodemap.h"
#include "uop/pattern_helpers.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_set>

namespace tg {

namespace {
using namespace pat;
U K(ConstVal v, DTypeSet d = {}) { return UPat::cnst(v, d); }
constexpr DTypeSet BOOL{dtypes::bool_}, WINT{dtypes::weakint};
DTypeSet ints_w() { return dtypes::ints() | WINT; }
DTypeSet ints_bool_w() { return dtypes::ints() | BOOL | WINT; }
int64_t ival(const UOp& c) { return c.val().as_int(); }
int64_t pyfloordiv(int64_t a, int64_t b) { int64_t q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
int64_t pymod(int64_t a, int64_t b) { return a - pyfloordiv(a, b) * b; }
UOp cbool(bool b) { return UOp::const_(ConstVal(b), dtypes::bool_); }

// ***** phase 1 helpers *****

UOp simplify_pow(const UOp& x, const UOp& c) {
  double v = c.val().as_double();
  if (v < 0) return x.reciprocal().pow(UOp::const_(c.val().is_int() ? ConstVal(-c.val().i) : ConstVal(-v)));
  if (v == 0) return x.const_like(int64_t(1));
  if (double(int64_t(v - 0.5)) + 0.5 == v) return x.pow(UOp::const_(ConstVal(v - 0.5))) * x.sqrt();
  if (double(int64_t(v)) == v) {
    int64_t n = int64_t(v);
    UOp y = x.pow(UOp::const_(c.val().is_int() ? ConstVal(n / 2) : ConstVal(double(n / 2))));
    return n % 2 == 1 ? y * y * x : y * y * 1;
  }
  return {};
}

std::optional<std::vector<ConstVal>> const_args(const UOp& a) {
  std::vector<ConstVal> vals;
  for (auto& s : a.src()) {
    if (s.op() == Ops::CONST) vals.push_back(s.val());
    else if (s.op() == Ops::CAST && s.src(0).op() == Ops::CONST) vals.push_back(s.dtype().const_(s.src(0).val()));
    else return std::nullopt;
  }
  return vals;
}
UOp fold_const_alu(const UOp& a) {
  auto vals = const_args(a);
  if (!vals) return {};
  return a.const_like(exec_alu(a.op(), a.dtype(), *vals, false));
}

// the B with q == B//div and B%div == base%div, or empty
UOp quotient_base(const UOp& q0, const UOp& base, int64_t div) {
  auto [q, s] = q0.pop_const();
  auto [num, a0] = base.pop_const();
  if (q.op() != Ops::FLOORDIV || q.src(1).op() != Ops::CONST) return {};
  int64_t a = ival(UOp::const_(a0)), D;
  UOp n = num;
  if (div > 0 && n.op() == Ops::FLOORDIV && n.src(1).op() == Ops::CONST && ival(q.src(1)) == ival(n.src(1)) * div) {
    int64_t c = ival(n.src(1));
    a *= c, D = c * div, n = n.src(0);
  } else if (ival(q.src(1)) == div) D = div;
  else return {};
  auto [x, xa] = n.pop_const();
  auto [p, pa] = q.src(0).pop_const();
  int64_t t = xa.as_int() + a - pa.as_int();
  if (p != x || pymod(t, D) != 0) return {};
  int64_t k = pyfloordiv(t, D) - s.as_int();
  return k ? base - k * div : base;
}

// is some term of the sum a FLOORMOD (or a FLOORMOD times something)? most sums have none: skip them cheaply
bool has_mod_term(const UOp& x) {
  const UOp* u = &x;
  for (; u->op() == Ops::ADD; u = &u->src(0)) if (has_mod_term(u->src(1))) return true;  // sums nest to the left
  return u->op() == Ops::FLOORMOD || (u->op() == Ops::MUL && u->src(0).op() == Ops::FLOORMOD);
}

UOp fold_add_divmod_recombine(const UOp& x) {
  if (!has_mod_term(x)) return {};
  auto terms = x.split_uop(Ops::ADD);
  for (size_t i = 0; i < terms.size(); i++) {
    auto [mod, mul] = terms[i].pop_const(Ops::MUL);
    if (mod.op() != Ops::FLOORMOD || mod.src(1).op() != Ops::CONST) continue;
    UOp base = mod.src(0);
    int64_t div = ival(mod.src(1)), m = mul.as_int();
    for (size_t j = 0; j < terms.size(); j++) {
      auto [q, scale] = terms[j].pop_const(Ops::MUL);
      if (i == j || !scale.is_int() || scale.i != div * m) continue;
      std::vector<UOp> rest;
      for (size_t k = 0; k < terms.size(); k++) if (k != i && k != j) rest.push_back(terms[k]);
      if (UOp b = quotient_base(q, base, div)) return (b * m).usum(rest);
      if (q.op() == Ops::FLOORMOD && q.src(1).op() == Ops::CONST && ival(q.src(1)) > 0)
        if (UOp b = quotient_base(q.src(0), base, div)) return ((b % (div * ival(q.src(1)))) * m).usum(rest);
    }
  }
  return {};
}

UOp commit_weak(const UOp& s, DType dt) { return s.op() == Ops::CONST ? UOp::const_(s.val(), dt) : s.cast(dt); }

UOp fold_const_where(const UOp& gate, const UOp& c0, const UOp& c1, const UOp& w) {
  const UOp& ret = gate.val().truthy() ? c0 : c1;
  return ret.op() == Ops::CONST && ret.dtype().is_weak() && !w.dtype().is_weak() ? commit_weak(ret, w.dtype()) : ret;
}

// ***** phase 2 helpers *****

UOp lt_folding(const UOp& x, int64_t c) {
  std::vector<UOp> p, np;
  for (auto& u : x.split_uop(Ops::ADD)) (u.const_factor() == 1 ? p : np).push_back(u);
  if (np.empty()) return {};
  int64_t d = c;
  for (auto& u : np) d = std::gcd(d, u.const_factor());
  if (d <= 1) return {};
  int64_t lo = 0, hi = 0;
  for (auto& u : p) lo += u.vmin().as_int(), hi += u.vmax().as_int();
  if (!(0 <= lo && hi < d)) return {};
  UOp s = np[0].usum(std::span<const UOp>(np).subspan(1));
  UOp dv = s.divides(d);
  if (!dv) internal_error("lt_folding: sum does not divide by its gcd");
  return dv < pyfloordiv(c, d);
}

UOp canonicalize_simplex(const UOp& X) {
  bool changed = false;
  std::vector<UOp> ret;
  for (auto u : X.split_uop(Ops::ADD)) {
    if (u.op() == Ops::MUL && u.src(1).op() == Ops::CONST && ConstVal(0) < u.src(1).val()) {
      changed = true;
      u = u.src(0);
    }
    if (!(GroupOp::Irreducible.has(u.op()) && !(u.vmin() < ConstVal(0)))) return {};
    ret.push_back(u);
  }
  return changed ? ret[0].usum(std::span<const UOp>(ret).subspan(1)) : UOp();
}

UOp fold_where_closure(const UOp& cond, const UOp& t, const UOp& f) {
  // an INDEX at or just under a branch (a gated load) rules the fold out: seen without walking the branches
  auto indexes = [](const UOp& u) { return u.op() == Ops::INDEX || (!u.src().empty() && u.src(0).op() == Ops::INDEX); };
  if (indexes(cond) || indexes(t) || indexes(f)) return {};
  if (!t.in_backward_slice_with_self(cond) && !f.in_backward_slice_with_self(cond)) return {};
  for (auto* u : {&cond, &t, &f}) if (u->op_in_backward_slice_with_self(Ops::INDEX)) return {};
  return cond.where(t.substitute({{cond, cbool(true)}}), f.substitute({{cond, cbool(false)}}));
}

}  // namespace

// ***** 1. generic folding *****

// BITCAST of a constant folds when both dtypes have a storage format of the same size (tinygrad's fold_bitcast)
const PatternMatcher& pm_fold_bitcast() {
  static const PatternMatcher pm = PatternMatcher{
    UPat(Ops::BITCAST, {}, {UPat::cvar("c")}, {}, "root") >> [](M m) {
      UOp root = m["root"], c = m["c"];
      DType f = c.dtype(), t = root.dtype();
      if (!f.fmt() || !t.fmt() || f.itemsize() != t.itemsize()) return UOp();
      return root.const_like(bitcast_const(f.const_(c.val()), f, t));
    },
  }.pure();
  return pm;
}

const PatternMatcher& symbolic_simple() {
  static const PatternMatcher pm = [] {
    using enum Ops;
    const U &invalid_pat = pat::invalid_pat(), &invalid_gate = pat::invalid_gate();
    U cfp = UPat::ops({CONST, STACK});
    OpSet unary_cast = GroupOp::Unary | OpSet{CAST, BITCAST};
    PatternMatcher data_invalid{
      invalid_pat.broadcast() >> [](M m) { return m["i"]; },
      UPat(unary_cast, {}, {invalid_pat}) >> [](M m) { return m["i"]; },
      UPat(unary_cast, {}, {invalid_gate}, {}, "op") >> [](M m) { return m["cond"].where(m["op"].replace({.src = std::vector{m["x"]}}), m["i"]); },
      UPat(GroupOp::Binary, {}, {invalid_gate, V("y")}, {}, "alu") >> [](M m) { return m["cond"].where(m["x"].alu(m["alu"].op(), {m["y"]}), m["i"]); },
      UPat(GroupOp::Binary, {}, {V("y"), invalid_gate}, {}, "alu") >> [](M m) { return m["cond"].where(m["y"].alu(m["alu"].op(), {m["x"]}), m["i"]); },
      UPat(GroupOp::Binary - GroupOp::Comparison).src_any_order({invalid_pat, UPat()}) >> [](M m) { return m["i"]; },
      invalid_pat.where(UPat(), UPat()) >> [](M m) { return m["i"]; },
      invalid_gate.where(V("a"), V("b")) >> [](M m) { return m["cond"].where(m["x"].where(m["a"], m["b"]), m["i"]); },
      V("cond").where(invalid_pat, V("val")) >> [](M m) {
        return m["val"].is_invalid() ? m["i"] : m["cond"].logical_not().where(m["val"], m["i"]);
      },
      V("a").where(invalid_gate, V("c")) >> [](M m) {
        return m["c"].is_invalid() ? UOp() : (m["a"].logical_not() | m["cond"]).where(m["a"].where(m["x"], m["c"]), m["i"]);
      },
      V("a").where(V("b"), invalid_gate) >> [](M m) {
        return m["b"].is_invalid() ? UOp() : (m["a"] | m["cond"]).where(m["a"].where(m["b"], m["x"]), m["i"]);
      },
    };
    PatternMatcher rules{
      // ** self folding **
      UPat(OpSet{ADD, XOR, OR}).src_any_order({V("x"), K(0)}) >> [](M m) { return m["x"]; },
      UPat(OpSet{SHL, SHR}, {}, {V("x"), K(0)}) >> [](M m) { return m["x"]; },
      (V("x") * 1) >> [](M m) { return m["x"]; },
      (V("x") / V("x")) >> [](M m) { return m["x"].const_like(int64_t(1)); },
      (V("x") / 1) >> [](M m) { return m["x"]; },
      (V("x") / -1) >> [](M m) { return -m["x"]; },
      ((V("x") ^ V("y")) ^ V("y")) >> [](M m) { return m["x"]; },
      ((V() % V("y")).named("base") % V("y")) >> [](M m) { return m["base"]; },
      UPat(ADD, WINT, {}, {}, "x") >> [](M m) { return fold_add_divmod_recombine(m["x"]); },
      (V("x", BOOL) & C("c")) >> [](M m) { return m["c"].val().truthy() ? m["x"] : m["c"]; },
      (V("x", BOOL) | C("c")) >> [](M m) { return m["c"].val().truthy() ? m["c"] : m["x"]; },
      V("x", BOOL).ne(K(false, BOOL)) >> [](M m) { return m["x"]; },
      UPat(GroupOp::Idempotent, {}, {V("x"), V("x")}) >> [](M m) { return m["x"]; },
      V("x", BOOL).logical_not().logical_not() >> [](M m) { return m["x"]; },
      V("x", BOOL).where(K(true, BOOL), K(false, BOOL)) >> [](M m) { return m["x"]; },
      V("x", BOOL).where(K(false, BOOL), K(true, BOOL)) >> [](M m) { return m["x"].logical_not(); },
      V("x", BOOL).cast(ints_w()).ne(C("c")) >> [](M m) {
        const ConstVal& c = m["c"].val();
        return c == ConstVal(0) ? m["x"] : c == ConstVal(1) ? m["x"].logical_not() : cbool(true);
      },
      V("x", ints_bool_w()).trunc() >> [](M m) { return m["x"]; },
      // ** zero folding **
      (V("x") < V("x")) >> [](M) { return cbool(false); },
      (V("x") % V("x")) >> [](M m) { return m["x"].const_like(int64_t(0)); },
      (V("x") ^ V("x")) >> [](M m) { return m["x"].const_like(int64_t(0)); },
      (V("x") & 0) >> [](M m) { return m["x"].const_like(int64_t(0)); },
      ((V("x") & C("mask")) >> C("k")) >> [](M m) {
        int64_t mask = ival(m["mask"]), k = ival(m["k"]);
        return k >= 0 && k < 63 && (mask | ((int64_t(1) << k) - 1)) == -1 ? m["x"] >> k : UOp();
      },
      ((V("x") & C("mask")) / C("c")) >> [](M m) {
        int64_t mask = ival(m["mask"]), c = ival(m["c"]);
        return c > 0 && (c & (c - 1)) == 0 && (mask | (c - 1)) == -1 ? m["x"] / c : UOp();
      },
      V("x", ints_bool_w()).ne(V("x")) >> [](M) { return cbool(false); },
      // ** constant folding **
      UPat(CAST, DTypeSet{dtypes::bool_} | dtypes::ints() | dtypes::floats(), {C("c")}, {}, "root") >> [](M m) { return m["root"].const_like(m["c"].val()); },
      UPat(GroupOp::Unary, {}, {cfp}, {}, "a") >> [](M m) { return fold_const_alu(m["a"]); },
      UPat(GroupOp::Binary - OpSet{THREEFRY}, {}, {cfp, cfp}, {}, "a") >> [](M m) { return fold_const_alu(m["a"]); },
      UPat(GroupOp::Ternary, {}, {cfp, cfp, cfp}, {}, "a") >> [](M m) { return fold_const_alu(m["a"]); },
      (V("x", BOOL) * V("y", BOOL)) >> [](M m) { return m["x"] & m["y"]; },
      (V("x", BOOL) + V("y", BOOL)) >> [](M m) { return m["x"] | m["y"]; },
      V("x", BOOL).maximum(V("y", BOOL)) >> [](M m) { return m["x"] | m["y"]; },
      // ** div rules (true division is x*(1/y)) **
      UPat(MUL).src_any_order({UPat(CONST, {}, {}, Arg(ConstVal(0)), "x"), K(0).reciprocal()}) >> [](M m) { return m["x"].const_like(NAN); },
      UPat(MUL).src_any_order({V("x") * 0, K(0).reciprocal()}) >> [](M m) { return m["x"].const_like(NAN); },
      UPat(MUL).src_any_order({V("x"), V("x").reciprocal()}) >> [](M m) { return m["x"].const_like(int64_t(1)); },
      UPat(MUL).src_any_order({V("x") * V("x2"), V("x2").reciprocal()}) >> [](M m) { return m["x"]; },
      (V("x") * 0) >> [](M m) {
        const UOp& x = m["x"];
        bool special = x.op() == Ops::CONST && x.val().is_float() && (std::isnan(x.val().f) || std::isinf(x.val().f));
        return special ? x.const_like(NAN) : x.const_like(int64_t(0));
      },
      // ** cast/bitcast **
      UPat(OpSet{CAST, BITCAST}, {}, {}, {}, "root") >> [](M m) { return m["root"].dtype() == m["root"].src(0).dtype() ? m["root"].src(0) : UOp(); },
      V("x").cast({}, "a").cast({}, "b") >> [](M m) {
        return m["x"].dtype() == m["b"].dtype() && can_lossless_cast(m["b"].dtype(), m["a"].dtype()) ? m["x"] : UOp();
      },
      UPat(BITCAST, {}, {V("x").bitcast()}, {}, "b") >> [](M m) { return m["x"].bitcast(m["b"].dtype()); },
      V("x").cast(BOOL) >> [](M m) { return m["x"].ne(lit(0)); },
      // ** pow **
      V("x").alu(POW, {C("c")}) >> [](M m) { return simplify_pow(m["x"], m["c"]); },
      C("c").alu(POW, {V("x")}) >> [](M m) {
        double c = m["c"].val().as_double();
        return c == 1 ? m["c"] : c > 0 ? (m["x"] * std::log2(c)).exp2() : UOp();
      },
      // ** simple where folding **
      V().where(V("val"), V("val")) >> [](M m) { return m["val"]; },
      C("gate").where(V("c0"), V("c1")).named("w") >> [](M m) { return fold_const_where(m["gate"], m["c0"], m["c1"], m["w"]); },
      V("a").where(V("b").where(V("c"), V("d")), V("d")) >> [](M m) { return (m["a"] & m["b"]).where(m["c"], m["d"]); },
      V("a").where(V("c"), V("b").where(V("c"), V("d"))) >> [](M m) { return (m["a"] | m["b"]).where(m["c"], m["d"]); },
    };
    return (data_invalid + rules + pm_fold_bitcast() + mop_cleanup()).pure();
  }();
  return pm;
}

// ***** 2. symbolic *****

namespace {
const PatternMatcher& commutative() {
  static const PatternMatcher pm = PatternMatcher{
    UPat(GroupOp::Commutative, WINT, {}, {}, "x") >> [](M m) {
      const UOp& x = m["x"];
      return tuplize_compare(x.src(1), x.src(0)) < 0 ? x.replace({.src = std::vector{x.src(1), x.src(0)}}) : UOp();
    },
  }.pure();
  return pm;
}

bool both_const(const UOp& a, const UOp& b) { return a.op() == Ops::CONST && b.op() == Ops::CONST; }
}  // namespace

const PatternMatcher& symbolic() {
  static const PatternMatcher pm = [] {
    using enum Ops;
    std::vector<Rule> assoc;
    GroupOp::Associative.each([&](Ops op) {
      assoc.push_back(V("x").alu(op, {C("c1")}).alu(op, {C("c2")}).named("f") >> [](M m) {
        Ops o = m["f"].op();
        return m["x"].alu(o, {m["c1"].alu(o, {m["c2"]})});
      });
    });
    PatternMatcher rules{
      // ** boolean algebra **
      (V("x", BOOL) | V("x", BOOL).logical_not()) >> [](M) { return cbool(true); },
      // ** combine terms **
      (V("x") * C("c0") + V("x") * C("c1")) >> [](M m) { return m["x"] * (m["c0"] + m["c1"]); },
      ((V("y") + V("x") * C("c0")) + V("x") * C("c1")) >> [](M m) { return m["y"] + m["x"] * (m["c0"] + m["c1"]); },
      (V("x") + V("x") * C("c")) >> [](M m) { return m["x"] * (m["c"] + 1); },
      ((V("y") + V("x")) + V("x") * C("c")) >> [](M m) { return m["y"] + m["x"] * (m["c"] + 1); },
      ((V("y") + V("x") * C("c")) + V("x")) >> [](M m) { return m["y"] + m["x"] * (m["c"] + 1); },
      (V("x") + V("x")) >> [](M m) { return m["x"] * 2; },
      ((V("y") + V("x")) + V("x")) >> [](M m) { return m["y"] + m["x"] * 2; },
      UPat(MUL).src_any_order({UPat(MUL).src_any_order({V("x"), V("x2").reciprocal()}), V("x3").reciprocal()}) >> [](M m) {
        return m["x2"] == m["x3"] ? UOp() : m["x"] * (m["x2"] * m["x3"]).reciprocal();
      },
      (-1 * (V("x") + C("c"))) >> [](M m) { return (-m["x"]) + (-m["c"]); },
      (C("y") * (V("x", WINT) + C("c"))) >> [](M m) { return (m["y"] * m["x"]) + (m["y"] * m["c"]); },
      // ** where folding **
      V("cond", BOOL).logical_not().where(V("t"), V("f")) >> [](M m) { return m["f"].is_invalid() ? UOp() : m["cond"].where(m["f"], m["t"]); },
      V("cond", BOOL).where(V("t"), V("f")) >> [](M m) { return fold_where_closure(m["cond"], m["t"], m["f"]); },
      UPat(GroupOp::Binary, {}, {V("c").where(V("t"), V("f")), V("c").where(V("tt"), V("ff"))}, {}, "alu") >> [](M m) {
        if (!both_const(m["t"], m["tt"]) && !both_const(m["f"], m["ff"])) return UOp();
        Ops o = m["alu"].op();
        return m["c"].where(m["t"].alu(o, {m["tt"]}), m["f"].alu(o, {m["ff"]}));
      },
      ((V("y") + V("c").where(V("t"), V("f"))) + V("c").where(V("tt"), V("ff"))) >> [](M m) {
        if (!both_const(m["t"], m["tt"]) && !both_const(m["f"], m["ff"])) return UOp();
        return m["y"] + m["c"].where(m["t"] + m["tt"], m["f"] + m["ff"]);
      },
      (V("c").where(V("t"), UPat(ufix_pat(0))) + V("c").where(UPat(ufix_pat(0)), V("f"))) >> [](M m) { return m["c"].where(m["t"], m["f"]); },
      // ALU/variable min==max -> CONST
      UPat(OpSet{CMPLT, CMPNE, FLOORDIV, FLOORMOD, PARAM, AFTER, SPECIAL}, {}, {}, {}, "x") >> [](M m) {
        return m["x"].vmin() == m["x"].vmax() ? m["x"].const_like(m["x"].vmin()) : UOp();
      },
      UPat(RANGE, {}, {UPat(CONST)}, {}, "x") >> [](M m) { return m["x"].vmin() == m["x"].vmax() ? m["x"].const_like(m["x"].vmin()) : UOp(); },
      // max folding
      (C("a") < V("b")).where(V("b"), C("c")) >> [](M m) { return m["a"].val() == m["c"].val() ? m["a"].maximum(m["b"]) : UOp(); },
      (V("a") < C("b")).where(C("c"), V("a")) >> [](M m) { return m["b"].val() == m["c"].val() ? m["a"].maximum(m["b"]) : UOp(); },
      V("x").maximum(V("y")) >> [](M m) {
        const UOp &x = m["x"], &y = m["y"];
        return !(x.vmin() < y.vmax()) ? x : !(y.vmin() < x.vmax()) ? y : UOp();
      },
    };
    PatternMatcher rules2{
      // (x//c1)//c2 -> x//(c1*c2) for c2>0
      ((V("x") / C("c1")) / C("c2")) >> [](M m) { return ConstVal(0) < m["c2"].vmin() ? m["x"] / (m["c1"] * m["c2"]) : UOp(); },
      // ** lt **
      ((C("c0") + V("x", ints_w())) < C("c1")) >> [](M m) { return m["x"] < (m["c1"] - m["c0"]); },
      ((C("c0") * V("x", WINT)) < C("c1")) >> [](M m) {
        int64_t c0 = ival(m["c0"]), c1 = ival(m["c1"]);
        if (std::abs(c0) <= 1) return UOp();
        return (c0 > 0 ? m["x"] : -m["x"]) < -pyfloordiv(-c1, std::abs(c0));
      },
      ((V("x", WINT) / C("d")) < C("c")) >> [](M m) {
        int64_t d = ival(m["d"]), c = ival(m["c"]);
        return d > 0 ? m["x"] < c * d : d < 0 ? m["x"] > c * d : UOp();
      },
      // ** move add/mul consts to the end **
      ((V("x") + C("c1")) + V("y")) >> [](M m) { return m["y"].op() == CONST ? UOp() : (m["x"] + m["y"]) + m["c1"]; },
      ((V("x") * C("c1")) * V("y")) >> [](M m) { return m["y"].op() == CONST ? UOp() : (m["x"] * m["y"]) * m["c1"]; },
      // generic lt folding
      (V("x", WINT) < C("c")) >> [](M m) { int64_t c = ival(m["c"]); return 0 < c ? lt_folding(m["x"], c) : UOp(); },
      ((V("x", WINT) * -1) < (V("y") * -1)) >> [](M m) { return m["y"] < m["x"]; },
      (V("x", WINT) < 1).ne(K(true)) >> [](M m) {
        UOp nx = canonicalize_simplex(m["x"]);
        return nx ? (nx < 1).ne(lit(true)) : UOp();
      },
      // a range mod (or div) its own bound
      (UPat(RANGE, {}, {}, {}, "r").src_repeat(V("end")) % V("end")) >> [](M m) { return m["r"]; },
      (UPat(RANGE, {}, {}, {}, "r").src_repeat(V("end")) / V("end")) >> [](M m) { return m["r"].const_like(int64_t(0)); },
      // ** cast folding **
      V("x").cast({}, "a").cast({}, "b") >> [](M m) { return can_lossless_cast(m["x"].dtype(), m["a"].dtype()) ? m["x"].cast(m["b"].dtype()) : UOp(); },
      V("x", ints_w()).cast(ints_w(), "a").cast({}, "b") >> [](M m) {
        DType a = m["a"].dtype();
        const UOp& x = m["x"];
        return !(x.vmin() < a.min()) && !(a.max() < x.vmax()) ? x.cast(m["b"].dtype()) : UOp();
      },
      UPat(GroupOp::Binary, {}, {V("x", {dtypes::int64, dtypes::weakint}), V("y", {dtypes::int64, dtypes::weakint})}, {}, "u") >> [](M m) {
        const UOp &u = m["u"], &x = m["x"], &y = m["y"];
        if (x.dtype() != dtypes::int64 && y.dtype() != dtypes::int64) return UOp();
        for (auto* v : {&u, &x, &y}) if (v->overflows(dtypes::int32)) return UOp();
        auto narrow = [](const UOp& v) { return v.op() == Ops::CONST ? UOp::const_(v.val()) : v.cast(dtypes::int32); };
        return narrow(x).alu(u.op(), {narrow(y)}).cast(u.dtype());
      },
      (V("x", WINT) + C("c")).cast(DTypeSet{dtypes::int8, dtypes::int16, dtypes::int32, dtypes::int64}, "cast") >> [](M m) {
        return m["x"].cast(m["cast"].dtype()) + m["cast"].const_like(m["c"].val());
      },
      // only RANGE/STORE/CALL/... have side effects
      UPat(AFTER, {}, {}, {}, "x") >> [](M m) {
        const UOp& x = m["x"];
        std::vector<UOp> s{x.src(0)};
        auto add = [&](const UOp& y) { if (std::find(s.begin() + 1, s.end(), y) == s.end()) s.push_back(y); };
        for (size_t i = 1; i < x.src().size(); i++) {
          const UOp& y = x.src(i);
          if ((OpSet{RANGE, STORE, CALL, FUNCTION, BARRIER, END, LINEAR, STAGE}).has(y.op())) add(y);
          else for (auto& z : y.src()) add(z);
        }
        return x.replace({.src = s});
      },
      UPat(OpSet{AFTER, END}, {}, {V("s")}) >> [](M m) { return m["s"]; },
    };
    return (symbolic_simple() + commutative() + rules + PatternMatcher(assoc) + rules2 + div_and_mod_symbolic()).pure();
  }();
  return pm;
}

UOp UOp::simplify() const {
  if (op() == Ops::CONST) return *this;
  return graph_rewrite(*this, tg::symbolic(), RewriteOpts{.share_memo = true});
}

// ***** 3. simplification under a validity condition *****

namespace {
struct ParsedValid { UOp expr; bool is_upper; int64_t c; };
// X <= c gives (X, upper, c); X >= c gives (X, lower, c)
std::optional<ParsedValid> parse_valid(const UOp& v) {
  if (v.op() == Ops::CMPNE && v.src(1).op() == Ops::CONST && v.src(1).val() == ConstVal(1) && v.src(0).op() == Ops::CMPLT &&
      v.src(0).src(0).dtype().is_int())
    return ParsedValid{v.src(0).src(0), false, v.src(0).src(1).vmin().as_int()};
  if (v.op() == Ops::CMPLT && v.src(0).dtype().is_int()) {
    if (v.src(0).op() == Ops::CONST) return ParsedValid{v.src(1), false, v.src(0).val().as_int() + 1};
    return ParsedValid{v.src(0), true, v.src(1).vmax().as_int() - 1};
  }
  return std::nullopt;
}
}  // namespace

UOp opaque_value(const std::string& name, DType dtype, ConstVal lo, ConstVal hi) {
  ParamArg pa{-1, dtype, std::pair<ConstVal, ConstVal>{lo, hi}, 1, name, AddrSpace::ALU};
  return UOp::make(Ops::PARAM, dtype, {UOp::stack({})}, Arg(std::move(pa)));
}

UOp uop_given_valid(const UOp& valid, const UOp& uop_in, bool try_simplex) {
  UOp uop = uop_in;
  // bounds per expression, in first-seen order
  std::vector<std::pair<UOp, std::array<std::optional<int64_t>, 2>>> bounds;
  for (auto& stmt : valid.split_uop(Ops::AND)) {
    auto res = parse_valid(stmt);
    if (!res) continue;
    auto it = std::find_if(bounds.begin(), bounds.end(), [&](auto& b) { return b.first == res->expr; });
    if (it == bounds.end()) { bounds.push_back({res->expr, {}}); it = bounds.end() - 1; }
    it->second[res->is_upper ? 1 : 0] = res->c;
  }
  // simplify is pure and the same expression (often uop itself) comes back: each is simplified once per call
  std::vector<std::pair<UOp, UOp>> simplified;
  auto simplify = [&](const UOp& u) {
    auto it = std::find_if(simplified.begin(), simplified.end(), [&](auto& p) { return p.first == u; });
    return it != simplified.end() ? it->second : simplified.emplace_back(u, u.simplify()).second;
  };
  // uop with the substitution sub made, simplified, and substituted back: when the substituted form simplifies to itself,
  // substituting back gives uop again (no fake variable is in uop)
  auto given = [&](const UOp& subbed, const std::unordered_map<UOp, UOp>& back) {
    UOp r = simplify(subbed);
    bool unchanged = r == subbed && std::none_of(back.begin(), back.end(), [&](auto& kv) { return uop.in_backward_slice_with_self(kv.first); });
    return simplify(unchanged ? uop : r.substitute(back));
  };
  std::vector<std::pair<UOp, UOp>> all_candidates;
  for (size_t i = 0; i < bounds.size(); i++) {
    const UOp& expr = bounds[i].first;
    int64_t v0 = bounds[i].second[0].value_or(expr.vmin().as_int()), v1 = bounds[i].second[1].value_or(expr.vmax().as_int());
    auto fake = [&](int64_t lo, int64_t hi, DType dt) { return opaque_value("fake" + std::to_string(i), dt, lo, hi); };
    all_candidates.push_back({expr, fake(v0, v1, expr.dtype())});
    if (!try_simplex) continue;
    std::vector<std::vector<std::pair<UOp, UOp>>> candidates{{all_candidates.back()}};
    if (expr.op() == Ops::ADD && v0 == 1) {
      auto parts = expr.split_uop(Ops::ADD);
      if (std::all_of(parts.begin(), parts.end(), [](const UOp& u) { return GroupOp::Irreducible.has(u.op()); })) {
        std::vector<std::pair<UOp, UOp>> c;
        for (auto& xi : parts) c.push_back({xi, fake(1, xi.vmax().as_int(), xi.dtype())});
        candidates.push_back(std::move(c));
      }
    }
    for (auto& candidate : candidates) {
      bool all_in = std::all_of(candidate.begin(), candidate.end(), [&](auto& c) { return uop.in_backward_slice_with_self(c.first); });
      if (!all_in) continue;
      std::vector<UOp> newuops;
      for (auto& [X, newX] : candidate) newuops.push_back(given(uop.substitute({{X, newX}}), {{newX, X}}));
      bool same = std::all_of(newuops.begin(), newuops.end(), [&](const UOp& u) { return u == newuops[0]; });
      if (same) uop = newuops[0];
      else if (uop.op() == Ops::STACK && uop.src().size() == 2) {
        auto same_at = [&](size_t k) { return std::all_of(newuops.begin(), newuops.end(), [&](const UOp& u) { return u.src(k) == newuops[0].src(k); }); };
        if (same_at(0)) uop = uop.replace({.src = std::vector{newuops[0].src(0), uop.src(1)}});
        if (same_at(1)) uop = uop.replace({.src = std::vector{uop.src(0), newuops[0].src(1)}});
      }
    }
  }
  std::unordered_map<UOp, UOp> sub, back;
  for (auto& [X, newX] : all_candidates) sub[X] = newX, back[newX] = X;
  if (UOp s = uop.substitute(sub); s != uop) uop = given(s, back);
  return uop;
}

UOp simplify_valid(const UOp& valid) {
  if (valid.op_in_backward_slice_with_self(Ops::INDEX)) return {};
  auto valids = valid.split_uop(Ops::AND);
  auto priority = [&](const UOp& v) {
    auto res = parse_valid(v);
    if (!res) return 0;
    int p = 0;
    for (auto& other : valids) if (other.in_backward_slice_with_self(res->expr)) p--;
    return p;
  };
  std::vector<UOp> sorted = valids;
  std::stable_sort(sorted.begin(), sorted.end(), [&](const UOp& a, const UOp& b) { return priority(a) < priority(b); });
  std::vector<UOp> ret, seen;
  for (auto& s : sorted) {
    if (std::find(seen.begin(), seen.end(), s) != seen.end()) continue;
    seen.push_back(s);
    UOp stmt = s;
    if (!ret.empty()) stmt = uop_given_valid(ret[0].uprod(std::span<const UOp>(ret).subspan(1)), stmt);
    ret.push_back(stmt);
  }
  if (ret == sorted) return {};  // tinygrad compares with the sorted list: a reorder alone is no change
  return ret[0].uprod(std::span<const UOp>(ret).subspan(1));
}

const PatternMatcher& pm_simplify_valid() {
  static const PatternMatcher pm{
      UPat(Ops::AND, {}, {}, {}, "valid") >> [](M m) { return simplify_valid(m["valid"]); },
      invalid_gate() >> [](M m) {
        const UOp& x = m["x"];
        if (x.dtype() != dtypes::weakint || x.op_in_backward_slice_with_self(Ops::INDEX)) return UOp();
        return m["cond"].where(uop_given_valid(m["cond"], x, false), m["i"]);
      },
  };
  return pm;
}

const PatternMatcher& pm_drop_and_clauses() {
  static const PatternMatcher pm{
      invalid_gate() >> [](M m) {
        std::vector<UOp> xr = m["x"].ranges(), keep;
        bool drop = false;
        for (auto& c : m["cond"].split_uop(Ops::AND)) {
          bool k = false;
          for (auto& r : c.ranges()) k |= has(xr, r);
          if (k) keep.push_back(c); else drop = true;
        }
        if (!drop) return UOp();
        return UOp::const_(true).uprod(keep).where(m["x"], m["i"]);
      },
  };
  return pm;
}

const PatternMatcher& pm_clean_up_group_sink() {
  static const PatternMatcher pm{
      UPat(Ops::GROUP, {}, {V("x")}) >> [](M m) { return m["x"]; },
      UPat(OpSet{Ops::SINK, Ops::GROUP}, {}, {}, {}, "root") >> [](M m) {
        const UOp& r = m["root"];
        OpSet flat{Ops::NOOP, Ops::STACK, Ops::SINK, Ops::GROUP};
        bool any = false;
        for (auto& x : r.src()) any |= flat.has(x.op());
        if (!any) return UOp();
        std::vector<UOp> s;
        for (auto& x : r.src()) if (flat.has(x.op())) s.insert(s.end(), x.src().begin(), x.src().end()); else s.push_back(x);
        return UOp::make(r.op(), dtypes::void_, s, r.arg());
      },
  };
  return pm;
}

const PatternMatcher& sym() {
  static const PatternMatcher pm = [] {
    using enum Ops;
    PatternMatcher rules{
      // push a cast into the branches of a where
      V("s").where(V("a"), V("b")).cast({}, "cast") >> [](M m) {
        DType dt = m["cast"].dtype();
        return m["s"].where(commit_weak(m["a"], dt), commit_weak(m["b"], dt));
      },
      (V("x") * V("x")).reciprocal() >> [](M m) { return m["x"].reciprocal() * m["x"].reciprocal(); },
      (V("x") * C("c")).reciprocal() >> [](M m) { return m["x"].reciprocal() * m["c"].reciprocal(); },
      (-1 * (V("x") + V("y"))) >> [](M m) { return (-m["x"]) + (-m["y"]); },
      ((V("x", WINT) + V("y")) * C("c")) >> [](M m) { return m["x"] * m["c"] + m["y"] * m["c"]; },
    };
    return (symbolic() + pm_simplify_valid() + rules + pm_clean_up_group_sink()).pure();
  }();
  return pm;
}

// ***** 4. tuplize order *****

namespace {
// memo is used below the top: a pair of sources is what sorting meets again
int tuplize_cmp(const UOp& a, const UOp& b, TuplizeMemo* top, TuplizeMemo* memo) {
  if (a == b) return 0;
  if (a.op() != b.op()) return a.op() < b.op() ? -1 : 1;
  if (!(a.arg().none() && b.arg().none()) && !(a.arg() == b.arg())) if (int c = arg_compare(a.arg(), b.arg())) return c;
  if (a.dtype() != b.dtype()) return a.dtype() < b.dtype() ? -1 : 1;
  size_t n = std::min(a.src().size(), b.src().size());
  if (memo && n) if (const int8_t* c = memo->find(a.get(), b.get())) return *c;
  int c = 0;
  for (size_t i = 0; i < n && !c; i++) c = tuplize_cmp(a.src(i), b.src(i), top, top);
  if (!c) c = a.src().size() < b.src().size() ? -1 : a.src().size() > b.src().size() ? 1 : 0;
  if (memo && n) memo->set(a.get(), b.get(), int8_t(c));
  return c;
}
}  // namespace

int tuplize_compare(const UOp& a, const UOp& b, TuplizeMemo* memo) { return tuplize_cmp(a, b, memo, nullptr); }

// ***** 5. rules only codegen runs (tinygrad's sym has them, but for pow -> xpow: codegen/decomp/transcendental) *****

namespace {
using enum Ops;

UOp reduce_mul_chain(const UOp& r) {
  Ops rop = reduce_op(r);
  if ((rop != ADD && rop != MAX) || r.dtype() != r.src(0).dtype()) return UOp();
  std::vector<UOp> inside, outside, rngs = tail(r.src(), 1);
  for (auto& m : r.src(0).split_uop(MUL)) {
    bool indep = !has(rngs, m);
    for (auto& rr : rngs) indep &= !(m != rr && m.in_backward_slice_with_self(rr));
    if (indep && (rop != MAX || !(m.vmin() < ConstVal(int64_t(0))))) outside.push_back(m);
    else inside.push_back(m);
  }
  if (outside.empty()) return UOp();
  UOp in = inside.empty() ? r.src(0).const_like(1) : inside[0].uprod(std::span<const UOp>(inside).subspan(1));
  return r.replace({.src = cat({in}, rngs)}) * outside[0].uprod(std::span<const UOp>(outside).subspan(1));
}
}  // namespace

const PatternMatcher& sym_extra() {
  static const PatternMatcher pm = PatternMatcher{
      U(GroupOp::ALU, {}, {U(STACK).src_repeat(V("x")), U(STACK).src_repeat(V("y"))}, {}, "alu") >> [](M m) {
        return UOp::stack({UOp::make(m["alu"].op(), {m["x"], m["y"]})});
      },
      U(INDEX, {}, {}, {}, "index").store(U(INDEX, {}, {}, {}, "index").load()) >> [](M) { return UOp::make(NOOP, dtypes::void_, {}); },
      U(INDEX, {}, {}, {}, "index").store(V("gate").where(V("alt"), U(INDEX, {}, {}, {}, "index").load())) >> [](M m) {
        const UOp& index = m["index"];
        return index.src(0).index({index.src(1).valid(m["gate"])}).store(m["alt"]);
      },
      U(STORE, {}, {U(), invalid_pat()}) >> [](M) { return UOp::make(NOOP, dtypes::void_, {}); },
      U(STORE, {}, {U(INDEX, {}, {}, {}, "index"), V("cond").where(V("val"), invalid_pat())}) >> [](M m) {
        const UOp& index = m["index"];
        return index.src(0).index({index.src(1).valid(m["cond"])}).store(m["val"]);
      },
      (V("x") * V("x") * V("x")).reciprocal() >> [](M m) { UOp r = m["x"].reciprocal(); return r * r * r; },
      (V("x") * (1 + V("x")).reciprocal().named("d")) >> [](M m) { return 1 - m["d"]; },
      (V("x") * ((1 + V("x")).reciprocal().named("d") * V("y"))) >> [](M m) { return m["y"] * (1 - m["d"]); },
      (V("x") * ((1 + V("x")).reciprocal().named("d") + V("y"))) >> [](M m) { return (1 - m["d"]) + m["x"] * m["y"]; },
      (V("x") * C("c")).reduce(ADD, "r", true) >> [](M m) {
        const UOp& r = m["r"];
        return r.replace({.src = cat({m["x"]}, tail(r.src(), 1))}) * UOp::const_(m["c"].val());
      },
      U(MUL).reduce({}, "r", true) >> [](M m) { return reduce_mul_chain(m["r"]); },
  }.pure();
  return pm;
}

namespace {
UOp where_on_load(const UOp& cond, const UOp& buf, const UOp& idx, const UOp& or_cast) {
  std::vector<UOp> where_clauses = cond.split_uop(AND), in_load = idx.get_valid().split_uop(AND), moved, keep;
  std::vector<UOp> idx_index, idx_ranges = idx.ranges();
  for (auto& u : idx.toposort()) if (u.op() == INDEX) idx_index.push_back(u);
  auto can_move = [&](const UOp& c) {
    for (auto& r : c.ranges()) if (!has(idx_ranges, r)) return false;
    for (auto& u : c.toposort()) if (u.op() == INDEX && !has(idx_index, u)) return false;
    return true;
  };
  size_t n_in_load = 0;
  for (auto& c : where_clauses) {
    if (has(in_load, c)) { n_in_load++; continue; }
    (can_move(c) ? moved : keep).push_back(c);
  }
  if (keep.size() == where_clauses.size()) return UOp();
  UOp lv = idx.get_valid();
  UOp nidx = buf.index({idx.get_idx().valid(lv.uprod(moved))});
  UOp ret_idx = or_cast.op() == CAST ? nidx.cast(or_cast.dtype()) : nidx;
  return UOp::const_(true).uprod(keep).where(ret_idx, ret_idx.const_like(0));
}
}  // namespace

const PatternMatcher& pm_fold_invalid_access() {
  static const PatternMatcher pm = PatternMatcher{
      U(STORE, {}, {U(INDEX, {}, {U(), invalid_pat()}, {}, {}, true).or_casted(), U()}) >> [](M) { return UOp::make(NOOP, dtypes::void_, {}); },
      U(LOAD, {}, {U(INDEX, {}, {U(), invalid_pat()}, {}, {}, true).or_casted()}, {}, "x", true) >> [](M m) {
        const UOp& x = m["x"];
        return x.src().size() > 1 ? x.src(1) : x.const_like(0);
      },
  }.pure();
  return pm;
}

const PatternMatcher& pm_move_where_on_load() {
  static const PatternMatcher pm = PatternMatcher{
      V("cond").where(V("buf").index({V("idx")}).or_casted("or_cast"), ufix_pat(0)) >> [](M m) {
        return where_on_load(m["cond"], m["buf"], m["idx"], m["or_cast"]);
      },
      V("cond").where(ufix_pat(0), V("buf").index({V("idx")}).or_casted("or_cast")) >> [](M m) {
        return where_on_load(m["cond"].logical_not(), m["buf"], m["idx"], m["or_cast"]);
      },
  }.pure();
  return pm;
}

const PatternMatcher& pm_remove_invalid() {
  static const PatternMatcher pm = PatternMatcher{
      invalid_gate().named("w") >> [](M m) {
        const UOp& w = m["w"];
        return w.replace({.src = std::vector{m["cond"], m["x"], w.const_like(0)}});
      },
      U(STACK, {}, {}, {}, "s") >> [](M m) {
        const UOp& s = m["s"];
        bool any = false;
        std::vector<UOp> src;
        for (auto& x : s.src()) { any |= x.is_invalid(); src.push_back(x.is_invalid() ? UOp::const_(0, s.dtype()) : x); }
        return any ? s.replace({.src = src}) : UOp();
      },
  }.pure();
  return pm;
}

}  // namespace tg
