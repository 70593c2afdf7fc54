// Training step time of the main job's model (tinygrad's beautiful_mnist CNN, Adam, batch 512) against libtorch running
// the same model in the same process, both on all cores: ms per step after warm-up, the ratio, and our first step
// (schedule + codegen + compile, with an empty kernel cache) and second (the TinyJit capture). The steady steps start
// once TIERED_COMPILE's background upgrades are done (the wait is printed). Each steady step is timed on its own: the
// median, and the steps more than 5 % off it (stragglers), for both sides.
//   build/bench/mnist [steps=10] [batch=512]; NUM_CPU_THREADS: both sides' threads; BENCH_CPU_TIME=1: process CPU time
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <sys/resource.h>

#include "anchor.h"

#include "../apps/beautiful_mnist_model.h"
#include "../apps/beautiful_mnist_torch.h"
#include "tg/jit.h"
#include "tg/optim.h"
#include "tg/state.h"
#include "tg/tg.h"
#include "runtime/program_cache.h"
#include "util/settings.h"
#include "util/stats.h"

using Clock = std::chrono::steady_clock;
static double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
// CPU seconds of this process and its finished children (clang)
static double cpu_s() {
  double s = 0;
  for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage r{};
    getrusage(who, &r);
    s += double(r.ru_utime.tv_sec + r.ru_stime.tv_sec) + double(r.ru_utime.tv_usec + r.ru_stime.tv_usec) * 1e-6;
  }
  return s;
}

// per-step seconds: "median M ms, min..max, K of N steps more than 5 % off the median"
static std::string spread(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  double med = t.size() % 2 ? t[t.size() / 2] : (t[t.size() / 2 - 1] + t[t.size() / 2]) / 2;
  auto off = std::count_if(t.begin(), t.end(), [&](double x) { return std::abs(x - med) > 0.05 * med; });
  char b[160];
  std::snprintf(b, sizeof b, "median %.1f ms, %.1f..%.1f, %ld of %zu steps more than 5 %% off the median", med * 1e3, t.front() * 1e3, t.back() * 1e3,
                long(off), t.size());
  return b;
}

int main(int argc, char** argv) {
  auto t_main = Clock::now();
  int steps = argc > 1 ? std::atoi(argv[1]) : 10, bs = argc > 2 ? std::atoi(argv[2]) : 512;
  if (steps < 1 || bs < 1) return std::fprintf(stderr, "usage: mnist [steps>=1] [batch>=1]\n"), 2;
  int cores = bench::threads();
  std::mt19937 rng(0);
  std::vector<uint8_t> xs(static_cast<size_t>(bs) * 784), ys(static_cast<size_t>(bs));
  for (auto& v : xs) v = uint8_t(rng() & 255);
  for (auto& v : ys) v = uint8_t(rng() % 10);

  // ours
  tg::BeautifulMnist model;
  auto opt = tg::nn::optim::Adam(tg::nn::state::get_parameters(model), 1e-3);
  tg::TinyJit<tg::Tensor> step = tg::jit_train_step(model, opt);
  auto run = [&] { return step(tg::Tensor::from_vector(xs, {bs, 1, 28, 28}), tg::Tensor::from_vector(ys, {bs})).item<float>(); };
  auto t = Clock::now();
  double built = since(t_main), c0 = cpu_s();
  run();
  double first = since(t), first_cpu = cpu_s() - c0;
  tg::EngineStats st = tg::engine_stats();
  t = Clock::now();
  run();
  double second = since(t);
  // TIERED_COMPILE: the light kernels ran from their quick build so far; the steady steps run the optimized one
  t = Clock::now();
  tg::wait_tiered_compiles();
  double upgrade_wait = since(t);
  std::vector<double> ours_t, theirs_t;
  for (int i = 0; i < steps; i++) ours_t.push_back(bench::seconds([&] { run(); }));
  double ours = 0;
  for (double x : ours_t) ours += x / steps;

  // libtorch
  tg::BeautifulMnistTorch net;
  torch::optim::Adam topt(net.parameters(), torch::optim::AdamOptions(1e-3));
  torch::Tensor tx = torch::from_blob(xs.data(), {bs, 1, 28, 28}, torch::kUInt8).to(torch::kFloat);
  torch::Tensor ty = torch::from_blob(ys.data(), {bs}, torch::kUInt8).to(torch::kLong);
  auto trun = [&] {
    topt.zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(net.forward(tx), ty);
    loss.backward();
    topt.step();
    return loss.item<float>();
  };
  for (int i = 0; i < 2; i++) trun();
  for (int i = 0; i < steps; i++) theirs_t.push_back(bench::seconds([&] { trun(); }));
  double theirs = 0;
  for (double x : theirs_t) theirs += x / steps;

  std::printf("beautiful_mnist train step, batch %d, %d threads, mean of %d steps after warm-up (%s)\n", bs, cores, steps,
              std::getenv("BENCH_CPU_TIME") ? "BENCH_CPU_TIME: process CPU time" : "wall clock");
  std::printf("  tinygrad.cpp  %8.1f ms/step  (first step %.2f s, second (JIT capture) %.2f s)\n", ours * 1e3, first, second);
  std::printf("  tinygrad.cpp steps: %s\n", spread(ours_t).c_str());
  std::printf("  first step: %.2f s wall, %.2f s CPU (clang included): %.2f s schedule, %.2f s codegen of %lld programs, %.2f s compile+load, %.2f s run, %.2f s the rest (graph, autograd)\n",
              first, first_cpu, st.schedule_s, st.lower_s, (long long)st.programs_built, st.compile_s, st.run_s,
              first - st.schedule_s - st.lower_s - st.compile_s - st.run_s);
  std::printf("  from main(): model and optimizer built in %.2f s, first step done at %.2f s\n", built, built + first);
  std::printf("  TIERED_COMPILE=%lld: %llu programs upgraded to -O2 in the background, %.2f s waited for them after the second step\n",
              (long long)tg::settings().TIERED_COMPILE, (unsigned long long)tg::tiered_upgrades(), upgrade_wait);
  std::printf("  libtorch      %8.1f ms/step\n", theirs * 1e3);
  std::printf("  libtorch steps: %s\n", spread(theirs_t).c_str());
  std::printf("  ratio (libtorch / tinygrad.cpp): %.2fx %s\n", theirs / ours, theirs / ours >= 1 ? "(we are faster)" : "(libtorch is faster)");
  return 0;
}
