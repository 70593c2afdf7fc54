// Movement ops on UOp as tinygrad builds them in the tensor graph (1.-4. UOp._mop and the MovementMixin front ends),
// and tinygrad's uop/movement.py: 5. mop_cleanup, 6. pm_mops (in tinygrad's schedule/rangeify.py, marked to move here).
#include "uop/movement.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "uop/pattern_helpers.h"
#include "uop/symbolic.h"

namespace tg {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); i++) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

int64_t mul_checked(int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw Error(std::string(what) + ": " + std::to_string(a) + " * " + std::to_string(b) + " overflows int64");
  return r;
}

int64_t prod(const std::vector<int64_t>& s) {
  int64_t r = 1;
  for (auto x : s)
    if (__builtin_mul_overflow(r, x, &r)) throw Error("shape " + shape_str(s) + " has more elements than int64 can count");
  return r;
}

Shape broadcast_shape(const std::vector<Shape>& shapes) {
  size_t nd = 0;
  for (auto& s : shapes) nd = std::max(nd, s.size());
  Shape out(nd, 1);
  for (auto& s : shapes)
    for (size_t i = 0; i < s.size(); i++) {
      int64_t& o = out[nd - s.size() + i];
      o = (o == 0 || s[i] == 0) ? 0 : std::max(o, s[i]);
    }
  return out;
}

UOp shape_to_shape_arg(const std::vector<int64_t>& arg) {
  std::vector<UOp> src;
  src.reserve(arg.size());
  for (auto x : arg) src.push_back(UOp::const_(ConstVal(x)));
  return src.size() == 1 ? src[0] : UOp::stack(src);
}

namespace {
using Pairs = std::vector<std::pair<int64_t, int64_t>>;

std::string pairs_str(const Pairs& p) {
  std::string r = "(";
  for (size_t i = 0; i < p.size(); i++) r += (i ? ", " : "") + shape_str({p[i].first, p[i].second});
  return r + (p.size() == 1 ? ",)" : ")");
}


bool is_const_shape(const UOp& u) {
  if (u.op() == Ops::CONST) return true;
  if (u.op() != Ops::STACK) return false;
  for (auto& s : u.src()) if (s.op() != Ops::CONST) return false;
  return true;
}

// UOp.sink(*usrcs).simplify().src: constant shapes are already as simple as they get, so the rewrite is skipped for them
std::vector<UOp> simplify_shape_args(std::vector<UOp> usrcs) {
  if (std::all_of(usrcs.begin(), usrcs.end(), is_const_shape)) return usrcs;
  UOp s = UOp::sink(usrcs).simplify();
  return {s.src().begin(), s.src().end()};
}

// throws where the node's shape is invalid (a symbolic shape is valid)
void validate_shape(const UOp& u) {
  if (!u.shape_if_valid() && !u.has_sym_shape()) (void)u.shape();
}

// Python's dim resolution: -ndim <= d < ndim (a 0-d shape accepts -1 and 0)
int64_t resolve_dim(const char* op, int64_t d, const Shape& shape, bool extra = false) {
  int64_t total = int64_t(shape.size()) + (extra ? 1 : 0), hi = std::max<int64_t>(1, total);
  if (d < -hi || d > hi - 1)
    throw Error(std::string(op) + ": dim " + std::to_string(d) + " out of range [" + std::to_string(-hi) + ", " + std::to_string(hi - 1) +
                "] for shape " + shape_str(shape));
  return d < 0 ? d + total : d;
}
}  // namespace

// ***** 1. _mop: the raw node *****

UOp UOp::mop(Ops op, const std::vector<int64_t>& arg) const {
  switch (op) {
    case Ops::EXPAND: if (arg.empty()) return *this; [[fallthrough]];
    case Ops::RESHAPE: {
      std::vector<UOp> src{*this};
      for (auto& a : simplify_shape_args({shape_to_shape_arg(arg)})) src.push_back(a);
      UOp ret = make(op, dtype(), src);
      validate_shape(ret);  // bad shapes are refused at construction
      return ret;
    }
    case Ops::PERMUTE: case Ops::FLIP: {
      Arg::Ints a(arg);
      if (op == Ops::FLIP)
        for (auto x : a) if (x != 0 && x != 1) throw Error("FLIP: the arg must be one 0/1 per axis, got " + shape_str(arg));
      UOp ret = make(op, dtype(), {*this}, Arg(std::move(a)));
      validate_shape(ret);
      return ret;
    }
    default: throw Error(std::string(op_name(op)) + " is not a movement op taking a tuple");
  }
}

UOp UOp::mop_pairs(Ops op, const std::vector<std::pair<int64_t, int64_t>>& arg) const {
  if (op != Ops::PAD && op != Ops::SHRINK) throw Error(std::string(op_name(op)) + " is not a movement op taking pairs");
  if (arg.empty()) {
    if (!shape().empty()) throw Error(std::string(op_name(op)) + ": an empty arg is only valid on a 0-d shape, got " + shape_str(shape()));
    return *this;
  }
  std::vector<int64_t> a, b;
  for (auto& [x, y] : arg) a.push_back(x), b.push_back(y);
  std::vector<UOp> s{*this};
  for (auto& u : simplify_shape_args({shape_to_shape_arg(a), shape_to_shape_arg(b)})) s.push_back(u);
  UOp ret = make(op, dtype(), s);
  validate_shape(ret);
  return ret;
}

// ***** 2. marg / base *****

Shape UOp::marg() const {
  switch (op()) {
    case Ops::RESHAPE: case Ops::EXPAND: return as_shape(src(1));
    case Ops::PERMUTE: case Ops::FLIP: return arg().ints();
    case Ops::PAD: case Ops::SHRINK: throw Error(std::string(op_name(op())) + ": its marg is (begin, size) pairs, use marg_pairs()");
    default: throw Error(std::string(op_name(op())) + " is not a movement op");
  }
}

std::vector<std::pair<int64_t, int64_t>> UOp::marg_pairs() const {
  if (op() != Ops::PAD && op() != Ops::SHRINK) throw Error(std::string(op_name(op())) + " is not PAD or SHRINK");
  Shape a = as_shape(src(1)), b = as_shape(src(2));
  Pairs r;
  for (size_t i = 0; i < std::min(a.size(), b.size()); i++) r.push_back({a[i], b[i]});
  return r;
}

UOp UOp::base() const {
  UOp u = *this;
  while (GroupOp::Movement.has(u.op()) || u.op() == Ops::DETACH) u = u.src(0);
  return u;
}

// ***** 3. the front ends (tinygrad's MovementMixin) *****

UOp UOp::reshape(const Shape& new_shape_in) const {
  const Shape& s = shape();
  Shape ns = new_shape_in;
  if (std::count(ns.begin(), ns.end(), -1) > 1)
    throw Error("RESHAPE: only one dimension can be inferred using -1, got " + shape_str(ns) + " for shape " + shape_str(s));
  if (std::count(ns.begin(), ns.end(), -1) == 1) {
    int64_t known = -prod(ns);
    if (known == 0) throw Error("RESHAPE: cannot infer the -1 dimension of " + shape_str(ns) + " from " + shape_str(s));
    for (auto& x : ns) if (x == -1) x = prod(s) / known;  // a quotient that is not exact fails the element count check
  }
  for (auto x : ns)
    if (x < 0) throw Error("RESHAPE: shape can't contain negative numbers, cannot reshape " + shape_str(s) + " to " + shape_str(new_shape_in));
  if (prod(s) != prod(ns)) throw Error("RESHAPE: cannot reshape " + shape_str(s) + " to " + shape_str(new_shape_in));
  if (ns == s) return *this;
  return mop(Ops::RESHAPE, ns);
}

namespace {
// expand squeezes the size-1 axes it widens and EXPANDs them back as leading axes (after the n_left new ones), the kept
// axes after them: the permutation that puts every axis back in its place
std::vector<int64_t> expand_order(size_t n_left, const std::vector<int64_t>& expand_at, const std::vector<int64_t>& kept) {
  std::vector<int64_t> perm;
  for (size_t i = 0; i < n_left; i++) perm.push_back(int64_t(i));
  for (size_t i = 0; i < expand_at.size() + kept.size(); i++) {
    auto e = std::find(expand_at.begin(), expand_at.end(), int64_t(i));
    auto k = std::find(kept.begin(), kept.end(), int64_t(i));
    perm.push_back(int64_t(n_left) + (e != expand_at.end() ? e - expand_at.begin() : int64_t(expand_at.size()) + (k - kept.begin())));
  }
  return perm;
}
}  // namespace

UOp UOp::expand(const Shape& shape_in) const {
  const Shape s = shape();
  size_t nd = std::max(s.size(), shape_in.size());
  Shape src_al(nd - s.size(), 1), arg_al(nd - shape_in.size(), 1);
  src_al.insert(src_al.end(), s.begin(), s.end());
  arg_al.insert(arg_al.end(), shape_in.begin(), shape_in.end());
  Shape ns(nd);
  for (size_t i = 0; i < nd; i++) ns[i] = arg_al[i] == -1 ? src_al[i] : arg_al[i];
  if (ns == s) return *this;
  // _broadcast_to: every dim either stays or is 1
  for (size_t i = 0; i < nd; i++)
    if (src_al[i] != ns[i] && src_al[i] != 1) throw Error("EXPAND: cannot broadcast " + shape_str(s) + " to " + shape_str(ns));
  for (auto x : ns) if (x < 0) throw Error("EXPAND: shape can't contain negative numbers, cannot broadcast " + shape_str(s) + " to " + shape_str(ns));
  // EXPAND only adds dims on the left: squeeze the 1s being expanded, EXPAND them in front, permute back
  size_t n_left = nd - s.size();
  std::vector<int64_t> expand_at, kept;
  for (size_t i = 0; i < s.size(); i++) (s[i] == 1 && ns[n_left + i] != 1 ? expand_at : kept).push_back(int64_t(i));
  Shape squeezed_shape, expand_arg(ns.begin(), ns.begin() + int64_t(n_left));
  for (auto i : kept) squeezed_shape.push_back(s[i]);
  for (auto i : expand_at) expand_arg.push_back(ns[n_left + i]);
  UOp expanded = reshape(squeezed_shape).mop(Ops::EXPAND, expand_arg);
  return expanded.permute(expand_order(n_left, expand_at, kept));
}

UOp UOp::permute(const std::vector<int64_t>& order) const {
  const Shape s = has_sym_shape() ? Shape(sym_shape().size(), -1) : shape();  // only the rank matters here
  std::vector<int64_t> o;
  for (auto d : order) o.push_back(resolve_dim("PERMUTE", d, s));
  std::vector<int64_t> sorted = o, iota(s.size());
  std::sort(sorted.begin(), sorted.end());
  std::iota(iota.begin(), iota.end(), 0);
  if (sorted != iota) throw Error("PERMUTE: " + shape_str(order) + " is not a valid permutation of shape " + shape_str(s));
  return o == iota ? *this : mop(Ops::PERMUTE, o);
}

UOp UOp::pad(const std::vector<std::pair<int64_t, int64_t>>& before_after) const {
  const Shape s = shape();
  if (before_after.size() != s.size())
    throw Error("PAD: got " + std::to_string(before_after.size()) + " (before, after) pairs for shape " + shape_str(s));
  Pairs arg;
  for (size_t i = 0; i < s.size(); i++) {
    auto [b, a] = before_after[i];
    if (b < 0 || a < 0) throw Error("PAD: invalid pad " + pairs_str(before_after) + " for shape " + shape_str(s));
    arg.push_back({b, s[i] + b + a});
  }
  UOp ret = mop_pairs(Ops::PAD, arg);
  return ret.shape() == s ? *this : ret;
}

UOp UOp::shrink(const std::vector<std::pair<int64_t, int64_t>>& start_end) const {
  const Shape s = shape();
  if (start_end.size() != s.size())
    throw Error("SHRINK: got " + std::to_string(start_end.size()) + " (start, end) pairs for shape " + shape_str(s));
  Pairs arg;
  for (size_t i = 0; i < s.size(); i++) {
    auto [b, e] = start_end[i];
    if (b < 0 || e < b || e > s[i]) throw Error("SHRINK: invalid shrink " + pairs_str(start_end) + " for shape " + shape_str(s));
    arg.push_back({b, e - b});
  }
  UOp ret = mop_pairs(Ops::SHRINK, arg);
  return ret.shape() == s ? *this : ret;
}

UOp UOp::flip(const std::vector<int64_t>& axes) const {
  const Shape& s = shape();
  std::vector<int64_t> flip_arg(s.size(), 0);
  for (auto d : axes) {
    int64_t a = resolve_dim("FLIP", d, s);
    if (a >= int64_t(s.size())) throw Error("FLIP: axis " + std::to_string(d) + " out of range for shape " + shape_str(s));
    if (flip_arg[a]) throw Error("FLIP: dim can appear at most once, got " + shape_str(axes) + " for shape " + shape_str(s));
    flip_arg[a] = 1;
  }
  return std::any_of(flip_arg.begin(), flip_arg.end(), [](int64_t x) { return x != 0; }) ? mop(Ops::FLIP, flip_arg) : *this;
}

// ***** 4. derived ones *****

UOp UOp::shrink_to(const Shape& ns) const {
  Pairs arg;
  for (auto x : ns) arg.push_back({0, x});
  return shrink(arg);
}

UOp UOp::pad_to(const Shape& ns) const {
  const Shape s = shape();
  if (ns.size() != s.size()) throw Error("PAD: cannot pad shape " + shape_str(s) + " to " + shape_str(ns));
  Pairs arg;
  for (auto x : ns) arg.push_back({0, x});
  UOp ret = mop_pairs(Ops::PAD, arg);
  return ret.shape() == s ? *this : ret;
}

UOp UOp::squeeze(std::optional<int64_t> dim) const {
  const Shape& s = shape();
  Shape ns;
  if (!dim) {
    for (auto x : s) if (x != 1) ns.push_back(x);
    return reshape(ns);
  }
  int64_t d = resolve_dim("SQUEEZE", *dim, s);
  if (s.empty() || s[d] != 1) return *this;
  ns = s;
  ns.erase(ns.begin() + d);
  return reshape(ns);
}

UOp UOp::unsqueeze(int64_t dim) const {
  Shape ns = shape();
  ns.insert(ns.begin() + resolve_dim("UNSQUEEZE", dim, ns, true), 1);
  return reshape(ns);
}

UOp UOp::flatten(int64_t start_dim, int64_t end_dim) const {
  const Shape& s = shape();
  int64_t a = resolve_dim("FLATTEN", start_dim, s), b = resolve_dim("FLATTEN", end_dim, s);
  Shape ns(s.begin(), s.begin() + std::min<int64_t>(a, int64_t(s.size())));
  int64_t p = 1;
  for (int64_t i = a; i <= b && i < int64_t(s.size()); i++) p *= s[i];
  ns.push_back(p);
  if (b + 1 < int64_t(s.size())) ns.insert(ns.end(), s.begin() + b + 1, s.end());
  return reshape(ns);
}

UOp UOp::unflatten(int64_t dim, const Shape& sizes) const {
  const Shape& s = shape();
  int64_t d = resolve_dim("UNFLATTEN", dim, s);
  Shape ns(s.begin(), s.begin() + std::min<int64_t>(d, int64_t(s.size())));
  ns.insert(ns.end(), sizes.begin(), sizes.end());
  if (d + 1 < int64_t(s.size())) ns.insert(ns.end(), s.begin() + d + 1, s.end());
  return reshape(ns);
}

UOp UOp::transpose(int64_t dim0, int64_t dim1) const {
  const Shape s = has_sym_shape() ? Shape(sym_shape().size(), -1) : shape();
  int64_t n = int64_t(s.size());
  auto at = [&](int64_t d) {  // Python list indexing
    if (d < -n || d >= n) throw Error("TRANSPOSE: dim " + std::to_string(d) + " out of range for shape " + shape_str(s));
    return d < 0 ? d + n : d;
  };
  std::vector<int64_t> order(s.size());
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[at(dim0)], order[at(dim1)]);
  return permute(order);
}

// ***** 4b. the front ends with sint arguments (tinygrad's movement mixin on symbolic shapes) *****

namespace {
UOp sdim(const UOp& x) { return x.op() == Ops::CONST ? x : x.simplify(); }
bool is_int(const UOp& d, int64_t v) { return d.op() == Ops::CONST && d.val().is_int() && d.val().i == v; }
// provably false: the comparison's bounds say so (an unresolvable one is allowed, as tinygrad's resolve(..., True))
bool surely_lt(const UOp& a, const UOp& b) { return a.vmax() < b.vmin(); }
std::string pairs_sym_str(const std::vector<std::pair<UOp, UOp>>& p) {
  std::string r = "(";
  for (size_t i = 0; i < p.size(); i++) r += (i ? ", " : "") + sym_shape_str({p[i].first, p[i].second});
  return r + (p.size() == 1 ? ",)" : ")");
}
UOp sym_arg(const SShape& s) { return s.size() == 1 ? s[0] : UOp::stack(s); }
}  // namespace

UOp UOp::reshape_sym(const SShape& shape_in) const {
  SShape ns;
  for (auto& d : shape_in) ns.push_back(sdim(d));
  if (auto is = int_shape(ns); is && !has_sym_shape()) return reshape(*is);
  const SShape& s = sym_shape();
  if (auto n1 = std::count_if(ns.begin(), ns.end(), [](const UOp& d) { return is_int(d, -1); }); n1 > 1)
    throw Error("RESHAPE: only one dimension can be inferred using -1, got " + sym_shape_str(ns) + " for shape " + sym_shape_str(s));
  else if (n1 == 1) {  // the -1 is the element count over the product of the others
    UOp all = const_(int64_t(1)), known = const_(int64_t(1));
    for (auto& d : s) all = all * d;
    for (auto& d : ns) if (!is_int(d, -1)) known = known * d;
    for (auto& d : ns) if (is_int(d, -1)) d = sdim(all / known);
  }
  for (auto& d : ns)
    if (surely_lt(d, const_(int64_t(0)))) throw Error("RESHAPE: shape can't contain negative numbers, cannot reshape " + sym_shape_str(s) + " to " + sym_shape_str(ns));
  if (ns == s) return *this;
  UOp ret = make(Ops::RESHAPE, dtype(), {*this, sym_arg(ns)});
  (void)ret.sym_shape();  // validates the element count
  return ret;
}

UOp UOp::expand_sym(const SShape& shape_in) const {
  if (auto is = int_shape(shape_in); is && !has_sym_shape()) return expand(*is);
  const SShape s = sym_shape();
  size_t nd = std::max(s.size(), shape_in.size());
  SShape src_al(nd - s.size(), const_(int64_t(1))), ns;
  src_al.insert(src_al.end(), s.begin(), s.end());
  SShape arg_al(nd - shape_in.size(), const_(int64_t(1)));
  for (auto& d : shape_in) arg_al.push_back(sdim(d));
  for (size_t i = 0; i < nd; i++) ns.push_back(is_int(arg_al[i], -1) ? src_al[i] : arg_al[i]);
  if (ns == s) return *this;
  for (size_t i = 0; i < nd; i++)
    if (src_al[i] != ns[i] && !is_int(src_al[i], 1)) throw Error("EXPAND: cannot broadcast " + sym_shape_str(s) + " to " + sym_shape_str(ns));
  // as expand(): squeeze the 1s being expanded, EXPAND them in front, permute back
  size_t n_left = nd - s.size();
  std::vector<int64_t> expand_at, kept;
  for (size_t i = 0; i < s.size(); i++) (is_int(s[i], 1) && !is_int(ns[n_left + i], 1) ? expand_at : kept).push_back(int64_t(i));
  SShape squeezed, expand_arg(ns.begin(), ns.begin() + int64_t(n_left));
  for (auto i : kept) squeezed.push_back(s[size_t(i)]);
  for (auto i : expand_at) expand_arg.push_back(ns[n_left + size_t(i)]);
  UOp sq = reshape_sym(squeezed);
  UOp expanded = expand_arg.empty() ? sq : make(Ops::EXPAND, dtype(), {sq, sym_arg(expand_arg)});
  return expanded.permute(expand_order(n_left, expand_at, kept));
}

UOp UOp::shrink_sym(const std::vector<std::pair<UOp, UOp>>& start_end) const {
  const SShape s = sym_shape();
  if (start_end.size() != s.size())
    throw Error("SHRINK: got " + std::to_string(start_end.size()) + " (start, end) pairs for shape " + sym_shape_str(s));
  SShape lo, sz;
  for (size_t i = 0; i < s.size(); i++) {
    UOp b = sdim(start_end[i].first), e = sdim(start_end[i].second);
    if (surely_lt(b, const_(int64_t(0))) || surely_lt(e, b) || surely_lt(s[i], e))
      throw Error("SHRINK: invalid shrink " + pairs_sym_str(start_end) + " for shape " + sym_shape_str(s));
    lo.push_back(b), sz.push_back(sdim(e - b));
  }
  if (sz == s) return *this;
  std::vector<UOp> src{*this};
  for (auto& a : simplify_shape_args({sym_arg(lo), sym_arg(sz)})) src.push_back(a);
  UOp ret = make(Ops::SHRINK, dtype(), src);
  (void)ret.sym_shape();
  return ret;
}

UOp UOp::pad_sym(const std::vector<std::pair<UOp, UOp>>& before_after) const {
  const SShape s = sym_shape();
  if (before_after.size() != s.size())
    throw Error("PAD: got " + std::to_string(before_after.size()) + " (before, after) pairs for shape " + sym_shape_str(s));
  SShape lo, sz;
  for (size_t i = 0; i < s.size(); i++) {
    UOp b = sdim(before_after[i].first), a = sdim(before_after[i].second);
    if (surely_lt(b, const_(int64_t(0))) || surely_lt(a, const_(int64_t(0))))
      throw Error("PAD: invalid pad " + pairs_sym_str(before_after) + " for shape " + sym_shape_str(s));
    lo.push_back(b), sz.push_back(sdim(s[i] + b + a));
  }
  if (sz == s) return *this;
  std::vector<UOp> src{*this};
  for (auto& a : simplify_shape_args({sym_arg(lo), sym_arg(sz)})) src.push_back(a);
  UOp ret = make(Ops::PAD, dtype(), src);
  (void)ret.sym_shape();
  return ret;
}

// ***** 5. mop_cleanup *****

namespace {
// a node's shape, or none where it has none (or computing it fails: the rule then does not apply)
std::optional<Shape> shape_of(const UOp& u) {
  const auto* s = u.shape_if_valid();
  return s ? *s : std::nullopt;
}

// tinygrad's UOp.index: a single constant index into a STACK is that source
UOp index_into(const UOp& base, std::span<const UOp> idx) {
  if (idx.size() == 1 && idx[0].op() == Ops::CONST && base.op() == Ops::STACK) return base.src(size_t(idx[0].val().i));
  return base.index(idx);
}
}  // namespace

const PatternMatcher& mop_cleanup() {
  static const PatternMatcher pm = [] {
    using enum Ops;
    return PatternMatcher{
        // merge adjacent RESHAPEs
        UPat(RESHAPE, {}, {UPat(RESHAPE, {}, {}, {}, "x2"), UPat()}, {}, "x") >> [](M m) {
          return m["x"].replace({.src = std::vector<UOp>{m["x2"].src(0), m["x"].src(1)}});
        },
        // a RESHAPE to the shape it already has
        UPat(RESHAPE, {}, {UPat::var("x2"), UPat()}, {}, "x") >> [](M m) {
          auto s = shape_of(m["x2"]), xs = shape_of(m["x"]);
          return s && xs && *s == *xs ? m["x2"] : UOp();
        },
        // merge PERMUTEs
        UPat(PERMUTE, {}, {UPat(PERMUTE, {}, {}, {}, "x2")}, {}, "x") >> [](M m) {
          const auto &inner = m["x2"].arg().ints(), &outer = m["x"].arg().ints();
          Arg::Ints a;
          for (auto i : outer) a.push_back(inner.at(size_t(i)));
          return m["x2"].replace({.arg = Arg(std::move(a))});
        },
        // identity PERMUTE
        UPat(PERMUTE, {}, {}, {}, "x") >> [](M m) {
          const auto& a = m["x"].arg().ints();
          for (size_t i = 0; i < a.size(); i++) if (a[i] != int64_t(i)) return UOp();
          return m["x"].src(0);
        },
        // a STACK of src[0], src[1], ... src[n-1] is src
        UPat(STACK, {}, {}, {}, "stk").src_repeat(UPat(INDEX, {}, {UPat::var("src"), UPat(CONST)})) >> [](M m) {
          const UOp &stk = m["stk"], &src = m["src"];
          if (stk.src().empty()) return UOp();
          auto ss = shape_of(stk), s = shape_of(src);
          if (!ss || !s || *ss != *s) return UOp();
          for (size_t i = 0; i < stk.src().size(); i++) {
            const ConstVal& v = stk.src(i).src(1).val();
            if (!v.is_int() || v.i != int64_t(i)) return UOp();
          }
          return src;
        },
        // a constant INDEX into a STACK is that source
        UPat(INDEX, {}, {UPat(STACK, {}, {}, {}, "a"), UPat::cvar("i")}, {}, "idx", true) >> [](M m) {
          const UOp &a = m["a"], &idx = m["idx"];
          const ConstVal& v = m["i"].val();
          int64_t n = int64_t(a.src().size()), i = v.is_int() ? (v.i < 0 ? v.i + n : v.i) : -1;  // Python indexing
          if (i < 0 || i >= n) return UOp();
          const UOp& s = a.src(size_t(i));
          return idx.src().size() <= 2 ? s : index_into(s, idx.src().subspan(2));
        },
        // INDEX of an INDEX with scalar indices is one INDEX
        UPat(INDEX, {}, {UPat(INDEX, {}, {}, {}, "idx1", true)}, {}, "idx2", true) >> [](M m) {
          const UOp &idx1 = m["idx1"], &idx2 = m["idx2"];
          std::vector<UOp> all(idx1.src().begin() + 1, idx1.src().end());
          all.insert(all.end(), idx2.src().begin() + 1, idx2.src().end());
          for (auto& x : all) { auto s = shape_of(x); if (!s || !s->empty()) return UOp(); }
          return index_into(idx1.src(0), all);
        },
        // INDEX of a shaped INDEX: index the index
        UPat(INDEX, {}, {UPat(INDEX, {}, {UPat::var("buf"), UPat::var("idx1_arg")})}, {}, "idx2", true) >> [](M m) {
          const UOp& idx2 = m["idx2"];
          auto s = shape_of(m["idx1_arg"]);
          if (!s || s->size() != idx2.src().size() - 1) return UOp();
          return index_into(m["buf"], std::vector<UOp>{index_into(m["idx1_arg"], idx2.src().subspan(1))});
        },
    }.pure();
  }();
  return pm;
}

// ***** 6. pm_mops: movement ops on INDEX become index math (apply_movement_op: tinygrad's schedule/indexing.py) *****

namespace {
using enum Ops;
using namespace pat;
}  // namespace

MovementArg MovementArg::of(const UOp& mop) {
  MovementArg a;
  if (mop.op() == PAD || mop.op() == SHRINK) a.pairs = mop.marg_pairs();
  else a.ints = mop.marg();
  return a;
}

namespace {
// the index of each input axis from the output ranges (int or symbolic dims): ranges become placeholders while the
// flat index is split, so the symbolic rewrite sees plain variables
template <class Dims> std::vector<UOp> apply_reshape(const Dims& in_shape, const Dims& out_shape, std::span<const UOp> rngs) {
  static const PatternMatcher pm = symbolic() + pm_simplify_valid() + pm_drop_and_clauses();
  UOp sink = UOp::sink(std::vector<UOp>(rngs.begin(), rngs.end())).simplify();
  std::unordered_map<UOp, UOp> sub, back;
  int64_t i = 0;
  for (auto& r : sink.ranges()) {
    UOp ph = r.replace({.src = std::vector<UOp>{r.src(0)}, .arg = Arg{i++, int64_t(AxisType::PLACEHOLDER)}});
    sub[r] = ph;
    back[ph] = r;
  }
  UOp urngs = sink.substitute(sub);
  auto acc = [] { if constexpr (std::is_same_v<typename Dims::value_type, UOp>) return UOp::const_(int64_t(1)); else return int64_t(1); }();
  std::vector<UOp> axes_in;
  for (size_t k = std::min(out_shape.size(), urngs.src().size()); k-- > 0;) {
    axes_in.push_back(acc * urngs.src(k));
    acc = acc * out_shape[k];
  }
  UOp combined = UOp::const_(int64_t(0)).usum(axes_in);
  std::vector<UOp> axes_out;
  for (size_t k = in_shape.size(); k-- > 0;) {
    axes_out.push_back(combined % in_shape[k]);
    combined = combined / in_shape[k];
  }
  std::reverse(axes_out.begin(), axes_out.end());
  UOp res = graph_rewrite(UOp::sink(axes_out), pm).substitute(back);
  return {res.src().begin(), res.src().end()};
}
}  // namespace

std::vector<UOp> apply_movement_op(Ops op, const Shape& in_shape, const MovementArg& arg, std::span<const UOp> rngs) {
  std::vector<UOp> out;
  switch (op) {
    case SHRINK:
      for (size_t i = 0; i < rngs.size(); i++) out.push_back(arg.pairs[i].first == 0 ? rngs[i] : rngs[i] + arg.pairs[i].first);
      return out;
    case PERMUTE: {
      std::vector<int64_t> inv(arg.ints.size());
      for (size_t i = 0; i < arg.ints.size(); i++) inv[arg.ints[i]] = int64_t(i);
      for (auto p : inv) out.push_back(rngs[p]);
      return out;
    }
    case FLIP:
      for (size_t i = 0; i < rngs.size(); i++) out.push_back(arg.ints[i] ? (in_shape[i] - 1) - rngs[i] : rngs[i]);
      return out;
    case EXPAND: return {rngs.begin() + std::min(arg.ints.size(), rngs.size()), rngs.end()};
    case PAD: {
      static const PatternMatcher pm = symbolic() + pm_simplify_valid();
      for (size_t i = 0; i < rngs.size(); i++) {
        auto [off, sz] = arg.pairs[i];
        const UOp& r = rngs[i];
        if (sz == in_shape[i] && off == 0) out.push_back(r);
        else out.push_back((r - off).valid(graph_rewrite((r >= off) & (r < (in_shape[i] + off)), pm)));
      }
      return out;
    }
    case RESHAPE: {
      // constant indices (devectorized elements): the integer math the symbolic rewrite below would fold to
      auto nonneg_int = [](const UOp& r) { return r.op() == CONST && r.dtype() == dtypes::weakint && r.val().is_int() && r.val().i >= 0; };
      if (std::all_of(rngs.begin(), rngs.end(), nonneg_int) && std::all_of(in_shape.begin(), in_shape.end(), [](int64_t s) { return s > 0; })) {
        int64_t flat = 0, acc = 1;
        for (size_t k = std::min(arg.ints.size(), rngs.size()); k-- > 0;) flat += acc * rngs[k].val().i, acc *= arg.ints[k];
        out.resize(in_shape.size());
        for (size_t k = in_shape.size(); k-- > 0;) out[k] = UOp::const_(flat % in_shape[k]), flat /= in_shape[k];
        return out;
      }
      return apply_reshape(in_shape, arg.ints, rngs);
    }
    default: throw Error(std::string(op_name(op)) + " is not a movement op");
  }
}

bool is_symbolic_mop(const UOp& x) {
  if (x.has_sym_shape() || x.src(0).has_sym_shape()) return true;
  for (size_t i = 1; i < x.src().size(); i++)
    for (auto& d : as_sym_shape(x.src(i))) if (d.op() != CONST) return true;
  return false;
}

std::vector<UOp> apply_movement_op_sym(const UOp& x, std::span<const UOp> rngs) {
  const SShape& in_shape = x.src(0).sym_shape();
  std::vector<UOp> out;
  switch (x.op()) {
    case SHRINK: {
      SShape lo = as_sym_shape(x.src(1));
      for (size_t i = 0; i < rngs.size(); i++) out.push_back(lo[i].op() == CONST && lo[i].val().i == 0 ? rngs[i] : rngs[i] + lo[i]);
      return out;
    }
    case PAD: {
      static const PatternMatcher pm = symbolic() + pm_simplify_valid();
      SShape lo = as_sym_shape(x.src(1)), sz = as_sym_shape(x.src(2));
      for (size_t i = 0; i < rngs.size(); i++) {
        const UOp &r = rngs[i], &off = lo[i];
        if (sz[i] == in_shape[i] && off.op() == CONST && off.val().i == 0) out.push_back(r);
        else out.push_back((r - off).valid(graph_rewrite((r >= off) & (r < (in_shape[i] + off)), pm)));
      }
      return out;
    }
    case FLIP:
      for (size_t i = 0; i < rngs.size(); i++) out.push_back(x.arg().ints()[i] ? (in_shape[i] - 1) - rngs[i] : rngs[i]);
      return out;
    case EXPAND: return {rngs.begin() + std::min(as_sym_shape(x.src(1)).size(), rngs.size()), rngs.end()};
    case PERMUTE: return apply_movement_op(PERMUTE, Shape(in_shape.size(), 1), MovementArg::of(x), rngs);
    case RESHAPE: return apply_reshape(in_shape, as_sym_shape(x.src(1)), rngs);
    default: throw Error(std::string(op_name(x.op())) + " is not a movement op");
  }
}

namespace {
UOp mop_index(const UOp& r, const UOp& idx) {
  std::span<const UOp> idxs = idx.src().subspan(1);
  if (is_symbolic_mop(r)) {
    if (idxs.size() != r.sym_shape().size()) return UOp();
    std::vector<UOp> src{r.src(0)};
    for (UOp& i : apply_movement_op_sym(r, idxs)) src.push_back(std::move(i));
    return UOp::make(INDEX, src, idx.arg());
  }
  const Shape &rs = r.shape(), &ss = r.src(0).shape();
  if (idxs.size() == rs.size()) {
    // the argument of a RESHAPE is its (cached) shape, of an EXPAND the shape's leading axes: no parsing per element
    MovementArg arg = r.op() == RESHAPE ? MovementArg{rs, {}}
                    : r.op() == EXPAND  ? MovementArg{Shape(rs.begin(), rs.end() - int64_t(ss.size())), {}}
                                        : MovementArg::of(r);
    std::vector<UOp> src{r.src(0)};
    for (UOp& i : apply_movement_op(r.op(), ss, arg, idxs)) src.push_back(std::move(i));
    return UOp::make(INDEX, src, idx.arg());
  }
  if (r.op() == RESHAPE) {
    int64_t rest = int64_t(rs.size()) - int64_t(idxs.size());
    int64_t src_prefix = int64_t(ss.size()) - rest;
    if (src_prefix >= 0 && Shape(ss.begin() + src_prefix, ss.end()) == Shape(rs.begin() + idxs.size(), rs.end())) {
      if (src_prefix == 0) return r.src(0).dtype() == idx.dtype() ? r.src(0) : UOp();
      MovementArg a;
      a.ints.assign(rs.begin(), rs.begin() + idxs.size());
      UOp ret = UOp::make(INDEX, cat({r.src(0)}, apply_movement_op(RESHAPE, Shape(ss.begin(), ss.begin() + src_prefix), a, idxs)), idx.arg());
      return ret.shape() == idx.shape() ? ret : UOp();
    }
  }
  return UOp();
}
}  // namespace

const PatternMatcher& pm_mops() {
  static const PatternMatcher pm = PatternMatcher{
      F(U::ops(GroupOp::Movement, "r"), INDEX, "idx", true) >> [](M m) { return mop_index(m["r"], m["idx"]); },
      // movement ops and INDEX move after AFTER
      F(U::ops(GroupOp::Movement | OpSet{INDEX}, "r"), AFTER, "a", true) >> [](M m) {
        const UOp &r = m["r"], &a = m["a"];
        UOp na = a.replace({.src = cat({r.src(0)}, tail(a.src(), 1))});
        return UOp::make(r.op(), cat({na}, tail(r.src(), 1)), r.arg());
      },
      F(U::ops(GroupOp::Movement, "r"), END, "a", true) >> [](M m) {
        return m["a"].replace({.src = cat({m["r"].src(0)}, tail(m["a"].src(), 1))});
      },
  }.pure();
  return pm;
}

}  // namespace tg
