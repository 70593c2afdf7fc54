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
