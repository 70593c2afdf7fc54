// Forward values of the derived movement ops (split, chunk, view, roll, diag, diagonal, unfold, meshgrid,
// repeat_interleave, pad's flat form and modes) and of selection and sorting (masked_fill, scatter, scatter_reduce,
// masked_select, nonzero, sort, argsort, topk) against libtorch; then the tg::Error each gives for bad arguments.
// Gradients are in test_gradients.cpp (Gradients.MovementSelect).
#include "tensor_harness.h"

using namespace conf;

namespace {

template <class T, class A> void add_pieces(std::vector<Row>& cs, const std::string& name, const std::vector<T>& ts, const std::vector<A>& as) {
  if (ts.size() != as.size()) {
    ADD_FAILURE() << name << ": " << ts.size() << " pieces, torch has " << as.size();
    return;
  }
  for (size_t i = 0; i < ts.size(); i++) cs.push_back({name + " #" + std::to_string(i), ts[i], as[i]});
}
// torch's pad wants batch and channel dims before the padded ones: add them for the call
at::Tensor tpad(const at::Tensor& a, std::vector<int64_t> pads, const std::string& mode) {
  int64_t extra = std::max<int64_t>(0, int64_t(pads.size()) / 2 + 2 - a.dim());
  at::Tensor b = a;
  for (int64_t i = 0; i < extra; i++) b = b.unsqueeze(0);
  at::Tensor r = at::pad(b, pads, mode);
  for (int64_t i = 0; i < extra; i++) r = r[0];
  return r;
}
Pair ints(const std::vector<int64_t>& v, const std::vector<int64_t>& shape) {
  at::Tensor a = oracle::make<int64_t>(v, shape, at::kLong);
  return {to_tg(a), a};
}

}  // namespace

TEST(TensorMovement, SplitChunkView) {
  Pair x = input({5, 4}, dtypes::float32), y = input({2, 7, 3}, dtypes::float32, -3, 3, 2), e = input({0, 3}, dtypes::float32);
  std::vector<Row> cs;
  add_pieces(cs, "split 2", x.t.split(2), x.a.split(2));
  add_pieces(cs, "split 5", x.t.split(5), x.a.split(5));
  add_pieces(cs, "split 9", x.t.split(9), x.a.split(9));
  add_pieces(cs, "split [1,3] dim 1", x.t.split({1, 3}, 1), x.a.split_with_sizes({1, 3}, 1));
  add_pieces(cs, "split [0,5,0]", x.t.split({0, 5, 0}), x.a.split_with_sizes({0, 5, 0}));
  add_pieces(cs, "split 3 dim -2", y.t.split(3, -2), y.a.split(3, -2));
  add_pieces(cs, "chunk 3", x.t.chunk(3), x.a.chunk(3));
  add_pieces(cs, "chunk 4 dim 1", x.t.chunk(4, 1), x.a.chunk(4, 1));
  add_pieces(cs, "chunk 6 of 7", y.t.chunk(6, 1), y.a.chunk(6, 1));  // pieces of 2: only 4 of them
  add_pieces(cs, "chunk 10", x.t.chunk(10), x.a.chunk(10));
  add_pieces(cs, "chunk of empty", e.t.chunk(2), e.a.chunk(2));
  add_pieces(cs, "split of empty", e.t.split(2), e.a.split(2));
  cs.push_back({"view", x.t.view({2, -1, 2}), x.a.view({2, -1, 2})});
  cs.push_back({"view permuted", x.t.transpose().view({20}), x.a.t().reshape({20})});
  expect_rows(cs, "");
  EXPECT_EQ(x.t.size(), (tg::Shape{5, 4}));
  EXPECT_EQ(y.t.size(-1), y.a.size(-1));
  EXPECT_EQ(y.t.size(1), y.a.size(1));
}

TEST(TensorMovement, RollDiagUnfoldMeshgrid) {
  Pair x = input({4, 5}, dtypes::float32), y = input({2, 3, 4}, dtypes::float32, -3, 3, 2), v = input({4}, dtypes::float32, -3, 3, 3);
  Pair w = input({3}, dtypes::float32, -3, 3, 4), s = input({}, dtypes::float32, -3, 3, 5), e = input({0}, dtypes::float32);
  std::vector<Row> cs{
      {"roll 1", x.t.roll(1, 0), x.a.roll(1, 0)},
      {"roll -7", x.t.roll(-7, 1), x.a.roll(-7, 1)},
      {"roll flat", x.t.roll(3), x.a.roll(3)},
      {"roll two dims", y.t.roll({1, -2}, tg::IntList{0, 2}), y.a.roll({1, -2}, {0, 2})},
      {"roll 0-d", s.t.roll(2), s.a.roll(2)},
      {"roll empty", e.t.roll(1, 0), e.a.roll(1, 0)},
      {"diag", v.t.diag(), v.a.diag()},
      {"diag of empty", e.t.diag(), e.a.diag()},
      {"diagonal", x.t.diagonal(), x.a.diagonal()},
      {"diagonal 2", x.t.diagonal(2), x.a.diagonal(2)},
      {"diagonal -1", x.t.diagonal(-1), x.a.diagonal(-1)},
      {"diagonal past the edge", x.t.diagonal(7), x.a.diagonal(7)},
      {"diagonal dims", y.t.diagonal(1, 2, 0), y.a.diagonal(1, 2, 0)},
      {"diagonal -1 dims", y.t.diagonal(-1, -1, 1), y.a.diagonal(-1, -1, 1)},
      {"unfold", x.t.unfold(1, 2, 1), x.a.unfold(1, 2, 1)},
      {"unfold step 2", x.t.unfold(0, 2, 2), x.a.unfold(0, 2, 2)},
      {"unfold 3-d", y.t.unfold(-1, 3, 2), y.a.unfold(-1, 3, 2)},
      {"unfold whole", v.t.unfold(0, 4, 3), v.a.unfold(0, 4, 3)},
      {"repeat_interleave", x.t.repeat_interleave(2, 1), x.a.repeat_interleave(2, 1)},
      {"repeat_interleave flat", y.t.repeat_interleave(3), y.a.repeat_interleave(3)},
      {"repeat_interleave 0", x.t.repeat_interleave(0, 0), x.a.repeat_interleave(0, 0)},
      {"repeat_interleave 0-d", s.t.repeat_interleave(2), s.a.repeat_interleave(2)},
  };
  for (std::string idx : {"ij", "xy"}) {
    add_pieces(cs, "meshgrid " + idx, tg::Tensor::meshgrid({v.t, w.t}, idx), at::meshgrid({v.a, w.a}, idx));
    add_pieces(cs, "meshgrid 3 " + idx, tg::Tensor::meshgrid({w.t, s.t, v.t}, idx), at::meshgrid({w.a, s.a, v.a}, idx));
  }
  add_pieces(cs, "meshgrid one", tg::Tensor::meshgrid({v.t}), at::meshgrid({v.a}, "ij"));
  cs.push_back({"roll permuted", x.t.transpose().roll(2, 1), x.a.t().roll(2, 1)});
  cs.push_back({"diagonal flipped", x.t.flip(0).diagonal(1), x.a.flip(0).diagonal(1)});
  expect_rows(cs, "float");
  Pair i = input({3, 4}, dtypes::int32, -9, 9, 6);
  expect_rows({{"roll", i.t.roll(-1, 1), i.a.roll(-1, 1)}, {"diagonal", i.t.diagonal(1), i.a.diagonal(1)},
              {"unfold", i.t.unfold(1, 3, 1), i.a.unfold(1, 3, 1)}, {"repeat_interleave", i.t.repeat_interleave(2, 0), i.a.repeat_interleave(2, 0)}},
             "int");
}

TEST(TensorMovement, PadModes) {
  Pair x = input({2, 4, 5}, dtypes::float32), v = input({6}, dtypes::float32, -3, 3, 2);
  std::vector<Row> cs;
  for (std::string mode : {"reflect", "replicate", "circular"}) {
    cs.push_back({mode + " last dim", x.t.pad(std::vector<int64_t>{2, 1}, mode), tpad(x.a, {2, 1}, mode)});
    cs.push_back({mode + " two dims", x.t.pad(std::vector<int64_t>{1, 3, 2, 0}, mode), tpad(x.a, {1, 3, 2, 0}, mode)});
    cs.push_back({mode + " pairs", x.t.pad({{0, 0}, {3, 1}, {0, 4}}, mode), tpad(x.a, {0, 4, 3, 1}, mode)});
    // a negative pad crops after the padding; torch pads only the positive side here, so the crop is taken by hand
    if (mode != "circular") cs.push_back({mode + " negative", x.t.pad(std::vector<int64_t>{2, -1}, mode), tpad(x.a, {2, 0}, mode).narrow(2, 0, 6)});
  }
  // circular crops first, then wraps what is left (tinygrad's order)
  cs.push_back({"circular negative", x.t.pad(std::vector<int64_t>{2, -1}, "circular"), tpad(x.a.narrow(2, 0, 4), {2, 0}, "circular")});
  cs.push_back({"replicate 3 dims", x.t.pad({{1, 2}, {2, 1}, {1, 1}}, "replicate"), tpad(x.a, {1, 1, 2, 1, 1, 2}, "replicate")});
  cs.push_back({"circular full wrap", v.t.pad({{6, 6}}, "circular"), at::cat({v.a, v.a, v.a})});
  cs.push_back({"reflect 1-d", v.t.pad({{5, 2}}, "reflect"), tpad(v.a, {5, 2}, "reflect")});
  cs.push_back({"constant flat", x.t.pad(std::vector<int64_t>{1, 2, -1, 1}), at::constant_pad_nd(x.a, {1, 2, -1, 1}, 0)});
  cs.push_back({"constant flat value", x.t.pad(std::vector<int64_t>{0, 1, 1, 0, 2, 2}, "constant", 2.5), at::constant_pad_nd(x.a, {0, 1, 1, 0, 2, 2}, 2.5)});
  cs.push_back({"constant mode", x.t.pad({{1, 0}, {0, 0}, {0, 2}}, "constant", -1.0), at::constant_pad_nd(x.a, {0, 2, 0, 0, 1, 0}, -1.0)});
  cs.push_back({"reflect permuted", x.t.permute({2, 0, 1}).pad(std::vector<int64_t>{3, 2}, "reflect"), tpad(x.a.permute({2, 0, 1}), {3, 2}, "reflect")});
  expect_rows(cs, "");
  Pair i = input({3, 4}, dtypes::int32, -9, 9, 3);
  at::Tensor fi = i.a.to(at::kFloat);  // torch's reflection kernels take no ints: padding moves values, so float is exact
  expect_rows({{"reflect", i.t.pad(std::vector<int64_t>{2, 3}, "reflect"), tpad(fi, {2, 3}, "reflect").to(at::kInt)},
              {"circular", i.t.pad(std::vector<int64_t>{1, 1, 2, 0}, "circular"), tpad(fi, {1, 1, 2, 0}, "circular").to(at::kInt)}},
             "int");
}

TEST(TensorSelect, MaskedFillScatter) {
  Pair x = input({3, 5}, dtypes::float32), m = input({3, 5}, dtypes::bool_, -1, 1, 2), r = input({5}, dtypes::bool_, -1, 1, 3);
  Pair vals = input({3, 5}, dtypes::float32, 10, 20, 4), s = input({}, dtypes::float32, -1, 1, 5);
  std::vector<Row> cs{
      {"masked_fill scalar", x.t.masked_fill(m.t, -12.5), x.a.masked_fill(m.a, -12.5)},
      {"masked_fill broadcast mask", x.t.masked_fill(r.t, 3.0), x.a.masked_fill(r.a, 3.0)},
      {"masked_fill tensor", x.t.masked_fill(m.t, vals.t), at::where(m.a, vals.a, x.a)},
      {"masked_fill 0-d value", x.t.masked_fill(r.t, s.t), x.a.masked_fill(r.a, s.a)},
      {"masked_fill 0-d self", s.t.masked_fill(tg::Tensor(true), 1.0), s.a.masked_fill(at::scalar_tensor(true, at::kBool), 1.0)},
  };
  // scatter: distinct indices along the dim (torch leaves the winner among repeats unspecified); index smaller than src
  Pair self = input({4, 5}, dtypes::float32, -3, 3, 6), src = input({3, 6}, dtypes::float32, 10, 20, 7);
  Pair i0 = ints({3, 0, 1, 2, 1, 0, 2, 1, 0, 3}, {2, 5}), i1 = ints({4, 0, 2, 1, 3, 0, 2, 4}, {2, 4}), i1w = ints({4, 0, 2}, {3, 1});
  cs.insert(cs.end(), {
                          {"scatter dim 0", self.t.scatter(0, i0.t, src.t), self.a.scatter(0, i0.a, src.a)},
                          {"scatter dim 1", self.t.scatter(1, i1.t, src.t), self.a.scatter(1, i1.a, src.a)},
                          {"scatter dim -1 narrow", self.t.scatter(-1, i1w.t, src.t), self.a.scatter(-1, i1w.a, src.a)},
                          {"scatter value", self.t.scatter(1, i1.t, 7.5), self.a.scatter(1, i1.a, 7.5)},
                          {"scatter add", self.t.scatter(0, i0.t, 1.5, "add"), self.a.scatter(0, i0.a, 1.5, "add")},
                          {"scatter multiply", self.t.scatter(1, i1.t, -2.0, "multiply"), self.a.scatter(1, i1.a, -2.0, "multiply")},
                          {"scatter permuted self", self.t.flip(0).scatter(0, i0.t, src.t), self.a.flip(0).scatter(0, i0.a, src.a)},
                          {"scatter empty index", self.t.scatter(0, ints({}, {0, 5}).t, src.t), self.a.clone()},
                          // index values are only known when the graph runs: out of range ones are dropped, as tinygrad does
                          {"scatter out of range", self.t.scatter(1, ints({5, -1}, {2, 1}).t, 9.0), self.a.clone()},
                      });
  // repeated indices: tinygrad's scatter keeps the last, as torch's CPU kernel does
  Pair rep = ints({1, 1, 1, 0, 1, 1, 1, 2}, {2, 4});
  cs.push_back({"scatter repeats", self.t.scatter(1, rep.t, src.t), self.a.scatter(1, rep.a, src.a)});
  expect_rows(cs, "");
  Pair ix = input({3, 4}, dtypes::int32, -50, 50, 8), isrc = input({2, 4}, dtypes::int32, 100, 200, 9), ii = ints({2, 0, 0, 1, 1, 2, 1, 0}, {2, 4});
  expect_rows({{"scatter int", ix.t.scatter(0, ii.t, isrc.t), ix.a.scatter(0, ii.a, isrc.a)},
              {"scatter int add", ix.t.scatter(0, ii.t, 3, "add"), ix.a.scatter(0, ii.a, 3, "add")}},
             "int");
}

TEST(TensorSelect, ScatterReduce) {
  Pair self = input({4, 3}, dtypes::float32, -3, 3, 1), src = input({6, 3}, dtypes::float32, -3, 3, 2), b = input({3, 5}, dtypes::float32, -3, 3, 3);
  Pair i0 = ints({0, 2, 0, 0, 2, 2, 3, 0, 0, 0, 2, 1, 0, 0, 0}, {5, 3}), i1 = ints({0, 0, 4, 1, 3, 3, 4, 0, 2}, {3, 3});
  std::vector<Row> cs;
  for (std::string red : {"sum", "prod", "mean", "amax", "amin"})
    for (bool inc : {true, false}) {
      std::string n = red + (inc ? "" : " exclude self");
      cs.push_back({n, self.t.scatter_reduce(0, i0.t, src.t, red, inc), self.a.scatter_reduce(0, i0.a, src.a, red, inc)});
      if (red == "sum" || red == "amax") cs.push_back({n + " dim 1", b.t.scatter_reduce(1, i1.t, src.t, red, inc), b.a.scatter_reduce(1, i1.a, src.a, red, inc)});
    }
  Pair v = input({5}, dtypes::float32, -3, 3, 4), vs = input({}, dtypes::float32, -3, 3, 5);
  cs.push_back({"0-d", vs.t.scatter_reduce(0, ints({0}, {}).t, vs.t * 2, "sum"), vs.a.scatter_reduce(0, ints({0}, {}).a, vs.a * 2, "sum")});
  cs.push_back({"1-d", v.t.scatter_reduce(0, ints({4, 4, 0}, {3}).t, v.t, "amax"), v.a.scatter_reduce(0, ints({4, 4, 0}, {3}).a, v.a, "amax")});
  expect_rows(cs, "float");
  Pair is = input({4, 3}, dtypes::int32, -9, 9, 6), isrc = input({6, 3}, dtypes::int32, -9, 9, 7);
  std::vector<Row> ic;
  for (std::string red : {"prod", "amin"})
    ic.push_back({red, is.t.scatter_reduce(0, i0.t, isrc.t, red, false), is.a.scatter_reduce(0, i0.a, isrc.a, red, false)});
  expect_rows(ic, "int");
}

TEST(TensorSelect, MaskedSelectNonzero) {
  Pair x = input({3, 4}, dtypes::float32), m = input({3, 4}, dtypes::bool_, -1, 1, 2), r = input({4}, dtypes::bool_, -1, 1, 3);
  Pair z = input({2, 3, 2}, dtypes::int32, -1, 2, 4);
  at::Tensor no = at::zeros({5}, at::kBool);
  Pair none{to_tg(no), no};
  // with size: filled with fill_value past the count (hand-derived from torch's unsized result)
  at::Tensor all = x.a.masked_select(m.a);
  expect_rows({{"masked_select", x.t.masked_select(m.t), all},
              {"masked_select broadcast", x.t.transpose().masked_select(r.t.reshape({4, 1})), x.a.t().masked_select(r.a.reshape({4, 1}))},
              {"masked_select size fill", x.t.masked_select(m.t, all.numel() + 3, -1.5), at::cat({all, at::full({3}, -1.5)})}},
             "");
  EXPECT_TRUE(same(none.t.cast(dtypes::float32).masked_select(none.t), none.a.to(at::kFloat).masked_select(none.a))) << "no trues: empty";
  at::Tensor nz = z.a.nonzero().to(at::kInt);
  expect_rows({{"nonzero", z.t.nonzero(), nz}, {"nonzero size cut", z.t.nonzero(3), nz.narrow(0, 0, 3)}}, "nonzero");
  tg::Tensor s(2.5f, dtypes::float32);
  EXPECT_EQ(s.nonzero().shape(), (tg::Shape{1, 0}));
  EXPECT_EQ(tg::Tensor(0.0f, dtypes::float32).nonzero().shape(), (tg::Shape{0, 0}));
  EXPECT_EQ(none.t.nonzero().shape(), (tg::Shape{0, 1}));
}

TEST(TensorSelect, SortTopk) {
  // rows of random values and rows with ties (the sort is stable: ties keep their order, as torch's stable=True)
  at::Tensor base = at::cat({input({3, 6}, dtypes::float32).a, oracle::make<double>({2, 1, 2, 1, 2, 1, 0, 0, 0, 0, 0, 0}, {2, 6}, at::kFloat)});
  Pair x{to_tg(base), base};
  // each sort compiles its own stages: one ascending float sort, one descending int sort below
  auto [av, ai] = x.a.sort(true, -1, false);
  auto [tv, ti] = x.t.sort();
  std::vector<Row> vals{{"sort", tv, av}};
  std::vector<Row> idx{{"sort indices", ti, ai.to(at::kInt)}, {"argsort", x.t.argsort(), x.a.argsort(true, -1, false).to(at::kInt)}};
  auto [sv, si] = x.t.topk(2, -1, false);
  auto [sav, sai] = x.a.topk(2, -1, false);
  vals.push_back({"topk smallest", sv, sav});
  // torch's topk does not promise an order among ties (the stable sort's order is the oracle for the int case below):
  // only rows without ties are compared with torch's topk indices
  idx.push_back({"topk smallest indices", si.shrink({{0, 3}, {0, 2}}), sai.narrow(0, 0, 3).to(at::kInt)});
  // ints along dim 0 of a 3-d tensor, descending, a length that is a power of two, many ties
  Pair y = input({8, 2, 3}, dtypes::int32, -4, 4, 2);
  auto [yv, yi] = y.t.sort(0, true);
  auto [yav, yai] = y.a.sort(true, 0, true);
  auto [ykv, yki] = y.t.topk(5, 0);
  vals.insert(vals.end(), {{"sort int dim 0", yv.float_(), yav.to(at::kFloat)}, {"topk int dim 0", ykv.float_(), yav.narrow(0, 0, 5).to(at::kFloat)}});
  idx.insert(idx.end(), {{"sort int dim 0 indices", yi, yai.to(at::kInt)}, {"topk int dim 0 indices", yki, yai.narrow(0, 0, 5).to(at::kInt)}});
  // 0-d and length-1 dims sort to themselves with index 0
  Pair s = input({}, dtypes::float32, -3, 3, 3), one = input({3, 1}, dtypes::float32, -3, 3, 4);
  vals.insert(vals.end(), {{"sort 0-d", s.t.sort().first, std::get<0>(s.a.sort())}, {"sort length 1", one.t.sort().first, std::get<0>(one.a.sort())},
                           {"topk 0-d", s.t.topk(1).first, std::get<0>(s.a.topk(1))}});
  idx.push_back({"sort length 1 indices", one.t.sort().second, std::get<1>(one.a.sort()).to(at::kInt)});
  // half, and bool (min/max of bools stay bool; descending with ties)
  Pair h = input({2, 3}, dtypes::float16, -3, 3, 9), b = input({2, 3}, dtypes::bool_, -1, 1, 9), c = input({2, 3}, dtypes::bool_, -1, 1, 10);
  auto [bv, bi] = b.t.sort(1, true);
  auto [bav, bai] = b.a.sort(true, 1, true);
  idx.push_back({"sort bool indices", bi, bai.to(at::kInt)});
  expect_rows({{"sort half", h.t.sort(1).first, std::get<0>(h.a.sort(1))}}, "half");
  expect_rows({{"sort bool", bv, bav}, {"minimum", b.t.minimum(c.t), at::minimum(b.a, c.a)}, {"maximum", b.t.maximum(c.t), at::maximum(b.a, c.a)}}, "bool");
  expect_rows(vals, "values");
  expect_rows(idx, "indices");
}

TEST(TensorSelect, Errors) {
  tg::Tensor m = tg::Tensor::ones({2, 3}), v = tg::Tensor::from_vector<float>({1, 2, 3}), s(1.5f, dtypes::float32);
  tg::Tensor idx = tg::Tensor::from_vector<int32_t>({0, 1, 0}, {1, 3}), fidx = tg::Tensor::ones({1, 3});
  // movement
  expect_error([&] { m.split(2, 2); }, {"split", "dim 2"});
  expect_error([&] { m.split({1, 1}, 1); }, {"split", "sum to 3"});
  expect_error([&] { m.split(0); }, {"split", "positive"});
  expect_error([&] { m.chunk(0); }, {"chunk", "positive"});
  expect_error([&] { m.chunk(2, -3); }, {"chunk", "dim -3"});
  expect_error([&] { m.size(2); }, {"size", "dim 2"});
  expect_error([&] { m.view({4, 2}); }, {"(2, 3)"});
  expect_error([&] { m.roll({1, 2}, tg::IntList{0}); }, {"roll", "2 shifts", "1 dims"});
  expect_error([&] { m.roll(1, 2); }, {"roll", "dim 2"});
  expect_error([&] { m.diag(); }, {"diag", "1-D"});
  expect_error([&] { m.diagonal(0, 1, -1); }, {"diagonal", "same dimension"});
  expect_error([&] { m.diagonal(0, 0, 2); }, {"diagonal", "dim 2"});
  expect_error([&] { m.unfold(1, 4, 1); }, {"unfold", "size 4"});
  expect_error([&] { m.unfold(1, 2, 0); }, {"unfold", "step"});
  expect_error([&] { m.unfold(3, 1, 1); }, {"unfold", "dim 3"});
  expect_error([&] { s.unfold(0, 1, 1); }, {"unfold", "0-d"});
  expect_error([&] { m.repeat_interleave(-1); }, {"repeat_interleave", "non-negative"});
  expect_error([&] { m.repeat_interleave(2, 2); }, {"repeat_interleave", "dim 2"});
  expect_error([&] { tg::Tensor::meshgrid({v, v}, "ji"); }, {"meshgrid", "\"ji\""});
  expect_error([&] { tg::Tensor::meshgrid({v, m}); }, {"meshgrid", "(2, 3)"});
  expect_error([&] { m.pad(std::vector<int64_t>{1, 1}, "mirror"); }, {"pad", "\"mirror\""});
  expect_error([&] { m.pad(std::vector<int64_t>{1, 1, 1}); }, {"pad", "even"});
  expect_error([&] { m.pad(std::vector<int64_t>{1, 1, 1, 1, 1, 1}); }, {"pad", "too many"});
  expect_error([&] { m.pad(std::vector<int64_t>{3, 0}, "reflect"); }, {"pad", "reflect", "less than"});
  expect_error([&] { m.pad(std::vector<int64_t>{0, 4}, "circular"); }, {"pad", "circular", "more than once"});
  expect_error([&] { m.pad({{1, 1}}, "replicate"); }, {"pad", "(2, 3)"});
  expect_error([&] { tg::Tensor::zeros({0, 2}).pad({{1, 0}, {0, 0}}, "replicate"); }, {"pad", "replicate", "empty"});
  // selection
  expect_error([&] { m.masked_fill(m, 1.0); }, {"masked_fill", "bool"});
  expect_error([&] { m.masked_fill(tg::Tensor::ones({4}, dtypes::bool_), 1.0); }, {"cannot broadcast"});
  expect_error([&] { m.scatter(0, fidx, m); }, {"scatter", "int index"});
  expect_error([&] { m.scatter(2, idx, m); }, {"scatter", "dim 2"});
  expect_error([&] { m.scatter(0, idx.flatten(), m); }, {"scatter", "same number of dims"});
  expect_error([&] { m.scatter(0, tg::Tensor::zeros({3, 3}, dtypes::int32), m); }, {"scatter", "no larger"});
  expect_error([&] { m.scatter(0, idx, m.int_()); }, {"scatter", "dtype"});
  expect_error([&] { m.scatter(0, idx, 1.0, "max"); }, {"scatter", "\"max\""});
  expect_error([&] { m.scatter_reduce(0, idx, m, "median"); }, {"scatter_reduce", "\"median\""});
  expect_error([&] { m.scatter_reduce(1, idx, tg::Tensor::ones({1, 2}), "sum"); }, {"scatter_reduce", "no larger"});
  expect_error([&] { m.masked_select(m); }, {"masked_select", "bool"});
  expect_error([&] { v.masked_select(tg::Tensor::ones({2, 3}, dtypes::bool_)); }, {"masked_select", "(2, 3)"});
  expect_error([&] { v.masked_select(tg::Tensor::ones({4}, dtypes::bool_)); }, {"(4,)", "(3,)"});
  expect_error([&] { v.masked_select(v > 1, -1); }, {"masked_select", "non-negative"});
  expect_error([&] { v.nonzero(-2); }, {"nonzero", "non-negative"});
  expect_error([&] { m.sort(2); }, {"sort", "dim 2"});
  expect_error([&] { m.argsort(-3); }, {"sort", "dim -3"});
  expect_error([&] { m.topk(4); }, {"topk", "k=4"});
  expect_error([&] { m.topk(-1); }, {"topk", "k=-1"});
  expect_error([&] { m.topk(1, 0, true, false); }, {"topk", "sorted"});
}

TEST(TensorSelect, EmptyShapes) {
  Pair e = input({3, 0}, dtypes::float32), z = input({0}, dtypes::float32);
  at::Tensor ei = at::zeros({0, 0}, at::kLong);
  auto [sv, si] = e.t.sort(0);
  auto [asv, asi] = e.a.sort(0);
  auto [kv, ki] = z.t.topk(0);
  auto [akv, aki] = z.a.topk(0);
  expect_rows({{"sort", sv, asv}, {"topk", kv, akv}, {"scatter", e.t.scatter(0, to_tg(ei), e.t), e.a.scatter(0, ei, e.a)},
              {"scatter_reduce", e.t.scatter_reduce(1, to_tg(ei), e.t, "amax"), e.a.scatter_reduce(1, ei, e.a, "amax")},
              {"masked_fill", e.t.masked_fill(e.t > 0, 1.0), e.a.masked_fill(e.a > 0, 1.0)},
              {"masked_select", e.t.masked_select(e.t > 0), e.a.masked_select(e.a > 0)},
              {"roll", e.t.roll(1, 0), e.a.roll(1, 0)}, {"unfold", e.t.unfold(0, 2, 1), e.a.unfold(0, 2, 1)},
              {"repeat_interleave", z.t.repeat_interleave(3), z.a.repeat_interleave(3)},
              {"pad circular", e.t.pad({{1, 1}, {0, 0}}, "circular"), at::cat({e.a.narrow(0, 2, 1), e.a, e.a.narrow(0, 0, 1)})}},
             "empty");
  expect_rows({{"sort indices", si, asi.to(at::kInt)}, {"topk indices", ki, aki.to(at::kInt)}, {"nonzero", e.t.nonzero(), e.a.nonzero().to(at::kInt)}},
             "empty indices");
}
