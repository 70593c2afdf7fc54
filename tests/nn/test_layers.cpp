// nn layers and functionals without an oracle library: error messages on bad input, initial values (shapes, ranges,
// which tensors are parameters), state names, and dropout's masking. Values against libtorch are in
// tests/conformance/test_nn.cpp, graphs against tinygrad in test_layers_graphs.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "../tensor/tensor_test_util.h"
#include "tg/context.h"
#include "tg/nn.h"

using namespace tg;
using tg::testutil::error_of;

namespace {

Tensor E(const Shape& s, DType dt = dtypes::float32) { return Tensor::zeros(s, dt); }

// every fragment must be in the message (op name, shapes)
::testing::AssertionResult has_all(const std::string& msg, std::initializer_list<const char*> parts) {
  for (auto p : parts)
    if (msg.find(p) == std::string::npos) return ::testing::AssertionFailure() << "'" << p << "' not in: " << msg;
  return ::testing::AssertionSuccess();
}

struct Collect : nn::StateVisitor {
  std::vector<std::string> names;
  std::map<std::string, Tensor> tensors;
  void tensor(const std::string& name, Tensor& t) override { names.push_back(name), tensors.emplace(name, t); }
};
template <class M> Collect state_of(M& m) {
  Collect c;
  m.visit_state(c);
  return c;
}

void expect_in_range(const Tensor& t, double bound) {
  auto v = t.to_vector<float>();
  ASSERT_FALSE(v.empty());
  float lo = v[0], hi = v[0];
  for (float x : v) lo = std::min(lo, x), hi = std::max(hi, x);
  EXPECT_GE(lo, -bound) << t.shape_str();
  EXPECT_LT(hi, bound) << t.shape_str();
  if (v.size() >= 8) {
    EXPECT_GT(hi - lo, bound * 0.5) << "values should spread over the range " << t.shape_str();
  }
}

}  // namespace

// ***** errors name the op and the shapes *****

TEST(NnErrors, Functionals) {
  Tensor x = E({1, 2, 5, 5}), w = E({3, 2, 3, 3});
  EXPECT_TRUE(has_all(error_of([&] { x.conv2d(E({3, 4, 3, 3})); }), {"conv2d", "(1, 2, 5, 5)", "(3, 4, 3, 3)"}));
  EXPECT_TRUE(has_all(error_of([&] { x.conv2d(E({3, 2, 3})); }), {"conv2d", "(1, 2, 5, 5)", "(3, 2, 3)"}));
  EXPECT_TRUE(has_all(error_of([&] { x.conv2d(w, std::nullopt, 2); }), {"conv2d", "groups=2"}));
  EXPECT_TRUE(has_all(error_of([&] { x.conv2d(w, E({4})); }), {"conv2d", "bias", "(4,)"}));
  EXPECT_TRUE(has_all(error_of([&] { x.conv2d(w, std::nullopt, 1, 0); }), {"conv2d", "stride", "positive"}));
  EXPECT_TRUE(has_all(error_of([&] { x.conv2d(E({3, 2, 6, 6})); }), {"conv2d", "(6, 6)", "larger"}));
  EXPECT_TRUE(has_all(error_of([&] { x.conv2d(w, std::nullopt, 1, 1, 1, {1, 2, 3}); }), {"conv2d", "padding", "(1, 2, 3)"}));
  EXPECT_TRUE(has_all(error_of([&] { x.conv2d(w, std::nullopt, 1, {1, 1, 1}); }), {"conv2d", "stride", "(1, 1, 1)"}));
  EXPECT_TRUE(has_all(error_of([&] { x.conv_transpose2d(E({3, 2, 3, 3})); }), {"conv_transpose2d", "(1, 2, 5, 5)", "(3, 2, 3, 3)"}));
  EXPECT_TRUE(has_all(error_of([&] { x.conv_transpose2d(E({2, 2, 3, 3}), std::nullopt, 1, 0); }), {"conv_transpose2d", "stride"}));
  EXPECT_TRUE(has_all(error_of([&] { x.max_pool2d(6); }), {"max_pool2d", "(6, 6)", "(1, 2, 5, 5)"}));
  EXPECT_TRUE(has_all(error_of([&] { x.max_pool2d(2, IntList(0)); }), {"max_pool2d", "stride"}));
  EXPECT_TRUE(has_all(error_of([&] { x.max_pool2d(2, IntList(0), 1, 0, true); }), {"max_pool2d", "stride"}));
  EXPECT_TRUE(has_all(error_of([&] { x.avg_pool2d({2, 2}, IntList({1, 1, 1}), 1, 0, true); }), {"avg_pool2d", "stride (1, 1, 1)", "(2, 2)"}));
  EXPECT_TRUE(has_all(error_of([&] { x.max_pool2d(IntList(std::vector<int64_t>{})); }), {"max_pool2d", "kernel ()"}));
  EXPECT_TRUE(has_all(error_of([&] { x.avg_pool2d(2, std::nullopt, 1, {1, 1, 1}); }), {"avg_pool2d", "padding"}));
  EXPECT_TRUE(has_all(error_of([&] { E({5}).max_pool2d(); }), {"max_pool2d", "(5,)"}));
  EXPECT_TRUE(has_all(error_of([&] { E({3}).one_hot(3); }), {"one_hot", "float"}));
  EXPECT_TRUE(has_all(error_of([&] { E({3}, dtypes::int32).one_hot(-2); }), {"one_hot", "-2"}));
  EXPECT_TRUE(has_all(error_of([&] { E({3, 4}).gather(1, E({3}, dtypes::int32)); }), {"gather", "(3, 4)", "(3,)"}));
  EXPECT_TRUE(has_all(error_of([&] { E({3, 4}).gather(1, E({4, 2}, dtypes::int32)); }), {"gather", "(3, 4)", "(4, 2)"}));
  EXPECT_TRUE(has_all(error_of([&] { E({3, 4}).gather(1, E({3, 2})); }), {"gather", "float"}));
  EXPECT_TRUE(has_all(error_of([&] { E({3, 4}).gather(2, E({3, 2}, dtypes::int32)); }), {"gather", "dim 2"}));
  EXPECT_TRUE(has_all(error_of([&] { x.batchnorm(std::nullopt, std::nullopt, E({3}), E({2})); }), {"batchnorm", "(3,)", "(1, 2, 5, 5)"}));
  EXPECT_TRUE(has_all(error_of([&] { E({1, 2}).dropout(1.5); }), {"dropout", "1.5"}));
}

TEST(NnErrors, Losses) {
  Tensor logits = E({4, 3}), y = E({4}, dtypes::int32);
  EXPECT_TRUE(has_all(error_of([&] { logits.sparse_categorical_crossentropy(E({3}, dtypes::int32)); }), {"sparse_categorical_crossentropy", "(4, 3)", "(3,)"}));
  EXPECT_TRUE(has_all(error_of([&] { logits.sparse_categorical_crossentropy(y, -1, 1.5); }), {"sparse_categorical_crossentropy", "label_smoothing"}));
  EXPECT_TRUE(has_all(error_of([&] { logits.sparse_categorical_crossentropy(y, -1, 0.0, "avg"); }), {"sparse_categorical_crossentropy", "avg"}));
  EXPECT_TRUE(has_all(error_of([&] { logits.sparse_categorical_crossentropy(E({4})); }), {"sparse_categorical_crossentropy", "float"}));
  EXPECT_TRUE(has_all(error_of([&] { logits.cross_entropy(E({5}, dtypes::int32)); }), {"cross_entropy", "(4, 3)", "(5,)"}));
  EXPECT_TRUE(has_all(error_of([&] { logits.cross_entropy(y, "mean", -0.1); }), {"cross_entropy", "label_smoothing"}));
  EXPECT_TRUE(has_all(error_of([&] { logits.binary_crossentropy(logits, "max"); }), {"binary_crossentropy", "max"}));
  EXPECT_TRUE(has_all(error_of([&] { logits.binary_crossentropy_logits(logits, "max"); }), {"binary_crossentropy_logits", "max"}));
  Tensor q = E({2, 3, 4});
  EXPECT_TRUE(has_all(error_of([&] { q.scaled_dot_product_attention(q, q, E({3, 3}), 0.0, true); }), {"scaled_dot_product_attention", "is_causal"}));
  EXPECT_TRUE(has_all(error_of([&] { q.scaled_dot_product_attention(E({2, 3, 5}), q); }), {"scaled_dot_product_attention", "(2, 3, 4)", "(2, 3, 5)"}));
  EXPECT_TRUE(has_all(error_of([&] { E({1, 3, 2, 4}).scaled_dot_product_attention(E({1, 2, 2, 4}), E({1, 2, 2, 4}), std::nullopt, 0, false, true); }),
                      {"scaled_dot_product_attention", "enable_gqa", "(1, 3, 2, 4)"}));
}

TEST(NnErrors, Layers) {
  Tensor::manual_seed(0);
  nn::Linear lin(3, 4);
  EXPECT_TRUE(has_all(error_of([&] { lin(E({2, 5})); }), {"Linear", "(2, 5)", "in_features=3"}));
  nn::Conv2d conv(2, 3, 3);
  EXPECT_TRUE(has_all(error_of([&] { conv(E({1, 4, 5, 5})); }), {"conv2d", "(1, 4, 5, 5)", "(3, 2, 3, 3)"}));
  EXPECT_TRUE(has_all(error_of([&] { conv(E({1, 2, 2, 2})); }), {"conv2d", "larger", "(1, 2, 2, 2)"}));
  EXPECT_TRUE(has_all(error_of([&] { nn::Conv2d(3, 4, 3, 1, 0, 1, 2); }), {"Conv2d", "groups=2"}));
  EXPECT_TRUE(has_all(error_of([&] { nn::Conv2d(2, 2, 3, 2, "same"); }), {"Conv2d", "same", "strided"}));
  EXPECT_TRUE(has_all(error_of([&] { nn::Conv2d(2, 2, 3, 1, "valid"); }), {"Conv2d", "valid"}));
  nn::BatchNorm bn(3);
  EXPECT_TRUE(has_all(error_of([&] { bn(E({2, 4, 2})); }), {"BatchNorm", "(2, 4, 2)", "3"}));
  EXPECT_TRUE(has_all(error_of([&] { bn(E({3})); }), {"BatchNorm", "(3,)"}));
  {
    Context train({{"TRAINING", 1}});
    EXPECT_TRUE(has_all(error_of([&] { bn(E({1, 3})); }), {"BatchNorm", "(1, 3)"}));
  }
  nn::LayerNorm ln({2, 3});
  EXPECT_TRUE(has_all(error_of([&] { ln(E({4, 3, 2})); }), {"LayerNorm", "(4, 3, 2)", "(2, 3)"}));
  nn::RMSNorm rms(4);
  EXPECT_TRUE(has_all(error_of([&] { rms(E({2, 3})); }), {"RMSNorm", "(2, 3)", "dim=4"}));
  nn::GroupNorm gn(2, 4);
  EXPECT_TRUE(has_all(error_of([&] { gn(E({2, 6, 3})); }), {"GroupNorm", "(2, 6, 3)", "4"}));
  EXPECT_TRUE(has_all(error_of([&] { nn::GroupNorm(3, 4); }), {"GroupNorm", "num_groups=3"}));
  nn::Embedding emb(5, 3);
  EXPECT_TRUE(has_all(error_of([&] { emb(E({2, 2})); }), {"Embedding", "float", "(2, 2)"}));
}

// ***** initial values, parameters and state names, as tinygrad's nn *****

TEST(NnLayers, LinearAndConvInit) {
  Tensor::manual_seed(1);
  nn::Linear lin(16, 8);
  EXPECT_EQ(lin.weight.shape(), (Shape{8, 16}));
  ASSERT_TRUE(lin.bias);
  EXPECT_EQ(lin.bias->shape(), (Shape{8}));
  expect_in_range(lin.weight, 1 / std::sqrt(16.0));
  expect_in_range(*lin.bias, 1 / std::sqrt(16.0));
  EXPECT_FALSE(nn::Linear(4, 2, false).bias.has_value());

  nn::Conv2d conv(4, 6, 3, 1, 0, 1, 2);
  EXPECT_EQ(conv.weight.shape(), (Shape{6, 2, 3, 3}));
  expect_in_range(conv.weight, 1 / std::sqrt(4.0 * 9));
  expect_in_range(*conv.bias, 1 / std::sqrt(4.0 * 9));
  EXPECT_EQ(nn::Conv2d(2, 3, {2, 4}).weight.shape(), (Shape{3, 2, 2, 4}));
  nn::Conv1d c1(2, 5, 3);
  EXPECT_EQ(c1.weight.shape(), (Shape{5, 2, 3}));
  EXPECT_EQ(c1(E({1, 2, 6})).shape(), (Shape{1, 5, 4}));
  nn::ConvTranspose2d ct(4, 6, 3, 2, 0, 0, 1, 2);
  EXPECT_EQ(ct.weight.shape(), (Shape{4, 3, 3, 3}));
  EXPECT_EQ(ct.bias->shape(), (Shape{6}));
  expect_in_range(ct.weight, 1 / std::sqrt(4.0 * 9));
  EXPECT_EQ(ct(E({1, 4, 3, 3})).shape(), (Shape{1, 6, 7, 7}));
  nn::ConvTranspose1d ct1(2, 3, 4);
  EXPECT_EQ(ct1.weight.shape(), (Shape{2, 3, 4}));
  // 'same' keeps the spatial size, also for even kernels (the extra pad goes after)
  nn::Conv2d same(2, 3, 4, 1, "SAME");
  EXPECT_EQ(same(E({1, 2, 5, 7})).shape(), (Shape{1, 3, 5, 7}));
}

TEST(NnLayers, InitializersAndEmbedding) {
  Tensor::manual_seed(2);
  expect_in_range(Tensor::glorot_uniform({6, 10}), std::sqrt(6.0 / 16));
  expect_in_range(Tensor::kaiming_uniform({5, 4, 3}), std::sqrt(6.0 / (1 + 0.01 * 0.01) / 12));
  expect_in_range(Tensor::kaiming_uniform({5, 4}, 2.0), std::sqrt(6.0 / 5 / 4));
  expect_in_range(Tensor::scaled_uniform({4, 5}), 1 / std::sqrt(20.0));
  EXPECT_EQ(Tensor::glorot_uniform({3, 4}, dtypes::float16).dtype(), dtypes::float16);
  nn::Embedding emb(10, 4);
  EXPECT_EQ(emb.weight.shape(), (Shape{10, 4}));
  expect_in_range(emb.weight, std::sqrt(6.0 / 14));
  // an embedding row is the weight row of its index
  Tensor idx = Tensor::from_vector<int32_t>({3, 0, 9, 3}, {2, 2});
  auto out = emb(idx).to_vector<float>();
  auto wv = emb.weight.to_vector<float>();
  std::vector<int> rows{3, 0, 9, 3};
  ASSERT_EQ(out.size(), 16u);
  for (size_t r = 0; r < 4; r++)
    for (size_t j = 0; j < 4; j++) EXPECT_EQ(out[r * 4 + j], wv[size_t(rows[r]) * 4 + j]);
}

TEST(NnLayers, NormInitAndBuffers) {
  nn::BatchNorm2d bn(3);
  auto s = state_of(bn);
  EXPECT_EQ(s.names, (std::vector<std::string>{"weight", "bias", "num_batches_tracked", "running_mean", "running_var"}));
  EXPECT_EQ(bn.weight->to_vector<float>(), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(bn.bias->to_vector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(bn.running_mean->to_vector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(bn.running_var->to_vector<float>(), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(bn.num_batches_tracked.dtype(), dtypes::int64);
  EXPECT_EQ(bn.num_batches_tracked.shape(), Shape{});
  EXPECT_TRUE(bn.weight->is_param() && bn.bias->is_param());
  EXPECT_FALSE(bn.running_mean->is_param() || bn.running_var->is_param() || bn.num_batches_tracked.is_param());
  nn::BatchNorm1d plain(4, 1e-5, false, false);
  EXPECT_EQ(state_of(plain).names, (std::vector<std::string>{"num_batches_tracked"}));
  // eval without statistics of its own: the batch's
  EXPECT_EQ(plain(E({2, 4})).shape(), (Shape{2, 4}));

  nn::LayerNorm ln({2, 3});
  EXPECT_EQ(state_of(ln).names, (std::vector<std::string>{"weight", "bias"}));
  EXPECT_EQ(ln.weight->shape(), (Shape{2, 3}));
  EXPECT_FALSE(nn::LayerNorm(3, 1e-5, false).weight.has_value());
  nn::RMSNorm rms(5);
  EXPECT_EQ(state_of(rms).names, (std::vector<std::string>{"weight"}));
  EXPECT_EQ(rms.weight->to_vector<float>(), std::vector<float>(5, 1.0f));
  nn::GroupNorm gn(2, 6);
  EXPECT_EQ(gn.weight->shape(), (Shape{6}));
  EXPECT_EQ(state_of(gn).names, (std::vector<std::string>{"weight", "bias"}));
  // RMSNorm normalizes in float32 and casts back to the input dtype; the float32 weight then promotes, as in tinygrad
  EXPECT_EQ(nn::RMSNorm(5, 1e-6, false)(E({2, 5}, dtypes::float16)).dtype(), dtypes::float16);
  EXPECT_EQ(rms(E({2, 5}, dtypes::float16)).dtype(), dtypes::float32);
}

TEST(NnLayers, NestedStateNames) {
  struct Net : nn::Module {
    nn::Conv2d c{1, 2, 3};
    nn::BatchNorm2d bn{2};
    std::vector<nn::Linear> heads{nn::Linear(2, 2), nn::Linear(2, 1, false)};
    void visit_state(nn::StateVisitor& v) override { v("c", c), v("bn", bn), v("heads", heads); }
  } net;
  EXPECT_EQ(state_of(net).names, (std::vector<std::string>{"c.weight", "c.bias", "bn.weight", "bn.bias", "bn.num_batches_tracked", "bn.running_mean",
                                                           "bn.running_var", "heads.0.weight", "heads.0.bias", "heads.1.weight"}));
}

TEST(NnLayers, BatchNormTrainingCountsSteps) {
  nn::BatchNorm bn(2);
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
  {
    Context train({{"TRAINING", 1}});
    bn(x).realize();
    bn(x).realize();
  }
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 2);
  // eval does not touch the statistics
  auto rm = bn.running_mean->to_vector<float>();
  bn(x).realize();
  EXPECT_EQ(bn.running_mean->to_vector<float>(), rm);
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 2);
}

// ***** dropout *****

TEST(NnFunctionals, Dropout) {
  Tensor x = Tensor::arange(1, 1001, 1, dtypes::float32).reshape({10, 100});
  auto xv = x.to_vector<float>();
  EXPECT_EQ(x.dropout(0.5).to_vector<float>(), xv) << "identity outside training";
  Context train({{"TRAINING", 1}});
  EXPECT_EQ(x.dropout(0.0).to_vector<float>(), xv);
  EXPECT_EQ(x.dropout(1.0).to_vector<float>(), std::vector<float>(1000, 0.0f));
  Tensor::manual_seed(7);
  auto a = x.dropout(0.25).to_vector<float>();
  int zeros = 0;
  for (size_t i = 0; i < a.size(); i++) {
    if (a[i] == 0) zeros++;
    else EXPECT_FLOAT_EQ(a[i], xv[i] / 0.75f);
  }
  EXPECT_GT(zeros, 150);
  EXPECT_LT(zeros, 350);
  // the same seed draws the same mask; the next draw another
  Tensor::manual_seed(7);
  EXPECT_EQ(x.dropout(0.25).to_vector<float>(), a);
  EXPECT_NE(x.dropout(0.25).to_vector<float>(), a);
}
