// Selection by masks and indices, and sorting (tinygrad's mixin/elementwise.py masked_fill, mixin/op.py scatter, sort):
// masked_fill, scatter / scatter_reduce through a one-hot mask, masked_select / nonzero through a cumsum of the mask, and
// the bitonic sort with its stable indices, argsort and topk. All are compositions of existing ops, so autograd flows.
#include <bit>

#include "tensor/tensor_impl.h"

namespace tg {

namespace {
using Pairs = std::vector<std::pair<int64_t, int64_t>>;
std::string str(int64_t v) { return std::to_string(v); }
std::string str(DType d) { return std::string(d.name()); }
}  // namespace

// ***** 1. masked_fill, scatter, scatter_reduce *****

Tensor Tensor::masked_fill(const Tensor& mask, const Tensor& value) const {
  if (!mask.dtype().is_bool()) throw Error("masked_fill: mask must be bool, got " + str(mask.dtype()) + " " + mask.shape_str());
  return mask.where(value, *this);
}

namespace {
// src and a one-hot mask of index along dim, both shaped self.shape + (index.shape[dim],): reducing the last axis
// combines every src value sent to a position (tinygrad's _pre_scatter)
std::pair<Tensor, Tensor> pre_scatter(const Tensor& self, int64_t& dim, const Tensor& index, const Tensor& src_in, const char* op) {
  dim = resolve_dim(self, dim, false, op);
  auto dev = [](const Tensor& t) { return t.device(); };
  if ((dev(index) && dev(self) && dev(index) != dev(self)) || (dev(src_in) && dev(self) && dev(src_in) != dev(self)))
    throw Error(std::string(op) + ": expected self, index and src on the same device");
  if (index.ndim() != self.ndim() || src_in.ndim() != self.ndim())
    throw Error(std::string(op) + ": self, index and src need the same number of dims, got " + self.shape_str() + ", index " +
                index.shape_str() + " and src " + src_in.shape_str());
  for (int64_t d = 0; d < self.ndim(); d++) {
    int64_t s = self.shape()[size_t(d)], i = index.shape()[size_t(d)], r = src_in.shape()[size_t(d)];
    if ((d != dim && s < i) || r < i)
      throw Error(std::string(op) + ": index " + index.shape_str() + " must be no larger than src " + src_in.shape_str() +
                  " in every dim, and than self " + self.shape_str() + " in every dim but " + str(dim));
  }
  if (self.dtype() != src_in.dtype())
    throw Error(std::string(op) + ": self and src must have one dtype, got " + str(self.dtype()) + " and " + str(src_in.dtype()));
  int64_t n = self.shape()[size_t(dim)];
  Tensor src = src_in.shrink_to(index.shape());
  Shape e = src.shape();
  e.push_back(n);
  src = src.unsqueeze(-1).expand(e).transpose(-1, dim);
  Tensor mask = one_hot_along_dim(index.unsqueeze(-1), n, -1, op).transpose(-1, dim);
  Shape to = self.shape();
  to.push_back(index.shape()[size_t(dim)]);
  return {src.pad_to(to), mask.pad_to(to)};
}
}  // namespace

Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src) const {
  if (ndim() == 0 && index.ndim() == 0 && src.ndim() == 0) return reshape({1}).scatter(dim, index.reshape({1}), src.reshape({1})).reshape({});
  auto [values, mask] = pre_scatter(*this, dim, index, src, "scatter");
  if (mask.shape().back() == 0) return *this;
  // fold along the last axis so that of repeated indices the last one wins (tinygrad's _masked_merge)
  std::vector<Tensor> ms = mask.split(1, -1), vs = values.split(1, -1);
  Tensor m = ms[0], v = vs[0];
  for (size_t i = 1; i < ms.size(); i++) v = ms[i].where(vs[i], v), m = m | ms[i];
  return m.squeeze(-1).where(v.squeeze(-1), *this);
}

Tensor Tensor::scatter_value(int64_t dim, const Tensor& index, ConstVal value, const std::string& reduce) const {
  if (reduce != "" && reduce != "add" && reduce != "multiply")
    throw Error("scatter: reduce must be \"add\" or \"multiply\" (or none), got \"" + reduce + "\"");
  Tensor src = full_const(index.shape(), dtype().const_(value), dtype());
  if (reduce == "add") return scatter_reduce(dim, index, src, "sum");
  if (reduce == "multiply") return scatter_reduce(dim, index, src, "prod");
  return scatter(dim, index, src);
}

Tensor Tensor::scatter_reduce(int64_t dim, const Tensor& index, const Tensor& src_in, const std::string& reduce, bool include_self) const {
  if (reduce != "sum" && reduce != "prod" && reduce != "mean" && reduce != "amax" && reduce != "amin")
    throw Error("scatter_reduce: reduce must be one of sum, prod, mean, amax, amin, got \"" + reduce + "\"");
  if (ndim() == 0 && index.ndim() == 0 && src_in.ndim() == 0)
    return reshape({1}).scatter_reduce(dim, index.reshape({1}), src_in.reshape({1}), reduce, include_self).reshape({});
  auto [src, mask] = pre_scatter(*this, dim, index, src_in, "scatter_reduce");
  // self where no index points (so that it drops out of the reduction), else `a`
  auto inv = [&](const Tensor& a, const Tensor& b) { return include_self ? b : mask.any(-1).logical_not().where(b, a); };
  if (reduce == "sum") return mask.where(src, 0).sum(-1).add(inv(0, *this));
  if (reduce == "prod") return mask.where(src, 1).prod(-1).mul(inv(1, *this));
  if (reduce == "amax") {
    Tensor m = lit(dtype().min());
    return mask.where(src, m).max(-1).maximum(inv(m, *this));
  }
  if (reduce == "amin") {
    Tensor m = lit(dtype().max());
    return mask.where(src, m).min(-1).minimum(inv(m, *this));
  }
  Tensor count = mask.where(1, 0).sum(-1).add(inv(0, 1));
  return mask.where(src, 0).sum(-1).add(inv(0, *this)).div(count);
}

// ***** 2. masked_select, nonzero: data-dependent sizes *****

Tensor Tensor::masked_select(const Tensor& mask_in, std::optional<int64_t> size, ConstVal fill_value) const {
  if (!mask_in.dtype().is_bool()) throw Error("masked_select: mask must be bool, got " + str(mask_in.dtype()));
  if (mask_in.ndim() > ndim()) throw Error("masked_select: cannot broadcast mask " + mask_in.shape_str() + " to " + shape_str());
  if (size && *size < 0) throw Error("masked_select: size must be non-negative, got " + str(*size));
  Shape ms(size_t(ndim() - mask_in.ndim()), 1);
  ms.insert(ms.end(), mask_in.shape().begin(), mask_in.shape().end());
  Tensor x = flatten(), mask = mask_in.reshape(ms).expand(shape()).flatten();
  Tensor cum = mask.cumsum();
  // counts[j]: how many positions have exactly j trues before or at them; its cumsum is the position of the (j+1)th true
  int64_t n = size ? *size : numel() ? cum[-1].item<int64_t>() : 0;
  Tensor counts = full_const({n}, 0, dtypes::int32).scatter(0, cum, 1, "add");
  Tensor picked = x.gather(0, counts.cumsum());
  if (!size) return picked;
  return (Tensor::arange(n) < mask.sum()).where(picked, lit(fill_value)).cast(dtype());
}

Tensor Tensor::nonzero(std::optional<int64_t> size, ConstVal fill_value) const {
  if (size && *size < 0) throw Error("nonzero: size must be non-negative, got " + str(*size));
  if (ndim() == 0) return full_const({size ? *size : int64_t(ne(0).item<bool>()), 0}, 0, dtypes::int32);
  std::vector<Tensor> coords;
  for (int64_t i = 0; i < ndim(); i++) {
    Shape s(size_t(ndim()), 1);
    s[size_t(i)] = shape()[size_t(i)];
    coords.push_back(Tensor::arange(shape()[size_t(i)]).reshape(s).expand(shape()).flatten());
  }
  Tensor mask = ne(0).flatten().unsqueeze(-1).expand({numel(), ndim()});
  Tensor flat = Tensor::stack(coords, -1).masked_select(mask, size ? std::optional(*size * ndim()) : std::nullopt, fill_value);
  return flat.reshape({flat.numel() / ndim(), ndim()});
}

// ***** 3. sort, topk *****

std::pair<Tensor, Tensor> Tensor::sort(int64_t dim_in, bool descending) const {
  int64_t dim = resolve_dim(*this, dim_in, false, "sort"), n = ndim() ? shape()[size_t(dim)] : 1;
  if (n <= 1) return {*this, tg::const_like(*this, 0, dtypes::int32)};
  // pad to a power of two with values that sort last, one dim of 2 per stage
  int64_t stages = std::bit_width(uint64_t(n - 1));
  Pairs pads(size_t(ndim()), {0, 0});
  pads[size_t(dim)] = {0, (int64_t(1) << stages) - n};
  Tensor x = pad_constant(*this, pads, descending ? dtype().min() : dtype().max()).unflatten(dim, Shape(size_t(stages), 2));
  auto halves = [](const Tensor& t, int64_t d) { auto h = t.split(1, d); return std::pair{h[0], h[1]}; };
  for (int64_t stage = 1; stage <= stages; stage++) {
    // the crossover: flip the second half of each block so every compare of this stage points the same way
    int64_t cross = dim + stages - stage - 1;
    std::vector<int64_t> flips;
    for (int64_t d = cross + 1; d < dim + stages; d++) flips.push_back(d);
    auto crossover = [&](const Tensor& t) { auto [blue, green] = halves(t, cross); return blue.cat(green.flip(flips), cross); };
    if (stage != stages) x = crossover(x).contiguous();
    for (int64_t sub = stage - 1; sub >= 0; sub--) {
      int64_t partner = dim + stages - sub - 1;
      auto [top, bottom] = halves(x, partner);
      Tensor hi = top.maximum(bottom), lo = top.minimum(bottom);
      x = (descending ? hi.cat(lo, partner) : lo.cat(hi, partner)).contiguous();
    }
    if (stage != stages) x = crossover(x);  // flipping again undoes it
  }
  x = x.flatten(dim, dim + stages - 1).shrink_to(shape());
  // the k-th copy of a value in the sorted order came from the k-th copy in the input: count the copies up to each place
  Shape ms{n, n};
  ms.resize(size_t(ndim() - dim + 1), 1);
  Tensor tri = full_const({n, n}, true, dtypes::bool_).tril().reshape(ms);
  auto copies = [&](const Tensor& t) { return (tri & t.unsqueeze(dim).eq(t.unsqueeze(dim + 1))).sum(dim + 1); };
  Tensor cond = unsqueeze(dim + 1).eq(x.unsqueeze(dim)) & copies(*this).unsqueeze(dim + 1).eq(copies(x).unsqueeze(dim));
  Shape is(size_t(ndim() + 1), 1);
  is[size_t(dim)] = n;
  return {x, (cond * Tensor::arange(n).reshape(is)).sum(dim)};
}

std::pair<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim_in, bool largest, bool sorted) const {
  if (!sorted) throw Error("topk: sorted=false is not supported");
  int64_t dim = resolve_dim(*this, dim_in, false, "topk"), n = ndim() ? shape()[size_t(dim)] : 1;
  if (k < 0 || k > n) throw Error("topk: k=" + str(k) + " is out of range for dim " + str(dim) + " of " + shape_str());
  auto [x, idx] = sort(dim, largest);
  if (ndim() == 0) return {x, idx};
  Shape s = shape();
  s[size_t(dim)] = k;
  return {x.shrink_to(s), idx.shrink_to(s)};
}

}  // namespace tg
