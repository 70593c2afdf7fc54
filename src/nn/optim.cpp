// tinygrad's nn/optim.py: every optimizer is LARS or LAMB; the update is a lazy graph assigned into the params.
#include "tg/optim.h"

#include <algorithm>

#include "tg/context.h"
#include "util/settings.h"

namespace tg::nn::optim {

namespace {
// the tensors whose handles are distinct, in first-seen order
std::vector<Tensor> dedup(const std::vector<Tensor>& ts, bool want_params) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts)
    if (t.is_param() == want_params && std::none_of(out.begin(), out.end(), [&](const Tensor& o) { return o.is(t); }))
      out.push_back(t);
  return out;
}
}  // namespace

Optimizer::Optimizer(const std::vector<Tensor>& ps, double lr_, std::optional<std::string> device, bool fused)
    : params(dedup(ps, true)), buffers(dedup(ps, false)), fused_(fused) {
  if (lr_ < 0) throw Error("Optimizer: invalid learning rate " + std::to_string(lr_));
  if (params.empty()) throw Error("Optimizer: needs at least one param (got " + std::to_string(ps.size()) + " tensors, none is_param())");
  for (const Tensor& p : params)
    if (!p.device()) throw Error("Optimizer: a param has no device (a constant " + p.shape_str() + " tensor cannot be updated)");
  device_ = device ? *device : *params[0].device();
  param_dtype_ = dtypes::from_name(settings().OPTIM_DTYPE);
  DType lr_dtype = least_upper_dtype({dtypes::default_float, dtypes::float32});
  lr = settings().CONST_LR ? Tensor(lr_, lr_dtype) : Tensor::full({1}, lr_, lr_dtype, device_).contiguous();  // as new_optim_param
  if (fused_) {
    pos_params_ = {0};
    for (const Tensor& p : params) pos_params_.push_back(pos_params_.back() + p.numel());
  }
}

std::vector<Tensor> Optimizer::new_optim_param() const {
  // ours: contiguous (a buffer from the first step on), so the first step's kernels read the state as every later step
  // does instead of folding the zeros in: a TinyJit's capture step then compiles (and BEAM searches) nothing new
  if (fused_) return {Tensor::zeros({pos_params_.back()}, param_dtype_, device_).contiguous()};
  std::vector<Tensor> out;
  for (const Tensor& p : params) out.push_back(Tensor::zeros(p.shape(), param_dtype_, device_).contiguous());
  return out;
}

void Optimizer::zero_grad() {
  for (Tensor& p : params) p.set_grad(std::nullopt);
}

void Optimizer::step() { Tensor::realize(schedule_step()); }

std::vector<Tensor> Optimizer::schedule_step() {
  if (!training())
    throw Error("Optimizer step: TRAINING is 0, it must be enabled to use the optimizer (scope a tg::Context({{\"TRAINING\", 1}}))");
  std::vector<Tensor> grads;
  for (const Tensor& p : params) {
    std::optional<Tensor> g = p.grad();
    if (!g) throw Error("Optimizer step: a param of shape " + p.shape_str() + " has no gradient (call backward() first)");
    grads.push_back(*g);
  }
  std::pair<std::vector<Tensor>, std::vector<Tensor>> r;
  std::vector<Tensor> updates;
  if (fused_) {
    // concatenate every param and grad, step once, split the update back
    std::vector<Tensor> flat_p, flat_g;
    for (size_t i = 0; i < params.size(); i++) flat_p.push_back(params[i].flatten()), flat_g.push_back(grads[i].contiguous().flatten());
    r = step_({Tensor::cat(flat_p)}, {Tensor::cat(flat_g)});
    for (size_t i = 0; i < params.size(); i++)
      updates.push_back(r.first[0].shrink({{pos_params_[i], pos_params_[i + 1]}}).reshape(params[i].shape()));
  } else {
    r = step_(params, grads);
    updates = r.first;
  }
  for (size_t i = 0; i < params.size(); i++) params[i].assign(params[i].detach() - updates[i].to(*params[i].device()));
  std::vector<Tensor> out = r.second;
  out.insert(out.end(), params.begin(), params.end());
  out.insert(out.end(), buffers.begin(), buffers.end());
  return out;
}

LARS::LARS(const std::vector<Tensor>& ps, double lr_, double momentum, double weight_decay, bool nesterov, bool classic, bool pre_wd,
           double tcoef, std::optional<std::string> device, std::optional<bool> fused)
    : Optimizer(ps, lr_, device, fused.value_or(settings().FUSE_OPTIM != 0)), momentum_(momentum), wd_(weight_decay), tcoef_(tcoef),
      nesterov_(nesterov), classic_(classic), pre_wd_(pre_wd) {
  if (momentum < 0) throw Error("LARS/SGD: invalid momentum value " + std::to_string(momentum));
  if (momentum_ != 0) b = new_optim_param();
}

std::pair<std::vector<Tensor>, std::vector<Tensor>> LARS::step_(const std::vector<Tensor>& ps, const std::vector<Tensor>& grads) {
  std::vector<Tensor> ret;
  for (size_t i = 0; i < ps.size(); i++) {
    Tensor t = ps[i], g = grads[i], r = Tensor(1.0);
    if (tcoef_ != 0) {
      Tensor r1 = t.detach().square().sum().sqrt(), r2 = g.square().sum().sqrt();
      r = (r1 > 0).where((r2 > 0).where(tcoef_ * r1 / (r2 + wd_ * r1), 1.0), 1.0);
    }
    if (pre_wd_ && wd_ > 0) g = g + wd_ * t.detach();
    if (classic_) g = g * r * lr;  // classic momentum scales by lr before the momentum buffer
    if (momentum_ != 0) {
      b[i].assign(momentum_ * b[i] + g);  // b starts at zero, so the first step needs no special case
      g = nesterov_ ? g + momentum_ * b[i] : b[i];
    }
    if (!ns_coefficients.empty()) g = g.reshape({g.shape().empty() ? 1 : g.shape()[0], -1}).newton_schulz(ns_steps, ns_coefficients).reshape(g.shape());
    if (!pre_wd_ && wd_ > 0) t = t.detach() * (1.0 - wd_ * lr);
    if (!classic_) g = g * r * lr;
    ret.push_back(g.cast(t.dtype()));
  }
  return {ret, b};
}

LAMB::LAMB(const std::vector<Tensor>& ps, double lr_, double b1, double b2, double eps, double weight_decay, bool adam,
           std::optional<std::string> device, std::optional<bool> fused)
    : Optimizer(ps, lr_, device, fused.value_or(settings().FUSE_OPTIM != 0)), b1_(b1), b2_(b2), eps_(eps), wd_(weight_decay), adam_(adam) {
  if (weight_decay < 0) throw Error("LAMB/Adam: invalid weight_decay value " + std::to_string(weight_decay));
  b1_t = Tensor::ones({1}, dtypes::float32, device_).contiguous().is_param_(false);  // as new_optim_param
  b2_t = Tensor::ones({1}, dtypes::float32, device_).contiguous().is_param_(false);
  m = new_optim_param();
  v = new_optim_param();
}

std::pair<std::vector<Tensor>, std::vector<Tensor>> LAMB::step_(const std::vector<Tensor>& ps, const std::vector<Tensor>& grads) {
  std::vector<Tensor> ret;
  b1_t.assign(b1_t * b1_);
  b2_t.assign(b2_t * b2_);
  for (size_t i = 0; i < ps.size(); i++) {
    const Tensor& t = ps[i];
    Tensor g = grads[i];
    if (g.device() != m[i].device()) g = g.contiguous().to(*m[i].device());
    m[i].assign((b1_ * m[i] + (1.0 - b1_) * g).cast(m[i].dtype()));
    v[i].assign((b2_ * v[i] + (1.0 - b2_) * (g * g)).cast(v[i].dtype()));
    Tensor m_hat = m[i] / (1.0 - b1_t), v_hat = v[i] / (1.0 - b2_t);
    Tensor up = m_hat / (v_hat.sqrt() + eps_) + wd_ * t.detach(), r = Tensor(1.0);
    if (!adam_) {
      Tensor r1 = t.detach().square().sum().sqrt(), r2 = up.square().sum().sqrt();
      r = (r1 > 0).where((r2 > 0).where(r1 / r2, 1.0), 1.0);
    }
    ret.push_back((lr * r * up).cast(t.dtype()));
  }
  std::vector<Tensor> state = {b1_t, b2_t};
  state.insert(state.end(), m.begin(), m.end());
  state.insert(state.end(), v.begin(), v.end());
  return {ret, state};
}

LARS SGD(const std::vector<Tensor>& ps, double lr, double momentum, double weight_decay, bool nesterov, bool classic,
         std::optional<std::string> device, std::optional<bool> fused) {
  return LARS(ps, lr, momentum, weight_decay, nesterov, classic, true, 0.0, device, fused);
}
LARS Muon(const std::vector<Tensor>& ps, double lr, double momentum, double weight_decay, int64_t ns_steps, std::vector<double> ns_coefficients,
          bool nesterov, std::optional<std::string> device, std::optional<bool> fused) {
  if (fused.value_or(settings().FUSE_OPTIM != 0)) throw Error("Muon: fused optimizer steps (FUSE_OPTIM) are not allowed: Newton-Schulz needs each param's own shape");
  if (ns_coefficients.empty()) throw Error("Muon: needs at least one Newton-Schulz coefficient");
  LARS o(ps, lr, momentum, weight_decay, nesterov, false, false, 0.0, device, false);
  o.ns_steps = ns_steps, o.ns_coefficients = std::move(ns_coefficients);
  return o;
}
LAMB Adam(const std::vector<Tensor>& ps, double lr, double b1, double b2, double eps, std::optional<std::string> device, std::optional<bool> fused) {
  return LAMB(ps, lr, b1, b2, eps, 0.0, true, device, fused);
}
LAMB AdamW(const std::vector<Tensor>& ps, double lr, double b1, double b2, double eps, double weight_decay, std::optional<std::string> device,
           std::optional<bool> fused) {
  return LAMB(ps, lr, b1, b2, eps, weight_decay, true, device, fused);
}

OptimizerGroup::OptimizerGroup(std::vector<Optimizer*> optimizers) : optimizers_(std::move(optimizers)) {
  for (Optimizer* o : optimizers_) {
    if (!o) throw Error("OptimizerGroup: got a null optimizer");
    params.insert(params.end(), o->params.begin(), o->params.end());
    buffers.insert(buffers.end(), o->buffers.begin(), o->buffers.end());
  }
}
void OptimizerGroup::zero_grad() {
  for (Optimizer* o : optimizers_) o->zero_grad();
}
std::vector<Tensor> OptimizerGroup::schedule_step() {
  std::vector<Tensor> out;
  for (Optimizer* o : optimizers_) {
    std::vector<Tensor> s = o->schedule_step();
    out.insert(out.end(), s.begin(), s.end());
  }
  return out;
}

}  // namespace tg::nn::optim
