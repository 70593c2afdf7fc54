// tinygrad's extra/lr_scheduler.py, and PyTorch's StepLR.
#include "tg/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tg::nn::optim {

LRScheduler::LRScheduler(Optimizer& opt) : optimizer_(opt) {
  if (!opt.lr.device() || opt.lr.shape() != Shape{1})
    throw Error("LR scheduler: the optimizer's lr is a constant (CONST_LR=1), a scheduler needs it as a (1,) tensor to assign");
  epoch_counter = Tensor::zeros({1}, dtypes::int32, *opt.lr.device()).contiguous().realize();
}

Tensor LRScheduler::lr_value(double v) const {
  return Tensor::from_vector<double>({v}, {1}, std::nullopt, *optimizer_.lr.device()).cast(optimizer_.lr.dtype());
}

std::vector<Tensor> LRScheduler::schedule_step() {
  epoch_++;
  std::vector<Tensor> ret{epoch_counter.assign(epoch_counter + 1)};
  if (std::optional<Tensor> lr = get_lr()) ret.push_back(optimizer_.lr.assign(*lr));
  return ret;
}
void LRScheduler::step() { Tensor::realize(schedule_step()); }

MultiStepLR::MultiStepLR(Optimizer& opt, std::vector<int64_t> milestones, double gamma) : LRScheduler(opt), milestones_(std::move(milestones)), gamma_(gamma) {}
std::optional<Tensor> MultiStepLR::get_lr() {
  if (std::find(milestones_.begin(), milestones_.end(), epoch_) == milestones_.end()) return std::nullopt;
  return optimizer_.lr * gamma_;
}

StepLR::StepLR(Optimizer& opt, int64_t step_size, double gamma) : LRScheduler(opt), step_size_(step_size), gamma_(gamma) {
  if (step_size <= 0) throw Error("StepLR: step_size must be positive, got " + std::to_string(step_size));
}
std::optional<Tensor> StepLR::get_lr() {
  if (epoch_ % step_size_ != 0) return std::nullopt;
  return optimizer_.lr * gamma_;
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& opt, int64_t T_max, double eta_min)
    : LRScheduler(opt), T_max_(T_max), eta_min_(eta_min), eta_max_(opt.lr.to("CPU").cast(dtypes::float64).item<double>()) {
  if (T_max <= 0) throw Error("CosineAnnealingLR: T_max must be positive, got " + std::to_string(T_max));
}
std::optional<Tensor> CosineAnnealingLR::get_lr() {
  return lr_value(eta_min_ + 0.5 * (eta_max_ - eta_min_) * (1 + std::cos(double(epoch_) / double(T_max_) * M_PI)));
}

OneCycleLR::OneCycleLR(Optimizer& opt, double max_lr, double div_factor, double final_div_factor, int64_t total_steps, double pct_start,
                       const std::string& anneal_strategy, bool cycle_momentum)
    : LRScheduler(opt), initial_lr_(max_lr / div_factor), max_lr_(max_lr), min_lr_(max_lr / div_factor / final_div_factor),
      pct_start_(pct_start), total_steps_(total_steps) {
  if (anneal_strategy != "linear") throw Error("OneCycleLR: anneal_strategy \"" + anneal_strategy + "\" is not supported, only \"linear\"");
  if (cycle_momentum) throw Error("OneCycleLR: cycle_momentum is not supported");
  if (total_steps <= 0) throw Error("OneCycleLR: total_steps must be positive, got " + std::to_string(total_steps));
  if (!(pct_start > 0 && pct_start < 1)) throw Error("OneCycleLR: pct_start must be in (0, 1), got " + std::to_string(pct_start));
  if (!(div_factor > 0) || !(final_div_factor > 0)) throw Error("OneCycleLR: div_factor and final_div_factor must be positive");
  optimizer_.lr.assign(*get_lr()).realize();
}
std::optional<Tensor> OneCycleLR::get_lr() {
  double warm = double(total_steps_) * pct_start_, cool = double(total_steps_) * (1 - pct_start_);
  auto lin = [](double start, double end, const Tensor& pct) { return pct * (end - start) + start; };
  return (epoch_counter < warm).where(lin(initial_lr_, max_lr_, epoch_counter / warm), lin(max_lr_, min_lr_, (epoch_counter - warm) / cool)).cast(optimizer_.lr.dtype());
}

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& opt, const std::string& mode, double factor, int64_t patience, double threshold,
                                     const std::string& threshold_mode)
    : LRScheduler(opt), min_(mode == "min"), rel_(threshold_mode == "rel"), factor_(factor), threshold_(threshold), patience_(patience) {
  if (mode != "min" && mode != "max") throw Error("ReduceLROnPlateau: mode must be \"min\" or \"max\", got \"" + mode + "\"");
  if (threshold_mode != "rel" && threshold_mode != "abs") throw Error("ReduceLROnPlateau: threshold_mode must be \"rel\" or \"abs\", got \"" + threshold_mode + "\"");
  best = min_ ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  if (min_) threshold_ = -threshold_;
}
bool ReduceLROnPlateau::is_better(double current) const {
  double dynamic = rel_ ? best * (1 + threshold_) : best + threshold_;
  return min_ ? current < dynamic : current > dynamic;
}
void ReduceLROnPlateau::step(double current) {
  Tensor::realize(LRScheduler::schedule_step());
  if (is_better(current)) bad_epoch = 0, best = current;
  else bad_epoch++;
  if (bad_epoch > patience_) {
    optimizer_.lr.assign(optimizer_.lr * factor_).realize();
    bad_epoch = 0;
  }
}

}  // namespace tg::nn::optim
