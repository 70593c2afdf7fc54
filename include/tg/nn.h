#pragma once
// tg::nn: tinygrad's nn layers. A layer is a Module: it names its tensors and sub-modules in visit_state(), which is
// what get_state_dict / load_state_dict / get_parameters (tg/state.h) and the optimizers walk. Names are tinygrad's
// ("weight", "bias", "running_mean"); nesting joins them with dots ("layers.0.weight").
//
//   struct Net : tg::nn::Module {
//     tg::nn::Linear l1{784, 128}, l2{128, 10};
//     void visit_state(tg::nn::StateVisitor& v) override { v("l1", l1); v("l2", l2); }
//     tg::Tensor operator()(const tg::Tensor& x) { return l2(l1(x).relu()); }
//   };
#include <optional>
#include <string>
#include <vector>

#include "tg/tensor.h"

namespace tg::nn {

class Module;

// walks a model's state: every named tensor, recursing into sub-modules and lists of them with dotted prefixes
class StateVisitor {
 public:
  virtual ~StateVisitor() = default;
  virtual void tensor(const std::string& name, Tensor& t) = 0;  // name is the full dotted name
  void operator()(const std::string& name, Tensor& t) { tensor(prefix_ + name, t); }
  void operator()(const std::string& name, std::optional<Tensor>& t) { if (t) tensor(prefix_ + name, *t); }
  void operator()(const std::string& name, Module& m);
  template <class T> void operator()(const std::string& name, std::vector<T>& items) {
    for (size_t i = 0; i < items.size(); i++) (*this)(name + "." + std::to_string(i), items[i]);
  }

 private:
  std::string prefix_;
};

class Module {
 public:
  virtual ~Module() = default;
  virtual void visit_state(StateVisitor& v) = 0;
};

inline void StateVisitor::operator()(const std::string& name, Module& m) {
  std::string saved = prefix_;
  prefix_ += name + ".";
  m.visit_state(*this);
  prefix_ = saved;
}

// ***** layers (layers.cpp): tinygrad's nn/__init__.py, with its defaults and initial values *****

// y = x @ weight.T + bias; weight (out, in) and bias uniform in +-1/sqrt(in)
class Linear : public Module {
 public:
  Tensor weight;
  std::optional<Tensor> bias;
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor operator()(const Tensor& x) const;
  void visit_state(StateVisitor& v) override;
};

// a conv padding: an int, one per spatial dim, one per side (left, right, top, bottom ...) or "same" (stride 1 only)
struct ConvPadding : IntList {
  bool same = false;
  ConvPadding(int x) : IntList(x) {}
  ConvPadding(int64_t x) : IntList(x) {}
  ConvPadding(std::initializer_list<int64_t> x) : IntList(x) {}
  ConvPadding(std::vector<int64_t> x) : IntList(std::move(x)) {}
  ConvPadding(IntList x) : IntList(std::move(x)) {}
  ConvPadding(const char* s);
};

// NCHW convolution (any number of spatial dims); weight (out, in/groups, *kernel) and bias uniform in
// +-1/sqrt(in * prod(kernel)). An int kernel_size is square (k, k); Conv1d takes (k,)
class Conv2d : public Module {
 public:
  Shape kernel_size;
  IntList stride, dilation, padding;
  int64_t groups;
  Tensor weight;
  std::optional<Tensor> bias;
  Conv2d(int64_t in_channels, int64_t out_channels, IntList kernel_size, IntList stride = 1, ConvPadding padding = 0, IntList dilation = 1,
         int64_t groups = 1, bool bias = true);
  Tensor operator()(const Tensor& x) const;
  void visit_state(StateVisitor& v) override;

 protected:
  struct Exact {};  // kernel_size taken as given (no int -> (k, k))
  Conv2d(Exact, int64_t in_channels, int64_t out_channels, Shape kernel_size, IntList stride, ConvPadding padding, IntList dilation,
         int64_t groups, bool bias);
};

class Conv1d : public Conv2d {
 public:
  Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, IntList stride = 1, ConvPadding padding = 0, IntList dilation = 1,
         int64_t groups = 1, bool bias = true);
};

// weight (in, out/groups, *kernel), as PyTorch lays it out
class ConvTranspose2d : public Conv2d {
 public:
  IntList output_padding;
  ConvTranspose2d(int64_t in_channels, int64_t out_channels, IntList kernel_size, IntList stride = 1, IntList padding = 0,
                  IntList output_padding = 0, IntList dilation = 1, int64_t groups = 1, bool bias = true);
  Tensor operator()(const Tensor& x) const;

 protected:
  ConvTranspose2d(Exact, int64_t in_channels, int64_t out_channels, Shape kernel_size, IntList stride, IntList padding,
                  IntList output_padding, IntList dilation, int64_t groups, bool bias);
};

class ConvTranspose1d : public ConvTranspose2d {
 public:
  ConvTranspose1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, IntList stride = 1, IntList padding = 0,
                  IntList output_padding = 0, IntList dilation = 1, int64_t groups = 1, bool bias = true);
};

// batch normalization over axis 1 of (N, C, ...). With tg::training() it normalizes by the batch statistics and
// updates running_mean/running_var (assign, momentum) and num_batches_tracked; otherwise it uses the running ones
// (when track_running_stats). The running statistics are buffers: is_param() is false
class BatchNorm : public Module {
 public:
  double eps, momentum;
  bool track_running_stats;
  std::optional<Tensor> weight, bias, running_mean, running_var;
  Tensor num_batches_tracked;
  BatchNorm(int64_t sz, double eps = 1e-5, bool affine = true, bool track_running_stats = true, double momentum = 0.1);
  std::pair<Tensor, Tensor> calc_stats(const Tensor& x) const;  // (mean, var): the batch's, or the running ones
  Tensor operator()(const Tensor& x);
  void visit_state(StateVisitor& v) override;
};
using BatchNorm1d = BatchNorm;
using BatchNorm2d = BatchNorm;
using BatchNorm3d = BatchNorm;

// normalizes over the last len(normalized_shape) dims; weight ones, bias zeros
class LayerNorm : public Module {
 public:
  Shape normalized_shape;
  double eps;
  std::optional<Tensor> weight, bias;
  LayerNorm(IntList normalized_shape, double eps = 1e-5, bool elementwise_affine = true);
  LayerNorm(std::initializer_list<int64_t> normalized_shape, double eps = 1e-5, bool elementwise_affine = true)
      : LayerNorm(IntList(normalized_shape), eps, elementwise_affine) {}
  Tensor operator()(const Tensor& x) const;
  void visit_state(StateVisitor& v) override;
};

// LayerNorm over the channels of NCHW input: (N, C, H, W) is normalized over C at each pixel (tinygrad's permutes)
class LayerNorm2d : public LayerNorm {
 public:
  LayerNorm2d(int64_t channels, double eps = 1e-5, bool elementwise_affine = true) : LayerNorm({channels}, eps, elementwise_affine) {}
  Tensor operator()(const Tensor& x) const;
};

// x * rsqrt(mean(x^2, -1) + eps) computed in float32, cast back, times weight (ones)
class RMSNorm : public Module {
 public:
  double eps;
  std::optional<Tensor> weight;
  RMSNorm(int64_t dim, double eps = 1e-6, bool elementwise_affine = true);
  Tensor operator()(const Tensor& x) const;
  void visit_state(StateVisitor& v) override;
};

// normalizes (N, C, ...) over groups of C/num_groups channels; per-channel weight ones, bias zeros
class GroupNorm : public Module {
 public:
  int64_t num_groups, num_channels;
  double eps;
  std::optional<Tensor> weight, bias;
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true);
  Tensor operator()(const Tensor& x) const;
  void visit_state(StateVisitor& v) override;
};

// normalizes each (sample, channel) of (N, C, ...) over its spatial dims; per-channel weight ones, bias zeros. Always
// the instance's own statistics (no running ones, as tinygrad)
class InstanceNorm : public Module {
 public:
  int64_t num_features;
  double eps;
  std::optional<Tensor> weight, bias;
  InstanceNorm(int64_t num_features, double eps = 1e-5, bool affine = true);
  Tensor operator()(const Tensor& x) const;
  void visit_state(StateVisitor& v) override;
};

// one LSTM step: gates = x @ weight_ih.T + bias_ih + h @ weight_hh.T + bias_hh, split (i, f, g, o) as PyTorch;
// returns (h', c'). Weights uniform in +-1/sqrt(hidden_size), biases zeros (tinygrad's init). hc defaults to zeros
class LSTMCell : public Module {
 public:
  Tensor weight_ih, weight_hh;
  std::optional<Tensor> bias_ih, bias_hh;
  LSTMCell(int64_t input_size, int64_t hidden_size, bool bias = true);
  std::pair<Tensor, Tensor> operator()(const Tensor& x, std::optional<std::pair<Tensor, Tensor>> hc = std::nullopt) const;
  void visit_state(StateVisitor& v) override;
};

// a lookup table: weight (vocab_size, embed_size), glorot_uniform; takes an int index tensor, returns (*idx.shape, embed_size)
class Embedding : public Module {
 public:
  int64_t vocab_size, embed_size;
  Tensor weight;
  Embedding(int64_t vocab_size, int64_t embed_size);
  Tensor operator()(const Tensor& idx) const;
  void visit_state(StateVisitor& v) override;
};

}  // namespace tg::nn
