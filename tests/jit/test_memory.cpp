// Memory holds steady: 1,000 training steps of the main job's model (beautiful_mnist under TinyJit, Adam) on a small
// batch must not grow the process beyond its level after the first steps (resident set from /proc/self/statm), also
// when every step sets a new learning rate.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <random>
#if defined(__SANITIZE_ADDRESS__)
extern "C" size_t __sanitizer_get_current_allocated_bytes();  // libasan (gcc ships no header declaring it)
#endif

#include "../../apps/beautiful_mnist_model.h"
#include "runtime/program_cache.h"
#include "tg/context.h"
#include "tg/jit.h"
#include "tg/optim.h"
#include "tg/state.h"
#include "util/stats.h"
#include "uop/uop.h"
#include "util/lru.h"

namespace {

#if defined(__SANITIZE_ADDRESS__)
// under AddressSanitizer freed memory sits in its quarantine and stays resident: count the live heap instead
int64_t resident_bytes() { return int64_t(__sanitizer_get_current_allocated_bytes()); }
#else
int64_t resident_bytes() {
  std::ifstream f("/proc/self/statm");
  int64_t size = 0, resident = 0;
  f >> size >> resident;
  return resident * int64_t(sysconf(_SC_PAGESIZE));
}
#endif

struct Counts {
  size_t uops;
  int64_t resident, programs_built, schedule_misses;
  static Counts now() {
    return {tg::live_uops(), resident_bytes(), tg::engine_stats().programs_built, tg::engine_stats().schedule_cache_misses};
  }
};

// the main job's training loop, with a learning rate set before every step where lr_tensor is given; the counts after
// `warmup` and at the end
std::pair<Counts, Counts> train(int steps, int warmup, const std::function<tg::Tensor(double)>& lr_tensor = nullptr) {
  tg::Tensor::manual_seed(1);
  tg::BeautifulMnist model;
  auto opt = tg::nn::optim::Adam(tg::nn::state::get_parameters(model), 1e-3);
  tg::TinyJit<tg::Tensor> step = tg::jit_train_step(model, opt);
  const int64_t bs = 2;
  std::mt19937 rng(0);
  std::vector<uint8_t> x(bs * 784), y(bs);
  Counts at_warmup{};
  for (int i = 0; i < steps; i++) {
    if (lr_tensor) {
      double lr = 1e-3 * 0.5 * (1 + std::cos(M_PI * i / steps));  // beautiful_mnist's cosine decay
      opt.lr.assign(lr_tensor(lr)).realize();
      EXPECT_FLOAT_EQ(opt.lr.item<float>(), float(lr)) << "step " << i;
    }
    for (auto& v : x) v = uint8_t(rng() & 255);
    for (auto& v : y) v = uint8_t(rng() % 10);
    float loss = step(tg::Tensor::from_vector(x, {bs, 1, 28, 28}), tg::Tensor::from_vector(y, {bs})).item<float>();
    EXPECT_TRUE(std::isfinite(loss)) << "step " << i;
    if (i == warmup) {
      tg::wait_tiered_compiles();  // TIERED_COMPILE's -O2 upgrades load their libraries in the background, late under load
      at_warmup = Counts::now();
    }
  }
  EXPECT_TRUE(step.is_captured());
  return {at_warmup, Counts::now()};
}

TEST(Memory, ThousandTrainingStepsHoldSteady) {
  auto [warm, end] = train(1000, 20);
  int64_t grown = end.resident - warm.resident;
  // a leak of one input pair per step would be 1.6 MB, of one training state per step hundreds of MB
  EXPECT_LT(grown, int64_t(1) << 20) << "resident set grew by " << grown << " bytes over 980 steps";
  std::printf("resident set after 20 steps %.1f MB, after 1000 %.1f MB\n", double(warm.resident) / 1e6, double(end.resident) / 1e6);
}

// Tensor::full of a new value each step is a new graph, schedule and kernel every step; the caches keyed by them keep
// only their most recent entries (8 here, so the bound is reached within the warm-up): nothing grows after it
TEST(Memory, NewConstantLearningRateEveryStepHoldsSteady) {
  size_t saved = tg::cache_capacity();
  tg::set_cache_capacity(8);
  auto [warm, end] = train(80, 16, [](double lr) { return tg::Tensor::full({1}, lr, tg::dtypes::float32); });
  tg::set_cache_capacity(saved);
  EXPECT_EQ(end.uops, warm.uops) << "live UOp nodes grew over 64 steps: a cache keeps every learning rate's graph";
  // each step leaked about 18 KB (a loaded program, its source and graphs) when the caches were unbounded
  EXPECT_LT(end.resident - warm.resident, int64_t(512) << 10) << "resident set grew over 64 steps";
}

// a host value (tinygrad's Tensor([lr])) is an input buffer: the same graph every step, scheduled and compiled once
TEST(Memory, HostLearningRateEveryStepBuildsNothing) {
  auto [warm, end] = train(60, 5, [](double lr) { return tg::Tensor::from_vector<float>({float(lr)}); });
  EXPECT_EQ(end.programs_built, warm.programs_built);
  EXPECT_EQ(end.schedule_misses, warm.schedule_misses);
  EXPECT_EQ(end.uops, warm.uops);
}

}  // namespace
