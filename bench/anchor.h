#pragma once
// What the benches against libtorch share (bench/conv, bench/infer): timing both sides alternately, so a load change on
// the shared machine hits both, random inputs, and the value check.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <random>
#include <vector>

#include "../tests/support/random.h"
#include "tg/nn.h"
#include "tg/state.h"
#include "tg/tensor.h"
#include "util/settings.h"

namespace bench {

using Clock = std::chrono::steady_clock;

// BENCH_CPU_TIME=1: the process's CPU time instead of the wall clock. With one thread each side (NUM_CPU_THREADS=1) that
// is the time the run had a core, which a loaded machine (other processes' turns) does not stretch
inline double seconds(const std::function<void()>& fn) {
  static const bool cpu = [] { const char* e = std::getenv("BENCH_CPU_TIME"); return e && std::atoi(e) != 0; }();
  auto now = [] {
    if (!cpu) return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
    timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
  };
  double t = now();
  fn();
  return now() - t;
}

// best seconds of ours and theirs: one warm-up each (compile, caches, page faults), then rounds of one run of each,
// at least `rounds` and `min_s` seconds of both together
struct Times {
  double ours, theirs;
};
inline Times alternate(const std::function<void()>& ours, const std::function<void()>& theirs, int rounds = 3, double min_s = 0.5) {
  ours(), theirs();
  Times best{1e30, 1e30};
  double total = 0;
  for (int r = 0; r < rounds || total < min_s; r++) {
    double a = seconds(ours), b = seconds(theirs);
    best.ours = std::min(best.ours, a), best.theirs = std::min(best.theirs, b), total += a + b;
  }
  return best;
}

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1, float hi = 1) { return tg::test::randv(n, seed, lo, hi); }

inline torch::Tensor to_torch(const tg::Tensor& t) {
  std::vector<float> v = t.cast(tg::dtypes::float32).to_vector<float>();
  return torch::from_blob(v.data(), std::vector<int64_t>(t.shape().begin(), t.shape().end()), torch::kFloat).clone();
}

// max |ours - theirs| / max |theirs|
inline double rel_error(const tg::Tensor& ours, const torch::Tensor& theirs) {
  torch::Tensor a = to_torch(ours), b = theirs.detach().to(torch::kFloat).contiguous().reshape(a.sizes());
  return (a - b).abs().max().item<double>() / std::max(b.abs().max().item<double>(), 1e-30);
}

// every tensor of our state dict into the libtorch parameter or buffer of the same name (the models name them alike).
// Ours are realized first: a fresh module's weights are lazy (random bits scaled), which a forward would recompute
inline void copy_weights(tg::nn::Module& ours, torch::nn::Module& theirs) {
  auto sd = tg::nn::state::get_state_dict(ours);
  std::vector<tg::Tensor> all;
  for (auto& [name, t] : sd) all.push_back(t);
  tg::Tensor::realize(all);
  torch::NoGradGuard ng;
  for (auto& item : theirs.named_parameters()) item.value().copy_(to_torch(sd.at(item.key())));
  for (auto& item : theirs.named_buffers())
    if (sd.count(item.key()) && item.key().find("num_batches") == std::string::npos) item.value().copy_(to_torch(sd.at(item.key())));
}

// the same thread count on both sides: NUM_CPU_THREADS (default the host's). libtorch's matmuls run in the BLAS it was
// built with (Debian's: OpenBLAS), whose own threads at::set_num_threads does not bound; they also spin after each call,
// which a CPU-time measurement of ours would count
extern "C" void openblas_set_num_threads(int) __attribute__((weak));
inline int threads() {
  int n = int(tg::settings().NUM_CPU_THREADS);
  at::set_num_threads(n);
  if (openblas_set_num_threads) openblas_set_num_threads(n);
  return n;
}

}  // namespace bench
