#include "codegen/linearizer.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <unordered_map>
#include <unordered_set>

namespace tg {

namespace {

// where a node's "ended ranges" start in its sources (tinygrad's range_start)
int range_start(Ops op) {
  switch (op) {
    case Ops::STAGE: case Ops::REDUCE: case Ops::END: case Ops::CALL: case Ops::FUNCTION: return 1;
    case Ops::WMMA: return 3;
    case Ops::LINEAR: return 0;
    default: return -1;
  }
}

void ended_ranges(const UOp& u, std::vector<UOp>& out) {
  if (int s = range_start(u.op()); s >= 0) {
    for (size_t i = size_t(s); i < u.src().size(); i++) out.push_back(u.src(i));
  } else if (u.op() == Ops::AFTER) {
    for (size_t i = 1; i < u.src().size(); i++) ended_ranges(u.src(i), out);
  } else if (u.op() == Ops::UNSHARD) {
    for (size_t i = 1; i < u.src().size(); i++) out.push_back(u.src(i));
  }
}

// an insertion-ordered set of ranges (tinygrad keeps them in a dict)
struct RangeSet {
  std::vector<UOp> v;
  void add(const UOp& r) { if (std::find(v.begin(), v.end(), r) == v.end()) v.push_back(r); }
  void remove(const UOp& r) { if (auto it = std::find(v.begin(), v.end(), r); it != v.end()) v.erase(it); }
};

// UOp.ranges for every node of a graph, computed once per node in toposort order
struct RangesOf {
  std::unordered_map<UOp, RangeSet> memo;
  const RangeSet& operator()(const UOp& u) {
    if (auto it = memo.find(u); it != memo.end()) return it->second;
    for (const UOp& n : u.toposort()) {
      if (memo.contains(n)) continue;
      RangeSet r;
      for (const UOp& s : n.src()) for (const UOp& x : memo.at(s).v) r.add(x);
      std::vector<UOp> ended;
      ended_ranges(n, ended);
      for (const UOp& er : ended) {
        if (er.op() == Ops::RANGE) r.remove(er);
        else for (const UOp& x : (*this)(er).v) r.remove(x);  // er is a source, already computed
      }
      if (n.op() == Ops::RANGE) r.v.insert(r.v.begin(), n);  // {self} | _ranges (self is never in its own _ranges)
      memo.emplace(n, std::move(r));
    }
    return memo.at(u);
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
  return ranges(u).v;
}

std::vector<UOp> linearize(const UOp& sink) {
  std::vector<UOp> lst = sink.toposort();
  const size_t n = lst.size();
  std::unordered_map<UOp, size_t> pos;
  for (size_t i = 0; i < n; i++) pos.emplace(lst[i], i);

  std::vector<int> out_degree(n, 0);
  // (run_count, priority, extra): smaller sorts earlier; extra is the PARAM slot (None elsewhere)
  struct Prio {
    int64_t run_count;
    int priority;
    int64_t extra;
  };
  std::vector<Prio> prio(n);
  RangesOf ranges;
  for (size_t k = n; k-- > 0;) {
    const UOp& u = lst[k];
    for (const UOp& s : u.src()) out_degree[pos.at(s)]++;
    // nodes inside more loop iterations go later
    int64_t run_count = 1;
    for (const UOp& r : ranges(u).v) run_count = sat_mul(run_count, r.vmax().as_int() + 1);
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
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Prio &pa = prio[a], &pb = prio[b];
    if (pa.run_count != pb.run_count) return pa.run_count < pb.run_count;
    if (pa.priority != pb.priority) return pa.priority < pb.priority;
    if (pa.extra != pb.extra) return pa.extra < pb.extra;
    return tuplize_compare(lst[a], lst[b]) < 0;
  });
  std::vector<size_t> nkey(n);
  for (size_t i = 0; i < n; i++) nkey[order[i]] = i;

  // then a toposort from the sink down that always takes the ready node with the largest number, reversed
  std::priority_queue<std::pair<size_t, size_t>> heap;  // (nkey, index into lst)
  size_t si = pos.at(sink);
  heap.push({nkey[si], si});
  std::vector<UOp> out;
  out.reserve(n);
  while (!heap.empty()) {
    size_t k = heap.top().second;
    heap.pop();
    out.push_back(lst[k]);
    for (const UOp& v : lst[k].src()) {
      size_t vi = pos.at(v);
      if (--out_degree[vi] == 0) heap.push({nkey[vi], vi});
    }
  }
  std::reverse(out.begin(), out.end());
  return out;
}

namespace {

// an insertion-ordered set of nodes (tinygrad's dict[UOp, None]); it holds a kernel's RANGEs and ENDs: few, so a
// linear scan beats hashing
struct OrderedSet {
  std::vector<UOp> v;
  void add(const UOp& u) { if (!has(u)) v.push_back(u); }
  bool has(const UOp& u) const { return std::find(v.begin(), v.end(), u) != v.end(); }
};

}  // namespace

CFGContext::CFGContext(const UOp& sink) {
  // three relations between ranges: nested (END y depends on END x and RANGE x is a dependency of END y), dependent
  // (END y depends on END x but not on RANGE x), independent. Everything nests inside the sink.
  std::unordered_map<UOp, OrderedSet> deps;
  std::vector<std::pair<UOp, UOp>> nesting;  // END -> the END or SINK it is nested in, in discovery order
  std::unordered_set<UOp> nested;
  for (const UOp& u : sink.toposort()) {
    OrderedSet d;
    for (const UOp& s : u.src()) for (const UOp& x : deps.at(s).v) d.add(x);
    if (u.op() == Ops::END || u.op() == Ops::SINK) {
      for (const UOp& x : d.v) {
        if (x.op() != Ops::END || nested.contains(x)) continue;
        if (u.op() == Ops::SINK || deps.at(x).has(u.src(1))) {
          nesting.emplace_back(x, u);
          nested.insert(x);
        }
      }
    }
    if (u.op() == Ops::RANGE || u.op() == Ops::END) d.add(u);
    deps.emplace(u, std::move(d));
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
      for (const UOp& o : ends) n += deps.at(x).has(o);
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

const PatternMatcher& pm_add_control_flow() {
  static const PatternMatcher pm{
      UPat(Ops::RANGE, {}, {}, {}, "x") >> [](M m) -> UOp {
        UOp x = m["x"];
        auto& edges = m.ctx<CFGContext>().edges;
        auto it = edges.find(x);
        if (it == edges.end()) return {};
        std::vector<UOp> src(x.src().begin(), x.src().end());
        src.push_back(it->second);
        return x.replace({.src = src});
      },
  };
  return pm;
}

UOp add_control_flow(const UOp& sink) {
  CFGContext ctx(sink);
  return graph_rewrite(sink, pm_add_control_flow(), &ctx, true);
}

const PatternMatcher& pm_split_ends() {
  static const PatternMatcher pm{
      UPat(Ops::END, {}, {}, {}, "e") >> [](M m) -> UOp {
        UOp e = m["e"];
        std::vector<UOp> backedge, rest;
        for (size_t i = 1; i < e.src().size(); i++) {
          const UOp& x = e.src(i);
          (x.dtype() == dtypes::void_ || x.dtype() == dtypes::bool_ ? backedge : rest).push_back(x);
        }
        // the ranges of the other sources (with the ranges they run inside), innermost (highest arg) first
        std::vector<UOp> rs = uop_ranges(UOp::sink(rest));
        std::stable_sort(rs.begin(), rs.end(), [](const UOp& a, const UOp& b) { return arg_compare(a.arg(), b.arg()) > 0; });
        UOp ret = e.src(0);
        for (const UOp& r : rs) ret = ret.end({r});
        return ret.end(backedge);
      },
  };
  return pm;
}

}  // namespace tg
