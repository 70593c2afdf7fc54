// nn::optim::OptimizerGroup: one step of the group equals stepping each optimizer alone; the first SGD step hand-derived.
#include <gtest/gtest.h>

#include "tensor/tensor_impl.h"
#include "tg/context.h"
#include "tg/optim.h"

using namespace tg;
namespace optim = tg::nn::optim;

namespace {
Tensor loss(const Tensor& a, const Tensor& b) { return (a * a).sum() + (b * Tensor::from_vector<float>({1, -2, 3})).sum(); }
std::pair<Tensor, Tensor> params() {
  return {Tensor::from_vector<float>({1, -2, 0.5f}).realize(), Tensor::from_vector<float>({0.25f, 1, -1}).realize()};
}
}  // namespace

TEST(OptimizerGroup, StepsLikeItsMembers) {
  Context training({{"TRAINING", 1}});
  auto [a, b] = params();
  auto [a2, b2] = params();
  optim::LARS sgd = optim::SGD({a}, 0.1, 0.9);
  optim::LAMB adam = optim::Adam({b}, 0.01);
  optim::OptimizerGroup group({&sgd, &adam});
  EXPECT_EQ(group.params.size(), 2u);
  EXPECT_EQ(&group[1], &adam);
  optim::LARS sgd2 = optim::SGD({a2}, 0.1, 0.9);
  optim::LAMB adam2 = optim::Adam({b2}, 0.01);
  for (int step = 0; step < 3; step++) {
    group.zero_grad();
    loss(a, b).backward();
    group.step();
    sgd2.zero_grad(), adam2.zero_grad();
    loss(a2, b2).backward();
    sgd2.step();
    adam2.step();
    if (step == 0) {  // SGD: a - 0.1 * 2a; Adam's first step moves each weight by lr against the sign of its gradient
      std::vector<float> av = a.to_vector<float>(), bv = b.to_vector<float>();
      std::vector<float> aw = {0.8f, -1.6f, 0.4f}, bw = {0.24f, 1.01f, -1.01f};
      for (size_t i = 0; i < 3; i++) {
        EXPECT_NEAR(av[i], aw[i], 1e-6) << i;
        EXPECT_NEAR(bv[i], bw[i], 1e-5) << i;
      }
    }
    EXPECT_EQ(a.to_vector<float>(), a2.to_vector<float>()) << "step " << step;
    EXPECT_EQ(b.to_vector<float>(), b2.to_vector<float>()) << "step " << step;
  }
  EXPECT_THROW(optim::OptimizerGroup({&sgd, nullptr}), Error);
}
