// idiv_, pow_, matmul_: tinygrad's //=, **=, @= (no C++ operator token), hand-derived values.
#include <gtest/gtest.h>

#include "tensor/tensor_impl.h"

using namespace tg;

TEST(TensorInPlaceNamed, IdivPowMatmul) {
  Tensor a = Tensor::from_vector<int32_t>({7, -7, 9}).realize(), alias = a;
  Tensor& ret = a.idiv_(Tensor::from_vector<int32_t>({2, 2, -4}));
  EXPECT_EQ(&ret, &a);
  EXPECT_EQ(alias.to_vector<int32_t>(), (std::vector<int32_t>{3, -4, -3}));  // floor, as Python's //
  Tensor p = Tensor::from_vector<float>({2, 3, -2}).realize();
  p.pow_(Tensor::from_vector<float>({3, 2, 2}));
  EXPECT_EQ(p.to_vector<float>(), (std::vector<float>{8, 9, 4}));
  Tensor m = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}).realize();
  m.matmul_(Tensor::from_vector<float>({0, 1, 1, 0}, {2, 2}));
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{2, 1, 4, 3}));
  // the result must keep the shape and dtype, as assign requires
  Tensor w = Tensor::from_vector<float>({1, 2}, {1, 2}).realize();
  EXPECT_THROW(w.matmul_(Tensor::ones({2, 3})), Error);
}
