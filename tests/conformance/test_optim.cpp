// Optimizer conformance: the same small MLP, data and initial weights on both sides, 10 steps of each optimizer; the
// losses at every step and the parameters after the last one must match libtorch's torch::optim (LAMB, which torch
// lacks, against the paper's update written here with ATen ops).
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/schedulers/step_lr.h>
#include <torch/optim/sgd.h>

#include <functional>

#include "tensor_harness.h"
#include "tg/context.h"
#include "tg/lr_scheduler.h"
#include "tg/optim.h"

namespace {

using namespace conf;
namespace optim = tg::nn::optim;

struct Mlp {
  std::vector<tg::Tensor> tg_params;
  std::vector<at::Tensor> torch_params;
  Pair x, y;
  Mlp() {
    for (auto [shape, seed] : std::vector<std::pair<std::vector<int64_t>, uint32_t>>{{{4, 8}, 1}, {{8}, 2}, {{8, 3}, 3}, {{3}, 4}}) {
      Pair p = input(shape, dtypes::float32, -0.7, 0.7, seed);
      tg_params.push_back(p.t.contiguous().realize());
      torch_params.push_back(p.a.clone().requires_grad_(true));
    }
    x = input({6, 4}, dtypes::float32, -1, 1, 5), y = input({6, 3}, dtypes::float32, -1, 1, 6);
  }
  tg::Tensor tg_loss() const {
    const auto& p = tg_params;
    return ((x.t.matmul(p[0]) + p[1]).relu().matmul(p[2]) + p[3] - y.t).square().mean();
  }
  at::Tensor torch_loss() const {
    const auto& p = torch_params;
    return ((x.a.matmul(p[0]) + p[1]).relu().matmul(p[2]) + p[3] - y.a).square().mean();
  }
};

constexpr oracle::Tol tol{2e-4, 2e-5};

// run `steps` steps on both sides, comparing each loss and finally every parameter; `between` runs after step 5
void check(Mlp& m, optim::Optimizer& ours, const std::function<void()>& torch_zero, const std::function<void()>& torch_step, int steps = 10,
           const std::function<void()>& between = {}) {
  tg::Context train({{"TRAINING", 1}});
  for (int i = 0; i < steps; i++) {
    if (i == 5 && between) between();
    ours.zero_grad();
    tg::Tensor loss = m.tg_loss();
    loss.backward();
    // the loss reads the params, which the step overwrites: realize it first or in the same schedule (as tinygrad)
    if (i % 2 == 0) {
      loss.realize();
      ours.step();
    } else {
      std::vector<tg::Tensor> r = ours.schedule_step();
      r.push_back(loss);
      tg::Tensor::realize(r);
    }
    torch_zero();
    at::Tensor tloss = m.torch_loss();
    tloss.backward();
    torch_step();
    EXPECT_TRUE(oracle::match(oracle::result(to_torch(loss)), oracle::result(tloss.detach()), tol)) << "loss of step " << i;
  }
  for (size_t i = 0; i < m.tg_params.size(); i++)
    EXPECT_TRUE(oracle::match(oracle::result(to_torch(m.tg_params[i])), oracle::result(m.torch_params[i].detach()), tol)) << "param " << i;
}

template <class TorchOpt> void check_torch(Mlp& m, optim::Optimizer& ours, TorchOpt& theirs, const std::function<void()>& between = {}) {
  check(m, ours, [&] { theirs.zero_grad(); }, [&] { theirs.step(); }, 10, between);
}

struct SgdCase {
  double lr, momentum, wd;
  bool nesterov, fused;
};

TEST(Optim, SGDMatchesTorch) {
  for (SgdCase c : {SgdCase{0.1, 0, 0, false, false}, SgdCase{0.05, 0.9, 0, false, false}, SgdCase{0.05, 0.9, 0.01, true, false},
                    SgdCase{0.1, 0, 0.1, false, false}, SgdCase{0.05, 0.8, 0.01, false, true}}) {
    SCOPED_TRACE("lr " + std::to_string(c.lr) + " momentum " + std::to_string(c.momentum) + " wd " + std::to_string(c.wd) +
                 (c.nesterov ? " nesterov" : "") + (c.fused ? " fused" : ""));
    Mlp m;
    auto ours = optim::SGD(m.tg_params, c.lr, c.momentum, c.wd, c.nesterov, false, std::nullopt, c.fused);
    torch::optim::SGD theirs(m.torch_params, torch::optim::SGDOptions(c.lr).momentum(c.momentum).weight_decay(c.wd).nesterov(c.nesterov));
    check_torch(m, ours, theirs);
  }
}

TEST(Optim, AdamMatchesTorch) {
  for (bool fused : {false, true}) {
    SCOPED_TRACE(fused ? "fused" : "unfused");
    Mlp m;
    auto ours = optim::Adam(m.tg_params, 0.01, 0.9, 0.999, 1e-8, std::nullopt, fused);
    torch::optim::Adam theirs(m.torch_params, torch::optim::AdamOptions(0.01));
    check_torch(m, ours, theirs);
  }
  Mlp m;  // other betas and eps
  auto ours = optim::Adam(m.tg_params, 0.02, 0.8, 0.99, 1e-6);
  torch::optim::Adam theirs(m.torch_params, torch::optim::AdamOptions(0.02).betas({0.8, 0.99}).eps(1e-6));
  check_torch(m, ours, theirs);
}

TEST(Optim, AdamWMatchesTorch) {
  for (double wd : {0.01, 0.3}) {
    SCOPED_TRACE("weight_decay " + std::to_string(wd));
    Mlp m;
    auto ours = optim::AdamW(m.tg_params, 0.01, 0.9, 0.999, 1e-8, wd);
    torch::optim::AdamW theirs(m.torch_params, torch::optim::AdamWOptions(0.01).weight_decay(wd));
    check_torch(m, ours, theirs);
  }
}

TEST(Optim, LearningRateTensorChangesBetweenSteps) {
  Mlp m;
  auto ours = optim::Adam(m.tg_params, 0.01);
  torch::optim::Adam theirs(m.torch_params, torch::optim::AdamOptions(0.01));
  check_torch(m, ours, theirs, [&] {
    ours.lr.assign(tg::Tensor::full({1}, 0.002, tg::dtypes::float32));
    static_cast<torch::optim::AdamOptions&>(theirs.param_groups()[0].options()).lr(0.002);
  });
}

// LAMB (You et al. 2019, as tinygrad implements it: Adam's bias-corrected update plus weight decay, scaled by the
// trust ratio |w| / |update|), written with ATen ops on the torch side
TEST(Optim, LAMBMatchesThePaper) {
  for (double wd : {0.0, 0.05}) {
    SCOPED_TRACE("weight_decay " + std::to_string(wd));
    Mlp m;
    const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-6;
    auto ours = optim::LAMB(m.tg_params, lr, b1, b2, eps, wd);
    std::vector<at::Tensor> mom, vel;
    for (auto& p : m.torch_params) mom.push_back(at::zeros_like(p).detach()), vel.push_back(at::zeros_like(p).detach());
    int t = 0;
    auto zero = [&] {
      for (auto& p : m.torch_params) p.mutable_grad() = at::Tensor();
    };
    auto step = [&] {
      t++;
      at::NoGradGuard ng;
      for (size_t i = 0; i < m.torch_params.size(); i++) {
        at::Tensor p = m.torch_params[i], g = p.grad();
        mom[i] = b1 * mom[i] + (1 - b1) * g;
        vel[i] = b2 * vel[i] + (1 - b2) * g * g;
        at::Tensor up = (mom[i] / (1 - std::pow(b1, t))) / ((vel[i] / (1 - std::pow(b2, t))).sqrt() + eps) + wd * p;
        double r1 = p.norm().item<double>(), r2 = up.norm().item<double>();
        double trust = r1 > 0 && r2 > 0 ? r1 / r2 : 1.0;
        p.sub_(lr * trust * up);
      }
    };
    check(m, ours, zero, step);
  }
}

// Muon (tinygrad's LARS with Newton-Schulz): nesterov momentum b = m b + g, u = g + m b, the update lr * NS(u viewed
// as (rows, -1)), written with ATen ops. Tinygrad computes the post-momentum weight decay into a local it never uses,
// so weight_decay must not change anything: it runs with 0.1 here
TEST(Optim, MuonMatchesTheMath) {
  for (auto [steps, nesterov] : {std::pair{5, true}, std::pair{2, false}}) {
    SCOPED_TRACE("ns_steps " + std::to_string(steps) + (nesterov ? " nesterov" : ""));
    Mlp m;
    const double lr = 0.02, mom = 0.95;
    const std::vector<double> c{3.4445, -4.775, 2.0315};
    auto ours = optim::Muon(m.tg_params, lr, mom, 0.1, steps, c, nesterov);
    std::vector<at::Tensor> buf;
    for (auto& p : m.torch_params) buf.push_back(at::zeros_like(p).detach());
    auto ns = [&](at::Tensor x) {
      bool tall = x.size(0) > x.size(1);
      if (tall) x = x.t();
      x = x / (x.square().sum().sqrt() + 1e-7);
      for (int s = 0; s < steps; s++) {
        at::Tensor a = x.matmul(x.t());
        x = c[0] * x + c[1] * a.matmul(x) + c[2] * a.matmul(a.matmul(x));
      }
      return tall ? x.t() : x;
    };
    auto zero = [&] {
      for (auto& p : m.torch_params) p.mutable_grad() = at::Tensor();
    };
    auto step = [&] {
      at::NoGradGuard ng;
      for (size_t i = 0; i < m.torch_params.size(); i++) {
        at::Tensor p = m.torch_params[i], g = p.grad();
        buf[i] = mom * buf[i] + g;
        at::Tensor u = nesterov ? g + mom * buf[i] : buf[i];
        p.sub_(lr * ns(u.reshape({u.size(0), -1})).reshape(u.sizes()));
      }
    };
    check(m, ours, zero, step);
  }
  Mlp m;
  EXPECT_THROW(optim::Muon(m.tg_params, 0.1, 0.95, 0.1, 5, {3.4445, -4.775, 2.0315}, true, std::nullopt, true), tg::Error);
  EXPECT_THROW(optim::Muon(m.tg_params, 0.1, 0.95, 0.1, 5, {}), tg::Error);
}

// ***** learning-rate schedulers *****

double lr_of(optim::Optimizer& o) { return o.lr.to("CPU").cast(tg::dtypes::float64).item<double>(); }

// StepLR against libtorch's. libtorch 1.13 decays on the call after each multiple of step_size (its step counter starts
// at 0 and is read before it is incremented); PyTorch's Python StepLR and ours decay at the multiple itself, so ours
// after k steps equals libtorch's after k + 1
TEST(LRScheduler, StepLRMatchesTorch) {
  Mlp m;
  auto ours = optim::SGD(m.tg_params, 0.5);
  optim::StepLR sched(ours, 3, 0.5);
  torch::optim::SGD theirs(m.torch_params, torch::optim::SGDOptions(0.5));
  torch::optim::StepLR tsched(theirs, 3, 0.5);
  tsched.step();
  for (int k = 1; k <= 10; k++) {
    sched.step();
    tsched.step();
    double want = static_cast<torch::optim::SGDOptions&>(theirs.param_groups()[0].options()).lr();
    EXPECT_NEAR(lr_of(ours), want, 1e-7) << "after " << k << " steps";
    EXPECT_NEAR(lr_of(ours), 0.5 * std::pow(0.5, k / 3), 1e-7) << "after " << k << " steps";  // PyTorch's closed form
  }
  EXPECT_EQ(sched.epoch_counter.item<int32_t>(), 10);
}

// the others against their formulas (PyTorch's closed forms; libtorch 1.13 has none of them)
TEST(LRScheduler, MultiStepCosineOneCycle) {
  Mlp m;
  auto a = optim::SGD(m.tg_params, 0.4), b = optim::SGD(m.tg_params, 0.4), c = optim::SGD(m.tg_params, 0.4);
  optim::MultiStepLR ms(a, {2, 5, 6}, 0.5);
  optim::CosineAnnealingLR cos(b, 8, 0.1);
  optim::OneCycleLR one(c, 1.0, 4.0, 10.0, 10, 0.3);
  EXPECT_NEAR(lr_of(c), 0.25, 1e-7);  // initial lr = max_lr / div_factor
  optim::LRSchedulerGroup group({&ms, &cos, &one});
  for (int k = 1; k <= 10; k++) {
    group.step();
    double want_ms = 0.4 * std::pow(0.5, (k >= 2) + (k >= 5) + (k >= 6));
    double want_cos = 0.1 + 0.5 * (0.4 - 0.1) * (1 + std::cos(M_PI * k / 8));
    // warm-up over 3 steps from 0.25 to 1.0, then down over 7 steps to 0.025
    double want_one = k < 3 ? 0.25 + (1.0 - 0.25) * k / 3.0 : 1.0 + (0.025 - 1.0) * (k - 3) / 7.0;
    EXPECT_NEAR(lr_of(a), want_ms, 1e-7) << "MultiStepLR after " << k;
    EXPECT_NEAR(lr_of(b), want_cos, 1e-6) << "CosineAnnealingLR after " << k;
    EXPECT_NEAR(lr_of(c), want_one, 1e-6) << "OneCycleLR after " << k;
  }
}

TEST(LRScheduler, ReduceLROnPlateau) {
  Mlp m;
  auto o = optim::SGD(m.tg_params, 1.0);
  optim::ReduceLROnPlateau s(o, "min", 0.5, 2, 0.1, "rel");
  // improvements must beat best * 0.9; three epochs in a row without one halve the lr
  std::vector<std::pair<double, double>> seq{{10, 1}, {9.5, 1}, {9.2, 1}, {8.9, 1}, {8.0, 1}, {7.5, 1}, {7.4, 1}, {7.3, 0.5}, {5, 0.5}, {5, 0.5}, {5, 0.5}, {5, 0.25}};
  for (size_t i = 0; i < seq.size(); i++) {
    s.step(seq[i].first);
    EXPECT_NEAR(lr_of(o), seq[i].second, 1e-7) << "epoch " << i + 1;
  }
  optim::ReduceLROnPlateau mx(o, "max", 0.1, 0, 0.5, "abs");
  EXPECT_TRUE(mx.is_better(1.0));
  mx.step(1.0);
  EXPECT_FALSE(mx.is_better(1.4));
  EXPECT_TRUE(mx.is_better(1.6));
}

TEST(LRScheduler, Errors) {
  Mlp m;
  auto o = optim::SGD(m.tg_params, 0.1);
  expect_error([&] { optim::StepLR(o, 0); }, {"StepLR", "step_size"});
  expect_error([&] { optim::CosineAnnealingLR(o, 0); }, {"CosineAnnealingLR", "T_max"});
  expect_error([&] { optim::OneCycleLR(o, 1, 4, 10, 10, 0.3, "cos"); }, {"OneCycleLR", "anneal_strategy", "\"cos\""});
  expect_error([&] { optim::OneCycleLR(o, 1, 4, 10, 10, 0.3, "linear", true); }, {"OneCycleLR", "cycle_momentum"});
  expect_error([&] { optim::OneCycleLR(o, 1, 4, 10, 10, 1.5); }, {"OneCycleLR", "pct_start"});
  expect_error([&] { optim::ReduceLROnPlateau(o, "lowest"); }, {"ReduceLROnPlateau", "mode", "\"lowest\""});
  expect_error([&] { optim::ReduceLROnPlateau(o, "min", 0.1, 10, 1e-4, "pct"); }, {"ReduceLROnPlateau", "threshold_mode"});
  tg::Context const_lr({{"CONST_LR", 1}});
  auto oc = optim::SGD(m.tg_params, 0.1);
  expect_error([&] { optim::StepLR(oc, 2); }, {"LR scheduler", "CONST_LR"});
}

TEST(Optim, Errors) {
  Mlp m;
  EXPECT_THROW(optim::SGD(m.tg_params, -1.0), tg::Error);
  EXPECT_THROW(optim::SGD(m.tg_params, 0.1, -0.5), tg::Error);
  EXPECT_THROW(optim::AdamW(m.tg_params, 0.1, 0.9, 0.999, 1e-8, -1.0), tg::Error);
  EXPECT_THROW(optim::Adam(std::vector<tg::Tensor>{}), tg::Error);
  auto opt = optim::SGD(m.tg_params, 0.1);
  m.tg_loss().backward();
  try {
    opt.step();  // TRAINING is off
    ADD_FAILURE() << "step without TRAINING did not throw";
  } catch (const tg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("TRAINING"), std::string::npos) << e.what();
  }
  tg::Context train({{"TRAINING", 1}});
  opt.zero_grad();
  EXPECT_THROW(opt.step(), tg::Error);  // no gradients
  // buffers (is_param false) are carried, not updated
  tg::Tensor buf = tg::Tensor::ones({2}).contiguous().realize().is_param_(false);
  std::vector<tg::Tensor> with_buf = m.tg_params;
  with_buf.push_back(buf);
  auto opt2 = optim::SGD(with_buf, 0.1);
  EXPECT_EQ(opt2.params.size(), m.tg_params.size());
  EXPECT_EQ(opt2.buffers.size(), 1u);
}

}  // namespace
