// Memory-bound kernels against memcpy: elementwise ops and reductions over a 64 MiB float32 tensor (4096 x 4096),
// tinygrad.cpp's realize() of a fresh graph over the same input buffers (steady state), in GB/s of bytes the op must
// move (inputs read + output written), against memcpy's GB/s (bytes read + written) measured in the same run on the same
// threads (NUM_CPU_THREADS slices copied in parallel, or one thread if that is faster). Each side's best run,
// alternating; values compared with a double-precision host loop.
//   build/bench/bandwidth [MiB=64] [only the cases whose name contains this]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tg/tensor.h"
#include "util/settings.h"

using tg::Tensor;
using Clock = std::chrono::steady_clock;

namespace {

double seconds(const std::function<void()>& fn) {
  auto t = Clock::now();
  fn();
  return std::chrono::duration<double>(Clock::now() - t).count();
}

void parallel_memcpy(float* dst, const float* src, size_t n, int threads) {
  if (threads <= 1) return void(std::memcpy(dst, src, n * 4));
  std::vector<std::thread> ts;
  size_t per = (n + size_t(threads) - 1) / size_t(threads);
  for (int t = 0; t < threads; t++) {
    size_t lo = std::min(n, size_t(t) * per), hi = std::min(n, lo + per);
    ts.emplace_back([=] { std::memcpy(dst + lo, src + lo, (hi - lo) * 4); });
  }
  for (auto& t : ts) t.join();
}

}  // namespace

int main(int argc, char** argv) {
  int64_t mib = argc > 1 ? std::atoll(argv[1]) : 64;
  if (mib < 1) return std::fprintf(stderr, "usage: bandwidth [MiB>=1]\n"), 2;
  int threads = int(tg::settings().NUM_CPU_THREADS);
  int64_t n = mib * (1 << 20) / 4, rows = int64_t(std::sqrt(double(n))), cols = n / rows;
  n = rows * cols;
  std::mt19937 g(1);
  std::uniform_real_distribution<float> d(0, 1);
  std::vector<float> ha(static_cast<size_t>(n)), hb(static_cast<size_t>(n)), dst(static_cast<size_t>(n));
  for (auto& x : ha) x = d(g);
  for (auto& x : hb) x = d(g);
  Tensor a = Tensor::from_vector(ha, {rows, cols}).realize(), b = Tensor::from_vector(hb, {rows, cols}).realize();
  double bytes = double(n) * 4;

  struct Case {
    std::string name;
    std::function<Tensor()> op;
    double moved;                                     // bytes read + written, in units of the input's size
    std::function<double(int64_t, int64_t)> expect;  // element (i, j) of the result (a reduction's result has j = 0)
    int64_t out_rows, out_cols;
  };
  auto row_reduce = [&](int64_t i, bool mx) {
    double s = mx ? -1e30 : 0;
    for (int64_t j = 0; j < cols; j++) s = mx ? std::max(s, double(ha[size_t(i * cols + j)])) : s + ha[size_t(i * cols + j)];
    return s;
  };
  auto col_sum = [&](int64_t j) {
    double s = 0;
    for (int64_t i = 0; i < rows; i++) s += ha[size_t(i * cols + j)];
    return s;
  };
  double all_sum = 0, all_max = -1e30;
  for (float x : ha) all_sum += x, all_max = std::max(all_max, double(x));
  std::vector<Case> cases{
      {"a+b", [&] { return a + b; }, 3, [&](int64_t i, int64_t j) { return double(ha[size_t(i * cols + j)]) + hb[size_t(i * cols + j)]; }, rows, cols},
      {"a*2+1", [&] { return a * 2 + 1; }, 2, [&](int64_t i, int64_t j) { return double(ha[size_t(i * cols + j)]) * 2 + 1; }, rows, cols},
      {"sum over rows", [&] { return a.sum(1); }, 1, [&](int64_t i, int64_t) { return row_reduce(i, false); }, rows, 1},
      {"max over rows", [&] { return a.max(1); }, 1, [&](int64_t i, int64_t) { return row_reduce(i, true); }, rows, 1},
      {"sum over columns", [&] { return a.sum(0); }, 1, [&](int64_t j, int64_t) { return col_sum(j); }, cols, 1},
      {"sum over all", [&] { return a.sum(); }, 1, [&](int64_t, int64_t) { return all_sum; }, 1, 1},
      {"max over all", [&] { return a.max(); }, 1, [&](int64_t, int64_t) { return all_max; }, 1, 1},
  };

  auto copy1 = [&] { std::memcpy(dst.data(), ha.data(), size_t(n) * 4); };
  auto copyn = [&] { parallel_memcpy(dst.data(), ha.data(), size_t(n), threads); };
  copy1(), copyn();
  double c1 = 1e30, cn = 1e30;
  for (int r = 0; r < 5; r++) c1 = std::min(c1, seconds(copy1)), cn = std::min(cn, seconds(copyn));
  std::printf("%lld x %lld float32 (%lld MiB), %d threads; memcpy (read + write) 1 thread %.2f GB/s, %d threads %.2f GB/s\n",
              (long long)rows, (long long)cols, (long long)mib, threads, 2 * bytes / c1 / 1e9, threads, 2 * bytes / cn / 1e9);
  bool ok = true;
  for (auto& c : cases) {
    if (argc > 2 && c.name.find(argv[2]) == std::string::npos) continue;
    Tensor out;
    auto ours = [&] { out = c.op().realize(); };
    auto theirs = [&] { threads > 1 && cn < c1 ? copyn() : copy1(); };
    ours(), theirs();
    double t = 1e30, m = 1e30, total = 0;
    for (int r = 0; r < 5 || total < 0.5; r++) {
      double x = seconds(ours), y = seconds(theirs);
      t = std::min(t, x), m = std::min(m, y), total += x + y;
    }
    std::vector<float> got = out.to_vector<float>();
    double err = 0, scale = 0;
    for (int64_t i = 0; i < c.out_rows; i++)
      for (int64_t j = 0; j < c.out_cols; j++) {
        double want = c.expect(i, j);
        err = std::max(err, std::fabs(double(got[size_t(i * c.out_cols + j)]) - want)), scale = std::max(scale, std::fabs(want));
      }
    double rel = err / std::max(scale, 1e-30), ours_gbps = c.moved * bytes / t / 1e9, copy_gbps = 2 * bytes / m / 1e9;
    bool good = rel <= 1e-4 && got.size() == size_t(c.out_rows * c.out_cols);
    std::printf("%-17s %8.2f ms %7.2f GB/s  memcpy %7.2f GB/s  ratio %5.1f%%  rel.err %.1e%s\n", c.name.c_str(), t * 1e3, ours_gbps, copy_gbps,
                100 * ours_gbps / copy_gbps, rel, good ? "" : "  MISMATCH");
    std::fflush(stdout);
    ok &= good;
  }
  return ok ? 0 : 1;
}
