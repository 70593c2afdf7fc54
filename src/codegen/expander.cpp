// The expander of tinygrad's codegen/__init__.py, in pipeline order: 1. expand, 2. remove reduces, 3. local buffers.
#include "codegen/expander.h"

#include <algorithm>

#include "codegen/simplify.h"
#include "uop/args.h"
#include "uop/movement.h"
#include "uop/pattern_helpers.h"
#include "uop/symbolic.h"

namespace tg {

namespace {
using enum Ops;
using namespace pat;
}  // namespace

UOp placeholder(const Shape& shape, DType dtype, int64_t slot, AddrSpace addrspace) {
  ParamArg pa{slot, strong_dtype(dtype)};
  pa.addrspace = addrspace;
  UOp ret = UOp::make(addrspace == AddrSpace::GLOBAL ? PARAM : BUFFER, pa.dtype, {shape_to_shape_arg({prod(shape)})}, Arg(pa));
  return shape.size() > 1 ? ret.reshape(shape) : ret;
}

// ***** 1. expand *****

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
std::vector<int64_t> argsort(const std::vector<int64_t>& v) {
  std::vector<int64_t> idx(v.size());
  for (size_t i = 0; i < v.size(); i++) idx[i] = int64_t(i);
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return v[size_t(a)] < v[size_t(b)]; });
  return idx;
}
// a WMMA source's expanded axes of `arg` (range id, size) moved last and merged: the lanes one thread holds
UOp contract_axis(const std::unordered_map<int64_t, int64_t>& ctx, const UOp& u, const WmmaArg::Axes& arg) {
  std::vector<int64_t> perm;
  for (size_t i = 0; i < u.shape().size(); i++)
    if (std::none_of(arg.begin(), arg.end(), [&](auto& a) { return ctx.at(a.first) == int64_t(i); })) perm.push_back(int64_t(i));
  size_t nhead = perm.size();
  for (auto& [rn, _] : arg) perm.push_back(ctx.at(rn));
  UOp out = u.permute(perm);
  Shape shp(out.shape().begin(), out.shape().begin() + nhead);
  int64_t lanes = 1;
  for (size_t i = nhead; i < out.shape().size(); i++) lanes *= out.shape()[i];
  shp.push_back(lanes);
  return out.reshape(shp);
}
// the WMMA's lanes split back into the expanded axes of `arg`, each at its place
UOp unroll_axis(const std::unordered_map<int64_t, int64_t>& ctx, const UOp& u, const WmmaArg::Axes& arg) {
  std::vector<int64_t> tail_axes;
  for (auto& [rn, _] : arg) tail_axes.push_back(ctx.at(rn));
  Shape shp(u.shape().begin(), u.shape().end() - 1);
  for (auto& [_, n] : arg) shp.push_back(n);
  UOp out = u.reshape(shp);
  std::vector<int64_t> order;
  for (size_t i = 0; i < shp.size(); i++) if (!has(tail_axes, int64_t(i))) order.push_back(int64_t(i));
  order.insert(order.end(), tail_axes.begin(), tail_axes.end());
  return out.permute(argsort(order));
}
UOp expand_wmma(const std::unordered_map<int64_t, int64_t>& ctx, const UOp& u) {
  const WmmaArg* w = wmma_arg(u);
  if (!w || !w->upcast_axes) return UOp();
  const auto& [in0, in1, out0] = *w->upcast_axes;
  WmmaArg na = *w;
  na.upcast_axes.reset();
  std::vector<UOp> src{contract_axis(ctx, u.src(0), in0), contract_axis(ctx, u.src(1), in1), u.src(2)};
  UOp wmma = u.replace({.src = src, .arg = make_arg(std::move(na))});
  return unroll_axis(ctx, wmma, out0);
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
      U(WMMA, {}, {}, {}, "u") >> [](M m) { return expand_wmma(m.ctx<std::unordered_map<int64_t, int64_t>>(), m["u"]); },
  } + pm_flatten_range() + mop_cleanup();
  return pm;
}

// ***** 2. remove reduces *****

namespace {
void flatten_into(std::vector<UOp>& out, const UOp& x) { for (auto& e : x.ended_ranges()) out.push_back(e); }

// a reduce over GROUP_REDUCE ranges (GROUP/GROUPTOP): each work-item reduces its part, the partial results go to a LOCAL
// buffer indexed by the group ranges (and the kernel's other local ranges), and a second reduce loops over that buffer
UOp fix_group_for_reduce(const UOp& x) {
  std::vector<UOp> gfr, rest;
  for (size_t i = 1; i < x.src().size(); i++)
    (x.src(i).op() == RANGE && axis_type(x.src(i)) == AxisType::GROUP_REDUCE ? gfr : rest).push_back(x.src(i));
  if (gfr.empty()) return UOp();
  std::vector<UOp> upstream_locals;
  for (auto& u : x.toposort()) if (u.op() == RANGE && axis_type(u) == AxisType::LOCAL) upstream_locals.push_back(u);
  // no reduce range left and no horizontal reduce: the partial result is the input itself
  UOp ret = rest.empty() && x.arg().ints()[1] == 0 ? x.src(0) : x.replace({.src = cat({x.src(0)}, rest)});
  std::vector<UOp> reduce_loop;
  for (auto& r : gfr) reduce_loop.push_back(r.replace({.arg = Arg(Arg::Ints{r.arg().ints()[0] + 100, int64_t(AxisType::REDUCE)})}));
  BufferizeOpts o;
  o.device = gfr[0].arg().ints()[0], o.addrspace = AddrSpace::LOCAL;
  UOp buf = ret.bufferize(cat(upstream_locals, gfr), make_arg(std::move(o))).index(cat(upstream_locals, reduce_loop));
  return buf.reduce(reduce_loop, reduce_op(x));
}

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

// an add into a WMMA's result is its accumulator (through the permute and reshape the expander put on it)
const PatternMatcher& pm_wmma_add() {
  static const PatternMatcher pm = PatternMatcher{
      (U(WMMA, {}, {}, {}, "wmma") + V("add")) >> [](M m) {
        const UOp& w = m["wmma"];
        return UOp::make(WMMA, w.dtype(), {w.src(0), w.src(1), w.src(2) + m["add"]}, w.arg());
      },
      (U(PERMUTE, {}, {U(WMMA, {}, {}, {}, "wmma")}, {}, "permute") + V("add")) >> [](M m) {
        const auto& p = m["permute"].arg().ints();
        std::vector<int64_t> perm(p.begin(), p.end());
        return (m["wmma"] + m["add"].permute(argsort(perm))).permute(perm);
      },
      (U(PERMUTE, {}, {U(RESHAPE, {}, {U(WMMA, {}, {}, {}, "wmma"), U()}, {}, "reshape")}, {}, "permute") + V("add")) >> [](M m) {
        const auto& p = m["permute"].arg().ints();
        std::vector<int64_t> perm(p.begin(), p.end());
        const UOp& w = m["wmma"];
        return (w + m["add"].permute(argsort(perm)).reshape(w.shape())).reshape(m["reshape"].shape()).permute(perm);
      },
  }.pure();
  return pm;
}

const PatternMatcher& pm_reduce_local() {
  static const PatternMatcher pm = pm_wmma_add() + PatternMatcher{
      U(REDUCE, {}, {}, {}, "x", true) >> [](M m) { return fix_group_for_reduce(m["x"]); },
      U(REDUCE, {}, {U(), U()}, {}, "r", true) >> [](M m) { return reduce_ranges_to_acc(m.ctx<ReduceContext>(), m["r"]); },
      U(REDUCE, {}, {U()}, {}, "r") >> [](M m) { return expand_horizontal_reduce(m["r"]); },
      U(SINK, {}, {}, {}, "sink") >> [](M m) { return merge_reduce_ends(m["sink"]); },
  } + pm_clean_up_group_sink();
  return pm;
}

// ***** 3. local buffers *****

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

}  // namespace tg
