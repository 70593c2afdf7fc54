// add_prefetches (codegen/late/prefetch.cpp): a SIMD CPU matrix-vector product whose matrix is past the L2 cache
// prefetches, with each row's load, that row in the next block of rows (the loop around the reduce); nothing else gets
// a prefetch (a GEMM, a small matrix, SIMD=0 and PREFETCH=0 kernels). Values against a float64 loop at both vector
// widths, rows that end in a partial block and the last block's prefetches past the matrix (never dereferenced).
#include <gtest/gtest.h>

#include <cmath>

#include "support/random.h"
#include "codegen/opt/postrange.h"
#include "codegen/pipeline.h"
#include "tensor/tensor_impl.h"
#include "tg/context.h"

using namespace tg;

namespace {

std::string source_of(const Tensor& t, int64_t width = 16) {
  UOp linear = schedule_linear({t});
  for (auto& c : linear.src())
    if (c.src(0).op() == Ops::SINK) {
      ClangRenderer ren;
      ren.vector_width = width;
      return to_program(hand_coded_optimizations(Scheduler(c.src(0), caps_of(ren))).get_optimized_ast("test"), ren)->kernel.src;
    }
  throw Error("no kernel");
}

int64_t count(const std::string& s, const std::string& what) {
  int64_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) n++;
  return n;
}

Tensor matvec(int64_t rows, int64_t cols) { return Tensor::empty({rows, cols}, dtypes::float16).cast(dtypes::float32).matmul(Tensor::empty({cols})); }

}  // namespace

TEST(Prefetch, MatvecPrefetchesTheNextBlockOfRows) {
  for (int64_t w : {8, 16}) {
    SCOPED_TRACE("width " + std::to_string(w));
    // 2048 x 768 float16 (3 MiB): 8 rows a step of the outer loop, one prefetch per row load, 8 rows (6144 elements) on
    std::string src = source_of(matvec(2048, 768), w);
    EXPECT_EQ(count(src, "__builtin_prefetch("), 8) << src;
    EXPECT_EQ(count(src, "+6144), 0, 3);"), 8) << src;
    {
      Context off({{"PREFETCH", 0}});
      EXPECT_EQ(count(source_of(matvec(2048, 768), w), "__builtin_prefetch"), 0);
    }
    {
      Context tinygrad_kernels({{"SIMD", 0}});
      EXPECT_EQ(count(source_of(matvec(2048, 768), w), "__builtin_prefetch"), 0);
    }
    // a matrix the L2 cache holds (64 x 768 float16, 96 KiB) and a GEMM (no vector that every block shares) get none
    EXPECT_EQ(count(source_of(matvec(64, 768), w), "__builtin_prefetch"), 0);
    EXPECT_EQ(count(source_of(Tensor::empty({512, 512}).matmul(Tensor::empty({512, 512})), w), "__builtin_prefetch"), 0);
  }
}

TEST(Prefetch, MatvecValuesWithAndWithoutPrefetch) {
  uint32_t seed = 5;
  for (int64_t w : {8, 16})
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{2048, 768}, {1000, 768}, {300, 1024}, {4100, 96}}) {
      std::vector<float> wv = tg::test::randv(size_t(rows * cols), seed++), xv = tg::test::randv(size_t(cols), seed++);
      Tensor wt = Tensor::from_vector(wv, {rows, cols}, dtypes::float16).realize();
      std::vector<float> wh = wt.cast(dtypes::float32).to_vector<float>();
      for (int64_t pf : {0, 1})
        for (int64_t threads : {1, 2}) {
          Context ctx({{"CPU_VECTOR_WIDTH", w}, {"PREFETCH", pf}, {"NUM_CPU_THREADS", threads}});
          SCOPED_TRACE("width " + std::to_string(w) + " PREFETCH=" + std::to_string(pf) + " threads " + std::to_string(threads));
          std::vector<float> got = wt.cast(dtypes::float32).matmul(Tensor::from_vector(xv, {cols})).to_vector<float>();
          ASSERT_EQ(got.size(), size_t(rows));
          for (int64_t i = 0; i < rows; i++) {
            double ref = 0;
            for (int64_t j = 0; j < cols; j++) ref += double(wh[size_t(i * cols + j)]) * xv[size_t(j)];
            ASSERT_NEAR(got[size_t(i)], ref, 1e-5 * std::sqrt(double(cols))) << rows << "x" << cols << " row " << i;
          }
        }
    }
}
