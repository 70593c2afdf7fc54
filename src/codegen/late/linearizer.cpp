// tinygrad's codegen/late/linearizer.py: linearize, the control flow it needs (pm_add_control_flow), pm_split_ends.
#include "codegen/late/linearizer.h"
#include "codegen/simplify.h"
#include "uop/nodemap.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <unordered_map>
#include <unordered_set>

namespace tg {

namespace {

void ended_ranges(const UOp& u, std::vector<UOp>& out) {
  if (int s = range_start(u.op()); s >= 0) {
    for (size_t i = size_t(s); i < u.src().size(); i++) out.push_back(u.src(i));
  } else if (u.op() == Ops::AFTER) {
    for (size_t i = 1; i < u.src().size(); i++) ended_ranges(u.src(i), out);
  } else if (u.op() == Ops::UNSHARD) {
    for (size_t i = 1; i < u.src().size(); i++) out.push_back(u.src(i));
  }
}

// insertion-ordered sets of nodes (tinygrad's dicts of ranges), one per node, flowing from the sources: most nodes
// have exactly their first source's set, so the sets are pooled and shared by index rather than copied per node
struct SetPool {
  explicit SetPool(size_t nodes = 8) : of(2 * nodes) {}
  std::vector<std::vector<UOp>> sets{{}};  // sets[0] is the empty set
  NodeMap<uint32_t> of;
  const std::vector<UOp>& get(const UOp& u) { return sets[*of.find(u)]; }
  uint32_t add(std::vector<UOp> v) { sets.push_back(std::move(v)); return uint32_t(sets.size() - 1); }
  // the union of u's sources' sets, in source order
  uint32_t union_of_srcs(const UOp& u) {
    uint32_t d = 0;
    for (const UOp& s : u.src()) {
      uint32_t ds = *of.find(s);
      if (ds == d || ds == 0) continue;
      if (d == 0) { d = ds; continue; }
      std::vector<UOp> m;
      for (const UOp& x : sets[ds]) if (!has(sets[d], x)) m.push_back(x);
      if (m.empty()) continue;
      m.insert(m.begin(), sets[d].begin(), sets[d].end());
      d = add(std::move(m));
    }
    return d;
  }
};

// UOp.ranges for every node of a graph, computed once per node in toposort order
struct RangesOf {
  explicit RangesOf(size_t nodes = 8) : pool(nodes) {}
  SetPool pool;
  const std::vector<UOp>& operator()(const UOp& u) {
    if (pool.of.find(u)) return pool.get(u);
    for (const UOpNode* nn : u.topo_nodes()) {
      UOp n(nn);
      if (pool.of.find(n)) continue;
      uint32_t d = pool.union_of_srcs(n);
      std::vector<UOp> ended;
      ended_ranges(n, ended);
      if (!ended.empty() || n.op() == Ops::RANGE) {
        std::vector<UOp> r = pool.sets[d];
        auto remove = [&](const UOp& x) { if (auto it = std::find(r.begin(), r.end(), x); it != r.end()) r.erase(it); };
        for (const UOp& er : ended) {
          if (er.op() == Ops::RANGE) remove(er);
          else for (const UOp& x : (*this)(er)) remove(x);  // er is a source, already computed
        }
        if (n.op() == Ops::RANGE) r.insert(r.begin(), n);  // {self} | _ranges (self is never in its own _ranges)
        if (r != pool.sets[d]) d = pool.add(std::move(r));
      }
      pool.of[n] = d;
    }
    return pool.get(u);
  }
};

int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::numeric_limits<int64_t>::max();
  return r;
}

}  // namespace

std::vector<UOp> uop_ranges(const UOp& u) {
  RangesOf ranges;
  return ranges(u);
}

std::vector<UOp> linearize(const UOp& sink) {
  std::vector<UOp> lst = sink.toposort();
  const size_t n = lst.size();
  NodeMap<size_t> pos(2 * n);
  for (size_t i = 0; i < n; i++) pos[lst[i]] = i;

  std::vector<int> out_degree(n, 0);
  // (run_count, priority, extra): smaller sorts earlier; extra is the PARAM slot (None elsewhere)
  struct Prio {
    int64_t run_count;
    int priority;
    int64_t extra;
  };
  std::vector<Prio> prio(n);
  RangesOf ranges(n);
  for (size_t k = n; k-- > 0;) {
    const UOp& u = lst[k];
    for (const UOp& s : u.src()) out_degree[*pos.find(s)]++;
    // nodes inside more loop iterations go later
    int64_t run_count = 1;
    for (const UOp& r : ranges(u)) run_count = sat_mul(run_count, r.vmax().as_int() + 1);
    int priority = 0;
    int64_t extra = 0;
    switch (u.op()) {
      case Ops::PARAM: priority = -20, extra = u.arg().param().slot; break;
      case Ops::BUFFER:
        priority = u.arg().is<std::shared_ptr<const ParamArg>>() && u.arg().param().addrspace == AddrSpace::LOCAL ? -17 : -18;
        break;
      case Ops::LOAD: priority = -1; break;
      case Ops::STORE: priority = 1; break;
      case Ops::RANGE: priority = 5; break;
      case Ops::END: priority = -5; break;
      default: break;
    }
    prio[k] = {run_count, priority, extra};
  }

  // number the nodes in the "ideal" order: by priority, then tinygrad's tuplize order (a stable sort, as Python's)
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; i++) order[i] = i;
  TuplizeMemo memo;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Prio &pa = prio[a], &pb = prio[b];
    if (pa.run_count != pb.run_count) return pa.run_count < pb.run_count;
    if (pa.priority != pb.priority) return pa.priority < pb.priority;
    if (pa.extra != pb.extra) return pa.extra < pb.extra;
    return tuplize_compare(lst[a], lst[b], &memo) < 0;
  });
  std::vector<size_t> nkey(n);
  for (size_t i = 0; i < n; i++) nkey[order[i]] = i;

  // then a toposort from the sink down that always takes the ready node with the largest number, reversed
  std::priority_queue<std::pair<size_t, size_t>> heap;  // (nkey, index into lst)
  size_t si = *pos.find(sink);
  heap.push({nkey[si], si});
  std::vector<UOp> out;
  out.reserve(n);
  while (!heap.empty()) {
    size_t k = heap.top().second;
    heap.pop();
    out.push_back(lst[k]);
    for (const UOp& v : lst[k].src()) {
      size_t vi = *pos.find(v);
      if (--out_degree[vi] == 0) heap.push({nkey[vi], vi});
    }
  }
  std::reverse(out.begin(), out.end());
  return out;
}

CFGContext::CFGContext(const UOp& sink) {
  // three relations between ranges: nested (END y depends on END x and RANGE x is a dependency of END y), dependent
  // (END y depends on END x but not on RANGE x), independent. Everything nests inside the sink.
  SetPool deps(sink.topo_nodes().size());  // the RANGEs and ENDs each node depends on
  std::vector<std::pair<UOp, UOp>> nesting;  // END -> the END or SINK it is nested in, in discovery order
  std::vector<UOp> nested;
  for (const UOpNode* un : sink.topo_nodes()) {
    UOp u(un);
    uint32_t d = deps.union_of_srcs(u);
    if (u.op() == Ops::END || u.op() == Ops::SINK) {
      for (const UOp& x : deps.sets[d]) {
        if (x.op() != Ops::END || has(nested, x)) continue;
        if (u.op() == Ops::SINK || has(deps.get(x), u.src(1))) {
          nesting.emplace_back(x, u);
          nested.push_back(x);
        }
      }
    }
    if (u.op() == Ops::RANGE || u.op() == Ops::END) {
      std::vector<UOp> v = deps.sets[d];
      v.push_back(u);
      d = deps.add(std::move(v));
    }
    deps.of[u] = d;
  }

  std::vector<std::pair<UOp, std::vector<UOp>>> siblings;  // parent -> its nested ENDs, in discovery order
  for (const auto& [k, parent] : nesting) {
    auto it = std::find_if(siblings.begin(), siblings.end(), [&](const auto& p) { return p.first == parent; });
    if (it == siblings.end()) siblings.push_back({parent, {k}});
    else it->second.push_back(k);
  }
  for (const auto& [parent, ends] : siblings) {
    // ends that depend on other siblings are scheduled after them
    std::vector<std::pair<size_t, UOp>> keyed;
    for (const UOp& x : ends) {
      size_t n = 0;
      for (const UOp& o : ends) n += has(deps.get(x), o);
      keyed.push_back({n, x});
    }
    std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<UOp> order;
    for (auto& [n, x] : keyed) order.push_back(x);
    std::vector<std::pair<UOp, UOp>> pairs;
    if (parent.op() == Ops::SINK) {
      for (size_t i = 0; i + 1 < order.size(); i++) pairs.push_back({order[i], order[i + 1]});
    } else {
      for (size_t i = 0; i < order.size(); i++) pairs.push_back({i == 0 ? parent.src(1) : order[i - 1], order[i]});
    }
    for (const auto& [x, y] : pairs) {
      // tinygrad asserts this too (a cycle would never linearize)
      if (x.in_backward_slice_with_self(y.src(1))) throw Error("add control flow: RANGE of " + y.str() + " is already before its predecessor");
      edges.insert_or_assign(y.src(1), x);
    }
  }
}

UOp add_control_flow(const UOp& sink) {
  CFGContext ctx(sink);
  if (ctx.edges.empty()) return sink;
  // tinygrad's bottom-up pm_add_control_flow only appends its edge to a RANGE: done here as one memoized rebuild in
  // which that END counts as one more source of the RANGE
  NodeMap<UOp> done(4 * sink.topo_nodes().size());  // an empty UOp: expanded, not done (on the current path)
  std::vector<std::pair<UOp, bool>> stack{{sink, false}};
  std::vector<UOp> src;
  while (!stack.empty()) {
    auto [n, expanded] = std::move(stack.back());
    stack.pop_back();
    if (UOp* d = done.find(n); d && *d) continue;
    auto edge = n.op() == Ops::RANGE ? ctx.edges.find(n) : ctx.edges.end();
    if (!expanded) {
      if (!done.try_emplace(n).second) throw Error("add control flow: the loop order has a cycle");
      stack.push_back({n, true});
      if (edge != ctx.edges.end()) stack.push_back({edge->second, false});
      for (size_t i = n.src().size(); i-- > 0;) if (UOp* d = done.find(n.src(i)); !d || !*d) stack.push_back({n.src(i), false});
      continue;
    }
    src.clear();
    bool changed = edge != ctx.edges.end();
    for (const UOp& s : n.src()) src.push_back(*done.find(s)), changed |= src.back() != s;
    if (edge != ctx.edges.end()) src.push_back(*done.find(edge->second));
    done[n] = changed ? UOp::make(n.op(), n.dtype(), src, n.arg(), n.tag()) : n;
  }
  return *done.find(sink);
}

const PatternMatcher& pm_split_ends() {
  static const PatternMatcher pm = PatternMatcher{
      UPat(Ops::END, {}, {}, {}, "e") >> [](M m) -> UOp {
        UOp e = m["e"];
        std::vector<UOp> backedge, rest;
        for (size_t i = 1; i < e.src().size(); i++) {
          const UOp& x = e.src(i);
          (x.dtype() == dtypes::void_ || x.dtype() == dtypes::bool_ ? backedge : rest).push_back(x);
        }
        // the ranges of the other sources (with the ranges they run inside), innermost (highest arg) first
        std::vector<UOp> rs = closed_ranges(rest);
        std::stable_sort(rs.begin(), rs.end(), [](const UOp& a, const UOp& b) { return arg_compare(a.arg(), b.arg()) > 0; });
        UOp ret = e.src(0);
        for (const UOp& r : rs) ret = ret.end({r});
        return ret.end(backedge);
      },
  }.pure();
  return pm;
}

}  // namespace tg
