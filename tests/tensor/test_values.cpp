// Values through the whole pipeline (Tensor -> callify -> schedule -> codegen -> CPU): every op family on small inputs.
#include <gtest/gtest.h>

#include <cmath>

#include "tensor/tensor_impl.h"
#include "tensor_test_util.h"

using namespace tg;

namespace {
void expect_close(const Tensor& t, const std::vector<float>& want, float tol = 1e-5f) {
  std::vector<float> got = t.to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++)
    if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(got[i])) << "at " << i;
    else EXPECT_NEAR(got[i], want[i], tol * std::max(1.0f, std::abs(want[i]))) << "at " << i;
}
template <class T> std::vector<T> V(std::initializer_list<T> l) { return l; }
Tensor F(std::vector<float> v, Shape s = {}) { return Tensor::from_vector<float>(v, s.empty() ? Shape{int64_t(v.size())} : s); }
Tensor I(std::vector<int32_t> v, Shape s = {}) { return Tensor::from_vector<int32_t>(v, s.empty() ? Shape{int64_t(v.size())} : s); }
}  // namespace

TEST(TensorValues, Elementwise) {
  Tensor x = F({-2, -0.5, 0, 0.5, 2}), y = F({1, 2, 3, 4, 5});
  expect_close(x + y, {-1, 1.5, 3, 4.5, 7});
  expect_close(x - y, {-3, -2.5, -3, -3.5, -3});
  expect_close(x * y, {-2, -1, 0, 2, 10});
  expect_close(x / y, {-2, -0.25, 0, 0.125, 0.4});
  expect_close(1 - x, {3, 1.5, 1, 0.5, -1});
  expect_close(x.maximum(0), {0, 0, 0, 0.5, 2});
  expect_close(x.minimum(y), {-2, -0.5, 0, 0.5, 2});
  expect_close(-x, {2, 0.5, 0, -0.5, -2});
  expect_close(x.abs(), {2, 0.5, 0, 0.5, 2});
  expect_close(x.sign(), {-1, -1, 0, 1, 1});
  expect_close(x.relu(), {0, 0, 0, 0.5, 2});
  expect_close(x.clamp(-1, 1), {-1, -0.5, 0, 0.5, 1});
  expect_close(x.square(), {4, 0.25, 0, 0.25, 4});
  expect_close(y.sqrt(), {1, std::sqrt(2.f), std::sqrt(3.f), 2, std::sqrt(5.f)});
  expect_close(y.rsqrt(), {1, 1 / std::sqrt(2.f), 1 / std::sqrt(3.f), 0.5, 1 / std::sqrt(5.f)});
  expect_close(y.reciprocal(), {1, 0.5, 1 / 3.f, 0.25, 0.2});
  expect_close(x.exp(), {std::exp(-2.f), std::exp(-0.5f), 1, std::exp(0.5f), std::exp(2.f)});
  expect_close(x.exp2(), {0.25, 1 / std::sqrt(2.f), 1, std::sqrt(2.f), 4});
  expect_close(y.log(), {0, std::log(2.f), std::log(3.f), std::log(4.f), std::log(5.f)});
  expect_close(y.log2(), {0, 1, std::log2(3.f), 2, std::log2(5.f)});
  expect_close(x.sin(), {std::sin(-2.f), std::sin(-0.5f), 0, std::sin(0.5f), std::sin(2.f)});
  expect_close(x.cos(), {std::cos(-2.f), std::cos(-0.5f), 1, std::cos(0.5f), std::cos(2.f)});
  expect_close(x.tan(), {std::tan(-2.f), std::tan(-0.5f), 0, std::tan(0.5f), std::tan(2.f)}, 1e-4f);
  expect_close(x.sigmoid(), {1 / (1 + std::exp(2.f)), 1 / (1 + std::exp(0.5f)), 0.5, 1 / (1 + std::exp(-0.5f)), 1 / (1 + std::exp(-2.f))});
  expect_close(x.tanh(), {std::tanh(-2.f), std::tanh(-0.5f), 0, std::tanh(0.5f), std::tanh(2.f)});
  expect_close(x.silu(), {-2 / (1 + std::exp(2.f)), -0.5f / (1 + std::exp(0.5f)), 0, 0.5f / (1 + std::exp(-0.5f)), 2 / (1 + std::exp(-2.f))});
  expect_close(x.gelu(), {-0.04540230f, -0.15428599f, 0, 0.34571401f, 1.95459769f}, 1e-4f);
  expect_close(x.pow(2), {4, 0.25, 0, 0.25, 4});
  expect_close(y.pow(0.5), {1, std::sqrt(2.f), std::sqrt(3.f), 2, std::sqrt(5.f)});
  Tensor r = F({-2.5, -1.5, -0.4, 0.5, 1.5, 2.7});
  expect_close(r.trunc(), {-2, -1, 0, 0, 1, 2});
  expect_close(r.floor(), {-3, -2, -1, 0, 1, 2});
  expect_close(r.ceil(), {-2, -1, 0, 1, 2, 3});
  expect_close(r.round(), {-2, -2, 0, 0, 2, 3});  // half to even
  expect_close((x > 0).where(x, y), {1, 2, 3, 0.5, 2});
  expect_close(x % 1.5, {1, 1, 0, 0.5, 0.5});
  expect_close(x.idiv(1.5), {-2, -1, 0, 0, 1});
}

TEST(TensorValues, IntAndBool) {
  Tensor i = I({-7, -1, 0, 3, 8}), j = I({2, 3, 5, 2, 3});
  EXPECT_EQ((i + j).to_vector<int32_t>(), V<int32_t>({-5, 2, 5, 5, 11}));
  EXPECT_EQ(i.idiv(j).to_vector<int32_t>(), V<int32_t>({-4, -1, 0, 1, 2}));  // floor division
  EXPECT_EQ((i % j).to_vector<int32_t>(), V<int32_t>({1, 2, 0, 1, 2}));      // floor modulo
  EXPECT_EQ(i.div(j, "trunc").to_vector<int32_t>(), V<int32_t>({-3, 0, 0, 1, 2}));
  expect_close(i / j, {-3.5, -1 / 3.f, 0, 1.5, 8 / 3.f});  // true division on ints
  EXPECT_EQ((i & j).to_vector<int32_t>(), V<int32_t>({-7 & 2, -1 & 3, 0, 3 & 2, 8 & 3}));
  EXPECT_EQ((i | 1).to_vector<int32_t>(), V<int32_t>({-7, -1, 1, 3, 9}));
  EXPECT_EQ((i ^ j).to_vector<int32_t>(), V<int32_t>({-7 ^ 2, -1 ^ 3, 5, 1, 11}));
  EXPECT_EQ((j << 2).to_vector<int32_t>(), V<int32_t>({8, 12, 20, 8, 12}));
  EXPECT_EQ((j >> 1).to_vector<int32_t>(), V<int32_t>({1, 1, 2, 1, 1}));
  EXPECT_EQ((~i).to_vector<int32_t>(), V<int32_t>({6, 0, -1, -4, -9}));
  EXPECT_EQ(i.abs().to_vector<int32_t>(), V<int32_t>({7, 1, 0, 3, 8}));
  EXPECT_EQ((-i).to_vector<int32_t>(), V<int32_t>({7, 1, 0, -3, -8}));
  EXPECT_EQ(i.maximum(j).to_vector<int32_t>(), V<int32_t>({2, 3, 5, 3, 8}));
  EXPECT_EQ(i.minimum(j).to_vector<int32_t>(), V<int32_t>({-7, -1, 0, 2, 3}));
  EXPECT_EQ(i.clamp(-1, 4).to_vector<int32_t>(), V<int32_t>({-1, -1, 0, 3, 4}));
  EXPECT_EQ((i < j).to_vector<bool>(), V<bool>({true, true, true, false, false}));
  EXPECT_EQ((i >= 0).to_vector<bool>(), V<bool>({false, false, true, true, true}));
  EXPECT_EQ((i == 3).to_vector<bool>(), V<bool>({false, false, false, true, false}));
  EXPECT_EQ((i != 3).logical_not().to_vector<bool>(), V<bool>({false, false, false, true, false}));
  EXPECT_EQ(((i > 0) & (j > 2)).to_vector<bool>(), V<bool>({false, false, false, false, true}));
  EXPECT_EQ(((i > 0) + (j > 2)).to_vector<bool>(), V<bool>({false, true, true, true, true}));
  EXPECT_EQ((i + 1.5).to_vector<float>(), V<float>({-5.5, 0.5, 1.5, 4.5, 9.5}));  // weak float result, read as float
  EXPECT_EQ(F({1.9f, -1.9f}).cast(dtypes::int32).to_vector<int32_t>(), V<int32_t>({1, -1}));
  EXPECT_EQ(F({1.0f}).bitcast(dtypes::int32).item<int32_t>(), 0x3f800000);
}

TEST(TensorValues, Reduce) {
  Tensor a = F({1, 5, 3, -4, 2, 0}, {2, 3});
  EXPECT_FLOAT_EQ(a.sum().item<float>(), 7);
  expect_close(a.sum(0), {-3, 7, 3});
  expect_close(a.sum(1, true), {9, -2});
  expect_close(a.max(1), {5, 2});
  expect_close(a.min(0), {-4, 2, 0});
  expect_close(a.prod(1), {15, 0});
  expect_close(a.mean(), {7 / 6.f});
  expect_close(a.mean(1), {3, -2 / 3.f});
  expect_close(a.var(1), {4, 28 / 3.f});
  expect_close(a.std(1, false, 0), {std::sqrt(8 / 3.f), std::sqrt(56 / 9.f)});
  expect_close(F({1, 3}).layernorm(), {-1 / std::sqrt(1 + 1e-5f), 1 / std::sqrt(1 + 1e-5f)});
  EXPECT_EQ(a.argmax(1).to_vector<int32_t>(), V<int32_t>({1, 1}));
  EXPECT_EQ(a.argmin(1).to_vector<int32_t>(), V<int32_t>({0, 0}));
  EXPECT_EQ(a.argmax().item<int32_t>(), 1);
  EXPECT_EQ(F({3, 1, 3}).argmax().item<int32_t>(), 0);  // the first of ties
  EXPECT_EQ(I({1, 2, 3, 4}).sum().item<int32_t>(), 10);
  EXPECT_EQ(I({1, 2, 3, 4}).mean().item<float>(), 2.5f);
  EXPECT_EQ((a > 0).sum().item<int32_t>(), 4);
  EXPECT_TRUE((a > -5).all().item<bool>());
  EXPECT_FALSE((a > 5).any().item<bool>());
  Tensor s = a.softmax(1);
  float e0 = std::exp(1.f - 5), e1 = 1, e2 = std::exp(3.f - 5), z = e0 + e1 + e2;
  float f0 = std::exp(-4.f - 2), f1 = 1, f2 = std::exp(0.f - 2), w = f0 + f1 + f2;
  expect_close(s, {e0 / z, e1 / z, e2 / z, f0 / w, f1 / w, f2 / w});
  expect_close(a.log_softmax(1), {std::log(e0 / z), std::log(e1 / z), std::log(e2 / z), std::log(f0 / w), std::log(f1 / w), std::log(f2 / w)});
  expect_close(a.logsumexp(1), {5 + std::log(z), 2 + std::log(w)});
}

TEST(TensorValues, MovementAndIndexing) {
  Tensor a = F({0, 1, 2, 3, 4, 5}, {2, 3});
  expect_close(a.reshape({3, 2}), {0, 1, 2, 3, 4, 5});
  expect_close(a.T(), {0, 3, 1, 4, 2, 5});
  expect_close(a.permute({1, 0}).flatten(), {0, 3, 1, 4, 2, 5});
  expect_close(a.flip(1), {2, 1, 0, 5, 4, 3});
  expect_close(a.flip({0, 1}), {5, 4, 3, 2, 1, 0});
  expect_close(F({1, 2}, {2, 1}).expand({2, 3}), {1, 1, 1, 2, 2, 2});
  expect_close(a.pad({{1, 0}, {0, 0}}, -1.0), {-1, -1, -1, 0, 1, 2, 3, 4, 5});
  expect_close(a.pad({{0, 0}, {-1, 0}}), {1, 2, 4, 5});
  expect_close(a.shrink({{1, 2}, {0, 2}}), {3, 4});
  expect_close(a.repeat({1, 2}), {0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5});
  expect_close(a.cat(a, 1), {0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5});
  expect_close(F({1, 2}).stack(F({3, 4}), 1), {1, 3, 2, 4});
  expect_close(a[1], {3, 4, 5});
  expect_close(a[{Slice{}, int64_t(-1)}], {2, 5});
  expect_close(a[{Slice{}, Slice{{}, {}, -1}}], {2, 1, 0, 5, 4, 3});
  expect_close(F({0, 1, 2, 3, 4, 5, 6})[{Slice{1, {}, 3}}], {1, 4});
  expect_close(F({0, 1, 2, 3, 4, 5})[{Slice{1, 5}}], {1, 2, 3, 4});  // a view of the buffer read back directly
  Tensor a12 = a[{int64_t(1), int64_t(2)}];
  EXPECT_EQ(a12.item<float>(), 5);
  expect_close(a.unsqueeze(0).squeeze(), {0, 1, 2, 3, 4, 5});
}

TEST(TensorValues, MatmulAndCreation) {
  Tensor a = F({1, 2, 3, 4, 5, 6}, {2, 3}), b = F({1, 0, 0, 1, 1, 1}, {3, 2});
  expect_close(a.matmul(b), {4, 5, 10, 11});
  expect_close(F({1, 2, 3}).dot(F({4, 5, 6})), {32});
  expect_close(a.matmul(F({1, 1, 1})), {6, 15});
  EXPECT_EQ(Tensor::arange(1, 10, 3).to_vector<int32_t>(), V<int32_t>({1, 4, 7}));
  EXPECT_EQ(Tensor::arange(5, 0, -2).to_vector<int32_t>(), V<int32_t>({5, 3, 1}));
  expect_close(Tensor::arange(0, 1, 0.25), {0, 0.25, 0.5, 0.75});
  expect_close(Tensor::eye(2, 3), {1, 0, 0, 0, 1, 0});
  expect_close(Tensor::zeros({2}), {0, 0});
  expect_close(Tensor::ones({2, 2}), {1, 1, 1, 1});
  expect_close(Tensor::full({3}, 0.5), {0.5, 0.5, 0.5});
  EXPECT_EQ(Tensor::full({2}, true).to_vector<bool>(), V<bool>({true, true}));
  expect_close(a.ones_like(), {1, 1, 1, 1, 1, 1});
  EXPECT_EQ(Tensor(7).item<int32_t>(), 7);
  EXPECT_EQ(Tensor::from_vector<double>({1.5, 2.5}).dtype(), dtypes::float64);
  EXPECT_EQ(Tensor::from_vector<double>({1.5, 2.5}).to_vector<double>(), V<double>({1.5, 2.5}));
  expect_close(Tensor::from_vector<float>({1.5, -2.25}, {2}, dtypes::half), {1.5, -2.25});
}

TEST(TensorValues, AssignRealizeAndDevices) {
  Tensor w = F({1, 2, 3});
  Tensor alias = w;
  w.assign(w * 2).realize();
  expect_close(alias, {2, 4, 6});
  w.assign(w + 1);
  w.assign(w * 10);
  expect_close(w, {30, 50, 70});
  Tensor m = F({0, 0, 0, 0}, {2, 2});
  Tensor col = m.permute({1, 0});
  col.assign(F({1, 2, 3, 4}, {2, 2}));
  expect_close(m, {1, 3, 2, 4});
  Tensor c = (F({1, 2}) + 1).contiguous();
  Tensor d = c * 3;
  c.realize();
  expect_close(d, {6, 9});
  Tensor::realize({c, d});
  expect_close(F({5, 6}).clone(), {5, 6});
}

TEST(TensorValues, Cumsum) {
  expect_close(F({1, 2, 3, 4}).cumsum(), {1, 3, 6, 10});
  std::vector<float> ones(600, 1.0f), want(600);
  for (int k = 0; k < 600; k++) want[size_t(k)] = float(k + 1);
  expect_close(F(ones).cumsum(), want);  // the two-stage path
}
TEST(TensorValues, ZeroPad) {
  expect_close(F({0, 1, 2, 3, 4, 5}, {2, 3}).pad({{0, 0}, {1, 1}}), {0, 0, 1, 2, 0, 0, 3, 4, 5, 0});
}
TEST(TensorValues, CatUneven) {
  expect_close(F({0, 1, 2, 3, 4, 5}, {2, 3}).cat(F({6, 7, 8}, {1, 3})), {0, 1, 2, 3, 4, 5, 6, 7, 8});
}
TEST(TensorValues, CatManyPieces) {  // past 32 equal pieces the stack selects through a balanced tree
  for (int n : {33, 100, 3000}) {
    Tensor all = Tensor::arange(float(2 * n)).reshape({n, 2}).contiguous().realize();
    std::vector<Tensor> pieces;
    for (int i = n; i-- > 0;) pieces.push_back(all[i]);  // reversed rows: row i lands at n-1-i
    std::vector<float> want;
    for (int i = n; i-- > 0;) want.insert(want.end(), {float(2 * i), float(2 * i + 1)});
    expect_close(Tensor::cat(pieces, 0), want);
  }
}
TEST(TensorValues, BatchMatmulEye) {
  expect_close(F({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2}).matmul(Tensor::eye(2)), {1, 2, 3, 4, 5, 6, 7, 8});
}
TEST(TensorValues, Uint8Wraps) {
  EXPECT_EQ(Tensor::from_vector<uint8_t>({250, 3}, {2}).add(10).to_vector<uint8_t>(), V<uint8_t>({4, 13}));
}
