// nn functionals on Tensor (tinygrad's mixin/op.py "functional nn ops" and "loss ops", the activations of
// mixin/elementwise.py, dropout/attention of mixin/rand.py), built from the same primitives in the same order.
// 1. padding helpers  2. conv and pooling  3. indexing-style ops  4. normalization  5. losses  6. attention
// 7. activations  8. initializers
#include <cmath>
#include <map>
#include <mutex>
#include <numeric>

#include "tensor/gradient.h"
#include "tensor/tensor_impl.h"
#include "tg/context.h"
#include "uop/movement.h"
#include "util/env.h"

namespace tg {

namespace {
using Pairs = std::vector<std::pair<int64_t, int64_t>>;
std::string dt_name(DType d) { return std::string(d.name()); }
std::string list_str(const std::vector<int64_t>& v) { return shape_str(v); }
int64_t floordiv(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0) ? 1 : 0); }
int64_t ceildiv(int64_t a, int64_t b) { return -floordiv(-a, b); }
int64_t prod_of(const Shape& s) { return std::accumulate(s.begin(), s.end(), int64_t(1), std::multiplies<>()); }

// ***** 1. padding helpers (helpers.py: make_tuple, resolve_pool_pads, flat_to_grouped) *****

Shape make_tuple(const IntList& x, size_t n) { return x.is_int ? Shape(n, x.v[0]) : x.v; }

// an int, one value per dim (H, W, ...) or one per side (left, right, top, bottom, ...) -> the per-side form
Shape resolve_pool_pads(const IntList& p, size_t dims, const char* op) {
  if (p.is_int) return Shape(2 * dims, p.v[0]);
  if (p.v.size() == 2 * dims) return p.v;
  if (p.v.size() != dims)
    throw Error(std::string(op) + ": padding must be an int or a list of length " + std::to_string(dims) + " or " + std::to_string(2 * dims) +
                ", got " + list_str(p.v));
  Shape r;
  for (auto it = p.v.rbegin(); it != p.v.rend(); ++it) r.insert(r.end(), {*it, *it});
  return r;
}

// (left, right, top, bottom) -> ((top, bottom), (left, right))
Pairs flat_to_grouped(const Shape& p) {
  Pairs r;
  for (size_t i = p.size(); i >= 2; i -= 2) r.push_back({p[i - 2], p[i - 1]});
  return r;
}
Shape grouped_to_flat_reversed(const Pairs& g) {
  Shape r;
  for (auto it = g.rbegin(); it != g.rend(); ++it) r.insert(r.end(), {it->first, it->second});
  return r;
}

Tensor pad_spatial(const Tensor& x, const Shape& flat_pads, ConstVal value) {
  Pairs g = flat_to_grouped(flat_pads), pads(size_t(x.ndim()) - g.size(), {0, 0});
  pads.insert(pads.end(), g.begin(), g.end());
  return pad_constant(x, pads, value);
}

std::vector<int64_t> last_axes(size_t n) {
  std::vector<int64_t> r;
  for (size_t i = n; i > 0; i--) r.push_back(-int64_t(i));
  return r;
}

// tinygrad's _apply_ceil_mode: extra padding after, so the last window that starts inside the input is kept
Shape apply_ceil_mode(const Tensor& self, const Shape& pads, const Shape& k_, const Shape& s_, const Shape& d_) {
  size_t n = k_.size();
  Shape i_(self.shape().end() - int64_t(n), self.shape().end());
  Pairs g = flat_to_grouped(pads);
  for (size_t j = 0; j < n; j++) {
    auto [pB, pA] = g[j];
    int64_t i = i_[j], s = s_[j], k = k_[j], d = d_[j];
    int64_t o = ceildiv(i + pB + pA - (d * (k - 1) + 1), s) + 1;
    g[j] = {pB, pA + s * (o - 1) + (d * (k - 1) + 1) - (i + pB + pA) - std::max<int64_t>(s * (o - 1) - (pB + i - 1), 0)};
  }
  return grouped_to_flat_reversed(g);
}

void check_pool_input(const Tensor& x, size_t nk, const char* op) {
  if (size_t(x.ndim()) < nk) throw Error(std::string(op) + ": input " + x.shape_str() + " has fewer dims than the kernel (" + std::to_string(nk) + ")");
}

// kernel, stride and dilation: one positive value per pooled dim (a zero stride would divide by zero)
void check_window(const char* op, const Shape& k_, const Shape& s_, const Shape& d_) {
  size_t n = k_.size();
  if (n == 0 || s_.size() != n || d_.size() != n)
    throw Error(std::string(op) + ": stride " + list_str(s_) + " / dilation " + list_str(d_) + " do not match the kernel " + list_str(k_));
  for (size_t j = 0; j < n; j++)
    if (k_[j] <= 0 || s_[j] <= 0 || d_[j] <= 0)
      throw Error(std::string(op) + ": kernel " + list_str(k_) + ", stride " + list_str(s_) + " and dilation " + list_str(d_) + " must be positive");
}

// _pool with the argument checks that name the calling op
Tensor pool_checked(const char* op, const Tensor& x, const Shape& k_, const Shape& s_, const Shape& d_) {
  size_t n = k_.size();
  check_window(op, k_, s_, d_);
  check_pool_input(x, n, op);
  for (size_t j = 0; j < n; j++) {
    int64_t i = x.shape()[size_t(x.ndim()) - n + j];
    if (d_[j] * (k_[j] - 1) + 1 > i)
      throw Error(std::string(op) + ": kernel " + list_str(k_) + " with dilation " + list_str(d_) + " is larger than the (padded) input " + x.shape_str());
  }
  return pool(x, k_, s_, d_);
}
}  // namespace

// ***** 2. conv and pooling *****

namespace {
// conv_transpose2d as the stride-1 convolution it is: zeros between the input's pixels (stride), the weights' in and out
// channels swapped and their window flipped, and the padding that gives the transposed output
struct TransposedConv { Tensor x, w; Shape dilation, pads; };
TransposedConv as_convolution(const Tensor& input, const Tensor& weight, int64_t groups, const IntList& stride, const IntList& dilation,
                              const IntList& padding, const IntList& output_padding) {
  if (input.ndim() < 3 || input.ndim() != weight.ndim())
    throw Error("conv_transpose2d: input " + input.shape_str() + " and weight " + weight.shape_str() + " need the same number of dims (at least 3)");
  if (groups <= 0 || weight.shape()[0] % groups != 0 || weight.shape()[0] != input.shape()[1])
    throw Error("conv_transpose2d: input shape " + input.shape_str() + " does not match the shape of the weights " + weight.shape_str() +
                " with groups=" + std::to_string(groups));
  Shape HW(weight.shape().begin() + 2, weight.shape().end());
  size_t n = HW.size();
  std::vector<int64_t> flip_axes;
  for (int64_t i = 3; i <= weight.ndim(); i++) flip_axes.push_back(i);
  Tensor x = input, w = weight.unflatten(0, {groups, -1}).transpose(1, 2).flip(flip_axes);
  Pairs pads = flat_to_grouped(resolve_pool_pads(padding, n, "conv_transpose2d"));
  Shape s_ = make_tuple(stride, n), d_ = make_tuple(dilation, n), op_ = make_tuple(output_padding, n);
  if (s_.size() != n || d_.size() != n || op_.size() != n)
    throw Error("conv_transpose2d: stride/dilation/output_padding do not match the kernel " + list_str(HW));
  for (size_t j = 0; j < n; j++)
    if (s_[j] <= 0 || op_[j] < 0) throw Error("conv_transpose2d: stride " + list_str(s_) + " must be positive, output_padding " + list_str(op_) + " non-negative");
  if (std::any_of(s_.begin(), s_.end(), [](int64_t s) { return s > 1; })) {
    // zeros between the input pixels: (k) -> (k,1) -> pad to (k,s) -> (k*s) -> shrink to k*s-(s-1)
    Shape sp(x.shape().begin() + 2, x.shape().end()), r1{x.shape()[0], x.shape()[1]}, r2 = r1, r3 = r1;
    Pairs p1(2, {0, 0});
    for (size_t j = 0; j < n; j++) r1.insert(r1.end(), {sp[j], 1}), p1.insert(p1.end(), {{0, 0}, {0, s_[j] - 1}});
    x = x.reshape(r1).pad(p1);
    for (size_t j = 0; j < n; j++) r2.push_back(sp[j] * s_[j]), r3.push_back(sp[j] * s_[j] - (s_[j] - 1));
    x = x.reshape(r2).shrink_to(r3);
  }
  Shape cpad;
  for (size_t j = n; j-- > 0;) cpad.insert(cpad.end(), {(HW[j] - 1) * d_[j] - pads[j].first, (HW[j] - 1) * d_[j] - pads[j].second + op_[j]});
  return {x, w.flatten(0, 1), d_, cpad};
}
}  // namespace

namespace {
struct ConvArgs {
  int64_t groups;
  Shape padding, stride, dilation;  // padding per side, as resolve_pool_pads gives it
  std::optional<DType> dtype;
  std::string key() const {
    return std::to_string(groups) + list_str(padding) + list_str(stride) + list_str(dilation) + (dtype ? dt_name(*dtype) : "");
  }
};

bool all_ones(const Shape& s) { return std::all_of(s.begin(), s.end(), [](int64_t v) { return v == 1; }); }

// tinygrad's conv2d after its checks: the windows of the padded input times the weights, summed
Tensor conv_windows(const Tensor& input, const Tensor& weight, const ConvArgs& a) {
  int64_t bs = input.shape()[0], cout = weight.shape()[0], cin = weight.shape()[1];
  Shape HW(weight.shape().begin() + 2, weight.shape().end());
  size_t n = HW.size();
  Tensor x = pool_checked("conv2d", pad_spatial(input, a.padding, 0.0), HW, a.stride, a.dilation);
  int64_t rcout = cout / a.groups;
  Shape oyx(x.shape().begin() + 2, x.shape().end() - int64_t(n));
  Shape rs{bs, a.groups, cin, 1}, es{bs, a.groups, cin, rcout}, ws{1, a.groups, rcout};
  for (auto s : oyx) rs.push_back(s), es.push_back(s), ws.push_back(1);
  for (auto s : HW) rs.push_back(s), es.push_back(s);
  ws.push_back(cin);
  ws.insert(ws.end(), HW.begin(), HW.end());
  std::vector<int64_t> perm{0, 1, 3};
  for (size_t i = 0; i < oyx.size(); i++) perm.push_back(4 + int64_t(i));
  perm.push_back(2);
  for (size_t i = 0; i < n; i++) perm.push_back(4 + int64_t(oyx.size() + i));
  x = x.reshape(rs).expand(es).permute(perm);
  std::vector<int64_t> red;
  for (size_t i = 0; i < 1 + oyx.size(); i++) red.push_back(-1 - int64_t(i));
  Shape out{bs, cout};
  out.insert(out.end(), oyx.begin(), oyx.end());
  return (x * weight.reshape(ws)).sum(red, true, a.dtype).reshape(out);
}

// `x` with its `axis` stored last, as a view of the same shape: the convolutions' channels become the contiguous axis
// that the CPU heuristic vectorizes (simd_upcast), for one small copy. SIMD=0 keeps tinygrad's graph.
Tensor channel_last(const Tensor& x, int64_t axis) {
  if (!simd_kernels() || axis == x.ndim() - 1) return x;
  std::vector<int64_t> to, back(size_t(x.ndim()));
  for (int64_t i = 0; i < x.ndim(); i++) if (i != axis) to.push_back(i);
  to.push_back(axis);
  for (size_t i = 0; i < to.size(); i++) back[size_t(to[i])] = int64_t(i);
  return x.permute(to).contiguous().permute(back);
}

// The input stored before the convolution reads it (SIMD=1): the inner loop reads each input value once per block of
// output channels and window position, so an elementwise op left fused there (the previous layer's relu) would be
// recomputed dozens of times, each a scalar op and a broadcast between two multiply-adds. Inside the FUNCTION body, so
// realizing the forward does not replace the stored copy in the tensors' graphs (which would cut the gradient there).
// (A CONTIGUOUS made by hand: Tensor::contiguous() leaves a PARAM alone, as it does a buffer.)
Tensor stored_input(const Tensor& x) { return simd_kernels() ? wrap(uop_of(x).alu(Ops::CONTIGUOUS)) : x; }

// The input's gradient as the window view's own would recompute each input pixel from the overlapping windows, with
// index arithmetic in the inner loop (10-20 GFLOPS on the main job's convolutions); as a transposed convolution it is
// a plain convolution kernel. The weights' gradient stays the window view's. One CallInfo per argument set keeps the
// FUNCTION, and so the schedule cache's key, the same from call to call.
CallInfo conv_call_info(const ConvArgs& a) {
  static std::mutex mu;
  static std::map<std::string, CallInfo> infos;
  std::lock_guard lock(mu);
  std::string key = a.key();
  auto it = infos.find(key);
  if (it != infos.end()) return it->second;
  auto grad_fxn = [a](const Tensor& grad, const std::vector<Tensor>& args) -> std::vector<std::optional<Tensor>> {
    const Tensor &x = args[0], &w = args[1];
    size_t n = size_t(w.ndim()) - 2;
    Pairs pads = flat_to_grouped(a.padding);
    Shape output_padding;
    for (size_t j = 0; j < n; j++)
      output_padding.push_back(x.shape()[2 + j] + pads[j].first + pads[j].second - a.dilation[j] * (w.shape()[2 + j] - 1) - 1 -
                               (grad.shape()[2 + j] - 1) * a.stride[j]);
    // SIMD=1, stride and dilation 1: the convolution pads the gradient itself, and the kernel's window ranges are clipped
    // to the gradient (pm_clip_reduce_gates: no multiply-adds with the padding's zeros, no tests in the inner loop). Else
    // the padded (and for strides, dilated) gradient is stored first: read in place, every load would test the borders
    TransposedConv t = as_convolution(grad, w, a.groups, a.stride, a.dilation, a.padding, output_padding);
    bool clipped = simd_kernels() && all_ones(a.stride) && all_ones(a.dilation) && std::all_of(t.pads.begin(), t.pads.end(), [](int64_t p) { return p >= 0; });
    Tensor dx = (clipped ? t.x.conv2d(t.w, std::nullopt, a.groups, 1, 1, t.pads)
                         : pad_spatial(t.x, t.pads, 0.0).contiguous().conv2d(t.w, std::nullopt, a.groups, 1, t.dilation, 0)).cast(x.dtype());
    // in a FUNCTION body too, so its stored input is the forward's node once both are inlined: one copy, not two
    Tensor wp = w.as_param(1);
    Tensor dw = wrap(make_function(uop_of(conv_windows(stored_input(x.as_param(0)), wp, a).gradient({wp}, channel_last(grad.as_param(2), 1))[0]),
                                   {uop_of(x), uop_of(w), uop_of(grad)}, CallInfo())
                         .gettuple(0));
    return {dx, dw};
  };
  return infos.emplace(key, call_info_with(grad_fxn, std::nullopt)).first->second;
}
}  // namespace

namespace {
// Winograd F(m x m, r x r) (Lavin & Gray, arXiv 1509.09308), tinygrad's WINO=1: the input cut into overlapping tiles of
// m+r-1 pixels, tiles and weights transformed (Bt d B, G g Gt), multiplied point by point and summed over the input
// channels (a batched matmul), and each sum transformed back into m x m outputs (At M A). All Tensor ops, so the
// gradients are the transformed domain's. r=3 is tinygrad's F(4x4,3x3); r=5 (ours) is F(4x4,5x5) on the points 0, +-1,
// +-2, +-1/2: 4 multiplies per output and input channel where the window has 25. Matrices and their float32 error:
// tools/winograd_matrices.py
using Matrix = std::vector<std::vector<double>>;
struct Winograd { int64_t m; Matrix G, Bt, At; };
// the transform for this convolution with WINO=1: a float kernel of equal sides 3 or 5, stride and dilation 1; else none
const Winograd* winograd_for(const Tensor& weight, const ConvArgs& a) {
  static const Winograd f4_3{4,
                             {{1. / 4, 0, 0}, {-1. / 6, -1. / 6, -1. / 6}, {-1. / 6, 1. / 6, -1. / 6}, {1. / 24, 1. / 12, 1. / 6}, {1. / 24, -1. / 12, 1. / 6}, {0, 0, 1}},
                             {{4, 0, -5, 0, 1, 0}, {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0}, {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}},
                             {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}}};
  static const Winograd f4_5{4,
                             {{-1, 0, 0, 0, 0},
                              {-2. / 9, -2. / 9, -2. / 9, -2. / 9, -2. / 9},
                              {-2. / 9, 2. / 9, -2. / 9, 2. / 9, -2. / 9},
                              {1. / 90, 1. / 45, 2. / 45, 4. / 45, 8. / 45},
                              {1. / 90, -1. / 45, 2. / 45, -4. / 45, 8. / 45},
                              {32. / 45, 16. / 45, 8. / 45, 4. / 45, 2. / 45},
                              {32. / 45, -16. / 45, 8. / 45, -4. / 45, 2. / 45},
                              {0, 0, 0, 0, 1}},
                             {{-1, 0, 21. / 4, 0, -21. / 4, 0, 1, 0},
                              {0, 1, 1, -17. / 4, -17. / 4, 1, 1, 0},
                              {0, -1, 1, 17. / 4, -17. / 4, -1, 1, 0},
                              {0, 1. / 2, 1. / 4, -5. / 2, -5. / 4, 2, 1, 0},
                              {0, -1. / 2, 1. / 4, 5. / 2, -5. / 4, -2, 1, 0},
                              {0, 2, 4, -5. / 2, -5, 1. / 2, 1, 0},
                              {0, -2, 4, 5. / 2, -5, -1. / 2, 1, 0},
                              {0, -1, 0, 21. / 4, 0, -21. / 4, 0, 1}},
                             {{1, 1, 1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 1. / 2, -1. / 2, 0}, {0, 1, 1, 4, 4, 1. / 4, 1. / 4, 0}, {0, 1, -1, 8, -8, 1. / 8, -1. / 8, 1}}};
  if (!settings().WINO || !all_ones(a.stride) || !all_ones(a.dilation) || !weight.dtype().is_float()) return nullptr;
  Shape HW(weight.shape().begin() + 2, weight.shape().end());
  if (std::any_of(HW.begin(), HW.end(), [&](int64_t k) { return k != HW[0]; })) return nullptr;
  return HW[0] == 3 ? &f4_3 : HW[0] == 5 ? &f4_5 : nullptr;
}

// a bias of one value per output channel as (1, cout, 1, ...) for n spatial dims
Tensor channel_bias(const Tensor& b, size_t n) {
  Shape s{1, -1};
  s.resize(2 + n, 1);
  return b.reshape(s);
}

// kron(mat, ..., mat) applied along the first `dims` axes; column k of mat is a stacked constant times row k of the input
Tensor apply_winograd_matrix(const Tensor& t, const Matrix& mat, size_t dims) {
  Tensor ret = t;
  for (int64_t dim = 0; dim < int64_t(dims); dim++) {
    ret = ret.transpose(0, dim);
    Shape cs(size_t(ret.ndim()), 1);
    cs[0] = int64_t(mat.size());
    std::optional<Tensor> acc;
    for (size_t k = 0; k < mat[0].size(); k++) {
      std::vector<Tensor> col;
      for (auto& row : mat) col.push_back(wrap(UOp::const_(row[k], ret.dtype())));
      Tensor term = Tensor::stack(col).reshape(cs) * ret[int64_t(k)];
      acc = acc ? *acc + term : term;
    }
    ret = acc->transpose(0, dim);
  }
  return ret;
}

Tensor conv2d_winograd(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias, int64_t groups, const Shape& padding,
                       std::optional<DType> dtype, const Winograd& w) {
  int64_t bs = x.shape()[0], cout = weight.shape()[0], cin = weight.shape()[1], rcout = cout / groups, m = w.m, r = int64_t(w.G[0].size());
  size_t n = size_t(weight.ndim()) - 2;
  Shape HWI(n, int64_t(w.Bt.size())), HWO(n, m);
  Tensor windows = pool_checked("conv2d", pad_spatial(x, padding, 0.0), Shape(n, r), Shape(n, 1), Shape(n, 1));
  Shape oyx(windows.shape().begin() + 2, windows.shape().end() - int64_t(n));
  // more padding after, to whole m x m output tiles: (bs, cin_, *tyx, *HWI)
  Pairs pads = flat_to_grouped(padding);
  for (size_t j = 0; j < n; j++) pads[j].second += (m - oyx[j] % m) % m;
  Tensor d = pool(pad_spatial(x, grouped_to_flat_reversed(pads), 0.0), HWI, HWO, Shape(n, 1));
  // HWI first: (*HWI, bs, cin_, *tyx); contiguous_backward keeps the input transform's adjoint out of the tiles' overlap sum
  auto last_first = [n](int64_t nd) {
    std::vector<int64_t> p;
    for (int64_t i = nd - int64_t(n); i < nd; i++) p.push_back(i);
    for (int64_t i = 0; i < nd - int64_t(n); i++) p.push_back(i);
    return p;
  };
  d = d.permute(last_first(d.ndim())).contiguous_backward();
  Shape tyx(d.shape().end() - int64_t(n), d.shape().end());
  // the transforms stored once: G g Gt as (*HWI, 1, groups, rcout, cin, 1...), Bt d B as (*HWI, bs, groups, 1, cin, *tyx)
  Shape gs = HWI, ds = HWI;
  gs.insert(gs.end(), {1, groups, rcout, cin});
  gs.resize(gs.size() + n, 1);
  ds.insert(ds.end(), {bs, groups, 1, cin});
  ds.insert(ds.end(), tyx.begin(), tyx.end());
  Tensor gfactors = apply_winograd_matrix(weight.permute(last_first(weight.ndim())), w.G, n).contiguous().reshape(gs);
  Tensor dfactors = apply_winograd_matrix(d, w.Bt, n).contiguous().reshape(ds);
  // the matmul over cin: (*HWI, bs, groups, rcout, *tyx), then back to outputs: (*HWO, bs, groups, rcout, *tyx)
  Tensor ret = apply_winograd_matrix((gfactors * dfactors).sum(std::vector<int64_t>{-1 - int64_t(n)}, false, dtype), w.At, n);
  // tiles and their outputs interleaved: (bs, groups, rcout, ty, HO, tx, WO) -> (bs, cout, *oyx)
  std::vector<int64_t> perm;
  for (int64_t i = int64_t(n); i < ret.ndim() - int64_t(n); i++) perm.push_back(i);
  for (int64_t i = 0; i < int64_t(n); i++) perm.insert(perm.end(), {ret.ndim() - int64_t(n) + i, i});
  Shape flat{bs, cout}, out{bs, cout};
  for (size_t i = 0; i < n; i++) flat.push_back(tyx[i] * m), out.push_back(oyx[i]);
  ret = ret.permute(perm).reshape(flat).shrink_to(out);
  return (bias ? ret.add(channel_bias(*bias, n)) : ret).contiguous().contiguous_backward();
}
}  // namespace

Tensor Tensor::conv2d(const Tensor& weight, std::optional<Tensor> bias, int64_t groups, IntList stride, IntList dilation, IntList padding,
                      std::optional<DType> dtype) const {
  if (ndim() < 3 || ndim() != weight.ndim())
    throw Error("conv2d: input " + shape_str() + " and weight " + weight.shape_str() + " need the same number of dims (at least 3)");
  int64_t cin_ = shape()[1], cout = weight.shape()[0], cin = weight.shape()[1];
  if (groups <= 0 || groups * cin != cin_ || cout % groups != 0)
    throw Error("conv2d: input shape " + shape_str() + " does not match the shape of the weights " + weight.shape_str() + " with groups=" +
                std::to_string(groups) + " (" + std::to_string(groups * cin) + " vs. " + std::to_string(cin_) + " channels)");
  if (bias && bias->numel() != cout) throw Error("conv2d: bias " + bias->shape_str() + " does not match " + std::to_string(cout) + " output channels");
  size_t n = size_t(weight.ndim()) - 2;
  ConvArgs a{groups, resolve_pool_pads(padding, n, "conv2d"), make_tuple(stride, n), make_tuple(dilation, n), dtype};
  const Winograd* wino = winograd_for(weight, a);
  // SIMD=1 or Winograd: integer pixels times float weights are the float convolution of the pixels cast, as the product
  // promotes (the transforms' fractions need the float)
  Tensor x = (simd_kernels() || wino) && !this->dtype().is_float() && weight.dtype().is_float() && !dtype ? cast(weight.dtype()) : *this;
  if (wino) {  // in a function, as below: a realized output keeps its gradient (here the body's own, through the transforms)
    std::vector<UOp> args{uop_of(x), uop_of(weight)};
    if (bias) args.push_back(uop_of(*bias));
    Tensor body = conv2d_winograd(x.as_param(0), weight.as_param(1), bias ? std::optional(bias->as_param(2)) : std::nullopt, groups, a.padding, dtype, *wino);
    return wrap(make_function(uop_of(body), args).gettuple(0));
  }
  // SIMD=1: the convolution is stored as it is (inside the function, so the stored value keeps its gradient after a
  // realize), and the bias and what follows (relu) run in the next kernel. Fused, that epilogue is rendered lane by lane
  // on the output channels (NCHW's strided axis), and clang's SLP vectorizer then keeps the accumulators in a permuted
  // lane order, with permutes in the inner loop: 3-6x slower than the plain kernel (bench/conv, "fbr" against "fwd"),
  // where one more pass over the output costs a few percent
  Tensor ret;
  if (!x.dtype().is_float() || !weight.dtype().is_float()) ret = conv_windows(x, weight, a);
  else {
    Tensor body = conv_windows(stored_input(x.as_param(0)), channel_last(weight.as_param(1), 0), a);
    if (simd_kernels()) body = body.contiguous();
    ret = wrap(make_function(uop_of(body), {uop_of(x), uop_of(weight)}, conv_call_info(a)).gettuple(0));
  }
  return bias ? ret.add(channel_bias(*bias, n)) : ret;
}

Tensor Tensor::conv_transpose2d(const Tensor& weight, std::optional<Tensor> bias, int64_t groups, IntList stride, IntList dilation,
                                IntList padding, IntList output_padding) const {
  TransposedConv t = as_convolution(*this, weight, groups, stride, dilation, padding, output_padding);
  return t.x.conv2d(t.w, bias, groups, 1, t.dilation, t.pads);
}

Tensor Tensor::avg_pool2d(IntList kernel_size, std::optional<IntList> stride, IntList dilation, IntList padding, bool ceil_mode,
                          bool count_include_pad) const {
  Shape k_ = make_tuple(kernel_size, 2);
  size_t n = k_.size();
  check_pool_input(*this, n, "avg_pool2d");
  Shape s_ = make_tuple(stride ? *stride : IntList(k_), n), d_ = make_tuple(dilation, n);
  std::vector<int64_t> axis = last_axes(n);
  auto pool_ = [&](const Tensor& x, const Shape& p) { return pool_checked("avg_pool2d", pad_spatial(x, p, 0.0), k_, s_, d_); };
  check_window("avg_pool2d", k_, s_, d_);
  Shape reg_pads = resolve_pool_pads(padding, n, "avg_pool2d");
  Shape pads = ceil_mode ? apply_ceil_mode(*this, reg_pads, k_, s_, d_) : reg_pads;
  if (!count_include_pad) return pool_(*this, pads).sum(axis) / pool_(tg::const_like(*this, 1), pads).sum(axis);
  if (!ceil_mode) return pool_(*this, pads).mean(axis);
  Shape extra;
  for (size_t i = 0; i < pads.size(); i++) extra.push_back(pads[i] - reg_pads[i]);
  return pool_(*this, pads).sum(axis) / pool_(tg::const_like(pad_spatial(*this, reg_pads, 0.0), 1), extra).sum(axis);
}

namespace {
struct MaxPoolArgs { Shape k_, s_, d_, pads; std::vector<int64_t> axis; };
MaxPoolArgs max_pool_args(const Tensor& self, const IntList& kernel_size, const std::optional<IntList>& stride, const IntList& dilation,
                          const IntList& padding, bool ceil_mode) {
  MaxPoolArgs a;
  a.k_ = make_tuple(kernel_size, 2);
  size_t n = a.k_.size();
  check_pool_input(self, n, "max_pool2d");
  a.s_ = make_tuple(stride ? *stride : IntList(a.k_), n), a.d_ = make_tuple(dilation, n), a.axis = last_axes(n);
  check_window("max_pool2d", a.k_, a.s_, a.d_);
  a.pads = resolve_pool_pads(padding, n, "max_pool2d");
  if (ceil_mode) a.pads = apply_ceil_mode(self, a.pads, a.k_, a.s_, a.d_);
  return a;
}
}  // namespace

Tensor Tensor::max_pool2d(IntList kernel_size, std::optional<IntList> stride, IntList dilation, IntList padding, bool ceil_mode) const {
  MaxPoolArgs a = max_pool_args(*this, kernel_size, stride, dilation, padding, ceil_mode);
  return pool_checked("max_pool2d", pad_spatial(*this, a.pads, dtype().min()), a.k_, a.s_, a.d_).max(a.axis);
}

std::pair<Tensor, Tensor> Tensor::max_pool2d_with_indices(IntList kernel_size, std::optional<IntList> stride, IntList dilation, IntList padding,
                                                          bool ceil_mode) const {
  MaxPoolArgs a = max_pool_args(*this, kernel_size, stride, dilation, padding, ceil_mode);
  Tensor pooled = pool_checked("max_pool2d", pad_spatial(*this, a.pads, dtype().min()), a.k_, a.s_, a.d_);
  Shape spatial(shape().end() - int64_t(a.k_.size()), shape().end());
  int64_t spatial_sz = prod_of(spatial);
  Tensor idx = Tensor::arange(spatial_sz, 0, -1).reshape(spatial);
  Tensor m = pooled.eq(pooled.max(a.axis, true));
  idx = m * pool(pad_spatial(idx, a.pads, idx.dtype().min()), a.k_, a.s_, a.d_);
  return {pooled.max(a.axis), Tensor(spatial_sz) - idx.max(a.axis)};
}

Tensor Tensor::max_unpool2d(const Tensor& indices, IntList kernel_size, std::optional<IntList> stride, IntList dilation, IntList padding,
                            std::optional<Shape> output_size) const {
  if (ndim() < 3) throw Error("max_unpool2d: needs (batch, channels, spatial...) dims, got shape " + shape_str());
  if (indices.shape() != shape())
    throw Error("max_unpool2d: indices " + indices.shape_str() + " must have the shape of the values " + shape_str());
  Shape spatial(shape().begin() + 2, shape().end()), out;
  size_t n = spatial.size();
  if (!output_size) {
    Shape k_ = make_tuple(kernel_size, n), d_ = make_tuple(dilation, n), s_ = make_tuple(stride ? *stride : kernel_size, n);
    if (k_.size() != n || d_.size() != n || s_.size() != n)
      throw Error("max_unpool2d: kernel_size, stride and dilation need " + std::to_string(n) + " values for shape " + shape_str());
    Pairs p_ = flat_to_grouped(resolve_pool_pads(padding, n, "max_unpool2d"));
    for (size_t i = 0; i < n; i++) out.push_back((spatial[i] - 1) * s_[i] - (p_[i].first + p_[i].second) + d_[i] * (k_[i] - 1) + 1);
  } else {
    if (output_size->size() < n) throw Error("max_unpool2d: output_size " + list_str(*output_size) + " has fewer than " + std::to_string(n) + " dims");
    out.assign(output_size->end() - int64_t(n), output_size->end());
  }
  for (int64_t o : out) if (o <= 0) throw Error("max_unpool2d: the output size " + list_str(out) + " is not positive");
  int64_t bs = shape()[0], c = shape()[1];
  Tensor hot = one_hot_along_dim(indices.reshape({bs, c, 1, -1}), prod_of(out), 2, "max_unpool2d");
  Shape full{bs, c};
  full.insert(full.end(), out.begin(), out.end());
  // overlapping windows can name one position twice (with the same value): torch writes it once, tinygrad's sum would
  // double it, so take the max of the hits
  Tensor picked = hot.where(reshape({bs, c, 1, -1}), lit(dtype().min())).max(3);
  return hot.any(3).where(picked, 0).reshape(full);
}

Tensor Tensor::interpolate(const Shape& size, const std::string& mode_in, bool align_corners) const {
  std::string mode = mode_in == "bilinear" || mode_in == "trilinear" ? "linear" : mode_in;
  if (mode != "linear" && mode != "nearest" && mode != "nearest-exact")
    throw Error("interpolate: mode must be linear, bilinear, trilinear, nearest or nearest-exact, got \"" + mode_in + "\"");
  if ((mode_in == "bilinear" && size.size() != 2) || (mode_in == "trilinear" && size.size() != 3))
    throw Error("interpolate: " + mode_in + " needs " + (mode_in == "bilinear" ? "2" : "3") + " sizes, got " + list_str(size));
  if (size.empty() || int64_t(size.size()) > ndim())
    throw Error("interpolate: size " + list_str(size) + " must name between 1 and ndim dims of " + shape_str());
  for (int64_t s : size) if (s <= 0) throw Error("interpolate: sizes must be positive, got " + list_str(size));
  if (align_corners && mode != "linear") throw Error("interpolate: align_corners needs a linear mode, got \"" + mode_in + "\"");
  Tensor x = *this;
  Shape expand = shape();
  for (int64_t k = 1; k <= int64_t(size.size()); k++) {
    size_t d = size_t(ndim() - k);
    int64_t in = shape()[d], out = size[size.size() - size_t(k)];
    Shape r(size_t(ndim()), 1);
    r[d] = expand[d] = out;
    if (mode == "linear") {
      // the source position of each output as num / den, exactly: align_corners maps the corner pixels onto each other
      Tensor arr = Tensor::arange(out);
      int64_t den = align_corners ? std::max<int64_t>(out - 1, 1) : out * 2;
      Tensor num = align_corners ? arr * (in - 1) : (arr * 2 + 1) * in - out;
      num = num.clip(Tensor(0), Tensor((in - 1) * den));
      Tensor low = num.idiv(den).reshape(r).expand(expand), high = (num + den - 1).idiv(den).reshape(r).expand(expand);
      Tensor perc = (num % den).cast(dtypes::float32).div(den).reshape(r).expand(expand);
      x = x.gather(int64_t(d), low).lerp(x.gather(int64_t(d), high), perc);
    } else {
      Tensor arr = Tensor::arange(out, dtypes::float32);
      double scale = double(in) / double(out);
      Tensor pos = mode == "nearest-exact" ? (arr + 0.5) * scale : arr * scale;
      x = x.gather(int64_t(d), pos.cast(dtypes::int32).reshape(r).expand(expand));
    }
  }
  return x.cast(dtype());
}

// ***** 3. dropout, one_hot, gather, sequential *****

Tensor Tensor::dropout(double p) const {
  if (!(p >= 0 && p <= 1)) throw Error("dropout: p=" + std::to_string(p) + " is out of range [0, 1]");
  if (!training() || p == 0) return *this;
  if (p == 1) return tg::const_like(*this, 0);
  // tinygrad draws rand_like(contiguous=False): the uniform values without rand's trailing CONTIGUOUS
  Tensor r = rand_like(dtypes::default_float);
  if (uop_of(r).op() == Ops::CONTIGUOUS) r = wrap(uop_of(r).src(0));
  return (r >= p).contiguous().where(*this, 0) / (1.0 - p);
}

Tensor one_hot_along_dim(const Tensor& self, int64_t num_classes, int64_t dim, const char* op) {
  if (!self.dtype().is_int()) throw Error(std::string(op) + ": expects an int index tensor, got " + dt_name(self.dtype()) + " " + self.shape_str());
  int64_t offset = self.ndim() - resolve_dim(self, dim, false, op) - 1;
  Shape s{num_classes};
  s.resize(size_t(offset) + 1, 1);
  return self.eq(Tensor::arange(num_classes).reshape(s));
}

Tensor Tensor::one_hot(int64_t num_classes) const {
  if (!dtype().is_int()) throw Error("one_hot: expects an integer dtype, got " + dt_name(dtype()) + " " + shape_str());
  if (num_classes < 0) throw Error("one_hot: num_classes must be non-negative, got " + std::to_string(num_classes));
  return one_hot_along_dim((*this)[{Ellipsis{}, NewAxis{}}], num_classes, -1, "one_hot").where(1, 0);
}

Tensor Tensor::gather(int64_t dim_in, const Tensor& index) const {
  if (index.device() && device() && index.device() != device())
    throw Error("gather: expected index and self on the same device, got " + *index.device() + " and " + *device());
  if (index.ndim() != ndim()) throw Error("gather: self.ndim must equal index.ndim, got " + shape_str() + " and index " + index.shape_str());
  int64_t dim = resolve_dim(*this, dim_in, false, "gather");
  Shape sh = shape();
  for (int64_t d = 0; d < ndim(); d++) {
    if (d == dim) continue;
    if (shape()[size_t(d)] < index.shape()[size_t(d)])
      throw Error("gather: requires self.shape[d] >= index.shape[d] for all d != dim, got " + shape_str() + " and index " + index.shape_str());
    sh[size_t(d)] = index.shape()[size_t(d)];
  }
  Tensor x = shrink_to(sh).unsqueeze(-1).transpose(-1, dim);
  return one_hot_along_dim(index.unsqueeze(-1), shape()[size_t(dim)], -1, "gather").where(x, 0).sum(-1, false, dtype());
}

Tensor Tensor::sequential(const std::vector<std::function<Tensor(const Tensor&)>>& layers) const {
  Tensor x = *this;
  for (auto& f : layers) x = f(x);
  return x;
}

// ***** 4. normalization *****

Tensor Tensor::batchnorm(std::optional<Tensor> weight, std::optional<Tensor> bias, const Tensor& mean, const Tensor& invstd, Axis axis) const {
  std::vector<int64_t> axis_ = axis.axes ? *axis.axes : std::vector<int64_t>{};
  Shape s;
  for (int64_t ax = 0; ax < ndim(); ax++)
    s.push_back(std::find(axis_.begin(), axis_.end(), ax) != axis_.end() ? shape()[size_t(ax)] : 1);
  auto fit = [&](const Tensor& t, const char* what) {
    if (t.numel() != prod_of(s))
      throw Error(std::string("batchnorm: ") + what + " " + t.shape_str() + " does not match input " + shape_str() + " over axis " + list_str(axis_));
    return t.reshape(s);
  };
  Tensor x = *this - fit(mean, "mean");
  if (weight) x = x * fit(*weight, "weight");
  Tensor ret = x.mul(invstd.ndim() == int64_t(axis_.size()) ? fit(invstd, "invstd") : invstd);
  return bias ? ret + fit(*bias, "bias") : ret;
}

Tensor Tensor::rms_norm(Axis axis, double eps) const { return *this * (square().mean(axis, true) + eps).rsqrt(); }
Tensor Tensor::normalize(double p, int64_t dim, double eps) const {
  Tensor den = p == 0 ? ne(0).sum(dim, true) : abs().pow(Tensor(p)).sum(dim, true).pow(Tensor(1 / p));
  return *this / den.maximum(Tensor(eps));
}

// ***** 5. losses *****

namespace {
Tensor do_reduction(const Tensor& t, const std::string& reduction, const char* op) {
  if (reduction == "none") return t;
  if (reduction == "sum") return t.sum();
  if (reduction == "mean") return t.mean();
  throw Error(std::string(op) + ": reduction='" + reduction + "' must be one of 'none', 'sum', 'mean'");
}
void check_reduction(const std::string& reduction, const char* op) {
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    throw Error(std::string(op) + ": reduction='" + reduction + "' must be one of 'none', 'sum', 'mean'");
}
void check_smoothing(double ls, const char* op) {
  if (!(ls >= 0.0 && ls <= 1.0)) throw Error(std::string(op) + ": label_smoothing must be in [0.0, 1.0], got " + std::to_string(ls));
}
}  // namespace

Tensor Tensor::binary_crossentropy(const Tensor& Y, const std::string& reduction) const {
  check_reduction(reduction, "binary_crossentropy");
  return do_reduction(-Y * log() - (1 - Y) * (1 - *this).log(), reduction, "binary_crossentropy");
}

Tensor Tensor::binary_crossentropy_logits(const Tensor& Y, const std::string& reduction, std::optional<Tensor> pos_weight) const {
  check_reduction(reduction, "binary_crossentropy_logits");
  Tensor log_p = logsigmoid(), log_1_minus_p = (-*this).logsigmoid();
  return do_reduction(-((pos_weight ? *pos_weight : Tensor(1)) * Y * log_p + (1 - Y) * log_1_minus_p), reduction, "binary_crossentropy_logits");
}

Tensor Tensor::sparse_categorical_crossentropy(const Tensor& Y, int64_t ignore_index, double label_smoothing, const std::string& reduction) const {
  const char* op = "sparse_categorical_crossentropy";
  check_smoothing(label_smoothing, op);
  check_reduction(reduction, op);
  if (Y.device() && device() && Y.device() != device()) throw Error(std::string(op) + ": expected Y and self on the same device, got " + *Y.device() + " and " + *device());
  if (ndim() == 0 || Shape(shape().begin(), shape().end() - 1) != Y.shape())
    throw Error(std::string(op) + ": logits " + shape_str() + " need the shape of Y " + Y.shape_str() + " plus a class axis");
  Tensor log_probs = log_softmax();
  Tensor loss_mask = ignore_index != -1 ? Y.ne(ignore_index) : tg::const_like(Y, true, dtypes::bool_);
  Tensor y = one_hot_along_dim(Y.unsqueeze(-1), shape().back(), -1, op) * loss_mask.unsqueeze(-1);
  Tensor smoothing = label_smoothing * (log_probs.mean(-1) * loss_mask);
  Tensor unreduced = (1 - label_smoothing) * (log_probs * y).sum(-1) + smoothing;
  return reduction == "mean" ? -unreduced.sum() / loss_mask.sum() : -do_reduction(unreduced, reduction, op);
}

Tensor Tensor::cross_entropy(const Tensor& Y_in, const std::string& reduction, double label_smoothing) const {
  check_smoothing(label_smoothing, "cross_entropy");
  check_reduction(reduction, "cross_entropy");
  if (ndim() == 0) throw Error("cross_entropy: logits need at least 1 dim, got " + shape_str());
  int64_t classes_dim = ndim() == 1 ? 0 : 1;
  Tensor Y = Y_in;
  if (shape() != Y.shape()) {
    if (max(classes_dim).shape() != Y.shape()) throw Error("cross_entropy: shape mismatch: self.shape=" + shape_str() + ", Y.shape=" + Y.shape_str());
    Y = one_hot_along_dim(Y.unsqueeze(classes_dim), shape()[size_t(classes_dim)], classes_dim, "cross_entropy");
  }
  Y = (1 - label_smoothing) * Y + label_smoothing / double(Y.shape()[size_t(classes_dim)]);
  return -do_reduction(log_softmax(classes_dim).mul(Y).sum(classes_dim), reduction, "cross_entropy");
}

Tensor Tensor::nll_loss(const Tensor& Y, std::optional<Tensor> weight, std::optional<int64_t> ignore_index, const std::string& reduction) const {
  check_reduction(reduction, "nll_loss");
  if (ndim() != 2 || Y.ndim() != 1 || Y.shape()[0] != shape()[0])
    throw Error("nll_loss: expected log-probabilities (N, C) and targets (N,), got " + shape_str() + " and " + Y.shape_str());
  if (!Y.dtype().is_int()) throw Error("nll_loss: targets must be an int dtype, got " + std::string(Y.dtype().name()));
  if (weight && weight->shape() != Shape{shape()[1]}) throw Error("nll_loss: weight must have shape (C,) = (" + std::to_string(shape()[1]) + "), got " + weight->shape_str());
  Tensor w = weight ? weight->gather(0, Y.flatten()).reshape(Y.shape()) : tg::const_like(Y, 1, dtype());
  Tensor masked = ignore_index ? w * Y.ne(*ignore_index) : w;
  Tensor nll = -gather(1, Y.unsqueeze(1)).squeeze(1) * masked;
  return reduction == "mean" ? nll.sum() / masked.sum() : do_reduction(nll, reduction, "nll_loss");
}

// ***** 6. attention *****

Tensor Tensor::scaled_dot_product_attention(const Tensor& key_in, const Tensor& value_in, std::optional<Tensor> attn_mask, double dropout_p,
                                            bool is_causal, bool enable_gqa) const {
  // sequence dims may be symbolic (a KV cache read to start_pos+T); head counts and the head dim are ints
  SymShape qs = sym_shape(), ks = key_in.sym_shape(), vs = value_in.sym_shape();
  if (qs.size() < 2 || ks.size() < 2 || vs.size() < 2 || qs.back() != ks.back() || !qs.back().is_int())
    throw Error("scaled_dot_product_attention: query " + shape_str() + ", key " + key_in.shape_str() + " and value " + value_in.shape_str() +
                " need at least 2 dims and the same int last dim for query and key");
  Tensor key = key_in, value = value_in;
  if (enable_gqa) {
    auto heads = [](const SymShape& s) { return s.size() >= 3 && s[s.size() - 3].is_int() ? s[s.size() - 3].as_int() : int64_t(0); };
    int64_t hq = heads(qs), hk = heads(ks), hv = heads(vs);
    if (hq == 0 || hk == 0 || hv == 0 || hq % hk != 0 || hq % hv != 0)
      throw Error("scaled_dot_product_attention: enable_gqa needs query heads " + shape_str() + " to be a multiple of key/value heads " +
                  key.shape_str() + ", " + value.shape_str());
    key = key.repeat_interleave(hq / hk, -3), value = value.repeat_interleave(hq / hv, -3);
  }
  Tensor qk = matmul(key.transpose(-2, -1), false, least_upper_dtype({dtype(), key.dtype(), dtypes::float32})) / std::sqrt(double(qs.back().as_int()));
  if (is_causal) {
    if (attn_mask) throw Error("scaled_dot_product_attention: cannot set attn_mask when is_causal=True");
    attn_mask = tg::const_like(qk, true, dtypes::bool_).tril();
  }
  if (attn_mask) {
    if (attn_mask->dtype() == dtypes::bool_) attn_mask = attn_mask->where(0, -INFINITY);
    qk = qk + *attn_mask;
  }
  return qk.cast(dtype()).softmax(-1).dropout(dropout_p).matmul(value);
}

// ***** 7. activations *****

Tensor Tensor::leaky_relu(double neg_slope) const { return (*this < 0).where(neg_slope * *this, *this); }
Tensor Tensor::elu(double alpha) const { return relu() - alpha * (1 - exp()).relu(); }
Tensor Tensor::softplus(double beta) const { return (1 / beta) * (*this * beta).logaddexp(0.0); }
Tensor Tensor::logsigmoid() const { return -(-*this).softplus(); }
Tensor Tensor::hardtanh(double min_val, double max_val) const {
  // whole numbers stay int literals, as tinygrad's defaults (-1, 1) are
  auto l = [](double v) { return v == std::trunc(v) && std::fabs(v) < 1e15 ? Tensor(int64_t(v)) : Tensor(v); };
  return clamp(l(min_val), l(max_val));
}
Tensor Tensor::hardswish() const { return *this * (*this + 3).relu6() * (1.0 / 6); }
Tensor Tensor::hardsigmoid(double alpha, double beta) const { return (alpha * *this + beta).relu() - (alpha * *this + beta - 1).relu(); }
Tensor Tensor::mish() const { return *this * softplus().tanh(); }
Tensor Tensor::relu6() const { return relu() - (*this - 6).relu(); }
Tensor Tensor::celu(double alpha) const { return maximum(0) + (alpha * ((*this / alpha).exp() - 1)).minimum(0); }
Tensor Tensor::selu(double alpha, double gamma) const { return gamma * (*this >= 0).where(*this, alpha * (exp() - 1)); }
Tensor Tensor::quick_gelu() const { return *this * (*this * 1.702).sigmoid(); }
Tensor Tensor::softsign() const { return *this / (1 + abs()); }

// ***** 8. initializers (mixin/rand.py) *****

Tensor Tensor::scaled_uniform(const Shape& shape, std::optional<DType> dtype, const std::string& device) {
  return uniform(shape, -1.0, 1.0, dtype, device).mul(std::pow(double(prod_of(shape)), -0.5));
}
Tensor Tensor::glorot_uniform(const Shape& shape, std::optional<DType> dtype, const std::string& device) {
  if (shape.empty()) throw Error("glorot_uniform: needs at least one dim");
  double bound = std::pow(6.0 / double(shape[0] + prod_of(Shape(shape.begin() + 1, shape.end()))), 0.5);
  return uniform(shape, -bound, bound, dtype, device);
}
Tensor Tensor::kaiming_uniform(const Shape& shape, double a, std::optional<DType> dtype, const std::string& device) {
  if (shape.empty()) throw Error("kaiming_uniform: needs at least one dim");
  double bound = std::pow(6.0 / (1 + a * a) / double(prod_of(Shape(shape.begin() + 1, shape.end()))), 0.5);
  return uniform(shape, -bound, bound, dtype, device);
}

}  // namespace tg
