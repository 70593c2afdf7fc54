// BEAM search (tinygrad's codegen/opt/search.py): the candidates one opt away, a search that keeps the kernel's
// results (checked against plain loops), and its result read back from the disk cache without compiling.
#include <gtest/gtest.h>

#include <cstdlib>

#include "codegen/opt/postrange.h"
#include "codegen/opt/search.h"
#include "runtime/clang.h"
#include "runtime/rt_test_util.h"
#include "tensor/tensor_impl.h"
#include "tg/context.h"
#include "util/diskcache.h"
#include "util/process.h"

using namespace tg;

namespace {

// the one kernel of a (m x k) @ (k x n) matmul, before opts
UOp matmul_ast(int64_t m, int64_t k, int64_t n, const std::string& device = "") {
  UOp linear = schedule_linear({Tensor::empty({m, k}, std::nullopt, device).matmul(Tensor::empty({k, n}, std::nullopt, device))});
  for (auto& c : linear.src())
    if (c.src(0).op() == Ops::SINK) return c.src(0);
  throw Error("no kernel");
}

// the kernel of t with a reduce (the first), before opts
UOp reduce_ast(const Tensor& t) {
  UOp linear = schedule_linear({t});
  for (auto& c : linear.src())
    if (c.src(0).op() == Ops::SINK && c.src(0).op_in_backward_slice_with_self(Ops::REDUCE)) return c.src(0);
  throw Error("no reduce kernel");
}

// 4 threads, and every kernel searched (BEAM_MIN_US=0: these small ones are otherwise kept as the heuristic makes them)
struct Threads {
  Context ctx{{{"NUM_CPU_THREADS", 4}, {"BEAM_MIN_US", 0}}};
};

// the 24x20 @ 20x36 matmul under BEAM=2, checked against plain loops
void expect_beam_matmul() {
  std::vector<float> a(24 * 20), b(20 * 36);
  for (size_t i = 0; i < a.size(); i++) a[i] = float(int(i * 7 % 13) - 6) * 0.25f;
  for (size_t i = 0; i < b.size(); i++) b[i] = float(int(i * 5 % 11) - 5) * 0.5f;
  Context beam({{"BEAM", 2}});
  std::vector<float> got = Tensor::from_vector(a, {24, 20}).matmul(Tensor::from_vector(b, {20, 36})).to_vector<float>();
  ASSERT_EQ(got.size(), size_t(24 * 36));
  for (int i = 0; i < 24; i++)
    for (int j = 0; j < 36; j++) {
      float want = 0;
      for (int k = 0; k < 20; k++) want += a[size_t(i * 20 + k)] * b[size_t(k * 36 + j)];
      EXPECT_FLOAT_EQ(got[size_t(i * 36 + j)], want) << i << "," << j;
    }
}

}  // namespace

TEST(Search, KernelActionsAreOneOptAway) {
  Threads threads;
  Scheduler s(matmul_ast(64, 32, 48), caps_of(ClangRenderer()));
  auto acted = get_kernel_actions(s, true, 8);
  ASSERT_TRUE(acted.count(0));
  EXPECT_TRUE(acted.at(0).applied_opts.empty());
  std::set<OptOps> kinds;
  for (auto& [i, k] : acted) {
    if (i == 0) continue;
    ASSERT_EQ(k.applied_opts.size(), 1u);
    kinds.insert(k.applied_opts[0].op);
    EXPECT_LE(k.upcast_size(), 8) << k.applied_opts[0].str();
  }
  // the CPU has no local memory: upcasts, unrolls, threads and swaps of the output loops (ours: tinygrad swaps GLOBALs)
  EXPECT_EQ(kinds, (std::set<OptOps>{OptOps::UPCAST, OptOps::UNROLL, OptOps::THREAD, OptOps::SWAP}));
  // 64 = 4 * 16: UPCAST 4 of axis 0 is there, UPCAST 0 (the whole 64) is over the limit of 16
  bool up4 = false;
  for (auto& [i, k] : acted) up4 |= i && k.applied_opts[0] == Opt{OptOps::UPCAST, 0, Arg(int64_t(4))};
  EXPECT_TRUE(up4);
  for (auto& [i, k] : get_kernel_actions(acted.begin()->second, false)) EXPECT_EQ(k.applied_opts.size(), 1u);
}

TEST(Search, BeamSearchKeepsResultsAndIsCached) {
  Threads threads;
  UOp ast = matmul_ast(24, 20, 36);
  Scheduler s(ast, caps_of(ClangRenderer()));
  Scheduler found = [&] {
    Context fresh({{"IGNORE_BEAM_CACHE", 1}});
    return beam_search(s, ClangRenderer(), 2);
  }();
  EXPECT_FALSE(found.applied_opts.empty());
  uint64_t compiles = clang_invocations();
  Scheduler again = beam_search(s, ClangRenderer(), 2);
  EXPECT_EQ(clang_invocations(), compiles) << "the second search should come from the disk cache";
  ASSERT_EQ(again.applied_opts.size(), found.applied_opts.size());
  for (size_t i = 0; i < found.applied_opts.size(); i++) EXPECT_EQ(again.applied_opts[i], found.applied_opts[i]);

  expect_beam_matmul();  // the kernel BEAM picked computes the matmul
}

// After the search, the heuristic's kernel is timed beside the search's pick; where it wins, the cache says so and a
// later search replays hand_coded_optimizations (which shapes kernels past BEAM's opts: matvec lanes' split reduce)
// without compiling anything
TEST(Search, HandCodedWinnerReplaysFromTheCache) {
  Threads threads;
  TempDir dir;
  test::ScopedEnv db("CACHEDB", (dir.path() / "cache.db").string());
  Tensor w = Tensor::empty({256, 768}, dtypes::float16);
  UOp linear = schedule_linear({w.cast(dtypes::float32).matmul(Tensor::empty({768}))});
  UOp ast;
  for (auto& c : linear.src()) if (c.src(0).op() == Ops::SINK) ast = c.src(0);
  ASSERT_TRUE(ast);
  Scheduler s(ast, caps_of(ClangRenderer()));
  diskcache_put("beam_search", beam_cache_key(s, ClangRenderer(), 2, "CPU"), kBeamHandCoded);
  uint64_t compiles = clang_invocations();
  Scheduler r = beam_search(s, ClangRenderer(), 2), hc = hand_coded_optimizations(s);
  EXPECT_EQ(clang_invocations(), compiles);
  ASSERT_EQ(r.applied_opts.size(), hc.applied_opts.size());
  for (size_t i = 0; i < r.applied_opts.size(); i++) EXPECT_EQ(r.applied_opts[i], hc.applied_opts[i]);
  EXPECT_EQ(r.ast.key(), hc.ast.key()) << "the heuristic's AST (its split reduce), not only its opts";
}

// BEAM_MIN_US: a kernel the heuristic runs in under it is not searched: the heuristic's kernel is kept and cached after
// one compile (its own), where BEAM_MIN_US=0 searches the same kernel (a round of candidates compiled)
TEST(Search, KernelsUnderBeamMinUsKeepTheHeuristic) {
  Threads threads;
  TempDir dir;
  test::ScopedEnv db("CACHEDB", (dir.path() / "cache.db").string());
  Scheduler s(matmul_ast(24, 20, 36), caps_of(ClangRenderer())), hc = hand_coded_optimizations(s);
  auto search = [&](int64_t min_us) {
    Context c({{"BEAM_MIN_US", min_us}});
    uint64_t compiles = clang_invocations();
    Scheduler r = beam_search(s, ClangRenderer(), 2);
    return std::pair{r, clang_invocations() - compiles};
  };
  auto [kept, kept_compiles] = search(1000000000);  // 1000 s: every kernel is under it
  EXPECT_LE(kept_compiles, 1u);
  EXPECT_EQ(kept.ast.key(), hc.ast.key());
  ASSERT_EQ(kept.applied_opts.size(), hc.applied_opts.size());
  for (size_t i = 0; i < kept.applied_opts.size(); i++) EXPECT_EQ(kept.applied_opts[i], hc.applied_opts[i]);
  {
    Context c({{"BEAM_MIN_US", 1000000000}});
    EXPECT_EQ(diskcache_get("beam_search", beam_cache_key(s, ClangRenderer(), 2, "CPU")), std::optional<std::string>(kBeamHandCoded));
  }
  EXPECT_GT(search(0).second, 1u) << "BEAM_MIN_US=0 searches (its cache entry is another key)";
  Context kept_again({{"BEAM_MIN_US", 1000000000}});
  expect_beam_matmul();  // the kept kernel computes the matmul
}

TEST(Search, ResultIsCachedPerDevice) {
  Threads threads;
  TempDir dir;  // a fresh disk cache: nothing searched before
  test::ScopedEnv db("CACHEDB", (dir.path() / "cache.db").string());
  // a search stores its result (and its candidates' binaries); a cache hit stores nothing and runs no compiler
  auto search = [](const std::string& device) {
    uint64_t puts = diskcache_stats().puts, compiles = clang_invocations();
    Scheduler s(matmul_ast(24, 20, 36, device), caps_of(ClangRenderer()));
    Scheduler r = beam_search(s, ClangRenderer(), 2);
    EXPECT_FALSE(r.applied_opts.empty()) << device;
    return std::pair{diskcache_stats().puts - puts, clang_invocations() - compiles};
  };
  auto [puts0, compiles0] = search("CPU");
  EXPECT_GT(puts0, 0u);
  EXPECT_GT(compiles0, 0u);
  EXPECT_EQ(search("CPU"), (std::pair<uint64_t, uint64_t>{0, 0})) << "the second search should come from the disk cache";
  EXPECT_GT(search("CPU:1").first, 0u) << "another device searches for itself";
  EXPECT_EQ(search("CPU:1"), (std::pair<uint64_t, uint64_t>{0, 0}));
  {
    Context again({{"IGNORE_BEAM_CACHE", 1}});
    EXPECT_GT(search("CPU").first, 0u);
  }
}

TEST(Search, LocalsAndUopsWithinTheirLimits) {
  // tinygrad's BEAM_LOCAL_MAX: work-groups of more threads are no candidates (a GPU renderer: the CPU has no locals)
  Scheduler s(matmul_ast(64, 32, 48), caps_of(OpenCLRenderer()));
  auto has_local32 = [](const std::map<int, Scheduler>& acted) {
    for (auto& [i, k] : acted) if (i && k.applied_opts[0] == Opt{OptOps::LOCAL, 0, Arg(int64_t(32))}) return true;
    return false;
  };
  EXPECT_TRUE(has_local32(get_kernel_actions(s)));
  {
    Context small({{"BEAM_LOCAL_MAX", 16}});
    auto acted = get_kernel_actions(s);
    EXPECT_FALSE(has_local32(acted));
    bool local16 = false;
    for (auto& [i, k] : acted) local16 |= i && k.applied_opts[0] == Opt{OptOps::LOCAL, 0, Arg(int64_t(16))};
    EXPECT_TRUE(local16);
  }
  // BEAM_UOPS_MAX: a candidate of that many uops or more is not compiled
  Threads threads;
  Scheduler c(matmul_ast(24, 20, 36), caps_of(ClangRenderer()));
  std::vector<Scheduler> cands;
  for (auto& [i, k] : get_kernel_actions(c, false)) cands.push_back(k);
  std::set<std::string> seen;
  auto all = compile_candidates(get_device("CPU"), ClangRenderer(), cands, seen, false);
  ASSERT_GT(all.size(), 2u);
  size_t most = 0;
  for (auto& x : all) most = std::max(most, x.spec->uops);
  Context limit({{"BEAM_UOPS_MAX", int64_t(most)}});
  std::set<std::string> seen2;
  auto fewer = compile_candidates(get_device("CPU"), ClangRenderer(), cands, seen2, false);
  EXPECT_LT(fewer.size(), all.size());
  for (auto& x : fewer) EXPECT_LT(x.spec->uops, most);
}

TEST(Search, BigKernelsGetThreadsAfterTheSearch) {
  // a search timed on a busy machine can leave a big kernel on one core: apply_opts adds the heuristic's THREAD then
  Threads threads;
  Scheduler big(matmul_ast(256, 256, 64), caps_of(ClangRenderer()));
  big.apply_opt(Opt{OptOps::UPCAST, 1, Arg(int64_t(4))});
  apply_threads(big);
  ASSERT_EQ(big.applied_opts.size(), 2u);
  EXPECT_EQ(big.applied_opts[1], (Opt{OptOps::THREAD, 0, Arg(int64_t(4))}));
  apply_threads(big);
  EXPECT_EQ(big.applied_opts.size(), 2u) << "already threaded";
  Scheduler small(matmul_ast(8, 8, 8), caps_of(ClangRenderer()));
  apply_threads(small);
  EXPECT_TRUE(small.applied_opts.empty()) << "under 128K ops per thread";
}

TEST(Search, CandidatesRenderAsTheScheduleLowersThem) {
  // the search renders a candidate from its AST with the opts applied (tagged: nothing left to optimize), the schedule
  // lowers the kernel's AST, applying them: one source either way. A padded convolution's window clipped to the input
  // (pm_clip_reduce_gates) only in the second had the search time the training step's convolutions 1.7x slow.
  // NOOPT=1: no opts on either side
  Context noopt({{"NOOPT", 1}});
  ClangRenderer ren;
  ASSERT_TRUE(ren.simd_vectors()) << "pm_clip_reduce_gates runs on SIMD kernels";
  UOp ast = reduce_ast(Tensor::empty({2, 4, 12, 12}).conv2d(Tensor::empty({8, 4, 5, 5}), std::nullopt, 1, 1, 1, 2));
  auto lowered = to_program(ast, ren);
  Scheduler k(ast, caps_of(ren));
  k.convert_loop_to_global();
  auto candidate = to_program(k.get_optimized_ast(), ren);
  EXPECT_EQ(candidate->kernel.src, lowered->kernel.src);
  // the window is clipped: no gated load of the input left
  EXPECT_EQ(lowered->kernel.src.find("?*("), std::string::npos) << lowered->kernel.src;
}
