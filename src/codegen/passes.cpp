// The matchers full_rewrite_to_sink runs (declared in passes.h), in pipeline order: 1. simplify.py, 2. symbolic rules
// only codegen uses, 3. expander and reduce removal, 4. local buffers and gpudims, 5. loads and devectorize,
// 6. coalesce/gater, 7. casted consts and param numbering.
#include "codegen/passes.h"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_set>

#include "codegen/decomp/transcendental.h"
#include "schedule/rangeify.h"
#include "uop/args.h"
#include "uop/movement.h"
#include "uop/symbolic.h"
#include "uop/weak.h"
#include "util/env.h"

namespace tg {

namespace {
using enum Ops;
using U = UPat;
U V(std::string n, DTypeSet d = {}) { return UPat::var(std::move(n), d); }
U C(std::string n, DTypeSet d = {}) { return UPat::cvar(std::move(n), d); }
const U invalid_pat = U(CONST, {}, {}, Arg(ConstVal::invalid()), "i");
const U invalid_gate = V("cond").where(V("x"), invalid_pat);

std::vector<UOp> cat(std::vector<UOp> a, std::span<const UOp> b) { a.insert(a.end(), b.begin(), b.end()); return a; }
std::vector<UOp> tail(std::span<const UOp> s, size_t from) { return {s.begin() + std::min(from, s.size()), s.end()}; }
UOp cint(int64_t v) { return UOp::const_(v); }
AxisType axis_type(const UOp& r) { return AxisType(r.arg().ints().back()); }
Arg::Ints with_type(const UOp& r, std::initializer_list<int64_t> extra, AxisType t) {
  Arg::Ints a(r.arg().ints().begin(), r.arg().ints().end() - 1);
  a.insert(a.end(), extra);
  a.push_back(int64_t(t));
  return a;
}
Ops reduce_op(const UOp& r) { return Ops(r.arg().ints()[0]); }
// a node rebuilt with new sources, its dtype derived again where the op derives one (tinygrad's replace(dtype=None))
UOp rebuild(const UOp& b, const std::vector<UOp>& src) {
  auto dt = dtype_from_uop(b.op(), src, b.arg());
  return UOp::make(b.op(), dt.value_or(b.dtype()), src, b.arg(), b.tag());
}
// shapes of codegen nodes: a SHRINK of a symbolic offset has the shape of its size (UOp::shape() wants const args)
const std::optional<Shape>& cg_shape(const UOp& u) {
  if (const auto* s = u.shape_if_valid()) return *s;
  return lin_max_shape(u);
}
UOp shape_arg(const Shape& s) {
  if (s.size() == 1) return cint(s[0]);
  std::vector<UOp> xs;
  for (auto x : s) xs.push_back(cint(x));
  return UOp::stack(xs);
}
Shape broadcast_shape(const std::vector<Shape>& shapes) {
  size_t nd = 0;
  for (auto& s : shapes) nd = std::max(nd, s.size());
  Shape out(nd, 1);
  for (auto& s : shapes)
    for (size_t i = 0; i < s.size(); i++) {
      int64_t& o = out[nd - s.size() + i];
      o = (o == 0 || s[i] == 0) ? 0 : std::max(o, s[i]);
    }
  return out;
}
}  // namespace

UOp placeholder(const Shape& shape, DType dtype, int64_t slot, AddrSpace addrspace) {
  ParamArg pa{slot, strong_dtype(dtype)};
  pa.addrspace = addrspace;
  UOp ret = UOp::make(addrspace == AddrSpace::GLOBAL ? PARAM : BUFFER, pa.dtype, {shape_arg({prod(shape)})}, Arg(pa));
  return shape.size() > 1 ? ret.reshape(shape) : ret;
}

std::string colored(const std::string& s, const std::string& color) {
  static const char* names[] = {"black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"};
  std::string lower;
  for (char c : color) lower += char(std::tolower(static_cast<unsigned char>(c)));
  int idx = int(std::find(std::begin(names), std::end(names), lower) - std::begin(names));
  bool bright = !color.empty() && std::isupper(static_cast<unsigned char>(color[0]));
  return "\x1b[" + std::to_string(60 * bright + 30 + idx) + "m" + s + "\x1b[0m";
}

// ***** 1. codegen/simplify.py *****

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

namespace {
bool no_range(const UOp& u) { return !u.op_in_backward_slice_with_self(RANGE); }
bool no_load(const UOp& u) { return !u.op_in_backward_slice_with_self(INDEX); }
}  // namespace

const PatternMatcher& pm_reduce_collapse() {
  static const PatternMatcher pm = (pm_reduce_unparented() + PatternMatcher{
      ((V("x") + V("y")).or_casted() < V("c")) >> [](M m) {
        return no_range(m["y"]) && no_range(m["c"]) ? m["x"] < (m["c"] - m["y"]) : UOp();
      },
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
      U(REDUCE, {}, {invalid_gate}, Arg{int64_t(ADD), 0}, "r", true) >> [](M m) {
        if (!no_range(m["cond"])) return UOp();
        return m["cond"].where(m["x"].reduce(tail(m["r"].src(), 1), ADD), m["i"]);
      },
      U(REDUCE, {}, {V("x") + V("y")}, Arg{int64_t(ADD), 0}, "r", true) >> [](M m) {
        auto rs = tail(m["r"].src(), 1);
        return m["x"].reduce(rs, ADD) + m["y"].reduce(rs, ADD);
      },
      U(REDUCE, {}, {(U(PARAM, {}, {}, {}, "x") & V("y")).where(V("c"), ufix_pat(0))}, Arg{int64_t(ADD), 0}, "r", true) >> [](M m) {
        return m["y"].where(m["c"], cint(0)).reduce(tail(m["r"].src(), 1), ADD) * m["x"];
      },
      (V("x") * V("gate", dtypes::bool_).cast()) >> [](M m) { return m["gate"].where(m["x"], cint(0)); },
  } + symbolic()).pure();
  return pm;
}

namespace {
const PatternMatcher& pm_reduce_load_collapse() {
  static const PatternMatcher pm = pm_reduce_collapse() + PatternMatcher{
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

namespace {
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

// ***** 2. symbolic rules only codegen uses *****

namespace {
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
      U(POW, {}, {}, {}, "p") >> [](M m) { return xpow(m["p"].src(0), m["p"].src(1)); },
      U(INDEX, {}, {}, {}, "index").store(U(INDEX, {}, {}, {}, "index").load()) >> [](M) { return UOp::make(NOOP, dtypes::void_, {}); },
      U(INDEX, {}, {}, {}, "index").store(V("gate").where(V("alt"), U(INDEX, {}, {}, {}, "index").load())) >> [](M m) {
        const UOp& index = m["index"];
        return index.src(0).index({index.src(1).valid(m["gate"])}).store(m["alt"]);
      },
      U(STORE, {}, {U(), invalid_pat}) >> [](M) { return UOp::make(NOOP, dtypes::void_, {}); },
      U(STORE, {}, {U(INDEX, {}, {}, {}, "index"), V("cond").where(V("val"), invalid_pat)}) >> [](M m) {
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
      U(STORE, {}, {U(INDEX, {}, {U(), invalid_pat}, {}, {}, true).or_casted(), U()}) >> [](M) { return UOp::make(NOOP, dtypes::void_, {}); },
      U(LOAD, {}, {U(INDEX, {}, {U(), invalid_pat}, {}, {}, true).or_casted()}, {}, "x", true) >> [](M m) {
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

const PatternMatcher& pm_clean_up_group_sink() {
  static const PatternMatcher pm{
      U(GROUP, {}, {V("x")}) >> [](M m) { return m["x"]; },
      U(OpSet{SINK, GROUP}, {}, {}, {}, "root") >> [](M m) {
        const UOp& r = m["root"];
        OpSet flat{NOOP, STACK, SINK, GROUP};
        bool any = false;
        for (auto& x : r.src()) any |= flat.has(x.op());
        if (!any) return UOp();
        std::vector<UOp> s;
        for (auto& x : r.src()) if (flat.has(x.op())) s.insert(s.end(), x.src().begin(), x.src().end()); else s.push_back(x);
        return UOp::make(r.op(), dtypes::void_, s, r.arg(), r.tag());
      },
  };
  return pm;
}

const PatternMatcher& pm_remove_invalid() {
  static const PatternMatcher pm = PatternMatcher{
      invalid_gate.named("w") >> [](M m) {
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

// ***** 3. expander and reduce removal *****

std::unordered_map<int64_t, int64_t> build_range_map(const UOp& sink, bool last_opt_outermost) {
  std::unordered_map<int64_t, int64_t> ctx;
  std::vector<int64_t> ids;
  for (auto& x : sink.toposort())
    if (x.op() == RANGE && (axis_type(x) == AxisType::UNROLL || axis_type(x) == AxisType::UPCAST) && !has(ids, x.arg().ints()[0]))
      ids.push_back(x.arg().ints()[0]);
  // tinygrad orders the expanded axes as the graph meets them; ours can put the first opt's axis innermost, so a SIMD
  // tile's lanes are consecutive in its accumulators whatever the graph's shape
  if (last_opt_outermost) std::sort(ids.rbegin(), ids.rend());
  for (auto id : ids) ctx.emplace(id, int64_t(ctx.size()));
  return ctx;
}

namespace {
UOp expand_reduce(const UOp& r) {
  std::vector<UOp> range_srcs;
  std::vector<int64_t> new_axes;
  for (auto& u : tail(r.src(), 1)) {
    if (u.op() == RANGE) range_srcs.push_back(u);
    else for (size_t i = 0; i < u.shape().size(); i++) if (u.shape()[i] > 1) new_axes.push_back(int64_t(i));
  }
  if (new_axes.empty()) return UOp();
  const Shape& ss = r.src(0).shape();
  std::vector<int64_t> perm = new_axes;
  Shape out;
  for (size_t i = 0; i < ss.size(); i++) {
    bool isnew = has(new_axes, int64_t(i));
    if (!isnew) perm.push_back(int64_t(i));
    out.push_back(isnew ? 1 : ss[i]);
  }
  UOp p = r.src(0).permute(perm);
  return UOp::make(REDUCE, p.dtype(), cat({p}, range_srcs), Arg(Arg::Ints{r.arg().ints()[0], int64_t(new_axes.size())})).reshape(out);
}
}  // namespace

const PatternMatcher& expander2() {
  static const PatternMatcher pm = PatternMatcher{
      U(REDUCE, {}, {}, {}, "r") >> [](M m) { return expand_reduce(m["r"]); },
      U(RANGE, {}, {}, {}, "r") >> [](M m) {
        auto& ctx = m.ctx<std::unordered_map<int64_t, int64_t>>();
        const UOp& r = m["r"];
        auto it = ctx.find(r.arg().ints()[0]);
        if (it == ctx.end()) return UOp();
        int64_t n = r.vmax().i + 1;
        std::vector<UOp> vals;
        for (int64_t i = 0; i < n; i++) vals.push_back(UOp::const_(i, r.dtype()));
        Shape shp(ctx.size(), 1);
        shp[it->second] = n;
        return UOp::stack(vals).reshape(shp);
      },
  } + pm_flatten_range() + mop_cleanup();
  return pm;
}

namespace {
void flatten_into(std::vector<UOp>& out, const UOp& x) { for (auto& e : x.ended_ranges()) out.push_back(e); }

UOp reduce_ranges_to_acc(ReduceContext& ctx, const UOp& r) {
  Ops rop = reduce_op(r);
  UOp acc = placeholder(r.shape_opt() && !r.shape().empty() ? r.shape() : Shape{1}, r.dtype(), ctx.acc_num++, AddrSpace::REG);
  std::vector<UOp> topo = r.src(0).toposort(), ended, rngs = tail(r.src(), 1), input_ranges;
  for (auto& x : topo) if (x.op() == END) flatten_into(ended, x);
  for (auto& x : topo) if (x.op() == RANGE && !has(rngs, x) && !has(ended, x)) input_ranges.push_back(x);
  ConstVal ident = rop == ADD ? ConstVal(int64_t(0)) : rop == MUL ? ConstVal(int64_t(1)) : r.dtype().min();
  UOp acc_init = acc.after(input_ranges).store(UOp::const_(r.dtype().const_(ident)));
  UOp acc_initted = acc.after(cat({acc_init}, rngs));
  UOp inp = r.arg().ints()[1] ? UOp::make(REDUCE, r.src(0).dtype(), {r.src(0)}, r.arg()) : r.src(0);
  UOp acc_out = acc_initted.store(acc_initted.alu(rop, {inp})).end(rngs).rtag(Arg("mergeable"));
  return acc.after({acc_out});
}

UOp expand_horizontal_reduce(const UOp& r) {
  const UOp& inp = r.src(0);
  int64_t n = r.arg().ints()[1];
  Shape ms(inp.shape().begin(), inp.shape().begin() + n);
  std::vector<UOp> vals;
  std::vector<int64_t> idx(n, 0);
  for (int64_t k = 0, total = prod(ms); k < total; k++) {
    for (int64_t a = n - 1, rem = k; a >= 0; a--) idx[a] = rem % ms[a], rem /= ms[a];
    std::vector<UOp> ii;
    for (auto i : idx) ii.push_back(cint(i));
    vals.push_back(inp.index(ii));
  }
  UOp ret = vals[0];
  for (size_t i = 1; i < vals.size(); i++) ret = ret.alu(reduce_op(r), {vals[i]});
  return ret;
}

UOp merge_reduce_ends(const UOp& sink) {
  std::vector<std::pair<std::vector<UOp>, std::vector<UOp>>> range_to_ends;
  int64_t next_axis = -1;
  for (auto& u : sink.toposort()) {
    if (u.op() == RANGE) next_axis = std::max(next_axis, u.arg().ints()[0]);
    if (u.op() != END || !(u.tag() == Arg("mergeable"))) continue;
    std::vector<UOp> key = tail(u.src(), 1);
    auto it = std::find_if(range_to_ends.begin(), range_to_ends.end(), [&](auto& p) { return p.first == key; });
    if (it == range_to_ends.end()) range_to_ends.push_back({key, {u}});
    else it->second.push_back(u);
  }
  next_axis++;
  std::unordered_map<UOp, UOp> subs;
  for (auto& [r, ends] : range_to_ends) {
    if (ends.size() <= 1) continue;
    std::vector<std::pair<std::vector<UOp>, std::vector<UOp>>> by_ctx;
    for (auto& e : ends) {
      std::vector<UOp> rs = e.ranges();
      std::sort(rs.begin(), rs.end(), [](const UOp& a, const UOp& b) { return a.get() < b.get(); });
      auto it = std::find_if(by_ctx.begin(), by_ctx.end(), [&](auto& p) { return p.first == rs; });
      if (it == by_ctx.end()) by_ctx.push_back({rs, {e}});
      else it->second.push_back(e);
    }
    for (size_t i = 0; i < by_ctx.size(); i++) {
      auto& group = by_ctx[i].second;
      std::vector<UOp> tr = r;
      std::unordered_map<UOp, UOp> rmap;
      if (i > 0) {
        for (size_t j = 0; j < r.size(); j++) {
          Arg::Ints a = r[j].arg().ints();
          a[0] = next_axis + int64_t(j);
          tr[j] = r[j].replace({.arg = Arg(a)});
          rmap[r[j]] = tr[j];
        }
        next_axis += int64_t(r.size());
      }
      std::vector<UOp> mapped;
      for (auto& e : group) mapped.push_back(i > 0 ? e.substitute(rmap) : e);
      UOp merged = mapped.size() == 1 ? mapped[0] : [&] {
        std::vector<UOp> s;
        for (auto& e : mapped) s.push_back(e.src(0));
        return UOp::group(s).end(tr);
      }();
      for (auto& e : group) subs[e] = merged;
    }
  }
  return subs.empty() ? UOp() : sink.substitute(subs);
}
}  // namespace

const PatternMatcher& pm_reduce_local() {
  static const PatternMatcher pm = PatternMatcher{
      U(REDUCE, {}, {U(), U()}, {}, "r", true) >> [](M m) { return reduce_ranges_to_acc(m.ctx<ReduceContext>(), m["r"]); },
      U(REDUCE, {}, {U()}, {}, "r") >> [](M m) { return expand_horizontal_reduce(m["r"]); },
      U(SINK, {}, {}, {}, "sink") >> [](M m) { return merge_reduce_ends(m["sink"]); },
  } + pm_clean_up_group_sink();
  return pm;
}

// ***** 4. local buffers and gpudims *****

const PatternMatcher& pm_add_local_buffers() {
  static const PatternMatcher pm = PatternMatcher{
      U(STAGE, {}, {}, {}, "x") >> [](M m) {
        const UOp& x = m["x"];
        const BufferizeOpts* o = bufferize_opts(x);
        UOp buf = placeholder(x.shape(), x.dtype(), m.ctx<int64_t>()++, o ? o->addrspace : AddrSpace::LOCAL);
        std::vector<UOp> rngs = tail(x.src(), 1);
        return buf.after({buf.index(rngs).store(x.src(0)).end(rngs)});
      },
  } + pm_mops();
  return pm;
}

namespace {
UOp add_gpudims(const CStyleLanguage& ren, const UOp& s) {
  if (s.arg().none()) return UOp();
  std::vector<UOp> topo = s.toposort();
  for (auto& x : topo) if (x.op() == SPECIAL) return UOp();
  std::map<Arg::Ints, UOp> all_ranges;
  for (auto& x : topo)
    if (x.op() == RANGE) all_ranges[Arg::Ints(x.arg().ints().begin(), x.arg().ints().end() - 1)] = x;
  std::vector<Arg::Ints> global_dims, local_dims;
  for (auto& [k, x] : all_ranges) {
    AxisType t = axis_type(x);
    if (t == AxisType::GLOBAL || t == AxisType::THREAD) global_dims.push_back(k);
    if (t == AxisType::WARP || t == AxisType::LOCAL || t == AxisType::GROUP_REDUCE) local_dims.push_back(k);
  }
  if (global_dims.empty() && local_dims.empty()) return UOp();
  if (!local_dims.empty()) throw Error("add_gpudims: local dims on a renderer without locals (" + std::to_string(local_dims.size()) + ")");
  // the CPU renderer has threads: the first global dim is the core_id variable
  int64_t n = all_ranges[global_dims[0]].src(0).simplify().val().i;
  ParamArg pa{-1, dtypes::int32, std::pair<ConstVal, ConstVal>{int64_t(0), n - 1}, 1, "core_id", AddrSpace::ALU};
  UOp core_id = UOp::make(PARAM, dtypes::int32, {UOp::stack({})}, Arg(pa)).cast(dtypes::weakint);
  std::unordered_map<UOp, UOp> subs;
  for (auto& r : topo)
    if (r.op() == RANGE && axis_type(r) != AxisType::REDUCE &&
        Arg::Ints(r.arg().ints().begin(), r.arg().ints().end() - 1) == global_dims[0])
      subs[r] = core_id;
  (void)ren;
  return s.substitute(subs);
}
}  // namespace

const PatternMatcher& pm_add_gpudims() {
  static const PatternMatcher pm{
      U(SINK, {}, {}, {}, "s") >> [](M m) { return add_gpudims(m.ctx<const CStyleLanguage>(), m["s"]); },
  };
  return pm;
}

// ***** 5. loads and devectorize *****

namespace {
UOp maybe_load(const UOp& u) {
  auto a = u.addrspace();
  return a && (*a == AddrSpace::GLOBAL || *a == AddrSpace::LOCAL || *a == AddrSpace::REG) ? u.load() : u;
}
UOp expand_broadcast(const UOp& x) {
  for (auto& u : x.src()) if (!cg_shape(u)) return UOp();
  if (std::all_of(x.src().begin(), x.src().end(), [&](const UOp& u) { return cg_shape(u) == cg_shape(x.src(0)); })) return UOp();
  std::vector<Shape> shapes;
  for (auto& u : x.src()) shapes.push_back(*cg_shape(u));
  Shape shape = broadcast_shape(shapes);
  std::vector<UOp> src;
  for (auto& u : x.src()) src.push_back(u.expand(shape));
  return x.replace({.src = src});
}
UOp do_devectorize(const UOp& b) {
  const auto& bs = cg_shape(b);
  if (!bs || bs->empty()) return UOp();
  for (auto& x : b.src()) if (!(cg_shape(x) == bs || x.base().is_invalid())) return UOp();
  std::vector<UOp> src, ic, ns;
  int64_t total = prod(*bs);
  std::vector<int64_t> idx(bs->size(), 0);
  for (int64_t k = 0; k < total; k++) {
    for (int64_t a = int64_t(bs->size()) - 1, rem = k; a >= 0; a--) idx[a] = rem % (*bs)[a], rem /= (*bs)[a];
    ic.clear(), ns.clear();
    for (auto i : idx) ic.push_back(cint(i));
    for (auto& x : b.src()) ns.push_back(x.base().is_invalid() ? x.base() : x.index(ic));
    src.push_back(rebuild(b, ns));
  }
  return b.op() == STORE ? UOp::group(src) : UOp::stack(src).reshape(*bs);
}
}  // namespace

const PatternMatcher& pm_expand_broadcast() {
  static const PatternMatcher pm = PatternMatcher{
      U(GroupOp::Binary | GroupOp::Ternary | OpSet{STORE}, {}, {}, {}, "x") >> [](M m) { return expand_broadcast(m["x"]); },
  }.pure();
  return pm;
}

const PatternMatcher& pm_add_loads() {
  static const PatternMatcher pm = PatternMatcher{
      U(GroupOp::Elementwise | OpSet{REDUCE, WMMA, STACK}, {}, {}, {}, "x") >> [](M m) {
        const UOp& x = m["x"];
        if (x.op() == BITCAST && cg_shape(x) != cg_shape(x.src(0))) return UOp();
        std::vector<UOp> src;
        for (auto& s : x.src()) src.push_back(maybe_load(s));
        return x.replace({.src = src});
      },
      U(STORE, {}, {}, {}, "x") >> [](M m) {
        const UOp& x = m["x"];
        return x.replace({.src = cat({x.src(0), maybe_load(x.src(1))}, tail(x.src(), 2))});
      },
  }.pure();
  return pm;
}

const PatternMatcher& ew_devectorizer() {
  static const PatternMatcher pm = PatternMatcher{
      U(GroupOp::Elementwise, {}, {}, {}, "b") >> [](M m) { return do_devectorize(m["b"]); },
  }.pure();
  return pm;
}

const PatternMatcher& pm_simplify_add_image() {
  static const PatternMatcher pm = PatternMatcher{
      U(LOAD, dtypes::float16, {U(INDEX, dtypes::float32, {}, {}, "x", true)}) >> [](M m) { return m["x"].load().cast(dtypes::float16); },
      U(INDEX, dtypes::float32, {}, {}, "x", true).store(V("d", dtypes::float16)) >> [](M m) { return m["x"].store(m["d"].cast(dtypes::float32)); },
      V("x", dtypes::float32).cast(DTypeSet(dtypes::float16)).cast(DTypeSet(dtypes::float32)) >> [](M m) { return m["x"]; },
  }.pure();
  return pm;
}

const PatternMatcher& devectorizer2() {
  static const PatternMatcher pm = (mop_cleanup() + pm_mops() + PatternMatcher{
      U(GroupOp::Elementwise | OpSet{LOAD, STORE}, {}, {}, {}, "b") >> [](M m) { return do_devectorize(m["b"]); },
      U(INDEX, {}, {V("x")}) >> [](M m) { return m["x"]; },
      U(INDEX, {}, {U(OpSet{PARAM, BUFFER}, {}, {}, {}, "b"), U(STACK, {}, {}, {}, "s")}, {}, "x") >> [](M m) {
        std::vector<UOp> out;
        for (auto& u : m["s"].src()) out.push_back(m["x"].replace({.src = std::vector{m["b"], u}}));
        return UOp::stack(out);
      },
      U(INDEX, {}, {U(OpSet{PARAM, BUFFER}, {}, {}, {}, "b"), U(RESHAPE, {}, {}, {}, "s")}) >> [](M m) {
        return m["b"].index({m["s"].src(0)}).reshape(*cg_shape(m["s"]));
      },
      U(RESHAPE, dtypes::void_, {}, {}, "x") >> [](M m) { return m["x"].src(0); },
      U(RESHAPE, {}, {}, {}, "x") >> [](M m) {
        const UOp& x = m["x"];
        return x.marg().empty() && cg_shape(x.src(0)) == std::optional<Shape>(Shape{1}) ? x.src(0).index({cint(0)}) : UOp();
      },
      U(EXPAND, {}, {V("x"), U()}, {}, "out") >> [](M m) {
        const UOp &x = m["x"], &out = m["out"];
        auto os = cg_shape(out);
        int64_t n = 1;
        if (os) for (auto d : *os) n *= d;
        if (!(cg_shape(x) == std::optional<Shape>(Shape{}) && cg_shape(out) == std::optional<Shape>(Shape{n}))) return UOp();
        return UOp::stack(std::vector<UOp>(size_t(n), x));
      },
  }).pure();
  return pm;
}

const PatternMatcher& pm_cast_float_alu() {
  static const PatternMatcher pm = PatternMatcher{
      U(OpSet{SIN, LOG2, EXP2, SQRT, RECIPROCAL}, {}, {V("x")}, {}, "u") >> [](M m) {
        const UOp &u = m["u"], &x = m["x"];
        return x.dtype() != u.dtype() ? u.replace({.src = std::vector{x.cast(u.dtype())}}) : UOp();
      },
  }.pure();
  return pm;
}

// ***** 6. late/coalesce.py, late/gater.py *****

const PatternMatcher& indexing_simplify() {
  static const PatternMatcher pm = PatternMatcher{
      U(INDEX, {}, {V("buf"), invalid_gate}) >> [](M m) {
        const UOp &x = m["x"], &cond = m["cond"];
        UOp idx = uop_given_valid(cond, x);
        return idx == x || idx == x.simplify() ? UOp() : m["buf"].index({idx.valid(cond)});
      },
  }.pure();
  return pm;
}

UOp memory_coalescing(const UOp& sink, const CStyleLanguage& ren) {
  // float accumulators fold too where the renderer aligns register arrays: the slices of a SIMD upcast become vector
  // loads and stores, which pin clang's SLP vectorizer to those lanes (left to itself it may pick others, 5x slower)
  bool simd = ren.simd_vectors();
  struct Key { Ops op; UOp buf; UOp root; int kind; UOp valid; };  // kind: 0 a node, 1 INVALID, 2 CONST
  std::vector<std::pair<Key, std::map<int64_t, std::vector<UOp>>>> memory;
  for (auto& u : sink.toposort()) {
    if (u.op() != LOAD && u.op() != STORE) continue;
    if (u.src().size() != (u.op() == STORE ? 2u : 1u)) throw Error("memory coalescing does not support gated loads/stores");
    if (u.src(0).op() != INDEX || u.src(0).src().size() != 2) throw Error("memory coalescing should be on INDEX, not " + std::string(op_name(u.src(0).op())));
    UOp buf = u.src(0).src(0), idx_u = u.src(0).src(1);
    if (buf.addrspace() == AddrSpace::REG && !(simd && buf.dtype() == dtypes::float32)) continue;
    UOp idx = idx_u.get_idx(), valid = idx_u.get_valid(), root;
    int kind = 0;
    int64_t arg = 0;
    if (idx.op() == ADD && idx.src(1).op() == CONST && idx.src(1).val().is_int()) root = idx.src(0), arg = idx.src(1).val().i;
    else if (idx.op() == ADD && idx.src(0).op() == CONST && idx.src(0).val().is_int()) root = idx.src(1), arg = idx.src(0).val().i;
    else if (idx.op() == CONST && idx.val().is_invalid()) kind = 1;
    else if (idx.op() == CONST) kind = 2, arg = idx.val().as_int();
    else root = idx;
    Key k{u.op(), buf, root, kind, valid};
    auto it = std::find_if(memory.begin(), memory.end(), [&](auto& e) {
      return e.first.op == k.op && e.first.buf == k.buf && e.first.root == k.root && e.first.kind == k.kind && e.first.valid == k.valid;
    });
    if (it == memory.end()) { memory.push_back({k, {}}); it = memory.end() - 1; }
    it->second[arg].push_back(u);
  }
  std::unordered_map<UOp, UOp> replacements;
  for (auto& [k, offsets] : memory) {
    std::vector<int64_t> lengths;
    DType dt = k.buf.dtype();
    int64_t w = ren.vector_width;
    if (k.buf.addrspace() == AddrSpace::REG) lengths = {w, 8, 4};  // the renderer aligns float register arrays of 4 and more
    else if (simd && dt == dtypes::float32) lengths = {w, 8, 4, 2};  // lanes as wide as the accumulators'
    else if (dt == dtypes::float32 || dt == dtypes::float16 || dt == dtypes::int32 || dt == dtypes::uint32) lengths = {4, 2};
    lengths.push_back(1);
    std::vector<std::vector<int64_t>> grouped;
    int64_t prev = 0;
    for (auto& [o, _] : offsets) {
      if (grouped.empty() || o != prev + 1) grouped.emplace_back();
      grouped.back().push_back(o), prev = o;
    }
    for (auto full : grouped) {
      while (!full.empty()) {
        UOp offset = k.kind == 0 ? k.root + full[0] : UOp::const_(int64_t(full[0]));
        int64_t length = 1;
        for (auto l : lengths) if (l <= int64_t(full.size()) && offset.divides(l)) { length = l; break; }
        std::vector<int64_t> grp(full.begin(), full.begin() + length);
        offset = offset.valid(k.valid);
        UOp idx = grp.size() > 1 ? UOp::make(SHRINK, dt, {k.buf, offset, cint(int64_t(grp.size()))}) : k.buf.index({offset});
        if (k.op == STORE) {
          std::vector<UOp> datas;
          for (auto g : grp) {
            if (offsets[g].size() != 1) throw Error("memory coalescing: multiple stores to one address");
            datas.push_back(offsets[g][0].src(1));
          }
          UOp store = idx.store(datas.size() > 1 ? UOp::stack(datas) : datas[0]);
          for (auto g : grp) replacements[offsets[g][0]] = store;
        } else {
          UOp ld = idx.load();
          for (size_t i = 0; i < grp.size(); i++)
            for (auto& oo : offsets[grp[i]]) replacements[oo] = grp.size() > 1 ? ld.index({cint(int64_t(i))}) : ld;
        }
        full.erase(full.begin(), full.begin() + length);
      }
    }
  }
  return sink.substitute(replacements);
}

namespace {
UOp move_where_load(const UOp& l, const UOp& a, const UOp& w) {
  UOp alt = a.is_invalid() ? l.const_like(0) : a.op() == CONST ? l.const_like(a.val())
            : a.op() == CAST && a.src(0).dtype() == l.dtype() ? a.src(0) : a.cast(l.dtype());
  return l.replace({.src = std::vector{l.src(0), alt, l.src(2)}}).cast(w.dtype());
}
}  // namespace

const PatternMatcher& pm_move_gates_from_index() {
  static const PatternMatcher pm = PatternMatcher{
      U(OpSet{INDEX, SHRINK}, {}, {U(), V("gate").where(V("idx"), invalid_pat)}, {}, "mop", true).load().named("l") >> [](M m) {
        const UOp& mop = m["mop"];
        UOp nm = mop.replace({.src = cat({mop.src(0), m["idx"]}, tail(mop.src(), 2))});
        return UOp::make(LOAD, m["l"].dtype(), {nm, m["l"].const_like(0), m["gate"]});
      },
      U(OpSet{INDEX, SHRINK}, {}, {U(), V("gate").where(V("idx"), invalid_pat)}, {}, "mop", true).store(V("data")) >> [](M m) {
        const UOp& mop = m["mop"];
        UOp nm = mop.replace({.src = cat({mop.src(0), m["idx"]}, tail(mop.src(), 2))});
        return UOp::make(STORE, dtypes::void_, {nm, m["data"], m["gate"]});
      },
      V("gate").where(U(LOAD, {}, {U(), U(), V("gate", dtypes::bool_)}, {}, "l").or_casted(), V("a")).named("w") >> [](M m) {
        return move_where_load(m["l"], m["a"], m["w"]);
      },
      V("gate").where(V("a"), U(LOAD, {}, {U(), U(), V("gate", dtypes::bool_).logical_not()}, {}, "l").or_casted()).named("w") >> [](M m) {
        return move_where_load(m["l"], m["a"], m["w"]);
      },
  }.pure();
  return pm;
}

// ***** 7. casted consts and param numbering *****

const PatternMatcher& pm_casted_consts() {
  static const PatternMatcher pm = PatternMatcher{
      U(CONST, {}, {}, {}, "c") >> [](M m) {
        const UOp& c = m["c"];
        if (c.dtype().is_weak() || c.dtype() == dtypes::void_) return UOp();
        return UOp::make(CAST, c.dtype(), {UOp::const_(c.val())}, Arg(c.dtype()));
      },
  }.pure();
  return pm;
}

const PatternMatcher& pm_number_params() {
  static const PatternMatcher pm{
      U(PARAM, {}, {}, {}, "x") >> [](M m) {
        const UOp& x = m["x"];
        if (x.arg().param().slot != -1) return UOp();
        ParamArg pa = x.arg().param();
        pa.slot = m.ctx<int64_t>()++;
        return x.replace({.arg = Arg(pa)});
      },
  };
  return pm;
}

}  // namespace tg
