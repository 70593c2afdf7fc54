// A heavy reduce (a convolution, a matmul) feeding a reducing consumer (a max-pool) through elementwise ops, as
// beautiful_mnist's eval forward: SIMD CPU kernels store the heavy reduce first and pool it in a kernel of its own
// (rangeify.cpp, separate_heavy_reduce; a convolution's output is stored before its bias and relu anyway, nn_ops.cpp);
// SIMD=0 keeps tinygrad's fusion. Values against double-precision loops.
#include <gtest/gtest.h>

#include <cmath>

#include "support/random.h"
#include "tensor/tensor_impl.h"
#include "tg/context.h"
#include "tg/nn.h"

using namespace tg;

namespace {

constexpr int64_t N = 3, CI = 4, CO = 8, K = 5, HW = 14, O = HW - K + 1, P = O / 2;

using tg::test::randv;

struct Kernels {
  int reducing = 0, nested = 0;  // kernels with a REDUCE; kernels with a REDUCE inside another's source
};
// (scheduling points the tensor at buffers the schedule would fill: the caller realizes a fresh copy of the graph)
Kernels kernels_of(const Tensor& t) {
  Kernels k;
  UOp sched = schedule_linear({t});  // kept alive: src() views its node
  for (auto& c : sched.src()) {
    if (c.src(0).op() != Ops::SINK) continue;
    bool any = false, nested = false;
    for (auto& r : c.src(0).toposort())
      if (r.op() == Ops::REDUCE) {
        any = true;
        for (auto& s : r.src(0).toposort()) nested |= s.op() == Ops::REDUCE;
      }
    k.reducing += any, k.nested += nested;
  }
  return k;
}

struct Case {
  std::vector<float> x = randv(size_t(N * CI * HW * HW), 1, -1, 1), w = randv(size_t(CO * CI * K * K), 2, -0.3f, 0.3f);
  std::vector<float> mean = randv(CO, 3, -0.5f, 0.5f), var = randv(CO, 4, 0.5f, 2), gamma = randv(CO, 5, 0.5f, 1.5f), beta = randv(CO, 6, -0.5f, 0.5f);
  // conv, relu, BatchNorm on running statistics, 2x2 max-pool (beautiful_mnist's layer, no gradient)
  Tensor forward() const {
    nn::BatchNorm bn(CO);
    *bn.running_mean = Tensor::from_vector(mean), *bn.running_var = Tensor::from_vector(var);
    *bn.weight = Tensor::from_vector(gamma), *bn.bias = Tensor::from_vector(beta);
    return bn(Tensor::from_vector(x, {N, CI, HW, HW}).conv2d(Tensor::from_vector(w, {CO, CI, K, K})).relu()).max_pool2d();
  }
  double want(int64_t n, int64_t c, int64_t py, int64_t px) const {
    double best = -1e30;
    for (int64_t dy = 0; dy < 2; dy++)
      for (int64_t dx = 0; dx < 2; dx++) {
        double s = 0;
        for (int64_t i = 0; i < CI; i++)
          for (int64_t ky = 0; ky < K; ky++)
            for (int64_t kx = 0; kx < K; kx++)
              s += double(x[size_t(((n * CI + i) * HW + 2 * py + dy + ky) * HW + 2 * px + dx + kx)]) * w[size_t(((c * CI + i) * K + ky) * K + kx)];
        s = std::max(s, 0.0);
        best = std::max(best, (s - mean[size_t(c)]) / std::sqrt(double(var[size_t(c)]) + 1e-5) * gamma[size_t(c)] + beta[size_t(c)]);
      }
    return best;
  }
  void check_values(const Tensor& y) const {
    ASSERT_EQ(y.shape(), (Shape{N, CO, P, P}));
    std::vector<float> got = y.to_vector<float>();
    for (int64_t n = 0; n < N; n++)
      for (int64_t c = 0; c < CO; c++)
        for (int64_t py = 0; py < P; py++)
          for (int64_t px = 0; px < P; px++)
            ASSERT_NEAR(got[size_t(((n * CO + c) * P + py) * P + px)], want(n, c, py, px), 1e-4) << n << " " << c << " " << py << " " << px;
  }
};

}  // namespace

TEST(HeavyReduce, ConvIsStoredBeforeItsPoolOnSimdCpus) {
  Case c;
  Context simd({{"SIMD", 1}});
  Kernels k = kernels_of(c.forward());
  EXPECT_EQ(k.nested, 0) << "the convolution is not computed inside the pool's reduce";
  EXPECT_EQ(k.reducing, 2) << "one kernel for the convolution, one for the pool";
  c.check_values(c.forward());
}

TEST(HeavyReduce, TinygradKernelsGiveTheSameValues) {
  Case c;
  Context tinygrad_kernels({{"SIMD", 0}});
  Kernels k = kernels_of(c.forward());
  EXPECT_EQ(k.nested, 0) << "tinygrad's pool of a convolution is two kernels too";
  EXPECT_EQ(k.reducing, 2);
  c.check_values(c.forward());
}

TEST(HeavyReduce, LightReducesStayFused) {
  // a 2-term sum under a max (under the 64 terms of a heavy producer): one kernel, as tinygrad
  std::vector<float> hx = randv(64 * 8, 7, -1, 1);
  auto y = [&] { return Tensor::from_vector(hx, {64, 4, 2}).sum(2).max(1); };
  Context simd({{"SIMD", 1}});
  EXPECT_EQ(kernels_of(y()).reducing, 1);
  std::vector<float> got = y().to_vector<float>();
  for (int64_t i = 0; i < 64; i++) {
    double best = -1e30;
    for (int64_t j = 0; j < 4; j++) best = std::max(best, double(hx[size_t(i * 8 + j * 2)]) + hx[size_t(i * 8 + j * 2 + 1)]);
    EXPECT_NEAR(got[size_t(i)], best, 1e-5);
  }
}

TEST(HeavyReduce, MatmulIsStoredBeforeItsPool) {
  // (16 x 96) @ (96 x 32), relu, max over pairs of columns: 96 terms per product under a 2-term max
  std::vector<float> ha = randv(16 * 96, 8, -1, 1), hb = randv(96 * 32, 9, -1, 1);
  auto y = [&] { return Tensor::from_vector(ha, {16, 96}).matmul(Tensor::from_vector(hb, {96, 32})).relu().reshape({16, 16, 2}).max(2); };
  for (int64_t simd : {0, 1}) {
    Context c({{"SIMD", simd}});
    Kernels k = kernels_of(y());
    EXPECT_EQ(k.nested, simd ? 0 : 1) << "SIMD=" << simd << ": the matmul " << (simd ? "stored first" : "fused into the max, as tinygrad");
    EXPECT_EQ(k.reducing, simd ? 2 : 1) << "SIMD=" << simd;
    std::vector<float> got = y().to_vector<float>();
    for (int64_t i = 0; i < 16; i++)
      for (int64_t j = 0; j < 16; j++) {
        double best = -1e30;
        for (int64_t d = 0; d < 2; d++) {
          double s = 0;
          for (int64_t t = 0; t < 96; t++) s += double(ha[size_t(i * 96 + t)]) * hb[size_t(t * 32 + 2 * j + d)];
          best = std::max(best, std::max(s, 0.0));
        }
        ASSERT_NEAR(got[size_t(i * 16 + j)], best, 1e-4) << "SIMD=" << simd << " " << i << " " << j;
      }
  }
}

TEST(HeavyReduce, ConvBiasAndReluRunAfterTheConvKernel) {
  // SIMD=1: the convolution's kernel reads the input and the weights only; the bias and relu follow in another kernel
  Case c;
  std::vector<float> hb = randv(CO, 10, -0.5f, 0.5f);
  auto y = [&] { return Tensor::from_vector(c.x, {N, CI, HW, HW}).conv2d(Tensor::from_vector(c.w, {CO, CI, K, K}), Tensor::from_vector(hb)).relu(); };
  Context simd({{"SIMD", 1}});
  int conv_kernels = 0;
  UOp sched = schedule_linear({y()});  // kept alive: src() views its node
  for (auto& call : sched.src()) {
    if (call.src(0).op() != Ops::SINK) continue;
    int bufs = 0;
    bool reduces = false;
    for (auto& u : call.src(0).toposort()) bufs += u.op() == Ops::PARAM, reduces |= u.op() == Ops::REDUCE;
    if (!reduces) continue;
    conv_kernels++;
    EXPECT_EQ(bufs, 3) << "output, input, weights: no bias in the convolution's kernel";
  }
  EXPECT_EQ(conv_kernels, 1);
  std::vector<float> got = y().to_vector<float>();
  for (int64_t n = 0; n < N; n++)
    for (int64_t o = 0; o < CO; o++)
      for (int64_t oy = 0; oy < O; oy++)
        for (int64_t ox = 0; ox < O; ox++) {
          double s = hb[size_t(o)];
          for (int64_t i = 0; i < CI; i++)
            for (int64_t ky = 0; ky < K; ky++)
              for (int64_t kx = 0; kx < K; kx++) s += double(c.x[size_t(((n * CI + i) * HW + oy + ky) * HW + ox + kx)]) * c.w[size_t(((o * CI + i) * K + ky) * K + kx)];
          ASSERT_NEAR(got[size_t(((n * CO + o) * O + oy) * O + ox)], std::max(s, 0.0), 1e-4);
        }
}

namespace {
// kernels that compute an exp2 and also hold a REDUCE (a sum of exp, or a matmul with an exp inside or after it)
int reducing_kernels_with_exp(const Tensor& t) {
  int n = 0;
  UOp sched = schedule_linear({t});
  for (auto& call : sched.src()) {
    if (call.src(0).op() != Ops::SINK) continue;
    bool reduces = false, exps = false;
    for (auto& u : call.src(0).toposort()) reduces |= u.op() == Ops::REDUCE, exps |= u.op() == Ops::EXP2;
    n += reduces && exps;
  }
  return n;
}
}  // namespace

TEST(HeavyReduce, SoftmaxIsStoredBeforeTheMatmulThatBroadcastsIt) {
  // softmax(s) @ v, (2, 2, 16, 64) @ (2, 2, 64, 16): 64 terms per output, the softmax broadcast along v's 16 columns.
  // SIMD=1 stores the exps in a kernel of their own, which the softmax's sum and the matmul read (no kernel with both
  // a reduce and an exp); tinygrad's kernels compute the exp in the sum's kernel and again in the matmul's
  constexpr int64_t B = 2, H = 2, T = 16, S = 64, D = 16;
  std::vector<float> hs = randv(size_t(B * H * T * S), 11, -2, 2), hv = randv(size_t(B * H * S * D), 12, -1, 1);
  auto y = [&] { return Tensor::from_vector(hs, {B, H, T, S}).softmax(-1).matmul(Tensor::from_vector(hv, {B, H, S, D})); };
  for (int64_t simd : {0, 1}) {
    Context c({{"SIMD", simd}});
    EXPECT_EQ(reducing_kernels_with_exp(y()), simd ? 0 : 2) << "SIMD=" << simd;
    std::vector<float> got = y().to_vector<float>();
    for (int64_t r = 0; r < B * H * T; r++) {
      double m = -1e30, sum = 0;
      for (int64_t j = 0; j < S; j++) m = std::max(m, double(hs[size_t(r * S + j)]));
      for (int64_t j = 0; j < S; j++) sum += std::exp(double(hs[size_t(r * S + j)]) - m);
      for (int64_t d = 0; d < D; d++) {
        double acc = 0;
        for (int64_t j = 0; j < S; j++) acc += std::exp(double(hs[size_t(r * S + j)]) - m) / sum * hv[size_t((r / T * S + j) * D + d)];
        ASSERT_NEAR(got[size_t(r * D + d)], acc, 1e-5) << "SIMD=" << simd << " " << r << " " << d;
      }
    }
  }
}

TEST(HeavyReduce, MatmulIsStoredBeforeATranscendentalEpilogue) {
  // gelu((64 x 96) @ (96 x 32) + bias): SIMD=1 runs the bias and the tanh-gelu in a kernel after the matmul's (no kernel
  // with both a reduce and an exp); tinygrad's kernels fuse them
  std::vector<float> ha = randv(64 * 96, 13, -1, 1), hb = randv(96 * 32, 14, -0.3f, 0.3f), hc = randv(32, 15, -0.5f, 0.5f);
  auto y = [&] { return (Tensor::from_vector(ha, {64, 96}).matmul(Tensor::from_vector(hb, {96, 32})) + Tensor::from_vector(hc)).gelu(); };
  for (int64_t simd : {0, 1}) {
    Context c({{"SIMD", simd}});
    EXPECT_EQ(reducing_kernels_with_exp(y()), simd ? 0 : 1) << "SIMD=" << simd;
    std::vector<float> got = y().to_vector<float>();
    for (int64_t i = 0; i < 64; i++)
      for (int64_t j = 0; j < 32; j++) {
        double x = hc[size_t(j)];
        for (int64_t l = 0; l < 96; l++) x += double(ha[size_t(i * 96 + l)]) * hb[size_t(l * 32 + j)];
        double want = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
        ASSERT_NEAR(got[size_t(i * 32 + j)], want, 1e-5) << "SIMD=" << simd << " " << i << " " << j;
      }
  }
}
