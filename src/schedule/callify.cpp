// callify (tinygrad's tensor.py transform_to_call): the tensor graph to realize becomes one CALL whose body stores each
// realized value into a BUFFER, with the input buffers replaced by PARAMs (so equal graphs on new buffers are equal
// CALL bodies, which is what the schedule cache keys on). `becomes` maps every as-built node to its buffer view.
#include <unordered_set>

#include "schedule/rangeify.h"
#include "schedule/schedule.h"
#include "uop/args.h"
#include "uop/symbolic.h"

namespace tg {

namespace {

struct AllocCtx {
  std::vector<UOp> uop_list;
  std::vector<std::pair<UOp, UOp>> buffer_map;
  std::unordered_set<UOp> bases, views;
  std::vector<UOp> assigns, replacements;
};

bool tagged(const UOp& u) { return !u.tag().none(); }
const Arg::Ints& tag_ints(const UOp& u) {
  static const Arg::Ints none;
  return u.tag().is<Arg::Ints>() ? u.tag().ints() : none;
}
Arg ints_tag(Arg::Ints v) { return Arg(std::move(v)); }
bool disk_like(const UOp& u) {
  auto d = u.device();
  return d && (d->starts_with("DISK") || d->starts_with("TINYFS"));
}

UOp tag_uop(AllocCtx& ctx, const UOp& x) {
  if (tagged(x)) return {};
  ctx.uop_list.push_back(x);
  return x.rtag(ints_tag({int64_t(ctx.uop_list.size() - 1)}));
}

// the BUFFER range [offset, offset+size) that `src` reads in order, as a view of its own dtype; empty if it is none
UOp make_buffer_view(const UOp& src) {
  auto cv = src.contiguous_view();
  if (!cv) return {};
  auto& [buf, offset] = *cv;
  if (buf.op() != Ops::BUFFER) return {};
  int64_t size = src.max_numel() * src.element_size() / buf.element_size();
  return buf.shrink({{offset, offset + size}}).bitcast(src.dtype());
}

UOp contiguous_mops_to_view(AllocCtx& ctx, const UOp& c, const UOp& src) {
  if (src.has_sym_shape() || c.has_sym_shape()) return {};  // a symbolic view is a kernel
  UOp buf = src.base();
  while (buf.op() == Ops::BITCAST) buf = buf.src(0).base();
  if (buf.op() != Ops::BUFFER) return {};
  UOp view = make_buffer_view(src);
  if (!view) return {};
  ctx.views.insert(view);
  view = view.reshape(c.shape());
  if (c.op() == Ops::COPY || c.op() == Ops::STORE) {
    std::vector<UOp> s{view};
    s.insert(s.end(), c.src().begin() + 1, c.src().end());
    return c.replace({.src = s});
  }
  return view;
}

const PatternMatcher& add_tags() {
  static const PatternMatcher pm{
      UPat(Ops::COPY, {}, {}, {}, "u") >> [](M m) -> UOp {
        auto& ctx = m.ctx<AllocCtx>();
        UOp u = m["u"];
        if (disk_like(u) && !tagged(u)) {
          ctx.buffer_map.push_back({u, u.empty_like()});
          return u.rtag(ints_tag({}));
        }
        auto d = u.src(0).device();
        if (d && (d->starts_with("NPY") || d->starts_with("DISK") || d->starts_with("PYTHON") || d->starts_with("TINYFS")))
          return tag_uop(ctx, u);
        return {};
      },
      UPat(Ops::AFTER, {}, {UPat(), UPat(Ops::STORE, {}, {UPat::var("dest"), UPat(Ops::COPY, {}, {}, {}, "c", true)})}, {}, "a") >>
          [](M m) -> UOp {
        UOp a = m["a"], c = m["c"];
        if (tag_ints(a).empty() || tag_ints(c).empty()) return {};
        Arg::Ints t = tag_ints(a);
        for (auto i : tag_ints(c)) t.push_back(i);
        return a.replace({.src = std::vector<UOp>{a.src(0), a.src(1).replace({.src = std::vector<UOp>{m["dest"], c.rtag(ints_tag({}))}})},
                          .tag = ints_tag(t)});
      },
      UPat(OpSet{Ops::CONTIGUOUS, Ops::AFTER}, {}, {}, {}, "x", true) >> [](M m) { return tag_uop(m.ctx<AllocCtx>(), m["x"]); },
      UPat::ops(GroupOp::All, "x") >> [](M m) {
        auto& ctx = m.ctx<AllocCtx>();
        return ctx.bases.contains(m["x"]) ? tag_uop(ctx, m["x"]) : UOp();
      },
  };
  return pm;
}

UOp replace_contig_with_store_after(const UOp& u) {
  if (u.is_virtual()) return {};
  for (auto& s : u.sym_shape())
    if (s.op() == Ops::CONST && s.val().i == 0) return u.src(0);
  if (disk_like(u)) return u.rtag(Arg());
  UOp buf = u.empty_like();
  return buf.after({buf.store(u.src(0))}).rtag(u.tag());
}

const PatternMatcher& early_transform() {
  static const PatternMatcher pm{
      // movement ops over a BUFFER that read one contiguous range become a view of it (no kernel)
      UPat(OpSet{Ops::COPY, Ops::CONTIGUOUS}, {}, {UPat::ops(GroupOp::Movement | OpSet{Ops::BITCAST}, "src")}, {}, "c") >>
          [](M m) { return contiguous_mops_to_view(m.ctx<AllocCtx>(), m["c"], m["src"]); },
      UPat(Ops::STORE, {}, {UPat(Ops::BITCAST, {}, {}, {}, "src", true), UPat()}, {}, "c", true) >>
          [](M m) { return contiguous_mops_to_view(m.ctx<AllocCtx>(), m["c"], m["src"]); },
      // DISK runs no kernels: a permute/expand/pad/flip of a DISK tensor is not made contiguous there; the COPY moves its
      // source instead and the movement op runs on the destination device. Unlike tinygrad, the copy's tag moves onto
      // the movement op, so realizing the tensor computes it (tinygrad drops the tag and leaves such a tensor lazy)
      UPat(Ops::COPY, {}, {UPat(Ops::CONTIGUOUS, {}, {UPat::ops(GroupOp::Movement - OpSet{Ops::SHRINK, Ops::RESHAPE}, "x")})}, {}, "copy") >>
          [](M m) { return disk_like(m["x"]) ? m["copy"].replace({.src = std::vector{m["x"]}}) : UOp(); },
      UPat(Ops::COPY, {}, {UPat::ops(GroupOp::Movement - OpSet{Ops::SHRINK, Ops::RESHAPE}, "x")}, {}, "copy") >> [](M m) -> UOp {
        UOp x = m["x"], copy = m["copy"];
        if (!disk_like(x)) return {};
        std::vector<UOp> s{copy.replace({.src = std::vector{x.src(0)}, .tag = Arg()})};
        s.insert(s.end(), x.src().begin() + 1, x.src().end());
        return x.replace({.src = s, .tag = copy.tag()});
      },
      // every tagged node (a value to realize) gets a CONTIGUOUS carrying the tag
      UPat::ops(GroupOp::All - OpSet{Ops::CONTIGUOUS, Ops::AFTER, Ops::STORE}, "x") >> [](M m) -> UOp {
        UOp x = m["x"];
        if (!tagged(x)) return {};
        if (!tag_ints(x).empty()) return x.rtag(Arg()).contiguous().rtag(x.tag());
        return x.rtag(Arg());
      },
      UPat(Ops::CONTIGUOUS, {}, {UPat(Ops::AFTER, {}, {}, {}, "a", true)}, {}, "c") >> [](M m) -> UOp {
        UOp a = m["a"], c = m["c"];
        if (!a.src(0).has_buffer_identity()) return {};
        Arg::Ints t = tag_ints(a);
        for (auto i : tag_ints(c)) t.push_back(i);
        return a.rtag(ints_tag(t));
      },
      UPat(Ops::AFTER, {}, {UPat(), UPat(Ops::STORE, {}, {UPat(), UPat::var("src")})}, {}, "u") >> [](M m) -> UOp {
        UOp assigned_to = m["u"];
        while (OpSet{Ops::BITCAST, Ops::AFTER, Ops::UNSHARD}.has(assigned_to.op())) assigned_to = assigned_to.src(0).base();
        if (assigned_to.op() != Ops::BUFFER) return m["src"].contiguous().rtag(m["u"].tag());
        return {};
      },
      UPat(Ops::CONTIGUOUS, {}, {}, {}, "u", true) >> [](M m) { return replace_contig_with_store_after(m["u"]); },
      UPat(OpSet{Ops::DETACH, Ops::CONTIGUOUS_BACKWARD}, {}, {}, {}, "x", true) >> [](M m) { return m["x"].src(0); },
  };
  return pm;
}

const PatternMatcher& finalize_call() {
  static const PatternMatcher pm{
      UPat(Ops::AFTER, {}, {}, {}, "x", true) >> [](M m) -> UOp {
        auto& ctx = m.ctx<AllocCtx>();
        UOp x = m["x"];
        if (x.is_bound_var()) return {};
        if (!tagged(x)) { ctx.assigns.push_back(x); return {}; }
        UOp ret = x.rtag(Arg()), replace_uop = ret;
        // the realized value is the buffer seen through the same views the AFTER was wrapped in
        std::vector<UOp> views;
        while ((GroupOp::Movement | OpSet{Ops::UNSHARD, Ops::BITCAST, Ops::AFTER}).has(replace_uop.op())) {
          if (replace_uop.op() != Ops::AFTER) views.push_back(replace_uop);
          replace_uop = replace_uop.src(0);
        }
        for (auto it = views.rbegin(); it != views.rend(); ++it) {
          std::vector<UOp> s{replace_uop};
          s.insert(s.end(), it->src().begin() + 1, it->src().end());
          replace_uop = it->replace({.src = s});
        }
        for (auto t : tag_ints(x)) {
          const UOp& original = ctx.uop_list[size_t(t)];
          std::vector<std::pair<UOp, UOp>> se;
          for (auto& d : original.sym_shape()) se.push_back({UOp::const_(int64_t(0)), d});
          ctx.buffer_map.push_back({original, replace_uop.shrink_sym(se)});
        }
        return ret;
      },
      UPat(Ops::COPY, {}, {}, {}, "x", true) >> [](M m) -> UOp {
        if (disk_like(m["x"])) m.ctx<AllocCtx>().assigns.push_back(m["x"]);
        return {};
      },
  };
  return pm;
}

UOp replace_input_buffer(AllocCtx& ctx, const UOp& b) {
  ctx.replacements.push_back(b);
  int64_t slot = int64_t(ctx.replacements.size() - 1);
  if (b.is_bound_var() || b.is_variable()) return b.param_like(slot);
  return UOp::param(slot, b.dtype(), b.shape(), b.device(), b.addrspace().value_or(AddrSpace::GLOBAL));
}

const PatternMatcher& replace_buf() {
  static const PatternMatcher pm{
      UPat(Ops::BUFFER, {}, {UPat()}, {}, "b") >> [](M m) -> UOp {
        UOp b = m["b"];
        if (!b.arg().is<std::shared_ptr<const ParamArg>>() || b.addrspace() != AddrSpace::GLOBAL) return {};
        return replace_input_buffer(m.ctx<AllocCtx>(), b);
      },
      UPat(Ops::SHRINK, {}, {UPat(Ops::BUFFER)}, {}, "b", true) >> [](M m) {
        auto& ctx = m.ctx<AllocCtx>();
        return ctx.views.contains(m["b"]) ? replace_input_buffer(ctx, m["b"]) : UOp();
      },
      UPat(Ops::BITCAST, {}, {UPat::any({UPat(Ops::SHRINK, {}, {UPat(Ops::BUFFER)}, {}, "", true), UPat(Ops::BUFFER)})}, {}, "b") >>
          [](M m) {
        auto& ctx = m.ctx<AllocCtx>();
        return ctx.views.contains(m["b"]) ? replace_input_buffer(ctx, m["b"]) : UOp();
      },
      UPat(Ops::AFTER, {}, {}, {}, "b", true) >> [](M m) {
        return m["b"].is_bound_var() ? replace_input_buffer(m.ctx<AllocCtx>(), m["b"]) : UOp();
      },
  };
  return pm;
}

}  // namespace

Callified transform_to_call(const UOp& big_sink) {
  AllocCtx ctx;
  for (auto& x : big_sink.src()) {
    UOp base = x.base();
    if (!base.is_virtual() && !base.has_buffer_identity() && base.op() != Ops::AFTER && base.addrspace() != AddrSpace::ALU)
      ctx.bases.insert(base);
  }
  UOp sink = graph_rewrite(big_sink, add_tags(), &ctx, true);
  sink = graph_rewrite(sink, early_transform(), &ctx);
  graph_rewrite(sink, finalize_call(), &ctx);
  UOp body = graph_rewrite(UOp::sink(ctx.assigns), replace_buf(), &ctx, true);
  std::vector<UOp> call_src{body};
  call_src.insert(call_src.end(), ctx.replacements.begin(), ctx.replacements.end());
  return {UOp::make(Ops::CALL, dtypes::void_, call_src, Arg(std::make_shared<const CallInfo>())), std::move(ctx.buffer_map)};
}

}  // namespace tg
