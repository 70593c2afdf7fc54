// TinyJit replay overhead, tinygrad.cpp side (bench/jit_tinygrad.py is tinygrad's; bench/run_jit.sh prints both and
// the ratios). Two jitted functions on a tiny tensor (4x4 floats, so the kernels themselves cost next to nothing):
//   jit1:  x * 2 + 1                                   (1 kernel)
//   jit10: ten times x = (x * 1.01 + 1).contiguous()   (10 kernels)
// Each is called 3 times untimed (run, capture, one replay), then `reps` replays are timed one by one on the same
// input; the median is printed per call and per kernel launch, next to the same function run eagerly (graph build,
// schedule cache hit, launch) for scale.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "tg/jit.h"

using namespace tg;
using Clock = std::chrono::steady_clock;

namespace {

Tensor f1(const std::vector<Tensor>& in) { return in[0] * 2 + 1; }
Tensor f10(const std::vector<Tensor>& in) {
  Tensor x = in[0];
  for (int i = 0; i < 10; i++) x = (x * 1.01f + 1).contiguous();
  return x;
}

double median_us(const std::function<void()>& fn, int reps) {
  std::vector<double> ts;
  for (int r = 0; r < reps; r++) {
    auto st = Clock::now();
    fn();
    ts.push_back(std::chrono::duration<double, std::micro>(Clock::now() - st).count());
  }
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int reps = argc > 1 ? std::atoi(argv[1]) : 2000;
  Tensor x = Tensor::ones({4, 4}).contiguous().realize();
  for (auto& [name, fn] : std::vector<std::pair<std::string, Tensor (*)(const std::vector<Tensor>&)>>{{"jit1", f1}, {"jit10", f10}}) {
    TinyJit jit(fn);
    for (int i = 0; i < 3; i++) jit(x);
    size_t n = jit.captured_launches();
    double replay = median_us([&] { jit(x); }, reps);
    double eager = median_us([&] { fn({x}).realize(); }, std::max(reps / 10, 20));
    std::printf("tinygrad.cpp %-6s kernels %2zu replay %8.2f us/call %8.2f us/launch   eager %8.1f us/call\n", name.c_str(), n, replay,
                replay / double(n), eager);
  }
}
