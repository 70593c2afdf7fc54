// A matrix-vector product on the CPU with SIMD kernels (decode's shape: a few hundred rows, under the 1024 outputs
// where tinygrad's heuristic starts upcasting): 8 of its rows are upcast, one accumulator each, so the sums are not one
// chain of dependent adds; with SIMD=0 the kernel stays tinygrad's. Values against a plain double loop.
#include <gtest/gtest.h>

#include <random>

#include "codegen/opt/postrange.h"
#include "codegen/pipeline.h"
#include "tensor/tensor_impl.h"
#include "tg/context.h"

using namespace tg;

namespace {

UOp only_kernel(const Tensor& t) {
  UOp linear = schedule_linear({t});
  for (auto& c : linear.src())
    if (c.src(0).op() == Ops::SINK) return c.src(0);
  throw Error("no kernel");
}

}  // namespace

TEST(Matvec, RowsAreUpcastOnSimdCpus) {
  Tensor w = Tensor::empty({384, 768}, dtypes::float16), x = Tensor::empty({768});
  UOp ast = only_kernel(w.cast(dtypes::float32).matmul(x));
  for (int64_t width : {8, 16}) {
    ClangRenderer ren;
    ren.vector_width = width;
    Scheduler k = hand_coded_optimizations(Scheduler(ast, caps_of(ren)));
    bool rows = false;  // 8 rows: 8 sums in flight
    for (auto& o : k.applied_opts) rows |= o == Opt{OptOps::UPCAST, 0, Arg(int64_t(8))};
    EXPECT_TRUE(rows) << "width " << width;
  }
  Context tinygrad_kernels({{"SIMD", 0}});
  Scheduler t = hand_coded_optimizations(Scheduler(ast, caps_of(ClangRenderer())));
  for (auto& o : t.applied_opts) EXPECT_FALSE(o.op == OptOps::UPCAST && o.axis == 0);
}

TEST(Matvec, ValuesMatchAPlainLoop) {
  std::mt19937 g(3);
  std::uniform_real_distribution<float> d(-1, 1);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{384, 768}, {100, 64}, {768, 2048}}) {
    std::vector<float> wv(static_cast<size_t>(rows * cols)), xv(static_cast<size_t>(cols));
    for (auto& v : wv) v = d(g);
    for (auto& v : xv) v = d(g);
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
