// tinygrad's codegen/simplify.py, in its order: 1. range flattening, merging and splitting, 2. reduce ranges clipped to
// their gates (ours), 3. reduce simplification.
#include "codegen/simplify.h"

#include <functional>
#include <unordered_set>

#include "uop/args.h"
#include "uop/pattern_helpers.h"
#include "uop/symbolic.h"

namespace tg {

namespace {
using enum Ops;
using namespace pat;
}  // namespace

// ***** 1. ranges *****

namespace {
// distinct RANGEs with constant ends: their ranges are themselves, in order, so flattening would give them back
bool already_flat(const std::vector<UOp>& rngs) {
  for (size_t i = 0; i < rngs.size(); i++) {
    const UOp& x = rngs[i];
    if (x.op() != RANGE || x.src().size() != 1 || x.src(0).op() != CONST || x.dtype() == dtypes::void_ || x.dtype() == dtypes::bool_)
      return false;
    for (size_t j = 0; j < i; j++) if (rngs[j] == x) return false;
  }
  return true;
}
}  // namespace

std::vector<UOp> closed_ranges(const std::vector<UOp>& srcs) {
  std::vector<UOp> rs = UOp::sink(srcs).ranges(), keep;
  for (auto& x : srcs) for (auto& r : x.op() == RANGE ? std::vector{x} : x.ranges()) keep.push_back(r);
  std::erase_if(rs, [&](const UOp& r) { return !has(keep, r); });
  return rs;
}

const PatternMatcher& pm_flatten_range() {
  static const PatternMatcher pm = PatternMatcher{
      U(OpSet{REDUCE, END}, {}, {}, {}, "r") >> [](M m) {
        const UOp& r = m["r"];
        std::vector<UOp> rngs = tail(r.src(), 1), backedge, real;
        if (rngs.empty() || already_flat(rngs)) return UOp();
        for (auto& x : rngs) (x.dtype() == dtypes::void_ || x.dtype() == dtypes::bool_ ? backedge : real).push_back(x);
        std::vector<UOp> src{r.src(0)};
        for (auto& x : closed_ranges(real)) src.push_back(x);
        src.insert(src.end(), backedge.begin(), backedge.end());
        return r.replace({.src = src});
      },
  }.pure();
  return pm;
}

namespace {
Arg::Ints with_type(const UOp& r, std::initializer_list<int64_t> extra, AxisType t) {
  Arg::Ints a(r.arg().ints().begin(), r.arg().ints().end() - 1);
  a.insert(a.end(), extra);
  a.push_back(int64_t(t));
  return a;
}
using RangeMap = std::unordered_map<UOp, UOp>;
UOp do_substitute(RangeMap& ctx, const UOp& x, const std::function<UOp(const UOp&, const UOp&)>& fn) {
  std::unordered_map<UOp, UOp> sub;
  for (auto& [k, v] : ctx) if (v) sub[k] = fn(k, v);
  ctx.clear();
  UOp ret = x.substitute(sub);
  return ret == x ? UOp() : ret.simplify();
}
size_t count_divmod(const UOp& x) {
  size_t n = 0;
  for (auto* u : x.topo_nodes()) n += (u->op == FLOORDIV || u->op == FLOORMOD) && u != x.get();
  return n;
}
UOp simplify_merge_adjacent(UOp u) {
  std::vector<UOp> er = u.ended_ranges();
  for (auto& r : er) if (r.op() != RANGE) return UOp();
  std::vector<std::vector<UOp>> reduce_ranges;
  for (auto& x : u.toposort()) if (x.op() == REDUCE) reduce_ranges.push_back(x.ranges());
  std::vector<std::pair<UOp, UOp>> pairs;
  if (u.op() == END) for (size_t i = 0; i + 1 < er.size(); i++) pairs.emplace_back(er[i], er[i + 1]);
  else for (auto& a : er) for (auto& b : er) if (a != b) pairs.emplace_back(a, b);
  for (auto& [r0, r1] : pairs) {
    if (axis_type(r0) != axis_type(r1)) continue;
    bool same = true;
    for (auto& rngs : reduce_ranges) same &= has(rngs, r0) == has(rngs, r1);
    if (!same) continue;
    UOp s0 = r0.src(0), s1 = r1.src(0), new_range = r0.replace({.src = std::vector{s0 * s1}});
    static const PatternMatcher pm = symbolic() + pm_flatten_range();
    UOp nidx = graph_rewrite(u.substitute({{r0, new_range / s1}, {r1, new_range % s1}}), pm);
    if (count_divmod(nidx) <= count_divmod(u)) u = nidx;
  }
  return u;
}
void mark_gated(RangeMap& ctx, const UOp& idx) {
  UOp x = idx;
  RangeMap guards;
  if (idx.src().size() > 1 && idx.src(1).op() == WHERE) {
    x = idx.src(1).get_idx();
    for (auto& v : idx.src(1).get_valid().split_uop(AND))
      if (v.op() == CMPLT && v.src(0).op() == RANGE && v.src(1).op() == CONST) guards[v.src(0)] = v.src(1);
  }
  for (auto& [r, c] : guards) if (!ctx.count(r) || (ctx[r] && ctx[r].op() == CONST && ctx[r].val() < c.val())) ctx[r] = c;
  for (auto& r : x.ranges()) if (!guards.count(r)) ctx[r] = r.src(0);
}
}  // namespace

const PatternMatcher& pm_simplify_ranges() {
  static const PatternMatcher pm{
      U(OpSet{END, REDUCE}, {}, {}, {}, "u") >> [](M m) { return simplify_merge_adjacent(m["u"]); },
      U(INDEX, {}, {}, {}, "idx") >> [](M m) { mark_gated(m.ctx<RangeMap>(), m["idx"]); return UOp(); },
      U(REDUCE, {}, {}, {}, "red") >> [](M m) {
        for (auto& r : tail(m["red"].src(), 1)) m.ctx<RangeMap>()[r] = r.src(0);
        return UOp();
      },
      U(SINK, {}, {}, {}, "x") >> [](M m) {
        return do_substitute(m.ctx<RangeMap>(), m["x"], [](const UOp& r, const UOp& c) { return r.replace({.src = std::vector{c}}); });
      },
  };
  return pm;
}

const PatternMatcher& pm_split_ranges() {
  static const PatternMatcher pm{
      (U(RANGE, {}, {}, {}, "r") % C("c")) >> [](M m) {
        auto& ctx = m.ctx<RangeMap>();
        const UOp &r = m["r"], &c = m["c"];
        AxisType t = axis_type(r);
        if (!ctx.count(r) && t != AxisType::WARP && t != AxisType::DEVICE && r.src(0).op() == CONST && c.val().is_int() &&
            r.src(0).divides(c.val().i))
          ctx[r] = c;
        return UOp();
      },
      U(SINK, {}, {}, {}, "x") >> [](M m) {
        return do_substitute(m.ctx<RangeMap>(), m["x"], [](const UOp& k, const UOp& v) {
          return k.replace({.src = std::vector{k.src(0) / v}, .arg = Arg(with_type(k, {0}, axis_type(k)))}) * v +
                 k.replace({.src = std::vector{v}, .arg = Arg(with_type(k, {1}, axis_type(k)))});
        });
      },
  };
  return pm;
}

// ***** 2. reduce ranges clipped to their gates *****

namespace {
// e as r + rest, rest free of r: rest (0 when e is r), else a null UOp
UOp without_range(const UOp& e, const UOp& r) {
  std::vector<UOp> rest;
  int n = 0;
  for (auto& t : e.split_uop(ADD)) {
    if (t == r) n++;
    else if (t.in_backward_slice_with_self(r)) return UOp();
    else rest.push_back(t);
  }
  return n != 1 ? UOp() : rest.empty() ? r.const_like(0) : rest[0].usum(tail(rest, 1));
}
// the clauses that a product needs to be nonzero: the gates of its factors (a gated INDEX loads 0, WHERE(c, x, 0))
void zero_gates(const UOp& x, std::vector<UOp>& out) {
  for (UOp f : x.split_uop(MUL)) {
    while (f.op() == CAST) f = f.src(0);
    if (f.op() == INDEX && f.src().size() > 1 && f.src(1).op() == WHERE && f.src(1).src(2).is_invalid()) {
      for (auto& c : f.src(1).src(0).split_uop(AND)) out.push_back(c);
    } else if (f.op() == WHERE && f.src(2).op() == CONST && !f.src(2).val().truthy()) {
      for (auto& c : f.src(0).split_uop(AND)) out.push_back(c);
      zero_gates(f.src(1), out);
    }
  }
}
// REDUCE(ADD) over r of a product that is 0 where a clause `r + e < b` or `r + e >= b` (either side) is false: r runs
// over [max(0, lower bounds), min(end, upper bounds)) instead, and those clauses go (true there). A transposed or
// padded convolution's window over the borders: the multiply-adds with the padding's zeros are not done.
UOp clip_reduce(const UOp& red, const std::vector<UOp>& shared) {
  if (reduce_op(red) != ADD) return UOp();
  std::vector<UOp> clauses, rngs = tail(red.src(), 1), new_rngs;
  zero_gates(red.src(0), clauses);
  std::unordered_map<UOp, UOp> sub;
  auto bound_ok = [&](const UOp& b) {  // computable outside this reduce's loops, the same in every lane
    for (auto& x : b.toposort())
      if (x.op() == INDEX || (x.op() == RANGE && (has(rngs, x) || axis_type(x) == AxisType::UPCAST || axis_type(x) == AxisType::UNROLL))) return false;
    return true;
  };
  for (auto& r : rngs) {
    if (r.op() != RANGE || r.src(0).op() != CONST || axis_type(r) != AxisType::REDUCE || has(shared, r)) { new_rngs.push_back(r); continue; }
    std::vector<UOp> lo, hi;
    auto add = [](std::vector<UOp>& v, const UOp& b) { if (!has(v, b)) v.push_back(b); };
    for (auto& c : clauses) {
      bool neg = c.op() == CMPNE && c.src(1).op() == CONST && c.src(1).val().truthy() && c.src(0).op() == CMPLT;
      const UOp& lt = neg ? c.src(0) : c;
      if (lt.op() != CMPLT || !lt.src(0).dtype().is_int()) continue;
      UOp b, ea = without_range(lt.src(0), r), eb = ea ? UOp() : without_range(lt.src(1), r);
      // r + ea < B: r < B - ea;  A < r + eb: r >= A - eb + 1;  negated: r >= B - ea, r < A - eb + 1
      if (ea && bound_ok(b = (lt.src(1) - ea).simplify())) add(neg ? lo : hi, b);
      else if (eb && bound_ok(b = (lt.src(0) - eb + 1).simplify())) add(neg ? hi : lo, b);
      else continue;
      sub[c] = UOp::const_(true);
    }
    if (lo.empty() && hi.empty()) { new_rngs.push_back(r); continue; }
    UOp l = r.const_like(0), h = r.src(0);
    for (auto& b : lo) l = l.maximum(b);
    for (auto& b : hi) h = h.minimum(b);
    UOp nr = r.replace({.src = std::vector{(h - l).maximum(r.const_like(0)).simplify()}});
    sub[r] = nr + l.simplify(), new_rngs.push_back(nr);
  }
  if (sub.empty()) return UOp();
  return red.replace({.src = cat({red.src(0).substitute(sub)}, new_rngs)});
}
}  // namespace

const PatternMatcher& pm_clip_reduce_gates() {
  static const PatternMatcher pm{
      U(SINK, {}, {}, {}, "x") >> [](M m) {
        // a range that two reduces share keeps its end (one RANGE node per axis)
        std::vector<UOp> reds, seen, shared;
        for (auto& u : m["x"].toposort()) if (u.op() == REDUCE) reds.push_back(u);
        for (auto& u : reds) for (auto& r : tail(u.src(), 1)) (has(seen, r) ? shared : seen).push_back(r);
        std::unordered_map<UOp, UOp> sub;
        for (auto& u : reds) if (UOp n = clip_reduce(u, shared)) sub[u] = n;
        return sub.empty() ? UOp() : m["x"].substitute(sub);
      },
  };
  return pm;
}

// ***** 3. reduce simplification *****

namespace {
bool no_range(const UOp& u) { return !u.op_in_backward_slice_with_self(RANGE); }
bool no_load(const UOp& u) { return !u.op_in_backward_slice_with_self(INDEX); }
}  // namespace

const PatternMatcher& pm_reduce_unparented() {
  static const PatternMatcher pm = PatternMatcher{
      U(REDUCE, {}, {}, {}, "red") >> [](M m) {
        const UOp& red = m["red"];
        Ops rop = reduce_op(red);
        if (rop != ADD && rop != MAX && rop != MUL) return UOp();
        std::vector<UOp> inr = red.src(0).ranges(), par, unpar;
        for (auto& r : tail(red.src(), 1)) (has(inr, r) ? par : unpar).push_back(r);
        if (unpar.empty()) return UOp();
        UOp ret = !par.empty() || red.dtype() != red.src(0).dtype() ? red.replace({.src = cat({red.src(0)}, par)}) : red.src(0);
        for (auto& r : unpar) {
          if (rop == ADD) ret = ret * r.src(0);
          if (rop == MUL) ret = ret.pow(r.src(0));
        }
        return ret;
      },
  }.pure();
  return pm;
}

const PatternMatcher& pm_reduce_collapse() {
  static const PatternMatcher pm = (pm_reduce_unparented() + PatternMatcher{
      // lift x+y out of a reduce on lt
      ((V("x") + V("y")).or_casted() < V("c")) >> [](M m) {
        return no_range(m["y"]) && no_range(m["c"]) ? m["x"] < (m["c"] - m["y"]) : UOp();
      },
      // lift x*y out of a reduce
      ((V("x") * V("y")) < V("c")) >> [](M m) {
        const UOp &x = m["x"], &y = m["y"], &c = m["c"];
        if (!no_range(y) || !no_range(c) || !y.dtype().is_int() || !(ConstVal(int64_t(0)) < y.vmin())) return UOp();
        return x < ((c + y - 1) / y);
      },
      // sum over r in [0,N) of [lower<=r<upper]*val -> clamp(min(upper,N) - max(lower,0), 0, N) * val
      U(REDUCE, {}, {U::any({(U(RANGE, {}, {}, {}, "r") < V("upper")).where(V("val"), ufix_pat(0)),
                             (U(RANGE, {}, {}, {}, "r") < V("lower")).where(ufix_pat(0), V("val")),
                             ((V("r") < V("lower")).logical_not() & (U(RANGE, {}, {}, {}, "r") < V("upper"))).where(V("val"), ufix_pat(0))}),
                      V("r")}, Arg{int64_t(ADD), 0}) >> [](M m) {
        UOp r = m["r"], val = m["val"], lower = m.get("lower"), upper = m.get("upper");
        if (!no_range(val)) return UOp();
        UOp hi = upper ? upper.minimum(r.src(0)) : r.src(0);
        UOp lo = lower ? lower.maximum(cint(0)) : r.const_like(0);
        return (hi - lo).maximum(cint(0)).minimum(r.src(0)) * val;
      },
      U(REDUCE, {}, {invalid_gate()}, Arg{int64_t(ADD), 0}, "r", true) >> [](M m) {
        if (!no_range(m["cond"])) return UOp();
        return m["cond"].where(m["x"].reduce(tail(m["r"].src(), 1), ADD), m["i"]);
      },
      U(REDUCE, {}, {V("x") + V("y")}, Arg{int64_t(ADD), 0}, "r", true) >> [](M m) {
        auto rs = tail(m["r"].src(), 1);
        return m["x"].reduce(rs, ADD) + m["y"].reduce(rs, ADD);
      },
      // AND on WHERE
      U(REDUCE, {}, {(U(PARAM, {}, {}, {}, "x") & V("y")).where(V("c"), ufix_pat(0))}, Arg{int64_t(ADD), 0}, "r", true) >> [](M m) {
        return m["y"].where(m["c"], cint(0)).reduce(tail(m["r"].src(), 1), ADD) * m["x"];
      },
      // MUL by a casted bool
      (V("x") * V("gate", dtypes::bool_).cast()) >> [](M m) { return m["gate"].where(m["x"], cint(0)); },
  } + symbolic()).pure();
  return pm;
}

namespace {
const PatternMatcher& pm_reduce_load_collapse() {
  static const PatternMatcher pm = pm_reduce_collapse() + PatternMatcher{
      // lift x+y out of a reduce on ne
      ((V("x") + V("y")).or_casted().ne(V("c"))) >> [](M m) {
        return no_range(m["y"]) && no_range(m["c"]) ? m["x"].ne(m["c"].cast(m["y"].dtype()) - m["y"]) : UOp();
      },
      // a reduce over a gated load substitutes the range and goes away
      U(REDUCE, {}, {V("idx").ne(U(RANGE, {}, {}, {}, "r").or_casted()).where(ufix_pat(0), V("expr")), V("r")}, Arg{int64_t(ADD), 0}) >> [](M m) {
        const UOp &r = m["r"], ic = m["idx"].cast(r.dtype());
        UOp v = (ic >= 0) & (ic < r.src(0));
        return v.where(m["expr"].substitute({{r, ic.valid(v)}}), lit(0));
      },
  };
  return pm;
}
}  // namespace

UOp reduce_collapse(const UOp& red, UOp u, const PatternMatcher& pm) {
  for (auto& r : tail(red.src(), 1)) {
    std::vector<UOp> included = u.toposort([&](const UOp& x) { return has(x.ranges(), r); });
    std::unordered_set<UOp> inc(included.begin(), included.end());
    for (auto& x : included) if (x.op() == STORE || x.op() == REDUCE) return UOp();
    std::unordered_map<UOp, UOp> replaces;
    for (auto& x : included)
      for (auto& s : x.src()) {
        if (inc.contains(s) || replaces.contains(s) || OpSet{CONST, PARAM, BUFFER}.has(s.op())) continue;
        ParamArg pa{-1, s.dtype(), std::pair<ConstVal, ConstVal>{s.vmin(), s.vmax()}, 1, "in" + std::to_string(replaces.size()), AddrSpace::ALU};
        replaces[s] = UOp::make(PARAM, s.dtype(), {UOp::stack({})}, Arg(pa));
      }
    UOp sink = graph_rewrite(u.substitute(replaces).reduce({r}, ADD), pm);
    if (!no_range(sink)) return UOp();
    std::unordered_map<UOp, UOp> back;
    for (auto& [k, v] : replaces) back[v] = k;
    u = sink.substitute(back);
  }
  return u;
}

const PatternMatcher& pm_reduce_simplify() {
  static const PatternMatcher pm = pm_reduce_unparented() + PatternMatcher{
      U(REDUCE, {}, {V("u")}, Arg{int64_t(ADD), 0}, "red", true) >> [](M m) { return reduce_collapse(m["red"], m["u"]); },
  };
  return pm;
}

const PatternMatcher& pm_load_collapse() {
  static const PatternMatcher pm = PatternMatcher{
      U(REDUCE, {}, {V("u"), U()}, Arg{int64_t(ADD), 0}, "red") >> [](M m) { return reduce_collapse(m["red"], m["u"], pm_reduce_load_collapse()); },
      // undo the index math moved onto a loaded index (it can overflow)
      ((V("x", dtypes::weakint) + V("y")) < V("c")) >> [](M m) {
        return no_load(m["y"]) && no_load(m["c"]) && !no_load(m["x"]) ? m["x"] < m["c"] - m["y"] : UOp();
      },
  }.pure();
  return pm;
}

}  // namespace tg
