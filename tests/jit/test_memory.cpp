// Memory holds steady: 1,000 training steps of the main job's model (beautiful_mnist under TinyJit, Adam) on a small
// batch must not grow the process beyond its level after the first steps (resident set from /proc/self/statm).
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <random>
#if defined(__SANITIZE_ADDRESS__)
extern "C" size_t __sanitizer_get_current_allocated_bytes();  // libasan (gcc ships no header declaring it)
#endif

#include "../../apps/beautiful_mnist_model.h"
#include "tg/context.h"
#include "tg/jit.h"
#include "tg/optim.h"
#include "tg/state.h"

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

TEST(Memory, ThousandTrainingStepsHoldSteady) {
  tg::Tensor::manual_seed(1);
  tg::BeautifulMnist model;
  auto opt = tg::nn::optim::Adam(tg::nn::state::get_parameters(model), 1e-3);
  tg::TinyJit<tg::Tensor> step = tg::jit_train_step(model, opt);
  const int64_t bs = 2;
  std::mt19937 rng(0);
  std::vector<uint8_t> x(bs * 784), y(bs);
  int64_t after_warmup = 0;
  for (int i = 0; i < 1000; i++) {
    for (auto& v : x) v = uint8_t(rng() & 255);
    for (auto& v : y) v = uint8_t(rng() % 10);
    float loss = step(tg::Tensor::from_vector(x, {bs, 1, 28, 28}), tg::Tensor::from_vector(y, {bs})).item<float>();
    ASSERT_TRUE(std::isfinite(loss)) << "step " << i;
    if (i == 20) after_warmup = resident_bytes();
  }
  ASSERT_TRUE(step.is_captured());
  int64_t grown = resident_bytes() - after_warmup;
  // a leak of one input pair per step would be 1.6 MB, of one training state per step hundreds of MB
  EXPECT_LT(grown, int64_t(1) << 20) << "resident set grew by " << grown << " bytes over 980 steps";
  std::printf("resident set after 20 steps %.1f MB, after 1000 %.1f MB\n", double(after_warmup) / 1e6, double(after_warmup + grown) / 1e6);
}

}  // namespace
