// DRAM read bandwidth: the anchor bench/llm.sh reports decode against (a token reads every weight once, so the best a
// memory-bound decode can do is weight bytes / this bandwidth per token).
//   build/bench/dram_bw [MiB (default 1024)] [threads (default NUM_CPU_THREADS or all cores)]
// Each thread sums its slice of a buffer far larger than the caches with 4 independent 64-bit accumulators (loads the
// compiler vectorizes; no stores), best of 5 passes. Also prints one thread's figure and a memcpy's (read + write).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

uint64_t sum_slice(const uint64_t* p, size_t n) {
  uint64_t a = 0, b = 0, c = 0, d = 0;
  for (size_t i = 0; i + 4 <= n; i += 4) a += p[i], b += p[i + 1], c += p[i + 2], d += p[i + 3];
  return a ^ b ^ c ^ d;
}

// GB/s of `threads` threads reading the whole buffer, best of `passes`
double read_gbps(const std::vector<uint64_t>& buf, int threads, int passes, uint64_t& sink) {
  double best = 1e30;
  size_t per = buf.size() / size_t(threads);
  for (int r = 0; r < passes; r++) {
    std::vector<std::thread> ts;
    std::vector<uint64_t> out(static_cast<size_t>(threads));
    auto t0 = Clock::now();
    for (int t = 0; t < threads; t++) ts.emplace_back([&, t] { out[size_t(t)] = sum_slice(buf.data() + size_t(t) * per, per); });
    for (auto& t : ts) t.join();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
    for (uint64_t x : out) sink ^= x;
  }
  return double(per * size_t(threads) * 8) / best / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  size_t mib = argc > 1 ? size_t(std::atoll(argv[1])) : 1024;
  const char* env = std::getenv("NUM_CPU_THREADS");
  int threads = argc > 2 ? std::atoi(argv[2]) : env ? std::atoi(env) : int(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<uint64_t> buf(mib * (1 << 20) / 8);
  for (size_t i = 0; i < buf.size(); i++) buf[i] = i * 0x9E3779B97F4A7C15ull;  // touched: every page is resident
  uint64_t sink = 0;
  double one = read_gbps(buf, 1, 5, sink), all = read_gbps(buf, threads, 5, sink);
  std::vector<uint64_t> dst(buf.size());
  double best = 1e30;
  for (int r = 0; r < 3; r++) {
    auto t0 = Clock::now();
    std::memcpy(dst.data(), buf.data(), buf.size() * 8);
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
    sink ^= dst[size_t(r) * 4096];
  }
  std::printf("buffer %zu MiB, %d threads (checksum %llx)\n", mib, threads, (unsigned long long)(sink & 0xff));
  std::printf("1 thread read: %.2f GB/s | memcpy (1 thread, read + write): %.2f GB/s | %d threads read / 1 thread: %.2fx\n", one,
              2.0 * double(buf.size() * 8) / best / 1e9, threads, all / one);
  std::printf("dram_read_GBps %.2f\n", all);
  return 0;
}
