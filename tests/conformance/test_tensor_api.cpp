// Forward values of the rest of tinygrad's elementwise, scan and triangle ops against libtorch: inverse trig and
// hyperbolic functions, erf, the extra activations, float classification, fmod/copysign/logaddexp/lerp, triu/tril,
// var_mean/std_mean, cumprod/cummax/cummin/logcumsumexp, the cast shorthands and the in-place operators; then the
// tg::Error each one gives for bad arguments. Their gradients are in test_gradients.cpp (Gradients.ApiOps).
#include "tensor_harness.h"

#include <map>

using namespace conf;

namespace {

std::string name_of(DType d, const std::vector<int64_t>& s) {
  std::string r = std::string(d.name()) + " (";
  for (auto x : s) r += std::to_string(x) + ",";
  return r + ")";
}

Pair values(const std::vector<double>& v, DType dt = dtypes::float32) {
  at::Tensor a = oracle::make<double>(v, {int64_t(v.size())}, *oracle::to_torch(dt));
  return {to_tg(a), a};
}

// tinygrad's asin and erf are polynomial fits (Abramowitz & Stegun, |error| < 2e-8 and 1.5e-7): exact to float32,
// not to float64
const oracle::Tol approx{1e-6, 3e-7};

struct Unary {
  std::string name;
  std::function<tg::Tensor(const tg::Tensor&)> t;
  std::function<at::Tensor(const at::Tensor&)> a;
  double lo, hi;
  std::vector<double> edges;  // special inputs where both libraries agree (tinygrad's formulas differ from torch's at others)
  bool approximate = false;
  bool half = false;      // also checked in float16
  bool layouts = false;   // also checked on a 0-d and a permuted input
};
#define SAME(expr) [](const tg::Tensor& x) { return expr; }, [](const at::Tensor& x) { return expr; }
#define BOTH(texpr, aexpr) [](const tg::Tensor& x) { return texpr; }, [](const at::Tensor& x) { return aexpr; }

const double inf = INFINITY, nan_ = NAN;

std::vector<Unary> unaries() {
  return {
      {"asin", SAME(x.asin()), -1, 1, {0, -0.0, 1, -1, 0.5, -0.5, 1e-4, 1.5, -2, inf, nan_}, true, false, true},
      {"acos", SAME(x.acos()), -1, 1, {0, 1, -1, 0.5, -0.999, 1.5, -2, inf, nan_}, true},
      {"atan", SAME(x.atan()), -5, 5, {0, 1, -1, 1e-4, 30, -30, nan_}, true},
      {"erf", SAME(x.erf()), -3, 3, {0, 1e-3, -1e-3, 0.5, -2, 5, -5, inf, -inf, nan_}, true, false, true},
      {"sinh", SAME(x.sinh()), -4, 4, {0, 1, -1, 20, -20, inf, -inf, nan_}, false, true},
      {"cosh", SAME(x.cosh()), -4, 4, {0, 1, -1, 20, -20, inf, -inf, nan_}, false, true},
      {"atanh", SAME(x.atanh()), -0.95, 0.95, {0, 0.5, -0.5, 1, -1, 1.5, -2, inf, nan_}, false, false, true},
      {"asinh", SAME(x.asinh()), -3, 3, {0, 1, -1, 50, inf, nan_}},
      {"acosh", SAME(x.acosh()), 1, 6, {1, 1.5, 0.5, 0, -1, 100, inf, -inf, nan_}},
      {"log10", SAME(x.log10()), 0.01, 100, {0, 1, 10, 1000, -1, inf, nan_}, false, true},
      {"relu6", BOTH(x.relu6(), at::hardtanh(x, 0, 6)), -3, 9, {0, 6, -1, 7, 3}, false, true},
      {"celu", BOTH(x.celu(), at::celu(x)), -4, 4, {0, 2, -2, -inf}},
      {"celu_alpha", BOTH(x.celu(0.5), at::celu(x, 0.5)), -4, 4, {0, 2, -2}},
      // tinygrad's selu constants are rounded (1.67326, 1.0507): elu with exactly those is the oracle
      {"selu", BOTH(x.selu(), at::elu(x, 1.67326, 1.0507)), -4, 4, {0, 2, -2, inf, -inf}, false, false, true},
      {"quick_gelu", BOTH(x.quick_gelu(), x * at::sigmoid(x * 1.702)), -4, 4, {0, 2, -2, 30, -30}},
      {"softsign", BOTH(x.softsign(), x / (x.abs() + 1)), -4, 4, {0, 2, -2, 1e6}, false, true},
      {"gelu_none", BOTH(x.gelu("none"), at::gelu(x, "none")), -4, 4, {0, 2, -2, 8, -8}, true},
      {"gelu_tanh", BOTH(x.gelu("tanh"), at::gelu(x, "tanh")), -4, 4, {0, 2, -2}},
      {"clip", BOTH(x.clip(tg::Tensor(-1.0), tg::Tensor(1.5)), x.clip(-1.0, 1.5)), -3, 3, {-1, 1.5, inf, -inf}},
      {"softmin", BOTH(x.softmin(), at::softmax(-x, -1)), -3, 3, {0, 1, -1, 50}, false, false, true},
        };
}

}  // namespace

TEST(TensorApi, Unary) {
  std::vector<Row> f32, f64, f16, scalar, permuted;
  for (const Unary& u : unaries()) {
    // float32: random values in the op's range, then its special values (cycled to a common length)
    std::vector<double> special;
    for (size_t k = 0; k < 12; k++) special.push_back(u.edges.empty() ? (u.lo + u.hi) / 2 : u.edges[k % u.edges.size()]);
    at::Tensor xa = at::cat({input({16}, dtypes::float32, u.lo, u.hi).a, oracle::make<double>(special, {12}, at::kFloat)});
    f32.push_back({u.name, u.t(to_tg(xa)), u.a(xa)});
    Pair d = input({3, 5}, dtypes::float64, u.lo, u.hi);
    f64.push_back({u.name, u.t(d.t), u.a(d.a), u.approximate ? std::optional(approx) : std::nullopt});
    if (u.half) {
      Pair h = input({3, 5}, dtypes::float16, u.lo, u.hi);
      f16.push_back({u.name, u.t(h.t), torch_eval(u.a, h.a)});
    }
    if (!u.layouts) continue;
    Pair z = input({}, dtypes::float32, u.lo, u.hi, 2), p = input({5, 3}, dtypes::float32, u.lo, u.hi, 3);
    scalar.push_back({u.name, u.t(z.t), u.a(z.a)});
    permuted.push_back({u.name, u.t(p.t.transpose()), u.a(p.a.t())});
  }
  expect_rows(f32, "float");
  expect_rows(f64, "double");
  expect_rows(f16, "half");
  expect_rows(scalar, "0-d");
  expect_rows(permuted, "permuted");
  // int inputs become float, as torch's do
  Pair i = input({2, 3}, dtypes::int32, -1, 2), l = input({2, 3}, dtypes::int32, 1, 1000);
  expect_rows({{"asin", i.t.asin(), i.a.asin(), approx}, {"sinh", i.t.sinh(), i.a.sinh()}, {"log10", l.t.log10(), l.a.log10()}}, "int");
}

namespace {
struct Binary {
  std::string name;
  std::function<tg::Tensor(const tg::Tensor&, const tg::Tensor&)> t;
  std::function<at::Tensor(const at::Tensor&, const at::Tensor&)> a;
  double lo2, hi2;  // the second operand's range (the first is [-5, 5))
  bool is_float = true;
};
#define SAME2(expr) [](const tg::Tensor& x, const tg::Tensor& y) { return expr; }, [](const at::Tensor& x, const at::Tensor& y) { return expr; }
}  // namespace

TEST(TensorApi, Binary) {
  std::vector<Binary> ops{
      {"fmod", SAME2(x.fmod(y)), 0.3, 3},
      {"fmod_neg", SAME2(x.fmod(y)), -3, -0.3},
      {"fmod_int", SAME2(x.fmod(y)), 1, 4, false},
      {"fmod_int_neg", SAME2(x.fmod(y)), -4, -1, false},
      {"copysign", SAME2(x.copysign(y)), -3, 3},
      {"logaddexp", SAME2(x.logaddexp(y)), -3, 3},
      {"lerp", [](const tg::Tensor& x, const tg::Tensor& y) { return x.lerp(y, y * 0.3); },
       [](const at::Tensor& x, const at::Tensor& y) { return at::lerp(x, y, y * 0.3); }, -3, 3},
  };
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shape_pairs{{{3, 1}, {1, 4}}, {{}, {}}, {{2, 3}, {}}, {{0, 3}, {1, 3}}};
  for (const auto& [s1, s2] : shape_pairs) {
    std::string what = name_of(dtypes::float32, s1) + " with " + name_of(dtypes::float32, s2);
    std::map<DType, std::vector<Row>> rows;  // every op on every shape pair in its first dtype, on the first pair in the others
    for (const Binary& b : ops)
      for (DType dt : b.is_float ? std::vector<DType>{dtypes::float32, dtypes::float64} : std::vector<DType>{dtypes::int32, dtypes::int64, dtypes::int8}) {
        if (dt != dtypes::float32 && dt != dtypes::int32 && s1 != shape_pairs[0].first) continue;
        Pair x = input(s1, dt, -5, 5, 1), y = input(s2, dt, b.lo2, b.hi2, 2);
        rows[dt].push_back({b.name, b.t(x.t, y.t), b.a(x.a, y.a)});
      }
    for (auto& [dt, r] : rows) expect_rows(r, std::string(dt.name()) + " " + what);
  }
  // special values: signed zeros, infinities, nan, huge operands; fmod by a zero tensor (by a literal 0.0,
  // x - trunc(x/0)*0 folds to x, in tinygrad as here)
  Pair a = values({1, -1, 2.5, -2.5, 0, -0.0, inf, -inf, nan_, 7, -7, 1000, -1000}),
       b = values({-0.0, 0, -1, inf, -3, 2, 3, -2, 1, nan_, 5, 1000, -999}),
       m = values({3, 3, -2, 0.75, 1, 1, 2, 2, 2, 3, 3, 7, 7}), zero = values(std::vector<double>(13, 0.0)),
       c = values({1000, -1000, 0, -inf, 1, 88, -88, 1, 2, 3, 4, 5, 6}), d = values({1000, 999, -1000, 1, nan_, 88, -89, 0, 0, 0, 0, 0, 0});
  expect_rows({{"copysign", a.t.copysign(b.t), at::copysign(a.a, b.a)},
               {"fmod", a.t.fmod(m.t), at::fmod(a.a, m.a)},
               {"fmod by zero", a.t.fmod(zero.t), at::fmod(a.a, zero.a)},
               {"logaddexp", c.t.logaddexp(d.t), at::logaddexp(c.a, d.a)}},
              "special values");
  // scalar operands and weights
  Pair x = input({3, 4}, dtypes::float32, -3, 3, 5), y = input({3, 4}, dtypes::float32, -3, 3, 6), w = input({4}, dtypes::float32, 0, 1, 7);
  std::vector<Row> scalars{{"fmod 1.5", x.t.fmod(1.5), at::fmod(x.a, 1.5)},
                           {"copysign -1", x.t.copysign(-1.0), at::copysign(x.a, -1.0)},
                           {"logaddexp 0.5", x.t.logaddexp(0.5), at::logaddexp(x.a, at::full_like(x.a, 0.5))},
                           {"lerp broadcast weight", x.t.lerp(y.t, w.t), at::lerp(x.a, y.a, w.a)}};
  for (double wt : {0.0, 0.25, 1.0, 1.5, -0.5}) scalars.push_back({"lerp weight " + std::to_string(wt), x.t.lerp(y.t, wt), at::lerp(x.a, y.a, wt)});
  expect_rows(scalars, "scalar operands");
  // uint8 (images): the weight in 7-bit fixed point, rounded half up; exact for weights k/128 and |end - self| < 128
  Pair s8 = values({0, 10, 200, 255, 100, 50, 128, 3}, dtypes::uint8), e8 = values({100, 0, 255, 200, 100, 177, 1, 130}, dtypes::uint8);
  Pair w8 = values({0.5, 0.25, 1, 0.75, 0.125, 0.0078125, 0.5, 0.3984375});
  at::Tensor exact = (s8.a.to(at::kDouble) + at::floor((e8.a.to(at::kDouble) - s8.a.to(at::kDouble)) * w8.a.to(at::kDouble) + 0.5)).to(at::kByte);
  EXPECT_TRUE(same(s8.t.lerp(e8.t, w8.t), exact)) << "lerp uint8";
}

TEST(TensorApi, Classification) {
  Pair v = values({0, -0.0, 1, -2.5, inf, -inf, nan_, 3e38, -1e-30});
  expect_rows({{"isnan", v.t.isnan(), at::isnan(v.a)},
               {"isinf", v.t.isinf(), at::isinf(v.a)},
               {"isinf positive", v.t.isinf(true, false), at::isposinf(v.a)},
               {"isinf negative", v.t.isinf(false, true), at::isneginf(v.a)},
               {"isinf neither", v.t.isinf(false, false), at::zeros_like(v.a, at::kBool)},
               {"isfinite", v.t.isfinite(), at::isfinite(v.a)}},
              "float");
  Pair h = values({0, 1, -inf, inf, nan_, 65504}, dtypes::float16), d = values({0, 1, -inf, inf, nan_, 1e300}, dtypes::float64);
  Pair i = values({0, 1, -7, 2147483647, -5, 3}, dtypes::int32);
  std::vector<Row> others;
  for (auto& [n, p] : std::vector<std::pair<std::string, Pair>>{{"half", h}, {"double", d}, {"int", i}})
    others.insert(others.end(), {{"isnan " + n, p.t.isnan(), at::isnan(p.a)}, {"isinf " + n, p.t.isinf(), at::isinf(p.a)},
                                 {"isfinite " + n, p.t.isfinite(), at::isfinite(p.a)}});
  expect_rows(others, "other dtypes");

  Pair a = values({1, 1, 1, 0, 0, inf, inf, -inf, nan_, nan_, 1e-7, 100, 1e10}),
       b = values({1, 1 + 1e-6, 1 + 1e-4, 1e-9, 1e-7, inf, -inf, -inf, nan_, 1, 0, 100.001, 1.00001e10});
  expect_rows({{"isclose", a.t.isclose(b.t), at::isclose(a.a, b.a)},
               {"isclose equal_nan", a.t.isclose(b.t, 1e-5, 1e-8, true), at::isclose(a.a, b.a, 1e-5, 1e-8, true)},
               {"isclose rtol", a.t.isclose(b.t, 1e-3, 0.0), at::isclose(a.a, b.a, 1e-3, 0.0)},
               {"isclose atol", a.t.isclose(b.t, 0.0, 1e-6), at::isclose(a.a, b.a, 0.0, 1e-6)},
               {"isclose scalar", a.t.isclose(1.0), at::isclose(a.a, at::ones_like(a.a))}},
              "isclose");
  Pair m = input({3, 1}, dtypes::float32, -1, 1, 2), n = input({1, 4}, dtypes::float32, -1, 1, 3);
  EXPECT_TRUE(same(m.t.isclose(n.t, 0.5, 0.2), at::isclose(m.a, n.a, 0.5, 0.2))) << "broadcast";
  Pair p = values({1, 2, nan_}), q = values({1, 2 + 1e-6, nan_}), r = values({1, 2.1, nan_});
  EXPECT_EQ(p.t.allclose(q.t, 1e-5, 1e-8, true), at::allclose(p.a, q.a, 1e-5, 1e-8, true));
  EXPECT_EQ(p.t.allclose(q.t), at::allclose(p.a, q.a));
  EXPECT_EQ(p.t.allclose(r.t, 1e-5, 1e-8, true), at::allclose(p.a, r.a, 1e-5, 1e-8, true));
  EXPECT_TRUE(p.t.allclose(r.t, 0, 0.2, true));
}

TEST(TensorApi, Casts) {
  Pair x = input({2, 5}, dtypes::float32, -300, 300), i = input({2, 5}, dtypes::int32, -100, 100);
  expect_rows({{"bfloat16", x.t.bfloat16(), x.a.to(at::kBFloat16)}, {"int bfloat16", i.t.bfloat16(), i.a.to(at::kBFloat16)}}, "");
  expect_rows({{"double", x.t.double_(), x.a.to(at::kDouble)}, {"int double", i.t.double_(), i.a.to(at::kDouble)}}, "");
  EXPECT_TRUE(same(x.t.long_(), x.a.to(at::kLong)));
  EXPECT_TRUE(same(x.t.short_(), x.a.to(at::kShort)));
}

TEST(TensorApi, Triangular) {
  for (const auto& [shape, diagonals] : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{4, 4}, {-1, 0, 1}}, {{3, 5}, {-2, 2, 7}}, {{5, 2}, {0, -3}}, {{2, 3, 4}, {1}}, {{0, 3}, {0}}}) {
    Pair x = input(shape, dtypes::float32);
    std::vector<Row> rows;
    for (int64_t d : diagonals)
      rows.insert(rows.end(), {{"triu " + std::to_string(d), x.t.triu(d), x.a.triu(d)}, {"tril " + std::to_string(d), x.t.tril(d), x.a.tril(d)}});
    expect_rows(rows, name_of(dtypes::float32, shape));
  }
  Pair i = input({3, 4}, dtypes::int32, -9, 9), b = input({3, 3}, dtypes::bool_), p = input({5, 3}, dtypes::float32);
  expect_rows({{"triu -1", i.t.triu(-1), i.a.triu(-1)}, {"tril", i.t.tril(), i.a.tril()}}, "int");
  EXPECT_TRUE(same(b.t.triu(), b.a.triu())) << "bool";
  EXPECT_TRUE(same(p.t.transpose().tril(1), p.a.t().tril(1))) << "permuted";
}

TEST(TensorApi, VarStdMean) {
  Pair x = input({3, 4, 5}, dtypes::float32);
  for (auto [axes, keep, corr] : std::vector<std::tuple<std::vector<int64_t>, bool, int64_t>>{
           {{1}, false, 1}, {{0, 2}, true, 1}, {{-1}, false, 0}, {{2}, true, 2}}) {
    auto [v, m] = x.t.var_mean(axes, keep, corr);
    auto [s, m2] = x.t.std_mean(axes, keep, corr);
    auto [av, am] = at::var_mean(x.a, at::OptionalIntArrayRef(axes), c10::optional<int64_t>(corr), keep);
    auto [as, am2] = at::std_mean(x.a, at::OptionalIntArrayRef(axes), c10::optional<int64_t>(corr), keep);
    expect_rows({{"var", v, av}, {"mean", m, am}, {"std", s, as}, {"mean of std_mean", m2, am2}},
                "axis " + std::to_string(axes[0]) + " correction " + std::to_string(corr) + (keep ? " keepdim" : ""));
  }
  auto [v, m] = x.t.var_mean();
  auto [av, am] = at::var_mean(x.a);
  expect_rows({{"var", v, av}, {"mean", m, am}}, "all axes");
  // an int tensor's squared deviations are summed in its sum dtype (int32), each truncated, as tinygrad does
  Pair i = input({4, 6}, dtypes::int32, -9, 9);
  auto [iv, im] = i.t.std_mean(1);
  at::Tensor fi = i.a.to(at::kFloat), dev = (fi - fi.mean(1, true)).square().trunc();
  expect_rows({{"std", iv, (dev.sum(1) / 5).sqrt()}, {"mean", im, fi.mean(1)}}, "int input: float results");
}

TEST(TensorApi, Scans) {
  const std::vector<std::pair<std::vector<int64_t>, int64_t>> cases{{{}, 0}, {{7}, 0}, {{3, 5}, 0}, {{2, 3, 4}, -2}, {{2, 0, 3}, 1}};
  for (const auto& [shape, axis] : cases) {
    std::string what = name_of(dtypes::float32, shape) + " axis " + std::to_string(axis);
    Pair x = input(shape, dtypes::float32, 0.5, 1.5), y = input(shape, dtypes::float32, -3, 3, 2);
    auto [mv, mi] = y.t.cummax(axis);
    auto [nv, ni] = y.t.cummin(axis);
    auto [tv, ti] = at::cummax(y.a, axis);
    auto [uv, ui] = at::cummin(y.a, axis);
    expect_rows({{"cumprod", x.t.cumprod(axis), x.a.cumprod(axis)}, {"cummax", mv, tv}, {"cummin", nv, uv},
                 {"logcumsumexp", y.t.logcumsumexp(axis), at::logcumsumexp(y.a, axis)}}, what);
    expect_rows({{"cummax indices", mi, ti.to(at::kInt)}, {"cummin indices", ni, ui.to(at::kInt)}}, what);
  }
  // ints: tinygrad keeps int32 where torch's cumprod gives int64; cummin of ints inverts with ~
  Pair i = input({3, 6}, dtypes::int32, -4, 4, 3);
  expect_rows({{"cumprod", i.t.cumprod(1), i.a.cumprod(1).to(at::kInt)}, {"cummax", i.t.cummax(1).first, std::get<0>(at::cummax(i.a, 1))},
               {"cummin", i.t.cummin(0).first, std::get<0>(at::cummin(i.a, 0))}}, "int");
  Pair u = input({9}, dtypes::uint8, 0, 250, 4);
  EXPECT_TRUE(same(u.t.cummin(0).first, std::get<0>(at::cummin(u.a, 0)))) << "uint8 cummin";
  // long axes take the two-stage path (chunks of 256)
  Pair l = input({2, 700}, dtypes::float32, 0.995, 1.005, 5), lm = input({2, 700}, dtypes::float32, -50, 50, 6);
  auto [lv, li] = lm.t.cummax(1);
  expect_rows({{"cumprod", l.t.cumprod(1), l.a.cumprod(1), oracle::Tol{1e-4, 1e-6}}, {"cummax", lv, std::get<0>(at::cummax(lm.a, 1))}}, "of 700");
  EXPECT_TRUE(same(li, std::get<1>(at::cummax(lm.a, 1)), true)) << "cummax indices of 700";
  // float64; large values and -inf (logcumsumexp is stable); zeros and negatives in cumprod; infinities in cummax
  Pair d = input({4, 5}, dtypes::float64, -3, 3, 7);
  expect_rows({{"logcumsumexp", d.t.logcumsumexp(1), at::logcumsumexp(d.a, 1)}, {"cumprod", d.t.cumprod(0), d.a.cumprod(0)}}, "double");
  Pair big = values({500, 1000, -1000, 999, 0, -inf, 3}), z = values({2, -1, 0, 3, -4, 0.5, 7}), s = values({-inf, 1, 2, inf, 0, -1, 3});
  expect_rows({{"logcumsumexp", big.t.logcumsumexp(0), at::logcumsumexp(big.a, 0)}, {"cumprod", z.t.cumprod(0), z.a.cumprod(0)},
               {"cummax", s.t.cummax(0).first, std::get<0>(at::cummax(s.a, 0))}, {"cummin", s.t.cummin(0).first, std::get<0>(at::cummin(s.a, 0))}},
              "special values");
  Pair p = input({5, 4}, dtypes::float32, -3, 3, 8);
  expect_rows({{"logcumsumexp", p.t.transpose().logcumsumexp(1), at::logcumsumexp(p.a.t(), 1)},
               {"cummax", p.t.flip(0).transpose().cummax(1).first, std::get<0>(at::cummax(p.a.flip(0).t(), 1))}},
              "non-contiguous");
}

TEST(TensorApi, CumTies) {
  // on ties tinygrad gives the first index of the running extreme, torch the last: hand-derived
  tg::Tensor x = tg::Tensor::from_vector<float>({1, 3, 3, 2, 5, 5, 1});
  EXPECT_EQ(x.cummax(0).first.to_vector<float>(), (std::vector<float>{1, 3, 3, 3, 5, 5, 5}));
  EXPECT_EQ(x.cummax(0).second.to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 1, 1, 4, 4, 4}));
  EXPECT_EQ(x.cummin(0).second.to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(x.cummax(0).second.dtype(), dtypes::int32);
  tg::Tensor s(2.5f, dtypes::float32);
  EXPECT_EQ(s.cummax(0).first.item<float>(), 2.5f);
  EXPECT_EQ(s.cummax(0).second.item<int32_t>(), 0);
}

TEST(TensorApi, InPlace) {
  Pair x = input({3, 4}, dtypes::float32, -3, 3, 1), y = input({3, 4}, dtypes::float32, 0.5, 3, 2), r = input({4}, dtypes::float32, -1, 1, 3);
  tg::Tensor t = x.t.clone().realize();
  at::Tensor a = x.a.clone();
  tg::Tensor alias = t;  // a copy of the handle sees every in-place update, as a second Python name would
  tg::Tensor& ret = (t += y.t);
  EXPECT_TRUE(&ret == &t);
  a += y.a;
  EXPECT_TRUE(same(t, a)) << "+=";
  t -= r.t, a -= r.a;  // broadcast operand
  EXPECT_TRUE(same(t, a)) << "-= broadcast";
  t *= 2.5, a *= 2.5;
  EXPECT_TRUE(same(t, a)) << "*= scalar";
  t /= y.t, a /= y.a;
  EXPECT_TRUE(same(t, a)) << "/=";
  EXPECT_TRUE(same(alias, a)) << "the alias";
  ((t += 1) *= 2) -= y.t, ((a += 1) *= 2) -= y.a;
  EXPECT_TRUE(same(t, a)) << "chained";
  // an update of a view writes into its base, as torch's in-place op on a view does
  tg::Tensor base = x.t.clone().realize();
  at::Tensor abase = x.a.clone();
  tg::Tensor row = base[1];
  row += 10;
  abase[1] += 10;
  EXPECT_TRUE(same(base, abase)) << "view +=";
  // int in-place ops
  Pair i = input({6}, dtypes::int32, -50, 50, 4), j = input({6}, dtypes::int32, 0, 4, 5);
  tg::Tensor ti = i.t.clone().realize();
  at::Tensor ai = i.a.clone();
  ti += j.t, ai += j.a;
  ti *= 3, ai *= 3;
  ti &= 0x3f, ai.bitwise_and_(0x3f);
  ti |= j.t, ai.bitwise_or_(j.a);
  ti ^= 5, ai.bitwise_xor_(5);
  ti <<= j.t, ai.bitwise_left_shift_(j.a);
  ti >>= 1, ai.bitwise_right_shift_(1);
  EXPECT_TRUE(same(ti, ai)) << "int ops";
}

// tinygrad's //=, **=, @= (idiv_, pow_, matmul_: C++ has no such operators) against torch's in-place ops
TEST(TensorApi, InPlaceNamed) {
  // idiv_: floor division, as Python's // (torch's div_ with rounding_mode "floor"), broadcast and scalar operands
  Pair i = input({4, 6}, dtypes::int32, -50, 50, 1), j = input({6}, dtypes::int32, 1, 9, 2), k = input({4, 6}, dtypes::int32, -9, -1, 3);
  tg::Tensor ti = i.t.clone().realize(), alias = ti;
  at::Tensor ai = i.a.clone();
  tg::Tensor& ret = ti.idiv_(j.t);
  EXPECT_TRUE(&ret == &ti);
  ai.div_(j.a, "floor");
  EXPECT_TRUE(same(alias, ai)) << "idiv_ broadcast, seen through an alias";
  ti.idiv_(k.t), ai.div_(k.a, "floor");
  EXPECT_TRUE(same(ti, ai)) << "idiv_ by negatives";
  ti.idiv_(tg::Tensor(int64_t(3))), ai.div_(3, "floor");
  EXPECT_TRUE(same(ti, ai)) << "idiv_ scalar";
  // pow_: float bases and exponents, a broadcast row, a scalar, and a half tensor
  Pair b = input({3, 5}, dtypes::float32, 0.2, 3, 4), e = input({5}, dtypes::float32, -2, 2, 5);
  tg::Tensor tb = b.t.clone().realize();
  at::Tensor ab = b.a.clone();
  tb.pow_(e.t), ab.pow_(e.a);
  EXPECT_TRUE(same(tb, ab)) << "pow_ broadcast";
  tb.pow_(tg::Tensor(0.5)), ab.pow_(0.5);
  EXPECT_TRUE(same(tb, ab)) << "pow_ scalar";
  Pair h = input({8}, dtypes::float16, 0.5, 2, 6), he = input({8}, dtypes::float16, -1, 2, 7);
  tg::Tensor th = h.t.clone().realize();
  at::Tensor ah = h.a.clone();
  th.pow_(he.t), ah.pow_(he.a);
  EXPECT_TRUE(same(th, ah)) << "pow_ half";
  // matmul_: square right operands keep the shape; a batch, and a row of a matrix updated in place
  Pair m = input({4, 4}, dtypes::float32, -2, 2, 8), w = input({4, 4}, dtypes::float32, -2, 2, 9), bm = input({2, 3, 4}, dtypes::float32, -2, 2, 10);
  tg::Tensor tm = m.t.clone().realize();
  at::Tensor am = m.a.clone();
  tm.matmul_(w.t), am = am.matmul(w.a);
  EXPECT_TRUE(same(tm, am)) << "matmul_";
  tg::Tensor tbm = bm.t.clone().realize();
  tbm.matmul_(w.t);
  EXPECT_TRUE(same(tbm, bm.a.matmul(w.a))) << "matmul_ batched";
  tg::Tensor base = m.t.clone().realize(), row = base[1].reshape({1, 4});
  at::Tensor abase = m.a.clone();
  row.matmul_(w.t);
  abase[1] = abase[1].matmul(w.a);
  EXPECT_TRUE(same(base, abase)) << "matmul_ of a view writes into its base";
}

// ***** bad arguments: a tg::Error that names the op *****


TEST(TensorApi, Errors) {
  tg::Tensor v = tg::Tensor::from_vector<float>({1, 2, 3}), m = tg::Tensor::ones({2, 3}), s(1.5f, dtypes::float32);
  expect_error([&] { v.triu(); }, {"triu", "(3,)"});
  expect_error([&] { s.tril(1); }, {"tril", "2 dims"});
  expect_error([&] { v.isclose(tg::Tensor::ones({4})); }, {"isclose", "(3,)", "(4,)"});
  expect_error([&] { (void)v.allclose(tg::Tensor::ones({2, 4})); }, {"isclose", "(2, 4)"});
  expect_error([&] { m.cumprod(2); }, {"cumprod", "dim 2"});
  expect_error([&] { m.cummax(-3); }, {"cummax", "dim -3"});
  expect_error([&] { m.cummin(5); }, {"cummin", "dim 5"});
  expect_error([&] { m.logcumsumexp(2); }, {"logcumsumexp", "dim 2"});
  expect_error([&] { m.cumsum(-3); }, {"cumsum", "dim -3"});
  expect_error([&] { v.gelu("erf"); }, {"gelu", "erf"});
  expect_error([&] { v.var_mean(3); }, {"dim 3"});
  expect_error([&] { v.fmod(tg::Tensor::ones({2})); }, {"cannot broadcast"});
  expect_error([&] { v.lerp(m.reshape({3, 2}), 0.5); }, {"cannot broadcast"});
  // in-place ops keep the dtype and the shape: an int tensor cannot take a true division, a row cannot take a matrix
  tg::Tensor i = tg::Tensor::from_vector<int32_t>({1, 2, 3}).realize();
  expect_error([&] { i /= 2; }, {"assign", "dtype"});
  tg::Tensor w = tg::Tensor::from_vector<float>({1, 2, 3}).realize();
  expect_error([&] { w += m; }, {"assign", "(2, 3)", "(3,)"});
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{1, 2, 3})) << "a failed in-place op leaves the tensor alone";
}
