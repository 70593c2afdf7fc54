#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "rt_test_util.h"
#include "runtime/buffer.h"
#include "runtime/clang.h"
#include "runtime/program_cache.h"
#include "tg/error.h"
#include "util/diskcache.h"
#include "util/process.h"

using namespace tg;
using tg::test::ScopedEnv;

namespace {

// a kernel unique to this test run, so no earlier cache can hold it; writes `tag` into out[0]
std::string kernel_src(int tag) {
  static const std::string nonce = std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  return "// " + nonce + "\nvoid k(void* const* b, const long long* v, int c) { *(int*)b[0] = " + std::to_string(tag) + "; }\n";
}

int run_it(const std::string& so) {
  auto p = get_device("CPU").load("k", so);
  Buffer out("CPU", 1, dtypes::int32);
  void* bufs[] = {out.ptr()};
  p->launch(bufs, {});
  int r;
  out.copyout(&r, 4);
  return r;
}

}  // namespace

TEST(ProgramCache, SecondCompileIsAHit) {
  TempDir dir;
  ScopedEnv db("CACHEDB", (dir.path() / "sub" / "cache.db").string());  // the missing folder is created
  ScopedEnv lvl("CACHELEVEL", std::nullopt);
  Device& d = get_device("CPU");
  uint64_t before = clang_invocations();
  std::string a = d.compile_cached(kernel_src(11));
  EXPECT_EQ(clang_invocations(), before + 1);
  std::string b = d.compile_cached(kernel_src(11));
  EXPECT_EQ(clang_invocations(), before + 1);
  EXPECT_EQ(a, b);
  EXPECT_EQ(run_it(b), 11);
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "sub" / "cache.db"));
  d.compile_cached(kernel_src(12));  // other source, other key
  EXPECT_EQ(clang_invocations(), before + 2);
  EXPECT_NE(program_cache_key("clang 14 -O2", "x"), program_cache_key("clang 14 -O3", "x"));
}

// a stored binary that does not hold the kernel (a damaged file, a broken build's entry) is compiled afresh and replaced
TEST(ProgramCache, ABadStoredBinaryIsReplaced) {
  TempDir dir;
  ScopedEnv db("CACHEDB", (dir.path() / "cache.db").string());
  ScopedEnv lvl("CACHELEVEL", std::nullopt);
  Device& d = get_device("CPU");
  std::string src = kernel_src(41), key = program_cache_key(d.compiler_key(), src);
  diskcache_put("compile", key, d.compile("void not_k(void) {}\n"));  // a valid library without the kernel `k`
  try {
    d.load("k", d.compile_cached(src));
    ADD_FAILURE() << "loaded a kernel the binary does not hold";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no kernel named 'k'"), std::string::npos) << e.what();
  }
  uint64_t before = clang_invocations();
  auto p = d.load_cached("k", src);
  EXPECT_EQ(clang_invocations(), before + 1);
  EXPECT_EQ(run_it(*diskcache_get("compile", key)), 41);
  d.load_cached("k", src);
  EXPECT_EQ(clang_invocations(), before + 1);
}

TEST(ProgramCache, CacheLevelZeroBypasses) {
  TempDir dir;
  ScopedEnv db("CACHEDB", (dir.path() / "cache.db").string());
  ScopedEnv lvl("CACHELEVEL", "0");
  Device& d = get_device("CPU");
  uint64_t before = clang_invocations();
  d.compile_cached(kernel_src(21));
  EXPECT_EQ(run_it(d.compile_cached(kernel_src(21))), 21);
  EXPECT_EQ(clang_invocations(), before + 2);
  EXPECT_FALSE(diskcache_get("compile", "anything"));
}

TEST(ProgramCache, CorruptDbFallsBackToCompiling) {
  TempDir dir;
  auto path = dir.path() / "cache.db";
  {
    std::ofstream f(path, std::ios::binary);
    for (int i = 0; i < 500; i++) f << "this is not a sqlite database at all ";
  }
  ScopedEnv db("CACHEDB", path.string());
  ScopedEnv lvl("CACHELEVEL", std::nullopt);
  Device& d = get_device("CPU");
  uint64_t before = clang_invocations();
  EXPECT_EQ(run_it(d.compile_cached(kernel_src(31))), 31);
  EXPECT_EQ(run_it(d.compile_cached(kernel_src(31))), 31);
  EXPECT_EQ(clang_invocations(), before + 2);
  EXPECT_GT(diskcache_stats().errors, 0u);
}

TEST(ProgramCache, UnwritableLocationFallsBack) {
  ScopedEnv db("CACHEDB", "/proc/no/such/dir/cache.db");
  diskcache_put("t", "k", "v");
  EXPECT_FALSE(diskcache_get("t", "k"));
}

TEST(ProgramCache, NullDeviceIsNotCached) {
  TempDir dir;
  ScopedEnv db("CACHEDB", (dir.path() / "cache.db").string());
  auto before = diskcache_stats();
  EXPECT_EQ(get_device("NULL").compile_cached("anything"), "");
  EXPECT_EQ(diskcache_stats().puts, before.puts);
}

TEST(DiskCache, RoundTripBinaryValues) {
  TempDir dir;
  ScopedEnv db("CACHEDB", (dir.path() / "cache.db").string());
  std::string val("a\0b\xff", 4);
  diskcache_put("blobs", "key1", val);
  EXPECT_EQ(diskcache_get("blobs", "key1"), val);
  EXPECT_FALSE(diskcache_get("blobs", "key2"));
  EXPECT_FALSE(diskcache_get("no_table", "key1"));
  diskcache_put("blobs", "key1", "new");
  EXPECT_EQ(diskcache_get("blobs", "key1"), "new");
}

TEST(DiskCache, DefaultPath) {
  ScopedEnv db("CACHEDB", std::nullopt);
  ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
  ScopedEnv home("HOME", "/home/someone");
  EXPECT_EQ(cachedb_path(), "/home/someone/.cache/tinygrad.cpp/cache.db");
}

namespace {

// kernel `k` writing `tag`, as compile_batch sees it (its one global name is `k`)
KernelSource batch_src(int tag) { return {"k", kernel_src(tag), {"k"}}; }

int run_prg(Program& p) {
  Buffer out("CPU", 1, dtypes::int32);
  void* bufs[] = {out.ptr()};
  p.launch(bufs, {});
  int r;
  out.copyout(&r, 4);
  return r;
}

}  // namespace

// COMPILE_BATCH: kernels of the same name compile together (renamed), each runs its own code, and a second run
// reads every one back from the disk cache without running clang
TEST(ProgramCache, BatchCompileRunsEachKernelAndHitsOnSecondRun) {
  TempDir dir;
  ScopedEnv db("CACHEDB", (dir.path() / "cache.db").string());
  ScopedEnv lvl("CACHELEVEL", std::nullopt);
  ScopedEnv batch("COMPILE_BATCH", "64");
  Device& d = get_device("CPU");
  std::vector<KernelSource> ks{batch_src(101), batch_src(102), batch_src(103), batch_src(104)};
  uint64_t before = clang_invocations();
  auto progs = d.load_cached_batch(ks);
  uint64_t used = clang_invocations() - before;
  EXPECT_GE(used, 1u);
  EXPECT_LE(used, std::max(1u, std::thread::hardware_concurrency()));  // one invocation per batch, not per kernel
  for (size_t i = 0; i < ks.size(); i++) ASSERT_TRUE(progs[i]) << i;
  for (size_t i = 0; i < ks.size(); i++) EXPECT_EQ(run_prg(*progs[i]), 101 + int(i));
  before = clang_invocations();
  auto again = d.load_cached_batch(ks);
  EXPECT_EQ(clang_invocations(), before);
  for (size_t i = 0; i < ks.size(); i++) EXPECT_EQ(run_prg(*again[i]), 101 + int(i));
  // a single kernel's load_cached follows the batch entry too
  EXPECT_EQ(run_prg(*d.load_cached("k", ks[2].src)), 103);
  EXPECT_EQ(clang_invocations(), before);
}

// a source that does not compile fails its batch; the batch is compiled again kernel by kernel, so only it is lost
TEST(ProgramCache, BatchWithABadSourceKeepsTheGoodKernels) {
  TempDir dir;
  ScopedEnv db("CACHEDB", (dir.path() / "cache.db").string());
  ScopedEnv lvl("CACHELEVEL", std::nullopt);
  ScopedEnv batch("COMPILE_BATCH", "64");
  Device& d = get_device("CPU");
  std::vector<KernelSource> ks{batch_src(201), {"k", "void k(void* const* b, const long long* v, int c) { this is not C; }\n", {"k"}},
                               batch_src(203), batch_src(204), batch_src(205)};
  auto progs = d.load_cached_batch(ks);
  EXPECT_FALSE(progs[1]);
  for (size_t i : {0, 2, 3, 4}) {
    ASSERT_TRUE(progs[i]) << i;
    EXPECT_EQ(run_prg(*progs[i]), 201 + int(i));
  }
  try {
    d.load_cached("k", ks[1].src);
    ADD_FAILURE() << "a bad kernel loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("clang failed to compile a kernel"), std::string::npos) << e.what();
  }
  uint64_t before = clang_invocations();
  auto again = d.load_cached_batch({ks[0], ks[2], ks[3], ks[4]});  // the good ones were cached one by one
  EXPECT_EQ(clang_invocations(), before);
  EXPECT_EQ(run_prg(*again[3]), 205);
}

// load_cached_batch(n, next): kernels made one at a time (as run_linear lowers them); once the heavy misses made so
// far reach overlap_batch_bytes, a spare compile thread compiles them while the later ones are still being made. Each
// kernel is made once, in order; a slot whose kernel cannot be made stays empty; every other kernel runs its own code
TEST(ProgramCache, BatchCompileOverlapsMakingTheKernels) {
  Device& d = get_device("CPU");
  bool spare = d.compiles_in_parallel() && std::thread::hardware_concurrency() > 1;
  TempDir dir;
  ScopedEnv db("CACHEDB", (dir.path() / "cache.db").string()), lvl("CACHELEVEL", std::nullopt);
  // sources over the threshold on their own (a comment pads them; ops unknown: never light, so compiled -O2)
  auto big = [](int tag) {
    KernelSource k = batch_src(tag);
    k.src = "/*" + std::string(overlap_batch_bytes, ' ') + "*/\n" + k.src;
    return k;
  };
  std::vector<size_t> made;
  uint64_t before = clang_invocations();
  bool compiled_meanwhile = false;
  auto progs = d.load_cached_batch(5, [&](size_t i) -> std::optional<KernelSource> {
    made.push_back(i);
    if (i == 4) {  // the last one: has the first kernel's compile started on another thread by now?
      for (int w = 0; w < 1000 && clang_invocations() == before; w++) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      compiled_meanwhile = clang_invocations() > before;
    }
    if (i == 2) return std::nullopt;
    return big(600 + int(i));
  });
  EXPECT_EQ(made, (std::vector<size_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(compiled_meanwhile, spare);
  EXPECT_FALSE(progs[2]);
  for (size_t i : {0, 1, 3, 4}) {
    ASSERT_TRUE(progs[i]) << i;
    EXPECT_EQ(run_prg(*progs[i]), 600 + int(i));
  }
  // all stored: a second pass compiles nothing
  before = clang_invocations();
  auto again = d.load_cached_batch(5, [&](size_t i) { return i == 2 ? std::nullopt : std::optional<KernelSource>(big(600 + int(i))); });
  EXPECT_EQ(clang_invocations(), before);
  for (size_t i : {0, 1, 3, 4}) EXPECT_EQ(run_prg(*again[i]), 600 + int(i));
}

// COMPILE_BATCH=1: batches of one kernel, one clang invocation each
TEST(ProgramCache, CompileBatchOneCompilesEachKernelAlone) {
  TempDir dir;
  ScopedEnv db("CACHEDB", (dir.path() / "cache.db").string());
  ScopedEnv lvl("CACHELEVEL", std::nullopt);
  ScopedEnv batch("COMPILE_BATCH", "1");
  Device& d = get_device("CPU");
  uint64_t before = clang_invocations();
  auto progs = d.load_cached_batch({batch_src(301), batch_src(302), batch_src(303)});
  EXPECT_EQ(clang_invocations(), before + 3);
  for (int i = 0; i < 3; i++) EXPECT_EQ(run_prg(*progs[size_t(i)]), 301 + i);
}

// a batch is one translation unit: kernels that repeat a typedef share it; kernels that give one typedef name two
// types are units of their own. Either way one clang invocation per batch, and each kernel runs its own code
TEST(ProgramCache, BatchKernelsWithSameAndConflictingTypedefs) {
  TempDir dir;
  ScopedEnv db("CACHEDB", (dir.path() / "cache.db").string());
  ScopedEnv lvl("CACHELEVEL", std::nullopt);
  ScopedEnv batch("COMPILE_BATCH", "64");
  auto src = [](int lanes, int tag) {
    std::string t = "typedef int vec __attribute__((aligned(4),ext_vector_type(" + std::to_string(lanes) + ")));\n";
    return KernelSource{"k", t + kernel_src(tag) + "vec k_lanes(void) { vec x = {0}; return x; }\n", {"k", "k_lanes"}};
  };
  for (bool conflict : {false, true}) {
    int base = conflict ? 410 : 400;  // new sources each round: none is in the cache yet
    std::vector<KernelSource> ks{src(4, base), src(conflict ? 2 : 4, base + 1), src(4, base + 2), src(4, base + 3)};
    uint64_t before = clang_invocations();
    auto progs = get_device("CPU").load_cached_batch(ks);
    EXPECT_LE(clang_invocations() - before, std::max(1u, std::thread::hardware_concurrency())) << conflict;
    for (size_t i = 0; i < ks.size(); i++) {
      ASSERT_TRUE(progs[i]) << i;
      EXPECT_EQ(run_prg(*progs[i]), base + int(i)) << conflict;
    }
  }
}

// TIERED_COMPILE: the kernels load_cached_batch is told are light are compiled -O0 and run at once; a background
// thread compiles them again at -O2, swaps the code under the same programs and stores only the -O2 binary. Heavy
// kernels and kernels of unknown cost are compiled -O2 and stored at once
TEST(ProgramCache, TieredCompileUpgradesLightKernelsAndStoresOnlyOptimized) {
  TempDir dir;
  ScopedEnv db("CACHEDB", (dir.path() / "cache.db").string());
  ScopedEnv lvl("CACHELEVEL", std::nullopt);
  ScopedEnv batch("COMPILE_BATCH", "64");
  ScopedEnv tier("TIERED_COMPILE", "1");
  Device& d = get_device("CPU");
  auto src = [](int tag, double ops) { return KernelSource{"k", kernel_src(tag), {"k"}, ops}; };
  std::vector<KernelSource> ks{src(501, 2000), src(502, 2000), src(503, 2000), src(504, 1e12), src(505, -1)};
  std::vector<std::string> keys;
  for (auto& k : ks) keys.push_back(program_cache_key(d.compiler_key(), k.src));
  uint64_t upgrades = tiered_upgrades();
  auto progs = d.load_cached_batch(ks);
  for (size_t i = 0; i < ks.size(); i++) {
    ASSERT_TRUE(progs[i]) << i;
    EXPECT_EQ(run_prg(*progs[i]), 501 + int(i));
  }
  // the heavy and the unknown kernel are stored already
  EXPECT_TRUE(diskcache_get("compile", keys[3]));
  EXPECT_TRUE(diskcache_get("compile", keys[4]));
  wait_tiered_compiles();
  EXPECT_EQ(tiered_upgrades(), upgrades + 3);
  for (size_t i = 0; i < ks.size(); i++) EXPECT_EQ(run_prg(*progs[i]), 501 + int(i));  // the same programs, upgraded
  // the stored binary of the light ones is the -O2 build of their batch, byte for byte, not the -O0 one
  std::vector<KernelSource> light{ks[0], ks[1], ks[2]};
  std::string o2 = *d.compile_batch(light), o0 = *d.compile_batch(light, true);
  ASSERT_NE(o2, o0);
  for (size_t i = 0; i < 3; i++) {
    auto row = diskcache_get("compile", keys[i]);
    ASSERT_TRUE(row) << i;
    ASSERT_EQ(row->rfind("TGBATCH1\n", 0), 0u) << i;
    auto blob = diskcache_get("compile_batch", row->substr(9, row->find('\n', 9) - 9));
    ASSERT_TRUE(blob) << i;
    EXPECT_TRUE(*blob == o2) << i;
  }
  // a second load finds them all on disk: no compile, no upgrade
  uint64_t before = clang_invocations();
  auto again = d.load_cached_batch(ks);
  EXPECT_EQ(clang_invocations(), before);
  wait_tiered_compiles();
  EXPECT_EQ(tiered_upgrades(), upgrades + 3);
  for (size_t i = 0; i < ks.size(); i++) EXPECT_EQ(run_prg(*again[i]), 501 + int(i));
}

namespace {
// three light kernels writing 601..603, unique to `nonce`
std::vector<KernelSource> light_sources(const std::string& nonce) {
  std::vector<KernelSource> ks;
  for (int tag = 601; tag <= 603; tag++)
    ks.push_back({"k", "// " + nonce + "\nvoid k(void* const* b, const long long* v, int c) { *(int*)b[0] = " + std::to_string(tag) + "; }\n", {"k"}, 100});
  return ks;
}
}  // namespace

// a process that exits right after its quick compiles still leaves the -O2 binaries on disk (at exit the queued
// upgrades are compiled to the end): the next process loads every kernel from the cache and compiles nothing
TEST(ProgramCache, TieredCompileExitLeavesOptimizedBinaries) {
  TempDir dir;
  std::string db = (dir.path() / "cache.db").string(), nonce = std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  ProcessResult r = run_process({"env", "CACHEDB=" + db, "TG_TEST_NONCE=" + nonce, "TIERED_COMPILE=1", "COMPILE_BATCH=64", "CACHELEVEL=2",
                                 std::filesystem::read_symlink("/proc/self/exe").string(), "--gtest_filter=ProgramCache.TieredQuickCompileRuns"});
  ASSERT_TRUE(r.started);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_NE(r.out.find("[  PASSED  ] 1 test"), std::string::npos) << r.out;
  ScopedEnv dbenv("CACHEDB", db);
  ScopedEnv lvl("CACHELEVEL", std::nullopt);
  ScopedEnv tier("TIERED_COMPILE", "1");
  Device& d = get_device("CPU");
  std::vector<KernelSource> ks = light_sources(nonce);
  uint64_t before = clang_invocations(), upgrades = tiered_upgrades();
  auto progs = d.load_cached_batch(ks);
  EXPECT_EQ(clang_invocations(), before);
  wait_tiered_compiles();
  EXPECT_EQ(tiered_upgrades(), upgrades);
  for (size_t i = 0; i < ks.size(); i++) {
    ASSERT_TRUE(progs[i]) << i;
    EXPECT_EQ(run_prg(*progs[i]), 601 + int(i));
  }
  auto row = diskcache_get("compile", program_cache_key(d.compiler_key(), ks[0].src));
  ASSERT_TRUE(row && row->rfind("TGBATCH1\n", 0) == 0);
  EXPECT_TRUE(diskcache_get("compile_batch", row->substr(9, row->find('\n', 9) - 9)) == d.compile_batch(ks));  // the -O2 build
}
// light kernels of fresh source are quick-compiled and run at once; TieredCompileExitLeavesOptimizedBinaries runs this
// test alone in a child process (sharing its nonce) that exits right after
TEST(ProgramCache, TieredQuickCompileRuns) {
  const char* env_nonce = std::getenv("TG_TEST_NONCE");
  std::string nonce = env_nonce ? env_nonce : "run-" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  TempDir dir;  // on its own (not the child) the kernels' -O2 builds go to a cache of its own
  std::optional<ScopedEnv> db;
  if (!env_nonce) db.emplace("CACHEDB", (dir.path() / "cache.db").string());
  ScopedEnv tier("TIERED_COMPILE", "1");
  uint64_t before = clang_invocations();
  std::vector<KernelSource> ks = light_sources(nonce);
  auto progs = get_device("CPU").load_cached_batch(ks);
  EXPECT_GT(clang_invocations(), before);  // compiled here (quick), nothing in the cache yet
  for (size_t i = 0; i < ks.size(); i++) {
    ASSERT_TRUE(progs[i]) << i;
    EXPECT_EQ(run_prg(*progs[i]), 601 + int(i));
  }
  if (!env_nonce) wait_tiered_compiles();  // the child exits instead: its exit finishes the upgrades
}
