// tg::nn layers: tinygrad's nn/__init__.py. Initial values are drawn in tinygrad's order (a ConvTranspose2d draws the
// Conv2d weight and bias first, then its own weight), so with the same seed the same numbers come out. Ours: every
// initial value is contiguous, a buffer from the first step on, so the first training step reads it as the later ones
// do and its kernels are theirs (a TinyJit's capture step then compiles and BEAM-searches nothing new)
#include <cmath>
#include <cstring>
#include <numeric>

#include "tg/context.h"
#include "tg/nn.h"

namespace tg::nn {

namespace {
int64_t prod_of(const Shape& s) { return std::accumulate(s.begin(), s.end(), int64_t(1), std::multiplies<>()); }
std::string list_str(const std::vector<int64_t>& v) {
  std::string r = "(";
  for (size_t i = 0; i < v.size(); i++) r += (i ? ", " : "") + std::to_string(v[i]);
  return r + (v.size() == 1 ? ",)" : ")");
}
Shape rest_ones(int64_t ndim) {  // (1, -1, 1, 1 ...) for a per-channel tensor against (N, C, ...)
  Shape s{1, -1};
  s.resize(size_t(std::max<int64_t>(ndim, 2)), 1);
  return s;
}
}  // namespace

// ***** Linear *****

Linear::Linear(int64_t in_features, int64_t out_features, bool has_bias) {
  if (in_features <= 0 || out_features < 0)
    throw Error("Linear: invalid in_features=" + std::to_string(in_features) + ", out_features=" + std::to_string(out_features));
  double bound = 1 / std::sqrt(double(in_features));
  weight = Tensor::uniform({out_features, in_features}, -bound, bound).contiguous();
  if (has_bias) bias = Tensor::uniform({out_features}, -bound, bound).contiguous();
}
Tensor Linear::operator()(const Tensor& x) const {
  if (x.ndim() == 0 || x.shape().back() != weight.shape()[1])
    throw Error("Linear: input " + x.shape_str() + " does not end in in_features=" + std::to_string(weight.shape()[1]) + " (weight " +
                weight.shape_str() + ")");
  return x.linear(weight.transpose(), bias);
}
void Linear::visit_state(StateVisitor& v) { v("weight", weight), v("bias", bias); }

// ***** Conv2d, Conv1d, ConvTranspose2d, ConvTranspose1d *****

ConvPadding::ConvPadding(const char* s) : IntList(0) {
  std::string l(s);
  for (auto& c : l) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (l != "same") throw Error("Conv2d: invalid padding string '" + std::string(s) + "', only 'same' is supported");
  same = true;
}

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, IntList kernel_size, IntList stride, ConvPadding padding, IntList dilation,
               int64_t groups, bool has_bias)
    : Conv2d(Exact{}, in_channels, out_channels, kernel_size.is_int ? Shape(2, kernel_size.v[0]) : kernel_size.v, stride, padding,
             dilation, groups, has_bias) {}

Conv2d::Conv2d(Exact, int64_t in_channels, int64_t out_channels, Shape ks, IntList stride_, ConvPadding padding_, IntList dilation_,
               int64_t groups_, bool has_bias)
    : kernel_size(std::move(ks)), stride(std::move(stride_)), dilation(std::move(dilation_)), padding(0), groups(groups_) {
  if (in_channels <= 0 || out_channels <= 0 || groups <= 0 || in_channels % groups != 0 || out_channels % groups != 0)
    throw Error("Conv2d: in_channels=" + std::to_string(in_channels) + " and out_channels=" + std::to_string(out_channels) +
                " must be positive multiples of groups=" + std::to_string(groups));
  for (auto k : kernel_size) if (k <= 0) throw Error("Conv2d: invalid kernel_size " + list_str(kernel_size));
  if (padding_.same) {
    if (stride.v != std::vector<int64_t>{1}) throw Error("Conv2d: padding='same' is not supported for strided convolutions");
    // tinygrad pairs the dilations in order with the reversed kernel dims; kept so the same arguments pad the same way
    Shape d = dilation.is_int ? Shape(kernel_size.size(), dilation.v[0]) : dilation.v, flat;
    for (size_t i = 0; i < std::min(d.size(), kernel_size.size()); i++) {
      int64_t t = d[i] * (kernel_size[kernel_size.size() - 1 - i] - 1);
      flat.insert(flat.end(), {t / 2, t - t / 2});
    }
    padding = IntList(flat);
  } else {
    padding = IntList(padding_);
  }
  double scale = 1 / std::sqrt(double(in_channels * prod_of(kernel_size)));
  Shape ws{out_channels, in_channels / groups};
  ws.insert(ws.end(), kernel_size.begin(), kernel_size.end());
  weight = Tensor::uniform(ws, -scale, scale).contiguous();
  if (has_bias) bias = Tensor::uniform({out_channels}, -scale, scale).contiguous();
}
Tensor Conv2d::operator()(const Tensor& x) const { return x.conv2d(weight, bias, groups, stride, dilation, padding); }
void Conv2d::visit_state(StateVisitor& v) { v("weight", weight), v("bias", bias); }

Conv1d::Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, IntList stride, ConvPadding padding, IntList dilation,
               int64_t groups, bool has_bias)
    : Conv2d(Exact{}, in_channels, out_channels, Shape{kernel_size}, stride, padding, dilation, groups, has_bias) {}

ConvTranspose2d::ConvTranspose2d(int64_t in_channels, int64_t out_channels, IntList kernel_size, IntList stride, IntList padding,
                                 IntList output_padding, IntList dilation, int64_t groups, bool has_bias)
    : ConvTranspose2d(Exact{}, in_channels, out_channels, kernel_size.is_int ? Shape(2, kernel_size.v[0]) : kernel_size.v, stride,
                      padding, output_padding, dilation, groups, has_bias) {}

ConvTranspose2d::ConvTranspose2d(Exact, int64_t in_channels, int64_t out_channels, Shape ks, IntList stride, IntList padding,
                                 IntList output_padding_, IntList dilation, int64_t groups, bool has_bias)
    : Conv2d(Exact{}, in_channels, out_channels, std::move(ks), stride, ConvPadding(padding), dilation, groups, has_bias),
      output_padding(std::move(output_padding_)) {
  double scale = 1 / std::sqrt(double(in_channels * prod_of(kernel_size)));
  Shape ws{in_channels, out_channels / groups};
  ws.insert(ws.end(), kernel_size.begin(), kernel_size.end());
  weight = Tensor::uniform(ws, -scale, scale).contiguous();
}
Tensor ConvTranspose2d::operator()(const Tensor& x) const {
  return x.conv_transpose2d(weight, bias, groups, stride, dilation, padding, output_padding);
}

ConvTranspose1d::ConvTranspose1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, IntList stride, IntList padding,
                                 IntList output_padding, IntList dilation, int64_t groups, bool has_bias)
    : ConvTranspose2d(Exact{}, in_channels, out_channels, Shape{kernel_size}, stride, padding, output_padding, dilation, groups, has_bias) {}

// ***** BatchNorm *****

BatchNorm::BatchNorm(int64_t sz, double eps_, bool affine, bool track, double momentum_)
    : eps(eps_), momentum(momentum_), track_running_stats(track), num_batches_tracked(Tensor::zeros(Shape{}, dtypes::int64).contiguous()) {
  if (sz <= 0) throw Error("BatchNorm: invalid size " + std::to_string(sz));
  if (affine) weight = Tensor::ones({sz}).contiguous(), bias = Tensor::zeros({sz}).contiguous();
  num_batches_tracked.is_param_(false);
  if (track) running_mean = Tensor::zeros({sz}).contiguous().is_param_(false), running_var = Tensor::ones({sz}).contiguous().is_param_(false);
}

std::pair<Tensor, Tensor> BatchNorm::calc_stats(const Tensor& x) const {
  Shape shape_mask = rest_ones(x.ndim());
  if (track_running_stats && !training()) return {*running_mean, running_var->reshape(shape_mask)};
  std::vector<int64_t> reduce_axes;
  for (int64_t i = 0; i < x.ndim(); i++) if (i != 1) reduce_axes.push_back(i);
  Tensor batch_mean = x.mean(reduce_axes);
  Tensor y = x - batch_mean.detach().reshape(shape_mask);  // the variance's gradient does not flow through the mean
  return {batch_mean, (y * y).mean(reduce_axes)};
}

Tensor BatchNorm::operator()(const Tensor& x) {
  int64_t sz = weight ? weight->shape()[0] : running_mean ? running_mean->shape()[0] : -1;
  if (x.ndim() < 2 || (sz >= 0 && x.shape()[1] != sz))
    throw Error("BatchNorm: input " + x.shape_str() + " needs shape (N, " + (sz >= 0 ? std::to_string(sz) : std::string("C")) + ", ...)");
  auto [batch_mean, batch_var] = calc_stats(x);
  if (track_running_stats && training()) {
    int64_t n = x.numel();
    if (n - x.shape()[1] <= 0) throw Error("BatchNorm: training needs more than one value per channel, got input " + x.shape_str());
    running_mean->assign((1 - momentum) * *running_mean + momentum * batch_mean.detach());
    running_var->assign((1 - momentum) * *running_var + momentum * double(n) / double(n - x.shape()[1]) * batch_var.detach());
    num_batches_tracked.assign(num_batches_tracked + 1);
  }
  return x.batchnorm(weight, bias, batch_mean, batch_var.add(eps).rsqrt());
}

void BatchNorm::visit_state(StateVisitor& v) {
  v("weight", weight), v("bias", bias), v("num_batches_tracked", num_batches_tracked), v("running_mean", running_mean),
      v("running_var", running_var);
}

// ***** LayerNorm, RMSNorm, GroupNorm *****

LayerNorm::LayerNorm(IntList ns, double eps_, bool elementwise_affine) : normalized_shape(ns.v), eps(eps_) {
  if (elementwise_affine) weight = Tensor::ones(normalized_shape).contiguous(), bias = Tensor::zeros(normalized_shape).contiguous();
}
Tensor LayerNorm::operator()(const Tensor& x) const {
  size_t n = normalized_shape.size();
  if (size_t(x.ndim()) < n || Shape(x.shape().end() - int64_t(n), x.shape().end()) != normalized_shape)
    throw Error("LayerNorm: last dimensions of " + x.shape_str() + " must match " + list_str(normalized_shape));
  std::vector<int64_t> axis;
  for (size_t i = 0; i < n; i++) axis.push_back(-1 - int64_t(i));
  Tensor y = x.layernorm(axis, eps);
  if (!weight || !bias) return y;
  return y * *weight + *bias;
}
void LayerNorm::visit_state(StateVisitor& v) { v("weight", weight), v("bias", bias); }

RMSNorm::RMSNorm(int64_t dim, double eps_, bool elementwise_affine) : eps(eps_) {
  if (elementwise_affine) weight = Tensor::ones({dim}).contiguous();
}
Tensor RMSNorm::operator()(const Tensor& x) const {
  if (weight && (x.ndim() == 0 || x.shape().back() != weight->shape()[0]))
    throw Error("RMSNorm: input " + x.shape_str() + " does not end in dim=" + std::to_string(weight->shape()[0]));
  Tensor y = x.float_().rms_norm(-1, eps).cast(x.dtype());
  return weight ? y * *weight : y;
}
void RMSNorm::visit_state(StateVisitor& v) { v("weight", weight); }

GroupNorm::GroupNorm(int64_t groups, int64_t channels, double eps_, bool affine) : num_groups(groups), num_channels(channels), eps(eps_) {
  if (groups <= 0 || channels <= 0 || channels % groups != 0)
    throw Error("GroupNorm: num_channels=" + std::to_string(channels) + " must be a positive multiple of num_groups=" + std::to_string(groups));
  if (affine) weight = Tensor::ones({channels}).contiguous(), bias = Tensor::zeros({channels}).contiguous();
}
Tensor GroupNorm::operator()(const Tensor& x_in) const {
  if (x_in.ndim() < 2 || x_in.shape()[1] != num_channels)
    throw Error("GroupNorm: input " + x_in.shape_str() + " needs shape (N, " + std::to_string(num_channels) + ", ...)");
  Tensor x = x_in.reshape({x_in.shape()[0], num_groups, -1}).layernorm(-1, eps).reshape(x_in.shape());
  if (!weight || !bias) return x;
  return x * weight->reshape(rest_ones(x.ndim())) + bias->reshape(rest_ones(x.ndim()));
}
void GroupNorm::visit_state(StateVisitor& v) { v("weight", weight), v("bias", bias); }

InstanceNorm::InstanceNorm(int64_t n, double eps_, bool affine) : num_features(n), eps(eps_) {
  if (n <= 0) throw Error("InstanceNorm: num_features=" + std::to_string(n) + " must be positive");
  if (affine) weight = Tensor::ones({n}).contiguous(), bias = Tensor::zeros({n}).contiguous();
}
Tensor InstanceNorm::operator()(const Tensor& x_in) const {
  if (x_in.ndim() < 2 || x_in.shape()[1] != num_features)
    throw Error("InstanceNorm: input " + x_in.shape_str() + " needs shape (N, " + std::to_string(num_features) + ", ...)");
  Tensor x = x_in.reshape({x_in.shape()[0], num_features, -1}).layernorm(-1, eps).reshape(x_in.shape());
  if (!weight || !bias) return x;
  return x * weight->reshape(rest_ones(x.ndim())) + bias->reshape(rest_ones(x.ndim()));
}
void InstanceNorm::visit_state(StateVisitor& v) { v("weight", weight), v("bias", bias); }

Tensor LayerNorm2d::operator()(const Tensor& x) const {
  if (x.ndim() != 4) throw Error("LayerNorm2d: input " + x.shape_str() + " is not (N, C, H, W)");
  return LayerNorm::operator()(x.permute({0, 2, 3, 1})).permute({0, 3, 1, 2});
}

// ***** LSTMCell *****

LSTMCell::LSTMCell(int64_t in, int64_t hidden, bool bias)
    : weight_ih(Tensor::uniform({hidden * 4, in}, -1.0 / std::sqrt(double(hidden)), 1.0 / std::sqrt(double(hidden))).contiguous()),
      weight_hh(Tensor::uniform({hidden * 4, hidden}, -1.0 / std::sqrt(double(hidden)), 1.0 / std::sqrt(double(hidden))).contiguous()) {
  if (bias) bias_ih = Tensor::zeros({hidden * 4}).contiguous(), bias_hh = Tensor::zeros({hidden * 4}).contiguous();
}
std::pair<Tensor, Tensor> LSTMCell::operator()(const Tensor& x, std::optional<std::pair<Tensor, Tensor>> hc) const {
  int64_t hidden = weight_hh.shape()[1];
  if (x.ndim() != 2 || x.shape()[1] != weight_ih.shape()[1])
    throw Error("LSTMCell: input " + x.shape_str() + " needs shape (N, " + std::to_string(weight_ih.shape()[1]) + ")");
  if (!hc) hc = std::pair{Tensor::zeros({x.shape()[0], hidden}, x.dtype()), Tensor::zeros({x.shape()[0], hidden}, x.dtype())};
  Shape want{x.shape()[0], hidden};
  if (hc->first.shape() != want || hc->second.shape() != want)
    throw Error("LSTMCell: h " + hc->first.shape_str() + " and c " + hc->second.shape_str() + " must both be " + list_str(want));
  Tensor gates = x.linear(weight_ih.T(), bias_ih) + hc->first.linear(weight_hh.T(), bias_hh);
  std::vector<Tensor> g = gates.chunk(4, 1);
  Tensor c = g[1].sigmoid() * hc->second + g[0].sigmoid() * g[2].tanh();
  return {g[3].sigmoid() * c.tanh(), c};
}
void LSTMCell::visit_state(StateVisitor& v) { v("weight_ih", weight_ih), v("weight_hh", weight_hh), v("bias_ih", bias_ih), v("bias_hh", bias_hh); }

// ***** Embedding *****

Embedding::Embedding(int64_t vocab, int64_t embed) : vocab_size(vocab), embed_size(embed), weight(Tensor::glorot_uniform({vocab, embed}).contiguous()) {}
Tensor Embedding::operator()(const Tensor& idx) const {
  if (!idx.dtype().is_int()) throw Error("Embedding: expected an integer dtype for the index, got " + std::string(idx.dtype().name()) + " " + idx.shape_str());
  Tensor arange = Tensor::arange(weight.shape()[0]);
  return (arange == idx.unsqueeze(-1)).unsqueeze(-1).where(weight, 0).sum(-2, false, weight.dtype());
}
void Embedding::visit_state(StateVisitor& v) { v("weight", weight); }

}  // namespace tg::nn
