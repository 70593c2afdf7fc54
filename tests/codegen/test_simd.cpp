// The CPU kernels' SIMD shaping (SIMD=1, where tinygrad.cpp departs from tinygrad): the heuristic's register tile
// (simd_upcast: a vector register's lanes, 8 or 16, on the axis one input reads contiguously, rows on an axis only the
// other input moves along),
// accumulators folded into vector loads and stores, and the results of such kernels against plain loops.
#include <gtest/gtest.h>

#include <cmath>

#include "support/random.h"
#include "codegen/opt/postrange.h"
#include "codegen/pipeline.h"
#include "runtime/device.h"
#include "tensor/tensor_impl.h"
#include "uop/pattern_helpers.h"
#include "tg/context.h"
#include "tg/gguf.h"

using namespace tg;

namespace {

UOp only_kernel(const Tensor& t) {
  UOp linear = schedule_linear({t});
  for (auto& c : linear.src())
    if (c.src(0).op() == Ops::SINK) return c.src(0);
  throw Error("no kernel");
}
UOp last_kernel(const Tensor& t) {
  UOp linear = schedule_linear({t});
  for (size_t i = linear.src().size(); i-- > 0;)
    if (linear.src()[i].src(0).op() == Ops::SINK) return linear.src()[i].src(0);
  throw Error("no kernel");
}

ClangRenderer with_width(int64_t w) {  // the host's width is one of these; both render anywhere
  ClangRenderer r;
  r.vector_width = w;
  return r;
}

using tg::test::randv;

}  // namespace

TEST(Simd, MatmulGetsARegisterTile) {
  // (256 x 64) @ (64 x 256): B is contiguous along n and A broadcast along it; A moves along m with stride 64
  UOp ast = only_kernel(Tensor::empty({256, 64}).matmul(Tensor::empty({64, 256})));
  Scheduler k = hand_coded_optimizations(Scheduler(ast, caps_of(ClangRenderer())));
  for (int64_t w : {8, 16}) {
    ClangRenderer ren = with_width(w);
    std::string fw = "float" + std::to_string(w);
    Scheduler kw = hand_coded_optimizations(Scheduler(ast, caps_of(ren)));
    // two vectors of lanes (256 columns have them), then the rows the registers hold beside them: 8 of at most 14
    // (32 zmm), 4 of at most 6 (16 ymm), as 256 rows divide
    ASSERT_GE(kw.applied_opts.size(), 3u);
    EXPECT_EQ(kw.applied_opts[0], (Opt{OptOps::UPCAST, 1, Arg(w)}));
    EXPECT_EQ(kw.applied_opts[1], (Opt{OptOps::UPCAST, 1, Arg(int64_t(2))}));
    EXPECT_EQ(kw.applied_opts[2], (Opt{OptOps::UPCAST, 0, Arg(int64_t(w == 16 ? 8 : 4))}));
    // a small one (under 4M multiply-adds) gets 8 lanes by 4 rows: its codegen would cost more than a bigger tile saves
    Scheduler small = hand_coded_optimizations(Scheduler(only_kernel(Tensor::empty({64, 32}).matmul(Tensor::empty({32, 48}))), caps_of(ren)));
    ASSERT_GE(small.applied_opts.size(), 2u);
    EXPECT_EQ(small.applied_opts[0], (Opt{OptOps::UPCAST, 1, Arg(int64_t(8))}));
    EXPECT_EQ(small.applied_opts[1], (Opt{OptOps::UPCAST, 0, Arg(int64_t(4))}));
    // from 256K multiply-adds (a batch-1 convolution's 36 x 64 x 576) one vector of the host's lanes by 8 rows
    Scheduler medium = hand_coded_optimizations(Scheduler(only_kernel(Tensor::empty({64, 128}).matmul(Tensor::empty({128, 64}))), caps_of(ren)));
    ASSERT_GE(medium.applied_opts.size(), 2u);
    EXPECT_EQ(medium.applied_opts[0], (Opt{OptOps::UPCAST, 1, Arg(w)}));
    EXPECT_EQ(medium.applied_opts[1], (Opt{OptOps::UPCAST, 0, Arg(int64_t(8))}));
    for (auto& o : kw.applied_opts) EXPECT_NE(o.op, OptOps::UNROLL) << "the tile is the register block; no unroll on top";
    std::string src = to_program(kw.get_optimized_ast("test"), ren)->kernel.src;
    EXPECT_NE(src.find("__attribute__((aligned(" + std::to_string(4 * w) + ")))"), std::string::npos) << src;
    EXPECT_NE(src.find("*((" + fw + "*)((buf0+"), std::string::npos) << src;
  }
  // 40 columns are not a multiple of 16: half a vector
  Scheduler odd = hand_coded_optimizations(Scheduler(only_kernel(Tensor::empty({256, 64}).matmul(Tensor::empty({64, 40}))), caps_of(with_width(16))));
  ASSERT_FALSE(odd.applied_opts.empty());
  EXPECT_EQ(odd.applied_opts[0], (Opt{OptOps::UPCAST, 1, Arg(int64_t(8))}));

  Context tinygrad_kernels({{"SIMD", 0}});
  Scheduler t = hand_coded_optimizations(Scheduler(ast, caps_of(ClangRenderer())));
  ASSERT_FALSE(t.applied_opts.empty());
  EXPECT_NE(t.applied_opts[0], k.applied_opts[0]);
  std::string tsrc = to_program(t.get_optimized_ast("test"), ClangRenderer())->kernel.src;
  EXPECT_EQ(tsrc.find("float8"), std::string::npos) << tsrc;
}

TEST(Simd, LanesAreInnermostInTheAccumulators) {
  // a 3x3 convolution whose graph meets the row axis before the lane axis: each 8-wide accumulator update must still
  // be lanes of one row (one broadcast input times a vector of weights), not one lane of 8 rows
  Tensor x = Tensor::empty({16, 32, 10, 10}), w = Tensor::empty({64, 32, 3, 3});
  UOp ast;
  UOp sched = schedule_linear({x.conv2d(w)});  // kept alive: src() views its node
  for (auto& c : sched.src())
    if (c.src(0).op() == Ops::SINK)
      for (auto& u : c.src(0).toposort()) if (u.op() == Ops::REDUCE) ast = c.src(0);  // the convolution, not the weights' copy
  ASSERT_TRUE(ast.get());
  for (int64_t w : {8, 16}) {
    std::string src = to_program(ast, with_width(w))->kernel.src, fw = "float" + std::to_string(w);
    // the update is one vector op (pm_vector_lanes): "acc = (acc+(S*W))", S a scalar that C broadcasts to every lane
    std::string acc = "*((" + fw + "*)((buf0+0)))";
    size_t at = src.find(acc + " = ((" + acc + ")+(");
    ASSERT_NE(at, std::string::npos) << src;
    size_t s0 = at + 2 * acc.size() + 8;
    std::string s = src.substr(s0, src.find('*', s0) - s0);
    EXPECT_NE(src.find("  float " + s + " = "), std::string::npos) << "'" << s << "' is no scalar\n" << src;
  }
}

TEST(Simd, NoTileWithoutAContiguousAndABroadcastInput) {
  // a sum down 44 columns: one input, nothing broadcast (with columns of whole vectors it is column_reduce's:
  // test_column_reduce.cpp); an int matmul: no float lanes
  for (int64_t w : {8, 16}) {
    Scheduler s(only_kernel(Tensor::empty({64, 44}).sum(0)), caps_of(with_width(w)));
    for (auto& o : hand_coded_optimizations(s).applied_opts) EXPECT_FALSE(o.op == OptOps::UPCAST && (o.arg == Arg(int64_t(8)) || o.arg == Arg(w)));
    Scheduler i(only_kernel(Tensor::empty({64, 32}, dtypes::int32).matmul(Tensor::empty({32, 48}, dtypes::int32))), caps_of(with_width(w)));
    auto opts = hand_coded_optimizations(i).applied_opts;
    ASSERT_FALSE(opts.empty());
    EXPECT_FALSE(opts[0] == (Opt{OptOps::UPCAST, 1, Arg(int64_t(8))}) || opts[0] == (Opt{OptOps::UPCAST, 1, Arg(w)}));
  }
}

TEST(Simd, TiledKernelsMatchPlainLoops) {
  // matmul (with a row count that leaves a remainder of the 16-row tile), and a convolution's forward and gradients
  // through its channel-last copies, against plain loops
  for (auto [m, kk, n] : {std::tuple<int64_t, int64_t, int64_t>{64, 32, 48}, {24, 17, 40}}) {
    auto av = randv(size_t(m * kk), 1), bv = randv(size_t(kk * n), 2);
    auto got = Tensor::from_vector(av, {m, kk}).matmul(Tensor::from_vector(bv, {kk, n})).to_vector<float>();
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double ref = 0;
        for (int64_t l = 0; l < kk; l++) ref += double(av[size_t(i * kk + l)]) * bv[size_t(l * n + j)];
        ASSERT_NEAR(got[size_t(i * n + j)], ref, 1e-4) << m << "x" << kk << "x" << n << " at " << i << "," << j;
      }
  }
  const int64_t B = 2, CI = 3, CO = 16, H = 7, K = 3, O = H - K + 1;
  auto xv = randv(size_t(B * CI * H * H), 3), wv = randv(size_t(CO * CI * K * K), 4), gv = randv(size_t(B * CO * O * O), 5);
  Tensor x = Tensor::from_vector(xv, {B, CI, H, H}), w = Tensor::from_vector(wv, {CO, CI, K, K});
  Tensor y = x.conv2d(w);
  auto grads = (y * Tensor::from_vector(gv, {B, CO, O, O})).sum().gradient({x, w});
  auto yv = y.to_vector<float>(), dx = grads[0].to_vector<float>(), dw = grads[1].to_vector<float>();
  std::vector<double> rx(xv.size()), rw(wv.size());
  for (int64_t b = 0; b < B; b++)
    for (int64_t co = 0; co < CO; co++)
      for (int64_t oy = 0; oy < O; oy++)
        for (int64_t ox = 0; ox < O; ox++) {
          double acc = 0, g = gv[size_t(((b * CO + co) * O + oy) * O + ox)];
          for (int64_t ci = 0; ci < CI; ci++)
            for (int64_t ky = 0; ky < K; ky++)
              for (int64_t kx = 0; kx < K; kx++) {
                size_t xi = size_t(((b * CI + ci) * H + oy + ky) * H + ox + kx), wi = size_t(((co * CI + ci) * K + ky) * K + kx);
                acc += double(xv[xi]) * wv[wi], rx[xi] += g * wv[wi], rw[wi] += g * xv[xi];
              }
          ASSERT_NEAR(yv[size_t(((b * CO + co) * O + oy) * O + ox)], acc, 1e-4);
        }
  for (size_t i = 0; i < rx.size(); i++) ASSERT_NEAR(dx[i], rx[i], 1e-4) << "dx " << i;
  for (size_t i = 0; i < rw.size(); i++) ASSERT_NEAR(dw[i], rw[i], 1e-4) << "dw " << i;
}

// The packed GEMM whose B panels are past L2 (1 MiB or more) and bigger than A: the tile's loop over B's panels is
// the outermost (a SWAP of the output's (M, N) order), so a panel stays in cache while A's rows stream past it; with A
// bigger than B the order stays. Values (with an epilogue reading the output again, as the prompt's silu and
// residual do) against a float64 loop at both widths, one and two threads.
TEST(Simd, BigPanelsLoopOutsideTheRows) {
  // the packed GEMM's kernel as the prompt's x @ W^T with a fused epilogue has it: output loops in (M, N/P, P) order,
  // A (M, K) read along K, B's panels (N/P, K, P)
  auto kernel = [](int64_t M, int64_t K, int64_t N) {
    const int64_t P = 32;
    UOp m = UOp::range(M, 0), p = UOp::range(N / P, 1), l = UOp::range(P, 2), k = UOp::range(K, 3, AxisType::REDUCE);
    UOp a = UOp::param(0, dtypes::float32, Shape{M * K}, "CPU"), b = UOp::param(1, dtypes::float32, Shape{N * K}, "CPU");
    UOp out = UOp::param(2, dtypes::float32, Shape{M * N}, "CPU");
    UOp v = (a.index({m * K + k}) * b.index({p * (K * P) + k * P + l})).reduce({k}, Ops::ADD);
    return UOp::sink({out.index({m * N + p * P + l}).store(v * v).end({m, p, l})});
  };
  Context one({{"NUM_CPU_THREADS", 1}});
  for (int64_t w : {8, 16}) {
    ClangRenderer ren = with_width(w);
    Scheduler k = hand_coded_optimizations(Scheduler(kernel(128, 768, 2048), caps_of(ren)));
    std::string opts;
    for (auto& o : k.applied_opts) opts += o.str() + " ";
    EXPECT_TRUE(std::any_of(k.applied_opts.begin(), k.applied_opts.end(), [](const Opt& o) { return o.op == OptOps::SWAP; })) << opts;
    std::string src = to_program(k.get_optimized_ast("test"), ren)->kernel.src;
    size_t first = src.find("for (int ");
    ASSERT_NE(first, std::string::npos) << src;
    EXPECT_NE(src.substr(first, 40).find("< 64;"), std::string::npos) << "the panels' loop first\n" << src;
    // a transformer block's MLP down projection (1024 x 1536 @ 1536 x 384: A 6 MiB, B 2.3 MiB): A once per block of B
    // (12 x 6 MiB) streams less than B once per block of 8 rows (128 x 2.3 MiB)
    Scheduler d = hand_coded_optimizations(Scheduler(kernel(1024, 1536, 384), caps_of(ren)));
    EXPECT_TRUE(std::any_of(d.applied_opts.begin(), d.applied_opts.end(), [](const Opt& o) { return o.op == OptOps::SWAP; }));
    // a block's qkv projection (1024 x 384 @ 384 x 1152: B 1.7 MiB, more than half the L2): B's panels outside
    Scheduler q = hand_coded_optimizations(Scheduler(kernel(1024, 384, 1152), caps_of(ren)));
    EXPECT_TRUE(std::any_of(q.applied_opts.begin(), q.applied_opts.end(), [](const Opt& o) { return o.op == OptOps::SWAP; }));
    // B that L2 holds (2048 x 512 @ 512 x 512, 1 MiB): the output's order stays
    Scheduler a = hand_coded_optimizations(Scheduler(kernel(2048, 512, 512), caps_of(ren)));
    EXPECT_TRUE(std::none_of(a.applied_opts.begin(), a.applied_opts.end(), [](const Opt& o) { return o.op == OptOps::SWAP; }));
  }
  const int64_t m = 64, kk = 256, n = 1024;  // B: 1 MiB
  auto av = randv(size_t(m * kk), 21), bv = randv(size_t(kk * n), 22), rv = randv(size_t(m * n), 23);
  Tensor a = Tensor::from_vector(av, {m, kk}), b = Tensor::from_vector(bv, {kk, n}), r = Tensor::from_vector(rv, {m, n});
  for (int64_t w : {8, 16})
    for (int64_t threads : {1, 2}) {
      Context ctx({{"CPU_VECTOR_WIDTH", w}, {"NUM_CPU_THREADS", threads}});
      SCOPED_TRACE("width " + std::to_string(w) + " threads " + std::to_string(threads));
      Tensor y = a.matmul(b);
      auto got = (y.silu() * y + r).to_vector<float>();
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
          double acc = 0;
          for (int64_t l = 0; l < kk; l++) acc += double(av[size_t(i * kk + l)]) * bv[size_t(l * n + j)];
          double want = acc / (1 + std::exp(-acc)) * acc + rv[size_t(i * n + j)];
          ASSERT_NEAR(got[size_t(i * n + j)], want, 1e-3 * (1 + std::abs(want))) << i << "," << j;
        }
    }
}

// A matrix-vector product on the CPU with SIMD kernels (decode's shape: a few hundred rows, under the 1024 outputs
// where tinygrad's heuristic starts upcasting): 8 of its rows are upcast, one accumulator each, so the sums are not one
// chain of dependent adds; with SIMD=0 the kernel stays tinygrad's. Values against a plain double loop.
// 384 rows: under the 1024 outputs that get upcasts anyway; 2048 (an FFN's gate or up in decode): as many rows
TEST(Matvec, RowsAreUpcastOnSimdCpus) {
  for (int64_t n : {384, 2048}) {
    Tensor w = Tensor::empty({n, 768}, dtypes::float16), x = Tensor::empty({768});
    UOp ast = only_kernel(w.cast(dtypes::float32).matmul(x));
    for (int64_t width : {8, 16}) {
      Scheduler k = hand_coded_optimizations(Scheduler(ast, caps_of(with_width(width))));
      bool rows = false;  // 8 rows: 8 sums in flight
      for (auto& o : k.applied_opts) rows |= o == Opt{OptOps::UPCAST, 0, Arg(int64_t(8))};
      EXPECT_TRUE(rows) << n << " rows, width " << width;
    }
    Context tinygrad_kernels({{"SIMD", 0}});
    Scheduler t = hand_coded_optimizations(Scheduler(ast, caps_of(ClangRenderer())));
    for (auto& o : t.applied_opts) EXPECT_FALSE(o.op == OptOps::UPCAST && o.axis == 0 && (n < 1024 || o.arg == Arg(int64_t(8)))) << n << " rows, SIMD=0";
  }
}

TEST(Matvec, ValuesMatchAPlainLoop) {
  uint32_t seed = 3;
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{384, 768}, {100, 64}, {768, 2048}, {2048, 256}}) {
    std::vector<float> wv = randv(size_t(rows * cols), seed++), xv = randv(size_t(cols), seed++);
    Tensor w = Tensor::from_vector(wv, {rows, cols}, dtypes::float16);
    std::vector<float> wh = w.cast(dtypes::float32).to_vector<float>();  // the float16-rounded weights
    std::vector<float> got = w.cast(dtypes::float32).matmul(Tensor::from_vector(xv, {cols})).to_vector<float>();
    ASSERT_EQ(got.size(), size_t(rows));
    for (int64_t i = 0; i < rows; i++) {
      double ref = 0;
      for (int64_t j = 0; j < cols; j++) ref += double(wh[size_t(i * cols + j)]) * xv[size_t(j)];
      ASSERT_NEAR(got[size_t(i)], ref, 1e-4 * std::sqrt(double(cols))) << rows << "x" << cols << " row " << i;
    }
  }
}

// Decode's matrix-vector products: a vector register's lanes along the reduce axis K (each its own accumulator) by 8
// rows; the kernel's reduce splits into one over the loops that keeps the lanes (acc of rows x lanes) and a horizontal
// sum of the lanes after them, and the lanes stay vectors from the loads to the accumulators (pm_vector_lanes). Values against a float64 loop at K a multiple of 8 (lanes) and not (the usual unroll), for a float16 weight
// and an int8 one with a scale per block of 32 (Q8_0's dequantization in the matmul).
TEST(Matvec, VectorAccumulatorsAlongK) {
  Tensor w = Tensor::empty({2048, 768}, dtypes::float16), x = Tensor::empty({768});
  UOp ast = only_kernel(w.cast(dtypes::float32).matmul(x));
  for (int64_t width : {8, 16}) {
    Scheduler k = hand_coded_optimizations(Scheduler(ast, caps_of(with_width(width))));
    ASSERT_GE(k.applied_opts.size(), 2u);
    EXPECT_EQ(k.applied_opts[0], (Opt{OptOps::UNROLL, 0, Arg(width)})) << "a vector register's lanes (768 has 16s)";
    EXPECT_EQ(k.applied_opts[1], (Opt{OptOps::UPCAST, 0, Arg(int64_t(8))}));
    std::vector<UOp> reds;
    for (auto& u : k.ast.toposort()) if (u.op() == Ops::REDUCE) reds.push_back(u);
    ASSERT_EQ(reds.size(), 2u) << "a reduce over the loop that keeps the lanes, then one over the lanes";
    EXPECT_EQ(reds[1].src(0), reds[0]);
    ASSERT_EQ(reds[1].src().size(), 2u);
    EXPECT_EQ(pat::axis_type(reds[1].src(1)), AxisType::UNROLL);
    std::string src = to_program(k.get_optimized_ast("test"), with_width(width))->kernel.src;
    std::string fw = "float" + std::to_string(width), hw = "__fp16" + std::to_string(width);
    EXPECT_NE(src.find("buf0[" + std::to_string(8 * width) + "]"), std::string::npos) << "8 rows x the lanes of accumulators\n" << src;
    // each row's step: a vector of the weights, converted, times the vector of x, added to the row's accumulators
    EXPECT_NE(src.find("*((" + hw + "*)((data1_"), std::string::npos) << "a row's weights load as one vector\n" << src;
    EXPECT_NE(src.find("__builtin_convertvector"), std::string::npos) << src;
    std::string acc = "*((" + fw + "*)((buf0+0)))";
    EXPECT_NE(src.find(acc + " = ((" + acc + ")+(cast"), std::string::npos) << "the accumulators update as vectors\n" << src;
  }
  // int8 weights: each row's bytes load as one vector and convert (a float16 per-block scale: the values below)
  UOp qast = only_kernel(Tensor::empty({2048, 768}, dtypes::int8).cast(dtypes::float32).matmul(x));
  for (int64_t width : {8, 16}) {
    Scheduler k = hand_coded_optimizations(Scheduler(qast, caps_of(with_width(width))));
    std::string src = to_program(k.get_optimized_ast("test"), with_width(width))->kernel.src;
    EXPECT_NE(src.find("*((signed_char" + std::to_string(width) + "*)((data"), std::string::npos) << "a row's bytes load as one vector\n" << src;
    EXPECT_NE(src.find("__builtin_convertvector"), std::string::npos) << src;
  }
  {
    Context tinygrad_kernels({{"SIMD", 0}});
    Scheduler t = hand_coded_optimizations(Scheduler(ast, caps_of(ClangRenderer())));
    int64_t reds = 0;
    for (auto& u : t.ast.toposort()) reds += u.op() == Ops::REDUCE;
    EXPECT_EQ(reds, 1) << "SIMD=0: tinygrad's kernel";
  }
  uint32_t seed = 11;
  for (int64_t w : {8, 16})  // both widths compile and run on either host (clang emulates the wider vectors)
  for (int64_t cols : {16, 64, 96, 768, 2048, 100, 36}) {
    Context ctx({{"CPU_VECTOR_WIDTH", w}});
    SCOPED_TRACE("CPU_VECTOR_WIDTH=" + std::to_string(w));
    int64_t rows = 24;
    std::vector<float> wv = randv(size_t(rows * cols), seed++), xv = randv(size_t(cols), seed++);
    Tensor xt = Tensor::from_vector(xv, {cols});
    // float16 weights
    Tensor wh = Tensor::from_vector(wv, {rows, cols}, dtypes::float16);
    std::vector<float> whf = wh.cast(dtypes::float32).to_vector<float>();
    std::vector<float> got = wh.cast(dtypes::float32).matmul(xt).to_vector<float>();
    ASSERT_EQ(got.size(), size_t(rows));
    for (int64_t i = 0; i < rows; i++) {
      double ref = 0;
      for (int64_t j = 0; j < cols; j++) ref += double(whf[size_t(i * cols + j)]) * xv[size_t(j)];
      ASSERT_NEAR(got[size_t(i)], ref, 1e-5 * std::sqrt(double(cols))) << "float16 " << rows << "x" << cols << " row " << i;
    }
    // int8 weights with a float16 scale per block of 4 (cols % 4 == 0): q * d, reduced over the blocks and within them
    std::vector<float> qv(size_t(rows * cols)), dv(size_t(rows * cols / 4));
    for (size_t i = 0; i < qv.size(); i++) qv[i] = std::round(wv[i] * 127);
    for (size_t i = 0; i < dv.size(); i++) dv[i] = float(1 + i % 7) / 128;  // exact in float16
    Tensor q = Tensor::from_vector(qv, {rows, cols / 4, 4}).cast(dtypes::int8).realize();
    Tensor d = Tensor::from_vector(dv, {rows, cols / 4, 1}, dtypes::float16);
    Tensor wq = (q.cast(dtypes::float32) * d.cast(dtypes::float32)).reshape({rows, cols});
    got = wq.matmul(xt).to_vector<float>();
    for (int64_t i = 0; i < rows; i++) {
      double ref = 0;
      for (int64_t j = 0; j < cols; j++) ref += double(qv[size_t(i * cols + j)]) * dv[size_t((i * cols + j) / 4)] * xv[size_t(j)];
      ASSERT_NEAR(got[size_t(i)], ref, 1e-4 * std::sqrt(double(cols))) << "int8 " << rows << "x" << cols << " row " << i;
    }
  }
}

// Copies whose input and output strides disagree (a transpose, the packed GEMM's B panels, from B and from B^T): exact
// values against a hand loop at both vector widths, and the heuristic's tile on them: the inner block reads the input
// along its stored order, a whole cache line (16 floats) or more per step
TEST(Simd, TransposingCopiesMatchAHandLoop) {
  for (int64_t w : {8, 16}) {
    // (160, 128) out of (128, 160): w lanes along the output's rows, 16 of the input's (one cache line each)
    Scheduler k = hand_coded_optimizations(Scheduler(only_kernel(Tensor::empty({128, 160}).transpose(0, 1).contiguous()), caps_of(with_width(w))));
    ASSERT_GE(k.applied_opts.size(), 2u);
    EXPECT_EQ(k.applied_opts[0], (Opt{OptOps::UPCAST, 1, Arg(w)}));
    EXPECT_EQ(k.applied_opts[1], (Opt{OptOps::UPCAST, 0, Arg(int64_t(16))}));
    Context ctx({{"CPU_VECTOR_WIDTH", w}});
    int64_t p = 2 * w;
    for (auto [r, c] : {std::pair<int64_t, int64_t>{128, 160}, {96, 200}, {48, 40}, {7, 33}}) {  // (r, c) stored, read as (c, r)
      auto v = randv(size_t(r * c), 11);
      auto got = Tensor::from_vector(v, {r, c}).transpose(0, 1).contiguous().to_vector<float>();
      for (int64_t i = 0; i < c; i++)
        for (int64_t j = 0; j < r; j++) ASSERT_EQ(got[size_t(i * r + j)], v[size_t(j * c + i)]) << w << " " << r << "x" << c << " at " << i << "," << j;
    }
    for (bool bt : {false, true}) {  // B (K x N), stored as is or as N x K, to panels (N/P, K, P)
      int64_t kk = 128, n = 4 * p;
      auto v = randv(size_t(kk * n), 12);
      Tensor b = bt ? Tensor::from_vector(v, {n, kk}).transpose(0, 1) : Tensor::from_vector(v, {kk, n});
      auto got = b.reshape({kk, n / p, p}).permute({1, 0, 2}).contiguous().to_vector<float>();
      for (int64_t q = 0; q < n / p; q++)
        for (int64_t l = 0; l < kk; l++)
          for (int64_t e = 0; e < p; e++) {
            int64_t col = q * p + e;
            ASSERT_EQ(got[size_t((q * kk + l) * p + e)], v[size_t(bt ? col * kk + l : l * n + col)]) << w << " B^T " << bt << " at " << q << "," << l << "," << e;
          }
    }
  }
}

// Copies that compute their value from inputs read across the output's lanes (the packed GEMM's float32 panels of
// float16 weights, or of Q4_K blocks): the transpose tile (lanes on the output's contiguous axis, rows along the
// inputs' stored order, where a block's scales are constant) and exact values against a hand loop at both widths
TEST(Simd, CastAndDequantCopiesGetTheTransposeTile) {
  const int64_t n = 64, kk = 512;  // W (n, kk) stored (over 16K elements: smaller copies get no tile), panels (n/p, kk, p) of W^T
  for (int64_t w : {8, 16}) {
    int64_t p = 2 * w;
    auto panels = [&](const Tensor& wt) { return wt.transpose(0, 1).reshape({kk, n / p, p}).permute({1, 0, 2}).contiguous(); };
    Scheduler k = hand_coded_optimizations(Scheduler(only_kernel(panels(Tensor::empty({n, kk}, dtypes::float16).cast(dtypes::float32))), caps_of(with_width(w))));
    ASSERT_GE(k.applied_opts.size(), 2u);
    EXPECT_EQ(k.applied_opts[0], (Opt{OptOps::UPCAST, 2, Arg(w)})) << "lanes on the panel's columns";
    EXPECT_EQ(k.applied_opts[1], (Opt{OptOps::UPCAST, 1, Arg(int64_t(16))})) << "16 rows along K, W's stored order";
    // each loaded row of 16 float16 is converted whole (pm_vector_lanes), then the floats are shuffled into lanes
    std::string hsrc = to_program(only_kernel(panels(Tensor::empty({n, kk}, dtypes::float16).cast(dtypes::float32))), with_width(w))->kernel.src;
    EXPECT_NE(hsrc.find("__builtin_convertvector(val"), std::string::npos) << hsrc;
    Context ctx({{"CPU_VECTOR_WIDTH", w}});
    auto check = [&](const Tensor& wt, const std::vector<float>& want, const char* what) {
      auto got = panels(wt).to_vector<float>();
      for (int64_t q = 0; q < n / p; q++)
        for (int64_t l = 0; l < kk; l++)
          for (int64_t e = 0; e < p; e++)
            ASSERT_EQ(got[size_t((q * kk + l) * p + e)], want[size_t((q * p + e) * kk + l)]) << what << " width " << w << " at " << q << "," << l << "," << e;
    };
    // float16 weights: every value a float16 converts exactly
    std::vector<float> hv(size_t(n * kk));
    for (size_t i = 0; i < hv.size(); i++) hv[i] = float(int64_t(i * 37 % 2001) - 1000) / 64.0f;
    check(Tensor::from_vector(hv, {n, kk}, dtypes::float16).cast(dtypes::float32), hv, "float16");
    // Q4_K blocks of 256 (ggml-common.h: d, dmin (float16), 12 bytes of 6-bit scales and mins, 128 bytes of nibbles),
    // decoded by ggml_data_to_tensor, against ggml's dequantize_row_q4_K written out; d and dmin powers of two
    int64_t nb = n * kk / 256;
    std::vector<uint8_t> bytes(size_t(nb * 144));
    for (size_t i = 0; i < bytes.size(); i++) bytes[i] = uint8_t(i * 101 % 251);
    std::vector<float> want(size_t(n * kk));
    for (int64_t b = 0; b < nb; b++) {
      uint8_t* x = &bytes[size_t(b * 144)];
      x[0] = 0x00, x[1] = 0x38, x[2] = 0x00, x[3] = 0x34;  // d 0.5, dmin 0.25
      const uint8_t *sc = x + 4, *q = x + 16;
      auto scale_min = [&](int j, uint8_t& d, uint8_t& m) {
        if (j < 4) d = sc[j] & 63, m = sc[j + 4] & 63;
        else d = uint8_t((sc[j + 4] & 0xF) | ((sc[j - 4] >> 6) << 4)), m = uint8_t((sc[j + 4] >> 4) | ((sc[j] >> 6) << 4));
      };
      float* y = &want[size_t(b * 256)];
      for (int j = 0; j < 256; j += 64, q += 32) {
        uint8_t s1, m1, s2, m2;
        scale_min(j / 32, s1, m1), scale_min(j / 32 + 1, s2, m2);
        float d1 = 0.5f * s1, n1 = 0.25f * m1, d2 = 0.5f * s2, n2 = 0.25f * m2;
        for (int l = 0; l < 32; l++) *y++ = d1 * float(q[l] & 0xF) - n1;
        for (int l = 0; l < 32; l++) *y++ = d2 * float(q[l] >> 4) - n2;
      }
    }
    Tensor deq = gguf::ggml_data_to_tensor(Tensor::from_vector(bytes, {nb * 144}, dtypes::uint8), n * kk, gguf::GGMLType::Q4_K).reshape({n, kk});
    // through the pipeline (split_ranges cuts K at the block's fields): Q4_K's two masked halves of its scales are
    // upcast first (4), then w lanes by as many rows along K as make 256 values a step, stored as whole vectors
    auto prog = to_program(only_kernel(panels(deq)), with_width(w));
    ASSERT_EQ(prog->applied_opts.size(), 4u);
    EXPECT_NE(prog->applied_opts[2].find("UPCAST, axis=4, arg=" + std::to_string(w) + ")"), std::string::npos) << prog->applied_opts[2];
    EXPECT_NE(prog->applied_opts[3].find("UPCAST, axis=3, arg=" + std::to_string(256 / (4 * w)) + ")"), std::string::npos) << prog->applied_opts[3];
    EXPECT_NE(prog->kernel.src.find("*((float" + std::to_string(w) + "*)((data0"), std::string::npos) << prog->kernel.src;
    check(deq, want, "Q4_K");
    // the prompt's graph of the same W (ggml_dequant_rows: its words and its sub-blocks' d * scale, dmin * min stored
    // along the rows by a kernel of their own): per row a 32-bit word of 8 nibbles is gathered into the lanes, the
    // products are whole vector loads
    Tensor raw = Tensor::from_vector(bytes, {nb * 144}, dtypes::uint8).realize();
    gguf::DotWeight dw = gguf::ggml_dot_weight(raw, n, kk, gguf::GGMLType::Q4_K);
    Tensor::realize({dw.words, dw.halves, dw.scales});
    Tensor rows = gguf::ggml_dequant_rows(dw, n, kk);
    check(rows, want, "Q4_K words");
    EXPECT_EQ(rows.to_vector<float>(), want);
    // (scheduled after: a schedule that is not run leaves the scales' kernel a buffer that later graphs read unfilled)
    std::string fw = "float" + std::to_string(w);
    std::string rsrc = to_program(last_kernel(panels(rows)), with_width(w))->kernel.src;
    EXPECT_NE(rsrc.find("unsigned_int" + std::to_string(w) + " cast0 = (unsigned_int" + std::to_string(w) + "){"), std::string::npos) << rsrc;
    EXPECT_NE(rsrc.find(fw + " val"), std::string::npos) << rsrc;
    EXPECT_EQ(rsrc.find("unsigned char"), std::string::npos) << rsrc;
    EXPECT_NE(rsrc.find("*((" + fw + "*)((data0"), std::string::npos) << rsrc;
  }
}

TEST(Simd, HeadsTimesHeadDimsAxisGetsTheTile) {
  // attention's softmax @ v stored as (B, T, H * D) (the transpose before the output projection): the softmax's index
  // reads the merged axis as head = axis // D. With D a multiple of the lanes, a vector of lanes stays in one head, so
  // the softmax is a broadcast operand of the register tile: lanes on the merged axis (a second vector where D holds
  // two, else a second and third where it holds three), rows on T. (Big enough for the full-width tile: 4M multiply-adds)
  constexpr int64_t B = 2, H = 8, T = 128, D = 48;
  auto out = [&](const Tensor& p, const Tensor& v) { return p.matmul(v).transpose(1, 2).reshape({B, T, H * D}); };
  UOp ast = only_kernel(out(Tensor::empty({B, H, T, T}), Tensor::empty({B, H, T, D})));
  for (int64_t w : {8, 16}) {
    Scheduler k = hand_coded_optimizations(Scheduler(ast, caps_of(with_width(w))));
    ASSERT_GE(k.applied_opts.size(), 2u) << w;
    EXPECT_EQ(k.applied_opts[0].op, OptOps::UPCAST) << w;
    EXPECT_EQ(k.applied_opts[0].arg, Arg(w)) << w;
    EXPECT_EQ(k.applied_opts[1].op, OptOps::UPCAST) << w;
    // 2 x 8 lanes stay in a head of 48; 2 x 16 would not, 3 x 16 do
    EXPECT_EQ(k.applied_opts[1], (Opt{OptOps::UPCAST, k.applied_opts[0].axis, Arg(int64_t(w == 8 ? 2 : 3))})) << w;
    for (auto& o : k.applied_opts) EXPECT_NE(o.op, OptOps::UNROLL) << w;
  }
  auto pv = randv(size_t(B * H * T * T), 16), vv = randv(size_t(B * H * T * D), 17);
  auto got = out(Tensor::from_vector(pv, {B, H, T, T}), Tensor::from_vector(vv, {B, H, T, D})).to_vector<float>();
  for (int64_t b = 0; b < B; b++)
    for (int64_t h = 0; h < H; h++)
      for (int64_t t = 0; t < T; t++)
        for (int64_t d = 0; d < D; d++) {
          double ref = 0;
          for (int64_t s = 0; s < T; s++) ref += double(pv[size_t(((b * H + h) * T + t) * T + s)]) * vv[size_t(((b * H + h) * T + s) * D + d)];
          ASSERT_NEAR(got[size_t((b * T + t) * H * D + h * D + d)], ref, 1e-4) << b << " " << h << " " << t << " " << d;
        }
}

// exp2 and reciprocals of float32 lanes stay vectors in SIMD kernels (pm_vector_lanes): the exp2 decomposition is then
// vector arithmetic with int32 lane masks from clang's vector compares (negated as x == 0). Values of exp and sigmoid
// against libm over normal, huge, tiny and non-finite inputs at both widths (the masks' edge cases: inf, -inf, NaN,
// overflow past 128 and underflow past -150 in exp2)
TEST(Simd, ExpAndSigmoidLanesStayVectors) {
  std::vector<float> v;
  for (int i = 0; i < 4096; i++) v.push_back(float(i % 512 - 256) * 0.37f);
  for (float s : {INFINITY, -INFINITY, NAN, 88.7f, 89.0f, -103.9f, -104.0f, -150.0f, 0.0f, -0.0f}) v[size_t(v.size() / 2 + int(v.size() % 7))] = s, v.push_back(s);
  while (v.size() % 64) v.push_back(1.0f);
  int64_t n = int64_t(v.size());
  for (int64_t w : {8, 16}) {
    Context ctx({{"CPU_VECTOR_WIDTH", w}});
    SCOPED_TRACE("CPU_VECTOR_WIDTH=" + std::to_string(w));
    Tensor x = Tensor::from_vector(v, {n});
    std::string src = to_program(only_kernel(x.exp()), with_width(w))->kernel.src;
    EXPECT_EQ(src.find("float alu"), std::string::npos) << "no scalar lane of the exp\n" << src;
    EXPECT_NE(src.find("==0)"), std::string::npos) << "a negated lane mask\n" << src;
    auto e = x.exp().to_vector<float>(), s = x.sigmoid().to_vector<float>();
    for (int64_t i = 0; i < n; i++) {
      float want = std::exp(v[size_t(i)]), sw = 1.0f / (1.0f + std::exp(-v[size_t(i)]));
      if (std::isnan(want)) ASSERT_TRUE(std::isnan(e[size_t(i)])) << v[size_t(i)];
      else if (std::isinf(want) || std::isinf(v[size_t(i)])) ASSERT_EQ(e[size_t(i)], want) << v[size_t(i)];
      else ASSERT_NEAR(e[size_t(i)], want, (2e-6 + 1e-7 * std::abs(v[size_t(i)])) * std::abs(want) + 1e-37) << "exp " << v[size_t(i)];  // (x log2(e) rounds)
      if (std::isnan(sw)) ASSERT_TRUE(std::isnan(s[size_t(i)])) << v[size_t(i)];
      else ASSERT_NEAR(s[size_t(i)], sw, 2e-6) << "sigmoid " << v[size_t(i)];
    }
  }
}

// exp2 of float32 in SIMD kernels is 0 below 2^-125 (pm_exp2_normal): its decomposition's 2^k x polynomial product is
// never denormal (an x86 microcode assist per lane). exp(x) against libm: 0 where x log2(e) < -125, the usual accuracy
// above; with SIMD=0 (tinygrad's kernels) the denormal results stay
TEST(Simd, Exp2BelowTwoToTheMinus125IsZero) {
  std::vector<float> v;
  for (int i = 0; i < 1024; i++) v.push_back(-95.0f + float(i) * (20.0f / 1024));  // -95 .. -75
  int64_t n = int64_t(v.size());
  Context ctx({{"CPU_VECTOR_WIDTH", 16}});
  Tensor x = Tensor::from_vector(v, {n});
  EXPECT_NE(to_program(only_kernel(x.exp()), with_width(16))->kernel.src.find("<-125.0f)"), std::string::npos);
  auto e = x.exp().to_vector<float>();
  for (int64_t i = 0; i < n; i++) {
    float xi = v[size_t(i)];
    if (double(xi) * (1 / std::log(2.0)) < -125.0001) ASSERT_EQ(e[size_t(i)], 0.0f) << xi;
    else if (double(xi) * (1 / std::log(2.0)) > -124.9999) ASSERT_NEAR(e[size_t(i)], std::exp(xi), 3e-5 * std::exp(xi)) << xi;  // (x log2(e) rounds)
  }
  Context plain({{"SIMD", 0}});
  auto d = Tensor::from_vector(v, {n}).exp().to_vector<float>();
  EXPECT_GT(d[0], 0.0f) << "exp(-95) is a denormal without SIMD";
}

// A prompt's softmax sum under the causal mask, sum_s exp(q.k_s / 8 + mask_ts - max_t), over scores from the packed
// q @ k^T (stored as panels of 32 columns): a reduce unrolled along s by a panel's 32, its lanes each masked by their
// own position. Each loaded vector's lanes are one vector chain (the mask's compares an int32 lane mask, the exp2
// decomposition on vectors) summed as halves, where each lane's exp was scalar. Values against a float64 loop at both
// widths, the source at 16 lanes (no scalar float lane left)
TEST(Simd, CausalSumOfExpLanesStayVectors) {
  constexpr int64_t H = 12, T = 128, D = 64;
  auto qv = randv(size_t(H * T * D), 23), kv = randv(size_t(H * T * D), 24), mv = randv(size_t(H * T), 25);
  auto sum_exp = [&] {
    Tensor mask = Tensor(-INFINITY, dtypes::float32).reshape({1, 1, 1}).expand({1, T, T}).triu(1);
    Tensor q = Tensor::from_vector(qv, {H, T, D}), k = Tensor::from_vector(kv, {H, T, D}), mx = Tensor::from_vector(mv, {H, T, 1});
    return (q.matmul(k.transpose(1, 2)) * 0.125f + mask - mx).exp().sum(-1);
  };
  for (int64_t w : {8, 16}) {
    Context ctx({{"CPU_VECTOR_WIDTH", w}});
    SCOPED_TRACE("CPU_VECTOR_WIDTH=" + std::to_string(w));
    if (w == 16) {
      Tensor e = sum_exp();
      UOp linear = schedule_linear({e});  // kept alive: src() views its node
      std::string src;
      for (auto& c : linear.src())
        if (c.src(0).op() == Ops::SINK)
          if (std::string s = to_program(c.src(0), with_width(w))->kernel.src; s.find("1.4426950216293335f") != std::string::npos) src = s;
      EXPECT_NE(src.find("_Bool16"), std::string::npos) << "lane masks\n" << src;
      EXPECT_EQ(src.find("float alu"), std::string::npos) << "no scalar lane of the exp\n" << src;
    }
    auto got = sum_exp().to_vector<float>();
    for (int64_t h = 0; h < H; h++)
      for (int64_t t = 0; t < T; t++) {
        double ref = 0;
        for (int64_t u = 0; u <= t; u++) {
          double dot = 0;
          for (int64_t d = 0; d < D; d++) dot += double(qv[size_t((h * T + t) * D + d)]) * kv[size_t((h * T + u) * D + d)];
          ref += std::exp(dot * 0.125 - double(mv[size_t(h * T + t)]));
        }
        ASSERT_NEAR(got[size_t(h * T + t)], ref, 1e-5 * ref) << h << " " << t;
      }
  }
}

// A short prompt's linears: x (under 64 rows) @ W^T with W stored (N, K) in float16, both read along K (no packed
// panels there). matvec_lanes' GEMM: lanes along K, W's loops outside x's (a SWAP: its footprint is the bigger), a block
// of x's rows by W's rows upcast; a per-row factor of x (a fused RMSNorm's scale, contiguous along the rows) is no
// vector operand for simd_upcast. Opts at both widths; values against a float64 loop with a residual epilogue, the
// output stored as (heads, rows, head dim) (three output axes, two of them W's), M of 16, 5 and 40.
TEST(Matvec, ShortPromptRowsByWeightRows) {
  for (int64_t w : {8, 16}) {
    Tensor x = Tensor::empty({16, 768}), sc = Tensor::empty({16, 1}), wt = Tensor::empty({2048, 768}, dtypes::float16);
    Scheduler k = hand_coded_optimizations(Scheduler(only_kernel((x * sc).matmul(wt.cast(dtypes::float32).transpose(0, 1))), caps_of(with_width(w))));
    ASSERT_GE(k.applied_opts.size(), 3u);
    EXPECT_EQ(k.applied_opts[0], (Opt{OptOps::UNROLL, 0, Arg(w)})) << "lanes along K";
    EXPECT_EQ(k.applied_opts[1].op, OptOps::SWAP) << "W's rows outermost";
    int64_t tile = 1;
    for (auto& o : k.applied_opts) if (o.op == OptOps::UPCAST) tile *= o.arg.i();
    EXPECT_EQ(tile, w == 16 ? 16 : 8) << "x's rows by W's, as many as the accumulator registers hold";
  }
  uint32_t seed = 41;
  for (int64_t w : {8, 16})
    for (auto [m, kk, n] : {std::tuple<int64_t, int64_t, int64_t>{16, 768, 256}, {5, 64, 48}, {40, 256, 96}}) {
      Context ctx({{"CPU_VECTOR_WIDTH", w}});
      auto xv = randv(size_t(m * kk), seed++), sv = randv(size_t(m), seed++), wv = randv(size_t(n * kk), seed++), rv = randv(size_t(m * n), seed++);
      Tensor wt = Tensor::from_vector(wv, {n, kk}, dtypes::float16);
      std::vector<float> wh = wt.cast(dtypes::float32).to_vector<float>();
      Tensor y = (Tensor::from_vector(xv, {m, kk}) * Tensor::from_vector(sv, {m, 1})).matmul(wt.cast(dtypes::float32).transpose(0, 1)) + Tensor::from_vector(rv, {m, n});
      std::vector<float> got = y.reshape({m, 4, n / 4}).permute({1, 0, 2}).contiguous().to_vector<float>();
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
          double ref = rv[size_t(i * n + j)];
          for (int64_t l = 0; l < kk; l++) ref += double(xv[size_t(i * kk + l)]) * sv[size_t(i)] * wh[size_t(j * kk + l)];
          ASSERT_NEAR(got[size_t((j / (n / 4)) * m * (n / 4) + i * (n / 4) + j % (n / 4))], ref, 1e-5 * std::sqrt(double(kk))) << w << " " << m << "x" << kk << "x" << n << " at " << i << "," << j;
        }
    }
}

// A reduce along the contiguous axis with several output axes and one input (a batch norm's per-(sample, channel)
// sums of squares over h, w): lanes along w, the rows on the axis the input moves along with the smallest stride
// (channels, not samples; before, tinygrad's upcasts gathered 4 channels x 4 samples per vector). Values against a
// float64 loop at both widths.
TEST(Matvec, SumsOverPixelsGetLanes) {
  for (int64_t w : {8, 16}) {
    Tensor x = Tensor::empty({4, 32, 12, 32}), m = Tensor::empty({1, 32, 1, 1});
    Scheduler k = hand_coded_optimizations(Scheduler(only_kernel(((x - m) * (x - m)).sum({2, 3})), caps_of(with_width(w))));
    ASSERT_GE(k.applied_opts.size(), 2u);
    EXPECT_EQ(k.applied_opts[0].op, OptOps::UNROLL);
    EXPECT_EQ(k.applied_opts[0].arg, Arg(w == 16 ? int64_t(16) : int64_t(8)));
    EXPECT_EQ(k.applied_opts[1], (Opt{OptOps::UPCAST, 1, Arg(int64_t(8))})) << "8 channels";
  }
  uint32_t seed = 51;
  for (int64_t w : {8, 16}) {
    Context ctx({{"CPU_VECTOR_WIDTH", w}});
    auto xv = randv(4 * 32 * 384, seed++), mv = randv(32, seed++);
    Tensor x = Tensor::from_vector(xv, {4, 32, 12, 32}), m = Tensor::from_vector(mv, {1, 32, 1, 1});
    std::vector<float> got = ((x - m) * (x - m)).sum({2, 3}).to_vector<float>();
    for (int64_t b = 0; b < 4; b++)
      for (int64_t c = 0; c < 32; c++) {
        double ref = 0;
        for (int64_t p = 0; p < 384; p++) ref += std::pow(double(xv[size_t((b * 32 + c) * 384 + p)]) - mv[size_t(c)], 2);
        ASSERT_NEAR(got[size_t(b * 32 + c)], ref, 1e-5 * ref + 1e-5) << w << " at " << b << "," << c;
      }
  }
}

// A GEMM with a handful of columns (an MLP's 10-way output layer): matvec_lanes per row of A, every column upcast
// (lanes along K, one accumulator vector per column), A's rows the outer loop. Opts at both widths, values against a
// float64 loop for N of 10, 7 and 16 and K with and without a multiple of 16
TEST(Matvec, FewColumnsAreAllUpcast) {
  for (int64_t w : {8, 16}) {
    // W stored (10, 1024) as a Linear's weight: read along K
    Scheduler k = hand_coded_optimizations(Scheduler(only_kernel(Tensor::empty({1000, 1024}).matmul(Tensor::empty({10, 1024}).transpose(0, 1))), caps_of(with_width(w))));
    ASSERT_GE(k.applied_opts.size(), 2u);
    EXPECT_EQ(k.applied_opts[0].op, OptOps::UNROLL);
    EXPECT_EQ(k.applied_opts[0].arg, Arg(w));
    EXPECT_EQ(k.applied_opts[1], (Opt{OptOps::UPCAST, 1, Arg(int64_t(10))}));
  }
  uint32_t seed = 31;
  for (int64_t w : {8, 16})
    for (auto [m, kk, n] : {std::tuple<int64_t, int64_t, int64_t>{200, 1024, 10}, {64, 96, 7}, {40, 40, 16}}) {
      Context ctx({{"CPU_VECTOR_WIDTH", w}});
      auto av = randv(size_t(m * kk), seed++), bv = randv(size_t(kk * n), seed++);
      auto got = Tensor::from_vector(av, {m, kk}).matmul(Tensor::from_vector(bv, {n, kk}).transpose(0, 1)).to_vector<float>();
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
          double ref = 0;
          for (int64_t l = 0; l < kk; l++) ref += double(av[size_t(i * kk + l)]) * bv[size_t(j * kk + l)];
          ASSERT_NEAR(got[size_t(i * n + j)], ref, 1e-5 * std::sqrt(double(kk))) << w << " " << m << "x" << kk << "x" << n << " at " << i << "," << j;
        }
    }
}

// An elementwise kernel with an exp (the softmax's exps, tanh-gelu with a bias after a packed GEMM) gets the host's
// lanes on an axis every buffer reads and writes contiguously or not at all; values against libm and a float64 matmul
TEST(Simd, TranscendentalElementwiseGetsTheHostsLanes) {
  constexpr int64_t M = 64, K = 256, N = 1024;  // B of 1 MiB: packed (tensor/gemm.cpp)
  auto xs = randv(M * K, 5, -1.f, 1.f), ws = randv(K * N, 6, -0.2f, 0.2f), ms = randv(M, 7, -1.f, 1.f), bs = randv(N, 8, -1.f, 1.f);
  for (int64_t w : {8, 16}) {
    Context ctx({{"CPU_VECTOR_WIDTH", w}});
    SCOPED_TRACE("CPU_VECTOR_WIDTH=" + std::to_string(w));
    Tensor x = Tensor::from_vector(xs, {M, K}), wt = Tensor::from_vector(ws, {K, N}), m = Tensor::from_vector(ms, {M, 1});
    Tensor b = Tensor::from_vector(bs, {N});
    auto e = [&] { return (x - m).exp(); };
    auto g = [&] { return (x.reshape({2, M / 2, K}).matmul(wt) + b).gelu(); };  // a block's Linear: (B, T, D), a bias
    Scheduler k = hand_coded_optimizations(Scheduler(only_kernel(e()), caps_of(with_width(w))));
    ASSERT_FALSE(k.applied_opts.empty());
    EXPECT_EQ(k.applied_opts[0], (Opt{OptOps::UPCAST, 1, Arg(w)}));
    UOp linear = schedule_linear({g()});
    Scheduler kg = hand_coded_optimizations(Scheduler(linear.src().back().src(0), caps_of(with_width(w))));  // after the pack, the GEMM
    ASSERT_FALSE(kg.applied_opts.empty());
    EXPECT_EQ(kg.applied_opts[0].op, OptOps::UPCAST);
    EXPECT_EQ(kg.applied_opts[0].arg, Arg(w));
    auto ev = e().to_vector<float>(), gv = g().to_vector<float>();
    for (int64_t i = 0; i < M * K; i++) {
      float want = std::exp(xs[size_t(i)] - ms[size_t(i / K)]);
      ASSERT_NEAR(ev[size_t(i)], want, 4e-6f * want) << i;
    }
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double v = bs[size_t(j)];
        for (int64_t q = 0; q < K; q++) v += double(xs[size_t(i * K + q)]) * ws[size_t(q * N + j)];
        double want = 0.5 * v * (1 + std::tanh(0.7978845608 * (v + 0.044715 * v * v * v)));
        ASSERT_NEAR(gv[size_t(i * N + j)], want, 1e-4) << i << "," << j;
      }
  }
}

// ggml_dot's Q4_K lanes in miniature: int32 lanes, each the 4 byte products of a weight word (its bytes masked) and an
// activation word (signed bytes), times a uint8 scale per 8 words, converted and summed in float; 8 words and the next 8
// are a register of 16 lanes (matvec_lanes' pair). On AVX512-VNNI a lane's products are one vpdpbusd, and where the
// mask keeps the lane's sum within 16 bits (bytes <= 63: Q4_K's nibbles; -32256 at most) the scale is one pmaddwd of
// its low half (pm_int_dot4; added to a sum, vpdpwssd: GgmlDot's kernels); 7-bit bytes (sums to -65024) keep the
// 32-bit multiply. Rendered for a VNNI host on any host (the scheduled graph is built again for the values, which this host
// runs), values against an exact loop.
TEST(Matvec, ByteDotScalesIn16BitsOnlyWhereExact) {
  constexpr int64_t n = 16, kw = 64;  // rows, words per row
  std::vector<uint32_t> wv(size_t(n * kw));
  std::vector<int8_t> xv(size_t(kw * 4));
  std::vector<uint8_t> sv(size_t(n * kw / 8));
  uint32_t s = 12345;
  auto next = [&] { return s = s * 1664525u + 1013904223u; };
  for (auto& v : wv) v = next();
  for (auto& v : xv) v = int8_t(next() >> 24);
  for (auto& v : sv) v = uint8_t(next() >> 24);
  for (int64_t r = 0; r < n; r++) wv[size_t(r * kw)] = 0xFFFFFFFFu;  // each row's first lane at the bound: 4 * m * -128
  for (int j = 0; j < 4; j++) xv[size_t(j)] = -128;
  auto byte = [](const Tensor& w, int j) { return (w >> Tensor(8 * j, dtypes::uint32)) & Tensor(0xFF, dtypes::uint32); };
  auto y_of = [&](uint32_t mask) {
    Tensor w = (Tensor::from_vector(wv, {n, kw}) & Tensor(mask, dtypes::uint32)).reshape({n, kw / 16, 2, 8});
    Tensor x = Tensor::from_vector(xv, {kw * 4}).bitcast(dtypes::uint32).contiguous().reshape({1, kw / 16, 2, 8});
    Tensor sc = Tensor::from_vector(sv, {n, kw / 16, 2, 1}).expand({n, kw / 16, 2, 8}).cast(dtypes::int32);
    Tensor d = byte(w, 0).cast(dtypes::int32) * byte(x, 0).cast(dtypes::int8).cast(dtypes::int32);
    for (int j = 1; j < 4; j++) d = d + byte(w, j).cast(dtypes::int32) * byte(x, j).cast(dtypes::int8).cast(dtypes::int32);
    return (d * sc).cast(dtypes::float32).sum({1, 2, 3});
  };
  for (uint32_t mask : {0x3F3F3F3Fu, 0x7F7F7F7Fu}) {
    ClangRenderer vnni = with_width(16);
    vnni.vpdpbusd_lanes = vnni.pmaddwd_lanes = 16;
    UOp ast, sched = schedule_linear({y_of(mask)});  // (kept alive: src() views its nodes)
    for (auto& c : sched.src())
      if (c.src(0).op() == Ops::SINK)
        for (auto& u : c.src(0).toposort()) if (u.op() == Ops::REDUCE) ast = c.src(0);
    ASSERT_TRUE(ast.get());
    std::string src = to_program(hand_coded_optimizations(Scheduler(ast, caps_of(vnni))).get_optimized_ast("test"), vnni)->kernel.src;
    EXPECT_NE(src.find("__builtin_ia32_vpdpbusd512("), std::string::npos) << src;
    EXPECT_EQ(src.find("__builtin_ia32_pmaddwd512(__builtin_ia32_vpdpbusd512(") != std::string::npos, mask == 0x3F3F3F3Fu) << std::hex << mask << "\n" << src;
    std::vector<float> got = y_of(mask).to_vector<float>();
    for (int64_t r = 0; r < n; r++) {
      double ref = 0, mag = 0;
      for (int64_t k = 0; k < kw; k++)
        for (int j = 0; j < 4; j++) {
          double t = double((wv[size_t(r * kw + k)] & mask) >> (8 * j) & 0xFF) * xv[size_t(k * 4 + j)] * sv[size_t(r * kw / 8 + k / 8)];
          ref += t, mag += std::abs(t);
        }
      EXPECT_NEAR(got[size_t(r)], ref, 1e-6 * mag) << std::hex << mask << std::dec << " row " << r;
    }
  }
}
