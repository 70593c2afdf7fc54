// Gradients against libtorch autograd: for every differentiable Tensor op, d(sum(op(xs) * seed))/dxs for a random seed,
// with tinygrad's backward() on one side and torch's on the other. Each case is written once (a generic lambda where the
// two C++ APIs agree, a pair where they do not) and run over 0-d and n-d shapes, broadcasting and non-contiguous inputs.
// torch computes in float64 (float32 for half inputs) from the same rounded inputs; tolerances are per input dtype.
#include "tensor/tensor_impl.h"
#include "tg/function.h"
#include "tensor_harness.h"

#include <set>

using namespace conf;

namespace {

using TV = std::vector<tg::Tensor>;
using AV = std::vector<at::Tensor>;
using TF = std::function<tg::Tensor(const TV&)>;
using AF = std::function<at::Tensor(const AV&)>;

struct Op {
  std::string name;
  TF t;
  AF a;
};
// one generic lambda for both libraries: x, y, z are the first three inputs
#define BOTH(...)                                    \
  [](const auto& v) {                                \
    [[maybe_unused]] const auto& x = v[0];           \
    [[maybe_unused]] const auto& y = v[v.size() > 1]; \
    return __VA_ARGS__;                              \
  }
#define TGF(...) [](const TV& v) { [[maybe_unused]] const auto& x = v[0]; [[maybe_unused]] const auto& y = v[v.size() > 1]; return __VA_ARGS__; }
#define ATF(...) [](const AV& v) { [[maybe_unused]] const auto& x = v[0]; [[maybe_unused]] const auto& y = v[v.size() > 1]; return __VA_ARGS__; }

at::ScalarType ref_type(DType d) { return d == dtypes::float16 || d == dtypes::bfloat16 ? at::kFloat : at::kDouble; }
oracle::Tol grad_tol(DType d) {
  if (d == dtypes::float64) return {1e-9, 1e-10};
  if (d == dtypes::float16) return {1e-2, 1e-2};
  if (d == dtypes::bfloat16) return {4e-2, 4e-2};
  return {1e-4, 1e-5};
}

std::string shape_name(const std::vector<int64_t>& s) {
  std::string r = "(";
  for (auto x : s) r += std::to_string(x) + ",";
  return r + ")";
}

// backward() on tinygrad's side, autograd on torch's; every input's gradient compared
::testing::AssertionResult grads_match(const std::vector<Pair>& xs, const TF& ft, const AF& fa, uint32_t seed = 11,
                                       std::optional<oracle::Tol> tol = {}) {
  TV ts;
  AV leaves;
  for (auto& x : xs) {
    ts.push_back(x.t);
    ts.back().set_grad(std::nullopt);  // an input reused from an earlier case would accumulate
    leaves.push_back(x.a.to(ref_type(x.t.dtype())).detach().requires_grad_(true));
  }
  std::vector<tg::Tensor> gs;
  at::Tensor ta;
  try {
    tg::Tensor out = ft(ts);
    Pair s = input(out.shape(), tg::strong_dtype(out.dtype()), -1, 1, seed);
    (out * s.t).sum().backward();
    for (size_t i = 0; i < ts.size(); i++) {
      if (!ts[i].grad()) return ::testing::AssertionFailure() << "input " << i << " got no grad";
      gs.push_back(*ts[i].grad());
    }
    tg::Tensor::realize(gs);
    at::Tensor oa = fa(leaves);
    (oa * s.a.to(oa.scalar_type())).sum().backward();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw: " << e.what();
  }
  for (size_t i = 0; i < ts.size(); i++) {
    if (gs[i].dtype() != ts[i].dtype() || gs[i].shape() != ts[i].shape())
      return ::testing::AssertionFailure() << "input " << i << ": grad is " << gs[i] << " for " << ts[i];
    at::Tensor ours = to_torch(gs[i]);
    at::Tensor want = leaves[i].grad().defined() ? leaves[i].grad() : at::zeros_like(leaves[i]);
    auto r = oracle::match(oracle::result(ours), oracle::result(want.to(ours.scalar_type())), tol ? *tol : grad_tol(ts[i].dtype()), "tg", "torch");
    if (!r) return r << " (gradient of input " << i << ")";
  }
  return ::testing::AssertionSuccess();
}

// every non-contiguous layout for a few ops of each group, the permuted one for the rest (each case compiles kernels)
bool wanted(const Layout& l, const std::string& op) {
  static const std::set<std::string> all{"exp", "sqrt", "relu", "chain", "add", "mul", "where", "sum", "max", "softmax", "var"};
  return l.name == "permuted" || (l.name != "contiguous" && all.count(op));
}

std::vector<int64_t> all_dims(const at::Tensor& x) {
  std::vector<int64_t> d(size_t(x.dim()));
  for (size_t i = 0; i < d.size(); i++) d[i] = int64_t(i);
  return d;
}

Pair values(const std::vector<double>& v, const std::vector<int64_t>& shape, DType dt = dtypes::float32) {
  at::Tensor a = oracle::make<double>(v, shape, *oracle::to_torch(dt));
  return {to_tg(a), a};
}

// ***** 1. unary *****

struct Unary {
  Op op;
  double lo, hi;
  bool f16 = false;  // also checked in float16
};

std::vector<Unary> unaries() {
  return {
      {{"neg", BOTH(x.neg()), BOTH(x.neg())}, -3, 3, true},
      {{"reciprocal", BOTH(x.reciprocal()), BOTH(x.reciprocal())}, 0.5, 4, true},
      {{"sqrt", BOTH(x.sqrt()), BOTH(x.sqrt())}, 0.2, 9, true},
      {{"rsqrt", BOTH(x.rsqrt()), BOTH(x.rsqrt())}, 0.25, 9},
      {{"exp", BOTH(x.exp()), BOTH(x.exp())}, -3, 3, true},
      {{"exp2", BOTH(x.exp2()), BOTH(x.exp2())}, -3, 3},
      {{"log", BOTH(x.log()), BOTH(x.log())}, 0.1, 20, true},
      {{"log2", BOTH(x.log2()), BOTH(x.log2())}, 0.1, 20},
      {{"sin", BOTH(x.sin()), BOTH(x.sin())}, -6, 6, true},
      {{"cos", BOTH(x.cos()), BOTH(x.cos())}, -6, 6},
      {{"tan", BOTH(x.tan()), BOTH(x.tan())}, -1.2, 1.2},
      {{"abs", BOTH(x.abs()), BOTH(x.abs())}, -3, 3, true},
      {{"sign", BOTH(x.sign()), BOTH(x.sign())}, -3, 3},
      {{"trunc", BOTH(x.trunc()), BOTH(x.trunc())}, -5, 5},
      {{"floor", BOTH(x.floor()), BOTH(x.floor())}, -5, 5},
      {{"ceil", BOTH(x.ceil()), BOTH(x.ceil())}, -5, 5},
      {{"round", BOTH(x.round()), BOTH(x.round())}, -5, 5},
      {{"relu", BOTH(x.relu()), BOTH(x.relu())}, -3, 3, true},
      {{"sigmoid", BOTH(x.sigmoid()), BOTH(x.sigmoid())}, -6, 6, true},
      {{"tanh", BOTH(x.tanh()), BOTH(x.tanh())}, -4, 4},
      {{"gelu", TGF(x.gelu()), ATF(at::gelu(x, "tanh"))}, -4, 4},
      {{"silu", TGF(x.silu()), ATF(at::silu(x))}, -4, 4},
      {{"square", BOTH(x.square()), BOTH(x.square())}, -3, 3, true},
      {{"clamp", TGF(x.clamp(tg::Tensor(-1.0), tg::Tensor(1.5))), ATF(x.clamp(-1.0, 1.5))}, -3, 3},
      {{"clamp_min", TGF(x.clamp(tg::Tensor(0.5))), ATF(x.clamp_min(0.5))}, -3, 3},
      {{"chain", BOTH((x * 2 + 1).sin().exp() / (x.square() + 1)), BOTH((x * 2 + 1).sin().exp() / (x.square() + 1))}, -2, 2},
      {{"reuse", BOTH(x * x.exp() + x.sqrt() * x), BOTH(x * x.exp() + x.sqrt() * x)}, 0.5, 3},
  };
}

}  // namespace

TEST(Gradients, Unary) {
  const std::vector<std::vector<int64_t>> shapes{{}, {7}, {3, 5}};
  for (const Unary& u : unaries()) {
    for (const auto& shape : shapes)
      for (DType dt : {dtypes::float32, dtypes::float64}) {
        if (dt == dtypes::float64 && shape.size() != 1) continue;
        EXPECT_TRUE(grads_match({input(shape, dt, u.lo, u.hi)}, u.op.t, u.op.a)) << u.op.name << " " << dt.name() << " " << shape_name(shape);
      }
    if (u.f16) {
      EXPECT_TRUE(grads_match({input({3, 5}, dtypes::float16, u.lo, u.hi)}, u.op.t, u.op.a)) << u.op.name << " half";
    }
    for (const Layout& l : layouts(2)) {
      if (!wanted(l, u.op.name)) continue;
      Pair x = l.view(input(l.source_shape({3, 5}), dtypes::float32, u.lo, u.hi));
      EXPECT_TRUE(grads_match({x}, u.op.t, u.op.a)) << u.op.name << " " << l.name;
    }
  }
}

// ***** 2. binary, where, cast *****

namespace {
struct Binary {
  Op op;
  double lo, hi, lo2, hi2;
};
std::vector<Binary> binaries() {
  return {
      {{"add", BOTH(x + y), BOTH(x + y)}, -3, 3, -3, 3},
      {{"sub", BOTH(x - y), BOTH(x - y)}, -3, 3, -3, 3},
      {{"mul", BOTH(x * y), BOTH(x * y)}, -3, 3, -3, 3},
      {{"div", BOTH(x / y), BOTH(x / y)}, -3, 3, 0.5, 3},
      {{"pow", BOTH(x.pow(y)), BOTH(x.pow(y))}, 0.1, 3, -2, 2},
      {{"maximum", BOTH(x.maximum(y)), BOTH(x.maximum(y))}, -3, 3, -3, 3},
      {{"minimum", BOTH(x.minimum(y)), BOTH(x.minimum(y))}, -3, 3, -3, 3},
      {{"where", BOTH((x > y).where(x, y * 2)), ATF(at::where(x > y, x, y * 2))}, -3, 3, -3, 3},
      {{"where_self", BOTH((x > 0).where(x * y, y.exp())), ATF(at::where(x > 0, x * y, y.exp()))}, -3, 3, -2, 2},
      {{"mixed", BOTH((x + y) * (x - y) / (y * y + 1) - x.neg()), BOTH((x + y) * (x - y) / (y * y + 1) - x.neg())}, -3, 3, -3, 3},
  };
}
const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shape_pairs{
    {{}, {}}, {{5}, {5}}, {{3, 4}, {3, 4}}, {{3, 1}, {1, 4}}, {{2, 3, 4}, {4}}, {{}, {3, 2}}, {{4, 1, 2}, {3, 1}}, {{2, 3}, {}}};
}  // namespace

TEST(Gradients, Binary) {
  for (const Binary& b : binaries()) {
    for (const auto& [s1, s2] : shape_pairs) {
      std::vector<Pair> xs{input(s1, dtypes::float32, b.lo, b.hi, 1), input(s2, dtypes::float32, b.lo2, b.hi2, 2)};
      EXPECT_TRUE(grads_match(xs, b.op.t, b.op.a)) << b.op.name << " " << shape_name(s1) << " with " << shape_name(s2);
    }
    std::vector<Pair> xs{input({3, 4}, dtypes::float64, b.lo, b.hi, 1), input({4}, dtypes::float64, b.lo2, b.hi2, 2)};
    EXPECT_TRUE(grads_match(xs, b.op.t, b.op.a)) << b.op.name << " float64";
    for (const Layout& l : layouts(2)) {
      if (!wanted(l, b.op.name)) continue;
      std::vector<Pair> xv{l.view(input(l.source_shape({4, 5}), dtypes::float32, b.lo, b.hi, 3)), input({4, 5}, dtypes::float32, b.lo2, b.hi2, 4)};
      EXPECT_TRUE(grads_match(xv, b.op.t, b.op.a)) << b.op.name << " " << l.name;
    }
  }
  std::vector<Pair> h{input({3, 4}, dtypes::float16, -3, 3, 1), input({3, 4}, dtypes::float16, 0.5, 3, 2)};
  EXPECT_TRUE(grads_match(h, BOTH(x * y + x / y), BOTH(x * y + x / y))) << "half";
  std::vector<Pair> bf{input({3, 4}, dtypes::bfloat16, -3, 3, 1), input({4}, dtypes::bfloat16, 0.5, 3, 2)};
  EXPECT_TRUE(grads_match(bf, BOTH(x * y + x / y), BOTH(x * y + x / y))) << "bfloat16";
}

TEST(Gradients, ScalarOperands) {
  std::vector<Op> ops{
      {"add", BOTH(x + 2), BOTH(x + 2)},           {"radd", BOTH(2.5 + x), BOTH(2.5 + x)},
      {"sub", BOTH(x - 1), BOTH(x - 1)},           {"rsub", BOTH(1 - x), BOTH(1 - x)},
      {"mul", BOTH(x * 3), BOTH(x * 3)},           {"rmul", BOTH(0.5 * x), BOTH(0.5 * x)},
      {"div", BOTH(x / 4), BOTH(x / 4)},           {"rdiv", BOTH(2 / x), BOTH(2 / x)},
      {"pow2", BOTH(x.pow(2)), BOTH(x.pow(2))},    {"pow_half", BOTH(x.pow(0.5)), BOTH(x.pow(0.5))},
      {"pow_neg", BOTH(x.pow(-1.5)), BOTH(x.pow(-1.5))},
      {"rpow", TGF(x.pow(tg::Tensor(2.0), true)), ATF(at::pow(2.0, x))},
      {"maximum", TGF(x.maximum(1.0)), ATF(x.clamp_min(1.0))},
      {"minimum", TGF(x.minimum(1.0)), ATF(x.clamp_max(1.0))},
  };
  for (const Op& o : ops)
    for (const auto& shape : std::vector<std::vector<int64_t>>{{}, {2, 3}})
      EXPECT_TRUE(grads_match({input(shape, dtypes::float32, 0.2, 3)}, o.t, o.a)) << o.name << " " << shape_name(shape);
}

TEST(Gradients, PowSpecialValues) {
  // zero bases and zero exponents take tinygrad's special cases; torch's formulas agree there
  Pair b = values({0, 0, 0, 2, -1.5, 3}, {6}), e = values({2, 1, 0, 0, 2, 0.5}, {6});
  EXPECT_TRUE(grads_match({b, e}, BOTH(x.pow(y)), BOTH(x.pow(y)))) << "pow with zeros";
  Pair z = values({0, 1, -2, 0}, {4});
  EXPECT_TRUE(grads_match({z}, BOTH(x.pow(2)), BOTH(x.pow(2)))) << "x**2 at 0";
  EXPECT_TRUE(grads_match({z}, BOTH(x.pow(3)), BOTH(x.pow(3)))) << "x**3 at 0";
}

TEST(Gradients, Ties) {
  // tinygrad splits the gradient equally between tied maxima, as torch's amax/amin and maximum/minimum do
  Pair x = values({1, 3, 3, 2, 5, 5, 5, -1}, {2, 4});
  EXPECT_TRUE(grads_match({x}, TGF(x.max(1)), ATF(at::amax(x, {1})))) << "max ties";
  EXPECT_TRUE(grads_match({x}, TGF(x.max()), ATF(at::amax(x, {0, 1})))) << "max ties all";
  Pair n = values({1, -3, -3, 2, 5, 5, 0, 0}, {2, 4});
  EXPECT_TRUE(grads_match({n}, TGF(x.min(1)), ATF(at::amin(x, {1})))) << "min ties";
  Pair a = values({1, 2, 3, 4}, {4}), b = values({1, 0, 3, 5}, {4});
  EXPECT_TRUE(grads_match({a, b}, BOTH(x.maximum(y)), BOTH(x.maximum(y)))) << "maximum ties";
  EXPECT_TRUE(grads_match({a, b}, BOTH(x.minimum(y)), BOTH(x.minimum(y)))) << "minimum ties";
}

TEST(Gradients, Cast) {
  Pair f = input({3, 4}, dtypes::float32), h = input({3, 4}, dtypes::float16, -3, 3, 2), g = input({3, 4}, dtypes::float32, -3, 3, 3);
  EXPECT_TRUE(grads_match({f}, TGF(x.cast(dtypes::float16).square()), ATF(x.to(at::kHalf).to(at::kFloat).square()), 11,
                          oracle::Tol{1e-2, 1e-2}))
      << "f32 -> f16";
  EXPECT_TRUE(grads_match({h, g}, TGF(x.cast(dtypes::float32) * y), ATF(x.to(at::kFloat) * y))) << "f16 -> f32";
  EXPECT_TRUE(grads_match({h, g}, TGF(x * y), ATF(x * y))) << "f16 * f32 promotes";
  EXPECT_TRUE(grads_match({f}, TGF(x.cast(dtypes::float64).exp()), ATF(x.to(at::kDouble).exp()))) << "f32 -> f64";
}

// ***** 3. reductions *****

namespace {
struct Red {
  std::string name;
  std::function<tg::Tensor(const tg::Tensor&, std::vector<int64_t>, bool)> t;
  std::function<at::Tensor(const at::Tensor&, std::vector<int64_t>, bool)> a;
  bool single_axis = false;
};
#define RED(texpr, aexpr)                                                                                      \
  [](const tg::Tensor& x, [[maybe_unused]] std::vector<int64_t> ax, [[maybe_unused]] bool k) { return texpr; }, \
      [](const at::Tensor& x, [[maybe_unused]] std::vector<int64_t> ax, [[maybe_unused]] bool k) { return aexpr; }
std::vector<Red> reds() {
  return {
      {"sum", RED(x.sum(ax, k), x.sum(ax, k))},
      {"max", RED(x.max(ax, k), at::amax(x, ax, k))},
      {"min", RED(x.min(ax, k), at::amin(x, ax, k))},
      {"mean", RED(x.mean(ax, k), x.mean(ax, k))},
      {"var", RED(x.var(ax, k), x.var(ax, true, k))},
      {"var0", RED(x.var(ax, k, 0), x.var(ax, false, k))},
      {"std", RED(x.std(ax, k), x.std(ax, true, k))},
      {"prod", RED(x.prod(ax, k), x.prod(ax[0], k)), true},
      {"logsumexp", RED(x.logsumexp(ax, k), at::logsumexp(x, ax, k))},
      {"softmax", RED(x.softmax(ax[0]), at::softmax(x, ax[0])), true},
      {"log_softmax", RED(x.log_softmax(ax[0]), at::log_softmax(x, ax[0])), true},
      {"cumsum", RED(x.cumsum(ax[0]), x.cumsum(ax[0])), true},
  };
}
}  // namespace

TEST(Gradients, Reduce) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases{
      {{7}, {0}}, {{3, 5}, {1}}, {{3, 5}, {0}}, {{2, 3, 4}, {0, 2}}, {{2, 3, 4}, {-2}}, {{4, 1}, {1}}};
  for (const Red& r : reds()) {
    for (const auto& [shape, axes] : cases) {
      if (r.single_axis && axes.size() != 1) continue;
      // var/std over one element divide by zero: torch's gradient is nan, tinygrad's 0 (the 0 from x - mean wins)
      if ((r.name == "var" || r.name == "std") && shape == std::vector<int64_t>{4, 1}) continue;
      for (bool keep : {false, true})
        EXPECT_TRUE(grads_match({input(shape, dtypes::float32, 0.1, 2)}, [&](const TV& v) { return r.t(v[0], axes, keep); },
                                [&](const AV& v) { return r.a(v[0], axes, keep); }))
            << r.name << " " << shape_name(shape) << " axis " << axes[0] << (keep ? " keepdim" : "");
    }
    EXPECT_TRUE(grads_match({input({3, 4}, dtypes::float64, 0.1, 2)}, [&](const TV& v) { return r.t(v[0], {1}, false); },
                            [&](const AV& v) { return r.a(v[0], {1}, false); }))
        << r.name << " float64";
    for (const Layout& l : layouts(2)) {
      if (!wanted(l, r.name)) continue;
      Pair x = l.view(input(l.source_shape({4, 5}), dtypes::float32, 0.1, 2));
      EXPECT_TRUE(grads_match({x}, [&](const TV& v) { return r.t(v[0], {0}, true); }, [&](const AV& v) { return r.a(v[0], {0}, true); }))
          << r.name << " " << l.name;
    }
  }
}

TEST(Gradients, ReduceAll) {
  for (const auto& shape : std::vector<std::vector<int64_t>>{{}, {6}, {2, 3}}) {
    Pair x = input(shape, dtypes::float32, 0.1, 2);
    EXPECT_TRUE(grads_match({x}, BOTH(x.sum()), BOTH(x.sum()))) << "sum " << shape_name(shape);
    EXPECT_TRUE(grads_match({x}, BOTH(x.mean()), BOTH(x.mean()))) << "mean " << shape_name(shape);
    EXPECT_TRUE(grads_match({x}, BOTH(x.prod()), BOTH(x.prod()))) << "prod " << shape_name(shape);
    EXPECT_TRUE(grads_match({x}, TGF(x.max()), ATF(x.amax()))) << "max " << shape_name(shape);
    EXPECT_TRUE(grads_match({x}, TGF(x.min()), ATF(x.amin()))) << "min " << shape_name(shape);
    EXPECT_TRUE(grads_match({x}, TGF(x.logsumexp()), ATF(at::logsumexp(x, all_dims(x)))))
        << "logsumexp " << shape_name(shape);
    if (!shape.empty()) {
      EXPECT_TRUE(grads_match({x}, TGF(x.var()), ATF(x.var()))) << "var " << shape_name(shape);
      EXPECT_TRUE(grads_match({x}, TGF(x.std()), ATF(x.std()))) << "std " << shape_name(shape);
    }
  }
  Pair h = input({3, 5}, dtypes::float16, 0.1, 2);
  EXPECT_TRUE(grads_match({h}, BOTH(x.sum(1)), BOTH(x.sum(1)))) << "sum half";
  EXPECT_TRUE(grads_match({h}, BOTH(x.mean()), BOTH(x.mean()))) << "mean half";
  EXPECT_TRUE(grads_match({h}, TGF(x.max(0)), ATF(at::amax(x, {0})))) << "max half";
  EXPECT_TRUE(grads_match({h}, TGF(x.softmax()), ATF(at::softmax(x, -1)))) << "softmax half";
  Pair e = input({0, 3}, dtypes::float32);
  EXPECT_TRUE(grads_match({e}, BOTH(x.sum(0)), BOTH(x.sum(0)))) << "sum of size 0";
}

TEST(Gradients, ProdWithZeros) {
  Pair x = values({1, 2, 0, 3, 0, 2, 0, 1, 1, 2, 3, 4}, {3, 4});
  EXPECT_TRUE(grads_match({x}, TGF(x.prod(1)), ATF(x.prod(1)))) << "prod axis 1";
  EXPECT_TRUE(grads_match({x}, TGF(x.prod(0, true)), ATF(x.prod(0, true)))) << "prod axis 0";
  Pair one = values({1.5, 2, 0, -3}, {4});
  EXPECT_TRUE(grads_match({one}, BOTH(x.prod()), BOTH(x.prod()))) << "prod, one zero";
}

// ***** 4. movement *****

TEST(Gradients, Movement) {
  using P = std::vector<std::pair<int64_t, int64_t>>;
  std::vector<Op> ops{
      {"reshape", BOTH(x.reshape({6, 4}) * x.reshape({6, 4})), BOTH(x.reshape({6, 4}) * x.reshape({6, 4}))},
      {"reshape_infer", BOTH(x.reshape({-1, 2}).exp()), BOTH(x.reshape({-1, 2}).exp())},
      {"expand", BOTH(x.sum(1, true).expand({2, 5, 4}).sin()), BOTH(x.sum(1, true).expand({2, 5, 4}).sin())},
      {"expand_new_dims", BOTH(x.expand({3, 2, 3, 4}).cos()), BOTH(x.expand({3, 2, 3, 4}).cos())},
      {"permute", BOTH(x.permute({2, 0, 1}).exp()), BOTH(x.permute({2, 0, 1}).exp())},
      {"pad", TGF(x.pad(P{{1, 0}, {0, 2}, {1, 1}}, 2.5).square()), ATF(at::constant_pad_nd(x, {1, 1, 0, 2, 1, 0}, 2.5).square())},
      {"pad_negative", TGF(x.pad(P{{0, 0}, {-1, 1}, {0, 0}}).exp()), ATF(at::constant_pad_nd(x, {0, 0, -1, 1, 0, 0}, 0).exp())},
      {"shrink", TGF(x.shrink(P{{0, 2}, {1, 3}, {1, 4}}).exp()), ATF(x.slice(1, 1, 3).slice(2, 1, 4).exp())},
      {"flip", BOTH(x.flip({0, 2}) * x), BOTH(x.flip({0, 2}) * x)},
      {"transpose", BOTH(x.transpose(0, 2).sin()), BOTH(x.transpose(0, 2).sin())},
      {"squeeze_unsqueeze", BOTH(x.unsqueeze(1).exp().squeeze(1)), BOTH(x.unsqueeze(1).exp().squeeze(1))},
      {"flatten", BOTH(x.flatten(1).exp()), BOTH(x.flatten(1).exp())},
      {"flatten_all", BOTH(x.flatten().cumsum(0)), BOTH(x.flatten().cumsum(0))},
      {"repeat", BOTH(x.repeat({2, 1, 3}).sin()), BOTH(x.repeat({2, 1, 3}).sin())},
      {"slice_step", TGF((x[{tg::Slice{{}, {}, 2}, tg::Slice{1, 3, {}}, tg::Slice{{}, {}, -3}}]).exp()),
       ATF(x.slice(0, 0, 2, 2).slice(1, 1, 3).flip({2}).slice(2, 0, 4, 3).exp())},
      {"index_int", TGF((x[1] * x[0]).sin()), ATF((x[1] * x[0]).sin())},
      {"index_neg", TGF(x[{tg::Slice{}, int64_t(-1)}].exp()), ATF(x.select(1, -1).exp())},
      {"chain", TGF((x.permute({1, 0, 2}).flip({2}).pad(P{{0, 1}, {0, 0}, {2, 0}}) * 2).sum(2)),
       ATF((at::constant_pad_nd(x.permute({1, 0, 2}).flip({2}), {2, 0, 0, 0, 0, 1}, 0) * 2).sum(2))},
  };
  for (const Op& o : ops) {
    EXPECT_TRUE(grads_match({input({2, 3, 4}, dtypes::float32)}, o.t, o.a)) << o.name;
    Pair nc{input({3, 2, 4}, dtypes::float32, -3, 3, 5)};
    nc = Pair{nc.t.transpose(0, 1), nc.a.transpose(0, 1)};
    EXPECT_TRUE(grads_match({nc}, o.t, o.a)) << o.name << " non-contiguous";
  }
  EXPECT_TRUE(grads_match({input({}, dtypes::float32)}, BOTH(x.reshape({1, 1}).expand({2, 3}).exp()), BOTH(x.reshape({1, 1}).expand({2, 3}).exp())))
      << "0-d expand";
  EXPECT_TRUE(grads_match({input({}, dtypes::float32)}, BOTH(x.unsqueeze(0).exp()), BOTH(x.unsqueeze(0).exp()))) << "0-d unsqueeze";
}

TEST(Gradients, CatStack) {
  std::vector<Pair> xs{input({2, 3, 4}, dtypes::float32, -3, 3, 1), input({2, 3, 4}, dtypes::float32, -3, 3, 2), input({2, 1, 4}, dtypes::float32, -3, 3, 3)};
  EXPECT_TRUE(grads_match(xs, TGF(tg::Tensor::cat({x, y, v[2]}, 1).exp()), ATF(at::cat({x, y, v[2]}, 1).exp()))) << "cat";
  EXPECT_TRUE(grads_match({xs[0], xs[1]}, TGF(x.cat(y, -1).sin()), ATF(at::cat({x, y}, -1).sin()))) << "cat last";
  EXPECT_TRUE(grads_match({xs[0], xs[1]}, TGF(x.stack(y, 1).sin()), ATF(at::stack({x, y}, 1).sin()))) << "stack";
  EXPECT_TRUE(grads_match({xs[0], xs[1]}, TGF(tg::Tensor::stack({x, y, x}, 0).exp()), ATF(at::stack({x, y, x}, 0).exp()))) << "stack reused";
  std::vector<Pair> s{input({}, dtypes::float32, -3, 3, 4), input({}, dtypes::float32, -3, 3, 5)};
  EXPECT_TRUE(grads_match(s, TGF(tg::Tensor::stack({x, y}, 0).exp()), ATF(at::stack({x, y}, 0).exp()))) << "stack 0-d";
}

// ***** 5. linear algebra, layernorm *****

TEST(Gradients, Matmul) {
  auto mm = [](const std::vector<int64_t>& a, const std::vector<int64_t>& b, const std::string& name, DType dt = dtypes::float32) {
    std::vector<Pair> xs{input(a, dt, -2, 2, 1), input(b, dt, -2, 2, 2)};
    EXPECT_TRUE(grads_match(xs, BOTH(x.matmul(y)), BOTH(x.matmul(y)))) << name;
  };
  mm({5, 7}, {7, 3}, "matmul");
  mm({5, 7}, {7, 3}, "matmul float64", dtypes::float64);
  mm({7}, {7, 3}, "vector @ matrix");
  mm({4, 7}, {7}, "matrix @ vector");
  mm({2, 3, 4, 5}, {3, 5, 2}, "batched broadcast");
  mm({2, 4, 5}, {5, 3}, "batched @ matrix");
  std::vector<Pair> v{input({6}, dtypes::float32, -2, 2, 1), input({6}, dtypes::float32, -2, 2, 2)};
  EXPECT_TRUE(grads_match(v, BOTH(x.dot(y)), BOTH(x.dot(y)))) << "dot";
  Pair t = input({7, 5}, dtypes::float32, -2, 2, 3), m = input({7, 3}, dtypes::float32, -2, 2, 4);
  EXPECT_TRUE(grads_match({Pair{t.t.transpose(), t.a.t()}, m}, BOTH(x.matmul(y)), BOTH(x.matmul(y)))) << "transposed operand";
  std::vector<Pair> lin{input({4, 6}, dtypes::float32, -2, 2, 5), input({6, 3}, dtypes::float32, -2, 2, 6), input({3}, dtypes::float32, -2, 2, 7)};
  EXPECT_TRUE(grads_match(lin, [](const TV& v) { return v[0].linear(v[1], v[2]); }, [](const AV& v) { return at::linear(v[0], v[1].t(), v[2]); }))
      << "linear";
  EXPECT_TRUE(grads_match({lin[0], lin[1]}, [](const TV& v) { return v[0].linear(v[1]).relu(); }, [](const AV& v) { return at::linear(v[0], v[1].t()).relu(); }))
      << "linear no bias";
  std::vector<Pair> mlp{input({8, 6}, dtypes::float32, -1, 1, 8), input({6, 5}, dtypes::float32, -1, 1, 9), input({5}, dtypes::float32, -1, 1, 10),
                        input({5, 3}, dtypes::float32, -1, 1, 11)};
  EXPECT_TRUE(grads_match(mlp, [](const TV& v) { return (v[0].matmul(v[1]) + v[2]).relu().matmul(v[3]).log_softmax(); },
                          [](const AV& v) { return at::log_softmax((v[0].matmul(v[1]) + v[2]).relu().matmul(v[3]), -1); }))
      << "mlp";
}

TEST(Gradients, Layernorm) {
  Pair x = input({4, 6}, dtypes::float32), x3 = input({2, 3, 4}, dtypes::float32, -3, 3, 2);
  EXPECT_TRUE(grads_match({x}, TGF(x.layernorm()), ATF(at::layer_norm(x, {6}, {}, {}, 1e-5)))) << "layernorm";
  EXPECT_TRUE(grads_match({x3}, TGF(x.layernorm({1, 2})), ATF(at::layer_norm(x, {3, 4}, {}, {}, 1e-5)))) << "layernorm two axes";
  EXPECT_TRUE(grads_match({input({4, 6}, dtypes::float64)}, TGF(x.layernorm()), ATF(at::layer_norm(x, {6}, {}, {}, 1e-5)))) << "layernorm float64";
}

// ***** 6. contiguous, detach *****

TEST(Gradients, ContiguousDetach) {
  Pair x = input({3, 4}, dtypes::float32), y = input({3, 4}, dtypes::float32, -3, 3, 2);
  EXPECT_TRUE(grads_match({x}, BOTH((x * 2).contiguous().exp()), BOTH((x * 2).contiguous().exp()))) << "contiguous";
  EXPECT_TRUE(grads_match({x}, TGF((x * 2).contiguous_backward().exp()), ATF((x * 2).exp()))) << "contiguous_backward";
  EXPECT_TRUE(grads_match({x}, TGF(x.transpose().contiguous_backward().sin()), ATF(x.t().sin()))) << "contiguous_backward of a view";
  EXPECT_TRUE(grads_match({x}, BOTH(x * x.detach()), BOTH(x * x.detach()))) << "detach";
  EXPECT_TRUE(grads_match({x, y}, BOTH(x.detach() * y), BOTH(x.detach() * y))) << "detach: no gradient to x";
  EXPECT_TRUE(grads_match({x}, BOTH(x - x.max(1, true).detach()), ATF(x - at::amax(x, {1}, true).detach()))) << "detach of a reduce";
}

// ***** 7. functions: Tensor::call of a body built on as_param placeholders *****

namespace {
// fxn applied to the inputs as a FUNCTION; fxn sees one placeholder per input
TF called(std::function<tg::Tensor(const TV&)> fxn, tg::Tensor::CallGradFxn grad = {}) {
  return [fxn, grad](const TV& v) {
    TV ps;
    for (size_t i = 0; i < v.size(); i++) ps.push_back(v[i].as_param(int64_t(i)));
    return v[0].call(TV(v.begin() + 1, v.end()), fxn(ps), grad);
  };
}
}  // namespace

TEST(Gradients, FunctionCall) {
  std::vector<Pair> xy{input({10, 10}, dtypes::float32, -2, 2, 1), input({10, 10}, dtypes::float32, 1, 3, 2)};
  EXPECT_TRUE(grads_match(xy, called([](const TV& p) { return p[0] + p[1]; }), BOTH(x + y))) << "plus, through the body";
  EXPECT_TRUE(grads_match(xy, called([](const TV& p) { return (p[0] * p[1] + p[0]).exp2() * p[1].reciprocal(); }),
                          BOTH((x * y + x).exp2() * y.reciprocal())))
      << "a chain that uses each argument twice";
  // an own gradient rule replaces differentiation of the body: (g, g) for +, (g*y, g*x) for *
  auto plus_grad = [](const tg::Tensor& g, const TV&) { return std::vector<std::optional<tg::Tensor>>{g, g}; };
  EXPECT_TRUE(grads_match(xy, called([](const TV& p) { return p[0] + p[1]; }, plus_grad), BOTH(x + y))) << "plus, own rule";
  auto mul_grad = [](const tg::Tensor& g, const TV& a) { return std::vector<std::optional<tg::Tensor>>{g * a[1], std::nullopt}; };
  EXPECT_TRUE(grads_match(xy, [&](const TV& v) { return called([](const TV& p) { return p[0] * p[1]; }, mul_grad)(v) + v[1]; },
                          [](const AV& v) { return v[0] * v[1].detach() + v[1]; }))
      << "own rule that gives the second argument none";
  std::vector<Pair> mm{input({4, 8}, dtypes::float32, -1, 1, 3), input({8, 5}, dtypes::float32, -1, 1, 4), input({5}, dtypes::float32, -1, 1, 5)};
  EXPECT_TRUE(grads_match(mm, called([](const TV& p) { return (p[0].matmul(p[1]) + p[2]).relu(); }),
                          [](const AV& v) { return (v[0].matmul(v[1]) + v[2]).relu(); }))
      << "gemm + bias + relu";
  EXPECT_TRUE(grads_match({xy[0]}, [](const TV& v) { return v[0].call({v[0]}, v[0].as_param(0) * v[0].as_param(1)).sum(1); },
                          ATF((x * x).sum(1))))
      << "the same tensor as two arguments";
  EXPECT_TRUE(grads_match(xy, [](const TV& v) {
    tg::Tensor inner = v[0].as_param(0).call({v[1].as_param(1)}, v[0].as_param(0).sin() * v[1].as_param(1));
    return v[0].call({v[1]}, inner + v[1].as_param(1)).exp();
  }, BOTH((x.sin() * y + y).exp()))) << "a function calling a function";
}

TEST(Gradients, Function) {
  std::vector<Pair> xyz{input({4, 6}, dtypes::float32, -2, 2, 1), input({6, 3}, dtypes::float32, -2, 2, 2), input({3}, dtypes::float32, -1, 1, 3)};
  tg::Function layer([](const TV& in) { return TV{(in[0].matmul(in[1]) + in[2]).tanh()}; }, {.name = "layer"});
  EXPECT_TRUE(grads_match(xyz, [&](const TV& v) { return layer(v)[0]; }, [](const AV& v) { return (v[0].matmul(v[1]) + v[2]).tanh(); }))
      << "one output";
  tg::Function two([](const TV& in) { return TV{in[0].exp(), (in[0] * in[1]).sum(0)}; });
  std::vector<Pair> xy{input({5, 3}, dtypes::float32, -1, 1, 4), input({5, 3}, dtypes::float32, -1, 1, 5)};
  EXPECT_TRUE(grads_match(xy, [&](const TV& v) { TV r = two(v); return r[0].sum(0) * r[1]; },
                          [](const AV& v) { return v[0].exp().sum(0) * (v[0] * v[1]).sum(0); }))
      << "two outputs, both used";
  EXPECT_TRUE(grads_match(xy, [&](const TV& v) { return two(v)[1]; }, [](const AV& v) { return (v[0] * v[1]).sum(0); })) << "one of two outputs used";
  // a tensor the body captured is an implicit input: refused by default, passed along (without gradient) when allowed
  tg::Tensor w = tg::Tensor::from_vector<float>({1, 2, 3}, {3}).realize();
  tg::Function scaled([&](const TV& in) { return TV{in[0] * w}; });
  try {
    scaled({tg::Tensor::ones({2, 3})});
    ADD_FAILURE() << "an implicit input was accepted";
  } catch (const tg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("not among its inputs"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("float (3,)"), std::string::npos) << e.what();
  }
  tg::Function scaled_ok([&](const TV& in) { return TV{in[0] * w}; }, {.allow_implicit = true});
  EXPECT_EQ(scaled_ok({tg::Tensor::full({2, 3}, 2.0)})[0].to_vector<float>(), (std::vector<float>{2, 4, 6, 2, 4, 6}));
  // the same Function on new inputs records a new FUNCTION of them
  EXPECT_EQ(scaled_ok({tg::Tensor::full({2, 3}, -1.0)})[0].to_vector<float>(), (std::vector<float>{-1, -2, -3, -1, -2, -3}));
}

TEST(Gradients, FunctionCallErrors) {
  tg::Tensor a = tg::Tensor::ones({3, 4}), b = tg::Tensor::ones({4, 3});
  auto expect_error = [](const std::function<void()>& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no error, expected one naming '" << needle << "'";
    } catch (const tg::Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error([&] { a.call({b}, a.as_param(0) + b.as_param(1).transpose() * 0 + a.as_param(1)); }, "argument 1 is float (4, 3)");
  expect_error([&] { a.call({}, a.as_param(0) + a.as_param(1)); }, "uses argument 1 but is given 1");
  expect_error([&] { a.call({a.cast(dtypes::float16)}, a.as_param(0) + a.as_param(1)); }, "argument 1 is half");
  auto bad_rule = [](const tg::Tensor& g, const TV&) { return std::vector<std::optional<tg::Tensor>>{g}; };
  tg::Tensor c = a.call({a}, a.as_param(0) * a.as_param(1), bad_rule);
  expect_error([&] { c.sum().gradient({a}); }, "returned 1 gradients for 2 arguments");
  EXPECT_THROW(tg::Tensor(2.0).as_param(0), tg::Error);  // a weak tensor has no storage to stand for
}

// ***** 8. backward() and gradient() semantics *****

namespace {
std::vector<float> f(const tg::Tensor& t) { return t.to_vector<float>(); }
tg::Tensor vec(std::vector<float> v) { return tg::Tensor::from_vector<float>(v); }
}  // namespace

TEST(Gradients, BackwardAccumulates) {
  tg::Tensor x = vec({1, 2, 3});
  (x * x).sum().backward();
  EXPECT_EQ(f(*x.grad()), (std::vector<float>{2, 4, 6}));
  (x * x).sum().backward();  // the grad is realized now: accumulates with assign
  EXPECT_EQ(f(*x.grad()), (std::vector<float>{4, 8, 12}));
  tg::Tensor g = *x.grad();
  (x * 3).sum().backward();
  (x * 3).sum().backward();  // twice without realizing in between
  EXPECT_EQ(f(g), (std::vector<float>{10, 14, 18}));  // the same grad tensor, updated in place
  x.set_grad(std::nullopt);
  EXPECT_FALSE(x.grad());
  (x * 2).sum().backward();
  EXPECT_EQ(f(*x.grad()), (std::vector<float>{2, 2, 2}));
}

TEST(Gradients, GradientDoesNotTouchGrad) {
  tg::Tensor x = vec({1, 2, 3}), y = vec({4, 5, 6});
  tg::Tensor z = (x * y).sum();
  auto gs = z.gradient({x, y});
  EXPECT_FALSE(x.grad());
  EXPECT_FALSE(y.grad());
  EXPECT_EQ(f(gs[0]), (std::vector<float>{4, 5, 6}));
  EXPECT_EQ(f(gs[1]), (std::vector<float>{1, 2, 3}));
  z.backward();
  auto again = z.gradient({x}, tg::Tensor(2.0f, dtypes::float32));
  EXPECT_EQ(f(again[0]), (std::vector<float>{8, 10, 12}));
  EXPECT_EQ(f(*x.grad()), (std::vector<float>{4, 5, 6}));
  // a seed for a non-scalar output; a target the output does not depend on gets zeros
  tg::Tensor w = vec({7, 8});
  auto g2 = (x * 2).gradient({x, w}, vec({1, 0, -1}));
  EXPECT_EQ(f(g2[0]), (std::vector<float>{2, 0, -2}));
  EXPECT_EQ(f(g2[1]), (std::vector<float>{0, 0}));
}

TEST(Gradients, Errors) {
  tg::Tensor x = vec({1, 2, 3});
  try {
    (x * 2).backward();
    ADD_FAILURE() << "backward on a non-scalar without a gradient did not throw";
  } catch (const tg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("(3,)"), std::string::npos) << e.what();
  }
  try {
    (x * 2).backward(vec({1, 2}));
    ADD_FAILURE() << "a seed of the wrong shape did not throw";
  } catch (const tg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("(2,)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(3,)"), std::string::npos) << e.what();
  }
  tg::Tensor i = tg::Tensor::from_vector<int32_t>({1, 2, 3});
  EXPECT_THROW(x.sum().gradient({i}), tg::Error);
  EXPECT_THROW(i.sum().backward(), tg::Error);
  EXPECT_THROW(x.sum().gradient({tg::Tensor(2.0)}), tg::Error);  // a weak target
  EXPECT_THROW(x.set_grad(vec({1})), tg::Error);
  // an op with no gradient rule on the path (integer floor division)
  EXPECT_THROW((x.cast(dtypes::int32).idiv(tg::Tensor(2)).cast(dtypes::float32) * x).sum().gradient({x}), tg::Error);
}

TEST(Gradients, WhoGetsAGrad) {
  tg::Tensor x = vec({1, 2, 3});
  tg::Tensor i = tg::Tensor::from_vector<int32_t>({1, 2, 3});
  tg::Tensor ic = i.cast(dtypes::float32);
  tg::Tensor a = tg::Tensor::arange(3, dtypes::float32);  // device-free
  tg::Tensor mid = x * ic;
  tg::Tensor out = (mid + a).sum();
  out.backward();
  EXPECT_FALSE(i.grad()) << "int tensors get no grad";
  EXPECT_FALSE(a.grad()) << "device-free tensors get no grad";
  ASSERT_TRUE(ic.grad());
  ASSERT_TRUE(mid.grad());
  ASSERT_TRUE(out.grad());
  EXPECT_EQ(f(*x.grad()), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(f(*ic.grad()), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(f(*mid.grad()), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(f(*out.grad()), (std::vector<float>{1}));
  EXPECT_TRUE(out.grad()->device().has_value());
  // tensors outside the graph are left alone; a tensor reached only through DETACH gets zeros
  tg::Tensor other = vec({5});
  tg::Tensor d = vec({1, 1, 1});
  (x * d.detach()).sum().backward();
  EXPECT_FALSE(other.grad());
  EXPECT_EQ(f(*d.grad()), (std::vector<float>{0, 0, 0}));
}

TEST(Gradients, IsParam) {
  tg::Tensor x = vec({1, 2});
  EXPECT_TRUE(x.is_param());
  x.is_param_(false);
  EXPECT_FALSE(x.is_param());
  EXPECT_FALSE(x.clone().is_param());
  EXPECT_TRUE((x + 1).is_param());  // a new tensor from an op is a param again, as in tinygrad
  x.is_param_(true);
  (x * x).sum().backward();
  tg::Tensor c = x.clone();
  ASSERT_TRUE(c.grad());  // clone carries the grad (as a copy)
  EXPECT_EQ(f(*c.grad()), (std::vector<float>{2, 4}));
}

TEST(Gradients, NoLeak) {
  // a training-style step builds and drops gradient graphs: nothing may stay alive afterwards
  auto step = [] {
    tg::Tensor x = vec({1, 2, 3}), w = vec({0.5f, -1, 2});
    (x * w).relu().sum().backward();
    tg::Tensor::realize({*x.grad(), *w.grad()});
  };
  step();
  size_t uops = tg::live_uops(), tensors = tg::live_tensors();
  for (int i = 0; i < 3; i++) step();
  EXPECT_EQ(tg::live_uops(), uops);
  EXPECT_EQ(tg::live_tensors(), tensors);
}

// ***** 9. the rest of tinygrad's elementwise, scan and triangle ops *****

namespace {
// one input per op, the outputs stacked: one backward for all of them, and input i's gradient comes from op i alone
template <class T> T stacked(const std::vector<T>& outs);
template <> tg::Tensor stacked(const TV& outs) { return tg::Tensor::stack(outs); }
template <> at::Tensor stacked(const AV& outs) { return at::stack(outs); }
}  // namespace

TEST(Gradients, ApiOps) {
  // ranges keep clear of the points where an op is not differentiable (asin at +-1, relu6 at 0 and 6 ...)
  std::vector<std::pair<double, double>> ranges{{-0.95, 0.95}, {-0.95, 0.95}, {-4, 4}, {-2.5, 2.5}, {-3, 3}, {-3, 3}, {-0.9, 0.9}, {-3, 3},
                                                {1.1, 5},       {0.1, 10},     {-3, 9}, {-3, 3},     {-3, 3}, {-3, 3}, {-3, 3},     {-3, 3},
                                                {-3, 3},        {-3, 3},       {-3, 3}};
  std::vector<Pair> xs;
  for (size_t i = 0; i < ranges.size(); i++) xs.push_back(input({6}, dtypes::float32, ranges[i].first, ranges[i].second, uint32_t(20 + i)));
  auto ops = [](const auto& v) {
    using T = std::decay_t<decltype(v[0])>;
    std::vector<T> r{v[0].asin(), v[1].acos(), v[2].atan(), v[3].erf(), v[4].sinh(), v[5].cosh(), v[6].atanh(), v[7].asinh(),
                     v[8].acosh(), v[9].log10()};
    if constexpr (std::is_same_v<T, tg::Tensor>)
      r.insert(r.end(), {v[10].relu6(), v[11].celu(0.7), v[12].selu(), v[13].quick_gelu(), v[14].softsign(), v[15].gelu("none"),
                         v[16].softmin(), v[17].clip(tg::Tensor(-1.0), tg::Tensor(1.5)), v[18].logcumsumexp(0)});
    else
      r.insert(r.end(), {at::hardtanh(v[10], 0, 6), at::celu(v[11], 0.7), at::elu(v[12], 1.67326, 1.0507), v[13] * at::sigmoid(v[13] * 1.702),
                         v[14] / (v[14].abs() + 1), at::gelu(v[15], "none"), at::softmax(-v[16], -1), v[17].clip(-1.0, 1.5),
                         at::logcumsumexp(v[18], 0)});
    return stacked(r);
  };
  EXPECT_TRUE(grads_match(xs, ops, ops)) << "unary ops";
  std::vector<Pair> ds;
  for (size_t i = 0; i < ranges.size(); i++) ds.push_back(input({6}, dtypes::float64, ranges[i].first, ranges[i].second, uint32_t(40 + i)));
  // tinygrad's asin and erf are polynomial fits: their derivatives are off by up to ~1e-6
  EXPECT_TRUE(grads_match(ds, ops, ops, 11, oracle::Tol{1e-5, 1e-6})) << "unary ops, float64";
  // at 0 the sign(x) * f(|x|) form of asin and erf has gradient 0 (sign and abs have none there), torch's 1 and 2/sqrt(pi)
  tg::Tensor z = tg::Tensor::from_vector<float>({0, 0});
  tg::Tensor::stack({z[0].asin(), z[1].erf()}).sum().backward();
  EXPECT_EQ(z.grad()->to_vector<float>(), (std::vector<float>{0, 0}));

  std::vector<Pair> b{input({3, 4}, dtypes::float32, -5, 5, 1), input({3, 1}, dtypes::float32, 0.5, 3, 2), input({4}, dtypes::float32, -3, 3, 3),
                      input({3, 4}, dtypes::float32, -3, 3, 4), input({3, 4}, dtypes::float32, 0, 1, 5)};
  EXPECT_TRUE(grads_match({b[0], b[1]}, BOTH(x.fmod(y)), ATF(at::fmod(x, y)))) << "fmod";
  EXPECT_TRUE(grads_match({b[0], b[2]}, BOTH(x.logaddexp(y)), ATF(at::logaddexp(x, y)))) << "logaddexp";
  EXPECT_TRUE(grads_match({b[0], b[3], b[4]}, [](const TV& v) { return v[0].lerp(v[1], v[2]); }, [](const AV& v) { return at::lerp(v[0], v[1], v[2]); }))
      << "lerp";
  tg::Tensor sign = b[2].t;  // copysign's second operand only picks the sign: torch gives it a zero gradient, tinygrad none
  EXPECT_TRUE(grads_match({b[0]}, [&](const TV& v) { return v[0].copysign(sign); }, [&](const AV& v) { return at::copysign(v[0], b[2].a); }))
      << "copysign";

  Pair m = input({2, 3, 4}, dtypes::float32, 0.5, 1.5, 6);
  EXPECT_TRUE(grads_match({m}, BOTH(x.triu(1) * 2 + x.tril(-1)), BOTH(x.triu(1) * 2 + x.tril(-1)))) << "triu/tril";
  auto tg_moments = [](const TV& v) {
    auto [var, mean] = v[0].var_mean(1);
    auto [sd, mean2] = v[0].std_mean({0, 2}, true, 0);
    return (var * 2 + mean).flatten().cat((sd - mean2).flatten());
  };
  auto torch_moments = [](const AV& v) {
    auto [var, mean] = at::var_mean(v[0], at::IntArrayRef{1}, true, false);
    auto [sd, mean2] = at::std_mean(v[0], at::IntArrayRef{0, 2}, false, true);
    return at::cat({(var * 2 + mean).flatten(), (sd - mean2).flatten()});
  };
  EXPECT_TRUE(grads_match({m}, tg_moments, torch_moments))
      << "var_mean/std_mean";
  EXPECT_TRUE(grads_match({m}, TGF(x.cumprod(1) + x.cummax(2).first * 2 + x.cummin(0).first),
                          ATF(x.cumprod(1) + std::get<0>(at::cummax(x, 2)) * 2 + std::get<0>(at::cummin(x, 0)))))
      << "cumprod/cummax/cummin";
  EXPECT_TRUE(grads_match({m}, TGF(x.logcumsumexp(1)), ATF(at::logcumsumexp(x, 1)))) << "logcumsumexp";
}

TEST(Gradients, MovementSelect) {
  // the results of each group flattened into one vector: one backward pass covers them all
  auto flat = [](const auto& outs) {
    using T = std::decay_t<decltype(outs[0])>;
    std::vector<T> f;
    for (auto& o : outs) f.push_back(o.flatten());
    if constexpr (std::is_same_v<T, tg::Tensor>) return tg::Tensor::cat(f);
    else return at::cat(f);
  };
  std::vector<Pair> x{input({4, 5}, dtypes::float32, -3, 3, 1)};
  auto tg_moves = [&](const TV& v) {
    const tg::Tensor& t = v[0];
    std::vector<tg::Tensor> r = t.split({1, 3}, 0);
    for (auto& c : t.chunk(2, 1)) r.push_back(c * 2);
    r.insert(r.end(), {t.roll({1, -2}, tg::IntList{0, 1}), t.diagonal(1), t.unfold(1, 3, 2), t.repeat_interleave(2, 0),
                       t.pad({1, 2, 2, 1}, "reflect"), t.pad({2, 0}, "replicate"), t.pad({1, 3, 0, 2}, "circular"), t.view({5, 4}).diagonal(),
                       t.masked_fill(t > 0.5, 1.0)});
    return flat(r);
  };
  auto torch_pad = [](const at::Tensor& a, std::vector<int64_t> p, const std::string& mode) {
    return p.size() == 2 ? at::pad(a.unsqueeze(0), p, mode)[0] : at::pad(a.unsqueeze(0).unsqueeze(0), p, mode)[0][0];
  };
  auto torch_moves = [&](const AV& v) {
    const at::Tensor& a = v[0];
    std::vector<at::Tensor> r = a.split_with_sizes({1, 3}, 0);
    for (auto& c : a.chunk(2, 1)) r.push_back(c * 2);
    r.insert(r.end(), {a.roll({1, -2}, {0, 1}), a.diagonal(1), a.unfold(1, 3, 2), a.repeat_interleave(2, 0), torch_pad(a, {1, 2, 2, 1}, "reflect"),
                       torch_pad(a, {2, 0}, "replicate"), torch_pad(a, {1, 3, 0, 2}, "circular"), a.view({5, 4}).diagonal(),
                       a.masked_fill(a > 0.5, 1.0)});
    return flat(r);
  };
  EXPECT_TRUE(grads_match(x, tg_moves, torch_moves)) << "movement";

  // scatter and scatter_reduce: gradients for self and src; distinct values (no ties for amax/amin), no zeros (prod)
  std::vector<Pair> s{input({4, 3}, dtypes::float32, 0.5, 2, 2), input({5, 3}, dtypes::float32, 0.5, 2, 3)};
  at::Tensor ia = oracle::make<int64_t>({0, 2, 0, 0, 2, 2, 3, 0, 0, 0, 2, 1, 0, 0, 0}, {5, 3}, at::kLong), ua = ia.narrow(0, 0, 1);
  tg::Tensor it = to_tg(ia), ut = to_tg(ua);
  auto tg_scatter = [&](const TV& v) {
    std::vector<tg::Tensor> r{v[0].scatter(0, ut, v[1].shrink_to({1, 3}))};
    for (std::string red : {"sum", "prod", "mean", "amax", "amin"}) r.push_back(v[0].scatter_reduce(0, it, v[1], red, red != "mean"));
    return flat(r);
  };
  auto torch_scatter = [&](const AV& v) {
    std::vector<at::Tensor> r{v[0].scatter(0, ua, v[1].narrow(0, 0, 1))};  // torch 1.13's backward wants src shaped as index
    for (std::string red : {"sum", "prod", "mean", "amax", "amin"}) r.push_back(v[0].scatter_reduce(0, ia, v[1], red, red != "mean"));
    return flat(r);
  };
  EXPECT_TRUE(grads_match(s, tg_scatter, torch_scatter)) << "scatter";

  // masked_select, and topk's values (a descending sort along dim 0, cut; random values: no ties)
  std::vector<Pair> y{input({3, 5}, dtypes::float32, -3, 3, 4)};
  at::Tensor ma = y[0].a > 0;
  tg::Tensor mt = to_tg(ma);
  auto tg_sel = [&](const TV& v) { return flat(std::vector<tg::Tensor>{v[0].masked_select(mt), v[0].topk(2, 0).first}); };
  auto torch_sel = [&](const AV& v) { return flat(std::vector<at::Tensor>{v[0].masked_select(ma), std::get<0>(v[0].topk(2, 0))}); };
  EXPECT_TRUE(grads_match(y, tg_sel, torch_sel)) << "masked_select, sort, topk";
}

// advanced getitem and setitem, einsum, interpolate, max_unpool2d, rearrange: all compositions of differentiable ops
TEST(Gradients, Fancy) {
  namespace ai = at::indexing;
  auto flat = [](const auto& outs) {
    using T = std::decay_t<decltype(outs[0])>;
    std::vector<T> f;
    for (auto& o : outs) f.push_back(o.flatten());
    if constexpr (std::is_same_v<T, tg::Tensor>) return tg::Tensor::cat(f);
    else return at::cat(f);
  };
  // getitem: one index, two consecutive (broadcast), two separated by a slice, a bool mask; setitem into a fancy index
  // and a slice (distinct positions: torch leaves the order of repeated writes unspecified)
  at::Tensor ia = oracle::make<int64_t>({2, 0, -2}, {3}, at::kLong), ja = oracle::make<int64_t>({1, 4, 0}, {3, 1}, at::kLong), ka = ja.flatten();
  tg::Tensor it = to_tg(ia.to(at::kInt)), jt = to_tg(ja.to(at::kInt)), kt = jt.flatten();
  std::vector<Pair> xs{input({3, 5, 2}, dtypes::float32, -3, 3, 1), input({3, 2}, dtypes::float32, -3, 3, 2)};
  at::Tensor ma = xs[0].a > 0;
  tg::Tensor mt = to_tg(ma);
  auto tg_idx = [&](const TV& v) {
    tg::Tensor y = v[0] * 1, z = v[0] * 2;  // unrealized floats: setitem builds a new graph
    y.setitem({it, tg::Slice{1, 3}}, v[1].unsqueeze(1));
    z.setitem({tg::Slice{}, kt}, tg::Tensor(0.5));
    return flat(std::vector<tg::Tensor>{v[0][it], v[0][{it, jt}], v[0][{it, tg::Slice{}, kt.shrink({{0, 1}})}], v[0][mt], y, z});
  };
  auto torch_idx = [&](const AV& v) {
    at::Tensor y = v[0] * 1, z = v[0] * 2;
    y.index_put_({ia, ai::Slice(1, 3)}, v[1].unsqueeze(1));
    z.index_put_({ai::Slice(), ka}, 0.5);
    return flat(std::vector<at::Tensor>{v[0].index({ia}), v[0].index({ia, ja}), v[0].index({ia, ai::Slice(), ka.narrow(0, 0, 1)}), v[0].index({ma}), y, z});
  };
  EXPECT_TRUE(grads_match(xs, tg_idx, torch_idx)) << "getitem, setitem";

  std::vector<Pair> es{input({2, 3, 3}, dtypes::float32, -3, 3, 3), input({3, 4}, dtypes::float32, -3, 3, 4)};
  auto tg_ein = [&](const TV& v) {
    return flat(std::vector<tg::Tensor>{tg::Tensor::einsum("bij,jk->bik", {v[0], v[1]}), tg::Tensor::einsum("bii->bi", {v[0]}),
                                        tg::Tensor::einsum("...j,jk", {v[0], v[1]}), v[0].rearrange("b h w -> w (b h)")});
  };
  auto torch_ein = [&](const AV& v) {
    return flat(std::vector<at::Tensor>{at::einsum("bij,jk->bik", {v[0], v[1]}), at::einsum("bii->bi", {v[0]}), at::einsum("...j,jk", {v[0], v[1]}),
                                        v[0].permute({2, 0, 1}).reshape({3, 6})});
  };
  EXPECT_TRUE(grads_match(es, tg_ein, torch_ein)) << "einsum, rearrange";

  std::vector<Pair> ps{input({1, 2, 4, 4}, dtypes::float32, -3, 3, 5)};
  auto tg_res = [&](const TV& v) {
    auto [pv, pi] = v[0].max_pool2d_with_indices({2, 2});
    return flat(std::vector<tg::Tensor>{v[0].interpolate({6, 3}), v[0].interpolate({3, 7}, "bilinear", true), v[0].interpolate({5, 2}, "nearest"),
                                        v[0].interpolate({3, 6}, "nearest-exact"), pv.max_unpool2d(pi)});
  };
  auto torch_res = [&](const AV& v) {
    auto [pv, pi] = at::max_pool2d_with_indices(v[0], {2, 2}, {2, 2});
    return flat(std::vector<at::Tensor>{at::upsample_bilinear2d(v[0], {6, 3}, false), at::upsample_bilinear2d(v[0], {3, 7}, true),
                                        at::upsample_nearest2d(v[0], {5, 2}), at::_upsample_nearest_exact2d(v[0], {3, 6}), at::max_unpool2d(pv, pi, {4, 4})});
  };
  EXPECT_TRUE(grads_match(ps, tg_res, torch_res)) << "interpolate, max_unpool2d";
}
