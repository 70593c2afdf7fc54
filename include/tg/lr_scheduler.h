#pragma once
// tg::nn::optim learning-rate schedulers: tinygrad's extra/lr_scheduler.py (MultiStepLR, ReduceLROnPlateau,
// CosineAnnealingLR, OneCycleLR, LRSchedulerGroup) plus StepLR (PyTorch's semantics). A scheduler assigns the
// optimizer's lr tensor; step() counts one epoch (epoch_counter, on the optimizer's device) and sets the new lr.
//
//   auto opt = tg::nn::optim::SGD(params, 0.1);
//   tg::nn::optim::CosineAnnealingLR sched(opt, 100);
//   for (...) { opt.step(); sched.step(); }
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tg/optim.h"

namespace tg::nn::optim {

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  // the tensors to realize for one epoch: the counter and (when it changes) the optimizer's lr
  virtual std::vector<Tensor> schedule_step();
  void step();
  Tensor epoch_counter;  // int32 (1,), starts at 0
  int64_t epoch() const { return epoch_; }

 protected:
  explicit LRScheduler(Optimizer& optimizer);  // throws when the lr is a constant (CONST_LR=1)
  virtual std::optional<Tensor> get_lr() = 0;  // the lr after epoch_ epochs; nullopt: unchanged
  Tensor lr_value(double v) const;             // a host value as a (1,) tensor of the lr's dtype and device
  Optimizer& optimizer_;
  int64_t epoch_ = 0;
};

// lr *= gamma at each epoch in milestones
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);

 protected:
  std::optional<Tensor> get_lr() override;
  std::vector<int64_t> milestones_;
  double gamma_;
};

// lr *= gamma every step_size epochs (PyTorch's StepLR; tinygrad has none)
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  std::optional<Tensor> get_lr() override;
  int64_t step_size_;
  double gamma_;
};

// lr = eta_min + (eta_max - eta_min) * (1 + cos(pi * epoch / T_max)) / 2, eta_max the lr at construction
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0);

 protected:
  std::optional<Tensor> get_lr() override;
  int64_t T_max_;
  double eta_min_, eta_max_;
};

// linear warm-up from max_lr/div_factor to max_lr over pct_start of total_steps, then linear down to
// max_lr/div_factor/final_div_factor; computed on the device from epoch_counter (so a TinyJit can capture it). Sets
// the initial lr on construction. Only anneal_strategy "linear" and no momentum cycling (as tinygrad)
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, double max_lr, double div_factor, double final_div_factor, int64_t total_steps, double pct_start,
             const std::string& anneal_strategy = "linear", bool cycle_momentum = false);

 protected:
  std::optional<Tensor> get_lr() override;
  double initial_lr_, max_lr_, min_lr_, pct_start_;
  int64_t total_steps_;
};

// lr *= factor once the metric has not improved for more than `patience` epochs; mode "min" or "max", threshold
// "rel" (best * (1 -+ threshold)) or "abs" (best -+ threshold)
class ReduceLROnPlateau : public LRScheduler {
 public:
  ReduceLROnPlateau(Optimizer& optimizer, const std::string& mode = "min", double factor = 0.1, int64_t patience = 10,
                    double threshold = 1e-4, const std::string& threshold_mode = "rel");
  void step(double current);
  bool is_better(double current) const;
  double best;
  int64_t bad_epoch = 0;

 protected:
  std::optional<Tensor> get_lr() override { return std::nullopt; }
  bool min_, rel_;
  double factor_, threshold_;
  int64_t patience_;
};

class LRSchedulerGroup {
 public:
  explicit LRSchedulerGroup(std::vector<LRScheduler*> schedulers) : schedulers_(std::move(schedulers)) {}
  void step() {
    for (LRScheduler* s : schedulers_) s->step();
  }

 private:
  std::vector<LRScheduler*> schedulers_;
};

}  // namespace tg::nn::optim
