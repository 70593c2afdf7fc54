// Every Tensor expression of tests/data/tensor_graphs.txt (tinygrad's graphs, from tests/tools/gen_tensor_graphs.py) is
// built with tg::Tensor and must give tinygrad's shape, dtype and printed graph (BUFFER slots renumbered on both sides).
#include <gtest/gtest.h>

#include "tg/context.h"

#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "tensor/tensor_impl.h"
#include "tensor_test_util.h"
#include "uop/movement.h"

using namespace tg;
using tg::testutil::normalize_slots;

namespace {

struct GraphCase {
  std::string name, expr, shape, dtype, str;
};

std::vector<GraphCase> load_cases() {
  std::ifstream f(std::string(TG_TEST_DATA) + "/tensor_graphs.txt");
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

using Builder = std::function<Tensor()>;
std::map<std::string, Builder> builders() {
  std::map<std::string, Builder> m;
  // the inputs of every case, as the generator makes them (fresh buffers per case)
#define CASE(name, ...)                                                                                                 \
  m[name] = [] {                                                                                                        \
    Tensor a = E({2, 3}), b = E({2, 3}), i = E({4}, dtypes::int32), j = E({4}, dtypes::int32), h = E({3}, dtypes::half), \
           f = E({3});                                                                                                  \
    (void)a, (void)b, (void)i, (void)j, (void)h, (void)f;                                                               \
    Tensor::manual_seed(0);                                                                                             \
    set_rng_state("CPU", E({2}, dtypes::uint32), E({2}, dtypes::uint32));                                              \
    return __VA_ARGS__;                                                                                                 \
  }
  // binary ops, broadcasting and promotion
  CASE("add", a + b); CASE("add_bcast", E({3, 1}) + E({1, 4})); CASE("add_int_lit", a + 1); CASE("add_float_lit", a + 2.5);
  CASE("int_plus_float_lit", i + 1.5); CASE("int_plus_int_lit", i + 3); CASE("radd", 2 + a); CASE("sub", a - b); CASE("rsub", 1 - a);
  CASE("mul_half_float", h * f); CASE("mul_half_lit", h * 2.0); CASE("mul_int_float", i * E({4})); CASE("div", a / b); CASE("div_int", i / j);
  CASE("div_int_lit", i / 2); CASE("rdiv", 1 / a); CASE("idiv_int", i.idiv(3)); CASE("idiv_float", a.idiv(b)); CASE("mod_int", i % 3);
  CASE("mod_float", a % b); CASE("pow_lit", a.pow(2)); CASE("pow_float_lit", a.pow(0.5)); CASE("pow_tensor", a.pow(b)); CASE("rpow", a.pow(2, true));
  CASE("maximum", a.maximum(b)); CASE("maximum_lit", a.maximum(0)); CASE("minimum", a.minimum(b)); CASE("minimum_int", i.minimum(j));
  CASE("int_plus_bool", i + (i > 2)); CASE("bool_and", (a > 0) & (b > 0)); CASE("bool_or_lit", (a > 0) | true); CASE("bool_add", (a > 0) + (b > 0));
  CASE("and_int", i & j); CASE("or_int_lit", i | 5); CASE("xor_int", i ^ j); CASE("lshift", i << 2); CASE("rshift", i >> 1);
  CASE("uint8_lit", E({4}, dtypes::uint8) + 300); CASE("int8_int32", E({4}, dtypes::int8) * i);
  // comparisons
  CASE("lt", a < b); CASE("gt", a > b); CASE("le", a <= b); CASE("ge", a >= b); CASE("eq", a == b); CASE("ne", a != b);
  CASE("lt_lit", a < 0.5); CASE("gt_int_lit", i > 2); CASE("eq_lit", i == 1); CASE("rlt_lit", 2 > a);
  // unary
  CASE("neg", -a); CASE("neg_int", -i); CASE("neg_bool", -(a > 0)); CASE("logical_not", (a > 0).logical_not()); CASE("bitwise_not", ~i);
  CASE("bitwise_not_u8", ~E({4}, dtypes::uint8)); CASE("reciprocal", a.reciprocal()); CASE("sqrt", a.sqrt()); CASE("rsqrt", a.rsqrt());
  CASE("exp", a.exp()); CASE("exp_half", h.exp()); CASE("exp_int", i.exp()); CASE("exp2", a.exp2()); CASE("log", a.log()); CASE("log2", a.log2());
  CASE("sin", a.sin()); CASE("cos", a.cos()); CASE("tan", a.tan()); CASE("abs", a.abs()); CASE("abs_int", i.abs()); CASE("sign", a.sign());
  CASE("trunc", a.trunc()); CASE("floor", a.floor()); CASE("ceil", a.ceil()); CASE("round", a.round()); CASE("relu", a.relu());
  CASE("sigmoid", a.sigmoid()); CASE("tanh", a.tanh()); CASE("gelu", a.gelu()); CASE("silu", a.silu()); CASE("square", a.square());
  CASE("clamp", a.clamp(-1, 1)); CASE("clamp_min", a.clamp(0.5)); CASE("clamp_int", i.clamp(0, 3));
  CASE("where", (a > 0).where(a, b)); CASE("where_lits", (a > 0).where(1, 0.5)); CASE("where_int_float", (i > 0).where(i, 1.5));
  CASE("cast", a.cast(dtypes::int32)); CASE("cast_same", a.cast(dtypes::float32)); CASE("bitcast", a.bitcast(dtypes::int32));
  CASE("cast_half", i.cast(dtypes::half));
  // reduce
  CASE("sum", a.sum()); CASE("sum_axis", a.sum(1)); CASE("sum_keepdim", a.sum(0, true)); CASE("sum_axes", E({2, 3, 4}).sum({0, 2}));
  CASE("sum_neg_axis", a.sum(-1)); CASE("sum_half", h.sum()); CASE("sum_int", i.sum()); CASE("sum_bool", (a > 0).sum());
  CASE("sum_dtype", a.sum({}, false, dtypes::half)); CASE("sum_one_axis", E({3, 1}).sum(1)); CASE("max", a.max()); CASE("max_axis", a.max(1));
  CASE("min", a.min(0)); CASE("min_int", i.min()); CASE("prod", a.prod(1)); CASE("mean", a.mean()); CASE("mean_axis", a.mean(1, true));
  CASE("mean_int", i.mean()); CASE("var", a.var(1)); CASE("var_all", a.var()); CASE("std", a.std(0, true)); CASE("std_int", i.std()); CASE("any", a.any()); CASE("all", (a > 0).all(1));
  CASE("argmax", a.argmax()); CASE("argmax_axis", a.argmax(1)); CASE("argmax_keepdim", a.argmax(0, true)); CASE("argmin", a.argmin(1));
  CASE("softmax", a.softmax()); CASE("softmax_axis0", a.softmax(0)); CASE("log_softmax", a.log_softmax(1)); CASE("logsumexp", a.logsumexp(1));
  CASE("logsumexp_all", a.logsumexp()); CASE("cumsum", a.cumsum(1)); CASE("cumsum_0", E({5}).cumsum());
  // movement
  CASE("reshape", a.reshape({3, 2})); CASE("reshape_infer", a.reshape({-1})); CASE("expand", E({3, 1}).expand({3, 4}));
  CASE("expand_left", f.expand({2, -1})); CASE("permute", E({2, 3, 4}).permute({2, 0, 1})); CASE("pad", a.pad({{1, 0}, {0, 2}}));
  CASE("pad_value", a.pad({{1, 1}, {0, 0}}, 2.0)); CASE("pad_neg", a.pad({{0, 0}, {-1, 1}})); CASE("shrink", a.shrink({{0, 1}, {1, 3}}));
  CASE("flip", a.flip(1)); CASE("flip_both", a.flip({0, 1})); CASE("transpose", a.transpose()); CASE("T", E({2, 3, 4}).transpose(0, 2));
  CASE("squeeze", E({3, 1}).squeeze()); CASE("squeeze_dim", E({1, 3, 1}).squeeze(0)); CASE("unsqueeze", a.unsqueeze(1));
  CASE("unsqueeze_neg", a.unsqueeze(-1)); CASE("flatten", E({2, 3, 4}).flatten()); CASE("flatten_1", E({2, 3, 4}).flatten(1));
  CASE("unflatten", E({6}).unflatten(0, {2, 3})); CASE("cat", a.cat(b)); CASE("cat_dim1", a.cat(E({2, 4}), 1)); CASE("cat_three", Tensor::cat({a, b, a}, 0));
  CASE("cat_uneven", E({2, 3}).cat(E({1, 3}))); CASE("stack", a.stack(b)); CASE("stack_dim1", a.stack(b, 1)); CASE("stack_mixed", h.stack(f));
  CASE("repeat", a.repeat({2, 1})); CASE("repeat_more", f.repeat({2, 3}));
  // indexing
  CASE("index_int", a[1]); CASE("index_neg", a[-1]); CASE("slice", a[{Slice{}, Slice{1, 3}}]); CASE("slice_step", E({6})[{Slice{{}, {}, 2}}]);
  CASE("slice_neg_step", E({6})[{Slice{{}, {}, -1}}]); CASE("slice_step3", E({7})[{Slice{1, {}, 3}}]);
  CASE("slice_both", E({4, 6})[{Slice{1, 3}, Slice{{}, {}, -2}}]); CASE("index_none", a[{NewAxis{}, int64_t(1)}]);
  CASE("index_ellipsis", E({2, 3, 4})[{Ellipsis{}, int64_t(1)}]); CASE("index_mixed", E({2, 3, 4})[{int64_t(1), Ellipsis{}, NewAxis{}, Slice{1, 3}}]);
  CASE("slice_empty", E({5})[{Slice{3, 1}}]);
  // linear algebra
  CASE("matmul", a.matmul(E({3, 4}))); CASE("matmul_batch", E({5, 2, 3}).matmul(E({3, 4}))); CASE("matmul_bcast", E({5, 1, 2, 3}).matmul(E({4, 3, 2})));
  CASE("dot_1d", f.dot(f)); CASE("vec_mat", f.matmul(E({3, 4}))); CASE("mat_vec", a.matmul(f));
  CASE("matmul_half", E({2, 3}, dtypes::half).matmul(E({3, 2}, dtypes::half))); CASE("matmul_int", E({2, 3}, dtypes::int32).matmul(E({3, 2}, dtypes::int32)));
  // creation
  CASE("zeros", Tensor::zeros({2, 3})); CASE("ones", Tensor::ones({4})); CASE("full", Tensor::full({2, 2}, 7)); CASE("full_float", Tensor::full({3}, 0.5));
  CASE("full_dtype", Tensor::full({2}, 3, dtypes::float32)); CASE("ones_int", Tensor::ones({3}, dtypes::int32));
  CASE("zeros_like", a.zeros_like()); CASE("full_like", i.full_like(2));
  CASE("arange", Tensor::arange(5)); CASE("arange_start", Tensor::arange(1, 10, 2)); CASE("arange_float", Tensor::arange(0, 1, 0.25));
  CASE("arange_neg", Tensor::arange(5, 0, -1)); CASE("arange_dtype", Tensor::arange(4, dtypes::float32)); CASE("eye", Tensor::eye(3));
  CASE("eye_rect", Tensor::eye(2, 3, dtypes::int32)); CASE("scalar", Tensor(3)); CASE("scalar_float", Tensor(2.5, dtypes::float32));
  CASE("scalar_add", a + Tensor(1.5)); CASE("empty", E({2, 3}));
  // data handlers
  CASE("contiguous", (a + 1).contiguous()); CASE("contiguous_buffer", a.contiguous()); CASE("detach", a.detach()); CASE("to_null", a.to("NULL"));
  CASE("clone", a.clone()); CASE("assign", a.assign(b)); CASE("assign_lit", i.assign(3)); CASE("assign_view", a.reshape({6}).assign(E({6})));
  // random: the per-device key and counter are fresh empty buffers (tinygrad makes them from Python lists)
  CASE("rand", Tensor::rand({3})); CASE("rand_2d", Tensor::rand({2, 3})); CASE("rand_half", Tensor::rand({5}, dtypes::half));
  CASE("rand_f64", Tensor::rand({3}, dtypes::float64)); CASE("randn", Tensor::randn({2, 2})); CASE("randint", Tensor::randint({4}, 1, 7));
  CASE("uniform", Tensor::uniform({3}, -1.0, 1.0)); CASE("rand_twice", [] { Tensor r = Tensor::rand({2}); return r + Tensor::rand({2}); }());  // C++ leaves operand order open
  // composites
  CASE("mlp", (E({4, 3}).matmul(E({3, 5})) + E({5})).relu().sum(1).mean()); CASE("sqrt_of_sum", (a - b).pow(2).sum().sqrt());
  CASE("linear", a.linear(E({3, 4}), E({4}))); CASE("linear_1d_weight", a.linear(f)); CASE("layernorm", a.layernorm());
  CASE("variance", (a - a.mean(1, true)).square().mean(1)); CASE("softmax_cross", -(a.log_softmax(1) * b).sum(1).mean());
  // autograd: gradient graphs (src/tensor/gradient.cpp)
  CASE("grad_mul", (a * b).sum().gradient({a})[0]); CASE("grad_bcast", (a * f).sum().gradient({f})[0]);
  CASE("grad_relu_mm", a.matmul(E({3, 4})).relu().sum().gradient({a})[0]); CASE("grad_max", a.max(1).sum().gradient({a})[0]);
  CASE("grad_prod", a.prod(1).sum().gradient({a})[0]); CASE("grad_pow", a.pow(b).sum().gradient({b})[0]);
  CASE("grad_maximum", a.maximum(b).sum().gradient({a})[0]); CASE("grad_where", (a > 0).where(a, b * 2).sum().gradient({b})[0]);
  CASE("grad_unary", (a.sqrt() + a.log() + a.sin() + a.reciprocal()).sum().gradient({a})[0]);
  CASE("grad_movement", a.pad({{1, 0}, {0, 2}}).flip(1).shrink({{0, 2}, {1, 4}}).permute({1, 0}).sum().gradient({a})[0]);
  CASE("grad_softmax_cross", (-(a.log_softmax(1) * b).sum(1).mean()).gradient({a})[0]); CASE("grad_layernorm", a.layernorm().sum().gradient({a})[0]);
  CASE("grad_seed", a.exp().gradient({a}, b)[0]); CASE("grad_stack", a.stack(b).sin().sum().gradient({b})[0]);
  CASE("grad_cast", h.cast(dtypes::float32).square().sum().gradient({h})[0]); CASE("grad_unreached", a.sum().gradient({b})[0]);
  CASE("grad_contiguous_backward", a.contiguous_backward().exp().sum().gradient({a})[0]);
  CASE("grad_detach", (a * a.detach()).sum().gradient({a})[0]);
#undef CASE
  return m;
}

}  // namespace

TEST(TensorGraphs, MatchTinygrad) {
  auto cases = load_cases();
  auto b = builders();
  for (auto& [name, f] : b) f = [f = f] { Context tinygrad_graphs({{"SIMD", 0}}); return f(); };  // (SIMD=1 pools differently)
  ASSERT_GE(cases.size(), 60u);
  testutil::expect_graphs_match("tensor graphs", cases, b);
}
