// The settings snapshot (util/settings.h) and the caches keyed by it: a knob changed through tg::Context between two
// realizes of the same graph must give the program that knob asks for (rebuilt where it changes the kernel, reused
// where it does not), and going back to the earlier value must reuse the earlier program.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "engine/realize.h"
#include "runtime/program_cache.h"
#include "rt_test_util.h"
#include "tg/context.h"
#include "tg/tensor.h"
#include "util/diskcache.h"
#include "util/process.h"
#include "util/settings.h"

using namespace tg;
using tg::test::ScopedEnv;

namespace {

// ***** 1. the snapshot *****

const char* const kernel_knobs[] = {"BEAM", "NOOPT", "SIMD", "THREADS", "NUM_CPU_THREADS", "TRANSCENDENTAL", "DISABLE_FAST_IDIV",
                                    "NOLOCALS", "BEAM_PADTO", "BEAM_UPCAST_MAX", "BEAM_LOCAL_MAX", "BEAM_UOPS_MAX", "BEAM_TEST_SIZE", "BEAM_MIN_PROGRESS_NS", "MAX_KERNEL_BUFFERS",
                                    "SPLIT_REDUCEOP", "REDUCEOP_SPLIT_THRESHOLD", "REDUCEOP_SPLIT_SIZE", "NO_MEMORY_PLANNER",
                                    "GEMM_BLOCK_BYTES", "GEMM_CHUNK_BYTES"};
const char* const other_knobs[] = {"DEBUG", "DEBUG_RANGEIFY", "BEAM_DEBUG", "TRACK_REWRITES", "CACHELEVEL", "IGNORE_BEAM_CACHE",
                                   "JIT", "SCACHE", "LRU", "CONST_LR", "FUSE_OPTIM", "TIERED_COMPILE", "COMPILE_BATCH", "QUANT_DOT", "WINO"};

TEST(Settings, ContextMakesANewSnapshotAndLeavingRestoresIt) {
  const Settings& before = settings();
  EXPECT_EQ(&settings(), &before);  // nothing changed: the same snapshot
  {
    Context c({{"BEAM", before.BEAM + 3}});
    EXPECT_EQ(settings().BEAM, before.BEAM + 3);
    EXPECT_NE(settings().key(), before.key());
    {
      Context inner({{"BEAM", 7}, {"DEBUG", before.DEBUG + 1}});
      EXPECT_EQ(settings().BEAM, 7);
      EXPECT_EQ(settings().DEBUG, before.DEBUG + 1);
    }
    EXPECT_EQ(settings().BEAM, before.BEAM + 3);
  }
  EXPECT_EQ(&settings(), &before);  // snapshots are kept and shared: the old one comes back
  EXPECT_EQ(before.BEAM, settings().BEAM);  // and was never changed under its holder
}

TEST(Settings, KeyHasExactlyTheKnobsThatChangeKernels) {
  const Settings& base = settings();
  for (const char* k : kernel_knobs) {
    Context c({{k, 12345}});
    EXPECT_NE(settings().key(), base.key()) << k;
  }
  for (const char* k : other_knobs) {
    Context c({{k, 12345}});
    EXPECT_NE(&settings(), &base) << k;  // a new snapshot ...
    EXPECT_EQ(settings().key(), base.key()) << k;  // ... with the same key
  }
  uint32_t noopt;
  {
    Context a({{"NOOPT", 1}});
    noopt = settings().key();
    Context d({{"DEBUG", 3}});
    EXPECT_EQ(settings().key(), noopt);
  }
  Context b({{"NOOPT", 0}}), c({{"NOOPT", 1}});  // the same values through another stack of Contexts: the same key
  EXPECT_EQ(settings().key(), noopt);
}

TEST(Settings, OtherContextNamesDoNotRereadTheEnvironment) {
  const Settings& base = settings();
  {
    // the environment changed behind the library's back: a Context of a user name (TRAINING) keeps the snapshot ...
    ScopedEnv noisy("DEBUG_RANGEIFY", std::nullopt);
    const Settings& now = settings();
    setenv("DEBUG_RANGEIFY", "5", 1);
    {
      Context t({{"TRAINING", 1}});
      EXPECT_TRUE(training());
      EXPECT_EQ(&settings(), &now);
      EXPECT_EQ(settings().DEBUG_RANGEIFY, 0);
    }
    // ... and one that names a knob reads everything again
    Context d({{"DEBUG", now.DEBUG}});
    EXPECT_EQ(settings().DEBUG_RANGEIFY, 5);
  }
  EXPECT_EQ(&settings(), &base);
}

TEST(Settings, BadValueNamesTheVariable) {
  {
    ScopedEnv bad("REDUCEOP_SPLIT_SIZE", "twenty");
    try {
      settings();
      ADD_FAILURE() << "a non-integer setting was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("REDUCEOP_SPLIT_SIZE"), std::string::npos) << e.what();
    }
    Context fix({{"REDUCEOP_SPLIT_SIZE", 22}});  // a Context's value wins over the bad environment
    EXPECT_EQ(settings().REDUCEOP_SPLIT_SIZE, 22);
  }
  EXPECT_NO_THROW(settings());
}

TEST(Settings, StringsComeFromTheEnvironment) {
  ScopedEnv dev("DEV", "null");
  ScopedEnv db("CACHEDB", "/tmp/some/cache.db");
  EXPECT_EQ(settings().DEV, "null");
  EXPECT_EQ(default_device(), "NULL");
  EXPECT_EQ(settings().CACHEDB, "/tmp/some/cache.db");
  EXPECT_EQ(cachedb_path(), "/tmp/some/cache.db");
}

// ***** 2. the programs a realize runs under each knob *****

struct Launches {
  std::vector<RecordedLaunch> all;
  std::vector<std::shared_ptr<Program>> programs() const {
    std::vector<std::shared_ptr<Program>> r;
    for (auto& l : all) if (l.prg) r.push_back(l.prg);
    return r;
  }
  std::string sources() const {
    std::string s;
    for (auto& l : all) if (l.spec) s += l.spec->kernel.src;
    return s;
  }
  size_t kernels() const { return programs().size(); }
};

// realizes a fresh copy of the graph fn builds, recording every launch
template <class F> Launches run(F fn, std::vector<float>* values = nullptr) {
  Launches l;
  set_launch_recorder(&l.all);
  try {
    Tensor out = fn().contiguous();
    out.realize();
    set_launch_recorder(nullptr);
    if (values) *values = out.cast(dtypes::float32).template to_vector<float>();
  } catch (...) {
    set_launch_recorder(nullptr);
    throw;
  }
  return l;
}

Tensor input(int64_t n, float scale = 1.f) {
  auto v = std::vector<float>(size_t(n));
  for (size_t i = 0; i < v.size(); i++) v[i] = float(i % 97) * scale;
  return Tensor::from_vector(v, {n});
}

// the knob's values a and b must give different programs (other source, rebuilt and loaded anew), each value the
// same program again when realized again, and the same results
template <class F> void expect_knob_changes_program(const char* knob, int64_t a, int64_t b, F fn, float tol = 1e-5f) {
  std::vector<float> va, vb, va2;
  Launches la, lb, la2;
  {
    Context c({{knob, a}});
    la = run(fn, &va);
  }
  {
    Context c({{knob, b}});
    lb = run(fn, &vb);
  }
  {
    Context c({{knob, a}});
    la2 = run(fn, &va2);
  }
  EXPECT_NE(la.sources(), lb.sources()) << knob << "=" << a << " and " << b << " rendered the same kernels";
  for (auto& p : lb.programs())
    for (auto& q : la.programs()) EXPECT_NE(p, q) << knob << "=" << b << " ran a program built for " << a;
  EXPECT_EQ(la2.programs(), la.programs()) << knob << "=" << a << " again did not reuse its programs";
  EXPECT_EQ(la2.sources(), la.sources());
  ASSERT_EQ(va.size(), vb.size());
  for (size_t i = 0; i < va.size(); i++) EXPECT_NEAR(va[i], vb[i], tol * std::max(1.f, std::fabs(va[i]))) << knob << " at " << i;
  EXPECT_EQ(va, va2);
}

// a knob that changes no kernel: the second realize runs the very programs of the first
template <class F> void expect_knob_reuses_program(const char* knob, int64_t a, int64_t b, F fn) {
  Launches la, lb;
  {
    Context c({{knob, a}});
    la = run(fn);
  }
  {
    Context c({{knob, b}});
    lb = run(fn);
  }
  EXPECT_EQ(lb.programs(), la.programs()) << knob << " rebuilt programs";
}

// every knob below is tested at fixed values of the others that matter to it
struct Base {
  Context c{{"NUM_CPU_THREADS", 4}, {"BEAM", 0}, {"NOOPT", 0}, {"SIMD", 1}, {"THREADS", 1}};
};

Tensor big_sum() { return (input(1 << 20) * 2.f).sum(); }
Tensor matmul() { return input(64 * 64, 0.01f).reshape({64, 64}).matmul(input(64 * 64, 0.02f).reshape({64, 64})); }

TEST(SettingsPrograms, Threads) {
  Base base;
  expect_knob_changes_program("THREADS", 1, 0, big_sum, 1e-3f);
}

TEST(SettingsPrograms, NumCpuThreads) {
  Base base;
  expect_knob_changes_program("NUM_CPU_THREADS", 4, 2, big_sum, 1e-3f);
}

TEST(SettingsPrograms, Transcendental) {
  Base base;
  // clang has sqrt: TRANSCENDENTAL=2 decomposes it anyway
  expect_knob_changes_program("TRANSCENDENTAL", 1, 2, [] { return (input(256) + 1.f).sqrt(); }, 1e-4f);
}

TEST(SettingsPrograms, DisableFastIdiv) {
  Base base;
  auto v = std::vector<uint8_t>(4096);
  for (size_t i = 0; i < v.size(); i++) v[i] = uint8_t(i * 37);
  // the multiply-shift form needs a dividend of known, non-negative range
  expect_knob_changes_program("DISABLE_FAST_IDIV", 1, 0, [&] { return Tensor::from_vector(v, {4096}).cast(dtypes::int32).idiv(Tensor(7)); });
}

TEST(SettingsPrograms, Noopt) {
  Base base;
  expect_knob_changes_program("NOOPT", 0, 1, matmul, 1e-4f);
}

TEST(SettingsPrograms, Simd) {
  Base base;
  expect_knob_changes_program("SIMD", 1, 0, matmul, 1e-4f);
}

TEST(SettingsPrograms, Beam) {
  Base base;
  TempDir dir;  // a fresh disk cache: the searches run
  ScopedEnv db("CACHEDB", (dir.path() / "cache.db").string());
  Context two({{"NUM_CPU_THREADS", 2}});
  auto tiny = [] { return input(16) * 3.f + 1.f; };
  Launches l0, l1, l2, l1again;
  {
    Context c({{"BEAM", 0}});
    l0 = run(tiny);
  }
  {
    Context c({{"BEAM", 1}});
    l1 = run(tiny);
  }
  uint64_t puts = diskcache_stats().puts;
  {
    Context c({{"BEAM", 2}});
    l2 = run(tiny);
  }
  EXPECT_GT(diskcache_stats().puts, puts);  // BEAM=2 searched (and stored its result) instead of reusing BEAM=1's program
  puts = diskcache_stats().puts;
  {
    Context c({{"BEAM", 1}});
    l1again = run(tiny);
  }
  EXPECT_EQ(diskcache_stats().puts, puts);  // nothing searched or compiled
  EXPECT_EQ(l1again.programs(), l1.programs());
  for (auto& p : l1.programs())
    for (auto& q : l0.programs()) EXPECT_NE(p, q);
  for (auto& p : l2.programs())
    for (auto& q : l1.programs()) EXPECT_NE(p, q);
}

TEST(SettingsPrograms, SplitReduceop) {
  Base base;
  Launches split, whole;
  {
    Context c({{"SPLIT_REDUCEOP", 1}});
    split = run(big_sum);
  }
  {
    Context c({{"SPLIT_REDUCEOP", 0}});
    whole = run(big_sum);
  }
  EXPECT_GT(split.kernels(), whole.kernels());
  {
    Context c({{"REDUCEOP_SPLIT_THRESHOLD", int64_t(1) << 30}});
    EXPECT_EQ(run(big_sum).kernels(), whole.kernels());
  }
  {
    Context c({{"REDUCEOP_SPLIT_SIZE", 5}});  // at most 2**5 parts instead of 256
    EXPECT_NE(run(big_sum).sources(), split.sources());
  }
  EXPECT_EQ(run(big_sum).programs(), split.programs());
}

TEST(SettingsPrograms, MaxKernelBuffers) {
  Base base;
  auto many = [] { return input(64) + input(64, 2.f) + input(64, 3.f) + input(64, 4.f) + input(64, 5.f); };
  Launches dflt = run(many), few;
  {
    Context c({{"MAX_KERNEL_BUFFERS", 3}});
    few = run(many);
  }
  EXPECT_GT(few.kernels(), dflt.kernels());
}

TEST(SettingsPrograms, NoMemoryPlanner) {
  Base base;
  // the split reduces' partial sums are internal buffers: the third one can live where the first was
  auto chain = [] { return (input(1 << 18, 3.f) * (input(1 << 18, 2.f) * input(1 << 18).sum()).sum()).sum(); };
  auto buffers = [](const Launches& l) {
    std::set<void*> s;
    for (auto& r : l.all) for (auto& b : r.bufs) s.insert(b->ptr());
    return s.size();
  };
  Launches planned = run(chain), unplanned;
  {
    Context c({{"NO_MEMORY_PLANNER", 1}});
    unplanned = run(chain);
  }
  EXPECT_EQ(planned.sources(), unplanned.sources());
  EXPECT_LT(buffers(planned), buffers(unplanned));
}

// TIERED_COMPILE changes no rendered kernel, only how a light one is first built: the values its quick (-O0) build
// gives, its upgraded (-O2) build and tiering off are the same bits, and all match a double-precision oracle
TEST(SettingsPrograms, TieredCompile) {
  Base base;
  TempDir dir;
  const int64_t m = 8, k = 24, n = 16;
  auto graph = [&] {
    Tensor h = input(m * k, 0.01f).reshape({m, k}).matmul(input(k * n, 0.02f).reshape({k, n}));
    return h.softmax(1) + h.sin() * 0.5f + (h.abs() + 1.f).log().sqrt();
  };
  std::vector<float> off, quick, upgraded;
  Launches loff, lquick, lupgraded;
  {
    ScopedEnv db("CACHEDB", (dir.path() / "off.db").string());
    Context c({{"TIERED_COMPILE", 0}});
    loff = run(graph, &off);
  }
  {
    // a kernel knob that changes none of these kernels: the engine lowers and loads them again, from an empty cache
    ScopedEnv db("CACHEDB", (dir.path() / "on.db").string());
    Context c({{"TIERED_COMPILE", 1}, {"BEAM_PADTO", 1}});
    uint64_t upgrades = tiered_upgrades();
    lquick = run(graph, &quick);
    wait_tiered_compiles();
    EXPECT_GE(tiered_upgrades(), upgrades + 2);  // the schedule's kernels are light: quick first, then upgraded
    lupgraded = run(graph, &upgraded);
  }
  EXPECT_EQ(lquick.sources(), loff.sources());
  EXPECT_EQ(lupgraded.programs(), lquick.programs());  // upgraded in place: the same programs
  EXPECT_EQ(quick, off);
  EXPECT_EQ(upgraded, off);
  std::vector<double> h(size_t(m * n));
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++)
      for (int64_t t = 0; t < k; t++) h[size_t(i * n + j)] += double((i * k + t) % 97) * 0.01 * double((t * n + j) % 97) * 0.02;
  ASSERT_EQ(off.size(), h.size());
  for (int64_t i = 0; i < m; i++) {
    double mx = -1e300, sum = 0;
    for (int64_t j = 0; j < n; j++) mx = std::max(mx, h[size_t(i * n + j)]);
    for (int64_t j = 0; j < n; j++) sum += std::exp(h[size_t(i * n + j)] - mx);
    for (int64_t j = 0; j < n; j++) {
      double v = h[size_t(i * n + j)], want = std::exp(v - mx) / sum + std::sin(v) * 0.5 + std::sqrt(std::log(std::fabs(v) + 1));
      EXPECT_NEAR(off[size_t(i * n + j)], want, 1e-4 * std::max(1.0, std::fabs(want))) << i << "," << j;
    }
  }
}

TEST(SettingsPrograms, DebugAndCacheLevelReuse) {
  Base base;
  testing::internal::CaptureStdout();
  expect_knob_reuses_program("DEBUG", 0, 2, matmul);
  testing::internal::GetCapturedStdout();
  expect_knob_reuses_program("CACHELEVEL", 2, 0, matmul);
  expect_knob_reuses_program("JIT", 1, 0, big_sum);
}

}  // namespace
