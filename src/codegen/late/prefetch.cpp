// add_prefetches: the next outer step's block of a streamed matrix, prefetched while this one is computed.
#include "codegen/late/prefetch.h"

#include "renderer/cstyle.h"
#include "uop/pattern_helpers.h"
#include "util/settings.h"

#include <cstdlib>

namespace tg {

namespace {
using enum Ops;

// what a load reads through: INDEX(buf, i) for a scalar, SHRINK(buf, i, n) for a vector of n (a CAST of a pointer)
UOp index_of(const UOp& l) { return l.src(0).op() == CAST ? l.src(0).src(0) : l.src(0); }

// idx with the ranges in `at` at those values, every other range, variable and thread id at its least: an int, or
// nullopt where it does not fold
std::optional<int64_t> eval_at(const UOp& idx, const std::unordered_map<UOp, int64_t>& at) {
  std::unordered_map<UOp, UOp> sub;
  for (auto& u : idx.toposort())
    if (u.op() == RANGE) sub[u] = UOp::const_(ConstVal(at.count(u) ? at.at(u) : int64_t(0)), u.dtype());
    else if (u.op() == PARAM || u.op() == SPECIAL) sub[u] = UOp::const_(u.vmin(), u.dtype());
  UOp v = idx.substitute(sub).simplify();
  if (v.op() != CONST) return std::nullopt;
  return v.val().as_int();
}

// the index a load reads at the next step of an outer loop: where one outer step reads a block of its own (an outer
// stride at least the span of the reduce loops), and the index moves by that stride at every step
UOp prefetch_for(const UOp& idx, const std::vector<UOp>& red, const std::vector<UOp>& outer) {
  auto at0 = eval_at(idx, {});
  if (!at0) return UOp();
  int64_t span = 1, best = 0;
  for (auto& r : red) {
    auto s = eval_at(idx, {{r, 1}});
    if (!s || r.src(0).op() != CONST) return UOp();
    span += std::abs(*s - *at0) * (r.src(0).val().as_int() - 1);
  }
  for (auto& o : outer) {
    if (o.src(0).op() != CONST) continue;
    int64_t n = o.src(0).val().as_int();
    auto s1 = eval_at(idx, {{o, 1}}), sn = eval_at(idx, {{o, n - 1}});
    if (s1 && sn && *s1 - *at0 >= span && *sn - *at0 == (n - 1) * (*s1 - *at0) && (!best || *s1 - *at0 < best)) best = *s1 - *at0;
  }
  return best ? idx.alu(ADD, {idx.const_like(ConstVal(best))}) : UOp();
}
}  // namespace

UOp add_prefetches(const UOp& sink) {
  if (!settings().PREFETCH) return sink;
  struct Streamed { UOp load, index; std::vector<UOp> red, outer; };
  std::vector<Streamed> streamed;
  bool vector = false;  // a load in the reduce loop that no outer step moves: the vector the matrix is multiplied by
  for (auto& l : sink.toposort()) {
    if (l.op() != LOAD || l.src().size() != 1) continue;
    UOp ix = index_of(l);
    if (!((ix.op() == INDEX && ix.src().size() == 2) || (ix.op() == SHRINK && ix.src(2).op() == CONST)) || ix.src(0).op() != PARAM ||
        ix.src(0).addrspace() != AddrSpace::GLOBAL)
      continue;
    std::vector<UOp> red, outer;
    for (auto& u : ix.src(1).toposort())
      if (u.op() == RANGE) (pat::axis_type(u) == AxisType::REDUCE ? red : outer).push_back(u);
    if (red.empty()) continue;
    if (outer.empty()) vector = true;
    else streamed.push_back({l, ix, red, outer});
  }
  if (!vector) return sink;
  std::unordered_map<UOp, UOp> sub;
  for (auto& s : streamed) {
    const UOp& buf = s.index.src(0);
    int64_t item = buf.dtype().itemsize(), n = s.index.op() == SHRINK ? s.index.src(2).val().as_int() : 1;
    // whole vectors of a matrix past the L2 cache (a scalar's prefetch costs as much as its load)
    if (item * n < 16 || item * lin_max_numel(buf) < (int64_t(256) << 10)) continue;
    if (UOp next = prefetch_for(s.index.src(1), s.red, s.outer)) {
      UOp pf = UOp::make(CUSTOM, dtypes::void_, {UOp::make(INDEX, buf.dtype(), {buf, next})}, Arg("__builtin_prefetch({0}, 0, 3);"));
      sub[s.load] = s.load.replace({.src = std::vector{s.load.src(0), pf}});
    }
  }
  return sub.empty() ? sink : sink.substitute(sub);
}

}  // namespace tg
