// The CUDA tensor-core tables (renderer/tc.h) against tinygrad's codegen/opt/tc.py at the reference commit: the cores
// get_cuda gives each arch, in order, with their elements per thread, and the shape strings and swizzle permutations of
// the 8x16x16 one as tinygrad's TensorCore methods compute them (values printed by tinygrad, written out here).
#include <gtest/gtest.h>

#include "renderer/cstyle.h"
#include "tg/error.h"

using namespace tg;

namespace {
std::vector<std::string> described(const std::vector<TensorCore>& tcs) {
  std::vector<std::string> out;
  for (auto& t : tcs)
    out.push_back(t.str() + "/(" + std::to_string(t.elements_per_thread[0]) + ", " + std::to_string(t.elements_per_thread[1]) + ", " +
                  std::to_string(t.elements_per_thread[2]) + ")");
  return out;
}
}  // namespace

TEST(TensorCores, CudaTablesPerArch) {
  using V = std::vector<std::string>;
  const V sm75{"WMMA_8_16_8_half_float/(4, 2, 4)", "WMMA_8_16_8_half_half/(4, 2, 4)"};
  const V sm80{"WMMA_8_16_16_half_float/(8, 4, 4)", "WMMA_8_16_16___bf16_float/(8, 4, 4)", "WMMA_8_16_16_half_half/(8, 4, 4)",
               "WMMA_8_16_8_half_float/(4, 2, 4)",  "WMMA_8_16_8_half_half/(4, 2, 4)",     "WMMA_8_16_8_float_float/(4, 2, 4)"};
  V sm89 = sm80;
  sm89.push_back("WMMA_8_16_32_float8_e4m3_float/(16, 8, 4)");
  sm89.push_back("WMMA_8_16_32_float8_e5m2_float/(16, 8, 4)");
  EXPECT_TRUE(cuda_tensor_cores("sm_70").empty());
  EXPECT_EQ(described(cuda_tensor_cores("sm_75")), sm75);
  EXPECT_EQ(described(cuda_tensor_cores("sm_80")), sm80);
  EXPECT_EQ(described(cuda_tensor_cores("sm_86")), sm80);
  EXPECT_EQ(described(cuda_tensor_cores("sm_89")), sm89);
  EXPECT_EQ(described(cuda_tensor_cores("sm_90")), sm89);
  // the renderer takes its arch's
  EXPECT_EQ(described(CUDARenderer("sm_75").tensor_cores), sm75);
  EXPECT_EQ(described(CUDARenderer("sm_90").tensor_cores), sm89);
  for (auto& t : cuda_tensor_cores("sm_90")) EXPECT_EQ(t.threads, 32) << t.str();
  for (const char* bad : {"gfx1100", "sm_", "sm_9x", ""}) {
    try {
      CUDARenderer r(bad);
      ADD_FAILURE() << "accepted arch '" << bad << "'";
    } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find("not a GPU arch"), std::string::npos) << e.what(); }
  }
}

TEST(TensorCores, ShapeStringsAndSwizzle) {
  TensorCore t = cuda_tensor_cores("sm_90").at(0);  // 8x16x16 half -> float
  std::vector<std::string> base{"u0", "l0", "l1", "l2", "l3", "l4", "u1", "r0", "r1", "r2", "r3"};
  EXPECT_EQ(t.reduce_axes(), 4);
  EXPECT_EQ(t.base_shape_str(), base);
  EXPECT_EQ(t.base_upcast_axes(), (std::vector<std::string>{"u1", "u0", "r3", "r2", "r1", "r0"}));
  auto p = t.permutes_for_shape_str(base);
  EXPECT_EQ(p[0], (std::vector<int64_t>{6, 8, 9, 3, 4, 5, 10, 1, 2, 0, 7}));
  EXPECT_EQ(p[1], (std::vector<int64_t>{7, 8, 9, 0, 1, 2, 10, 3, 4, 5, 6}));
}
