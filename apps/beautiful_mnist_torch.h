#pragma once
// The main job's model (beautiful_mnist_model.h) in libtorch, module names equal to ours so a state dict maps one to one:
// the anchor of bench/mnist and the oracle of tests/conformance/test_training.cpp.
#include <torch/torch.h>

namespace tg {

struct BeautifulMnistTorch : torch::nn::Module {
  torch::nn::Conv2d c1{torch::nn::Conv2dOptions(1, 32, 5)}, c2{torch::nn::Conv2dOptions(32, 32, 5)};
  torch::nn::Conv2d c3{torch::nn::Conv2dOptions(32, 64, 3)}, c4{torch::nn::Conv2dOptions(64, 64, 3)};
  torch::nn::BatchNorm2d bn1{32}, bn2{64};
  torch::nn::Linear l1{576, 10};
  BeautifulMnistTorch() {
    register_module("c1", c1), register_module("c2", c2), register_module("bn1", bn1), register_module("c3", c3);
    register_module("c4", c4), register_module("bn2", bn2), register_module("l1", l1);
  }
  // tinygrad's max (and so its max_pool2d) splits the gradient evenly between tied maxima; torch's max_pool2d gives it
  // all to one of them. After ReLU and BatchNorm, windows of equal values are common, so the conformance test pools
  // with amax (which splits ties as tinygrad does) and the benchmark with torch's own max_pool2d
  bool even_ties = false;
  torch::Tensor pool(const torch::Tensor& x) const {
    return even_ties ? x.unfold(2, 2, 2).unfold(3, 2, 2).amax({-2, -1}) : torch::max_pool2d(x, 2);
  }
  torch::Tensor forward(torch::Tensor x) {
    x = pool(bn1(torch::relu(c2(torch::relu(c1(x))))));
    x = pool(bn2(torch::relu(c4(torch::relu(c3(x))))));
    return l1(x.flatten(1));
  }
};

}  // namespace tg
