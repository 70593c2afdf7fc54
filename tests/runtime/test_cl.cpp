// The CL device (OpenCL; PoCL's CPU device in CI): listing, memory, copies, compile errors, launches.
#include <gtest/gtest.h>

#include "rt_test_util.h"
#include "runtime/buffer.h"
#include "runtime/device.h"
#include "tg/device.h"
#include "tg/error.h"
#include "tg/tensor.h"

using namespace tg;

static std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ClSmoke, AddOnCl) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {4}, std::nullopt, "CL");
  Tensor b = Tensor::from_vector<float>({10, 20, 30, 40}, {4}, std::nullopt, "CL");
  EXPECT_EQ((a + b).to_vector<float>(), (std::vector<float>{11, 22, 33, 44}));
}

TEST(ClSmoke, HalfOnCl) {
  Tensor a = Tensor::from_vector<float>({1.5f, -2.25f, 65504.f, 1e-7f, 3.0e-5f, 70000.f}, {6}, std::nullopt, "CL");
  auto h = a.cast(dtypes::float16);
  std::cout << (h * 2).cast(dtypes::float32).to_vector<float>()[0] << "\n";
  for (float v : (h + h).cast(dtypes::float32).to_vector<float>()) std::cout << v << " ";
  std::cout << "\n";
  auto bytes = h.data();
  for (auto b : bytes) std::cout << int(b) << " ";
  std::cout << "\n";
}

TEST(ClSmoke, Matmul) {
  std::vector<float> av(64 * 48), bv(48 * 32);
  for (size_t i = 0; i < av.size(); i++) av[i] = float(i % 7) - 3;
  for (size_t i = 0; i < bv.size(); i++) bv[i] = float(i % 5) - 2;
  Tensor a = Tensor::from_vector<float>(av, {64, 48}, std::nullopt, "CL"), b = Tensor::from_vector<float>(bv, {48, 32}, std::nullopt, "CL");
  auto c = a.matmul(b).to_vector<float>();
  for (int i = 0; i < 64; i++)
    for (int j = 0; j < 32; j++) {
      float s = 0;
      for (int k = 0; k < 48; k++) s += av[i * 48 + k] * bv[k * 32 + j];
      ASSERT_EQ(c[i * 32 + j], s) << i << " " << j;
    }
  std::cout << a.sum().item<float>() << " " << a.max(1).sum().item<float>() << "\n";
}
