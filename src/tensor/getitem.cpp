// Indexing (tinygrad's OpMixin._getitem and Tensor.__setitem__): 1. the indices normalized and parsed (slices, ints,
// None, Ellipsis; lists and bool masks become int tensors), 2. the view ops of the basic indices, 3. advanced indices
// as a one-hot mask reduced over the indexed dims (or one linear index for consecutive ones), 4. setitem: the value
// merged back through the same mask and view ops, then replaced or assigned.
#include <algorithm>

#include "tensor/tensor_impl.h"
#include "uop/movement.h"

namespace tg {

namespace {
using Pairs = std::vector<std::pair<int64_t, int64_t>>;
int64_t floordiv(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0) ? 1 : 0); }
int64_t ceildiv(int64_t a, int64_t b) { return -floordiv(a, -b); }
std::string str(int64_t v) { return std::to_string(v); }

// ***** 1. normalize and parse *****

// a parsed index: the view (boundary, stride) it takes of its dim, whether the dim is dropped (an int) or new (None),
// and for an advanced index the int tensor of positions
struct Parsed {
  int64_t size, b0, b1, stride;
  bool collapse, none;
  std::optional<Tensor> tensor;
};

bool is_bool_mask(const Index& i) {
  if (auto* t = std::get_if<Tensor>(&i)) return t->dtype().is_bool();
  return std::holds_alternative<std::vector<bool>>(i);
}
int64_t dims_used(const Index& i) {
  if (std::holds_alternative<NewAxis>(i) || std::holds_alternative<Ellipsis>(i)) return 0;
  if (auto* t = std::get_if<Tensor>(&i); t && t->dtype().is_bool()) return t->ndim();
  return 1;
}

// lists become tensors on self's device, bool masks the int tensors of their true positions (one per masked dim), and
// the Ellipsis (or the end) is filled with full slices (_normalize_indices)
std::vector<Index> normalize(const Tensor& self, const std::vector<Index>& in) {
  std::vector<Index> idx;
  std::string dev = self.device().value_or("");
  for (auto& i : in) {
    if (auto* b = std::get_if<std::vector<bool>>(&i)) idx.push_back(Tensor::from_vector(*b, {int64_t(b->size())}, std::nullopt, dev));
    else idx.push_back(i);
  }
  int64_t n_ell = std::ranges::count_if(idx, [](auto& i) { return std::holds_alternative<Ellipsis>(i); }), real = 0;
  if (n_ell > 1) throw Error("index: an index can only have a single ellipsis");
  for (auto& i : idx) real += dims_used(i);
  if (real > self.ndim()) throw Error("index: too many indices (" + str(real) + ") for shape " + self.shape_str());
  auto fill = std::ranges::find_if(idx, [](auto& i) { return std::holds_alternative<Ellipsis>(i); });
  size_t at = size_t(fill - idx.begin());
  if (n_ell) idx.erase(fill);
  idx.insert(idx.begin() + int64_t(at), size_t(self.ndim() - real), Slice{});
  std::vector<Index> out;
  int64_t dim = 0;
  for (auto& i : idx) {
    if (is_bool_mask(i)) {
      Tensor m = std::get<Tensor>(i);
      if (m.ndim() == 0) throw Error("index: a 0-d bool mask is not supported, got one for shape " + self.shape_str());
      Shape covered(self.shape().begin() + dim, self.shape().begin() + dim + m.ndim());
      if (covered != m.shape())
        throw Error("index: the bool mask " + m.shape_str() + " does not match the dims " + shape_str(covered) + " of " + self.shape_str());
      Tensor nz = m.nonzero().realize();
      for (int64_t j = 0; j < m.ndim(); j++) out.push_back(nz[{Slice{}, j}]);
      dim += m.ndim();
      continue;
    }
    dim += dims_used(i);
    out.push_back(i);
  }
  return out;
}

Parsed parse_view_index(const Index& index, int64_t size) {
  if (std::holds_alternative<NewAxis>(index)) return {1, 0, 1, 1, false, true, {}};
  if (auto* i = std::get_if<int64_t>(&index)) {
    if (*i >= size || *i < -size) throw Error("index: index " + str(*i) + " is out of bounds for a dim of size " + str(size));
    int64_t b = *i >= 0 ? *i : *i + size;
    return {size, b, b + 1, 1, true, false, {}};
  }
  const Slice& sl = std::get<Slice>(index);
  int64_t step = sl.step.value_or(1);
  if (step == 0) throw Error("index: slice step cannot be 0");
  // Python's slice.indices(size)
  int64_t lower = step < 0 ? -1 : 0, upper = step < 0 ? size - 1 : size;
  auto clampi = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v < 0 ? *v + size : *v;
    return *v < 0 ? std::max(x, lower) : std::min(x, upper);
  };
  int64_t start = clampi(sl.start, step < 0 ? upper : lower), stop = clampi(sl.stop, step < 0 ? lower : upper);
  int64_t b0 = start, b1 = stop;
  if (step * (b1 - b0) < 0) b0 = b1 = 0;
  else if (step < 0) b0 = stop + 1, b1 = start + 1;
  return {ceildiv(b1 - b0, std::abs(step)), b0, b1, step, false, false, {}};
}

// an advanced index as an int tensor with negative positions wrapped (lists are checked against the size here)
Tensor parse_tensor_index(const Tensor& self, const Index& index, int64_t size) {
  if (auto* l = std::get_if<std::vector<int64_t>>(&index)) {
    std::vector<int32_t> v;
    for (int64_t x : *l) {
      if (x >= size || x < -size) throw Error("index: list index " + str(x) + " is out of bounds for a dim of size " + str(size));
      v.push_back(int32_t(x < 0 ? x + size : x));
    }
    return Tensor::from_vector(v, {int64_t(v.size())}, std::nullopt, self.device().value_or(""));
  }
  const Tensor& t = std::get<Tensor>(index);
  if (!t.dtype().is_int()) throw Error("index: index dtype " + std::string(t.dtype().name()) + " is not supported (int or bool only)");
  if (t.device() && self.device() && t.device() != self.device())
    throw Error("index: expected index and self on the same device, got " + *t.device() + " and " + *self.device());
  return (t < 0).where(t + size, t);
}

Shape broadcast_shape(const std::vector<Shape>& shapes, const char* op) {
  size_t nd = 0;
  for (auto& s : shapes) nd = std::max(nd, s.size());
  Shape out(nd, 1);
  for (auto& s : shapes)
    for (size_t i = 0; i < s.size(); i++) {
      int64_t &o = out[nd - s.size() + i], x = s[i];
      if (x == 1) continue;
      if (o != 1 && o != x) throw Error(std::string(op) + ": cannot broadcast shape " + shape_str(s) + " with " + shape_str(out));
      o = x;
    }
  return out;
}

Shape cat_shapes(std::initializer_list<Shape> parts) {
  Shape r;
  for (auto& p : parts) r.insert(r.end(), p.begin(), p.end());
  return r;
}
Shape sub(const Shape& s, size_t a, size_t b) { return Shape(s.begin() + int64_t(std::min(a, s.size())), s.begin() + int64_t(std::min(b, s.size()))); }

// ***** 2. the view ops of the basic indices (_apply_view_ops): shrink, flip the negative strides, take every stride-th *****

Tensor apply_view_ops(const Tensor& self, const std::vector<Parsed>& mops) {
  Pairs bounds;
  std::vector<int64_t> flips;
  for (size_t i = 0; i < mops.size(); i++) {
    if (mops[i].stride < 0) flips.push_back(int64_t(i));
    bounds.push_back({mops[i].b0, mops[i].b1});
  }
  Tensor x = self.shrink(bounds).flip(flips);
  if (std::ranges::all_of(mops, [](auto& m) { return std::abs(m.stride) == 1; })) return x;
  Shape padded, split, keep, every;
  for (size_t i = 0; i < mops.size(); i++) {
    int64_t s = x.shape()[i], st = std::abs(mops[i].stride), r = ceildiv(s, st) * st;
    padded.push_back(r), split.push_back(r / st), split.push_back(st), keep.push_back(r / st), keep.push_back(1), every.push_back(r / st);
  }
  return x.pad_to(padded).reshape(split).shrink_to(keep).reshape(every);
}

// of repeated indices the last one wins: fold mask and values along each axis (tinygrad's _masked_merge)
Tensor masked_merge(const Tensor& self, Tensor values, Tensor mask, const std::vector<int64_t>& axes) {
  for (auto it = axes.rbegin(); it != axes.rend(); ++it) {
    std::vector<Tensor> ms = mask.split(1, *it), vs = values.split(1, *it);
    Tensor m = ms[0], v = vs[0];
    for (size_t i = 1; i < ms.size(); i++) v = ms[i].where(vs[i], v), m = m | ms[i];
    mask = m, values = v;
  }
  for (auto it = axes.rbegin(); it != axes.rend(); ++it) mask = mask.squeeze(*it), values = values.squeeze(*it);
  return mask.where(values, self);
}

Tensor prod_all(const std::vector<Tensor>& ts) {
  Tensor r = ts[0];
  for (size_t i = 1; i < ts.size(); i++) r = r * ts[i];
  return r;
}

// ***** 3. getitem, and the value of setitem when v is given *****

Tensor getitem(const Tensor& self, const std::vector<Index>& indices_in, const std::optional<Tensor>& v) {
  std::vector<Index> indices = normalize(self, indices_in);
  std::vector<Parsed> parsed;
  int64_t dim = 0;
  for (auto& idx : indices) {
    bool none = std::holds_alternative<NewAxis>(idx);
    int64_t size = none ? 1 : self.shape()[size_t(dim)];
    if (std::holds_alternative<Tensor>(idx) || std::holds_alternative<std::vector<int64_t>>(idx))
      parsed.push_back({size, 0, size, 1, false, false, parse_tensor_index(self, idx, size)});
    else parsed.push_back(parse_view_index(idx, size));
    if (!none) dim++;
  }
  std::vector<Parsed> mops;
  for (auto& p : parsed) if (!p.none) mops.push_back(p);
  Tensor x = apply_view_ops(self, mops);
  Shape xs;
  std::vector<const Parsed*> x_dims;
  for (auto& p : parsed) if (!p.collapse) xs.push_back(p.size), x_dims.push_back(&p);
  x = x.reshape(xs);

  std::optional<Tensor> vb;
  std::vector<int64_t> dims;
  std::vector<Tensor> tensors;
  for (size_t d = 0; d < x_dims.size(); d++) if (x_dims[d]->tensor) dims.push_back(int64_t(d)), tensors.push_back(*x_dims[d]->tensor);
  if (!dims.empty()) {
    std::vector<Shape> ishapes;
    for (auto& t : tensors) ishapes.push_back(t.shape());
    Shape big = broadcast_shape(ishapes, "index");
    size_t d0 = size_t(dims[0]), nb = big.size();
    bool consecutive = dims.back() - dims[0] + 1 == int64_t(dims.size());
    if (!v && dims.size() > 1 && consecutive) {
      // consecutive indices: one linear index into the flattened dims instead of one mask each
      Tensor linear = Tensor(int64_t(0)), valid = Tensor(true);
      int64_t stride = 1, n = 1;
      for (size_t k = dims.size(); k-- > 0;) {
        int64_t s = x.shape()[size_t(dims[k])];
        linear = tensors[k] * stride + linear, valid = valid & (tensors[k] >= 0) & (tensors[k] < s), stride *= s;
      }
      n = stride;
      Shape pre = sub(x.shape(), 0, d0), post = sub(x.shape(), size_t(dims.back()) + 1, x.shape().size());
      std::vector<Index> sel(pre.size(), Slice{});
      sel.push_back(valid.where(linear, 0));
      Tensor picked = x.reshape(cat_shapes({pre, {n}, post}))[sel];
      return valid.reshape(cat_shapes({Shape(pre.size(), 1), big, Shape(post.size(), 1)})).where(picked, 0);
    }
    Shape pre_reduce = cat_shapes({sub(x.shape(), 0, d0), big, sub(x.shape(), d0, x.shape().size())});
    std::vector<Tensor> masks;
    for (size_t k = 0; k < dims.size(); k++) {
      Shape r = tensors[k].shape();
      r.resize(r.size() + size_t(x.ndim()) - d0, 1);
      Tensor i = tensors[k].reshape(r).expand(pre_reduce);
      masks.push_back(one_hot_along_dim(i, x.shape()[size_t(dims[k])], dims[k] - x.ndim(), "index"));
    }
    Tensor mask = prod_all(masks);
    Shape reshape_arg = cat_shapes({sub(x.shape(), 0, d0), Shape(nb, 1), sub(x.shape(), d0, x.shape().size())});
    std::vector<int64_t> sum_axis;
    for (int64_t d : dims) sum_axis.push_back(d + int64_t(nb));
    Tensor x_pre = x;
    x = mask.where(x.reshape(reshape_arg), 0).sum(sum_axis, false, x.dtype());
    // indices separated by a slice: numpy puts the index dims first
    bool permuted = dims[0] != 0 && dims.size() != 1 && !consecutive;
    if (permuted) {
      auto front = [&](const Tensor& y) {
        std::vector<int64_t> p;
        for (size_t i = d0; i < d0 + nb; i++) p.push_back(int64_t(i));
        for (size_t i = 0; i < d0; i++) p.push_back(int64_t(i));
        for (size_t i = d0 + nb; i < size_t(y.ndim()); i++) p.push_back(int64_t(i));
        return y.permute(p);
      };
      mask = front(mask), x = front(x);
    }
    if (!v) return x;
    Tensor w = v->expand(broadcast_shape({x.shape(), v->shape()}, "setitem"));
    if (w.shape() != x.shape()) throw Error("setitem: cannot broadcast the value " + v->shape_str() + " to the indexed shape " + x.shape_str());
    for (int64_t d : sum_axis) w = w.unsqueeze(d);
    std::vector<int64_t> axes;
    for (size_t i = 0; i < nb; i++) axes.push_back(int64_t((permuted ? 0 : d0) + i));
    vb = masked_merge(x_pre, w, mask, axes);
  } else {
    if (!v) return x;
    Shape bs = broadcast_shape({x.shape(), v->shape()}, "setitem");
    if (bs != x.shape()) throw Error("setitem: cannot broadcast the value " + v->shape_str() + " to the indexed shape " + x.shape_str());
    vb = v->expand(x.shape());
  }

  // ***** 4. setitem: the value placed back in self's shape through the inverse of the view ops *****
  Shape back;
  for (auto& m : mops) back.push_back(m.collapse ? 1 : m.size);
  Tensor w = vb->reshape(back);
  std::vector<Tensor> per_dim;
  std::vector<int64_t> flips;
  Pairs pads;
  for (size_t d = 0; d < mops.size(); d++) {
    const Parsed& m = mops[d];
    int64_t s = m.b0, e = m.b1, st = std::abs(m.stride), n = self.shape()[d];
    if (st != 1) {  // un-stride: each value followed by st-1 fillers, cut to the boundary
      Shape sp = w.shape();
      sp.insert(sp.begin() + int64_t(d) + 1, st);
      Shape merged = w.shape(), cut = w.shape();
      merged[d] *= st, cut[d] = e - s;
      w = w.unsqueeze(int64_t(d) + 1).pad_to(sp).reshape(merged).shrink_to(cut);
    }
    Shape r(mops.size(), 1);
    r[d] = n;
    Tensor idx = Tensor::arange(n).reshape(r);
    per_dim.push_back((idx >= s) & (idx < e) & ((m.stride < 0 ? e - 1 - idx : idx - s) % st == 0));
    if (m.stride < 0) flips.push_back(int64_t(d));
    pads.push_back({s, n - e});
  }
  w = w.flip(flips).pad(pads);
  return per_dim.empty() ? w : prod_all(per_dim).where(w, self);
}
}  // namespace

Tensor Tensor::operator[](int64_t i) const { return (*this)[std::vector<Index>{i}]; }
Tensor Tensor::operator[](const std::vector<Index>& indices) const { return getitem(*this, indices, std::nullopt); }

Tensor& Tensor::setitem(const std::vector<Index>& indices, const Tensor& v_in) {
  if (dtype().is_weak()) throw Error("setitem: cannot setitem into a weak tensor (" + std::string(dtype().name()) + "): it has no storage");
  Tensor v = v_in.dtype().is_weak() ? v_in.cast(least_upper_dtype({dtype(), v_in.dtype()})) : v_in;
  if (v.dtype() != dtype())
    throw Error("setitem: dtype mismatch, self is " + std::string(dtype().name()) + ", value is " + std::string(v.dtype().name()));
  const UOp& u = uop_of(*this);
  // a write no other live tensor can see diverges from eager semantics: only views of one realized buffer may share it
  if (u.op_in_backward_slice_with_self(OpSet{Ops::BUFFER})) {
    std::optional<UOp> shared;
    if (u.base().op() == Ops::BUFFER) shared = u.base();
    const UOp& vu = uop_of(v);
    for (TensorImpl* t : all_tensors()) {
      if (t == impl_.get() || t->uop == vu || vu.in_backward_slice_with_self(t->uop)) continue;
      if (t->uop.in_backward_slice_with_self(u) && (!shared || t->uop.base() != *shared))
        throw Error("setitem: can't setitem on a tensor with other uses (a live tensor " + shape_str() + " is computed from it)");
    }
  }
  bool advanced = std::ranges::any_of(indices, [](auto& i) {
    return std::holds_alternative<Tensor>(i) || std::holds_alternative<std::vector<int64_t>>(i) || std::holds_alternative<std::vector<bool>>(i);
  });
  UOp base = u.base();
  while (base.op() == Ops::AFTER) base = base.src(0).base();
  bool realized = base.op() == Ops::BUFFER;
  if ((u.base().op() != Ops::BUFFER && is_floating_point()) || !(advanced || realized)) return replace(getitem(*this, indices, v));
  if (advanced) return assign(getitem(*this, indices, v));
  Tensor view = (*this)[indices];
  if (broadcast_shape({view.shape(), v.shape()}, "setitem") != view.shape())
    throw Error("setitem: cannot broadcast the value " + v.shape_str() + " to the indexed shape " + view.shape_str());
  view.assign(v);
  return *this;
}

}  // namespace tg
