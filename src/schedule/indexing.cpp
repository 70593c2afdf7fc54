// Rangeify (tinygrad's schedule/indexing.py): 1. the realize map, 2. broadcast axes, 3. the range assignment walk
// (consumers before producers), 4. applying the ranges (STAGE/INDEX/REDUCE with ranges).
#include "schedule/indexing.h"

#include <algorithm>

#include "uop/movement.h"
#include "uop/symbolic.h"

namespace tg {

namespace {
using enum Ops;
constexpr OpSet ALWAYS_CONTIGUOUS{CONTIGUOUS, AFTER, BUFFER, CONST, MSELECT, MSTACK, PARAM, LOAD, CALL, FUNCTION};

bool contains(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }
bool contains(const std::vector<UOp>& v, const UOp& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

bool gate_kernel_sink(const UOp& x) { return !(x.op() == LINEAR || (x.op() == SINK && kernel_info(x))); }

Arg stage_opts(std::optional<std::string> device, AddrSpace addrspace, bool removable) {
  BufferizeOpts o;
  if (device) o.device = *device;
  o.addrspace = addrspace;
  o.removable = removable;
  return make_arg(std::move(o));
}

// a node's device as tinygrad's UOp.device, where STAGE reads its opts
std::optional<std::string> node_device(const UOp& u) {
  if (u.op() == STAGE) if (auto* o = bufferize_opts(u)) {
    if (auto* s = std::get_if<std::string>(&o->device)) return *s;
    return std::nullopt;
  }
  return u.device();
}
}  // namespace

UOp IndexingContext::new_range(int64_t s, AxisType axistype) {
  if (s == 1) return UOp::const_(int64_t(0));
  return UOp::range(s, range_idx++, axistype);
}
UOp IndexingContext::new_range(const UOp& s, AxisType axistype) {
  if (s.op() == CONST) return new_range(s.val().i, axistype);
  return UOp::range(s, range_idx++, axistype);
}

// ***** 1. what is realized *****

namespace {
void realize_custom_kernel_srcs(IndexingContext& ctx, const UOp& c) {
  for (size_t i = 1; i < c.src().size(); i++) {
    UOp s = c.src(i);
    while (s.op() == RESHAPE) s = s.src(0);
    if (!ALWAYS_CONTIGUOUS.has(s.op())) {
      ctx.realize_map[s] = std::nullopt;
      ctx.non_removable.insert(s);
    }
  }
}

const PatternMatcher& pm_generate_realize_map() {
  static const PatternMatcher pm{
      UPat(CALL, {}, {UPat(OpSet{SINK, PROGRAM})}, {}, "c", true) >> [](M m) {
        realize_custom_kernel_srcs(m.ctx<IndexingContext>(), m["c"]);
        return UOp();
      },
      UPat(OpSet{CONTIGUOUS, STORE}, {}, {}, {}, "tr") >> [](M m) {
        m.ctx<IndexingContext>().realize_map[m["tr"]] = std::nullopt;
        return UOp();
      },
      UPat(OpSet{MSELECT, MSTACK}, {}, {}, {}, "rb") >> [](M m) {
        for (auto& s : m["rb"].src()) if (!ALWAYS_CONTIGUOUS.has(s.base().op())) m.ctx<IndexingContext>().realize_map[s] = std::nullopt;
        return UOp();
      },
      // a STORE whose value reads its own destination (a WAR hazard) realizes the value first
      UPat(STORE, {}, {UPat::var("dest"), UPat::var("src")}) >> [](M m) {
        UOp base = m["dest"].base();
        for (auto& x : m["src"].toposort(nullptr, false))
          if (x == base) { m.ctx<IndexingContext>().realize_map[m["src"]] = std::nullopt; break; }
        return UOp();
      },
  };
  return pm;
}
}  // namespace

// ***** 2. broadcast axes (movement ops as index math: apply_movement_op in uop/movement.cpp) *****

std::vector<int64_t> broadcast_axes(const Shape& src_shape, const Shape& out_shape) {
  int64_t nleft = int64_t(out_shape.size()) - int64_t(src_shape.size());
  if (nleft < 0) throw Error("cannot broadcast " + shape_str(src_shape) + " into " + shape_str(out_shape));
  std::vector<int64_t> r;
  for (int64_t i = 0; i < nleft; i++) r.push_back(i);
  for (size_t i = 0; i < src_shape.size(); i++)
    if (src_shape[i] == 1 && out_shape[nleft + i] != 1) r.push_back(nleft + int64_t(i));
  return r;
}
std::vector<int64_t> broadcast_axes(const UOp& src, const UOp& out) {
  if (!src.has_sym_shape() && !out.has_sym_shape()) return broadcast_axes(src.shape(), out.shape());
  const SShape &ss = src.sym_shape(), &os = out.sym_shape();
  int64_t nleft = int64_t(os.size()) - int64_t(ss.size());
  if (nleft < 0) throw Error("cannot broadcast " + sym_shape_str(ss) + " into " + sym_shape_str(os));
  auto is1 = [](const UOp& d) { return d.op() == CONST && d.val().i == 1; };
  std::vector<int64_t> r;
  for (int64_t i = 0; i < nleft; i++) r.push_back(i);
  for (size_t i = 0; i < ss.size(); i++)
    if (is1(ss[i]) && !is1(os[size_t(nleft) + i])) r.push_back(nleft + int64_t(i));
  return r;
}

// ***** 3. the range assignment *****

namespace {
std::vector<UOp> data_srcs(const UOp& x) {
  auto s = x.src();
  switch (x.op()) {
    case PARAM: case BUFFER: case RANGE: case SPECIAL: return {};
    default: break;
  }
  if (x.op() == STORE && s[0].is_variable()) return {};
  if (GroupOp::Movement.has(x.op()) || OpSet{INDEX, STAGE, REDUCE, AFTER, END}.has(x.op())) return {s.begin(), s.begin() + std::min<size_t>(1, s.size())};
  return {s.begin(), s.end()};
}

std::vector<UOp> broadcast_rngs(const UOp& x, const UOp& src, const std::vector<UOp>& rngs) {
  if (!GroupOp::Broadcastable.has(x.op())) return rngs;
  auto baxes = broadcast_axes(src, x);
  size_t nleft = x.sym_shape().size() - src.sym_shape().size();
  std::vector<UOp> r;
  for (size_t j = nleft; j < rngs.size(); j++) r.push_back(contains(baxes, int64_t(j)) ? UOp::const_(int64_t(0), rngs[j].dtype()) : rngs[j]);
  return r;
}

bool all_same(const std::vector<UOp>& v) { return std::all_of(v.begin(), v.end(), [&](const UOp& x) { return x == v[0]; }); }

void assign_ranges(IndexingContext& rctx, const UOp& tsink) {
  std::vector<UOp> topo = tsink.toposort(gate_kernel_sink);
  // consumer map, each node's consumers in toposort order
  std::unordered_map<UOp, std::vector<UOp>> consumer_map;
  for (auto& x : topo) consumer_map[x];
  for (auto& c : topo)
    for (auto& x : data_srcs(c))
      if (auto it = consumer_map.find(x); it != consumer_map.end() && !contains(it->second, c)) it->second.push_back(c);

  std::unordered_map<UOp, std::vector<UOp>> ending_ranges;
  for (auto xi = topo.rbegin(); xi != topo.rend(); ++xi) {
    const UOp& x = *xi;
    if (OpSet{CALL, FUNCTION, LINEAR, AFTER, MSTACK, MSELECT}.has(x.op())) continue;
    const auto& consumers = consumer_map[x];
    std::vector<UOp> er;
    for (auto& u : consumers) if (auto it = ending_ranges.find(u); it != ending_ranges.end()) er.insert(er.end(), it->second.begin(), it->second.end());
    ending_ranges[x] = er;
    // ranges the consumers iterate that this node broadcasts over
    std::vector<UOp> ended;
    for (auto& c : consumers) {
      auto it = rctx.range_map.find(c);
      if (it == rctx.range_map.end() || !GroupOp::Broadcastable.has(c.op())) continue;
      for (auto i : broadcast_axes(x, c)) ended.push_back(it->second.first[i]);
    }
    std::vector<UOp> broadcast_ending_ranges = UOp::sink(ended).ranges();
    // fusion decision: a REDUCE ends before the broadcast
    if (x.op() == REDUCE) ending_ranges[x].insert(ending_ranges[x].end(), broadcast_ending_ranges.begin(), broadcast_ending_ranges.end());

    std::vector<std::vector<UOp>> consumer_rngs;
    for (auto& c : consumers)
      if (auto it = rctx.range_map.find(c); it != rctx.range_map.end()) consumer_rngs.push_back(broadcast_rngs(c, x, it->second.first));

    std::vector<UOp> out_rngs;
    auto rit = rctx.realize_map.find(x);
    if (rit != rctx.realize_map.end()) {
      // realized: new ranges at the output, every axis closes here
      for (auto& s : x.sym_shape()) out_rngs.push_back(rctx.new_range(s));
      ending_ranges[x].clear();
      if (rit->second) internal_error("rangeify: " + std::string(op_name(x.op())) + " realized twice");
      std::vector<int64_t> all;
      for (size_t i = 0; i < x.sym_shape().size(); i++) all.push_back(int64_t(i));
      rit->second = all;
    } else if (consumer_rngs.empty()) {
      continue;
    } else if (consumer_rngs.size() == 1) {
      out_rngs = consumer_rngs[0];
    } else {
      // several consumers: axes where they all index the same way keep that index (valid where any consumer is);
      // the others get new ranges and are realized
      size_t naxes = consumer_rngs[0].size();
      for (auto& c : consumer_rngs) naxes = std::min(naxes, c.size());
      std::vector<std::pair<std::vector<UOp>, std::vector<UOp>>> rngs_valids;
      for (size_t i = 0; i < naxes; i++) {
        std::vector<UOp> local, valids;
        for (auto& c : consumer_rngs) { local.push_back(c[i].get_idx()); valids.push_back(c[i].get_valid()); }
        rngs_valids.push_back({local, valids});
      }
      bool all_all_same = std::all_of(rngs_valids.begin(), rngs_valids.end(), [](auto& lv) { return all_same(lv.first); });
      std::vector<int64_t> realize_axis;
      for (size_t i = 0; i < rngs_valids.size(); i++) {
        auto& [local, valids] = rngs_valids[i];
        if (all_all_same) {
          UOp minimum_valid = UOp::const_(false).usum(valids);
          out_rngs.push_back(graph_rewrite(local[0].valid(minimum_valid), symbolic()));
        } else {
          out_rngs.push_back(rctx.new_range(x.sym_shape()[i]));
          realize_axis.push_back(int64_t(i));
        }
      }
      if (!realize_axis.empty()) rctx.realize_map[x] = realize_axis;
    }

    // an elementwise op or REDUCE where ranges end: the open axes must be realized
    if (!ending_ranges[x].empty() && (GroupOp::Elementwise.has(x.op()) || x.op() == REDUCE)) {
      std::vector<int64_t> realize_axis;
      if (auto it = rctx.realize_map.find(x); it != rctx.realize_map.end() && it->second) realize_axis = *it->second;
      for (size_t i = 0; i < out_rngs.size(); i++) if (!contains(realize_axis, int64_t(i))) realize_axis.push_back(int64_t(i));
      ending_ranges[x].clear();
      if (!realize_axis.empty()) {
        rctx.realize_map[x] = realize_axis;
        for (size_t i = 0; i < out_rngs.size(); i++) if (contains(realize_axis, int64_t(i))) out_rngs[i] = rctx.new_range(x.sym_shape()[i]);
      }
    }
    ending_ranges[x].insert(ending_ranges[x].end(), broadcast_ending_ranges.begin(), broadcast_ending_ranges.end());

    // the input ranges: movement ops move them, REDUCE adds its reduce ranges, everything else passes them through
    std::vector<UOp> rngs = out_rngs;
    if (GroupOp::Movement.has(x.op()))
      rngs = is_symbolic_mop(x) ? apply_movement_op_sym(x, out_rngs) : apply_movement_op(x.op(), x.src(0).shape(), MovementArg::of(x), out_rngs);
    if (x.op() == STACK) rngs.assign(out_rngs.begin() + 1, out_rngs.end());
    // an EXPAND that does not inject a range ends the ranges it broadcasts (why convs are realized)
    if (x.op() == EXPAND) {
      size_t n = std::min(as_sym_shape(x.src(1)).size(), out_rngs.size());
      auto e = UOp::sink(std::vector<UOp>(out_rngs.begin(), out_rngs.begin() + n)).ranges();
      ending_ranges[x].insert(ending_ranges[x].end(), e.begin(), e.end());
    }
    if (x.op() == REDUCE && x.arg().ints()[1]) {
      std::vector<UOp> r;
      const SShape& ss = x.src(0).sym_shape();
      for (int64_t i = 0; i < x.arg().ints()[1]; i++) r.push_back(rctx.new_range(ss[size_t(i)], AxisType::REDUCE));
      r.insert(r.end(), out_rngs.begin(), out_rngs.end());
      rngs = r;
    }
    rctx.range_map[x] = {rngs, out_rngs};
  }
}

// ***** 4. applying the ranges *****

std::vector<UOp> create_bufferize_and_index_srcs(IndexingContext& ctx, const UOp& x) {
  std::vector<UOp> new_srcs;
  size_t data_src_count = data_srcs(x).size();
  auto xr = ctx.range_map.find(x);
  bool has_x = xr != ctx.range_map.end();
  for (size_t i = 0; i < x.src().size(); i++) {
    const UOp& s = x.src(i);
    UOp new_src = s;
    std::vector<UOp> src_rngs = has_x ? broadcast_rngs(x, s, xr->second.first) : std::vector<UOp>{};
    if (OpSet{PARAM, BUFFER, MSTACK, MSELECT, AFTER}.has(s.op())) {
      if (has_x && i < data_src_count) new_src = new_src.index(src_rngs);
    } else if (auto rit = ctx.realize_map.find(s); rit != ctx.realize_map.end()) {
      if (!rit->second) internal_error("rangeify: realize map must hold a range list");
      std::vector<int64_t> realized = *rit->second;
      const auto& s_out = ctx.range_map.at(s).second;
      std::vector<UOp> closed;
      for (size_t k = 0; k < s_out.size(); k++) if (contains(realized, int64_t(k))) closed.push_back(s_out[k]);
      if (s.op() == STORE) {
        std::vector<UOp> ends;
        for (auto& r : closed) if (r.op() == RANGE) ends.push_back(r);
        new_src = s.end(ends);
        ctx.realize_map.erase(rit);
      } else {
        bool removable = !ALWAYS_CONTIGUOUS.has(s.op()) && !ctx.non_removable.contains(s);
        bool full = s_out.size() == realized.size();
        new_src = new_src.bufferize(closed, stage_opts(node_device(s), full ? AddrSpace::GLOBAL : AddrSpace::LOCAL, removable));
        if (has_x) {
          std::vector<UOp> idx;
          for (size_t k = 0; k < src_rngs.size(); k++) if (contains(realized, int64_t(k))) idx.push_back(src_rngs[k]);
          new_src = new_src.index(idx);
        }
      }
    }
    new_srcs.push_back(new_src);
  }
  return new_srcs;
}

UOp create_bufferize_and_index_based_on_ranges(IndexingContext& ctx, const UOp& x) {
  if (x.op() == STAGE || x.op() == INDEX) return UOp();
  return x.replace({.src = create_bufferize_and_index_srcs(ctx, x)});
}

const PatternMatcher& pm_apply_rangeify() {
  static const PatternMatcher pm{
      UPat(REDUCE, {}, {}, {}, "x") >> [](M m) {
        auto& ctx = m.ctx<IndexingContext>();
        const UOp& x = m["x"];
        if (x.arg().ints()[1] == 0) return UOp();
        auto it = ctx.range_map.find(x);
        if (it == ctx.range_map.end()) throw Error("REDUCE has no ranges in rangeify, UOp verification failed");
        std::vector<UOp> rngs(it->second.first.begin(), it->second.first.begin() + x.arg().ints()[1]);
        UOp bx = create_bufferize_and_index_based_on_ranges(ctx, x);
        std::vector<UOp> src{bx.src(0)};
        src.insert(src.end(), rngs.begin(), rngs.end());
        return UOp::make(REDUCE, bx.src(0).dtype(), src, Arg{x.arg().ints()[0], 0});
      },
      UPat(PAD, {}, {}, {}, "x") >> [](M m) {
        auto& ctx = m.ctx<IndexingContext>();
        const UOp& x = m["x"];
        auto it = ctx.range_map.find(x);
        if (it == ctx.range_map.end()) return UOp();
        std::vector<UOp> valids;
        for (auto& r : it->second.first) valids.push_back(r.get_valid());
        UOp bx = create_bufferize_and_index_based_on_ranges(ctx, x);
        UOp valid = UOp::const_(true).uprod(valids);
        return valid.where(bx.src(0), UOp::const_(x.dtype().const_(int64_t(0))));
      },
      UPat(STACK, {}, {}, {}, "x") >> [](M m) {
        auto& ctx = m.ctx<IndexingContext>();
        const UOp& x = m["x"];
        auto it = ctx.range_map.find(x);
        if (it == ctx.range_map.end() || x.dtype() == dtypes::void_) return UOp();
        std::vector<UOp> srcs = create_bufferize_and_index_srcs(ctx, x);
        UOp r0 = it->second.second[0];
        // tinygrad's chain of r0==k selects; past 32 sources a balanced tree of r0<mid selects, so a cat of thousands
        // of pieces is log-deep (a linear chain overflows the stack of every recursive walk)
        auto select = [&](auto& self, size_t lo, size_t hi) -> UOp {
          if (hi - lo == 1) return srcs[lo];
          if (srcs.size() <= 32) return r0.eq(UOp::const_(int64_t(lo))).where(srcs[lo], self(self, lo + 1, hi));
          size_t mid = lo + (hi - lo) / 2;
          return r0.alu(Ops::CMPLT, {UOp::const_(int64_t(mid))}).where(self(self, lo, mid), self(self, mid, hi));
        };
        return select(select, 0, srcs.size());
      },
      UPat::ops(GroupOp::All, "x") >> [](M m) { return create_bufferize_and_index_based_on_ranges(m.ctx<IndexingContext>(), m["x"]); },
      UPat::ops(GroupOp::Movement, "x") >> [](M m) {
        const UOp& x = m["x"];
        if (m.ctx<IndexingContext>().range_map.contains(x) || x.src(0).op() == INDEX) return x.src(0);
        return UOp();
      },
  };
  return pm;
}
}  // namespace

UOp run_rangeify(const UOp& tsink_in) {
  IndexingContext rctx;
  graph_rewrite(tsink_in, pm_generate_realize_map(), &rctx);
  assign_ranges(rctx, tsink_in);
  UOp tsink = graph_rewrite(tsink_in, pm_apply_rangeify(), &rctx, true);
  // a deviceless value that must be stored goes to the sink's device
  std::optional<std::string> dev = tsink.device();
  static const PatternMatcher pm_fix_deviceless{
      UPat(STAGE, {}, {}, {}, "b") >> [](M m) {
        const UOp& b = m["b"];
        auto* o = bufferize_opts(b);
        auto* d = &m.ctx<std::optional<std::string>>();
        if (!o || o->addrspace != AddrSpace::GLOBAL || !std::holds_alternative<std::monostate>(o->device) || !*d) return UOp();
        BufferizeOpts n = *o;
        n.device = **d;
        return b.replace({.arg = make_arg(std::move(n))});
      },
  };
  return graph_rewrite(tsink, pm_fix_deviceless, RewriteOpts{.ctx = &dev, .ctx_read_only = true});
}

}  // namespace tg
