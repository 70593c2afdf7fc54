// The devectorizer of tinygrad's codegen/__init__.py: broadcasts, loads, devectorize, float ALU operands.
#include "codegen/devectorizer.h"

#include <algorithm>

#include "renderer/cstyle.h"
#include "uop/movement.h"
#include "uop/pattern_helpers.h"

namespace tg {

namespace {
using enum Ops;
using namespace pat;
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

}  // namespace tg
