// The library works from another translation unit's static initializers and destructors: the README's namespace-scope
// `struct Net ... } net;` with its optimizer and TinyJit, and an object that builds tensors, a Linear and realizes
// kernels while it is constructed, before main. Its own executable, so nothing in it runs the library first; the objects
// are destroyed after main, which must be safe too (run it under ASan+UBSan: -DTG_SANITIZE=ON).
#include <gtest/gtest.h>

#include <cmath>

#include "tg/context.h"
#include "tg/jit.h"
#include "tg/nn.h"
#include "tg/optim.h"
#include "tg/state.h"

namespace {

// everything here runs during static initialization
struct Built : tg::nn::Module {
  tg::nn::Linear fixed{2, 2};
  tg::Tensor a = tg::Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  tg::Tensor product;  // a realized tensor that lives until static destruction
  std::vector<float> product_values, linear_values;
  Built() {
    product = a.matmul(tg::Tensor::from_vector<float>({5, 6, 7, 8}, {2, 2})).realize();
    product_values = product.to_vector<float>();
    fixed.weight.assign(tg::Tensor::from_vector<float>({1, 0, 0, 2}, {2, 2})).realize();
    fixed.bias->assign(tg::Tensor::from_vector<float>({0.5f, -1}, {2})).realize();
    linear_values = fixed(a).to_vector<float>();
  }
  void visit_state(tg::nn::StateVisitor& v) override { v("fixed", fixed); }
} built;
auto sgd = tg::nn::optim::SGD(tg::nn::state::get_parameters(built), 0.1);

// the README's example, as written there
struct Net : tg::nn::Module {
  tg::nn::Linear l1{784, 128}, l2{128, 10};
  void visit_state(tg::nn::StateVisitor& v) override { v("l1", l1), v("l2", l2); }
  tg::Tensor operator()(const tg::Tensor& x) { return l2(l1(x).relu()); }
} net;
auto opt = tg::nn::optim::Adam(tg::nn::state::get_parameters(net), 1e-3);
tg::TinyJit<tg::Tensor> step([](const std::vector<tg::Tensor>& in) {
  tg::Context train({{"TRAINING", 1}});
  opt.zero_grad();
  tg::Tensor loss = net(in[0]).sparse_categorical_crossentropy(in[1]);
  loss.backward();
  std::vector<tg::Tensor> todo = opt.schedule_step();
  todo.push_back(loss);
  tg::Tensor::realize(todo);
  return loss;
});

}  // namespace

TEST(StaticInit, TensorsAndLayersBuiltBeforeMain) {
  EXPECT_EQ(built.product_values, (std::vector<float>{19, 22, 43, 50}));  // [[1,2],[3,4]] @ [[5,6],[7,8]]
  EXPECT_EQ(built.product.to_vector<float>(), (std::vector<float>{19, 22, 43, 50}));
  // a @ W.T + b with W = diag(1, 2), b = (0.5, -1)
  EXPECT_EQ(built.linear_values, (std::vector<float>{1.5f, 3, 3.5f, 7}));
  // the README's Linear layers got their uniform(+-1/sqrt(in)) initial values
  for (float w : net.l1.weight.to_vector<float>()) ASSERT_LT(std::abs(w), 1 / std::sqrt(784.f));
  EXPECT_EQ(net.l2.weight.shape(), (tg::Shape{10, 128}));
}

TEST(StaticInit, TrainsOneStep) {
  {
    tg::Context train({{"TRAINING", 1}});
    sgd.zero_grad();
    built.fixed(built.a).sum().backward();
    sgd.step();
  }
  // d(sum)/dW[o][i] = sum over rows of a[:, i] = (4, 6) for each o, d(sum)/db = (2, 2); lr 0.1
  std::vector<float> w = built.fixed.weight.to_vector<float>(), b = built.fixed.bias->to_vector<float>();
  std::vector<float> want_w{0.6f, -0.6f, -0.4f, 1.4f}, want_b{0.3f, -1.2f};
  for (size_t i = 0; i < 4; i++) EXPECT_NEAR(w[i], want_w[i], 1e-6) << i;
  for (size_t i = 0; i < 2; i++) EXPECT_NEAR(b[i], want_b[i], 1e-6) << i;
}

TEST(StaticInit, ReadmeExampleTrains) {
  std::vector<float> x(4 * 784);
  for (size_t i = 0; i < x.size(); i++) x[i] = float(i % 7) / 7;
  tg::Tensor xs = tg::Tensor::from_vector(x, {4, 784}), ys = tg::Tensor::from_vector<int32_t>({1, 2, 3, 4}, {4});
  std::vector<float> before = net.l2.weight.to_vector<float>();
  float first = step(xs, ys).item<float>(), last = first;
  for (int i = 0; i < 3; i++) last = step(xs, ys).item<float>();  // run, capture, replay
  EXPECT_TRUE(step.is_captured());
  EXPECT_TRUE(std::isfinite(first));
  EXPECT_LT(last, first);  // the same batch four times: Adam lowers its loss
  EXPECT_NE(net.l2.weight.to_vector<float>(), before);
}
