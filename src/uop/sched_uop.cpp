// Scheduler-level UOp helpers: range bookkeeping (tinygrad's UOp.ranges / ended_ranges), gated toposort, substitute
// with an extra matcher, and the small builders rangeify uses.
#include <algorithm>

#include "uop/movement.h"
#include "uop/nodemap.h"
#include "uop/symbolic.h"

namespace tg {

namespace {
// the ranges of the sources minus the ended ones, without the node itself (tinygrad's _ranges)
const std::vector<UOp>& own_ranges(const UOp& u);

// a node sits in few ranges: vectors and linear scans, no hash sets
std::vector<UOp> compute_ranges(const UOp& u) {
  std::vector<UOp> ret, drop;
  auto add = [&](const UOp& r) { if (std::find(ret.begin(), ret.end(), r) == ret.end()) ret.push_back(r); };
  for (auto& s : u.src()) {
    if (s.op() == Ops::RANGE) add(s);
    for (auto& r : own_ranges(s)) add(r);
  }
  for (auto& er : u.ended_ranges()) {
    if (er.op() == Ops::RANGE) drop.push_back(er);
    else for (auto& r : er.ranges()) drop.push_back(r);
  }
  if (!drop.empty()) std::erase_if(ret, [&](const UOp& r) { return std::find(drop.begin(), drop.end(), r) != drop.end(); });
  return ret;
}

const std::vector<UOp>& own_ranges(const UOp& u) {
  const UOpNode* n = u.get();
  if (n->cache && n->cache->ranges) return *n->cache->ranges;
  // fill the sources first without recursion (deep graphs)
  std::vector<std::pair<UOp, bool>> stack{{u, false}};
  while (!stack.empty()) {
    auto [x, visited] = stack.back();
    stack.pop_back();
    const UOpNode* xn = x.get();
    if (xn->cache && xn->cache->ranges) continue;
    if (!visited) {
      stack.push_back({x, true});
      for (auto& s : x.src()) if (!(s.get()->cache && s.get()->cache->ranges)) stack.push_back({s, false});
      // ended_ranges of a non-RANGE need that node's ranges too: they are among the sources, so already pushed
      continue;
    }
    std::vector<UOp> r = compute_ranges(x);
    xn->props();
    xn->cache->ranges = std::move(r);
  }
  return *n->cache->ranges;
}
}  // namespace

std::vector<UOp> UOp::ranges() const {
  if (op() != Ops::RANGE) return own_ranges(*this);
  std::vector<UOp> ret{*this};
  for (auto& r : own_ranges(*this)) if (r != *this) ret.push_back(r);
  return ret;
}

std::vector<UOp> UOp::ended_ranges() const {
  if (int st = range_start(op()); st >= 0) return {src().begin() + std::min<size_t>(st, src().size()), src().end()};
  std::vector<UOp> ret;
  if (op() == Ops::AFTER) {
    for (size_t i = 1; i < src().size(); i++) { auto e = src(i).ended_ranges(); ret.insert(ret.end(), e.begin(), e.end()); }
  } else if (op() == Ops::UNSHARD) {
    ret.assign(src().begin() + 1, src().end());
  }
  return ret;
}

std::vector<UOp> UOp::toposort(const std::function<bool(const UOp&)>& gate, bool enter_calls) const {
  std::vector<UOp> out;
  NodeMap<bool> done;
  std::vector<std::pair<UOp, bool>> stack{{*this, false}};
  while (!stack.empty()) {
    auto [node, visited] = stack.back();
    stack.pop_back();
    if (done.contains(node)) continue;
    if (!visited) {
      if (!gate || gate(node)) {
        stack.push_back({node, true});
        bool skip_body = !enter_calls && (node.op() == Ops::CALL || node.op() == Ops::FUNCTION);
        for (size_t i = node.src().size(); i-- > (skip_body ? 1u : 0u);) stack.push_back({node.src(i), false});
      }
    } else {
      done.try_emplace(node);
      out.push_back(node);
    }
  }
  return out;
}

std::vector<UOp> UOp::backward_slice() const {
  std::vector<UOp> r = toposort();
  r.pop_back();
  return r;
}

UOp UOp::substitute(const std::unordered_map<UOp, UOp>& dvars) const { return substitute_rewrite(*this, dvars); }

UOp UOp::substitute(const std::unordered_map<UOp, UOp>& dvars, const PatternMatcher* extra_pm, bool walk) const {
  if (!extra_pm && !walk) return substitute_rewrite(*this, dvars);
  std::unordered_map<UOp, UOp> d;
  for (auto& [k, v] : dvars) if (k != v) d.emplace(k, v);
  if (d.empty()) return *this;
  static const PatternMatcher subst{UPat::ops(GroupOp::All, "x") >> [](M m) {
    auto& dv = m.ctx<const std::unordered_map<UOp, UOp>>();
    auto it = dv.find(m["x"]);
    return it == dv.end() ? UOp() : it->second;
  }};
  static std::unordered_map<const PatternMatcher*, PatternMatcher> combined;
  const PatternMatcher* pm = &subst;
  if (extra_pm) {
    auto it = combined.find(extra_pm);
    if (it == combined.end()) it = combined.emplace(extra_pm, *extra_pm + subst).first;
    pm = &it->second;
  }
  RewriteOpts o{.bottom_up = true, .ctx = &d};
  o.walk = walk;
  return graph_rewrite(*this, *pm, o);
}

UOp UOp::f(Ops op, const Arg& arg) const { return make(op, dtype(), {*this}, arg); }

UOp UOp::bufferize(Srcs rngs, const Arg& opts) const {
  std::vector<UOp> s{*this};
  s.insert(s.end(), rngs.begin(), rngs.end());
  return make(Ops::STAGE, dtype(), s, opts);
}

UOp UOp::reduce(Srcs rngs, Ops op) const {
  std::vector<UOp> s{*this};
  s.insert(s.end(), rngs.begin(), rngs.end());
  return make(Ops::REDUCE, dtype(), s, Arg{int64_t(op), 0});
}

UOp UOp::const_like_shaped(ConstVal v) const {
  UOp ret = const_(v, dtype());
  if (has_sym_shape()) {
    const SShape& s = sym_shape();
    return make(Ops::EXPAND, ret.dtype(), {ret, s.size() == 1 ? s[0] : stack(s)});
  }
  const auto& sh = shape_opt();
  if (sh && !sh->empty()) return ret.mop(Ops::EXPAND, *sh);
  return ret;
}

int64_t UOp::numel() const {
  int64_t n = 1;
  for (auto s : shape()) n *= s;
  return n;
}

UOp UOp::unsharded_base() const {
  if (GroupOp::Movement.has(op()) || op() == Ops::DETACH || op() == Ops::UNSHARD) return src(0).base();
  return *this;
}

// index the flattened value with one RANGE, push the index through the movement ops (pm_mops) and see whether it lands
// on buffer[range + c]; the tag marks the node the walk reached
std::optional<std::pair<UOp, int64_t>> UOp::contiguous_view() const {
  // WEBGPU and CL have no usable buffer views
  if (auto d = device(); d && (d->starts_with("WEBGPU") || d->starts_with("CL"))) return std::nullopt;
  using enum Ops;
  static const PatternMatcher pm_contiguous_view_offset{
      UPat(BITCAST, {}, {}, {}, "b") >> [](M m) {
        const UOp& b = m["b"];
        return b.shape().size() != 1 ? b.src(0).flatten().bitcast(b.dtype()).reshape(b.shape()) : UOp();
      },
      UPat(BITCAST, {}, {}, {}, "b").index({UPat::cvar("c")}) >> [](M m) {
        const UOp& b = m["b"];
        if (b.tag().none()) return UOp();
        int64_t osz = b.element_size(), isz = b.src(0).element_size(), n = m.ctx<const UOp>().numel();
        return b.src(0).flatten().index({UOp::range(n * osz / isz, 0) + m["c"] * osz / isz});
      },
      UPat(INDEX, {}, {UPat::var("b")}) >> [](M m) { return m["b"].rtag().index({const_(int64_t(0))}); },
      UPat(INDEX, {}, {UPat::var("b"), UPat(RANGE)}) >> [](M m) { return m["b"].rtag().index({const_(int64_t(0))}); },
      UPat(INDEX, {}, {UPat::var("b"), UPat(RANGE) + UPat::cvar("c")}) >> [](M m) { return m["b"].rtag().index({m["c"]}); },
      UPat(INDEX, {}, {UPat::var("b"), UPat::cvar("c")}) >> [](M m) {
        return m.ctx<const UOp>().numel() == 1 ? m["b"].rtag().index({m["c"]}) : UOp();
      },
  };
  static const PatternMatcher pm = pm_mops() + symbolic() + pm_contiguous_view_offset;
  UOp idx = flatten().index({range(numel(), 0)});
  UOp out = graph_rewrite(idx, pm, const_cast<void*>(static_cast<const void*>(this)));
  if (out.op() != INDEX || out.src().size() < 2 || out.src(0).tag().none() || out.src(1).op() != CONST || !out.src(1).val().is_int())
    return std::nullopt;
  return std::pair{out.src(0).rtag(Arg()), out.src(1).val().i};
}

std::optional<int64_t> UOp::contiguous_view_offset() const {
  auto v = contiguous_view();
  return v ? std::optional<int64_t>(v->second) : std::nullopt;
}

}  // namespace tg
