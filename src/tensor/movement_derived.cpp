// Movement ops built from the primitive ones (tinygrad's mixin/movement.py and op.py): split/chunk, roll, diag/diagonal,
// repeat_interleave, unfold, meshgrid, and pad's flat form and reflect / replicate / circular modes.
#include <algorithm>
#include <numeric>

#include "tensor/tensor_impl.h"
#include "uop/movement.h"

namespace tg {

namespace {
using Pairs = std::vector<std::pair<int64_t, int64_t>>;
int64_t ceildiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
// the full range of every dim but `dim`, which gets `r`
Pairs only(const Tensor& t, int64_t dim, std::pair<int64_t, int64_t> r) {
  Pairs p;
  for (int64_t i = 0; i < t.ndim(); i++) p.push_back(i == dim ? r : std::pair<int64_t, int64_t>{0, t.shape()[size_t(i)]});
  return p;
}
}  // namespace

// ***** 1. size, split, chunk *****

int64_t Tensor::size(int64_t dim) const { return shape()[size_t(resolve_dim(*this, dim, false, "size"))]; }

std::vector<Tensor> Tensor::split(IntList sizes, int64_t dim_in) const {
  int64_t dim = resolve_dim(*this, dim_in, false, "split"), n = shape()[size_t(dim)];
  std::vector<int64_t> s = sizes.v;
  if (sizes.is_int) {
    if (s[0] <= 0) throw Error("split: split_size must be positive, got " + std::to_string(s[0]));
    int64_t each = s[0];
    s.clear();
    for (int64_t i = 0; i < std::max<int64_t>(1, n); i += each) s.push_back(std::min(each, n - i));
  }
  if (std::any_of(s.begin(), s.end(), [](int64_t x) { return x < 0; }) || std::accumulate(s.begin(), s.end(), int64_t(0)) != n)
    throw Error("split: sizes " + tg::shape_str(s) + " must be non-negative and sum to " + std::to_string(n) + " (dim " + std::to_string(dim) +
                " of " + shape_str() + ")");
  std::vector<Tensor> out;
  int64_t at = 0;
  for (int64_t x : s) out.push_back(shrink(only(*this, dim, {at, at + x}))), at += x;
  return out;
}

std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim_in) const {
  int64_t dim = resolve_dim(*this, dim_in, false, "chunk"), n = shape()[size_t(dim)];
  if (chunks <= 0) throw Error("chunk: chunks must be positive, got " + std::to_string(chunks));
  return n ? split(ceildiv(n, chunks), dim) : split(std::vector<int64_t>(size_t(chunks), 0), dim);
}

// ***** 2. roll, diag, diagonal *****

Tensor Tensor::roll(IntList shifts, std::optional<IntList> dims) const {
  if (!dims) return flatten().roll(shifts, IntList(0)).reshape(shape());
  if (dims->v.size() != shifts.v.size())
    throw Error("roll: got " + std::to_string(shifts.v.size()) + " shifts for " + std::to_string(dims->v.size()) + " dims");
  std::vector<int64_t> d;
  for (int64_t x : dims->v) d.push_back(resolve_dim(*this, x, false, "roll"));
  if (numel() == 0) return *this;
  std::vector<int64_t> reps(size_t(ndim()), 1);
  Pairs sh;
  for (int64_t i = 0; i < ndim(); i++) sh.push_back({0, shape()[size_t(i)]});
  for (size_t k = 0; k < d.size(); k++) {
    int64_t s = shape()[size_t(d[k])], delta = s - ((shifts.v[k] % s) + s) % s;
    reps[size_t(d[k])] = 2, sh[size_t(d[k])] = {delta, delta + s};
  }
  return repeat(reps).shrink(sh);
}

Tensor Tensor::diag() const {
  if (ndim() != 1) throw Error("diag: expects a 1-D tensor, got shape " + shape_str());
  int64_t n = shape()[0];
  return unsqueeze(-1).pad_to({n, n + 1}).flatten().shrink_to({n * n}).reshape({n, n});
}

Tensor Tensor::diagonal(int64_t offset, int64_t dim1_in, int64_t dim2_in) const {
  int64_t dim1 = resolve_dim(*this, dim1_in, false, "diagonal"), dim2 = resolve_dim(*this, dim2_in, false, "diagonal");
  if (dim1 == dim2) throw Error("diagonal: dim1 and dim2 cannot be the same dimension, got " + std::to_string(dim1) + " for " + shape_str());
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < ndim(); i++) if (i != dim1 && i != dim2) perm.push_back(i);
  perm.insert(perm.end(), {dim1, dim2});
  Tensor x = permute(perm);
  int64_t r = x.shape()[size_t(x.ndim() - 2)], c = x.shape().back();
  x = x.shrink(offset >= 0 ? only(x, x.ndim() - 1, {std::min(offset, c), c}) : only(x, x.ndim() - 2, {std::min(-offset, r), r}));
  Shape batch(x.shape().begin(), x.shape().end() - 2);
  int64_t d = std::min(x.shape()[size_t(x.ndim() - 2)], x.shape().back());
  auto with = [&](std::initializer_list<int64_t> tail) { Shape s = batch; s.insert(s.end(), tail); return s; };
  if (d <= 0) return x.reshape(with({0}));
  x = x.shrink_to(with({d, d})).flatten(-2).pad_to(with({d * (d + 1)}));
  return x.unflatten(-1, {d, d + 1}).shrink_to(with({d, 1})).squeeze(-1);
}

// ***** 3. repeat_interleave, unfold, meshgrid *****

Tensor Tensor::repeat_interleave(int64_t repeats, std::optional<int64_t> dim_in) const {
  if (repeats < 0) throw Error("repeat_interleave: repeats must be non-negative, got " + std::to_string(repeats));
  Tensor x = dim_in ? *this : flatten();
  int64_t dim = dim_in ? resolve_dim(*this, *dim_in, false, "repeat_interleave") : 0;
  SymShape s = x.sym_shape(), unsq = s, expd = s, fin = s;
  unsq.insert(unsq.begin() + dim + 1, 1), expd.insert(expd.begin() + dim + 1, repeats), fin[size_t(dim)] = fin[size_t(dim)] * repeats;
  return x.reshape(unsq).expand(expd).reshape(fin);
}

Tensor Tensor::unfold(int64_t dim_in, int64_t size, int64_t step) const {
  int64_t dim = resolve_dim(*this, dim_in, false, "unfold");
  if (size < 0) throw Error("unfold: size must be >= 0, got " + std::to_string(size));
  if (step <= 0) throw Error("unfold: step must be > 0, got " + std::to_string(step));
  if (ndim() == 0) throw Error("unfold: needs a tensor with at least one dim, got a 0-d one");
  if (size > shape()[size_t(dim)])
    throw Error("unfold: size " + std::to_string(size) + " is larger than dim " + std::to_string(dim) + " of " + shape_str());
  std::vector<int64_t> to_last, back(size_t(ndim()) + 1);
  for (int64_t i = 0; i < ndim(); i++) if (i != dim) to_last.push_back(i);
  to_last.push_back(dim);
  for (size_t i = 0; i < to_last.size(); i++) back[size_t(to_last[i])] = int64_t(i);
  back.back() = ndim();
  return pool(permute(to_last), {size}, step).permute(back);
}

std::vector<Tensor> Tensor::meshgrid(const std::vector<Tensor>& tensors, const std::string& indexing) {
  if (indexing != "ij" && indexing != "xy") throw Error("meshgrid: indexing must be \"ij\" or \"xy\", got \"" + indexing + "\"");
  if (tensors.empty()) throw Error("meshgrid: needs at least one tensor");
  for (auto& t : tensors) if (t.ndim() > 1) throw Error("meshgrid: expects 0-d or 1-D tensors, got shape " + t.shape_str());
  if (tensors.size() == 1) return tensors;
  size_t n = tensors.size();
  std::vector<Tensor> r;
  Shape out(n);
  for (size_t i = 0; i < n; i++) {
    size_t pos = indexing == "ij" || i > 1 ? i : 1 - i;
    Shape s(n, 1);
    s[pos] = tensors[i].numel();
    r.push_back(tensors[i].reshape(s)), out[pos] = s[pos];
  }
  for (auto& t : r) t = t.expand(out);
  return r;
}

// ***** 4. pad: the flat form and the modes *****

namespace {
Tensor pad_circular(const Tensor& self, const Pairs& pX) {
  Pairs sh, pads;
  for (size_t i = 0; i < pX.size(); i++) {
    int64_t s = self.shape()[i];
    sh.push_back({-std::min<int64_t>(pX[i].first, 0), std::min(pX[i].second + s, s)});
    pads.push_back({std::max<int64_t>(pX[i].first, 0), std::max<int64_t>(pX[i].second, 0)});
  }
  Tensor X = self.shrink(sh);
  std::vector<int64_t> reps;
  for (size_t i = 0; i < pads.size(); i++) {
    if (pads[i].first > X.shape()[i] || pads[i].second > X.shape()[i])
      throw Error("pad: circular padding (" + std::to_string(pads[i].first) + ", " + std::to_string(pads[i].second) +
                  ") wraps around more than once for dim " + std::to_string(i) + " of " + X.shape_str());
    reps.push_back(1 + (pads[i].first > 0) + (pads[i].second > 0));
  }
  Shape orig = X.shape();
  X = X.repeat(reps);
  Pairs cut;
  for (size_t i = 0; i < pads.size(); i++) {
    int64_t o = orig[i], x = X.shape()[i];
    cut.push_back({pads[i].first == 0 ? 0 : o - pads[i].first, pads[i].second == 0 ? x : x - o + pads[i].second});
  }
  return X.shrink(cut);
}

Tensor pad_reflect_replicate(const Tensor& self, const Pairs& pX, bool reflect) {
  Tensor X = self;
  for (int64_t d = 0; d < self.ndim(); d++) {
    int64_t pB = std::max<int64_t>(pX[size_t(d)].first, 0), pA = std::max<int64_t>(pX[size_t(d)].second, 0), s = X.shape()[size_t(d)];
    if (!pB && !pA) continue;
    std::vector<Tensor> pieces;
    if (reflect) {
      if (pB >= s || pA >= s)
        throw Error("pad: reflect padding (" + std::to_string(pB) + ", " + std::to_string(pA) + ") must be less than the size " +
                    std::to_string(s) + " of dim " + std::to_string(d));
      // before: elements pB..1 (mirrored, the edge left out); after: s-2 down to s-1-pA
      if (pB) pieces.push_back(X.shrink(only(X, d, {1, pB + 1})).flip(d));
      pieces.push_back(X);
      if (pA) pieces.push_back(X.shrink(only(X, d, {s - 1 - pA, s - 1})).flip(d));
    } else {
      if (s == 0) throw Error("pad: replicate padding of the empty dim " + std::to_string(d) + " of " + X.shape_str());
      auto edge = [&](int64_t at, int64_t p) { Shape e = X.shape(); e[size_t(d)] = p; return X.shrink(only(X, d, {at, at + 1})).expand(e); };
      if (pB) pieces.push_back(edge(0, pB));
      pieces.push_back(X);
      if (pA) pieces.push_back(edge(s - 1, pA));
    }
    X = Tensor::cat(pieces, d);
  }
  Pairs sh;
  for (size_t i = 0; i < pX.size(); i++) {
    int64_t s = X.shape()[i];
    sh.push_back({-std::min<int64_t>(pX[i].first, 0), std::min(pX[i].second + s, s)});
  }
  return X.shrink(sh);
}
}  // namespace

Tensor Tensor::pad(const SymPairs& padding_in, const std::string& mode, ConstVal value) const {
  if (int64_t(padding_in.size()) != ndim())
    throw Error("pad: got " + std::to_string(padding_in.size()) + " (before, after) pairs for shape " + shape_str());
  if (mode == "constant") return pad(padding_in, value);
  auto is = padding_in.ints();
  if (!is || uop_of(*this).has_sym_shape()) throw Error("pad: mode \"" + mode + "\" takes int pads on an int shape, got shape " + shape_str());
  const Pairs& padding = *is;
  if (mode == "circular") return pad_circular(*this, padding);
  if (mode == "reflect" || mode == "replicate") return pad_reflect_replicate(*this, padding, mode == "reflect");
  throw Error("pad: mode \"" + mode + "\" is not one of constant, reflect, replicate, circular");
}

Tensor Tensor::pad_flat(const std::vector<int64_t>& flat, const std::string& mode, ConstVal value) const {
  if (flat.size() % 2 != 0) throw Error("pad: a flat padding needs an even number of pads, got " + std::to_string(flat.size()));
  if (int64_t(flat.size() / 2) > ndim())
    throw Error("pad: " + std::to_string(flat.size()) + " flat pads are too many for shape " + shape_str());
  Pairs p(size_t(ndim()), {0, 0});
  for (size_t i = 0; i < flat.size() / 2; i++) p[size_t(ndim()) - 1 - i] = {flat[2 * i], flat[2 * i + 1]};
  return pad(p, mode, value);
}

}  // namespace tg
