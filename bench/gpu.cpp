// A small bench for a GPU device (tools/gpu-check.sh runs it with DEV=CUDA; any DEV works): TinyJit replays of a matmul
// (fp32, fp16 and bf16 in, fp32 accumulation: under DEV=CUDA fp16 and bf16 on the mma.sync tensor cores), an elementwise
// add and a sum, timed on the wall clock after warm-up (each launch waits for its kernel), against a device-to-device
// copy of the same bytes. Prints GFLOPS and GB/s.
//   DEV=CUDA build/bench/gpu [N=2048] [reps=10]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "runtime/device.h"
#include "tg/jit.h"
#include "tg/tg.h"

using namespace tg;
using Clock = std::chrono::steady_clock;

namespace {
// median seconds of fn over reps, after two warm-up calls (the second captures the TinyJit)
double median_s(const std::function<void()>& fn, int reps) {
  fn(), fn();
  std::vector<double> ts;
  for (int r = 0; r < reps; r++) {
    auto st = Clock::now();
    fn();
    ts.push_back(std::chrono::duration<double>(Clock::now() - st).count());
  }
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}
}  // namespace

int run(int argc, char** argv) {
  int64_t n = argc > 1 ? std::atoll(argv[1]) : 2048;
  int reps = argc > 2 ? std::atoi(argv[2]) : 10;
  if (n < 16 || reps < 1) return std::fprintf(stderr, "usage: gpu [N>=16] [reps>=1]\n"), 2;
  std::string dev = default_device();
  Device& d = get_device(dev);
  std::printf("device %s, N=%lld, median of %d\n", dev.c_str(), (long long)n, reps);

  for (DType dt : {dtypes::float32, dtypes::float16, dtypes::bfloat16}) {
    Tensor a = Tensor::rand({n, n}, dtypes::float32).cast(dt).realize(), b = Tensor::rand({n, n}, dtypes::float32).cast(dt).realize();
    TinyJit<Tensor> mm([](const std::vector<Tensor>& in) { return in[0].matmul(in[1], false, dtypes::float32); });
    double t = median_s([&] { mm(a, b); }, reps);
    std::printf("matmul %-8s %6lldx%-6lld %9.3f ms %9.1f GFLOPS\n", std::string(dt.name()).c_str(), (long long)n, (long long)n, t * 1e3,
                2.0 * double(n) * double(n) * double(n) / t * 1e-9);
  }

  int64_t elems = n * n * 4;  // 64 MiB of float32 at N=2048
  Tensor x = Tensor::rand({elems}).realize(), y = Tensor::rand({elems}).realize();
  size_t bytes = size_t(elems) * 4;
  void* dst = d.alloc(bytes);
  void* src = d.alloc(bytes);
  double tc = median_s([&] { d.copy_on_device(dst, src, bytes); }, reps);
  d.free(dst, bytes), d.free(src, bytes);
  std::printf("copy     %12lld floats %9.3f ms %9.1f GB/s (read + write)\n", (long long)elems, tc * 1e3, 2.0 * double(bytes) / tc * 1e-9);
  TinyJit<Tensor> add([](const std::vector<Tensor>& in) { return in[0] + in[1]; });
  double ta = median_s([&] { add(x, y); }, reps);
  std::printf("add      %12lld floats %9.3f ms %9.1f GB/s (%.0f%% of copy)\n", (long long)elems, ta * 1e3, 3.0 * double(bytes) / ta * 1e-9,
              100.0 * (3.0 * double(bytes) / ta) / (2.0 * double(bytes) / tc));
  TinyJit<Tensor> sum([](const std::vector<Tensor>& in) { return in[0].sum(); });
  double ts = median_s([&] { sum(x); }, reps);
  std::printf("sum      %12lld floats %9.3f ms %9.1f GB/s (%.0f%% of copy)\n", (long long)elems, ts * 1e3, double(bytes) / ts * 1e-9,
              100.0 * (double(bytes) / ts) / (2.0 * double(bytes) / tc));
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const Error& e) {
    std::fprintf(stderr, "gpu: %s\n", e.what());
    return 1;
  }
}
