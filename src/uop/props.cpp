// Cached node properties: value bounds (vmin/vmax), shape, content key; and the symbolic helpers built on them.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>

#include "uop/args.h"
#include "uop/multi_arg.h"
#include "uop/movement.h"
#include "uop/uop.h"
#include "util/sha256.h"

namespace tg {

// ***** 1. saturating int64 arithmetic (weakint is unbounded in tinygrad; here its bounds sit at the int64 limits) *****

namespace {
constexpr int64_t I64MIN = std::numeric_limits<int64_t>::min(), I64MAX = std::numeric_limits<int64_t>::max();
int64_t sat(bool overflow, int64_t r, bool negative) { return overflow ? (negative ? I64MIN : I64MAX) : r; }
int64_t sadd(int64_t a, int64_t b) { int64_t r; bool o = __builtin_add_overflow(a, b, &r); return sat(o, r, b < 0); }
int64_t ssub(int64_t a, int64_t b) { int64_t r; bool o = __builtin_sub_overflow(a, b, &r); return sat(o, r, b > 0); }
int64_t smul(int64_t a, int64_t b) { int64_t r; bool o = __builtin_mul_overflow(a, b, &r); return sat(o, r, (a < 0) != (b < 0)); }
int64_t floordiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return a == I64MIN ? I64MAX : -a;
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t floormod(int64_t a, int64_t b) { return b == 0 ? a : b == -1 ? 0 : a - floordiv(a, b) * b; }
int64_t cdiv(int64_t a, int64_t b) { return b == 0 ? 0 : b == -1 ? (a == I64MIN ? I64MAX : -a) : a / b; }
int64_t shl(int64_t a, int64_t b) { return b >= 63 ? (a == 0 ? 0 : a < 0 ? I64MIN : I64MAX) : smul(a, int64_t(1) << b); }
int64_t shr(int64_t a, int64_t b) { return b >= 63 ? (a < 0 ? -1 : 0) : a >> b; }

using MM = std::pair<ConstVal, ConstVal>;
bool all_int(std::initializer_list<ConstVal> l) { for (auto& c : l) if (!c.is_int() && !c.is_bool()) return false; return true; }
ConstVal cmin(const ConstVal& a, const ConstVal& b) { return b < a ? b : a; }
ConstVal cmax(const ConstVal& a, const ConstVal& b) { return a < b ? b : a; }
MM minmax4(int64_t a, int64_t b, int64_t c, int64_t d) { return {std::min({a, b, c, d}), std::max({a, b, c, d})}; }

// the bounds of u given the bounds of its sources (a port of tinygrad's _min_max)
MM compute_minmax(const UOpNode* n) {
  using enum Ops;
  Ops op = n->op;
  DType dt = n->dtype;
  const UOp* s = n->srcs();
  if (GroupOp::Binary.has(op) && !dt.is_float()) {
    const ConstVal &s0min = s[0].get()->vmin, &s0max = s[0].get()->vmax, &s1min = s[1].get()->vmin, &s1max = s[1].get()->vmax;
    bool ints = all_int({s0min, s0max, s1min, s1max});
    int64_t a0 = ints ? s0min.i : 0, a1 = ints ? s0max.i : 0, b0 = ints ? s1min.i : 0, b1 = ints ? s1max.i : 0;
    if (ints) switch (op) {
      case ADD: return {sadd(a0, b0), sadd(a1, b1)};
      case SUB: return {ssub(a0, b1), ssub(a1, b0)};
      case AND: if (dt.is_int() && b0 == b1 && b0 >= 0) return {int64_t(0), a0 < 0 ? b1 : std::min(a1, b1)}; break;
      case MUL: return minmax4(smul(a0, b0), smul(a0, b1), smul(a1, b0), smul(a1, b1));
      case SHL: if (b0 == b1 && b0 >= 0) return {shl(a0, b0), shl(a1, b0)}; break;
      case SHR: if (b0 == b1 && b0 >= 0) return {shr(a0, b0), shr(a1, b0)}; break;
      case CMOD:
        if (b0 == b1 && b0 > 0) {
          int64_t c = b0;
          return {a0 > 0 ? 0 : (0 >= a0 && a0 > -c) ? a0 : -(b1 - 1), a1 < 0 ? 0 : (0 <= a1 && a1 < c) ? a1 : c - 1};
        }
        if (b0 > 0) return a0 >= 0 ? MM{int64_t(0), b1 - 1} : a1 <= 0 ? MM{-(b1 - 1), int64_t(0)} : MM{-(b1 - 1), b1 - 1};
        if (b1 < 0) return a0 >= 0 ? MM{int64_t(0), -b0 - 1} : a1 <= 0 ? MM{-(-b0 - 1), int64_t(0)} : MM{-(-b0 - 1), -b0 - 1};
        break;
      case CDIV: if ((b0 > 0 && b1 > 0) || (b0 < 0 && b1 < 0)) return minmax4(cdiv(a0, b0), cdiv(a0, b1), cdiv(a1, b0), cdiv(a1, b1)); break;
      case FLOORDIV:
        if (a0 > a1) return {int64_t(0), int64_t(0)};
        if ((b0 > 0 && b1 > 0) || (b0 < 0 && b1 < 0))
          return minmax4(floordiv(a0, b0), floordiv(a0, b1), floordiv(a1, b0), floordiv(a1, b1));
        break;
      case FLOORMOD:
        if (a0 > a1) return {int64_t(0), int64_t(0)};
        if (b0 == b1 && b0 > 0)
          return floordiv(a0, b0) == floordiv(a1, b0) ? MM{floormod(a0, b0), floormod(a1, b0)} : MM{int64_t(0), b0 - 1};
        if (b0 == b1 && b0 < 0)
          return floordiv(a0, b0) == floordiv(a1, b0) ? MM{floormod(a0, b0), floormod(a1, b0)} : MM{b0 + 1, int64_t(0)};
        if (b0 > 0) return {int64_t(0), b1 - 1};
        if (b1 < 0) return {b0 + 1, int64_t(0)};
        break;
      case XOR: if (b0 == -1 && b1 == -1 && s0min.is_int()) return {~a1, ~a0}; break;
      default: break;
    }
    switch (op) {
      case MAX: return {cmax(s0min, s1min), cmax(s0max, s1max)};
      case CMPLT: return {ConstVal(s0max < s1min), ConstVal(s0min < s1max)};
      case CMPNE:
        return {ConstVal(s0max < s1min || s1max < s0min), ConstVal(!(s0min == s0max && s0max == s1min && s1min == s1max))};
      case OR: if (dt == dtypes::bool_) return {ConstVal(s0min.truthy() || s1min.truthy()), ConstVal(s0max.truthy() || s1max.truthy())}; break;
      case AND: if (dt == dtypes::bool_) return {ConstVal(s0min.truthy() && s1min.truthy()), ConstVal(s0max.truthy() && s1max.truthy())}; break;
      default: break;
    }
  }
  if (op == WHERE && dt.is_int()) return {cmin(s[1].get()->vmin, s[2].get()->vmin), cmax(s[1].get()->vmax, s[2].get()->vmax)};
  if ((op == PARAM || op == BUFFER) && n->arg.is<std::shared_ptr<const ParamArg>>() && n->arg.param().vmin_vmax) return *n->arg.param().vmin_vmax;
  if ((op == RANGE || op == SPECIAL) && dt != dtypes::void_) {
    const ConstVal& e = s[0].get()->vmax;
    return {int64_t(0), e.is_float() ? ConstVal(e.f - 1) : ConstVal(ssub(e.i, 1))};
  }
  if (op == AFTER || op == INDEX) return {s[0].get()->vmin, s[0].get()->vmax};
  if (op == STACK && n->nsrc) {
    MM r{s[0].get()->vmin, s[0].get()->vmax};
    for (uint32_t i = 1; i < n->nsrc; i++) r = {cmin(r.first, s[i].get()->vmin), cmax(r.second, s[i].get()->vmax)};
    return r;
  }
  if (op == CONST && !n->arg.cval().is_invalid()) return {n->arg.cval(), n->arg.cval()};
  if (op == CAST) {
    ConstVal lo = s[0].get()->vmin, hi = s[0].get()->vmax;
    bool finite = std::isfinite(lo.as_double()) && std::isfinite(hi.as_double());
    if (finite && dt.is_float()) { lo = dt.const_(lo); hi = dt.const_(hi); }
    // truncate float bounds only: an int64 bound does not survive a trip through double (2^63 - 1 rounds up, out of range)
    auto trunc = [](const ConstVal& v) { return v.is_float() ? ConstVal(v.f >= 0x1p63 ? INT64_MAX : v.f < -0x1p63 ? INT64_MIN : int64_t(v.f)) : v; };
    if (finite && dt.is_int()) lo = trunc(lo), hi = trunc(hi);
    if (lo.is_bool()) lo = ConstVal(lo.i);
    if (hi.is_bool()) hi = ConstVal(hi.i);
    if (dt.is_unsigned() && !(lo < ConstVal(0)) && !(dt.max() < hi)) return {lo, hi};
    if (dt.is_float() || (dt.is_int() && !dt.is_unsigned())) return {cmax(dt.min(), lo), cmin(hi, dt.max())};
  }
  return {dt.min(), dt.max()};
}

void ensure_minmax(const UOpNode* root) {
  if (root->have_minmax) return;
  bool srcs_ready = true;
  for (uint32_t i = 0; i < root->nsrc && srcs_ready; i++) srcs_ready = root->srcs()[i].get()->have_minmax;
  if (srcs_ready) {
    auto [lo, hi] = compute_minmax(root);
    root->vmin = lo, root->vmax = hi, root->have_minmax = true;
    return;
  }
  static thread_local std::vector<std::pair<const UOpNode*, bool>> stack;  // compute_minmax never comes back here
  stack.assign(1, {root, false});
  while (!stack.empty()) {
    auto [n, expanded] = stack.back();
    if (n->have_minmax) { stack.pop_back(); continue; }
    if (!expanded) {
      stack.back().second = true;
      for (uint32_t i = 0; i < n->nsrc; i++) if (!n->srcs()[i].get()->have_minmax) stack.push_back({n->srcs()[i].get(), false});
      continue;
    }
    stack.pop_back();
    auto [lo, hi] = compute_minmax(n);
    n->vmin = lo, n->vmax = hi, n->have_minmax = true;
  }
}
}  // namespace

const ConstVal& UOp::vmin() const { ensure_minmax(p); return p->vmin; }
const ConstVal& UOp::vmax() const { ensure_minmax(p); return p->vmax; }
bool UOp::overflows(DType dt) const { return vmin() < dt.min() || dt.max() < vmax(); }

// ***** 2. symbolic helpers *****

std::vector<UOp> UOp::split_uop(Ops sep) const {
  std::vector<UOp> out;
  std::vector<const UOp*> stack{this};
  while (!stack.empty()) {
    const UOp* u = stack.back();
    stack.pop_back();
    if (u->op() != sep) { out.push_back(*u); continue; }
    for (size_t i = u->src().size(); i-- > 0;) stack.push_back(&u->src(i));
  }
  return out;
}

namespace {
ConstVal identity_element(Ops op, DType dt) {
  switch (op) {
    case Ops::ADD: return dt.const_(int64_t(0));
    case Ops::MUL: return dt.const_(int64_t(1));
    case Ops::MAX: return dt.const_(dt.min());
    default: internal_error("no identity element for " + std::string(op_name(op)));
  }
}
}  // namespace

std::pair<UOp, ConstVal> UOp::pop_const(Ops op) const {
  if (this->op() == op && src(1).op() == Ops::CONST) return {src(0), src(1).val()};
  return {*this, identity_element(op, dtype())};
}

int64_t UOp::const_factor() const {
  switch (op()) {
    case Ops::CONST: return val().is_int() ? val().i : 1;
    case Ops::STACK: { int64_t g = 0; for (auto& s : src()) g = std::gcd(g, s.const_factor()); return g; }
    case Ops::ADD: return std::gcd(src(0).const_factor(), src(1).const_factor());
    case Ops::MUL:
      if (src(0).op() == Ops::CONST && src(0).val().is_int()) return src(0).val().i;
      if (src(1).op() == Ops::CONST && src(1).val().is_int()) return src(1).val().i;
      return 1;
    case Ops::PARAM: case Ops::BUFFER:
      if (arg().is<std::shared_ptr<const ParamArg>>() && arg().param().multiple_of) return *arg().param().multiple_of;
      return 1;
    default: return 1;
  }
}

UOp UOp::divides(int64_t v) const {
  if (v == 1) return *this;
  if (v == 0) return {};
  switch (op()) {
    case Ops::CONST:
      if (!val().is_int() || val().i % v != 0) return {};
      return const_like(floordiv(val().i, v));
    case Ops::STACK: {
      std::vector<UOp> s;
      for (auto& x : src()) { UOp d = x.divides(v); if (!d) return {}; s.push_back(d); }
      return make(Ops::STACK, s);
    }
    case Ops::ADD: {
      UOp d0 = src(0).divides(v);
      if (!d0) return {};
      UOp d1 = src(1).divides(v);
      return d1 ? d0 + d1 : UOp();
    }
    case Ops::MUL:
      if (UOp d0 = src(0).divides(v)) return d0 * src(1);
      if (UOp d1 = src(1).divides(v)) return src(0) * d1;
      return {};
    case Ops::PARAM: case Ops::BUFFER:
      if (arg().is<std::shared_ptr<const ParamArg>>() && arg().param().multiple_of && *arg().param().multiple_of % v == 0) return *this / v;
      return {};
    default: return {};
  }
}

namespace {
// an ordered multiset of UOps (Python's Counter, keeping first-insertion order)
struct Counter {
  std::vector<std::pair<UOp, int64_t>> items;
  void add(const UOp& u, int64_t n = 1) {
    for (auto& [k, c] : items) if (k == u) { c += n; return; }
    items.push_back({u, n});
  }
  int64_t get(const UOp& u) const { for (auto& [k, c] : items) if (k == u) return c; return 0; }
  Counter operator&(const Counter& o) const {
    Counter r;
    for (auto& [k, c] : items) if (int64_t m = std::min(c, o.get(k)); m > 0) r.items.push_back({k, m});
    return r;
  }
  std::vector<UOp> elements() const {
    std::vector<UOp> r;
    for (auto& [k, c] : items) for (int64_t i = 0; i < c; i++) r.push_back(k);
    return r;
  }
};
Counter counter_of(const std::vector<UOp>& l) { Counter c; for (auto& u : l) c.add(u); return c; }
}  // namespace

UOp UOp::gcd(Srcs uops) {
  std::vector<UOp> terms;
  int64_t g = 0;
  Counter count;
  for (size_t i = 0; i < uops.size(); i++) {
    const UOp& u = uops.ptr[i];
    int64_t f = u.const_factor();
    UOp t = u.divides(f);
    if (!t) internal_error("gcd: a term does not divide by its own const factor");
    g = std::gcd(g, f);
    Counter c = counter_of(t.split_uop(Ops::MUL));
    count = i == 0 ? c : count & c;
    terms.push_back(t);
  }
  // with no common factor the product is just the const (what simplify() of 1*const gives)
  if (count.items.empty()) return terms[0].const_like(g);
  // math.prod starts from the int 1: 1*e0*e1*...*const
  UOp r = lit(1) * count.items[0].first;
  auto els = count.elements();
  for (size_t i = 1; i < els.size(); i++) r = r * els[i];
  if (!els.empty()) r = r * terms[0].const_like(g);
  return r;
}

UOp UOp::divide_exact(const UOp& v) const {
  if (*this == v) return const_like(int64_t(1));
  if (v.op() == Ops::CONST) return v.val().is_int() ? divides(v.val().i) : UOp();
  if (op() == Ops::ADD) {
    UOp s0 = src(0).divide_exact(v);
    if (!s0) return {};
    UOp s1 = src(1).divide_exact(v);
    return s1 ? s0 + s1 : UOp();
  }
  if (op() == Ops::MUL) {
    auto [fac, c] = pop_const(Ops::MUL);
    auto [div_fac, div_c] = v.pop_const(Ops::MUL);
    if (!c.is_int() || !div_c.is_int() || div_c.i == 0) return {};
    Counter cnt = counter_of(fac.split_uop(Ops::MUL));
    for (auto& u : div_fac.split_uop(Ops::MUL)) cnt.add(u, -1);
    for (auto& [k, n] : cnt.items) if (n < 0) return {};
    if (floormod(c.i, div_c.i) != 0) return {};
    UOp r = const_like(floordiv(c.i, div_c.i));
    for (auto& e : cnt.elements()) r = r * e;
    return r;
  }
  return {};
}

// ***** 3. shape *****

// a shape argument (a CONST or a STACK of them) as ints; a non-constant dim is simplified first
Shape as_shape(const UOp& u, std::string& err) {
  auto dim = [&](const UOp& x) -> int64_t {
    UOp s = x.op() == Ops::CONST ? x : x.simplify();
    if (s.op() == Ops::CONST && s.val().is_int()) return s.val().i;
    if (err.empty()) err = "symbolic shapes are not supported yet (" + x.render(false) + ")";
    return 0;
  };
  if (u.op() != Ops::STACK) return {dim(u)};
  Shape r;
  for (auto& x : u.src()) r.push_back(dim(x));
  return r;
}
SShape as_sym_shape(const UOp& u) {
  auto dim = [](const UOp& x) { return x.op() == Ops::CONST ? x : x.simplify(); };
  if (u.op() != Ops::STACK) return {dim(u)};
  SShape r;
  for (auto& x : u.src()) r.push_back(dim(x));
  return r;
}

std::optional<Shape> int_shape(const SShape& s) {
  Shape r;
  for (auto& d : s) {
    if (d.op() != Ops::CONST || !d.val().is_int()) return std::nullopt;
    r.push_back(d.val().i);
  }
  return r;
}

std::string sym_shape_str(const SShape& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); i++) r += (i ? ", " : "") + strip_parens(s[i].render(false));
  return r + (s.size() == 1 ? ",)" : ")");
}

Shape as_shape(const UOp& u) {
  std::string err;
  Shape r = as_shape(u, err);
  if (!err.empty()) throw Error(err);
  return r;
}

namespace {
// broadcast_shape, where every dim is 1 or the result's
Shape broadcast_shapes(Ops op, const std::vector<Shape>& shapes) {
  Shape out = broadcast_shape(shapes);
  for (auto& s : shapes)
    for (size_t i = 0; i < s.size(); i++)
      if (s[i] != 1 && s[i] != out[out.size() - s.size() + i]) throw Error(std::string(op_name(op)) + ": shapes cannot be broadcast together");
  return out;
}

// a source's failure and a symbolic shape argument are not thrown: they go to err (the first one wins, as a throw
// would), the computation goes on with a placeholder, and the caller drops whatever comes out; other errors are thrown.
// sym is set where a symbolic dim (here or in a source) was met: the caller then computes the symbolic shape
std::optional<Shape> compute_shape(const UOp& u, std::shared_ptr<const std::string>& err, bool& sym) {
  using enum Ops;
  auto src_opt = [&](size_t i) -> const std::optional<Shape>& {
    static const std::optional<Shape> none;
    if (const auto* s = u.src(i).shape_if_valid()) return *s;
    if (u.src(i).get()->cache->sym_shape) sym = true;
    if (!err) err = u.src(i).get()->cache->shape_error;
    return none;
  };
  auto as_shape = [&](const UOp& x, std::shared_ptr<const std::string>& e) {
    std::string msg;
    Shape s = tg::as_shape(x, msg);
    // dims of Variables are symbolic shapes; codegen's offsets in RANGEs stay shapeless (the passes read them otherwise)
    if (!msg.empty() && !x.get()->ops_below.has(RANGE) && !x.get()->ops_below.has(SPECIAL)) sym = true;
    if (!msg.empty() && !e) e = std::make_shared<const std::string>(std::move(msg));
    return s;
  };
  auto src_shape = [&](size_t i) -> Shape {
    const auto& s = src_opt(i);
    if (!s && !err) throw Error(std::string(op_name(u.op())) + " requires a shape, but its source " + std::string(op_name(u.src(i).op())) + " has none");
    return s.value_or(Shape{});
  };
  switch (u.op()) {
    case IF: case BARRIER: case SINK: case REWRITE_ERROR: case ENDIF: case GROUP: case LINEAR: case PROGRAM: case SOURCE: case TUPLE:
    case FUNCTION: case CUSTOM_FUNCTION: case PYLITERAL: return std::nullopt;
    case GETTUPLE: {  // the shape of that output of the TUPLE (through its FUNCTION)
      const UOp& t = u.src(0).op() == FUNCTION ? u.src(0).src(0) : u.src(0);
      if (const auto* s = t.src(size_t(u.arg().i())).shape_if_valid()) return *s;
      err = t.src(size_t(u.arg().i())).get()->cache->shape_error;
      return std::nullopt;
    }
    case CALL: case INS: return u.dtype() == dtypes::void_ ? std::nullopt : std::optional<Shape>(Shape{});
    case NOOP: return u.src().empty() ? std::nullopt : src_opt(0);
    case INDEX: {
      Shape r;
      for (size_t i = 1; i < u.src().size(); i++) { Shape s = src_shape(i); r.insert(r.end(), s.begin(), s.end()); }
      Shape b = src_shape(0);
      if (u.src().size() - 1 < b.size()) r.insert(r.end(), b.begin() + (u.src().size() - 1), b.end());
      return r;
    }
    case STACK: {
      if (u.src().empty()) return Shape{};
      Shape r{int64_t(u.src().size())};
      Shape s = src_shape(0);
      r.insert(r.end(), s.begin(), s.end());
      return r;
    }
    case CONST: case GETADDR: case RANGE: case SPECIAL: return Shape{};
    case BITCAST: {  // a different itemsize rescales the last axis
      const auto& ps = src_opt(0);
      if (!ps || ps->empty() || u.dtype().itemsize() == u.src(0).dtype().itemsize()) return ps;
      Shape r = *ps;
      int64_t in = u.src(0).dtype().itemsize(), out = u.dtype().itemsize();
      if (r.back() * in % out) throw Error("BITCAST: unsupported size in bitcast");
      r.back() = r.back() * in / out;
      return r;
    }
    case STAGE: {  // the closed ranges' sizes in front of the staged value's shape
      Shape r;
      for (size_t i = 1; i < u.src().size(); i++) r.push_back(u.src(i).vmax().i + 1);
      Shape b = src_shape(0);
      r.insert(r.end(), b.begin(), b.end());
      return r;
    }
    case BUFFER: return u.src().empty() ? Shape{} : as_shape(u.src(0), err);
    case PARAM: return as_shape(u.src(0), err);
    case MSTACK:
      if (auto* ma = multi_arg(u.arg()); ma && ma->axis) {  // a multi-device value split along axis: each shard is one slice
        Shape ps = src_shape(0);
        ps.at(size_t(*ma->axis)) *= int64_t(u.src().size());
        return ps;
      }
      return src_opt(0);
    case MSELECT: case DETACH: case CONTIGUOUS: case CONTIGUOUS_BACKWARD: case AFTER: case LOAD: case COPY: case ALLREDUCE:
    case STORE: case END: return src_opt(0);
    case RESHAPE: {
      Shape ps = src_shape(0), ns = as_shape(u.src(1), err);
      int64_t a = 1, b = 1;
      for (auto x : ps) a *= x;
      for (auto x : ns) {
        if (x < 0) throw Error("RESHAPE: shape can't contain negative numbers, cannot reshape " + shape_str(ps) + " to " + shape_str(ns));
        b *= x;
      }
      if (a != b) throw Error("RESHAPE: cannot reshape " + shape_str(ps) + " to " + shape_str(ns));
      return ns;
    }
    case EXPAND: { Shape ns = as_shape(u.src(1), err), ps = src_shape(0); ns.insert(ns.end(), ps.begin(), ps.end()); return ns; }
    case PERMUTE: {
      Shape ps = src_shape(0);
      const auto& perm = u.arg().ints();
      Shape sorted(perm.begin(), perm.end());
      std::sort(sorted.begin(), sorted.end());
      for (size_t i = 0; i < sorted.size(); i++) if (sorted[i] != int64_t(i) || sorted.size() != ps.size())
        throw Error("PERMUTE: invalid permutation " + shape_str(perm) + " of shape " + shape_str(ps));
      Shape r;
      for (auto i : perm) r.push_back(ps[i]);
      return r;
    }
    case PAD: case SHRINK: {
      Shape ps = src_shape(0), lo = as_shape(u.src(1), err), sz = as_shape(u.src(2), err);
      bool ok = lo.size() == ps.size() && sz.size() == ps.size();
      for (size_t i = 0; ok && i < ps.size(); i++)
        ok = u.op() == PAD ? (sz[i] >= 0 && lo[i] >= 0 && lo[i] + ps[i] <= sz[i]) : (lo[i] >= 0 && sz[i] >= 0 && lo[i] + sz[i] <= ps[i]);
      if (!ok) {
        std::string arg = "(";
        for (size_t i = 0; i < std::min(lo.size(), sz.size()); i++) arg += (i ? ", " : "") + shape_str({lo[i], sz[i]});
        arg += std::min(lo.size(), sz.size()) == 1 ? ",)" : ")";
        throw Error(std::string(u.op() == PAD ? "PAD: invalid pad " : "SHRINK: invalid shrink ") + arg + " for shape " + shape_str(ps));
      }
      return sz;
    }
    case FLIP: {
      Shape ps = src_shape(0);
      if (u.arg().ints().size() != ps.size()) throw Error("FLIP: bad flip " + shape_str(u.arg().ints()) + " on shape " + shape_str(ps));
      return ps;
    }
    case REDUCE: {
      Shape ps = src_shape(0);
      int64_t n = u.arg().ints().at(1);
      if (n < 0 || n > int64_t(ps.size())) throw Error("REDUCE: invalid number of axes " + std::to_string(n));
      return Shape(ps.begin() + n, ps.end());
    }
    case WMMA: {  // the sources' leading axes broadcast, then the accumulator's lanes
      std::vector<Shape> lead;
      for (size_t i = 0; i < 3; i++) {
        Shape s = src_shape(i);
        if (s.empty()) throw Error("WMMA: source " + std::to_string(i) + " has no lanes");
        lead.push_back(Shape(s.begin(), s.end() - 1));
      }
      Shape r = broadcast_shapes(WMMA, lead);
      r.push_back(src_shape(2).back());
      return r;
    }
    default: break;
  }
  if (GroupOp::Unary.has(u.op()) || u.op() == CAST) return src_shape(0);
  if (GroupOp::Broadcastable.has(u.op())) {
    // a failed source decides the outcome (its error is the first): nothing after it is looked at
    const auto& s0 = src_opt(0);  // mostly every source has this shape: nothing to broadcast
    if (err) return std::nullopt;
    bool same = s0.has_value();
    for (size_t i = 1; same && i < u.src().size(); i++) {
      same = src_opt(i) == s0;
      if (err) return std::nullopt;
    }
    if (same) return s0;
    std::vector<Shape> shapes;
    for (size_t i = 0; i < u.src().size(); i++) shapes.push_back(src_shape(i));
    return broadcast_shapes(u.op(), shapes);
  }
  throw Error("no shape handling for " + std::string(op_name(u.op())));
}

// the shape with sint dims, for nodes whose shape has a symbolic dim (or a source with one). Dims are compared as
// simplified UOps: equal expressions are the same node
SShape compute_sym_shape(const UOp& u) {
  using enum Ops;
  const std::string name(op_name(u.op()));
  auto src = [&](size_t i) -> SShape { return u.src(i).sym_shape(); };
  auto is1 = [](const UOp& d) { return d.op() == CONST && d.val().is_int() && d.val().i == 1; };
  auto prod_of = [](const SShape& s) {
    UOp r = UOp::const_(int64_t(1));
    for (auto& d : s) r = r * d;
    return r.simplify();
  };
  switch (u.op()) {
    case BUFFER: return u.src().empty() ? SShape{} : as_sym_shape(u.src(0));
    case PARAM: return as_sym_shape(u.src(0));
    case MSTACK: case MSELECT: case DETACH: case CONTIGUOUS: case CONTIGUOUS_BACKWARD: case AFTER: case LOAD: case COPY: case ALLREDUCE:
    case STORE: case END: case NOOP: return src(0);
    case RESHAPE: {
      SShape ps = src(0), ns = as_sym_shape(u.src(1));
      for (auto& d : ns) if (d.vmax() < ConstVal(int64_t(0))) throw Error("RESHAPE: shape can't contain negative numbers, cannot reshape " + sym_shape_str(ps) + " to " + sym_shape_str(ns));
      if (prod_of(ps) != prod_of(ns)) throw Error("RESHAPE: cannot reshape " + sym_shape_str(ps) + " to " + sym_shape_str(ns));
      return ns;
    }
    case EXPAND: { SShape ns = as_sym_shape(u.src(1)), ps = src(0); ns.insert(ns.end(), ps.begin(), ps.end()); return ns; }
    case PERMUTE: {
      SShape ps = src(0), r;
      const auto& perm = u.arg().ints();
      if (perm.size() != ps.size()) throw Error("PERMUTE: invalid permutation " + shape_str(perm) + " of shape " + sym_shape_str(ps));
      for (auto i : perm) r.push_back(ps.at(size_t(i)));
      return r;
    }
    case PAD: case SHRINK: {
      SShape ps = src(0), lo = as_sym_shape(u.src(1)), sz = as_sym_shape(u.src(2));
      if (lo.size() != ps.size() || sz.size() != ps.size()) throw Error(name + ": arg of " + std::to_string(lo.size()) + " dims for shape " + sym_shape_str(ps));
      return sz;
    }
    case FLIP: return src(0);
    case REDUCE: {
      SShape ps = src(0);
      int64_t n = u.arg().ints().at(1);
      if (n < 0 || n > int64_t(ps.size())) throw Error("REDUCE: invalid number of axes " + std::to_string(n));
      return SShape(ps.begin() + n, ps.end());
    }
    case STAGE: {
      SShape r;
      for (size_t i = 1; i < u.src().size(); i++) r.push_back(UOp::const_(u.src(i).vmax().i + 1));  // ints: buffers have their max size
      SShape b = src(0);
      r.insert(r.end(), b.begin(), b.end());
      return r;
    }
    default: break;
  }
  if (GroupOp::Unary.has(u.op()) || u.op() == CAST) return src(0);
  if (GroupOp::Broadcastable.has(u.op())) {
    std::vector<SShape> shapes;
    size_t nd = 0;
    for (size_t i = 0; i < u.src().size(); i++) shapes.push_back(src(i)), nd = std::max(nd, shapes.back().size());
    SShape out(nd, UOp::const_(int64_t(1)));
    for (auto& s : shapes)
      for (size_t i = 0; i < s.size(); i++) {
        UOp& o = out[nd - s.size() + i];
        if (is1(s[i]) || s[i] == o) continue;
        if (!is1(o)) throw Error(name + ": shapes cannot be broadcast together (" + sym_shape_str(s) + " and " + sym_shape_str(out) + ")");
        o = s[i];
      }
    return out;
  }
  throw Error(name + ": symbolic shapes are not supported here");
}
}  // namespace

const std::optional<Shape>* UOp::shape_if_valid() const {
  p->props();
  UOpNode::Cache& c = *p->cache;
  if (!c.shape && !c.shape_error) {
    std::shared_ptr<const std::string> err;
    bool sym = false;
    try {
      std::optional<Shape> s = compute_shape(*this, err, sym);
      if (!err) c.shape = std::move(s);
    } catch (const Error& e) {
      if (!err) err = std::make_shared<const std::string>(e.what());
    } catch (...) {
      if (!err && !sym) throw;  // where an earlier failure was recorded, it is the one a throw would have reported
    }
    if (err && sym) {  // a symbolic dim on the way: the shape with sint dims decides (and may come out all ints)
      try {
        SShape ss = compute_sym_shape(*this);
        if (auto is = int_shape(ss)) c.shape = std::optional<Shape>(std::move(*is)), err = nullptr;
        else err = std::make_shared<const std::string>(std::string(op_name(op())) + ": the shape " + sym_shape_str(ss) +
                                                       " is symbolic: read it with sym_shape()");
        c.sym_shape = std::move(ss);
      } catch (const Error& e) {
        err = std::make_shared<const std::string>(e.what());
      }
    }
    c.shape_error = std::move(err);
  }
  return c.shape ? &*c.shape : nullptr;
}

const SShape& UOp::sym_shape() const {
  if (const auto* s = shape_if_valid()) {
    if (!*s) throw Error("shape requested, but " + std::string(op_name(op())) + " doesn't have a shape");
    if (!p->cache->sym_shape) {
      SShape r;
      for (auto x : **s) r.push_back(const_(x));
      p->cache->sym_shape = std::move(r);
    }
    return *p->cache->sym_shape;
  }
  if (!p->cache->sym_shape) throw Error(*p->cache->shape_error);
  return *p->cache->sym_shape;
}
bool UOp::has_sym_shape() const { return !shape_if_valid() && p->cache->sym_shape; }
const std::optional<Shape>& UOp::shape_opt() const {
  if (const auto* s = shape_if_valid()) return *s;
  throw Error(*p->cache->shape_error);
}
const Shape& UOp::shape() const {
  const auto& s = shape_opt();
  if (!s) throw Error("shape requested, but " + std::string(op_name(op())) + " doesn't have a shape");
  return *s;
}

// ***** 4. stable content key *****

const std::array<uint8_t, 32>& UOp::key() const {
  for (auto* n : topo_nodes()) {
    if (n->cache && n->cache->key) continue;
    Sha256 h;
    std::ostringstream os;
    os << "(" << op_name(n->op) << ", " << n->dtype << ", " << n->arg.str() << ")";
    std::string head = os.str();
    h.update(head.data(), head.size());
    for (uint32_t i = 0; i < n->nsrc; i++) h.update(n->srcs()[i].get()->cache->key->data(), 32);
    n->props();
    n->cache->key = h.digest();
  }
  return *p->cache->key;
}

}  // namespace tg
