// Symbolic shapes (tinygrad's Variable / bind / sint, test_symbolic_ops.py and test_symbolic_jit.py): graphs over a
// Variable bound to several values give torch's results for the same concrete sizes, their kernels are compiled once
// for the Variable's range, and TinyJit replays one capture with new values.
#include <gtest/gtest.h>

#include "tensor_harness.h"
#include "tg/jit.h"
#include "util/stats.h"

using namespace conf;
using tg::sint;
using tg::Tensor;

namespace {

const std::vector<int64_t> kVals{3, 5, 9};

// a symbolic result read through an int shrink to the bound size (tinygrad's f(a[:, :vi])[:3, :i])
Tensor concrete(const Tensor& t, const std::vector<int64_t>& shape) {
  std::vector<std::pair<int64_t, int64_t>> se;
  for (auto s : shape) se.push_back({0, s});
  return t.shrink(se);
}

// ***** the Variable API *****

TEST(Symbolic, VariableBindUnbind) {
  sint v = tg::Variable("start_pos", 1, 10);
  EXPECT_TRUE(v.is_variable());
  EXPECT_FALSE(v.is_int());
  EXPECT_EQ(v.vmin(), 1);
  EXPECT_EQ(v.vmax(), 10);
  EXPECT_EQ(v.name(), "start_pos");
  EXPECT_EQ(v.render(), "start_pos");
  sint b = v.bind(4);
  EXPECT_TRUE(b.is_bound());
  auto [var, val] = b.unbind();
  EXPECT_EQ(var, v);
  EXPECT_EQ(val, 4);
  EXPECT_EQ(b.name(), "start_pos");
  EXPECT_NE(v.bind(4), v.bind(5));
  EXPECT_EQ(v.bind(4), v.bind(4));  // hash-consed: the same node
  EXPECT_EQ(tg::sym_infer(b * 2 + 1), 9);
}

TEST(Symbolic, Arithmetic) {
  sint i = tg::Variable("i", 1, 10), j = tg::Variable("j", 0, 4);
  EXPECT_EQ((i + 2).render(), "i+2");
  EXPECT_EQ((i + 2).vmin(), 3);
  EXPECT_EQ((i * 3).vmax(), 30);
  EXPECT_EQ((i * 4 / 2).render(), "i*2");  // floor division folds an exact factor
  EXPECT_EQ((i + j).vmax(), 14);
  EXPECT_EQ((i - i), sint(0));
  EXPECT_EQ(sint(7) / 2, sint(3));
  EXPECT_EQ(sint(-7) / 2, sint(-4));  // Python's floor division
  EXPECT_EQ(sint(-7) % 2, sint(1));
  EXPECT_TRUE(tg::resolve(i >= 1));            // always true in [1, 10]
  EXPECT_FALSE(tg::resolve(i > 10, true));     // always false
  EXPECT_TRUE(tg::resolve(i < 5, true));       // unknown: the default
  EXPECT_FALSE(tg::resolve(i < 5, false));
  EXPECT_EQ(tg::sym_infer(i * j + 1, {{"i", 3}, {"j", 2}}), 7);
  EXPECT_EQ(tg::smax(i, sint(20)).vmin(), 20);
}

TEST(Symbolic, Errors) {
  sint v = tg::Variable("n", 1, 8);
  expect_error([&] { v.bind(9); }, {"bind", "9", "[1, 8]", "'n'"});
  expect_error([&] { v.bind(0); }, {"bind", "0", "'n'"});
  expect_error([&] { v.bind(3).bind(4); }, {"bind", "not an unbound Variable"});
  expect_error([&] { (v + 1).unbind(); }, {"unbind", "not a bound Variable"});
  expect_error([&] { (void)v.as_int(); }, {"n", "symbolic"});
  expect_error([] { tg::Variable("bad", 5, 1); }, {"'bad'", "min 5 > max 1"});
  expect_error([&] { tg::sym_infer(v * 2); }, {"no value", "'n'"});
  expect_error([&] { (void)(v / 0); }, {"division by zero"});
}

TEST(Symbolic, ShapeOfSymbolicTensor) {
  sint v = tg::Variable("i", 1, 10).bind(4);
  Tensor x = Tensor::empty({3, 10});
  Tensor y = x.shrink({{0, 3}, {0, v}});
  EXPECT_EQ(y.sym_shape(), (tg::SymShape{3, v}));
  EXPECT_EQ(y.ndim(), 2);
  EXPECT_EQ(y.shape_str(), "(3, i)");
  expect_error([&] { (void)y.shape(); }, {"(3, i)", "symbolic", "sym_shape"});
  expect_error([&] { (void)y.numel(); }, {"(3, i)"});
  EXPECT_EQ(y.reshape({3, v, 1}).sym_shape(), (tg::SymShape{3, v, 1}));
  EXPECT_EQ(y.reshape({v * 3}).sym_shape(), (tg::SymShape{v * 3}));
  EXPECT_EQ(y.reshape({-1}).sym_shape(), (tg::SymShape{v * 3}));  // -1 inferred symbolically
  EXPECT_EQ(y.reshape({v, -1}).sym_shape(), (tg::SymShape{v, 3}));
  EXPECT_EQ(y.transpose().sym_shape(), (tg::SymShape{v, 3}));
  EXPECT_EQ(y.sum(1).shape(), (tg::Shape{3}));  // reducing the symbolic axis gives an int shape back
  EXPECT_EQ(y.pad({{0, 0}, {0, 10 - v}}).shape(), (tg::Shape{3, 10}));
  EXPECT_EQ(Tensor::empty({2, v}).sym_shape(), (tg::SymShape{2, v}));
  // tinygrad's checks: a shrink past the largest size, a reshape that changes the element count
  expect_error([&] { x.shrink({{0, 3}, {0, tg::Variable("k", 11, 20).bind(12)}}); }, {"SHRINK", "invalid shrink"});
  expect_error([&] { y.reshape({3, v, 2}); }, {"RESHAPE", "cannot reshape"});
  expect_error([&] { (void)(y + x.shrink({{0, 3}, {0, tg::Variable("j", 1, 10).bind(4)}})); }, {"broadcast"});
}

// ***** kernels compiled once, launched with the bound value *****

TEST(Symbolic, CompiledOnceForEveryValue) {
  Pair x = input({4, 10}, dtypes::float32);
  sint var = tg::Variable("i", 1, 10);
  int64_t built_first = -1;
  for (size_t k = 0; k < kVals.size(); k++) {
    int64_t n = kVals[k];
    sint v = var.bind(n);
    Tensor y = (x.t.shrink({{0, 4}, {0, v}}) * 2 + 1).contiguous();
    Tensor s = x.t.shrink({{0, 4}, {0, v}}).sum(1);
    int64_t before = tg::engine_stats().programs_built;
    Tensor::realize({y, s});
    int64_t built = tg::engine_stats().programs_built - before;
    if (k == 0) built_first = built;
    else EXPECT_EQ(built, 0) << "n=" << n << ": a symbolic kernel was compiled again";
    at::Tensor xa = x.a.narrow(1, 0, n);
    EXPECT_TRUE(same(concrete(y, {4, n}), xa * 2 + 1)) << "n=" << n;
    EXPECT_TRUE(same(s, xa.sum(1))) << "n=" << n;
  }
  EXPECT_GE(built_first, 1);
}

// ***** values against torch at several bound sizes *****

TEST(Symbolic, MovementOps) {
  Pair x = input({4, 10}, dtypes::float32), c = input({4, 1}, dtypes::float32, -3, 3, 2);
  sint var = tg::Variable("i", 1, 10);
  for (int64_t n : kVals) {
    sint v = var.bind(n);
    Tensor xs = x.t.shrink({{0, 4}, {0, v}});
    at::Tensor xa = x.a.narrow(1, 0, n);
    std::vector<Row> rows{
        {"reshape_flat_sum", xs.reshape({v * 4}).sum(0), xa.reshape({4 * n}).sum(0)},
        {"reshape_split_max", xs.reshape({2, 2, v}).max(2), xa.reshape({2, 2, n}).amax(2)},
        {"pad_back", xs.pad({{0, 0}, {0, 10 - v}}), at::constant_pad_nd(xa, {0, 10 - n})},
        {"pad_front_fill", xs.pad({{1, 0}, {10 - v, 0}}, 7.0), at::constant_pad_nd(xa, {10 - n, 0, 1, 0}, 7.0)},
        {"expand_mul_sum", (c.t.expand({4, v}) * xs).sum(1), (c.a.expand({4, n}) * xa).sum(1)},
        {"shrink_start", x.t.shrink({{0, 4}, {v, 10}}).sum(1), x.a.narrow(1, n, 10 - n).sum(1)},
        {"transpose_sum", xs.transpose().sum(0), xa.transpose(0, 1).sum(0)},
        {"cat_int", xs.cat(c.t, 1).sum(1), at::cat({xa, c.a}, 1).sum(1)},
    };
    expect_rows(rows, "n=" + std::to_string(n));
    EXPECT_TRUE(same(concrete((xs.exp() + 1).realize(), {4, n}), xa.exp() + 1)) << "n=" << n;
  }
}

TEST(Symbolic, CatTwoVariables) {  // tinygrad's test_cat_dim1_two_vars: the result is i+j wide
  Pair a = input({3, 10}, dtypes::float32), b = input({3, 10}, dtypes::float32, -3, 3, 2);
  sint vi = tg::Variable("i", 1, 10), vj = tg::Variable("j", 1, 10);
  for (auto [i, j] : std::vector<std::pair<int64_t, int64_t>>{{2, 3}, {4, 2}, {3, 3}}) {
    Tensor r = a.t.shrink({{0, 3}, {0, vi.bind(i)}}).cat(b.t.shrink({{0, 3}, {0, vj.bind(j)}}), 1);
    EXPECT_EQ(r.sym_shape(), (tg::SymShape{3, vi.bind(i) + vj.bind(j)}));
    EXPECT_TRUE(same(concrete(r.realize(), {3, i + j}), at::cat({a.a.narrow(1, 0, i), b.a.narrow(1, 0, j)}, 1))) << i << "," << j;
  }
}

TEST(Symbolic, ReduceMatmulSoftmax) {
  Pair a = input({3, 10}, dtypes::float32), b = input({10, 5}, dtypes::float32, -3, 3, 2);
  Pair q = input({2, 8}, dtypes::float32, -1, 1, 3), k = input({10, 8}, dtypes::float32, -1, 1, 4), val = input({10, 8}, dtypes::float32, -1, 1, 5);
  sint var = tg::Variable("i", 1, 10);
  for (int64_t n : kVals) {
    sint v = var.bind(n);
    Tensor as = a.t.shrink({{0, 3}, {0, v}});
    at::Tensor aa = a.a.narrow(1, 0, n);
    Tensor ks = k.t.shrink({{0, v}, {0, 8}}), vs = val.t.shrink({{0, v}, {0, 8}});
    at::Tensor ka = k.a.narrow(0, 0, n), va = val.a.narrow(0, 0, n);
    Tensor scores = (q.t.matmul(ks.transpose()) * (1.0 / std::sqrt(8.0))).softmax(-1);
    at::Tensor sa = at::softmax(q.a.matmul(ka.transpose(0, 1)) / std::sqrt(8.0), -1);
    std::vector<Row> rows{
        {"sum", as.sum(1), aa.sum(1)},
        {"max", as.max(1), aa.amax(1)},
        {"min", as.min(1), aa.amin(1)},
        {"mean", as.mean(1), aa.mean(1)},  // divides by the symbolic count
        {"var", as.var(1), aa.var(1)},
        {"sum_keepdim_sub", (as - as.sum(1, true)).max(1), (aa - aa.sum(1, true)).amax(1)},
        {"matmul_inner", as.matmul(b.t.shrink({{0, v}, {0, 5}})), aa.matmul(b.a.narrow(0, 0, n))},
        {"attention", scores.matmul(vs), sa.matmul(va)},
        {"softmax_sum", scores.sum(-1), sa.sum(-1)},
        {"logsumexp", as.logsumexp(1), at::logsumexp(aa, 1)},
    };
    expect_rows(rows, "n=" + std::to_string(n));
    EXPECT_TRUE(same(concrete(scores.realize(), {2, n}), sa)) << "n=" << n;
  }
}

TEST(Symbolic, AttentionGradient) {  // backward through symbolic shrink, matmul and softmax, vs torch autograd
  Pair q = input({2, 8}, dtypes::float32, -1, 1, 3), k = input({10, 8}, dtypes::float32, -1, 1, 4), val = input({10, 8}, dtypes::float32, -1, 1, 5);
  sint var = tg::Variable("i", 1, 10);
  for (int64_t n : kVals) {
    Tensor qt = to_tg(q.a), kt = to_tg(k.a), vt = to_tg(val.a);  // fresh leaves: no gradient accumulates across values
    Tensor ks = kt.shrink({{0, var.bind(n)}, {0, 8}}), vs = vt.shrink({{0, var.bind(n)}, {0, 8}});
    (qt.matmul(ks.transpose()).softmax(-1).matmul(vs) * 3).sum().backward();
    at::Tensor qa = q.a.clone().requires_grad_(true), ka = k.a.clone().requires_grad_(true), va = val.a.clone().requires_grad_(true);
    (at::softmax(qa.matmul(ka.narrow(0, 0, n).transpose(0, 1)), -1).matmul(va.narrow(0, 0, n)) * 3).sum().backward();
    std::vector<Row> rows{{"dq", *qt.grad(), qa.grad()}, {"dk", *kt.grad(), ka.grad()}, {"dv", *vt.grad(), va.grad()}};
    expect_rows(rows, "n=" + std::to_string(n));
  }
}

// ***** attention over a KV cache read to a symbolic length *****

TEST(Symbolic, TrilTriu) {  // symbolic matrix dims and a symbolic diagonal
  Pair x = input({6, 10}, dtypes::float32), y = input({10, 6}, dtypes::float32, -3, 3, 2);
  sint var = tg::Variable("i", 1, 10);
  for (int64_t n : kVals) {
    sint v = var.bind(n);
    Tensor xs = x.t.shrink({{0, 6}, {0, v}});
    at::Tensor xa = x.a.narrow(1, 0, n);
    std::vector<std::pair<Tensor, at::Tensor>> got{
        {xs.triu(), xa.triu()}, {xs.tril(), xa.tril()}, {xs.triu(2), xa.triu(2)}, {xs.tril(-1), xa.tril(-1)},
        {xs.triu(v - 2), xa.triu(n - 2)}, {xs.tril(v - 4), xa.tril(n - 4)},
        {y.t.shrink({{0, v}, {0, 6}}).tril(1), y.a.narrow(0, 0, n).tril(1)}, {y.t.shrink({{0, v}, {0, 6}}).triu(-(v / 2)), y.a.narrow(0, 0, n).triu(-(n / 2))}};
    for (size_t k = 0; k < got.size(); k++)
      EXPECT_TRUE(same(concrete(got[k].first.realize(), got[k].second.sizes().vec()), got[k].second)) << "case " << k << " n=" << n;
  }
}

TEST(Symbolic, ScaledDotProductAttention) {
  // queries at positions start_pos..start_pos+T-1 over a cache read to start_pos+T, as the llm model's attention
  const int64_t T = 2;
  Pair q = input({1, 4, T, 8}, dtypes::float32, -1, 1, 3), k = input({1, 2, 12, 8}, dtypes::float32, -1, 1, 4);
  Pair val = input({1, 2, 12, 6}, dtypes::float32, -1, 1, 5), q2 = input({1, 2, T, 8}, dtypes::float32, -1, 1, 6);
  sint var = tg::Variable("start_pos", 0, 10);
  int64_t built_first = -1;
  for (int64_t n : {1, 4, 10}) {
    sint sp = var.bind(n), end = sp + T;
    auto upto = [&](const Tensor& t, int64_t d) { return t.shrink({{0, 1}, {0, 2}, {0, end}, {0, d}}); };
    Tensor ks = upto(k.t, 8), vs = upto(val.t, 6);
    at::Tensor ka = k.a.narrow(2, 0, n + T), va = val.a.narrow(2, 0, n + T);
    Tensor fmask = Tensor(-INFINITY, dtypes::float32).reshape({1, 1, 1, 1}).expand({1, 1, T, end}).triu(sp + 1);
    at::Tensor fmask_a = at::full({1, 1, T, n + T}, -INFINITY).triu(n + 1);
    Tensor bmask = tg::Tensor(true).reshape({1, 1}).expand({T, end}).tril(sp);
    at::Tensor bmask_a = at::ones({T, n + T}, at::kBool).tril(n);
    std::vector<Row> rows{
        {"plain", q2.t.scaled_dot_product_attention(ks, vs), torch_sdpa(q2.a, ka, va, std::nullopt, false, false)},
        {"gqa", q.t.scaled_dot_product_attention(ks, vs, std::nullopt, 0.0, false, true), torch_sdpa(q.a, ka, va, std::nullopt, false, true)},
        {"causal", q2.t.scaled_dot_product_attention(ks, vs, std::nullopt, 0.0, true), torch_sdpa(q2.a, ka, va, std::nullopt, true, false)},
        {"gqa float mask", q.t.scaled_dot_product_attention(ks, vs, fmask, 0.0, false, true), torch_sdpa(q.a, ka, va, fmask_a, false, true)},
        {"bool mask", q2.t.scaled_dot_product_attention(ks, vs, bmask), torch_sdpa(q2.a, ka, va, bmask_a, false, false)},
    };
    int64_t before = tg::engine_stats().programs_built;
    expect_rows(rows, "start_pos=" + std::to_string(n));
    if (built_first < 0) built_first = tg::engine_stats().programs_built - before;
    else EXPECT_EQ(tg::engine_stats().programs_built - before, 0) << "start_pos=" << n << ": a symbolic kernel was compiled again";
  }
  EXPECT_GE(built_first, 1);
  // the head dim scales the scores, so it must be an int
  sint hd = tg::Variable("hd", 1, 8).bind(4);
  Tensor qh = q2.t.shrink({{0, 1}, {0, 2}, {0, T}, {0, hd}}), kh = k.t.shrink({{0, 1}, {0, 2}, {0, 3}, {0, hd}});
  expect_error([&] { qh.scaled_dot_product_attention(kh, kh); }, {"scaled_dot_product_attention", "int last dim", "hd"});
}

TEST(Symbolic, ScaledDotProductAttentionGradient) {  // GQA with a causal float mask at a concrete shape, vs torch autograd
  Pair q = input({1, 4, 3, 8}, dtypes::float32, -1, 1, 3), k = input({1, 2, 5, 8}, dtypes::float32, -1, 1, 4);
  Pair val = input({1, 2, 5, 6}, dtypes::float32, -1, 1, 5);
  Tensor qt = to_tg(q.a), kt = to_tg(k.a), vt = to_tg(val.a);
  Tensor mask = Tensor::full({1, 1, 3, 5}, -INFINITY).triu(3);
  (qt.scaled_dot_product_attention(kt, vt, mask, 0.0, false, true) * 3).sum().backward();
  at::Tensor qa = q.a.clone().requires_grad_(true), ka = k.a.clone().requires_grad_(true), va = val.a.clone().requires_grad_(true);
  (torch_sdpa(qa, ka, va, at::full({1, 1, 3, 5}, -INFINITY).triu(3), false, true) * 3).sum().backward();
  expect_rows({{"dq", *qt.grad(), qa.grad()}, {"dk", *kt.grad(), ka.grad()}, {"dv", *vt.grad(), va.grad()}}, "sdpa gradient");
}

TEST(Symbolic, KvCacheWriteAtSymbolicOffset) {  // cache[pos:pos+1] = row, one kernel for every pos
  Tensor cache = Tensor::zeros({8, 2}).contiguous().realize();
  at::Tensor expect = at::zeros({8, 2});
  sint var = tg::Variable("pos", 0, 7);
  int64_t built_first = 0;
  for (int64_t n : {0, 3, 5, 7}) {
    sint v = var.bind(n);
    Pair row = input({1, 2}, dtypes::float32, -3, 3, uint32_t(10 + n));
    int64_t before = tg::engine_stats().programs_built;
    cache.shrink({{v, v + 1}, {0, 2}}).assign(row.t).realize();
    if (n == 0) built_first = tg::engine_stats().programs_built - before;
    else EXPECT_EQ(tg::engine_stats().programs_built - before, 0) << "pos=" << n;
    expect.narrow(0, n, 1).copy_(row.a);
    EXPECT_TRUE(same(cache, expect)) << "pos=" << n;
  }
  EXPECT_GE(built_first, 1);
}

TEST(Symbolic, RealizeErrors) {
  Tensor x = Tensor::ones({4, 10});
  // a Variable nobody bound has no value to launch with
  sint u = tg::Variable("u", 1, 10);
  expect_error([&] { x.shrink({{0, 4}, {0, u}}).sum().realize(); }, {"variable u"});
  // one Variable bound to two values in one schedule
  sint v = tg::Variable("v", 1, 10);
  expect_error([&] { Tensor::realize({x.shrink({{0, 4}, {0, v.bind(3)}}).sum(), x.shrink({{0, 4}, {0, v.bind(5)}}).sum()}); },
               {"bind mismatch", "v"});
}

// ***** TinyJit: one capture, replayed with new values *****

TEST(Symbolic, JitReplaysWithNewValues) {
  // a KV-cache-like step: attention of a query over the first `pos` rows of a cache
  Pair cache = input({16, 4}, dtypes::float32, -1, 1, 6), qv = input({1, 4}, dtypes::float32, -1, 1, 7);
  sint var = tg::Variable("pos", 1, 16);
  tg::TinyJit step([&](const std::vector<Tensor>& in, const std::vector<sint>& vars) {
    Tensor kv = cache.t.shrink({{0, vars[0]}, {0, 4}});
    return in[0].matmul(kv.transpose()).softmax(-1).matmul(kv) + kv.sum(0);
  });
  int64_t built_after_capture = 0;
  std::vector<int64_t> ns{3, 5, 9, 2, 16, 7};
  for (size_t c = 0; c < ns.size(); c++) {
    int64_t n = ns[c];
    Tensor q = Tensor::from_vector(qv.t.to_vector<float>(), {1, 4});
    Tensor out = step({q}, {var.bind(n)});
    if (c == 1) built_after_capture = tg::engine_stats().programs_built;
    at::Tensor kv = cache.a.narrow(0, 0, n);
    EXPECT_TRUE(same(out, at::softmax(qv.a.matmul(kv.transpose(0, 1)), -1).matmul(kv) + kv.sum(0))) << "pos=" << n;
  }
  EXPECT_TRUE(step.is_captured());
  EXPECT_EQ(tg::engine_stats().programs_built, built_after_capture);  // replays compile nothing
  Tensor q = Tensor::from_vector(qv.t.to_vector<float>(), {1, 4});
  expect_error([&] { step({q}); }, {"TinyJit", "'pos'"});
  expect_error([&] { step({q}, {var}); }, {"TinyJit", "not a bound Variable"});
}

}  // namespace
