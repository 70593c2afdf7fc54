#pragma once
// tinygrad's beautiful_mnist model (examples/beautiful_mnist.py): two 5x5 and two 3x3 convolutions with BatchNorm and
// max pooling, then one linear layer, and its training step. Shared by the main job (apps/beautiful_mnist.cpp),
// bench/mnist.cpp and the tests that train it.
#include "tg/context.h"
#include "tg/jit.h"
#include "tg/nn.h"
#include "tg/optim.h"

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

// one training step under TinyJit: (images, labels) -> loss. Forward, sparse categorical cross-entropy, backward and the
// optimizer's update are realized as one schedule (the loss reads the weights the update overwrites)
template <class Model> TinyJit<Tensor> jit_train_step(Model& model, nn::optim::Optimizer& opt) {
  return TinyJit<Tensor>([&model, &opt](const std::vector<Tensor>& in) {
    Context train({{"TRAINING", 1}});
    opt.zero_grad();
    Tensor loss = model(in[0]).sparse_categorical_crossentropy(in[1]);
    loss.backward();
    std::vector<Tensor> todo = opt.schedule_step();
    todo.push_back(loss);
    Tensor::realize(todo);
    return loss;
  });
}

}  // namespace tg
