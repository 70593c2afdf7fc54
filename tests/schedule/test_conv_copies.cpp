// SIMD=1 convolutions store their input and output inside their FUNCTION (nn_ops.cpp); inlined, a copy of a stored
// value and a copy stored once more are dropped (rangeify.cpp, drop_double_copies): the forward of a realized input is
// the weights' channel-last copy and the convolution, the input gradient (stride 1) the flipped weights and the
// convolution, which reads the unpadded gradient (pm_clip_reduce_gates clips its windows). Copies that do work stay.
// And SIMD CPU kernels split a weight gradient at a quarter of REDUCEOP_SPLIT_THRESHOLD, into parts of a quarter of
// 2**REDUCEOP_SPLIT_SIZE. Settings pinned; values against double-precision loops.
#include <gtest/gtest.h>


#include "support/random.h"
#include "tensor/tensor_impl.h"
#include "tg/context.h"

using namespace tg;

namespace {

constexpr int64_t N = 2, CI = 3, CO = 8, K = 3, HW = 9, O = HW - K + 1;

using tg::test::randv;

struct Kernels {
  int all = 0, reducing = 0;
};
// (scheduling points the tensors at buffers the schedule would fill: each call builds a fresh graph)
Kernels kernels_of(const std::vector<Tensor>& ts) {
  Kernels k;
  UOp sched = schedule_linear(ts);  // kept alive: src() views its node
  for (auto& c : sched.src()) {
    if (c.src(0).op() != Ops::SINK) continue;
    k.all++;
    bool r = false;
    for (auto& u : c.src(0).toposort()) r |= u.op() == Ops::REDUCE;
    k.reducing += r;
  }
  return k;
}

struct ConvCopies : ::testing::Test {
  Context pinned{{{"SIMD", 1}, {"NOOPT", 0}, {"SPLIT_REDUCEOP", 1}}};
  std::vector<float> hx = randv(size_t(N * CI * HW * HW), 1), hw = randv(size_t(CO * CI * K * K), 2), hg = randv(size_t(N * CO * O * O), 3);
  Tensor x = Tensor::from_vector(hx, {N, CI, HW, HW}).realize(), w = Tensor::from_vector(hw, {CO, CI, K, K}).realize();
  Tensor g = Tensor::from_vector(hg, {N, CO, O, O}).realize();
  double xv(int64_t n, int64_t c, int64_t y, int64_t xx) const { return hx[size_t(((n * CI + c) * HW + y) * HW + xx)]; }
  double wv(int64_t o, int64_t c, int64_t ky, int64_t kx) const { return hw[size_t(((o * CI + c) * K + ky) * K + kx)]; }
  double gv(int64_t n, int64_t o, int64_t y, int64_t xx) const { return hg[size_t(((n * CO + o) * O + y) * O + xx)]; }
  double conv(int64_t n, int64_t o, int64_t oy, int64_t ox, double (*f)(double)) const {
    double s = 0;
    for (int64_t c = 0; c < CI; c++)
      for (int64_t ky = 0; ky < K; ky++)
        for (int64_t kx = 0; kx < K; kx++) s += f(xv(n, c, oy + ky, ox + kx)) * wv(o, c, ky, kx);
    return s;
  }
  void check_forward(const Tensor& y, double (*f)(double), double add = 0) const {
    std::vector<float> got = y.to_vector<float>();
    ASSERT_EQ(got.size(), size_t(N * CO * O * O));
    for (int64_t n = 0; n < N; n++)
      for (int64_t o = 0; o < CO; o++)
        for (int64_t oy = 0; oy < O; oy++)
          for (int64_t ox = 0; ox < O; ox++)
            ASSERT_NEAR(got[size_t(((n * CO + o) * O + oy) * O + ox)], conv(n, o, oy, ox, f) + add, 1e-4) << n << " " << o << " " << oy << " " << ox;
  }
};

double same(double v) { return v; }
double relu(double v) { return v > 0 ? v : 0; }

}  // namespace

TEST_F(ConvCopies, ForwardOfAStoredInputIsTwoKernels) {
  EXPECT_EQ(kernels_of({x.conv2d(w)}).all, 2) << "the weights channel-last, the convolution: no copy of the input or of the output";
  check_forward(x.conv2d(w).realize(), same);
}

TEST_F(ConvCopies, ComputedInputIsStoredOnce) {
  // relu(x) is computed, so the convolution's stored input is a real copy (one kernel), and the output is stored once
  Kernels k = kernels_of({x.relu().conv2d(w)});
  EXPECT_EQ(k.all, 3) << "relu(x) stored, the weights channel-last, the convolution";
  EXPECT_EQ(k.reducing, 1);
  check_forward(x.relu().conv2d(w).realize(), relu);
}

TEST_F(ConvCopies, InputGradientIsTwoKernels) {
  auto dx = [&] { return x.conv2d(w).gradient({x}, g)[0]; };
  EXPECT_EQ(kernels_of({dx()}).all, 2) << "the flipped weights channel-last, the convolution of the unpadded gradient";
  std::vector<float> got = dx().to_vector<float>();
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < CI; c++)
      for (int64_t iy = 0; iy < HW; iy++)
        for (int64_t ix = 0; ix < HW; ix++) {
          double s = 0;
          for (int64_t o = 0; o < CO; o++)
            for (int64_t ky = 0; ky < K; ky++)
              for (int64_t kx = 0; kx < K; kx++) {
                int64_t oy = iy - ky, ox = ix - kx;
                if (oy >= 0 && oy < O && ox >= 0 && ox < O) s += gv(n, o, oy, ox) * wv(o, c, ky, kx);
              }
          ASSERT_NEAR(got[size_t(((n * CI + c) * HW + iy) * HW + ix)], s, 1e-4) << n << " " << c << " " << iy << " " << ix;
        }
}

TEST_F(ConvCopies, OutputReadAgainIsComputedOnce) {
  // the stored convolution feeds both its realize and y + 1: the copy is kept rather than the convolution run twice
  auto both = [&] {
    Tensor y = x.conv2d(w);
    return std::vector<Tensor>{y, y + 1};
  };
  EXPECT_EQ(kernels_of(both()).reducing, 1);
  std::vector<Tensor> ys = both();
  Tensor::realize(ys);
  check_forward(ys[0], same);
  check_forward(ys[1], same, 1);
}

TEST_F(ConvCopies, TinygradKernelsKeepTheirGraph) {
  // SIMD=0 stores nothing by hand: the step is off, and the values are the same
  Context c({{"SIMD", 0}});
  check_forward(x.conv2d(w).realize(), same);
  check_forward(x.relu().conv2d(w).realize(), relu);
}

TEST(ConvWeightGradient, SimdCpuSplitsAtAQuarterOfTheThreshold) {
  // 8 images of 32 x 32 outputs: 8,192 terms per weight, a quarter of REDUCEOP_SPLIT_THRESHOLD's default 32,768
  std::vector<float> hx = randv(8 * 4 * 34 * 34, 4), hw = randv(8 * 4 * 3 * 3, 5), hg = randv(8 * 8 * 32 * 32, 6);
  auto dw = [&] {
    Tensor x = Tensor::from_vector(hx, {8, 4, 34, 34}).realize(), w = Tensor::from_vector(hw, {8, 4, 3, 3}).realize();
    return x.conv2d(w).gradient({w}, Tensor::from_vector(hg, {8, 8, 32, 32}).realize())[0];
  };
  auto reduces = [&](std::initializer_list<std::pair<std::string, int64_t>> s) {
    Context c(s);
    return kernels_of({dw()}).reducing;
  };
  EXPECT_EQ(reduces({{"SIMD", 1}}), 2) << "split: the partial sums, then their sum";
  EXPECT_EQ(reduces({{"SIMD", 1}, {"REDUCEOP_SPLIT_THRESHOLD", 4 * 8192 + 4}}), 1) << "the threshold follows the setting";
  EXPECT_EQ(reduces({{"SIMD", 1}, {"REDUCEOP_SPLIT_SIZE", 13}}), 1) << "parts of 2**(13-2) elements hold fewer than 8 x 288 weights (2**13 would hold 28)";
  EXPECT_EQ(reduces({{"SIMD", 0}}), 1) << "tinygrad's kernels split at the whole threshold";
  Context simd({{"SIMD", 1}});
  std::vector<float> got = dw().to_vector<float>();
  for (int64_t o = 0; o < 8; o++)
    for (int64_t c = 0; c < 4; c++)
      for (int64_t ky = 0; ky < 3; ky++)
        for (int64_t kx = 0; kx < 3; kx++) {
          double s = 0;
          for (int64_t n = 0; n < 8; n++)
            for (int64_t oy = 0; oy < 32; oy++)
              for (int64_t ox = 0; ox < 32; ox++)
                s += double(hg[size_t(((n * 8 + o) * 32 + oy) * 32 + ox)]) * hx[size_t(((n * 4 + c) * 34 + oy + ky) * 34 + ox + kx)];
          ASSERT_NEAR(got[size_t(((o * 4 + c) * 3 + ky) * 3 + kx)], s, 1e-3) << o << " " << c << " " << ky << " " << kx;
        }
}
