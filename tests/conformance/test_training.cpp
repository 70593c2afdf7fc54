// Training conformance: a small MLP and the main job's CNN (beautiful_mnist) start from identical weights on both sides
// and train a few steps on identical batches; the loss of every step must match libtorch's.
#include <torch/torch.h>

#include "../../apps/beautiful_mnist_model.h"
#include "../../apps/beautiful_mnist_torch.h"
#include "tensor_harness.h"
#include "tg/context.h"
#include "tg/datasets.h"
#include "tg/jit.h"
#include "tg/optim.h"
#include "tg/state.h"

namespace {

using namespace conf;
namespace nn = tg::nn;

// copy every tensor of our state dict into the torch parameter or buffer of the same name
void copy_weights(nn::Module& ours, torch::nn::Module& theirs) {
  auto sd = nn::state::get_state_dict(ours);
  torch::NoGradGuard ng;
  size_t copied = 0;
  for (auto& item : theirs.named_parameters()) item.value().copy_(to_torch(sd.at(item.key()))), copied++;
  for (auto& item : theirs.named_buffers())
    if (sd.count(item.key()) && item.key().find("num_batches") == std::string::npos) item.value().copy_(to_torch(sd.at(item.key()))), copied++;
  ASSERT_GT(copied, 0u);
}

struct TorchMlp : torch::nn::Module {
  torch::nn::Linear l1{12, 16}, l2{16, 5};
  TorchMlp() { register_module("l1", l1), register_module("l2", l2); }
  torch::Tensor forward(const torch::Tensor& x) { return l2(torch::tanh(l1(x))); }
};
struct Mlp : nn::Module {
  nn::Linear l1{12, 16}, l2{16, 5};
  void visit_state(nn::StateVisitor& v) override { v("l1", l1), v("l2", l2); }
  tg::Tensor operator()(const tg::Tensor& x) { return l2(l1(x).tanh()); }
};

// `steps` steps of OurOpt / TheirOpt on the same batches; the loss of every step and the weights after it must match.
// From step `resync_from` on, torch's weights are first set to ours, so each step is compared from the same start
std::vector<std::pair<Pair, Pair>> batches(const std::vector<int64_t>& xshape, int64_t classes, int steps, bool real_images) {
  std::vector<std::pair<Pair, Pair>> out;
  for (int i = 0; i < steps; i++) {
    Pair x = input(xshape, dtypes::float32, 0, 1, 100 + uint32_t(i)), y = input({xshape[0]}, dtypes::int32, 0, double(classes), 200 + uint32_t(i));
    if (real_images) {  // Fashion-MNIST training images as the main job feeds them (uint8 pixels, promoted by the conv)
      static const auto data = tg::nn::datasets::mnist();
      int64_t n = xshape[0];
      x.t = data.X_train.shrink({{i * n, i * n + n}, {0, 1}, {0, 28}, {0, 28}}).contiguous().realize();
      y.t = data.Y_train.shrink({{i * n, i * n + n}}).cast(dtypes::int32).contiguous().realize();
      x.a = to_torch(x.t).to(at::kFloat), y.a = to_torch(y.t);
    }
    out.push_back({x, y});
  }
  return out;
}

// ||ours - theirs|| / ||theirs - before||: how far our update of a weight is from torch's, relative to torch's update
double update_error(const at::Tensor& ours, const at::Tensor& theirs, const at::Tensor& before) {
  double ref = (theirs - before).to(at::kDouble).norm().item<double>();
  return (ours.to(at::kDouble) - theirs.to(at::kDouble)).norm().item<double>() / std::max(ref, 1e-30);
}

// update_rel > 0 compares each weight's update as a whole (update_error) instead of value by value: where single
// gradient entries may route differently (see the CNN below), a wrong rule still moves the whole update by O(1)
template <class Ours, class Theirs, class OurOpt, class TheirOpt>
void train_both(Ours& ours, Theirs& theirs, OurOpt& opt, TheirOpt& topt, const std::vector<std::pair<Pair, Pair>>& data, bool jit,
                oracle::Tol loss_tol, oracle::Tol weight_tol, int resync_from, double update_rel = 0) {
  tg::Context jit_mode({{"JIT", jit ? 1 : 0}});
  theirs.train();
  tg::TinyJit<tg::Tensor> step = tg::jit_train_step(ours, opt);
  for (int i = 0; i < int(data.size()); i++) {
    if (i >= resync_from) copy_weights(ours, theirs);
    const auto& [x, y] = data[size_t(i)];
    std::map<std::string, at::Tensor> before;
    for (auto& item : theirs.named_parameters()) before[item.key()] = item.value().detach().clone();
    tg::Tensor loss = step(x.t, y.t);
    topt.zero_grad();
    at::Tensor tloss = torch::nn::functional::cross_entropy(theirs.forward(x.a), y.a.to(at::kLong));
    tloss.backward();
    topt.step();
    EXPECT_TRUE(oracle::match(oracle::result(to_torch(loss)), oracle::result(tloss.detach()), loss_tol)) << "loss of step " << i;
    auto sd = nn::state::get_state_dict(ours);
    for (auto& item : theirs.named_parameters()) {
      at::Tensor w = to_torch(sd.at(item.key())), tw = item.value().detach();
      if (update_rel > 0) EXPECT_LT(update_error(w, tw, before.at(item.key())), update_rel) << item.key() << " after step " << i;
      else EXPECT_TRUE(oracle::match(oracle::result(w), oracle::result(tw), weight_tol)) << item.key() << " after step " << i;
    }
  }
}

TEST(Training, MlpLossCurveMatchesTorch) {
  tg::Tensor::manual_seed(3);
  Mlp ours;
  TorchMlp theirs;
  copy_weights(ours, theirs);
  auto opt = nn::optim::Adam(nn::state::get_parameters(ours), 0.003);
  torch::optim::Adam topt(theirs.parameters(), torch::optim::AdamOptions(0.003));
  train_both(ours, theirs, opt, topt, batches({10, 12}, 5, 8, false), false, {1e-4, 1e-5}, {1e-4, 1e-6}, 8);
}

// The CNN on Fashion-MNIST images under TinyJit, plain SGD. Ties in max pooling split the gradient as tinygrad does
// (even_ties). Two steps run free; after that a ReLU input within rounding of zero, or a pooling window whose maxima
// tie in one library and not the other, routes a gradient differently and the runs drift apart chaotically (each
// step multiplies the difference ~100x) although every single step agrees, so later steps start from the same weights.
// Such a rerouted entry moves a few weights by ~1% (seen on an AVX-512 machine, where libtorch sums in another order),
// so the weights are checked update by update, within 5% of torch's update in L2 norm (seen: under 0.03% on most
// steps, 0.8% on a step where an entry rerouted).
TEST(Training, BeautifulMnistLossCurveMatchesTorch) {
  tg::Tensor::manual_seed(3);  // the same initial weights every run
  tg::BeautifulMnist ours;
  tg::BeautifulMnistTorch theirs;
  theirs.even_ties = true;
  copy_weights(ours, theirs);
  auto opt = nn::optim::SGD(nn::state::get_parameters(ours), 0.01);
  torch::optim::SGD topt(theirs.parameters(), torch::optim::SGDOptions(0.01));
  train_both(ours, theirs, opt, topt, batches({8, 1, 28, 28}, 10, 6, true), true, {1e-4, 1e-5}, {1e-3, 1e-5}, 2, 5e-2);
}

}  // namespace
