// Every nn functional / layer call of tests/data/nn_graphs.txt (tinygrad's graphs, from tests/tools/gen_nn_graphs.py) is
// built with tg::Tensor / tg::nn and must give tinygrad's shape, dtype and printed graph (BUFFER slots renumbered).
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "../tensor/tensor_test_util.h"
#include "schedule/rangeify.h"
#include "tensor/tensor_impl.h"
#include "tg/context.h"
#include "tg/nn.h"

using namespace tg;
using tg::testutil::normalize_slots;

namespace {

struct GraphCase {
  std::string name, expr, shape, dtype, str;
};

std::vector<GraphCase> load_cases() {
  std::ifstream f(std::string(TG_TEST_DATA) + "/nn_graphs.txt");
  std::vector<GraphCase> out;
  std::string line;
  bool in = false;
  while (std::getline(f, line)) {
    if (line.rfind("case ", 0) == 0) { out.push_back({line.substr(5)}); in = true; continue; }
    if (!in || line.empty() || line[0] == '#') continue;
    GraphCase& c = out.back();
    if (line == "end") { in = false; if (!c.str.empty()) c.str.pop_back(); }
    else if (line.rfind("expr ", 0) == 0 && c.expr.empty()) c.expr = line.substr(5);
    else if (line.rfind("shape ", 0) == 0 && c.shape.empty()) c.shape = line.substr(6);
    else if (line.rfind("dtype ", 0) == 0 && c.dtype.empty()) c.dtype = line.substr(6);
    else c.str += line + "\n";
  }
  return out;
}

Tensor E(const Shape& s, DType dt = dtypes::float32) { return Tensor::empty(s, dt); }
template <class F> Tensor train(F f) {
  Context c({{"TRAINING", 1}});
  return f();
}
// a layer built from args, its weights replaced by w (and b), applied to x
template <class L, class... A> Tensor fwd(const Tensor& x, Tensor w, std::optional<Tensor> b, A... args) {
  L l(args...);
  l.weight = w;
  if constexpr (requires { l.bias; }) l.bias = b;
  return l(x);
}
nn::BatchNorm bn_with(Tensor w, Tensor b, Tensor rm, Tensor rv) {
  nn::BatchNorm l(2);
  l.weight = w, l.bias = b, l.running_mean = rm, l.running_var = rv;
  return l;
}
using Fn = std::function<Tensor(const Tensor&)>;

using Builder = std::function<Tensor()>;
std::map<std::string, Builder> builders() {
  std::map<std::string, Builder> m;
#define CASE(name, ...)                                                                                   \
  m[name] = [] {                                                                                          \
    Tensor::manual_seed(0);                                                                               \
    set_rng_state("CPU", E({2}, dtypes::uint32), E({2}, dtypes::uint32));                                \
    Tensor x = E({1, 2, 5, 5}), w = E({3, 2, 3, 3}), a = E({2, 3}), y = E({2}, dtypes::int32);           \
    (void)x, (void)w, (void)a, (void)y;                                                                   \
    return __VA_ARGS__;                                                                                   \
  }
  // conv
  CASE("conv2d", x.conv2d(w)); CASE("conv2d_bias", x.conv2d(w, E({3}))); CASE("conv2d_stride", x.conv2d(w, std::nullopt, 1, 2));
  CASE("conv2d_stride_tuple", x.conv2d(w, std::nullopt, 1, {2, 1})); CASE("conv2d_pad", x.conv2d(w, std::nullopt, 1, 1, 1, 1));
  CASE("conv2d_pad_hw", x.conv2d(w, std::nullopt, 1, 1, 1, {1, 2})); CASE("conv2d_pad_sides", x.conv2d(w, std::nullopt, 1, 1, 1, {1, 0, 2, 1}));
  CASE("conv2d_dilation", x.conv2d(w, std::nullopt, 1, 1, 2)); CASE("conv2d_groups", E({1, 4, 5, 5}).conv2d(E({4, 2, 3, 3}), std::nullopt, 2));
  CASE("conv1d", E({2, 2, 7}).conv2d(E({3, 2, 3}), std::nullopt, 1, 1, 1, 1));
  CASE("conv2d_neg_pad", x.conv2d(w, std::nullopt, 1, 1, 1, {-1, 1, 0, 0}));
  CASE("conv_transpose2d", x.conv_transpose2d(E({2, 3, 3, 3}))); CASE("conv_transpose2d_bias", x.conv_transpose2d(E({2, 3, 3, 3}), E({3})));
  CASE("conv_transpose2d_stride", x.conv_transpose2d(E({2, 3, 3, 3}), std::nullopt, 1, 2, 1, 1, 1));
  CASE("conv_transpose2d_groups", E({1, 4, 3, 3}).conv_transpose2d(E({4, 1, 2, 2}), std::nullopt, 2, 1, 2));
  // pooling
  CASE("max_pool2d", x.max_pool2d()); CASE("max_pool2d_k3s1", x.max_pool2d(3, IntList(1))); CASE("max_pool2d_pad", x.max_pool2d(3, IntList(2), 1, 1));
  CASE("max_pool2d_ceil", x.max_pool2d({2, 2}, std::nullopt, 1, 0, true)); CASE("max_pool2d_dilation", x.max_pool2d(2, IntList(1), 2));
  CASE("max_pool2d_indices", x.max_pool2d_with_indices().second); CASE("max_pool1d", E({1, 2, 7}).max_pool2d(IntList(std::vector<int64_t>{3}), IntList(2)));
  CASE("avg_pool2d", x.avg_pool2d()); CASE("avg_pool2d_pad", x.avg_pool2d(3, IntList(2), 1, 1));
  CASE("avg_pool2d_nocount", x.avg_pool2d(3, IntList(2), 1, 1, false, false)); CASE("avg_pool2d_ceil", x.avg_pool2d({2, 2}, std::nullopt, 1, 0, true));
  CASE("avg_pool2d_ceil_pad", x.avg_pool2d(3, IntList(2), 1, 1, true));
  // indexing-style
  CASE("dropout_eval", a.dropout(0.5)); CASE("dropout_train", train([&] { return a.dropout(0.25); }));
  CASE("dropout_one", train([&] { return a.dropout(1.0); }));
  CASE("one_hot", y.one_hot(4)); CASE("gather", a.gather(1, E({2, 2}, dtypes::int32))); CASE("gather_0", a.gather(0, E({1, 3}, dtypes::int32)));
  CASE("sequential", a.sequential({[](const Tensor& t) { return t * 2; }, [](const Tensor& t) { return t.relu(); }}));
  // normalization
  CASE("batchnorm", x.batchnorm(E({2}), E({2}), E({2}), E({2}))); CASE("batchnorm_noaffine", x.batchnorm(std::nullopt, std::nullopt, E({2}), E({1, 2, 1, 1})));
  CASE("layernorm_layer", fwd<nn::LayerNorm>(a, E({3}), E({3}), 3));
  CASE("layernorm_2d_shape", fwd<nn::LayerNorm>(E({4, 2, 3}), E({2, 3}), E({2, 3}), IntList{2, 3}));
  CASE("rmsnorm_layer", fwd<nn::RMSNorm>(a, E({3}), std::nullopt, 3)); CASE("groupnorm_layer", fwd<nn::GroupNorm>(E({2, 4, 3}), E({4}), E({4}), 2, 4));
  CASE("batchnorm_eval", bn_with(E({2}), E({2}), E({2}), E({2}))(x));
  CASE("batchnorm_train_out", train([&] { return bn_with(E({2}), E({2}), E({2}), E({2}))(x); }));
  CASE("batchnorm_train_stats", train([&] { auto l = bn_with(E({2}), E({2}), E({2}), E({2})); l(x); return *l.running_var; }));
  // layers
  CASE("linear_layer", fwd<nn::Linear>(a, E({4, 3}), E({4}), 3, 4)); CASE("linear_nobias", fwd<nn::Linear>(a, E({4, 3}), std::nullopt, 3, 4, false));
  CASE("conv2d_layer", fwd<nn::Conv2d>(x, E({3, 2, 3, 3}), E({3}), 2, 3, 3, 1, 1));
  CASE("conv2d_same", fwd<nn::Conv2d>(x, E({3, 2, 4, 4}), std::nullopt, 2, 3, 4, 1, "same", 1, 1, false));
  CASE("conv1d_layer", fwd<nn::Conv1d>(E({1, 2, 7}), E({3, 2, 3}), E({3}), 2, 3, 3, 2));
  CASE("conv_transpose2d_layer", fwd<nn::ConvTranspose2d>(x, E({2, 3, 3, 3}), E({3}), 2, 3, 3, 2));
  CASE("embedding_layer", fwd<nn::Embedding>(E({2, 4}, dtypes::int32), E({5, 3}), std::nullopt, 5, 3));
  // losses
  CASE("sparse_ce", a.sparse_categorical_crossentropy(y)); CASE("sparse_ce_ignore", a.sparse_categorical_crossentropy(y, 1));
  CASE("sparse_ce_smooth_sum", a.sparse_categorical_crossentropy(y, -1, 0.1, "sum"));
  CASE("sparse_ce_none", a.sparse_categorical_crossentropy(y, -1, 0.0, "none"));
  CASE("cross_entropy_idx", a.cross_entropy(y)); CASE("cross_entropy_probs", a.cross_entropy(E({2, 3}), "sum", 0.2));
  CASE("cross_entropy_1d", E({3}).cross_entropy(E({3}), "none"));
  CASE("bce", a.sigmoid().binary_crossentropy(E({2, 3}))); CASE("bce_none", a.sigmoid().binary_crossentropy(E({2, 3}), "none"));
  CASE("bce_logits", a.binary_crossentropy_logits(E({2, 3}))); CASE("bce_logits_pos", a.binary_crossentropy_logits(E({2, 3}), "sum", E({3})));
  // attention
  CASE("sdpa", E({2, 3, 4}).scaled_dot_product_attention(E({2, 5, 4}), E({2, 5, 6})));
  CASE("sdpa_mask_bool", E({2, 3, 4}).scaled_dot_product_attention(E({2, 5, 4}), E({2, 5, 6}), E({3, 5}, dtypes::bool_)));
  CASE("sdpa_mask_float", E({2, 3, 4}).scaled_dot_product_attention(E({2, 5, 4}), E({2, 5, 6}), E({3, 5})));
  CASE("sdpa_causal", E({1, 2, 4, 3}).scaled_dot_product_attention(E({1, 2, 4, 3}), E({1, 2, 4, 3}), std::nullopt, 0.0, true));
  CASE("sdpa_gqa", E({1, 4, 3, 2}).scaled_dot_product_attention(E({1, 2, 3, 2}), E({1, 2, 3, 2}), std::nullopt, 0.0, false, true));
  CASE("sdpa_half", E({2, 3, 4}, dtypes::half).scaled_dot_product_attention(E({2, 3, 4}, dtypes::half), E({2, 3, 4}, dtypes::half)));
  // activations
  CASE("leaky_relu", a.leaky_relu()); CASE("leaky_relu_slope", a.leaky_relu(0.2)); CASE("elu", a.elu()); CASE("elu_alpha", a.elu(0.5));
  CASE("softplus", a.softplus()); CASE("softplus_beta", a.softplus(2.0)); CASE("logsigmoid", a.logsigmoid()); CASE("hardtanh", a.hardtanh());
  CASE("hardtanh_range", a.hardtanh(-2.5, 0.5)); CASE("hardswish", a.hardswish()); CASE("hardsigmoid", a.hardsigmoid()); CASE("mish", a.mish());
  // initializers
  CASE("glorot_uniform", Tensor::glorot_uniform({3, 4})); CASE("kaiming_uniform", Tensor::kaiming_uniform({4, 2, 3}));
  CASE("scaled_uniform", Tensor::scaled_uniform({2, 3}));
#undef CASE
  return m;
}

}  // namespace

TEST(NnGraphs, MatchTinygrad) {
  auto cases = load_cases();
  auto b = builders();
  // conv2d is tinygrad's graph inside a FUNCTION that carries its own gradient: the inlined graph is tinygrad's
  // (its channel-last copies of the weights and gradient are ours: SIMD=0 leaves them out)
  for (auto& [name, f] : b) f = [f = f] { Context tinygrad_layout({{"SIMD", 0}}); return wrap(inline_functions(uop_of(f()))); };
  ASSERT_GE(cases.size(), 80u);
  testutil::expect_graphs_match("nn graphs", cases, b);
}
