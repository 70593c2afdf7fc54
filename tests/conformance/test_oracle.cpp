// The oracle itself: libtorch's answers against hand-derived numbers, autograd, and proof that the
// comparison helper fails where it must (a conformance suite that cannot fail proves nothing).
#include "torch_oracle.h"

#include <gtest/gtest-spi.h>

#include <cmath>
#include <limits>

using oracle::make;
using oracle::result;
using oracle::Result;

namespace {

Result floats(std::vector<double> v, std::vector<int64_t> shape, at::ScalarType dtype = at::kFloat) {
  return {std::move(v), std::move(shape), dtype};
}

TEST(Oracle, SingleThreaded) { EXPECT_EQ(at::get_num_threads(), 1); }

TEST(Oracle, MakeAndReadBack) {
  at::Tensor t = make<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(t.scalar_type(), at::kFloat);
  EXPECT_EQ(t.sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(oracle::values(t), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  // a non-contiguous view reads back in logical (row-major) order
  EXPECT_EQ(oracle::values(t.t()), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  // 0-d and size-0 tensors
  at::Tensor s = make<int64_t>({7}, {});
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.scalar_type(), at::kLong);
  EXPECT_EQ(oracle::values(s), std::vector<double>{7});
  at::Tensor e = make<float>({}, {0, 3});
  EXPECT_EQ(e.numel(), 0);
  EXPECT_MATCH(result(e.sum(0)), floats({0, 0, 0}, {3}));
  // bool, and a conversion on the way in (float -> float16 rounds)
  EXPECT_EQ(oracle::values(make<bool>({true, false}, {2})), (std::vector<double>{1, 0}));
  EXPECT_EQ(make<bool>({true}, {1}).scalar_type(), at::kBool);
  at::Tensor h = make<float>({0.1f}, {1}, at::kHalf);
  EXPECT_EQ(h.scalar_type(), at::kHalf);
  EXPECT_EQ(oracle::values(h), std::vector<double>{0.0999755859375});  // nearest float16 to 0.1
  EXPECT_THROW(make<float>({1, 2, 3}, {2, 2}), std::invalid_argument);
}

TEST(Oracle, DTypeMapping) {
  for (tg::DType d : {tg::dtypes::bool_, tg::dtypes::int8, tg::dtypes::uint8, tg::dtypes::int16, tg::dtypes::int32,
                      tg::dtypes::int64, tg::dtypes::float16, tg::dtypes::bfloat16, tg::dtypes::float32,
                      tg::dtypes::float64}) {
    auto s = oracle::to_torch(d);
    ASSERT_TRUE(s.has_value()) << d;
    EXPECT_EQ(oracle::from_torch(*s), d);
    EXPECT_EQ(oracle::dtype_name(*s), d.name());
  }
  for (tg::DType d : {tg::dtypes::uint16, tg::dtypes::uint32, tg::dtypes::uint64, tg::dtypes::weakint})
    EXPECT_FALSE(oracle::to_torch(d).has_value()) << d;
}

TEST(Oracle, Add) {
  at::Tensor a = make<float>({1, 2, 3}, {3}), b = make<float>({10, 20, 30}, {3});
  EXPECT_MATCH(result(a + b), floats({11, 22, 33}, {3}));
  // broadcasting (2,1) + (3,) -> (2,3)
  at::Tensor c = make<float>({100, 200}, {2, 1});
  EXPECT_MATCH(result(at::add(c, a)), floats({101, 102, 103, 201, 202, 203}, {2, 3}));
  // integers stay integers and are compared exactly
  at::Tensor i = make<int32_t>({1, -2, 3}, {3});
  EXPECT_MATCH(result(i + i), floats({2, -4, 6}, {3}, at::kInt));
}

TEST(Oracle, Matmul) {
  at::Tensor a = make<float>({1, 2, 3, 4}, {2, 2}), b = make<float>({5, 6, 7, 8}, {2, 2});
  EXPECT_MATCH(result(at::matmul(a, b)), floats({19, 22, 43, 50}, {2, 2}));
  // (2,3) @ (3,) -> (2,)
  at::Tensor m = make<float>({1, 0, 2, 0, 1, -1}, {2, 3}), v = make<float>({3, 4, 5}, {3});
  EXPECT_MATCH(result(at::matmul(m, v)), floats({13, -1}, {2}));
}

TEST(Oracle, Softmax) {
  // exp of (0, ln 2, ln 3) is (1, 2, 3): softmax is (1, 2, 3) / 6
  at::Tensor x = make<float>({0.0f, std::log(2.0f), std::log(3.0f)}, {3});
  EXPECT_MATCH(result(at::softmax(x, -1)), floats({1.0 / 6, 2.0 / 6, 3.0 / 6}, {3}));
  // shift invariance along the reduced axis, per row
  at::Tensor y = make<float>({0, 1, 1000, 1001}, {2, 2});
  double p = 1 / (1 + std::exp(1.0));
  EXPECT_MATCH(result(at::softmax(y, 1)), floats({p, 1 - p, p, 1 - p}, {2, 2}));
}

TEST(Oracle, Sum) {
  at::Tensor x = at::arange(6, at::kFloat).reshape({2, 3});  // 0 1 2 / 3 4 5
  EXPECT_MATCH(result(x.sum()), floats({15}, {}));
  EXPECT_MATCH(result(x.sum(0)), floats({3, 5, 7}, {3}));
  EXPECT_MATCH(result(x.sum(1, /*keepdim=*/true)), floats({3, 12}, {2, 1}));
  EXPECT_MATCH(result(x.sum(at::IntArrayRef{0, 1})), floats({15}, {}));
  // torch sums integers into int64
  EXPECT_MATCH(result(make<int32_t>({1, 2, 3}, {3}).sum()), floats({6}, {}, at::kLong));
}

TEST(Oracle, Backward) {
  // L = sum(x * x): dL/dx = 2x
  at::Tensor x = make<float>({1, -2, 3}, {3}).requires_grad_(true);
  (x * x).sum().backward();
  EXPECT_MATCH(result(x.grad()), floats({2, -4, 6}, {3}));
  // L = sum(A @ B): dL/dA[i][k] = sum_j B[k][j], dL/dB[k][j] = sum_i A[i][k]
  at::Tensor a = make<float>({1, 2, 3, 4}, {2, 2}).requires_grad_(true);
  at::Tensor b = make<float>({5, 6, 7, 8}, {2, 2}).requires_grad_(true);
  at::matmul(a, b).sum().backward();
  EXPECT_MATCH(result(a.grad()), floats({11, 15, 11, 15}, {2, 2}));
  EXPECT_MATCH(result(b.grad()), floats({4, 4, 6, 6}, {2, 2}));
  // L = sum(softmax(x) * w): dL/dx_i = s_i (w_i - sum_j s_j w_j); with s = (1,2,3)/6, w = (1,0,0): s.w = 1/6
  at::Tensor z = make<float>({0.0f, std::log(2.0f), std::log(3.0f)}, {3}).requires_grad_(true);
  (at::softmax(z, 0) * make<float>({1, 0, 0}, {3})).sum().backward();
  EXPECT_MATCH(result(z.grad()), floats({(1.0 / 6) * (5.0 / 6), (2.0 / 6) * (-1.0 / 6), (3.0 / 6) * (-1.0 / 6)}, {3}));
}

TEST(Oracle, ToleranceAndSpecialValues) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  // within float32 tolerance: equal; NaN matches NaN; infinities match by sign
  EXPECT_MATCH(floats({1.0 + 5e-6, 0.0 + 5e-7, nan, inf, -inf}, {5}), floats({1, 0, nan, inf, -inf}, {5}));
  // float16 is looser than float32
  EXPECT_MATCH(floats({1.0005}, {1}, at::kHalf), floats({1}, {1}, at::kHalf));
  EXPECT_MATCH_TOL(floats({1.1}, {1}), floats({1}, {1}), (oracle::Tol{0.2, 0}));
  EXPECT_TRUE(oracle::close(1e30, 1e30 * (1 + 1e-6), oracle::tolerance(at::kFloat)));
}

TEST(Oracle, ReportsMismatches) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  Result expected = floats({1, 2, 3}, {3});
  // a value beyond tolerance, with its index and both numbers in the message
  EXPECT_NONFATAL_FAILURE(EXPECT_MATCH(floats({1, 2.001, 3}, {3}), expected), "1 of 3 values differ");
  EXPECT_NONFATAL_FAILURE(EXPECT_MATCH(floats({1, 2.001, 3}, {3}), expected), "at [1]: 2.001 vs 2");
  EXPECT_NONFATAL_FAILURE(EXPECT_MATCH(floats({1, 2, 3 + 1e-4}, {3}), expected), "at [2]");
  // multi-dimensional index, and only the first mismatches are listed
  std::vector<double> many(20, 1.0);
  EXPECT_NONFATAL_FAILURE(EXPECT_MATCH(floats(many, {4, 5}), floats(std::vector<double>(20, 0.0), {4, 5})),
                          "20 of 20 values differ, the first:");
  EXPECT_NONFATAL_FAILURE(EXPECT_MATCH(floats(many, {4, 5}), floats(std::vector<double>(20, 0.0), {4, 5})),
                          "at [1, 2]");
  // shapes and dtypes must agree, and the message names them
  EXPECT_NONFATAL_FAILURE(EXPECT_MATCH(floats({1, 2, 3}, {3, 1}), expected), "shapes (3, 1) vs (3,)");
  EXPECT_NONFATAL_FAILURE(EXPECT_MATCH(floats({1, 2, 3}, {3}, at::kHalf), expected), "dtypes half vs float");
  // special values: NaN only matches NaN, infinities only the same infinity
  EXPECT_NONFATAL_FAILURE(EXPECT_MATCH(floats({nan}, {1}), floats({0}, {1})), "1 of 1 values differ");
  EXPECT_NONFATAL_FAILURE(EXPECT_MATCH(floats({0}, {1}), floats({nan}, {1})), "1 of 1 values differ");
  EXPECT_NONFATAL_FAILURE(EXPECT_MATCH(floats({inf}, {1}), floats({-inf}, {1})), "1 of 1 values differ");
  EXPECT_NONFATAL_FAILURE(EXPECT_MATCH(floats({1e38}, {1}), floats({inf}, {1})), "1 of 1 values differ");
  // integers are exact
  EXPECT_NONFATAL_FAILURE(EXPECT_MATCH(floats({5}, {1}, at::kInt), floats({6}, {1}, at::kInt)), "rtol 0 atol 0");
  // torch's own answer against a wrong hand value fails too
  at::Tensor a = make<float>({1, 2}, {2});
  EXPECT_NONFATAL_FAILURE(EXPECT_MATCH(result(a + a), floats({2, 5}, {2})), "at [1]: 4 vs 5");
}

}  // namespace
