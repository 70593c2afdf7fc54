// Forward values of every Tensor op against libtorch: each case is written once (a generic lambda where the two C++
// APIs agree, a pair where they do not) and run over shapes (0-d, size-0, broadcasting), non-contiguous inputs
// (permuted, flipped, shrunk, padded) and every dtype the op accepts.
#include "tensor_harness.h"

using namespace conf;

namespace {

const std::vector<DType> floats{dtypes::float32, dtypes::float16, dtypes::bfloat16, dtypes::float64};
const std::vector<DType> ints{dtypes::int8, dtypes::uint8, dtypes::int16, dtypes::int32, dtypes::int64};
const std::vector<std::vector<int64_t>> shapes{{}, {1}, {7}, {3, 5}, {2, 3, 4}, {0}, {4, 0}};

std::string name_of(DType d, const std::vector<int64_t>& s, const std::string& layout) {
  std::string r = std::string(d.name()) + " (";
  for (auto x : s) r += std::to_string(x) + ",";
  return r + ") " + layout;
}

struct Unary {
  std::string name;
  std::function<tg::Tensor(const tg::Tensor&)> t;
  std::function<at::Tensor(const at::Tensor&)> a;
  double lo, hi;
  std::vector<DType> dts;
  bool cast_expected = false;
};
#define SAME(expr) [](const tg::Tensor& x) { return expr; }, [](const at::Tensor& x) { return expr; }

std::vector<Unary> unaries() {
  std::vector<DType> fi = floats;
  fi.insert(fi.end(), ints.begin(), ints.end());
  return {
      {"neg", SAME(x.neg()), -3, 3, {dtypes::float32, dtypes::float16, dtypes::int32, dtypes::int8, dtypes::int64}},
      {"reciprocal", SAME(x.reciprocal()), 0.5, 4, floats},
      {"sqrt", SAME(x.sqrt()), 0, 9, floats},
      {"rsqrt", SAME(x.rsqrt()), 0.25, 9, floats},
      {"exp", SAME(x.exp()), -4, 4, floats},
      {"exp2", SAME(x.exp2()), -4, 4, floats},
      {"log", SAME(x.log()), 0.1, 20, floats},
      {"log2", SAME(x.log2()), 0.1, 20, floats},
      {"sin", SAME(x.sin()), -6, 6, floats},
      {"cos", SAME(x.cos()), -6, 6, floats},
      {"tan", SAME(x.tan()), -1.2, 1.2, floats},
      {"abs", SAME(x.abs()), -3, 3, {dtypes::float32, dtypes::float16, dtypes::int32, dtypes::int8, dtypes::int64}},
      {"sign", SAME(x.sign()), -3, 3, {dtypes::float32, dtypes::float64, dtypes::int32}},
      {"trunc", SAME(x.trunc()), -5, 5, floats},
      {"floor", SAME(x.floor()), -5, 5, floats},
      {"ceil", SAME(x.ceil()), -5, 5, floats},
      {"round", SAME(x.round()), -5, 5, {dtypes::float32, dtypes::float64}},
      {"relu", SAME(x.relu()), -3, 3, {dtypes::float32, dtypes::float16, dtypes::float64, dtypes::int32}},
      {"sigmoid", SAME(x.sigmoid()), -6, 6, floats},
      {"tanh", SAME(x.tanh()), -4, 4, floats},
      {"square", SAME(x.square()), -3, 3, {dtypes::float32, dtypes::float64, dtypes::int32}},
      {"gelu", [](const tg::Tensor& x) { return x.gelu(); }, [](const at::Tensor& x) { return at::gelu(x, "tanh"); }, -4, 4, {dtypes::float32, dtypes::float64}},
      {"silu", [](const tg::Tensor& x) { return x.silu(); }, [](const at::Tensor& x) { return at::silu(x); }, -4, 4, {dtypes::float32, dtypes::float64}},
      {"logical_not", SAME(x.logical_not()), -1, 1, {dtypes::bool_}},
      {"clamp", [](const tg::Tensor& x) { return x.clamp(tg::Tensor(-1.0), tg::Tensor(1.5)); },
       [](const at::Tensor& x) { return x.clamp(-1.0, 1.5); }, -3, 3, {dtypes::float32, dtypes::float64}},
      {"add_scalar", [](const tg::Tensor& x) { return x + 2; }, [](const at::Tensor& x) { return x + 2; }, -3, 3, fi},
      {"mul_float_scalar", [](const tg::Tensor& x) { return x * 2.5; }, [](const at::Tensor& x) { return x * 2.5; }, -3, 3,
       {dtypes::float32, dtypes::float16, dtypes::int32}},
      {"rsub_scalar", [](const tg::Tensor& x) { return 1 - x; }, [](const at::Tensor& x) { return 1 - x; }, -3, 3, {dtypes::float32, dtypes::int32}},
      {"div_scalar", [](const tg::Tensor& x) { return x / 4; }, [](const at::Tensor& x) { return x / 4; }, -3, 3, {dtypes::float32, dtypes::int32}},
      {"cast_int", [](const tg::Tensor& x) { return x.cast(dtypes::int32); }, [](const at::Tensor& x) { return x.to(at::kInt); }, -50, 50,
       {dtypes::float32, dtypes::float64, dtypes::int64, dtypes::int8}},
      {"cast_float", [](const tg::Tensor& x) { return x.cast(dtypes::float32); }, [](const at::Tensor& x) { return x.to(at::kFloat); }, -50, 50,
       {dtypes::int32, dtypes::uint8, dtypes::float16, dtypes::bfloat16, dtypes::float64, dtypes::bool_}},
      {"cast_half", [](const tg::Tensor& x) { return x.cast(dtypes::float16); }, [](const at::Tensor& x) { return x.to(at::kHalf); }, -50, 50,
       {dtypes::float32, dtypes::int32}},
      {"cast_bool", [](const tg::Tensor& x) { return x.cast(dtypes::bool_); }, [](const at::Tensor& x) { return x.to(at::kBool); }, -2, 2,
       {dtypes::float32, dtypes::int32}},
      {"bitcast", [](const tg::Tensor& x) { return x.bitcast(dtypes::int32); }, [](const at::Tensor& x) { return x.view(at::kInt); }, -9, 9,
       {dtypes::float32}},
  };
}

}  // namespace

TEST(Conformance, Unary) {
  for (const Unary& u : unaries())
    for (DType dt : u.dts)
      for (const auto& shape : shapes)
        for (const Layout& l : layouts(shape.size())) {
          // every layout on two shapes, the plain layout on the rest (each case is a kernel to compile)
          if (l.name != "contiguous" && shape != std::vector<int64_t>{3, 5} && !(shape.size() == 3 && l.name == "permuted")) continue;
          Pair x = l.view(input(l.source_shape(shape), dt, u.lo, u.hi));
          EXPECT_TRUE(same(u.t(x.t), torch_eval(u.a, x.a), u.cast_expected)) << u.name << " " << name_of(dt, shape, l.name);
        }
}

namespace {

struct Binary {
  std::string name;
  std::function<tg::Tensor(const tg::Tensor&, const tg::Tensor&)> t;
  std::function<at::Tensor(const at::Tensor&, const at::Tensor&)> a;
  double lo, hi;
  std::vector<DType> dts;
  double lo2 = 0, hi2 = 0;  // the second operand's range when it differs
};
#define SAME2(expr) [](const tg::Tensor& x, const tg::Tensor& y) { return expr; }, [](const at::Tensor& x, const at::Tensor& y) { return expr; }

std::vector<Binary> binaries() {
  std::vector<DType> num{dtypes::float32, dtypes::float16, dtypes::float64, dtypes::int32, dtypes::int8, dtypes::uint8, dtypes::int64};
  std::vector<DType> bits{dtypes::int32, dtypes::uint8, dtypes::int64, dtypes::bool_};
  return {
      {"add", SAME2(x.add(y)), -3, 3, {dtypes::float32, dtypes::float16, dtypes::bfloat16, dtypes::float64, dtypes::int32, dtypes::int8, dtypes::uint8, dtypes::int64}},
      {"sub", SAME2(x.sub(y)), -3, 3, num},
      {"mul", SAME2(x.mul(y)), -3, 3, num},
      {"div", SAME2(x.div(y)), -3, 3, {dtypes::float32, dtypes::float64, dtypes::int32}, 0.5, 3},
      {"idiv", [](const tg::Tensor& x, const tg::Tensor& y) { return x.idiv(y); },
       [](const at::Tensor& x, const at::Tensor& y) { return x.div(y, "floor"); }, -20, 20, {dtypes::int32, dtypes::int64, dtypes::int8}, 1, 6},
      {"mod", [](const tg::Tensor& x, const tg::Tensor& y) { return x.mod(y); },
       [](const at::Tensor& x, const at::Tensor& y) { return at::remainder(x, y); }, -20, 20, {dtypes::int32, dtypes::int64}, 1, 6},
      {"pow", SAME2(x.pow(y)), 0.1, 3, {dtypes::float32, dtypes::float64}, -2, 2},
      {"maximum", SAME2(x.maximum(y)), -3, 3, {dtypes::float32, dtypes::int32, dtypes::uint8, dtypes::float16}},
      {"minimum", SAME2(x.minimum(y)), -3, 3, {dtypes::float32, dtypes::int32, dtypes::int8}},
      {"lt", SAME2(x.lt(y)), -2, 2, {dtypes::float32, dtypes::int32, dtypes::bool_}},
      {"gt", SAME2(x.gt(y)), -2, 2, {dtypes::float32, dtypes::int32}},
      {"le", SAME2(x.le(y)), -2, 2, {dtypes::float32, dtypes::int32}},
      {"ge", SAME2(x.ge(y)), -2, 2, {dtypes::float32, dtypes::int32}},
      {"eq", SAME2(x.eq(y)), -2, 2, {dtypes::float32, dtypes::int32, dtypes::bool_}},
      {"ne", SAME2(x.ne(y)), -2, 2, {dtypes::float32, dtypes::int32, dtypes::bool_}},
      {"bitwise_and", SAME2(x.bitwise_and(y)), -50, 50, bits},
      {"bitwise_or", SAME2(x.bitwise_or(y)), -50, 50, bits},
      {"bitwise_xor", SAME2(x.bitwise_xor(y)), -50, 50, bits},
      {"lshift", [](const tg::Tensor& x, const tg::Tensor& y) { return x.lshift(y); },
       [](const at::Tensor& x, const at::Tensor& y) { return at::bitwise_left_shift(x, y); }, 0, 50, {dtypes::int32, dtypes::uint8}, 0, 4},
      {"rshift", [](const tg::Tensor& x, const tg::Tensor& y) { return x.rshift(y); },
       [](const at::Tensor& x, const at::Tensor& y) { return at::bitwise_right_shift(x, y); }, 0, 100, {dtypes::int32, dtypes::uint8}, 0, 4},
      {"operators", [](const tg::Tensor& x, const tg::Tensor& y) { return (x + y) * (x - y) / (y * y + 1) + (-x); },
       [](const at::Tensor& x, const at::Tensor& y) { return (x + y) * (x - y) / (y * y + 1) + (-x); }, -3, 3, {dtypes::float32, dtypes::float64}},
      {"where", [](const tg::Tensor& x, const tg::Tensor& y) { return (x > y).where(x, y * 2); },
       [](const at::Tensor& x, const at::Tensor& y) { return at::where(x > y, x, y * 2); }, -3, 3, {dtypes::float32, dtypes::int32}},
  };
}

// shape pairs that broadcast, including 0-d and size-0
const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shape_pairs{
    {{}, {}}, {{5}, {5}}, {{3, 4}, {3, 4}}, {{3, 1}, {1, 4}}, {{2, 3, 4}, {4}}, {{}, {3, 2}}, {{4, 1, 2}, {3, 1}}, {{0, 3}, {1, 3}}, {{2, 0}, {2, 1}}};

}  // namespace

TEST(Conformance, Binary) {
  for (const Binary& b : binaries())
    for (DType dt : b.dts)
      for (const auto& [s1, s2] : shape_pairs) {
        Pair x = input(s1, dt, b.lo, b.hi, 1), y = input(s2, dt, b.hi2 > b.lo2 ? b.lo2 : b.lo, b.hi2 > b.lo2 ? b.hi2 : b.hi, 2);
        EXPECT_TRUE(same(b.t(x.t, y.t), torch_eval(b.a, x.a, y.a))) << b.name << " " << name_of(dt, s1, "") << " with " << name_of(dt, s2, "");
      }
  // non-contiguous operands
  for (const Binary& b : binaries()) {
    DType dt = b.dts[0];
    for (const Layout& l : layouts(2)) {
      Pair x = l.view(input(l.source_shape({4, 5}), dt, b.lo, b.hi, 3));
      Pair y = input({4, 5}, dt, b.hi2 > b.lo2 ? b.lo2 : b.lo, b.hi2 > b.lo2 ? b.hi2 : b.hi, 4);
      EXPECT_TRUE(same(b.t(x.t, y.t), torch_eval(b.a, x.a, y.a))) << b.name << " " << l.name;
    }
  }
}

TEST(Conformance, MixedDtypesPromote) {
  Pair i = input({6}, dtypes::int32, -5, 5), f = input({6}, dtypes::float32), h = input({6}, dtypes::float16), u = input({6}, dtypes::uint8, 0, 9);
  Pair b = input({6}, dtypes::bool_), i8 = input({6}, dtypes::int8, -5, 5);
  EXPECT_TRUE(same(i.t + f.t, i.a + f.a));
  EXPECT_TRUE(same(h.t * f.t, h.a * f.a));
  EXPECT_TRUE(same(i.t + 2.5, i.a + 2.5));
  EXPECT_TRUE(same(h.t + 1, h.a + 1));
  EXPECT_TRUE(same(u.t + i8.t, u.a + i8.a));
  EXPECT_TRUE(same(b.t + i.t, b.a + i.a));
  EXPECT_TRUE(same(i.t / i.t.abs().add(1), i.a / (i.a.abs() + 1)));
  EXPECT_TRUE(same(i.t < 1.5, i.a < 1.5));
}

namespace {

struct Reduce {
  std::string name;
  std::function<tg::Tensor(const tg::Tensor&, std::vector<int64_t>, bool)> t;
  std::function<at::Tensor(const at::Tensor&, std::vector<int64_t>, bool)> a;
  std::vector<DType> dts;
  bool cast_expected = false;
  bool single_axis = false;
};

std::vector<Reduce> reduces() {
  return {
      {"sum", [](const tg::Tensor& x, std::vector<int64_t> ax, bool k) { return x.sum(ax, k); },
       [](const at::Tensor& x, std::vector<int64_t> ax, bool k) { return x.sum(ax, k); }, {dtypes::float32, dtypes::float64, dtypes::float16, dtypes::int32}, true},
      {"max", [](const tg::Tensor& x, std::vector<int64_t> ax, bool k) { return x.max(ax, k); },
       [](const at::Tensor& x, std::vector<int64_t> ax, bool k) { return at::amax(x, ax, k); }, {dtypes::float32, dtypes::int32, dtypes::int8, dtypes::uint8}},
      {"min", [](const tg::Tensor& x, std::vector<int64_t> ax, bool k) { return x.min(ax, k); },
       [](const at::Tensor& x, std::vector<int64_t> ax, bool k) { return at::amin(x, ax, k); }, {dtypes::float32, dtypes::int32, dtypes::uint8}},
      {"mean", [](const tg::Tensor& x, std::vector<int64_t> ax, bool k) { return x.mean(ax, k); },
       [](const at::Tensor& x, std::vector<int64_t> ax, bool k) { return x.mean(ax, k); }, {dtypes::float32, dtypes::float64}},
      {"prod", [](const tg::Tensor& x, std::vector<int64_t> ax, bool k) { return x.prod(ax, k); },
       [](const at::Tensor& x, std::vector<int64_t> ax, bool k) { return x.prod(ax[0], k); }, {dtypes::float32, dtypes::int32}, true, true},
      {"logsumexp", [](const tg::Tensor& x, std::vector<int64_t> ax, bool k) { return x.logsumexp(ax, k); },
       [](const at::Tensor& x, std::vector<int64_t> ax, bool k) { return at::logsumexp(x, ax, k); }, {dtypes::float32}},
      {"argmax", [](const tg::Tensor& x, std::vector<int64_t> ax, bool k) { return x.argmax(ax[0], k); },
       [](const at::Tensor& x, std::vector<int64_t> ax, bool k) { return x.argmax(ax[0], k); }, {dtypes::float32, dtypes::int32}, true, true},
      {"argmin", [](const tg::Tensor& x, std::vector<int64_t> ax, bool k) { return x.argmin(ax[0], k); },
       [](const at::Tensor& x, std::vector<int64_t> ax, bool k) { return x.argmin(ax[0], k); }, {dtypes::float32}, true, true},
      {"softmax", [](const tg::Tensor& x, std::vector<int64_t> ax, bool) { return x.softmax(ax[0]); },
       [](const at::Tensor& x, std::vector<int64_t> ax, bool) { return at::softmax(x, ax[0]); }, {dtypes::float32, dtypes::float64}, false, true},
      {"log_softmax", [](const tg::Tensor& x, std::vector<int64_t> ax, bool) { return x.log_softmax(ax[0]); },
       [](const at::Tensor& x, std::vector<int64_t> ax, bool) { return at::log_softmax(x, ax[0]); }, {dtypes::float32}, false, true},
  };
}

}  // namespace

TEST(Conformance, Reduce) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases{
      {{7}, {0}}, {{3, 5}, {1}}, {{3, 5}, {0}}, {{3, 5}, {-1}}, {{2, 3, 4}, {0, 2}}, {{2, 3, 4}, {1}}, {{2, 3, 4}, {0, 1, 2}}, {{4, 1}, {1}}};
  for (const Reduce& r : reduces())
    for (DType dt : r.dts)
      for (const auto& [shape, axes] : cases) {
        if (r.single_axis && axes.size() != 1) continue;
        for (bool keep : {false, true}) {
          Pair x = input(shape, dt, dt.is_int() ? -20 : -3, dt.is_int() ? 20 : 3);
          EXPECT_TRUE(same(r.t(x.t, axes, keep), r.a(x.a, axes, keep), r.cast_expected))
              << r.name << " " << name_of(dt, shape, keep ? "keepdim" : "") << " axis " << axes[0];
        }
      }
  // non-contiguous inputs
  for (const Reduce& r : reduces())
    for (const Layout& l : layouts(2)) {
      Pair x = l.view(input(l.source_shape({5, 6}), r.dts[0]));
      EXPECT_TRUE(same(r.t(x.t, {1}, false), r.a(x.a, {1}, false), r.cast_expected)) << r.name << " " << l.name;
      EXPECT_TRUE(same(r.t(x.t, {0}, true), r.a(x.a, {0}, true), r.cast_expected)) << r.name << " " << l.name;
    }
}

TEST(Conformance, ReduceAll) {
  Pair x = input({3, 4}, dtypes::float32);
  EXPECT_TRUE(same(x.t.sum(), x.a.sum()));
  EXPECT_TRUE(same(x.t.max(), x.a.max()));
  EXPECT_TRUE(same(x.t.min(), x.a.min()));
  EXPECT_TRUE(same(x.t.mean(), x.a.mean()));
  EXPECT_TRUE(same(x.t.argmax(), x.a.argmax(), true));
  Pair e = input({0, 3}, dtypes::float32);
  EXPECT_TRUE(same(e.t.sum(0), e.a.sum(0)));
  EXPECT_TRUE(same(e.t.sum(), e.a.sum()));
  Pair s = input({}, dtypes::float32);
  EXPECT_TRUE(same(s.t.sum(), s.a.sum()));
  Pair i = input({5, 6}, dtypes::int32, -9, 9);
  EXPECT_TRUE(same(i.t.sum(), i.a.sum(), true));
}

TEST(Conformance, Movement) {
  Pair x = input({2, 3, 4}, dtypes::float32);
  EXPECT_TRUE(same(x.t.reshape({6, 4}), x.a.reshape({6, 4})));
  EXPECT_TRUE(same(x.t.reshape({-1, 2}), x.a.reshape({-1, 2})));
  EXPECT_TRUE(same(x.t.permute({2, 0, 1}), x.a.permute({2, 0, 1})));
  EXPECT_TRUE(same(x.t.flip({0, 2}), x.a.flip({0, 2})));
  EXPECT_TRUE(same(x.t.transpose(0, 2), x.a.transpose(0, 2)));
  EXPECT_TRUE(same(x.t.unsqueeze(1), x.a.unsqueeze(1)));
  EXPECT_TRUE(same(x.t.unsqueeze(1).squeeze(1), x.a.unsqueeze(1).squeeze(1)));
  EXPECT_TRUE(same(x.t.flatten(1), x.a.flatten(1)));
  EXPECT_TRUE(same(x.t.flatten(), x.a.flatten()));
  EXPECT_TRUE(same(x.t.repeat({2, 1, 3}), x.a.repeat({2, 1, 3})));
  EXPECT_TRUE(same(x.t.shrink({{0, 2}, {1, 3}, {1, 4}}), x.a.slice(1, 1, 3).slice(2, 1, 4)));
  EXPECT_TRUE(same(x.t.pad({{1, 0}, {0, 2}, {1, 1}}, 2.5), at::constant_pad_nd(x.a, {1, 1, 0, 2, 1, 0}, 2.5)));
  EXPECT_TRUE(same(x.t.pad({{0, 0}, {-1, 1}, {0, 0}}), at::constant_pad_nd(x.a, {0, 0, -1, 1, 0, 0}, 0)));
  Pair c = input({3, 1}, dtypes::float32);
  EXPECT_TRUE(same(c.t.expand({3, 5}), c.a.expand({3, 5})));
  EXPECT_TRUE(same(c.t.expand({2, -1, 4}), c.a.expand({2, -1, 4})));
  Pair y = input({2, 3, 4}, dtypes::float32, -3, 3, 9), z = input({2, 1, 4}, dtypes::float32, -3, 3, 10);
  EXPECT_TRUE(same(tg::Tensor::cat({x.t, y.t, z.t}, 1), at::cat({x.a, y.a, z.a}, 1)));
  EXPECT_TRUE(same(x.t.cat(y.t, -1), at::cat({x.a, y.a}, -1)));
  EXPECT_TRUE(same(x.t.stack(y.t, 1), at::stack({x.a, y.a}, 1)));
  // slicing with steps, negative indices, an int index
  Pair v = input({10, 6}, dtypes::int32, -50, 50);
  EXPECT_TRUE(same(v.t[{tg::Slice{1, 9, 3}, tg::Slice{{}, {}, -2}}], v.a.slice(0, 1, 9, 3).flip({1}).slice(1, 0, 6, 2)));
  EXPECT_TRUE(same(v.t[-2], v.a[-2]));
  EXPECT_TRUE(same(v.t[{tg::Slice{-3, {}, {}}, int64_t(2)}], v.a.slice(0, 7).select(1, 2)));
  // chains of movement ops on non-contiguous data, then math
  EXPECT_TRUE(same((x.t.permute({1, 0, 2}).flip({2}).pad({{0, 1}, {0, 0}, {2, 0}}) * 2).sum(2),
                   (at::constant_pad_nd(x.a.permute({1, 0, 2}).flip({2}), {2, 0, 0, 0, 0, 1}, 0) * 2).sum(2)));
}

TEST(Conformance, Matmul) {
  for (DType dt : {dtypes::float32, dtypes::float64, dtypes::float16, dtypes::int32}) {
    Pair a = input({5, 7}, dt, -2, 2, 1), b = input({7, 3}, dt, -2, 2, 2);
    EXPECT_TRUE(same(a.t.matmul(b.t), torch_eval([](const at::Tensor& x, const at::Tensor& y) { return x.matmul(y); }, a.a, b.a))) << dt;
  }
  Pair v = input({7}, dtypes::float32), m = input({7, 3}, dtypes::float32), a = input({4, 7}, dtypes::float32);
  EXPECT_TRUE(same(v.t.matmul(m.t), v.a.matmul(m.a)));
  EXPECT_TRUE(same(a.t.matmul(v.t), a.a.matmul(v.a)));
  EXPECT_TRUE(same(v.t.dot(v.t), v.a.dot(v.a)));
  Pair b1 = input({2, 3, 4, 5}, dtypes::float32), b2 = input({3, 5, 2}, dtypes::float32);
  EXPECT_TRUE(same(b1.t.matmul(b2.t), b1.a.matmul(b2.a)));
  Pair t = input({7, 5}, dtypes::float32);
  EXPECT_TRUE(same(t.t.transpose().matmul(m.t), t.a.t().matmul(m.a)));
}

TEST(Conformance, Creation) {
  EXPECT_TRUE(same(tg::Tensor::zeros({2, 3}), at::zeros({2, 3})));
  EXPECT_TRUE(same(tg::Tensor::ones({4}, dtypes::int32), at::ones({4}, at::kInt)));
  EXPECT_TRUE(same(tg::Tensor::full({2, 2}, 7.5), at::full({2, 2}, 7.5)));
  EXPECT_TRUE(same(tg::Tensor::arange(5, dtypes::int32), at::arange(5, at::kInt)));
  EXPECT_TRUE(same(tg::Tensor::arange(1, 10, 3, dtypes::float32), at::arange(1, 10, 3, at::kFloat)));
  EXPECT_TRUE(same(tg::Tensor::arange(5, -3, -2, dtypes::int32), at::arange(5, -3, -2, at::kInt)));
  EXPECT_TRUE(same(tg::Tensor::eye(3), at::eye(3)));
  EXPECT_TRUE(same(tg::Tensor(3.5f, dtypes::float32), at::scalar_tensor(3.5, at::kFloat)));
  EXPECT_TRUE(same(tg::Tensor::from_vector<int64_t>({1, 2, 3, 4, 5, 6}, {3, 2}), oracle::make<int64_t>({1, 2, 3, 4, 5, 6}, {3, 2})));
}
