// The kernel-forming end of get_kernel_graph (tinygrad's schedule/rangeify.py sections 4 and 5): 5. limit the buffers
// per kernel, 6. STAGE -> STORE into a BUFFER, 7. split each closed STORE into a CALL of its own kernel.
#include <algorithm>

#include "codegen/simplify.h"
#include "schedule/indexing.h"
#include "schedule/rangeify.h"
#include "uop/args.h"
#include "uop/movement.h"
#include "uop/pattern_helpers.h"
#include "util/settings.h"

namespace tg {

namespace {
using enum Ops;
using namespace pat;
std::optional<std::string> opts_device(const BufferizeOpts& o) {
  if (auto* s = std::get_if<std::string>(&o.device)) return *s;
  return std::nullopt;
}
}  // namespace

// ***** 5. limit buffers per kernel *****

namespace {
UOp limit_bufs(LimitBufsContext& ctx, const UOp& root) {
  std::optional<std::string> device = root.device();
  if (!device) return UOp();
  std::string dev = device->substr(0, device->find(':'));
  int64_t max_bufs = settings().MAX_KERNEL_BUFFERS;
  if (!max_bufs) max_bufs = dev == "METAL" || dev == "CPU" ? 31 : dev == "WEBGPU" ? 8 : 0;
  if (!max_bufs) return UOp();
  // the nodes not met before (their sources are in the cache by then)
  for (auto& u : root.toposort([&](const UOp& x) { return !ctx.buf_cache.contains(x); })) {
    std::vector<UOp> s;
    if (OpSet{STAGE, AFTER, PARAM, MSELECT, MSTACK}.has(u.op())) s = {u};
    else
      for (auto& x : u.src())
        for (auto& b : ctx.buf_cache.at(x)) if (!has(s, b)) s.push_back(b);
    ctx.buf_cache[u] = s;
  }
  if (int64_t(ctx.buf_cache.at(root).size()) <= max_bufs - 1) return UOp();
  std::vector<UOp> srcs;
  for (auto s : root.src()) {
    if (GroupOp::Elementwise.has(s.op()) && s.device()) {
      // the reduce ranges before the new STAGE become WEAK; the DEVICE range stays a launched axis
      std::vector<UOp> orig = s.ranges(), end_ranges;
      std::unordered_map<UOp, UOp> sub;
      for (auto& x : orig) {
        UOp e = x;
        if (x.op() == RANGE && AxisType(x.arg().ints().back()) != AxisType::DEVICE)
          e = x.replace({.arg = Arg{ctx.range_idx++, int64_t(AxisType::WEAK)}});
        end_ranges.push_back(e);
        sub[x] = e;
      }
      BufferizeOpts o;
      o.device = *s.device();
      s = s.substitute(sub).bufferize(end_ranges, make_arg(o)).index(orig);
    }
    srcs.push_back(s);
  }
  return root.replace({.src = srcs});
}

}  // namespace

const PatternMatcher& pm_limit_bufs() {
  static const PatternMatcher pm{
      U::ops(GroupOp::Binary | GroupOp::Ternary, "root") >> [](M m) { return limit_bufs(m.ctx<LimitBufsContext>(), m["root"]); },
  };
  return pm;
}

// ***** 6. STAGE -> STORE into a BUFFER *****

namespace {
bool arg_less(const UOp& a, const UOp& b) { return arg_compare(a.arg(), b.arg()) < 0; }

UOp bufferize_to_store(int64_t& ctx, const UOp& x, const UOp& idx) {
  int64_t size = prod(x.shape());
  DType dtype = strong_dtype(x.dtype());
  std::vector<UOp> rngs = idx.ranges();
  std::stable_sort(rngs.begin(), rngs.end(), arg_less);
  if (size <= 0) internal_error("no zero sized buffers");
  const BufferizeOpts* o = bufferize_opts(x);
  // AFTER: END the existing STOREs and return the buffer with its kernel dependency
  if (const UOp& after = x.src(0); after.op() == AFTER) {
    UOp buf = after.src(0).buf_uop().base();
    std::vector<UOp> stores;
    for (size_t i = 1; i < after.src().size(); i++)
      if (after.src(i).op() == STORE && after.src(i).src(0).op() == INDEX) stores.push_back(after.src(i));
    if (stores.empty()) return buf;
    std::vector<UOp> ended_stores;
    for (auto& store : stores) {
      UOp store_target = store.src(0);
      if (store_target.src(0).op() == STAGE && store_target.src(0).src(0).op() == INDEX) store_target = store_target.src(0).src(0);
      if (store.src(1) == store_target) continue;
      std::vector<UOp> end_rngs;
      for (auto& r : store_target.ranges()) if (!has(end_rngs, r)) end_rngs.push_back(r);
      for (auto& r : rngs) if (!has(end_rngs, r)) end_rngs.push_back(r);
      std::stable_sort(end_rngs.begin(), end_rngs.end(), arg_less);
      ended_stores.push_back(store_target.store(store.src(1)).end(end_rngs));
    }
    return buf.after(ended_stores);
  }
  if (o && o->addrspace == AddrSpace::GLOBAL) {
    ParamArg pa{ctx++, dtype};
    if (auto d = opts_device(*o)) pa.device = *d;
    UOp buf = UOp::make(BUFFER, dtype, {cint(size)}, Arg(pa));
    UOp do_store = buf.index({idx}).store(x.src(0).cast(dtype)).end(rngs);
    return buf.after({do_store}).cast(x.dtype());
  }
  return UOp();
}

// any STAGE -> a STAGE of one flat index, reshaped back
UOp flatten_bufferize(const UOp& x) {
  if (x.src().size() == 2) return UOp();
  const Shape& xs = x.shape();
  MovementArg a;
  a.ints = xs;
  std::vector<UOp> flat = apply_movement_op(RESHAPE, {prod(xs)}, a, tail(x.src(), 1));
  if (flat.size() != 1) internal_error("flatten_bufferize: expected one index");
  return x.replace({.src = std::vector<UOp>{x.src(0), flat[0]}}).reshape(xs);
}

bool is_noop_after_dep(const UOp& x) {
  return (x.op() == NOOP && x.src().empty()) || (x.op() == END && is_noop_after_dep(x.src(0)));
}
}  // namespace

const PatternMatcher& pm_add_buffers() {
  static const PatternMatcher pm = pm_mops() + PatternMatcher{U(STAGE, {}, {}, {}, "x") >> [](M m) { return flatten_bufferize(m["x"]); }} +
                                   PatternMatcher{
      U(STAGE, {}, {U(), V("idx")}, {}, "x") >> [](M m) { return bufferize_to_store(m.ctx<int64_t>(), m["x"], m["idx"]); },
      // INDEX through the weak cast added above: index the buffer, cast the loaded value
      U(INDEX, {}, {U(CAST, dtypes::weaks(), {V("buf")})}, {}, "u", true) >> [](M m) {
        const UOp& u = m["u"];
        return UOp::make(INDEX, cat({m["buf"]}, tail(u.src(), 1)), u.arg()).cast(u.dtype());
      },
      // no RESHAPEs on a CALL's arguments
      U(CALL, {}, {}, {}, "k") >> [](M m) {
        std::vector<UOp> s;
        for (auto& x : m["k"].src()) s.push_back(x.op() == RESHAPE ? x.src(0) : x);
        return m["k"].replace({.src = s});
      },
      // invalid writes are no writes
      U(STORE, {}, {U(), U(CONTIGUOUS, {}, {U(CONST, {}, {}, Arg(ConstVal::invalid()))})}) >> [](M) { return UOp::make(NOOP, dtypes::void_, {}); },
      U(STORE, {}, {U(), U(CONST, {}, {}, Arg(ConstVal::invalid()))}) >> [](M) { return UOp::make(NOOP, dtypes::void_, {}); },
      U(AFTER, {}, {}, {}, "x") >> [](M m) {
        const UOp& x = m["x"];
        std::vector<UOp> src{x.src(0)};
        for (size_t i = 1; i < x.src().size(); i++) if (!is_noop_after_dep(x.src(i))) src.push_back(x.src(i));
        if (src.size() == x.src().size()) return UOp();
        return src.size() == 1 ? src[0] : x.replace({.src = src});
      },
  };
  return pm;
}

const PatternMatcher& pm_add_param_range_tags() {
  static const PatternMatcher pm{U(OpSet{PARAM, RANGE}, {}, {}, {}, "x") >> [](M m) { return m["x"].rtag(Arg(Arg::Ints{})); }};
  return pm;
}

// ***** 7. split kernels *****

namespace {
bool is_empty_tag(const UOp& u) { return u.tag().is<Arg::Ints>() && u.tag().ints().empty(); }

struct LocalAddBufferContext {
  int64_t dg = 0;
  std::vector<std::pair<UOp, UOp>> map;  // insertion-ordered
  int64_t range = 0;
  std::optional<std::vector<Opt>> opts;
  bool has(const UOp& k) const { return std::any_of(map.begin(), map.end(), [&](auto& kv) { return kv.first == k; }); }
};

UOp debuf(LocalAddBufferContext& ctx, const UOp& buf) {
  if (buf.is_variable()) return buf.replace({.op = PARAM});
  Shape shape = buf.shape();
  ParamArg pa{ctx.dg, buf.dtype()};
  pa.addrspace = buf.addrspace();
  if (auto d = buf.device()) pa.device = *d;
  UOp ret = UOp::make(PARAM, buf.dtype(), {cint(prod(shape))}, Arg(pa)).reshape(shape);
  if (!ctx.has(buf)) ctx.map.push_back({buf, buf});
  ctx.dg++;
  return ret;
}

void find_bufs(const UOp& x) {
  std::unordered_map<UOp, Ops> read_from;
  for (auto& idx : x.toposort([](const UOp& u) { return u.op() != AFTER; })) {
    if (idx.op() != INDEX) continue;
    UOp buf = idx.buf_uop();
    if (buf.op() != BUFFER && buf.op() != PARAM) continue;
    auto [it, fresh] = read_from.try_emplace(buf, idx.src(0).op());
    if (!fresh && it->second != idx.src(0).op()) throw Error("cycle detected while indexing " + buf.str());
  }
}

const PatternMatcher& to_define_global() {
  static const PatternMatcher pm{
      U(STORE, {}, {}, {}, "x") >> [](M m) { find_bufs(m["x"]); return UOp(); },
      U(OpSet{BUFFER, MSTACK, MSELECT}, {}, {}, {}, "buf") >> [](M m) { return debuf(m.ctx<LocalAddBufferContext>(), m["buf"]); },
      U(PARAM, {}, {}, {}, "v") >> [](M m) {
        const UOp& v = m["v"];
        const ParamArg& pa = v.arg().param();
        if (!pa.name || !pa.vmin_vmax || pa.slot == -1) return UOp();
        ParamArg n = pa;
        n.slot = -1;
        return v.replace({.arg = Arg(n)});
      },
      // renumber the params
      U(PARAM, {}, {}, {}, "buf") >> [](M m) {
        const UOp& buf = m["buf"];
        if (!is_empty_tag(buf) || buf.arg().param().name || !buf.shape_opt()) return UOp();
        return debuf(m.ctx<LocalAddBufferContext>(), buf);
      },
      // ALU params are scalar values, not buffers
      U(INDEX, {}, {U(PARAM, {}, {}, {}, "v")}) >> [](M m) { return m["v"].addrspace() == AddrSpace::ALU ? m["v"] : UOp(); },
      // a bound Variable is an input value: strip its store
      U(AFTER, {}, {}, {}, "b") >> [](M m) { return m["b"].is_bound_var() ? m["b"].src(0) : UOp(); },
      U(AFTER, {}, {}, {}, "after") >> [](M m) {
        const UOp& after = m["after"];
        if (after.addrspace() == AddrSpace::LOCAL) return UOp();
        UOp buf = after.buf_uop();
        auto& ctx = m.ctx<LocalAddBufferContext>();
        if (!ctx.has(buf)) ctx.map.push_back({buf, after});
        return buf;
      },
      U(STAGE, {}, {}, {}, "b") >> [](M m) {
        const UOp& b = m["b"];
        const BufferizeOpts* o = bufferize_opts(b);
        if (!o) return UOp();
        BufferizeOpts n = *o;
        n.device = std::monostate{};
        return b.replace({.arg = make_arg(std::move(n))});
      },
      // renumber the ranges from 0 so equal kernels dedup
      U(RANGE, {}, {}, {}, "r") >> [](M m) {
        const UOp& r = m["r"];
        if (!is_empty_tag(r)) return UOp();
        auto& ctx = m.ctx<LocalAddBufferContext>();
        Arg::Ints a = r.arg().ints();
        a[0] = ctx.range++;
        return r.replace({.arg = Arg(a), .tag = Arg()});
      },
  };
  return pm;
}

const PatternMatcher& rangeify_codegen() {
  static const PatternMatcher pm{
      U(CONTIGUOUS, {}, {}, {}, "x") >> [](M m) { return m["x"].src(0); },
      U(NOOP, {}, {}, {}, "x") >> [](M m) { return m["x"].src().empty() ? UOp() : m["x"].src(0); },
  };
  return pm;
}

UOp split_store(const UOp& x) {
  for (auto& r : x.ranges()) if (AxisType(r.arg().ints().back()) != AxisType::DEVICE) return UOp();
  // the store of a bound Variable is an input value, not a kernel
  const UOp& st = x.op() == END ? x.src(0) : x;
  if (st.op() == STORE && st.src(0).is_variable()) return UOp();
  LocalAddBufferContext lctx;
  static const PatternMatcher pm = to_define_global() + pm_flatten_range() + rangeify_codegen();
  UOp ret = graph_rewrite(x, pm, &lctx, true);
  KernelInfo ki;
  ki.opts_to_apply = lctx.opts;
  UOp sink = UOp::make(SINK, dtypes::void_, {ret}, make_arg(std::move(ki)));
  std::vector<UOp> src{sink};
  for (auto& [k, v] : lctx.map) src.push_back(v);
  return UOp::make(CALL, dtypes::void_, src, make_arg(CallInfo{}));
}
}  // namespace

const PatternMatcher& split_kernels() {
  static const PatternMatcher pm{U(OpSet{STORE, END}, {}, {}, {}, "x") >> [](M m) { return split_store(m["x"]); }};
  return pm;
}

namespace {
UOp strip_zero_offset_shrink(const UOp& x) {
  if (x.op() != SHRINK) return x;
  for (auto& [start, _] : x.marg_pairs()) if (start != 0) return x;
  return x.src(0);
}
}  // namespace

const PatternMatcher& pm_no_indexing_calls() {
  static const PatternMatcher pm{
      U(CALL, {}, {}, {}, "u") >> [](M m) {
        const UOp& u = m["u"];
        std::vector<UOp> s;
        for (auto& x : u.src()) {
          if (x.op() == INDEX) s.push_back(x.src(0));
          else if (x.op() == SHRINK) s.push_back(strip_zero_offset_shrink(x));
          else if (x.op() == MSTACK) {
            std::vector<UOp> ms;
            for (auto& y : x.src()) ms.push_back(strip_zero_offset_shrink(y));
            s.push_back(x.replace({.src = ms}));
          } else s.push_back(x);
        }
        return u.replace({.src = s});
      },
  };
  return pm;
}

}  // namespace tg
