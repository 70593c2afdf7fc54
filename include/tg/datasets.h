#pragma once
// tg::nn::datasets: tinygrad's nn/datasets.py, read from local files (no downloads).
#include <string>

#include "tg/tensor.h"

namespace tg::nn::datasets {

struct Mnist {
  Tensor X_train, Y_train, X_test, Y_test;  // (60000,1,28,28) (60000) (10000,1,28,28) (10000), all uint8
};

// MNIST or Fashion-MNIST from the four gzipped IDX files in `dir` (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz,
// t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz; both datasets use these names). An empty dir means Debian's
// dataset-fashion-mnist (/usr/share/datasets/fashion-mnist) when fashion, else /usr/share/datasets/mnist. Throws
// tg::Error naming the file when one is missing, not gzip, or not a well-formed IDX file of 28x28 images / labels
// of matching count.
Mnist mnist(const std::string& dir = "", bool fashion = true, const std::string& device = "");

}  // namespace tg::nn::datasets
