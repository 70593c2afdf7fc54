// Reduces on SIMD CPUs shaped for vector accumulators: the heuristic's column_reduce (vector lanes and 64 columns of
// accumulators on the output axis every input reads contiguously) and the splits that feed it (rangeify.cpp):
// split_whole_reduce (a whole float32 reduce as (parts, rows, 64)), split_row_reduce (contiguous rows as (rows, K/64,
// 64)) and split_column_reduce (a column reduce in blocks of 16 rows). Values of column, row and whole sums and maxes
// over shapes that fit the vectors and shapes that do not (odd sizes, one row, a 16M-element tensor), at several thread
// counts, against double-precision loops and exact integer sums; and the kernels' structure.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "support/random.h"
#include "codegen/opt/postrange.h"
#include "codegen/pipeline.h"
#include "tensor/tensor_impl.h"
#include "tg/context.h"

using namespace tg;

namespace {

std::vector<UOp> kernels(const Tensor& t) {
  std::vector<UOp> out;
  UOp sched = schedule_linear({t});  // kept alive: src() views its node
  for (auto& c : sched.src())
    if (c.src(0).op() == Ops::SINK) out.push_back(c.src(0));
  return out;
}

// the second kernel's size: the partials the first one stores
int64_t outputs_summed(const UOp& second) {
  int64_t n = 1;
  for (int64_t d : Scheduler(second, caps_of(ClangRenderer())).full_shape()) n *= d;
  return n;
}

ClangRenderer with_width(int64_t w) {
  ClangRenderer r;
  r.vector_width = w;
  return r;
}

using tg::test::randv;

// a float32 sum of random terms against the exact one: 2e-6 of the sum of the terms' magnitudes
double tol(double abs_sum) { return 2e-6 * abs_sum + 1e-5; }

// the exact sum, sum of magnitudes and max of n elements of v, step apart from start
struct Line {
  double s = 0, abs = 0, m = -INFINITY;
};
Line line(const std::vector<float>& v, int64_t start, int64_t n, int64_t step) {
  Line l;
  for (int64_t i = 0; i < n; i++) {
    double x = v[size_t(start + i * step)];
    l.s += x, l.abs += std::fabs(x), l.m = std::max(l.m, x);
  }
  return l;
}

// a split reduce: its first kernel reads whole vectors into 64 columns (lanes, then 64 / lanes vectors) at both widths,
// its second sums `partials` outputs
void expect_64_column_partials(const Tensor& red, int64_t partials) {
  auto ks = kernels(red);
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(outputs_summed(ks[1]), partials);
  for (int64_t w : {8, 16}) {
    ClangRenderer ren = with_width(w);
    Scheduler k = hand_coded_optimizations(Scheduler(ks[0], caps_of(ren)));
    ASSERT_GE(k.applied_opts.size(), 2u);
    EXPECT_EQ(k.applied_opts[0].arg, Arg(w));
    EXPECT_EQ(k.applied_opts[1].arg, Arg(64 / w));
    std::string src = to_program(k.get_optimized_ast("test"), ren)->kernel.src;
    EXPECT_NE(src.find("*((float" + std::to_string(w) + "*)((data1_"), std::string::npos) << src;
  }
}

}  // namespace

TEST(ColumnReduce, ColumnSumsMatchADoubleLoop) {
  for (int64_t threads : {1, 2, 3}) {
    Context ctx({{"NUM_CPU_THREADS", threads}});
    uint32_t seed = 1;
    // 64 columns and more (whole vectors), 72 (one vector's multiple, not 64's), 100 (not 8's), one row, 1 column
    // 2048 x 1024: over 2^20 floats, split in blocks of 16 rows
    for (auto [r, c] : {std::pair<int64_t, int64_t>{512, 256}, {300, 72}, {333, 100}, {1, 64}, {1000, 1}, {7, 1030}, {2048, 1024}}) {
      auto v = randv(size_t(r * c), seed++);
      Tensor a = Tensor::from_vector(v, {r, c}).realize();
      auto sum = a.sum(0).to_vector<float>(), mx = a.max(0).to_vector<float>();
      ASSERT_EQ(sum.size(), size_t(c));
      for (int64_t j = 0; j < c; j++) {
        auto [s, abs, m] = line(v, j, r, c);
        ASSERT_NEAR(sum[size_t(j)], s, tol(abs)) << r << "x" << c << " column " << j << ", " << threads << " threads";
        ASSERT_EQ(mx[size_t(j)], float(m)) << r << "x" << c << " column " << j << ", " << threads << " threads";
      }
    }
  }
}

TEST(ColumnReduce, WholeReducesMatchADoubleLoop) {
  uint32_t seed = 10;
  // 2^20 and 4096 x 4096 (parts * 64 divide them), a prime count of rows, one row, sizes with no 64-multiple
  std::vector<std::pair<int64_t, int64_t>> shapes{{1024, 1024}, {4096, 4096}, {1021, 1024}, {1, 1 << 17}, {1000, 1003}, {257, 129}};
  for (auto [r, c] : shapes) {
    auto v = randv(size_t(r * c), seed++);
    v[size_t(r * c / 3)] = 3.5f;  // the max, somewhere inside
    double s = 0, abs = 0, abs2 = 0;  // sums of x, |x| and |2x + 1|
    for (float x : v) s += x, abs += std::fabs(x), abs2 += std::fabs(2. * x + 1);
    for (int64_t threads : {1, 2, 4, 3}) {
      if (r * c > (1 << 22) && threads != 2) continue;  // the big one once
      Context ctx({{"NUM_CPU_THREADS", threads}});
      Tensor a = Tensor::from_vector(v, {r, c}).realize();
      EXPECT_NEAR(a.sum().item<float>(), s, tol(abs)) << r << "x" << c << ", " << threads << " threads";
      EXPECT_EQ(a.max().item<float>(), 3.5f) << r << "x" << c << ", " << threads << " threads";
      EXPECT_EQ((-a).max().item<float>(), -*std::min_element(v.begin(), v.end())) << r << "x" << c;
      EXPECT_NEAR((a * 2.f + 1.f).sum().item<float>(), 2 * s + double(r * c), tol(abs2)) << r << "x" << c << " fused";
    }
  }
}

TEST(ColumnReduce, WholeSumsOfSmallIntegersAreExact) {
  // terms in {-1, 0, 1}: every partial sum is an integer under 2^24, exact in float32 in any order, so a term lost or
  // counted twice shows; whole sums, column sums and row sums
  for (auto [r, c] : std::vector<std::pair<int64_t, int64_t>>{{4096, 4096}, {1024, 1024}, {1, 1 << 17}, {1000, 1003}, {3, 5}}) {
    std::vector<float> v(size_t(r * c));
    int64_t s = 0;
    for (size_t i = 0; i < v.size(); i++) v[i] = float(int64_t(i * 2654435761u % 3) - 1), s += int64_t(v[i]);
    Tensor a = Tensor::from_vector(v, {r, c}).realize();
    for (int64_t threads : {2, 4}) {
      Context ctx({{"NUM_CPU_THREADS", threads}});
      EXPECT_EQ(a.sum().item<float>(), float(s)) << r << "x" << c << ", " << threads << " threads";
      auto cols = a.sum(0).to_vector<float>();
      for (int64_t j = 0; j < c; j += std::max<int64_t>(1, c / 97)) {
        int64_t cs = 0;
        for (int64_t i = 0; i < r; i++) cs += int64_t(v[size_t(i * c + j)]);
        ASSERT_EQ(cols[size_t(j)], float(cs)) << r << "x" << c << " column " << j;
      }
      auto rows = a.sum(1).to_vector<float>();
      for (int64_t i = 0; i < r; i += std::max<int64_t>(1, r / 97)) {
        int64_t rs = 0;
        for (int64_t j = 0; j < c; j++) rs += int64_t(v[size_t(i * c + j)]);
        ASSERT_EQ(rows[size_t(i)], float(rs)) << r << "x" << c << " row " << i;
      }
    }
  }
}

TEST(ColumnReduce, WholeReduceIsSplitIntoContiguousParts) {
  // 2^20 floats with 2 threads: 256 parts (the most, threads dividing them) of 64 rows by 64 columns, then the 2^14
  // partials; the first kernel's 64 columns are vector lanes and accumulators: 8 x float8 or 4 x float16
  Context ctx({{"NUM_CPU_THREADS", 2}});
  Tensor a = Tensor::empty({1024, 1024});
  for (auto sum : {a.sum(), a.max()}) {
    auto ks = kernels(sum);
    ASSERT_EQ(ks.size(), 2u);
    Scheduler first(ks[0], caps_of(ClangRenderer()));
    auto fs = first.full_shape();
    std::sort(fs.begin(), fs.end());
    EXPECT_EQ(fs, (std::vector<int64_t>{64, 64, 256}));
    EXPECT_EQ(outputs_summed(ks[1]), 256 * 64);
    for (int64_t w : {8, 16}) {
      ClangRenderer ren = with_width(w);
      Scheduler k = hand_coded_optimizations(Scheduler(ks[0], caps_of(ren)));
      ASSERT_GE(k.applied_opts.size(), 3u);
      EXPECT_EQ(k.applied_opts[0].op, OptOps::UPCAST);
      EXPECT_EQ(k.applied_opts[0].arg, Arg(w));
      EXPECT_EQ(k.applied_opts[1].op, OptOps::UPCAST);
      EXPECT_EQ(k.applied_opts[1].arg, Arg(64 / w));
      EXPECT_EQ(k.applied_opts[2], (Opt{OptOps::THREAD, 0, Arg(int64_t(2))})) << "the parts go to the threads";
      for (auto& o : k.applied_opts) EXPECT_NE(o.op, OptOps::UNROLL);
      std::string src = to_program(k.get_optimized_ast("test"), ren)->kernel.src, fw = "float" + std::to_string(w);
      EXPECT_NE(src.find("*((" + fw + "*)((data1_"), std::string::npos) << "vector loads of the input\n" << src;
      EXPECT_NE(src.find("*((" + fw + "*)((data0_"), std::string::npos) << "vector stores of the partials\n" << src;
    }
  }
  {
    Context c({{"REDUCEOP_SPLIT_SIZE", 13}});  // at most 2^13 partials: 128 parts
    auto ks = kernels(a.sum());
    ASSERT_EQ(ks.size(), 2u);
    EXPECT_EQ(outputs_summed(ks[1]), 128 * 64);
  }
  // tinygrad's split (256 parts, one of the input's axes cut) where no part count is a multiple of 3 and divides 2^14
  // rows of 64, with SIMD=0, and where 8 parts of 64 exceed 2^REDUCEOP_SPLIT_SIZE
  // rows of 4096 (split_row_reduce may cut them in 64 partials each: a third kernel)
  for (auto [knob, val] : {std::pair<const char*, int64_t>{"NUM_CPU_THREADS", 3}, {"SIMD", 0}, {"REDUCEOP_SPLIT_SIZE", 8}}) {
    Context c({{knob, val}});
    auto ks = kernels(a.sum());
    ASSERT_GE(ks.size(), 2u) << knob;
    EXPECT_EQ(outputs_summed(ks.back()), 256) << knob;
  }
  auto ks = kernels(Tensor::empty({1024, 1024}, dtypes::int32).sum());
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(outputs_summed(ks.back()), 256) << "int32: tinygrad's split";
}

TEST(ColumnReduce, ColumnSumGetsVectorAccumulators) {
  for (int64_t w : {8, 16}) {
    ClangRenderer ren = with_width(w);
    // 4096 columns: w lanes, then 64 / w vectors; 72: 8 lanes (not 16's multiple), 1 vector (9 does not divide 64);
    // 48: 6 vectors of 8 do not divide 64 (2 do), 3 of 16 neither (1 does); 100 (not 8's multiple): none
    for (auto [c, lanes, vecs] : {std::tuple<int64_t, int64_t, int64_t>{4096, w, 64 / w}, {72, 8, 1}, {48, w, 16 / w}}) {
      Scheduler k = hand_coded_optimizations(Scheduler(kernels(Tensor::empty({64, c}).sum(0))[0], caps_of(ren)));
      ASSERT_GE(k.applied_opts.size(), 1u);
      EXPECT_EQ(k.applied_opts[0], (Opt{OptOps::UPCAST, 0, Arg(lanes)})) << c << " columns, width " << w;
      if (vecs > 1) {
        ASSERT_GE(k.applied_opts.size(), 2u);
        EXPECT_EQ(k.applied_opts[1], (Opt{OptOps::UPCAST, 0, Arg(vecs)})) << c << " columns, width " << w;
      }
      std::string src = to_program(k.get_optimized_ast("test"), ren)->kernel.src, fv = "float" + std::to_string(lanes);
      EXPECT_NE(src.find("*((" + fv + "*)((data1_"), std::string::npos) << src;
    }
    Scheduler odd = hand_coded_optimizations(Scheduler(kernels(Tensor::empty({64, 100}).sum(0))[0], caps_of(ren)));
    for (auto& o : odd.applied_opts) EXPECT_FALSE(o.op == OptOps::UPCAST && (o.arg == Arg(int64_t(8)) || o.arg == Arg(w)));
    // a sum along the contiguous axis is not a column reduce
    Scheduler rows = hand_coded_optimizations(Scheduler(kernels(Tensor::empty({256, 2048}).sum(1))[0], caps_of(ren)));
    ASSERT_GE(rows.applied_opts.size(), 1u);  // its vector lanes run along K (matvec_lanes' UNROLL), not across rows
    EXPECT_EQ(rows.applied_opts[0].op, OptOps::UNROLL) << rows.applied_opts[0].str();
  }
  Context tinygrad_kernels({{"SIMD", 0}});
  Scheduler t = hand_coded_optimizations(Scheduler(kernels(Tensor::empty({64, 4096}).sum(0))[0], caps_of(ClangRenderer())));
  std::string tsrc = to_program(t.get_optimized_ast("test"), ClangRenderer())->kernel.src;
  EXPECT_EQ(tsrc.find("float8"), std::string::npos) << tsrc;
}

TEST(ColumnReduce, RowReducesOfStoredTensorsMatchADoubleLoop) {
  // rows of 1024 floats and more (multiples of 64) in tensors of 2^20 and more: split in (rows, 64) partials; 1000 per
  // row, a transposed view and a computed input: one kernel; against double loops, sums and maxes
  uint32_t seed = 30;
  for (auto [r, c] : std::vector<std::pair<int64_t, int64_t>>{{1024, 1024}, {256, 4096}, {3, 1 << 19}, {1100, 1000}}) {
    auto v = randv(size_t(r * c), seed++);
    for (int64_t threads : {1, 2}) {
      Context ctx({{"NUM_CPU_THREADS", threads}});
      Tensor a = Tensor::from_vector(v, {r, c}).realize();
      auto sum = a.sum(1).to_vector<float>(), mx = a.max(1).to_vector<float>(), tsum = a.transpose(0, 1).sum(0).to_vector<float>();
      ASSERT_EQ(sum.size(), size_t(r));
      for (int64_t i = 0; i < r; i++) {
        auto [s, abs, m] = line(v, i * c, c, 1);
        ASSERT_NEAR(sum[size_t(i)], s, tol(abs)) << r << "x" << c << " row " << i << ", " << threads << " threads";
        ASSERT_NEAR(tsum[size_t(i)], s, tol(abs)) << r << "x" << c << " row " << i << " through a transpose";
        ASSERT_EQ(mx[size_t(i)], float(m)) << r << "x" << c << " row " << i << ", " << threads << " threads";
      }
    }
  }
}

TEST(ColumnReduce, RowReduceIsSplitIntoColumnsOfPartials) {
  Tensor a = Tensor::from_vector(std::vector<float>(1 << 20), {1024, 1024}).realize();
  for (auto red : {a.sum(1), a.max(1)}) {
    expect_64_column_partials(red, 1024 * 64);
  }
  // the rows of a transposed view are a's columns: blocks of 16 of a's rows (split_column_reduce)
  auto tk = kernels(a.transpose(0, 1).sum(1));
  ASSERT_EQ(tk.size(), 2u);
  EXPECT_EQ(outputs_summed(tk[1]), 64 * 1024);
  // one kernel: rows of 1000 (not 64's multiple), under 2^20 elements, a computed input, SIMD=0
  EXPECT_EQ(kernels(Tensor::from_vector(std::vector<float>(1100 * 1000), {1100, 1000}).realize().sum(1)).size(), 1u);
  EXPECT_EQ(kernels(Tensor::from_vector(std::vector<float>(1 << 19), {512, 1024}).realize().sum(1)).size(), 1u);
  EXPECT_EQ(kernels((a * 2.f).sum(1)).size(), 1u);
  Context c({{"SIMD", 0}});
  EXPECT_EQ(kernels(a.sum(1)).size(), 1u);
}

TEST(ColumnReduce, ColumnReduceIsSplitIntoBlocksOfRows) {
  Tensor a = Tensor::from_vector(std::vector<float>(1 << 20), {1024, 1024}).realize();
  for (auto red : {a.sum(0), a.max(0)}) {
    expect_64_column_partials(red, 64 * 1024);  // 64 blocks of 16 rows
  }
  // one kernel: 1004 columns (not 8's multiple), 120 rows, under 2^20 elements, a computed input, SIMD=0
  EXPECT_EQ(kernels(Tensor::from_vector(std::vector<float>(1024 * 1004), {1024, 1004}).realize().sum(0)).size(), 1u);
  EXPECT_EQ(kernels(Tensor::from_vector(std::vector<float>(120 * 16384), {120, 16384}).realize().sum(0)).size(), 1u);
  EXPECT_EQ(kernels(Tensor::from_vector(std::vector<float>(1 << 19), {512, 1024}).realize().sum(0)).size(), 1u);
  EXPECT_EQ(kernels((a * 2.f).sum(0)).size(), 1u);
  Context c({{"SIMD", 0}});
  EXPECT_EQ(kernels(a.sum(0)).size(), 1u);
}
