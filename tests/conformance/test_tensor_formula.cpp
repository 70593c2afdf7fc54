// The string-formula ops (einsum, rearrange) and resizing (interpolate in every mode, max_unpool2d) against libtorch:
// at::einsum, views written out by hand for rearrange, ATen's upsample_* kernels and max_unpool2d; then the tg::Error
// each gives for bad formulas, modes and shapes. Gradients are in test_gradients.cpp (Gradients.Fancy).
#include "tensor_harness.h"

using namespace conf;

TEST(TensorFormula, Einsum) {
  Pair a = input({3, 4}, dtypes::float32), b = input({4, 5}, dtypes::float32, -3, 3, 2), c = input({3, 4}, dtypes::float32, -3, 3, 3);
  Pair sq = input({4, 4}, dtypes::float32, -3, 3, 4), cube = input({3, 3, 4}, dtypes::float32, -3, 3, 5), v = input({4}, dtypes::float32, -3, 3, 6);
  Pair w = input({5}, dtypes::float32, -3, 3, 7), s = input({}, dtypes::float32, -3, 3, 8);
  Pair ba = input({2, 1, 3, 4}, dtypes::float32, -3, 3, 9), bb = input({5, 4, 2}, dtypes::float32, -3, 3, 10);
  Pair e1 = input({3, 0}, dtypes::float32), e2 = input({0, 5}, dtypes::float32);
  auto ein = [](const std::string& f, const std::vector<Pair>& ps) {
    std::vector<tg::Tensor> ts;
    std::vector<at::Tensor> as;
    for (auto& p : ps) ts.push_back(p.t), as.push_back(p.a);
    return Row{f, tg::Tensor::einsum(f, ts), at::einsum(f, as), oracle::Tol{1e-5, 1e-5}};
  };
  std::vector<Row> cs{
      ein("ij,jk->ik", {a, b}),
      ein("ij,ij->", {a, c}),
      ein("ij, ij -> ij", {a, c}),
      ein("ii->i", {sq}),
      ein("ii", {sq}),
      ein("iij->j", {cube}),
      ein("iij->ji", {cube}),
      ein("ij->ji", {a}),
      ein("ji", {a}),
      ein("ij", {a}),
      ein("i,j->ij", {v, w}),
      ein("i,i,i->", {v, v, v}),
      ein("i,->i", {v, s}),
      ein("...ij,...jk->...ik", {ba, bb}),
      ein("...ij,...jk", {ba, bb}),
      ein("b...,b...->b", {a, c}),
      ein("...->...", {cube}),
      ein("i...->...", {cube}),
      ein("Ab,bC->AC", {a, b}),
      ein("ij,jk->ik", {e1, e2}),
      ein("ij,jk->ij", {e1, e2}),
  };
  expect_rows(cs, "");
  Pair ia = input({2, 3}, dtypes::int32, -5, 5, 11), ib = input({3, 2}, dtypes::int32, -5, 5, 12);
  expect_rows({{"int ij,jk->ik", tg::Tensor::einsum("ij,jk->ik", {ia.t, ib.t}), at::einsum("ij,jk->ik", {ia.a, ib.a})}}, "int");
  tg::Tensor x = a.t, y = b.t;
  expect_error([&] { tg::Tensor::einsum("ij,jk->ik", {x}); }, {"einsum", "2 operands", "1 given"});
  expect_error([&] { tg::Tensor::einsum("ij,j1->i", {x, y}); }, {"einsum", "invalid subscript '1'"});
  expect_error([&] { tg::Tensor::einsum("ij,jk->iz", {x, y}); }, {"einsum", "'z' is not in any input"});
  expect_error([&] { tg::Tensor::einsum("ij,jk->ii", {x, y}); }, {"einsum", "'i' repeats"});
  expect_error([&] { tg::Tensor::einsum("ij,ij->i", {x, y}); }, {"einsum", "subscript 'i' has sizes 3 and 4"});
  expect_error([&] { tg::Tensor::einsum("ijk->i", {x}); }, {"einsum", "\"ijk\"", "(3, 4)"});
  expect_error([&] { tg::Tensor::einsum("ii->i", {x}); }, {"einsum", "repeated subscript 'i'"});
  expect_error([&] { tg::Tensor::einsum("ij->j->i", {x}); }, {"einsum", "more than one"});
}

TEST(TensorFormula, Rearrange) {
  Pair x = input({2, 3, 4, 5}, dtypes::float32), y = input({2, 6, 3}, dtypes::float32, -3, 3, 2);
  std::vector<Row> cs{
      {"b c h w -> b (c h) w", x.t.rearrange("b c h w -> b (c h) w"), x.a.reshape({2, 12, 5})},
      {"b c h w -> b h w c", x.t.rearrange("b c h w -> b h w c"), x.a.permute({0, 2, 3, 1})},
      {"b (h w) c -> b h w c", y.t.rearrange("b (h w) c -> b h w c", {{"h", 2}}), y.a.reshape({2, 2, 3, 3})},
      {"b (h w) c -> (b w) c h", y.t.rearrange("b (h w) c -> (b w) c h", {{"w", 3}}), y.a.reshape({2, 2, 3, 3}).permute({0, 2, 3, 1}).reshape({6, 3, 2})},
      {"... h w -> ... w h", x.t.rearrange("... h w -> ... w h"), x.a.transpose(2, 3)},
      {"b ... -> b (...)", x.t.rearrange("b ... -> b (...)"), x.a.reshape({2, 60})},
      {"b c ... -> (b c) ...", x.t.rearrange("b c ... -> (b c) ..."), x.a.reshape({6, 4, 5})},
      {"a b c d -> d 1 (a b c)", x.t.rearrange("a b c d -> d 1 (a b c)"), x.a.permute({3, 0, 1, 2}).reshape({5, 1, 24})},
      {"a b c d -> d () a b c", x.t.rearrange("a b c d -> d () a b c"), x.a.permute({3, 0, 1, 2}).unsqueeze(1)},
      {"x 1 y -> y x", y.t.reshape({2, 1, 18}).rearrange("x 1 y -> y x"), y.a.reshape({2, 18}).t()},
  };
  expect_rows(cs, "");
  tg::Tensor t = x.t;
  expect_error([&] { t.rearrange("b c h w"); }, {"rearrange", "->"});
  expect_error([&] { t.rearrange("b c h w -> b c h"); }, {"rearrange", "name mismatch"});
  expect_error([&] { t.rearrange("b c (h w -> b c h w"); }, {"rearrange", "bracket"});
  expect_error([&] { t.rearrange("b c h -> b c h"); }, {"rearrange", "3 dims", "(2, 3, 4, 5)"});
  expect_error([&] { t.rearrange("b c h w -> b c h w", {{"z", 2}}); }, {"rearrange", "z is not used"});
  expect_error([&] { t.rearrange("b c (h w) -> b c h w", {{"h", 2}}); }, {"rearrange", "names 3 dims"});
  expect_error([&] { y.t.rearrange("b (h w) c -> b h w c", {{"h", 4}}); }, {"reshape"});
  expect_error([&] { t.rearrange("(b ...) h w -> b h w ..."); }, {"rearrange", "ellipsis"});
  expect_error([&] { t.rearrange("b c h _w -> b c h _w"); }, {"rearrange", "invalid axis name"});
}

TEST(TensorFormula, InterpolateUnpool) {
  Pair x = input({2, 3, 5, 7}, dtypes::float32), l = input({2, 3, 5}, dtypes::float32, -3, 3, 2), v = input({1, 2, 3, 4, 5}, dtypes::float32, -3, 3, 3);
  std::vector<Row> cs;
  for (bool ac : {false, true}) {
    std::string n = ac ? " align_corners" : "";
    cs.push_back({"linear 1-d" + n, l.t.interpolate({8}, "linear", ac), at::upsample_linear1d(l.a, {8}, ac)});
    cs.push_back({"linear down 1-d" + n, l.t.interpolate({3}, "linear", ac), at::upsample_linear1d(l.a, {3}, ac)});
    cs.push_back({"bilinear up" + n, x.t.interpolate({9, 11}, "bilinear", ac), at::upsample_bilinear2d(x.a, {9, 11}, ac)});
    cs.push_back({"bilinear down" + n, x.t.interpolate({4, 3}, "linear", ac), at::upsample_bilinear2d(x.a, {4, 3}, ac)});
    cs.push_back({"bilinear to 1" + n, x.t.interpolate({1, 4}, "bilinear", ac), at::upsample_bilinear2d(x.a, {1, 4}, ac)});
    cs.push_back({"trilinear" + n, v.t.interpolate({5, 3, 2}, "trilinear", ac), at::upsample_trilinear3d(v.a, {5, 3, 2}, ac)});
  }
  cs.push_back({"nearest", x.t.interpolate({3, 10}, "nearest"), at::upsample_nearest2d(x.a, {3, 10})});
  cs.push_back({"nearest 1-d", l.t.interpolate({11}, "nearest"), at::upsample_nearest1d(l.a, {11})});
  cs.push_back({"nearest-exact", x.t.interpolate({4, 13}, "nearest-exact"), at::_upsample_nearest_exact2d(x.a, {4, 13})});
  cs.push_back({"nearest-exact 3-d", v.t.interpolate({2, 5, 3}, "nearest-exact"), at::_upsample_nearest_exact3d(v.a, {2, 5, 3})});
  cs.push_back({"linear last dim only", x.t.interpolate({6}), at::upsample_linear1d(x.a.reshape({6, 5, 7}), {6}, false).reshape({2, 3, 5, 6})});
  for (auto& r : cs) r.tol = oracle::Tol{1e-5, 1e-5};
  // max_unpool2d of max_pool2d_with_indices: the maxima back in place
  Pair p = input({2, 3, 4, 6}, dtypes::float32, -3, 3, 4), q = input({1, 2, 5, 5}, dtypes::float32, -3, 3, 5);
  auto [pv, pi] = p.t.max_pool2d_with_indices({2, 2});
  auto [av, aidx] = at::max_pool2d_with_indices(p.a, {2, 2}, {2, 2});
  cs.push_back({"max_unpool2d", pv.max_unpool2d(pi, {2, 2}), at::max_unpool2d(av, aidx, {4, 6})});
  auto [qv, qi] = q.t.max_pool2d_with_indices({3, 3}, tg::IntList{2, 2}, 1, 1);
  auto [bv, bidx] = at::max_pool2d_with_indices(q.a, {3, 3}, {2, 2}, {1, 1});
  cs.push_back({"max_unpool2d k3 s2 p1", qv.max_unpool2d(qi, {3, 3}, tg::IntList{2, 2}, 1, 1), at::max_unpool2d(bv, bidx, {5, 5})});
  cs.push_back({"max_unpool2d output_size", qv.max_unpool2d(qi, {3, 3}, tg::IntList{2, 2}, 1, 1, tg::Shape{1, 2, 6, 6}), at::max_unpool2d(bv, bidx, {6, 6})});
  expect_rows(cs, "float");
  Pair h = input({1, 2, 3, 4}, dtypes::float16, -3, 3, 6);
  expect_rows({{"half bilinear", h.t.interpolate({5, 6}), at::upsample_bilinear2d(h.a.to(at::kFloat), {5, 6}, false).to(at::kHalf), oracle::Tol{2e-3, 2e-3}}}, "half");
  tg::Tensor t = x.t;
  expect_error([&] { t.interpolate({4, 4}, "bicubic"); }, {"interpolate", "bicubic"});
  expect_error([&] { t.interpolate({4, 4}, "nearest", true); }, {"interpolate", "align_corners"});
  expect_error([&] { t.interpolate({4, 4, 4}, "bilinear"); }, {"interpolate", "bilinear needs 2"});
  expect_error([&] { t.interpolate({1, 2, 3, 4, 5}); }, {"interpolate", "between 1 and ndim"});
  expect_error([&] { t.interpolate({0, 4}); }, {"interpolate", "positive"});
  expect_error([&] { pv.max_unpool2d(pi.shrink_to({2, 3, 2, 2})); }, {"max_unpool2d", "indices"});
  expect_error([&] { l.t[0].max_unpool2d(l.t[0]); }, {"max_unpool2d", "(batch, channels"});
}
