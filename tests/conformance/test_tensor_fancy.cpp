// Advanced indexing (getitem with Tensor, list and bool-mask indices mixed with slices, ints, None and Ellipsis; setitem
// with the same indices) against libtorch's index / index_put, then the tg::Error each gives for bad indices.
// Gradients are in test_gradients.cpp (Gradients.Fancy).
#include "tensor_harness.h"

using namespace conf;
namespace ai = at::indexing;
using tg::Ellipsis;
using tg::NewAxis;
using tg::Slice;

namespace {

// int indices: of dt on our side, long on torch's (the only int index type it takes)
Pair ints(const std::vector<int64_t>& v, const std::vector<int64_t>& shape, DType dt = dtypes::int32) {
  at::Tensor a = oracle::make<int64_t>(v, shape, at::kLong);
  return {to_tg(a.to(*oracle::to_torch(dt))), a};
}
Pair bools(const std::vector<int64_t>& v, const std::vector<int64_t>& shape) {
  at::Tensor a = oracle::make<int64_t>(v, shape, at::kLong).to(at::kBool);
  return {to_tg(a), a};
}
at::Tensor longs(const std::vector<int64_t>& v) { return oracle::make<int64_t>(v, {int64_t(v.size())}, at::kLong); }

}  // namespace

TEST(TensorFancy, Getitem) {
  Pair x = input({4, 5, 6}, dtypes::float32), e = input({0, 3}, dtypes::float32, -3, 3, 2), s = input({}, dtypes::float32, -3, 3, 3);
  Pair i = ints({2, 0, 3, -1}, {4}), j = ints({4, -5, 1}, {3}), k = ints({1, 0, 3}, {3, 1}), i2 = ints({1, 3, 0, 2, 2, 1}, {2, 3});
  Pair m = bools({1, 0, 0, 1, 1, 0, 1, 0, 0, 0, 1, 1, 0, 1, 0, 0, 0, 0, 1, 1}, {4, 5}), m1 = bools({0, 1, 1, 0, 1, 0}, {6});
  Pair z = ints({1}, {}), ie = ints({}, {0});
  std::vector<Row> cs{
      {"tensor", x.t[i.t], x.a.index({i.a})},
      {"2-d tensor", x.t[i2.t], x.a.index({i2.a})},
      {"0-d tensor", x.t[z.t], x.a.index({z.a})},
      {"slice, tensor", x.t[{Slice{}, j.t}], x.a.index({ai::Slice(), j.a})},
      {"two consecutive (broadcast)", x.t[{k.t, j.t}], x.a.index({k.a, j.a})},
      {"two consecutive after a slice", x.t[{Slice{1, 3}, j.t, i.t.shrink({{0, 3}})}], x.a.index({ai::Slice(1, 3), j.a, i.a.narrow(0, 0, 3)})},
      {"separated by a slice (index dims first)", x.t[{i.t.shrink({{1, 4}}), Slice{}, k.t}], x.a.index({i.a.narrow(0, 1, 3), ai::Slice(), k.a})},
      {"three tensors", x.t[{k.t, j.t, i2.t.shrink({{0, 1}, {0, 3}})}], x.a.index({k.a, j.a, i2.a.narrow(0, 0, 1)})},
      {"ellipsis, tensor", x.t[{Ellipsis{}, i2.t}], x.a.index({ai::Ellipsis, i2.a})},
      {"None, tensor, step slice, int", x.t[{NewAxis{}, i.t, Slice{std::nullopt, std::nullopt, -2}, 2}],
       x.a.index({ai::None, i.a, ai::Slice(), 2}).index_select(2, longs({4, 2, 0}))},
      {"int, tensor", x.t[{3, Slice{}, i.t}], x.a.index({3, ai::Slice(), i.a})},
      {"int list", x.t[std::vector<tg::Index>{std::vector<int64_t>{0, -1, 2, 2}}], x.a.index({longs({0, 3, 2, 2})})},
      {"slice, int list", x.t[{Slice{}, Slice{}, std::vector<int64_t>{5, -6}}], x.a.index({ai::Slice(), ai::Slice(), longs({5, 0})})},
      {"empty list", x.t[std::vector<tg::Index>{std::vector<int64_t>{}}], x.a.index({longs({})})},
      {"empty index tensor", x.t[{Slice{}, ie.t}], x.a.index({ai::Slice(), ie.a})},
      {"bool mask 2-d", x.t[m.t], x.a.index({m.a})},
      {"slice, bool mask", x.t[{Slice{}, Slice{2, 4}, m1.t}], x.a.index({ai::Slice(), ai::Slice(2, 4), m1.a})},
      {"bool list", x.t[std::vector<tg::Index>{std::vector<bool>{true, false, false, true}}], x.a.index({longs({0, 3})})},
      {"empty self", e.t[{Slice{}, ints({2, 0}, {2}).t}], e.a.index({ai::Slice(), longs({2, 0})})},
      {"permuted self", x.t.permute({2, 0, 1})[{j.t, i.t.shrink({{0, 3}})}], x.a.permute({2, 0, 1}).index({j.a, i.a.narrow(0, 0, 3)})},
      {"0-d self, None", s.t[{NewAxis{}}][ints({0, 0}, {2}).t], s.a.index({ai::None}).index({longs({0, 0})})},
  };
  expect_rows(cs, "float");
  Pair xi = input({3, 4}, dtypes::int32, -9, 9, 4), xh = input({3, 4}, dtypes::float16, -3, 3, 5);
  Pair i64 = ints({2, 0, -3}, {3}, dtypes::int64), u8 = ints({3, 1}, {2}, dtypes::uint8);
  expect_rows({{"int32 self", xi.t[{Slice{}, k.t.shrink({{0, 2}, {0, 1}}) - 1}], xi.a.index({ai::Slice(), k.a.narrow(0, 0, 2) - 1})},
               {"uint8 index", xi.t[{Slice{}, u8.t}], xi.a.index({ai::Slice(), u8.a})}},
              "int");
  expect_rows({{"half self, int64 and uint8 indices", xh.t[{i64.t, u8.t.shrink({{0, 1}})}], xh.a.index({i64.a, u8.a.narrow(0, 0, 1)})}}, "half");
  // tinygrad's out-of-range tensor values select nothing: 0 (torch errors); the oracle is the in-range pick, masked
  Pair o = ints({1, 7, -9, 2}, {4});
  at::Tensor ok = (o.a >= -5) & (o.a < 5);
  at::Tensor safe = at::where(ok, o.a, at::zeros_like(o.a));
  expect_rows({{"out of range values", x.t[{Slice{}, o.t}], at::where(ok.view({1, 4, 1}), x.a.index({ai::Slice(), safe}), at::zeros({1}))},
               {"out of range, consecutive", x.t[{o.t, o.t}], at::where(ok.view({4, 1}), x.a.index({safe, safe}), at::zeros({1}))}},
              "out of range");
}

TEST(TensorFancy, Setitem) {
  Pair x = input({4, 5}, dtypes::float32), v = input({2, 3}, dtypes::float32, -3, 3, 2), r = input({5}, dtypes::float32, -3, 3, 3);
  Pair i = ints({3, 0, -2}, {3}), j = ints({4, 1}, {2}), m = bools({1, 0, 0, 1, 1, 0, 1, 0, 0, 0, 1, 1, 0, 1, 0, 0, 0, 0, 1, 1}, {4, 5});
  std::vector<Row> cs;
  // each case writes into a fresh realized buffer (assigned in place) and into an unrealized copy (a new graph)
  auto both = [&](const std::string& name, const std::vector<tg::Index>& idx, const tg::Tensor& val, const at::Tensor& want) {
    tg::Tensor t = to_tg(x.a);
    t.setitem(idx, val);
    cs.push_back({name, t, want});
    tg::Tensor u = to_tg(x.a) * 1;  // its own buffer: x.t * 1 would be the same graph as the last case's (hash-consed)
    u.setitem(idx, val);
    cs.push_back({name + " (unrealized)", u, want});
  };
  auto put = [&](std::vector<at::indexing::TensorIndex> idx, const at::Tensor& val) { return x.a.clone().index_put_(idx, val); };
  both("slices", {Slice{1, 3}, Slice{std::nullopt, std::nullopt, 2}}, v.t, put({ai::Slice(1, 3), ai::Slice(ai::None, ai::None, 2)}, v.a));
  both("negative step", {Slice{std::nullopt, std::nullopt, -2}, Slice{1, 4}}, v.t, put({longs({3, 1}), ai::Slice(1, 4)}, v.a));
  both("int row, broadcast row", {2}, r.t, put({2}, r.a));
  both("scalar into a column", {Slice{}, -1}, tg::Tensor(2.5), put({ai::Slice(), -1}, at::scalar_tensor(2.5, at::kFloat)));
  both("ellipsis, None", {NewAxis{}, Ellipsis{}, 1}, r.t.shrink({{0, 4}}).reshape({1, 4}), put({ai::Slice(), 1}, r.a.narrow(0, 0, 4)));
  both("tensor rows", {i.t}, r.t, put({i.a}, r.a));
  both("slice, tensor", {Slice{1, 3}, j.t}, v.t.shrink({{0, 2}, {0, 2}}), put({ai::Slice(1, 3), j.a}, v.a.narrow(1, 0, 2)));
  both("two tensors", {i.t.shrink({{0, 2}}), j.t}, tg::Tensor(-1.0), put({i.a.narrow(0, 0, 2), j.a}, at::scalar_tensor(-1.0, at::kFloat)));
  both("int list", {std::vector<int64_t>{-1, 1}}, r.t, put({longs({3, 1})}, r.a));
  both("bool mask", {m.t}, tg::Tensor(0.0), put({m.a}, at::scalar_tensor(0.0, at::kFloat)));
  both("full slice", {Ellipsis{}}, r.t, put({ai::Ellipsis}, r.a));
  // repeated indices: the last write wins (tinygrad's rule; torch leaves the order unspecified), the oracle by hand
  tg::Tensor t = to_tg(x.a);
  t.setitem({ints({1, 2, 1}, {3}).t}, tg::Tensor::from_vector<float>({10, 20, 30}, {3, 1}));
  at::Tensor want = x.a.clone();
  want[1].fill_(30), want[2].fill_(20);
  cs.push_back({"repeated index, last wins", t, want});
  expect_rows(cs, "float");

  // int tensors, the view assign seen through another view of the same buffer
  Pair xi = input({3, 4}, dtypes::int32, -9, 9, 4);
  tg::Tensor ti = to_tg(xi.a), row = ti[1];
  ti.setitem({1, Slice{1, 3}}, 7);
  tg::Tensor tj = to_tg(xi.a);
  tj.setitem({Slice{}, ints({0, 3}, {2}).t}, tg::Tensor::from_vector<int32_t>({-1, -2}, {2}));
  at::Tensor wi = xi.a.clone();
  wi.index_put_({1, ai::Slice(1, 3)}, 7);
  at::Tensor wj = xi.a.clone();
  wj.index_put_({ai::Slice(), longs({0, 3})}, oracle::make<int64_t>({-1, -2}, {2}, at::kInt));
  expect_rows({{"int view", ti, wi}, {"the view sees it", row, wi[1]}, {"int tensor index", tj, wj}}, "int");

  // 0-d and empty targets
  Pair s = input({}, dtypes::float32, -3, 3, 5), e = input({0, 5}, dtypes::float32, -3, 3, 6);
  tg::Tensor ts = to_tg(s.a), te = to_tg(e.a);
  ts.setitem({}, 2.0);
  te.setitem({Slice{}, std::vector<int64_t>{1, 3}}, tg::Tensor::from_vector<float>({1, 2}));
  tg::Tensor te2 = to_tg(e.a);
  te2.setitem({Slice{}, 1}, 4.0);
  expect_rows({{"0-d", ts, at::scalar_tensor(2.0, at::kFloat)}, {"empty, list", te, e.a}, {"empty, int", te2, e.a}}, "0-d and empty");
}

TEST(TensorFancy, IndexErrors) {
  tg::Tensor x = tg::Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  tg::Tensor f = tg::Tensor::from_vector<float>({0, 1}, {2});
  expect_error([&] { x[{0, 1, 2}]; }, {"index", "too many indices"});
  expect_error([&] { x[{Ellipsis{}, Ellipsis{}}]; }, {"index", "single ellipsis"});
  expect_error([&] { x[{2}]; }, {"index", "out of bounds"});
  expect_error([&] { x[{Slice{}, -4}]; }, {"index", "out of bounds"});
  expect_error([&] { x[{Slice{std::nullopt, std::nullopt, 0}}]; }, {"index", "step cannot be 0"});
  expect_error([&] { x[f]; }, {"index", "float"});
  expect_error([&] { x[{Slice{}, std::vector<int64_t>{0, 3}}]; }, {"index", "list index 3", "out of bounds"});
  expect_error([&] { x[{tg::Tensor::from_vector<int32_t>({0, 1, 1}), tg::Tensor::from_vector<int32_t>({0, 1})}]; }, {"index", "broadcast"});
  expect_error([&] { x[tg::Tensor::from_vector<bool>({true, false, true})]; }, {"index", "bool mask", "(3,)"});
  expect_error([&] { x[std::vector<tg::Index>{std::vector<bool>{true, false}, std::vector<bool>{true}}]; }, {"index", "bool mask"});
  tg::Tensor y = tg::Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_error([&] { y.setitem({0}, tg::Tensor::from_vector<float>({1, 2})); }, {"setitem", "broadcast", "(2,)", "(3,)"});
  expect_error([&] { y.setitem({tg::Tensor::from_vector<int32_t>({0, 1})}, tg::Tensor::from_vector<float>({1, 2})); }, {"setitem", "broadcast"});
  expect_error([&] { y.setitem({0}, tg::Tensor::from_vector<int32_t>({1, 2, 3})); }, {"setitem", "dtype mismatch", "float", "int"});
  expect_error([&] { y.setitem({5}, 1.0); }, {"index", "out of bounds"});
  expect_error([&] { tg::Tensor w = tg::Tensor(1.0); w.setitem({}, 2.0); }, {"setitem", "weak"});
  tg::Tensor user = y + 1;  // a live tensor computed from y: writing y would diverge from eager semantics
  expect_error([&] { y.setitem({0}, 0.0); }, {"setitem", "other uses"});
}
