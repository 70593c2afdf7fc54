#pragma once
// tg::nn::optim: tinygrad's optimizers. SGD is LARS without the trust ratio, Adam and AdamW are LAMB without it.
// step() realizes the update (it needs tg::training(), as tinygrad's TRAINING); schedule_step() returns the tensors to
// realize instead, so a training step can realize loss and update together (or inside a TinyJit). The learning rate is
// a 1-element tensor: `opt.lr.assign(Tensor::from_vector<float>({1e-4f}))` changes it, also for a captured step (a host
// value: the same copy every time, where each new value of a Tensor::full would be a new kernel to compile).
//
//   auto opt = tg::nn::optim::Adam(tg::nn::state::get_parameters(model), 1e-3);
//   { tg::Context train({{"TRAINING", 1}}); opt.zero_grad(); loss.backward(); opt.step(); }
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tg/tensor.h"

namespace tg::nn::optim {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual void zero_grad();
  void step();
  virtual std::vector<Tensor> schedule_step();

  std::vector<Tensor> params;   // the tensors it updates (is_param())
  std::vector<Tensor> buffers;  // tensors passed in that are not params: realized with each step, never updated
  Tensor lr;

 protected:
  Optimizer() = default;
  Optimizer(const std::vector<Tensor>& params, double lr, std::optional<std::string> device, bool fused);
  // the update of each param from its gradient, and the optimizer state tensors the update assigns to
  virtual std::pair<std::vector<Tensor>, std::vector<Tensor>> step_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads) = 0;
  std::vector<Tensor> new_optim_param() const;  // zeros shaped like each param (one flat tensor when fused)
  std::string device_;
  DType param_dtype_ = dtypes::float32;
  bool fused_ = false;
  std::vector<int64_t> pos_params_;  // fused: where each param starts in the flat tensor
};

class LARS : public Optimizer {
 public:
  LARS(const std::vector<Tensor>& params, double lr = 0.001, double momentum = 0.9, double weight_decay = 1e-4, bool nesterov = false,
       bool classic = true, bool pre_wd = true, double tcoef = 0.001, std::optional<std::string> device = std::nullopt,
       std::optional<bool> fused = std::nullopt);
  std::vector<Tensor> b;  // momentum buffers
  // Muon: each update, reshaped to (rows, -1), goes through ns_steps of Tensor::newton_schulz with these coefficients
  int64_t ns_steps = 0;
  std::vector<double> ns_coefficients;

 protected:
  std::pair<std::vector<Tensor>, std::vector<Tensor>> step_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads) override;
  double momentum_, wd_, tcoef_;
  bool nesterov_, classic_, pre_wd_;
};

class LAMB : public Optimizer {
 public:
  LAMB(const std::vector<Tensor>& params, double lr = 0.001, double b1 = 0.9, double b2 = 0.999, double eps = 1e-6, double weight_decay = 0.0,
       bool adam = false, std::optional<std::string> device = std::nullopt, std::optional<bool> fused = std::nullopt);
  std::vector<Tensor> m, v;  // first and second moments
  Tensor b1_t, b2_t;         // b1^t and b2^t

 protected:
  std::pair<std::vector<Tensor>, std::vector<Tensor>> step_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads) override;
  double b1_, b2_, eps_, wd_;
  bool adam_;
};

LARS SGD(const std::vector<Tensor>& params, double lr = 0.001, double momentum = 0.0, double weight_decay = 0.0, bool nesterov = false,
         bool classic = false, std::optional<std::string> device = std::nullopt, std::optional<bool> fused = std::nullopt);
LAMB Adam(const std::vector<Tensor>& params, double lr = 0.001, double b1 = 0.9, double b2 = 0.999, double eps = 1e-8,
          std::optional<std::string> device = std::nullopt, std::optional<bool> fused = std::nullopt);
LAMB AdamW(const std::vector<Tensor>& params, double lr = 0.001, double b1 = 0.9, double b2 = 0.999, double eps = 1e-8,
           double weight_decay = 0.01, std::optional<std::string> device = std::nullopt, std::optional<bool> fused = std::nullopt);

// SGD with nesterov momentum whose update is orthogonalized by Newton-Schulz (Keller Jordan's Muon), tinygrad's LARS
// with classic=false, pre_wd=false, tcoef=0. As in tinygrad at the reference commit, the post-momentum weight decay is
// computed and dropped, so weight_decay does not change the update. Not fusable (fused=true is an error)
LARS Muon(const std::vector<Tensor>& params, double lr = 0.001, double momentum = 0.95, double weight_decay = 0.1, int64_t ns_steps = 5,
          std::vector<double> ns_coefficients = {3.4445, -4.775, 2.0315}, bool nesterov = true,
          std::optional<std::string> device = std::nullopt, std::optional<bool> fused = std::nullopt);

// several optimizers stepped as one (different learning rates per parameter group)
class OptimizerGroup : public Optimizer {
 public:
  explicit OptimizerGroup(std::vector<Optimizer*> optimizers);
  void zero_grad() override;
  std::vector<Tensor> schedule_step() override;
  Optimizer& operator[](size_t i) { return *optimizers_.at(i); }

 protected:
  std::pair<std::vector<Tensor>, std::vector<Tensor>> step_(const std::vector<Tensor>&, const std::vector<Tensor>&) override { return {}; }
  std::vector<Optimizer*> optimizers_;
};

}  // namespace tg::nn::optim
