#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "runtime/buffer.h"
#include "runtime/clang.h"
#include "runtime/threadpool.h"
#include "rt_test_util.h"
#include "tg/error.h"

using namespace tg;
using tg::test::build;
using tg::test::ScopedEnv;

TEST(CpuKernel, AddFloats) {
  auto p = build("add", R"(
void add(void* const* bufs, const long long* vars, int core_id) {
  float* restrict out = (float*)bufs[0]; const float* restrict a = (const float*)bufs[1]; const float* restrict b = (const float*)bufs[2];
  for (int i = 0; i < 37; i++) out[i] = a[i] + b[i];
})");
  Buffer out("CPU", 37, dtypes::float32), a("CPU", 37, dtypes::float32), b("CPU", 37, dtypes::float32);
  std::vector<float> va(37), vb(37), vo(37);
  for (int i = 0; i < 37; i++) va[i] = float(i), vb[i] = 0.5f * float(i);
  a.copyin(va.data(), 37 * 4);
  b.copyin(vb.data(), 37 * 4);
  void* bufs[] = {out.ptr(), a.ptr(), b.ptr()};
  double t = p->launch(bufs, {}, {}, true);
  EXPECT_GE(t, 0.0);
  out.copyout(vo.data(), 37 * 4);
  for (int i = 0; i < 37; i++) EXPECT_EQ(vo[i], 1.5f * float(i));
}

TEST(CpuKernel, ReductionWithVariableAndSqrt) {
  // sum of the first vars[0] elements, then its square root: needs __builtin_sqrtf without libm
  auto p = build("r_sum", R"(
void r_sum(void* const* bufs, const long long* vars, int core_id) {
  float* out = (float*)bufs[0]; const float* x = (const float*)bufs[1]; int n = (int)vars[0];
  float acc = 0.0f;
  for (int i = 0; i < n; i++) acc += x[i];
  out[0] = acc; out[1] = __builtin_sqrtf(acc);
})");
  Buffer out("CPU", 2, dtypes::float32), x("CPU", 1000, dtypes::float32);
  std::vector<float> vx(1000, 1.0f);
  x.copyin(vx.data(), 4000);
  void* bufs[] = {out.ptr(), x.ptr()};
  for (int64_t n : {int64_t(16), int64_t(1000)}) {
    int64_t vars[] = {n};
    p->launch(bufs, vars);
    float r[2];
    out.copyout(r, 8);
    EXPECT_EQ(r[0], float(n));
    EXPECT_FLOAT_EQ(r[1], std::sqrt(float(n)));
  }
}

TEST(CpuKernel, IntKernelAndSecondEntry) {
  // two kernels in one binary; each is found by name
  auto src = R"(
void mul3(void* const* bufs, const long long* vars, int core_id) {
  long long* o = (long long*)bufs[0]; const int* a = (const int*)bufs[1];
  for (int i = 0; i < 8; i++) o[i] = (long long)a[i] * 3 + vars[0];
}
void neg(void* const* bufs, const long long* vars, int core_id) {
  int* o = (int*)bufs[0]; for (int i = 0; i < 8; i++) o[i] = -o[i];
})";
  Device& d = get_device("CPU");
  std::string so = d.compile(src);
  auto mul3 = d.load("mul3", so), neg = d.load("neg", so);
  Buffer o("CPU", 8, dtypes::int64), a("CPU", 8, dtypes::int32);
  int32_t va[8] = {1, -2, 3, -4, 5, 2000000000, 7, 0};
  a.copyin(va, sizeof va);
  void* b1[] = {o.ptr(), a.ptr()};
  int64_t vars[] = {int64_t(1) << 33};
  mul3->launch(b1, vars);
  void* b2[] = {a.ptr()};
  neg->launch(b2, {});
  int64_t vo[8];
  o.copyout(vo, sizeof vo);
  a.copyout(va, sizeof va);
  for (int i = 0; i < 8; i++) EXPECT_EQ(vo[i], int64_t(-va[i]) * 3 + (int64_t(1) << 33));
  EXPECT_EQ(va[5], -2000000000);
}

TEST(CpuKernel, SameNamedKernelsStayApart) {
  // many programs named alike, all loaded at once (as kernels named E_27_2 are): each runs its own code, and no
  // file is left behind
  Device& d = get_device("CPU");
  auto count_files = [] {
    size_t n = 0;
    for (auto& e : std::filesystem::directory_iterator(std::filesystem::temp_directory_path()))
      n += e.path().filename().string().starts_with("tg-" + std::to_string(getpid()) + "-");
    return n;
  };
  std::vector<std::unique_ptr<Program>> progs;
  for (int i = 0; i < 40; i++)
    progs.push_back(d.load("k", d.compile("void k(void* const* b, const long long* v, int c) { *(int*)b[0] = " + std::to_string(i) + "; }")));
  Buffer out("CPU", 1, dtypes::int32);
  void* bufs[] = {out.ptr()};
  for (int i = 0; i < 40; i++) {
    progs[size_t(i)]->launch(bufs, {});
    int r = -1;
    out.copyout(&r, 4);
    EXPECT_EQ(r, i);
  }
  EXPECT_EQ(count_files(), 0u);
}

TEST(CpuKernel, ThreadedLaunchFillsEverySlice) {
  auto p = build("fill", R"(
void fill(void* const* bufs, const long long* vars, int core_id) {
  int* out = (int*)bufs[0]; long long n = vars[0];
  for (long long i = core_id * n; i < (core_id + 1) * n; i++) out[i] = core_id + 1;
})");
  const int cores = 8, n = 100;
  Buffer out("CPU", cores * n, dtypes::int32);
  std::vector<int32_t> v(cores * n, 0);
  out.copyin(v.data(), v.size() * 4);
  void* bufs[] = {out.ptr()};
  int64_t vars[] = {n};
  LaunchDims dims;
  dims.global = {cores, 1, 1};
  for (int rep = 0; rep < 50; rep++) p->launch(bufs, vars, dims);
  out.copyout(v.data(), v.size() * 4);
  for (int i = 0; i < cores * n; i++) ASSERT_EQ(v[i], i / n + 1) << i;
}

TEST(ThreadPool, RunsEveryIndexOnceAcrossThreads) {
  ThreadPool pool(4);
  EXPECT_EQ(pool.threads(), 4);
  std::mutex mu;
  std::set<std::thread::id> ids;
  for (int rep = 0; rep < 300; rep++) {
    std::vector<std::atomic<int>> hits(37);
    pool.run(37, [&](int i) {
      hits[i]++;
      if (rep == 0) {
        {
          std::lock_guard lk(mu);
          ids.insert(std::this_thread::get_id());
        }
        // hold every index until a second thread has shown up (or 2 s passed), so a loaded machine cannot flake this
        auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        while (std::chrono::steady_clock::now() < until) {
          {
            std::lock_guard lk(mu);
            if (ids.size() > 1) break;
          }
          std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
      }
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  }
  EXPECT_GT(ids.size(), 1u);
}

TEST(ThreadPool, WakesSleepingWorkersAndPollingOnes) {
  for (int spin_us : {0, 200}) {
    ThreadPool pool(3, spin_us);
    std::atomic<int64_t> sum{0};
    for (int rep = 0; rep < 200; rep++) {
      // gaps shorter and longer than the polling: workers are woken from their sleep and found polling
      if (rep % 20 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rep % 40 ? 50 : 2000));
      pool.run(16, [&](int i) { sum += i; });
    }
    EXPECT_EQ(sum.load(), 200 * 120) << spin_us;
  }
}

// jobs of changing sizes back to back: a worker late for one job must never run an index of it past its size (nor one
// twice) when the next, bigger job is being published
TEST(ThreadPool, EveryIndexOnceWhenJobSizesChange) {
  for (int spin_us : {0, 2000}) {
    ThreadPool pool(3, spin_us);
    std::vector<std::atomic<int>> hits(32);
    for (int rep = 0; rep < 20000; rep++) {
      int n = 1 + (rep * 7) % 23;
      for (auto& h : hits) h = 0;
      pool.run(n, [&](int i) { hits[size_t(i)]++; });
      for (int i = 0; i < 32; i++) ASSERT_EQ(hits[size_t(i)].load(), i < n ? 1 : 0) << "rep " << rep << " index " << i << " of " << n;
    }
  }
}

TEST(ThreadPool, RethrowsAndStaysUsable) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.run(10, [](int i) { if (i == 7) throw Error("boom"); }), Error);
  std::atomic<int> sum{0};
  pool.run(10, [&](int i) { sum += i; });
  EXPECT_EQ(sum.load(), 45);
  ThreadPool single(1);
  single.run(3, [&](int i) { sum += i; });
  EXPECT_EQ(sum.load(), 48);
}

TEST(CpuErrors, ClangMissing) {
  ScopedEnv cc("TG_CLANG", "/nonexistent/clang");
  try {
    get_device("CPU").compile("void k(void* const* b, const long long* v, int c) {}");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("not found"), std::string::npos) << m;
    EXPECT_NE(m.find("install"), std::string::npos) << m;
  }
  EXPECT_THROW(get_device("CPU").compiler_key(), Error);
}

TEST(CpuErrors, ClangPathSetter) {
  set_clang_path("/nonexistent/cc");
  EXPECT_EQ(clang_path(), "/nonexistent/cc");
  EXPECT_THROW(clang_compile("int x;"), Error);
  set_clang_path("");
  EXPECT_EQ(clang_path(), "clang");
}

TEST(CpuErrors, CompileFailureCarriesStderrAndSourceAtDebug4) {
  const std::string src = "// a comment clang will not quote\nvoid bad(void* const* b, const long long* v, int c) { undeclared_thing += 1; }";
  for (int debug : {0, 4}) {
    ScopedEnv dbg("DEBUG", std::to_string(debug));
    try {
      get_device("CPU").compile(src);
      FAIL() << "expected an error";
    } catch (const Error& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("undeclared_thing"), std::string::npos) << m;  // from clang's diagnostic
      EXPECT_NE(m.find("error"), std::string::npos) << m;
      EXPECT_EQ(m.find(src) != std::string::npos, debug >= 4) << m;
    }
  }
}

TEST(CpuErrors, UnknownKernelName) {
  Device& d = get_device("CPU");
  std::string so = d.compile("void present(void* const* b, const long long* v, int c) {}");
  try {
    d.load("absent", so);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("absent"), std::string::npos);
  }
  EXPECT_THROW(d.load("present", "not an elf file"), Error);
}
