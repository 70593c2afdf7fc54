// Movement ops on Tensor: the MovementMixin front ends (on UOp, src/uop/movement.cpp), OpMixin's pad with fill values,
// cat/stack/repeat, pooling and cumulative ops (tinygrad's mixin/movement.py and op.py). Indexing is getitem.cpp.
#include <algorithm>

#include "tensor/sint_impl.h"
#include "tensor/tensor_impl.h"
#include "uop/movement.h"
#include "util/env.h"

namespace tg {

namespace {
using Pairs = std::vector<std::pair<int64_t, int64_t>>;
int64_t floordiv(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0) ? 1 : 0); }
int64_t ceildiv(int64_t a, int64_t b) { return -floordiv(a, -b); }
Tensor W(const UOp& u) { return wrap(u); }
}  // namespace

// ***** 1. the MovementMixin front ends *****

// sint arguments, or a symbolic self, take the UOp's _sym front ends; ints on an int shape the int ones
Tensor Tensor::reshape(const SymShape& s) const {
  const UOp& x = uop_of(*this);
  auto is = s.ints();
  UOp u = is && !x.has_sym_shape() ? x.reshape(*is) : x.reshape_sym(to_sshape(s));
  return u == x ? *this : W(u);
}
Tensor Tensor::expand(const SymShape& s) const {
  const UOp& x = uop_of(*this);
  auto is = s.ints();
  UOp u = is && !x.has_sym_shape() ? x.expand(*is) : x.expand_sym(to_sshape(s));
  return u == x ? *this : W(u);
}
Tensor Tensor::permute(const std::vector<int64_t>& o) const { UOp u = uop_of(*this).permute(o); return u == uop_of(*this) ? *this : W(u); }
Tensor Tensor::shrink(const SymPairs& a) const {
  const UOp& x = uop_of(*this);
  auto is = a.ints();
  UOp u = is && !x.has_sym_shape() ? x.shrink(*is) : x.shrink_sym(to_upairs(a));
  return u == x ? *this : W(u);
}
Tensor Tensor::flip(Axis axis) const {
  UOp u = uop_of(*this).flip(axis.axes.value_or(std::vector<int64_t>{}));
  return u == uop_of(*this) ? *this : W(u);
}
Tensor Tensor::transpose(int64_t a, int64_t b) const { UOp u = uop_of(*this).transpose(a, b); return u == uop_of(*this) ? *this : W(u); }
Tensor Tensor::squeeze(std::optional<int64_t> d) const { UOp u = uop_of(*this).squeeze(d); return u == uop_of(*this) ? *this : W(u); }
Tensor Tensor::unsqueeze(int64_t d) const {
  if (!uop_of(*this).has_sym_shape()) return W(uop_of(*this).unsqueeze(d));
  SymShape s = sym_shape();
  s.insert(s.begin() + resolve_dim(*this, d, true, "unsqueeze"), sint(1));
  return reshape(s);
}
Tensor Tensor::flatten(int64_t a, int64_t b) const { UOp u = uop_of(*this).flatten(a, b); return u == uop_of(*this) ? *this : W(u); }
Tensor Tensor::unflatten(int64_t d, const Shape& s) const { UOp u = uop_of(*this).unflatten(d, s); return u == uop_of(*this) ? *this : W(u); }
Tensor Tensor::shrink_to(const Shape& s) const {
  if (s.size() != shape().size()) throw Error("SHRINK: cannot shrink shape " + shape_str() + " to " + tg::shape_str(s));
  UOp u = uop_of(*this).shrink_to(s);
  return u == uop_of(*this) ? *this : W(u);
}
Tensor Tensor::pad_to(const Shape& s) const { UOp u = uop_of(*this).pad_to(s); return u == uop_of(*this) ? *this : W(u); }

// ***** 2. OpMixin.pad: negative pads crop first, a non-zero fill masks the padded region *****

Tensor pad_constant(const Tensor& self, const Pairs& pX, ConstVal value) {
  bool has_neg = std::any_of(pX.begin(), pX.end(), [](auto& p) { return p.first < 0 || p.second < 0; });
  Tensor X = self;
  Pairs pads = pX;
  if (has_neg) {
    Pairs sh;
    for (size_t i = 0; i < pX.size(); i++) {
      int64_t s = self.shape()[i];
      sh.push_back({-std::min<int64_t>(pX[i].first, 0), std::min(pX[i].second + s, s)});
      pads[i] = {std::max<int64_t>(pX[i].first, 0), std::max<int64_t>(pX[i].second, 0)};
    }
    X = self.shrink(sh);
  }
  auto mpad = [&](const Tensor& t) { UOp u = uop_of(t).pad(pads); return u == uop_of(t) ? t : W(u); };
  Tensor base = mpad(X);
  if (value == ConstVal(0)) return base;
  return mpad(tg::const_like(X, ConstVal(true), dtypes::bool_)).where(base, lit(value));
}

// symbolic pads (or a symbolic self): no cropping, the fill masks the padded region as above
Tensor pad_constant_sym(const Tensor& self, const SymPairs& pads, ConstVal value) {
  for (auto& [b, a] : pads)
    if (b.vmax() < 0 || a.vmax() < 0) throw Error("PAD: a negative symbolic pad (" + b.render() + ", " + a.render() + ") for shape " + self.shape_str());
  auto up = to_upairs(pads);
  auto mpad = [&](const Tensor& t) { UOp u = uop_of(t).pad_sym(up); return u == uop_of(t) ? t : W(u); };
  Tensor base = mpad(self);
  if (value == ConstVal(0)) return base;
  return mpad(const_like(self, ConstVal(true), dtypes::bool_)).where(base, lit(value));
}

Tensor Tensor::pad(const SymPairs& padding, ConstVal value) const {
  if (int64_t(padding.size()) != ndim())
    throw Error("PAD: got " + std::to_string(padding.size()) + " (before, after) pairs for shape " + shape_str());
  auto is = padding.ints();
  return is && !uop_of(*this).has_sym_shape() ? pad_constant(*this, *is, value) : pad_constant_sym(*this, padding, value);
}

// ***** 3. cat, stack, repeat *****

Tensor Tensor::stack(const std::vector<Tensor>& tensors, int64_t dim_in) {
  if (tensors.empty()) throw Error("stack: needs at least one tensor");
  const Tensor& t0 = tensors[0];
  int64_t dim = resolve_dim(t0, dim_in, true, "stack");
  std::vector<Tensor> others(tensors.begin() + 1, tensors.end());
  for (auto& t : others)
    if (t.shape() != t0.shape()) throw Error("stack: all shapes must match, got " + t0.shape_str() + " and " + t.shape_str());
  Tensor ret = mop_stack(t0, others);
  if (dim == 0) return ret;
  std::vector<int64_t> perm;
  for (int64_t i = 1; i <= dim; i++) perm.push_back(i);
  perm.push_back(0);
  for (int64_t i = dim + 1; i < ret.ndim(); i++) perm.push_back(i);
  return ret.permute(perm);
}
Tensor Tensor::stack(const Tensor& other, int64_t dim) const { return stack({*this, other}, dim); }

Tensor Tensor::cat(const std::vector<Tensor>& tensors, int64_t dim_in) {
  if (tensors.empty()) throw Error("cat: needs at least one tensor");
  const Tensor& t0 = tensors[0];
  int64_t dim = resolve_dim(t0, dim_in, false, "cat"), n = t0.ndim();
  if (std::any_of(tensors.begin(), tensors.end(), [](auto& t) { return uop_of(t).has_sym_shape(); })) {
    // symbolic shapes: each piece padded to its place along dim, then added (no stack)
    SymShape s0 = t0.sym_shape();
    std::vector<sint> cum{0};
    for (auto& t : tensors) {
      SymShape s = t.sym_shape();
      bool ok = int64_t(s.size()) == n;
      for (int64_t i = 0; ok && i < n; i++) ok = i == dim || s[size_t(i)] == s0[size_t(i)];
      if (!ok) throw Error("cat: shapes " + t0.shape_str() + " and " + t.shape_str() + " differ outside dim " + std::to_string(dim));
      cum.push_back(cum.back() + s[size_t(dim)]);
    }
    Tensor ret;
    for (size_t i = 0; i < tensors.size(); i++) {
      SymPairs p(size_t(n), {0, 0});
      p[size_t(dim)] = {cum[i], cum.back() - cum[i + 1]};
      Tensor padded = tensors[i].pad(p);
      ret = i == 0 ? padded : ret.dtype().is_bool() ? ret | padded : ret + padded;
    }
    return ret;
  }
  for (auto& t : tensors) {
    bool ok = t.ndim() == n;
    for (int64_t i = 0; ok && i < n; i++) ok = i == dim || t.shape()[size_t(i)] == t0.shape()[size_t(i)];
    if (!ok) throw Error("cat: shapes " + t0.shape_str() + " and " + t.shape_str() + " differ outside dim " + std::to_string(dim));
  }
  if (std::all_of(tensors.begin(), tensors.end(), [&](auto& t) { return t.shape()[size_t(dim)] == t0.shape()[size_t(dim)]; }))
    return stack(tensors, dim).flatten(dim, dim + 1);
  std::vector<int64_t> cum{0};
  for (auto& t : tensors) cum.push_back(cum.back() + t.shape()[size_t(dim)]);
  Tensor ret;
  for (size_t i = 0; i < tensors.size(); i++) {
    Pairs p(size_t(n), {0, 0});
    p[size_t(dim)] = {cum[i], cum.back() - cum[i + 1]};
    Tensor padded = tensors[i].pad(p);
    ret = i == 0 ? padded : ret.dtype().is_bool() ? ret | padded : ret + padded;
  }
  return ret;
}
Tensor Tensor::cat(const Tensor& other, int64_t dim) const { return cat({*this, other}, dim); }

Tensor Tensor::repeat(const std::vector<int64_t>& repeats) const {
  if (int64_t(repeats.size()) < ndim())
    throw Error("repeat: " + std::to_string(repeats.size()) + " repeats can't be fewer than the dims of shape " + shape_str());
  Shape base(repeats.size() - shape().size(), 1), unsq, expd, fin;
  base.insert(base.end(), shape().begin(), shape().end());
  for (size_t i = 0; i < repeats.size(); i++) {
    if (repeats[i] < 0) throw Error("repeat: negative repeat " + std::to_string(repeats[i]) + " for shape " + shape_str());
    if (repeats[i] != 1) unsq.push_back(1), expd.push_back(repeats[i]);
    unsq.push_back(base[i]), expd.push_back(base[i]), fin.push_back(mul_checked(repeats[i], base[i], "repeat"));
  }
  return reshape(unsq).expand(expd).reshape(fin);
}

// ***** 4. pooling and cumulative ops *****

Tensor pool(const Tensor& self, const Shape& k_, int64_t stride, int64_t dilation) {
  return pool(self, k_, Shape(k_.size(), stride), Shape(k_.size(), dilation));
}
Tensor pool(const Tensor& self, const Shape& k_, const Shape& s_, const Shape& d_) {
  size_t nk = k_.size(), nn = size_t(self.ndim()) - nk;
  if (size_t(self.ndim()) < nk) throw Error("pool: can't pool " + self.shape_str() + " with " + shape_str(k_));
  if (s_.size() != nk || d_.size() != nk)
    throw Error("pool: stride/dilation mismatch kernel:" + shape_str(k_) + " stride:" + shape_str(s_) + " dilation:" + shape_str(d_));
  Shape noop(self.shape().begin(), self.shape().begin() + int64_t(nn)), i_(self.shape().begin() + int64_t(nn), self.shape().end()), o_, f_;
  for (size_t j = 0; j < nk; j++) {
    if (mul_checked(d_[j], k_[j] - 1, "pool") + 1 > i_[j]) throw Error("pool: kernel " + shape_str(k_) + " is larger than the input " + self.shape_str());
    o_.push_back(ceildiv(i_[j] - d_[j] * (k_[j] - 1), s_[j]));
    f_.push_back(std::max<int64_t>(1, ceildiv(o_.back() * s_[j] - d_[j], i_[j])));
  }
  auto with = [&](auto fn) { Shape r = noop; for (size_t j = 0; j < nk; j++) fn(r, j); return r; };
  // (..., a0, b0, a1, b1, ...) -> (..., a0, a1, ..., b0, b1, ...) where `first` is the a's
  auto interleaved_to_back = [&](int64_t first) {
    std::vector<int64_t> perm;
    for (size_t j = 0; j < nn; j++) perm.push_back(int64_t(j));
    for (size_t j = 0; j < nk; j++) perm.push_back(int64_t(nn + j * 2) + first);
    for (size_t j = 0; j < nk; j++) perm.push_back(int64_t(nn + j * 2) + 1 - first);
    return perm;
  };
  bool disjoint = std::ranges::all_of(d_, [](int64_t d) { return d == 1; }) && std::ranges::equal(k_, s_, std::less_equal<>());
  if (simd_kernels() && disjoint) {
    // SIMD=1: windows that do not overlap are a reshape of the input cut (or padded) to o*s, then a shrink to k: the
    // same values as the repeat below, without its modular index math (max_pool2d's gradient ran 5x slower with it)
    Pairs grow(nn, {0, 0});
    for (size_t j = 0; j < nk; j++) grow.push_back({0, std::max<int64_t>(0, o_[j] * s_[j] - i_[j])});
    return self.shrink_to(with([&](Shape& r, size_t j) { r.push_back(std::min(i_[j], o_[j] * s_[j])); }))
        .pad(grow)
        .reshape(with([&](Shape& r, size_t j) { r.push_back(o_[j]), r.push_back(s_[j]); }))
        .shrink_to(with([&](Shape& r, size_t j) { r.push_back(o_[j]), r.push_back(k_[j]); }))
        .permute(interleaved_to_back(0));
  }
  std::vector<int64_t> reps(nn, 1);
  for (size_t j = 0; j < nk; j++) reps.push_back(ceildiv(mul_checked(k_[j], mul_checked(i_[j], f_[j], "pool") + d_[j], "pool"), i_[j]));
  Tensor x = self.repeat(reps);
  x = x.shrink_to(with([&](Shape& r, size_t j) { r.push_back(k_[j] * (i_[j] * f_[j] + d_[j])); }));
  x = x.reshape(with([&](Shape& r, size_t j) { r.push_back(k_[j]), r.push_back(i_[j] * f_[j] + d_[j]); }));
  x = x.shrink_to(with([&](Shape& r, size_t j) { r.push_back(k_[j]), r.push_back(o_[j] * s_[j]); }));
  x = x.reshape(with([&](Shape& r, size_t j) { r.push_back(k_[j]), r.push_back(o_[j]), r.push_back(s_[j]); }));
  x = x.shrink_to(with([&](Shape& r, size_t j) { r.push_back(k_[j]), r.push_back(o_[j]), r.push_back(1); }));
  x = x.reshape(with([&](Shape& r, size_t j) { r.push_back(k_[j]), r.push_back(o_[j]); }));
  return x.permute(interleaved_to_back(1));
}

namespace {
ConstVal identity_element(Ops op, DType dt) { return dt.const_(op == Ops::ADD ? ConstVal(0) : op == Ops::MUL ? ConstVal(1) : dt.min()); }
Tensor reduce_op(const Tensor& t, Ops op, int64_t axis) { return op == Ops::ADD ? t.sum(axis) : op == Ops::MAX ? t.max(axis) : t.prod(axis); }
}  // namespace

Tensor cumalu(const Tensor& self, int64_t axis, Ops op) {
  int64_t n = self.shape()[size_t(resolve_dim(self, axis))];
  Pairs pads(size_t(self.ndim()), {0, 0});
  pads.back() = {n - 1, 0};
  Tensor pooled = pool(pad_constant(self.transpose(axis, -1), pads, identity_element(op, self.dtype())), {n});
  return reduce_op(pooled, op, -1).transpose(axis, -1);
}

// tinygrad's _split_cumalu: the windowed reduce of cumalu, in two stages along a long axis (within chunks of SPLIT,
// then the running totals of the chunks combined in)
Tensor split_cumalu(const Tensor& self, int64_t axis_in, Ops op, const char* name) {
  int64_t axis = resolve_dim(self, axis_in, false, name);
  if (self.ndim() == 0 || self.numel() == 0) return op == Ops::ADD ? self.cast(self.sum().dtype()) : self;
  constexpr int64_t SPLIT = 256;
  int64_t s = self.shape()[size_t(axis)];
  if (s <= SPLIT * 2) return cumalu(self, axis, op);
  ConstVal value = identity_element(op, self.dtype());
  Pairs p(size_t(self.ndim()), {0, 0});
  p.back() = {ceildiv(s, SPLIT) * SPLIT - s, 0};
  Tensor chunks = cumalu(pad_constant(self.transpose(axis, -1), p, value).unflatten(-1, {-1, SPLIT}), -1, op);
  Tensor last = chunks[{Ellipsis{}, int64_t(-1)}];
  Pairs p2(size_t(chunks.ndim() - 1), {0, 0});
  p2.back() = {1, -1};
  Tensor base = pad_constant(cumalu(last, -1, op), p2, value);
  return alu(chunks, op, {base.unsqueeze(-1)}).flatten(-2)[{Ellipsis{}, Slice{-s, std::nullopt, std::nullopt}}].transpose(axis, -1);
}

Tensor Tensor::cumsum(int64_t axis) const { return split_cumalu(*this, axis, Ops::ADD, "cumsum"); }
Tensor Tensor::cumprod(int64_t axis) const { return split_cumalu(*this, axis, Ops::MUL, "cumprod"); }

std::pair<Tensor, Tensor> Tensor::cummax(int64_t axis_in) const {
  Tensor values = split_cumalu(*this, axis_in, Ops::MAX, "cummax");
  if (ndim() == 0) return {values, full_const(shape(), 0, dtypes::int32)};
  int64_t axis = resolve_dim(*this, axis_in, false, "cummax"), n = shape()[size_t(axis)];
  // the first j <= i with x[j] equal to the running max at i: the largest n-j among the matches
  Tensor match = transpose(axis, -1).unsqueeze(-1).eq(values.transpose(axis, -1).unsqueeze(-2)) * full_const({n, n}, true, dtypes::bool_).triu();
  Tensor idx = (-(match * Tensor::arange(n, 0, -1).reshape({n, 1})).max(-2) + n).cast(dtypes::int32);
  return {values, idx.transpose(-1, axis)};
}
std::pair<Tensor, Tensor> Tensor::cummin(int64_t axis) const {
  resolve_dim(*this, axis, false, "cummin");
  auto inverse = [](const Tensor& t) { return t.is_floating_point() ? -t : ~t; };
  auto [values, indices] = inverse(*this).cummax(axis);
  return {inverse(values), indices};
}

Tensor Tensor::logcumsumexp(int64_t axis_in) const {
  if (ndim() == 0) return *this;
  int64_t axis = resolve_dim(*this, axis_in, false, "logcumsumexp");
  Tensor x = transpose(axis, -1);
  int64_t n = x.shape().back();
  Tensor x_cummax = x.cummax(-1).first.detach();
  Tensor mask = full_const({n, n}, true, dtypes::bool_).tril();
  Tensor ret = mask.where(x.unsqueeze(-2) - x_cummax.unsqueeze(-1), lit(dtype().min())).exp().sum(-1).log() + x_cummax;
  return ret.transpose(-1, axis);
}

}  // namespace tg
