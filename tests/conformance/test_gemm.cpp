// float32 matmul on the CPU against libtorch: the SIMD register tile, B packed in panels (tensor/gemm.cpp) and both
// vector widths (CPU_VECTOR_WIDTH=8, AVX2's ymm, and 16, AVX-512's zmm: both compile and run on either host; clang
// splits the wide vectors on an AVX2 one) over odd, transposed and batched shapes. Each setting changes the kernels,
// never the values.
#include "codegen/pipeline.h"
#include "tensor/tensor_impl.h"
#include "tensor_harness.h"
#include "tg/context.h"

using namespace conf;

namespace {

struct Mm {
  int64_t batch, m, k, n;
  bool ta = false, tb = false;
};

std::string name(const Mm& c) {
  return std::to_string(c.batch) + "x" + std::to_string(c.m) + "x" + std::to_string(c.k) + "x" + std::to_string(c.n) + (c.ta ? " A^T" : "") + (c.tb ? " B^T" : "");
}

// A (batch, m, k) @ B (batch, k, n), each stored transposed where asked; batch 0: 2-D operands
void expect_matmul(const Mm& c) {
  auto dims = [&](int64_t r, int64_t cl, bool t) {
    std::vector<int64_t> s = t ? std::vector<int64_t>{cl, r} : std::vector<int64_t>{r, cl};
    if (c.batch) s.insert(s.begin(), c.batch);
    return s;
  };
  Pair a = input(dims(c.m, c.k, c.ta), dtypes::float32, -1, 1, 1), b = input(dims(c.k, c.n, c.tb), dtypes::float32, -1, 1, 2);
  tg::Tensor ta = c.ta ? a.t.transpose(-1, -2) : a.t, tb = c.tb ? b.t.transpose(-1, -2) : b.t;
  at::Tensor aa = c.ta ? a.a.transpose(-1, -2) : a.a, ab = c.tb ? b.a.transpose(-1, -2) : b.a;
  at::Tensor got = to_torch(ta.matmul(tb)), want = at::matmul(aa.to(at::kDouble), ab.to(at::kDouble));
  ASSERT_EQ(got.sizes(), want.sizes()) << name(c);
  // float32 sums of k products of values in [-1, 1)
  double err = (got.to(at::kDouble) - want).abs().max().item<double>(), tol = 1e-6 * double(c.k) + 1e-5;
  EXPECT_LE(err, tol) << name(c);
}

const std::vector<Mm> shapes{
    {0, 1, 1, 1},       {0, 3, 5, 7},       {0, 17, 33, 65},     {0, 64, 64, 64},    {0, 100, 63, 257},
    {0, 130, 200, 96},  {0, 64, 512, 512},  {0, 72, 520, 544},   {0, 129, 511, 513}, {0, 96, 1024, 256},
};

std::string kernel_src(const tg::Tensor& t, size_t which) {  // the which-th kernel of t's schedule, as the CPU renders it
  std::vector<tg::UOp> kernels;
  tg::UOp sched = tg::schedule_linear({t});  // kept alive: src() views its node
  for (auto& c : sched.src())
    if (c.src(0).op() == tg::Ops::SINK) kernels.push_back(c.src(0));
  if (which >= kernels.size()) return "";
  return tg::to_program(kernels[which], tg::ClangRenderer())->kernel.src;
}

}  // namespace

TEST(Gemm, MatchesTorchAcrossShapesAtBothWidths) {
  for (int64_t w : {8, 16}) {
    tg::Context ctx({{"CPU_VECTOR_WIDTH", w}});
    for (const Mm& c : shapes) {
      SCOPED_TRACE("CPU_VECTOR_WIDTH=" + std::to_string(w));
      expect_matmul(c);
    }
  }
}

TEST(Gemm, TransposedAndBatched) {
  for (int64_t w : {8, 16}) {
    tg::Context ctx({{"CPU_VECTOR_WIDTH", w}, {"SIMD", 1}});
    SCOPED_TRACE("CPU_VECTOR_WIDTH=" + std::to_string(w));
    for (const Mm& c : {Mm{0, 64, 512, 512, true, false}, Mm{0, 64, 512, 512, false, true}, Mm{0, 65, 300, 512, true, true},
                        Mm{0, 48, 40, 56, true, false}, Mm{3, 64, 256, 1024}, Mm{2, 70, 129, 96, true, true}, Mm{5, 9, 17, 33}})
      expect_matmul(c);
  }
  // B^T of any size is packed (attention's q @ k^T: no input is contiguous along N in place): 64 rows or more of A and
  // N a multiple of two vectors; values as ever
  for (int64_t w : {8, 16}) {
    tg::Context ctx({{"CPU_VECTOR_WIDTH", w}, {"SIMD", 1}});
    SCOPED_TRACE("CPU_VECTOR_WIDTH=" + std::to_string(w));
    for (const Mm& c : {Mm{12, 128, 64, 128, false, true}, Mm{0, 64, 32, 64, false, true}, Mm{2, 96, 48, 4 * w, false, true}, Mm{2, 63, 48, 64, false, true}})
      expect_matmul(c);
    Pair q = input({2, 128, 64}, dtypes::float32, -1, 1, 9), k = input({2, 128, 64}, dtypes::float32, -1, 1, 10);
    EXPECT_EQ(tg::Tensor::schedule_linear({q.t.matmul(k.t.transpose(-1, -2))}).size(), 2u) << "k^T packed, then the product";
    EXPECT_EQ(tg::Tensor::schedule_linear({q.t.matmul(k.t.reshape({2, 64, 128}))}).size(), 1u) << "a small B read in place";
  }
  // a batch of A against one B (broadcast over the batch)
  Pair a = input({3, 80, 512}, dtypes::float32, -1, 1, 3), b = input({512, 512}, dtypes::float32, -1, 1, 4);
  double err = (to_torch(a.t.matmul(b.t)).to(at::kDouble) - at::matmul(a.a.to(at::kDouble), b.a.to(at::kDouble))).abs().max().item<double>();
  EXPECT_LE(err, 1e-6 * 512 + 1e-5);
}

TEST(Gemm, RegisterTileFitsTheVectorRegisters) {
  // the product's accumulators (buf0): two vectors of lanes by the most rows that divide M and fit beside a row's 2
  // loads and a broadcast: 14 of 32 zmm, 6 of 16 ymm; a prime M has no row block and gets the plain heuristic's tile
  struct Want { int64_t m, rows16, rows8; };
  for (Want c : {Want{64, 8, 4}, Want{84, 14, 6}, Want{96, 12, 6}, Want{67, 0, 0}}) {
    for (int64_t w : {8, 16}) {
      tg::Context ctx({{"CPU_VECTOR_WIDTH", w}, {"SIMD", 1}});
      SCOPED_TRACE("CPU_VECTOR_WIDTH=" + std::to_string(w) + " M=" + std::to_string(c.m));
      Pair a = input({c.m, 512}, dtypes::float32, -1, 1, 7), b = input({512, 512}, dtypes::float32, -1, 1, 8);
      std::string src = kernel_src(a.t.matmul(b.t), 1);
      int64_t rows = w == 16 ? c.rows16 : c.rows8;
      size_t at = src.find("float buf0[");
      if (rows == 0) {
        EXPECT_EQ(src.find("float" + std::to_string(w) + " val"), std::string::npos) << src;
      } else {
        ASSERT_NE(at, std::string::npos) << src;
        EXPECT_EQ(std::stoll(src.substr(at + 11)), rows * 2 * w) << src;
      }
      expect_matmul(Mm{0, c.m, 512, 512});
    }
  }
}

TEST(Gemm, SettingsChangeKernelsNotValues) {
  Pair a = input({64, 512}, dtypes::float32, -1, 1, 5), b = input({512, 512}, dtypes::float32, -1, 1, 6);
  at::Tensor want = at::matmul(a.a.to(at::kDouble), b.a.to(at::kDouble));
  auto err = [&](const tg::Tensor& c) { return (to_torch(c).to(at::kDouble) - want).abs().max().item<double>(); };
  const double tol = 1e-6 * 512 + 1e-5;
  std::string srcs[2];
  for (int64_t w : {8, 16}) {
    tg::Context ctx({{"CPU_VECTOR_WIDTH", w}, {"SIMD", 1}});
    // scheduling swaps a tensor's graph for its buffers: one fresh product per question
    EXPECT_EQ(tg::Tensor::schedule_linear({a.t.matmul(b.t)}).size(), 2u) << "B packed, then the product";
    std::string& src = srcs[w / 16];
    src = kernel_src(a.t.matmul(b.t), 1);
    EXPECT_NE(src.find("*((float" + std::to_string(w) + "*)"), std::string::npos) << src;
    // zmm only where clang is told the kernel wants 512-bit vectors (it tunes Xeons for 256)
    EXPECT_EQ(src.find("min_vector_width(512)") != std::string::npos, w == 16) << src;
    EXPECT_LE(err(a.t.matmul(b.t)), tol) << "CPU_VECTOR_WIDTH=" << w;
  }
  EXPECT_NE(srcs[0], srcs[1]);
  {
    tg::Context ctx({{"SIMD", 0}});  // tinygrad's graph: one kernel, B read in place
    EXPECT_EQ(tg::Tensor::schedule_linear({a.t.matmul(b.t)}).size(), 1u);
    EXPECT_LE(err(a.t.matmul(b.t)), tol);
  }
  {
    tg::Context ctx({{"CPU_VECTOR_WIDTH", 12}, {"SIMD", 1}});
    try {
      a.t.matmul(b.t).realize();
      ADD_FAILURE() << "CPU_VECTOR_WIDTH=12 was accepted";
    } catch (const tg::Error& e) {
      EXPECT_NE(std::string(e.what()).find("CPU_VECTOR_WIDTH"), std::string::npos) << e.what();
    }
  }
}

TEST(Gemm, BlocksOfKForFewRowsOfA) {
  // A with fewer rows than a block of K has: B packed and multiplied one block of K at a time, the blocks' products
  // summed (tensor/gemm.cpp). GEMM_BLOCK_BYTES=256 KiB at N=512 is blocks of 128 (64 x 512 @ 512 x 512: 64 MiB at
  // 4096's shape): ragged last blocks, A^T, B^T and a batch at both widths, values as without blocks
  for (int64_t w : {8, 16}) {
    tg::Context ctx({{"CPU_VECTOR_WIDTH", w}, {"SIMD", 1}, {"GEMM_BLOCK_BYTES", 256 << 10}});
    SCOPED_TRACE("CPU_VECTOR_WIDTH=" + std::to_string(w));
    for (const Mm& c : {Mm{0, 64, 512, 512}, Mm{0, 100, 520, 512}, Mm{0, 64, 512, 512, true, false}, Mm{0, 64, 700, 512, false, true},
                        Mm{2, 64, 384, 512}, Mm{0, 127, 1000, 256}})
      expect_matmul(c);
  }
  tg::Context ctx({{"CPU_VECTOR_WIDTH", 16}, {"SIMD", 1}});
  Pair a = input({64, 512}, dtypes::float32, -1, 1, 21), b = input({512, 512}, dtypes::float32, -1, 1, 22);
  Pair a128 = input({128, 512}, dtypes::float32, -1, 1, 23);
  auto kernels = [&](const Pair& x, int64_t bytes) {
    tg::Context c({{"GEMM_BLOCK_BYTES", bytes}});
    return tg::Tensor::schedule_linear({x.t.matmul(b.t)}).size();
  };
  // 4 blocks of 128: each A's block copied, B's block packed, their product (plus the sum so far)
  EXPECT_EQ(kernels(a, 256 << 10), 4u * 3u);
  EXPECT_EQ(kernels(a, 0), 2u) << "0: B packed whole, then the product";
  EXPECT_EQ(kernels(a, 1 << 20), 2u) << "B (1 MiB) within the budget";
  EXPECT_EQ(kernels(a128, 256 << 10), 2u) << "A's 128 rows: as many as a block's";
  EXPECT_EQ(kernels(a128, 512 << 10), 2u * 3u) << "blocks of 256";
}

TEST(Gemm, ChunksOfColumnsForMoreRowsOfBThanOfA) {
  // B with more rows than A and bigger than GEMM_CHUNK_BYTES of panels: packed and multiplied a chunk of columns at a
  // time, the chunks' outputs copied into one (tensor/gemm.cpp). 256 KiB at K=512 is chunks of 128 columns: A^T, B^T, a
  // batch and a K of no power of two at both widths, values as libtorch's
  for (int64_t w : {8, 16}) {
    tg::Context ctx({{"CPU_VECTOR_WIDTH", w}, {"SIMD", 1}, {"GEMM_CHUNK_BYTES", 256 << 10}});
    SCOPED_TRACE("CPU_VECTOR_WIDTH=" + std::to_string(w));
    for (const Mm& c : {Mm{0, 64, 512, 1024}, Mm{0, 100, 768, 768}, Mm{0, 64, 512, 512, true, false}, Mm{0, 128, 640, 512, false, true},
                        Mm{2, 64, 384, 1024}, Mm{0, 96, 1000, 512}})
      expect_matmul(c);
  }
  tg::Context ctx({{"CPU_VECTOR_WIDTH", 16}, {"SIMD", 1}});
  Pair b = input({512, 1024}, dtypes::float32, -1, 1, 22);
  auto kernels = [&](int64_t m, int64_t bytes) {
    tg::Context c({{"GEMM_CHUNK_BYTES", bytes}});
    return tg::Tensor::schedule_linear({input({m, 512}, dtypes::float32, -1, 1, 21).t.matmul(b.t)}).size();
  };
  EXPECT_EQ(kernels(64, 256 << 10), 8u * 2u + 1u) << "8 chunks of 128 columns: a pack and a product each, then one copy";
  EXPECT_EQ(kernels(64, 0), 2u) << "0: B packed whole, then the product";
  EXPECT_EQ(kernels(64, 2 << 20), 2u) << "B (2 MiB) within the budget";
  EXPECT_EQ(kernels(512, 256 << 10), 2u) << "as many rows of A as of B";
}

TEST(Gemm, EpiloguesOverBigPanels) {
  // x @ W^T with W stored (N, K) as a model file has it, B's panels 1 MiB and more, epilogues fused into the GEMM (silu,
  // a residual add, silu(x W^T) * x W^T as an FFN's gate and up) against libtorch at both widths, one and two threads
  // (the loop order the heuristic picks for such kernels: test_simd.cpp, BigPanelsLoopOutsideTheRows)
  for (int64_t w : {8, 16})
    for (int64_t threads : {1, 2}) {
      tg::Context ctx({{"CPU_VECTOR_WIDTH", w}, {"SIMD", 1}, {"NUM_CPU_THREADS", threads}});
      SCOPED_TRACE("CPU_VECTOR_WIDTH=" + std::to_string(w) + " threads " + std::to_string(threads));
      for (auto [m, k, n] : {std::tuple<int64_t, int64_t, int64_t>{128, 256, 1024}, {64, 384, 1024}, {96, 256, 1536}}) {
        Pair x = input({1, m, k}, dtypes::float32, -1, 1, 11), wt = input({n, k}, dtypes::float32, -1, 1, 12), r = input({1, m, n}, dtypes::float32, -1, 1, 13);
        // x normalized first (the prompt's rms_norm): the GEMM reads a computed, then packed, A
        tg::Tensor y = (x.t * 0.5f).matmul(wt.t.transpose(0, 1)), g = y.silu(), z = g * (x.t * 0.5f).matmul(wt.t.transpose(0, 1));
        at::Tensor ya = at::matmul(x.a.to(at::kDouble) * 0.5, wt.a.to(at::kDouble).t());
        for (auto [got, want] : {std::pair{y.silu(), at::silu(ya)}, std::pair{y + r.t, ya + r.a.to(at::kDouble)}, std::pair{z, at::silu(ya) * ya}}) {
          double err = (to_torch(got).to(at::kDouble) - want).abs().max().item<double>();
          EXPECT_LE(err, 1e-6 * double(k) + 1e-5) << m << "x" << k << "x" << n;
        }
      }
    }
}

// half and bfloat16 matmuls, with a float32 result (matmul's dtype) or their own, against libtorch in double from the same
// rounded inputs (a wrong lane of a tensor core's swizzle is off by about the values themselves, sqrt(k / 3)). On DEV=CUDA these are the kernels on the mma.sync tensor cores (TC=1; TC_OPT=2 pads 60 x 56 to them),
// with NVRTC_CHECK=sm_90 they are compiled for them; on the CPU and on OpenCL the same graphs without tensor cores
TEST(Gemm, HalfAndBfloat16MatmulsOfTheTensorCores) {
  struct Shape3 { int64_t m, k, n; };
  tg::CUDARenderer cuda("sm_90");
  for (DType dt : {dtypes::float16, dtypes::bfloat16})
    for (Shape3 s : {Shape3{64, 64, 64}, Shape3{128, 256, 32}, Shape3{60, 64, 56}})
      for (int64_t tc_opt : {0, 2}) {
        tg::Context ctx({{"TC_OPT", tc_opt}});
        Pair a = input({s.m, s.k}, dt, -1, 1, 11), b = input({s.k, s.n}, dt, -1, 1, 12);
        at::Tensor want = at::matmul(a.a.to(at::kDouble), b.a.to(at::kDouble));
        // tinygrad's matmul multiplies in the inputs' dtype (the CPU rounds each product to it; a tensor core keeps it
        // exact) and sums in float: k roundings of products below 1, about sqrt(k) of them in all, then the result's own
        double ulp = dt == dtypes::float16 ? 0x1p-11 : 0x1p-8, big = want.abs().max().item<double>();
        double tol = 4 * std::sqrt(double(s.k)) * ulp + 1e-6 * double(s.k) + 1e-5;
        std::string what = std::string(dt.name()) + " " + std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n) +
                           " TC_OPT=" + std::to_string(tc_opt);
        // what DEV=CUDA runs: the kernel on the tensor cores, where TC_OPT allows (60 x 56 is padded only under 2)
        std::string cuda_src;
        tg::UOp sched = tg::schedule_linear({a.t.matmul(b.t, false, dtypes::float32)});
        for (auto& c : sched.src())
          if (c.src(0).op() == tg::Ops::SINK) cuda_src += tg::to_program(c.src(0), cuda)->kernel.src;
        EXPECT_EQ(cuda_src.find("mma.sync.aligned.m16n8k16") != std::string::npos, s.m % 16 == 0 || tc_opt == 2) << what;
        at::Tensor f = to_torch(a.t.matmul(b.t, false, dtypes::float32));
        EXPECT_EQ(f.scalar_type(), at::kFloat) << what;
        EXPECT_LE((f.to(at::kDouble) - want).abs().max().item<double>(), tol) << what;
        at::Tensor h = to_torch(a.t.matmul(b.t));
        EXPECT_EQ(h.scalar_type(), a.a.scalar_type()) << what;
        EXPECT_LE((h.to(at::kDouble) - want).abs().max().item<double>(), big * ulp + tol) << what;
      }
}
