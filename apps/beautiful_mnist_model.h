#pragma once
// tinygrad's beautiful_mnist model (examples/beautiful_mnist.py): two 5x5 and two 3x3 convolutions with BatchNorm and
// max pooling, then one linear layer. Shared by the main job (apps/beautiful_mnist.cpp) and bench/mnist.cpp.
#include "tg/nn.h"

namespace tg {

struct BeautifulMnist : nn::Module {
  nn::Conv2d c1{1, 32, 5}, c2{32, 32, 5}, c3{32, 64, 3}, c4{64, 64, 3};
  nn::BatchNorm bn1{32}, bn2{64};
  nn::Linear l1{576, 10};
  void visit_state(nn::StateVisitor& v) override {
    v("c1", c1), v("c2", c2), v("bn1", bn1), v("c3", c3), v("c4", c4), v("bn2", bn2), v("l1", l1);
  }
  Tensor operator()(const Tensor& x) {
    Tensor h = bn1(c2(c1(x).relu()).relu()).max_pool2d();
    h = bn2(c4(c3(h).relu()).relu()).max_pool2d();
    return l1(h.flatten(1));
  }
};

}  // namespace tg
