// The CUDA device without a GPU: what DEV=CUDA says when the driver is missing, and its compiler (NVRTC, which this
// machine has: the CUDA toolkit here, PyPI's wheel in .venv from setup.sh elsewhere) on tinygrad's own CUDA kernels.
// A missing NVRTC fails these tests (it is never skipped). Running kernels needs a GPU: tools/gpu-check.sh.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>

#include "../codegen/codegen_cases.h"
#include "runtime/cuda.h"
#include "runtime/device.h"
#include "tg/error.h"
#include "tg/tensor.h"
#include "util/settings.h"

using namespace tg;

namespace {
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
bool has(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }
bool has_driver() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  return h != nullptr;  // left loaded: the device would load it again anyway
}
}  // namespace

TEST(CudaDevice, ListedAndSaysWhatIsMissing) {
  EXPECT_TRUE(std::find(device_kinds().begin(), device_kinds().end(), "CUDA") != device_kinds().end());
  EXPECT_EQ(canonicalize_device("cuda:0"), "CUDA");
  EXPECT_EQ(canonicalize_device("cuda:1"), "CUDA:1");
  if (has_driver()) {  // a GPU machine: the device opens with the GPU's arch
    ASSERT_TRUE(device_available("CUDA"));
    auto& ren = static_cast<const CUDARenderer&>(get_device("CUDA").renderer());
    EXPECT_EQ(ren.device, "CUDA");
    EXPECT_EQ(ren.arch.rfind("sm_", 0), 0u);
    return;
  }
  EXPECT_FALSE(device_available("CUDA"));
  std::string e = error_of([] { get_device("CUDA"); });
  EXPECT_TRUE(has(e, "libcuda.so.1") && has(e, "NVIDIA")) << e;
  EXPECT_TRUE(has(error_of([] { get_device("CUDA:1"); }), "libcuda.so.1"));
  EXPECT_TRUE(has(error_of([] { Tensor::full({2}, 1.0f, dtypes::float32, "CUDA").realize(); }), "libcuda.so.1"));
}

// tinygrad's CUDA C for the kernels of tests/data/cuda_cases.txt (elementwise, half, bfloat16, GROUPTOP reduces, matmuls
// with locals, a GROUP matvec, convolutions, matmuls and convolutions on the mma.sync tensor cores: f16, bf16, tf32 and
// e4m3 in) compiles with NVRTC to an sm_90 CUBIN without a warning
TEST(Nvrtc, CompilesTinygradsKernelsToCubin) {
  NvrtcCompiler c("sm_90");
  size_t n = 0;
  for (auto& cs : codegen_cases::load("cuda_cases.txt"))
    for (auto& k : cs.kernels) {
      SCOPED_TRACE(cs.name);
      std::string bin;
      ASSERT_NO_THROW(bin = c.compile(k.src, true)) << error_of([&] { c.compile(k.src, true); });
      EXPECT_EQ(bin.substr(0, 4), "\x7f" "ELF");
      n++;
    }
  EXPECT_GE(n, 20u);
}

TEST(Nvrtc, ErrorsAndWarnings) {
  NvrtcCompiler c("sm_90");
  std::string e = error_of([&] { c.compile("extern \"C\" __global__ void k(float* a) { a[0] = undefined_name; }"); });
  EXPECT_TRUE(has(e, "failed to compile") && has(e, "undefined_name")) << e;
  // an unused variable: a warning, an error only with werror (what NVRTC_CHECK uses)
  std::string warn = "extern \"C\" __global__ void k(float* a) { int unused; a[0] = 1.0f; }";
  EXPECT_NO_THROW(c.compile(warn));
  e = error_of([&] { c.compile(warn, true); });
  EXPECT_TRUE(has(e, "warned") && has(e, "unused")) << e;
  EXPECT_TRUE(has(error_of([] { NvrtcCompiler("gfx1100"); }), "not a GPU arch"));
  // an arch newer than this NVRTC knows: PTX for the newest one it knows (the driver compiles it on load)
  std::string newer = NvrtcCompiler("sm_999").compile("extern \"C\" __global__ void k(float* a) { a[0] = 1.0f; }");
  EXPECT_TRUE(has(newer, ".entry k")) << newer.substr(0, 200);
}

// the argument list the device passes, read off the rendered signature: buffers and variables interleaved in slot order
TEST(CudaDevice, KernelArgumentsFromTheSignature) {
  auto args = cuda_kernel_args(
      "extern \"C\" __global__ void __launch_bounds__(32) E_4(float* data0_4, const int data1_, half* data2_4, const long data3_) {\n}\n"
      "extern \"C\" __global__ void __launch_bounds__(1) r_2(volatile nv_bfloat16* data0_2) {\n}\n");
  ASSERT_EQ(args.size(), 2u);
  EXPECT_EQ(args["E_4"], (std::vector<size_t>{0, 4, 0, 8}));
  EXPECT_EQ(args["r_2"], (std::vector<size_t>{0}));
  EXPECT_TRUE(has(error_of([] { cuda_kernel_args("extern \"C\" __global__ void __launch_bounds__(1) k(const float4 v) {}"); }), "float4"));
}

// NVRTC_CHECK=sm_90: every kernel the engine lowers (here for the CPU, which runs it) is compiled for CUDA as well
TEST(NvrtcCheck, EngineCompilesEveryLoweredKernel) {
  setenv("NVRTC_CHECK", "sm_90", 1);
  refresh_settings();
  int64_t before = nvrtc_checked_kernels();
  Tensor a = Tensor::arange(0, 96).reshape({8, 12}).cast(dtypes::float16) * 1.3125f;
  std::vector<float> got = (a.sum(1).cast(dtypes::float32) + 0.5f).to_vector<float>();
  unsetenv("NVRTC_CHECK");
  refresh_settings();
  EXPECT_GT(nvrtc_checked_kernels(), before);
  ASSERT_EQ(got.size(), 8u);
  EXPECT_NEAR(got[0], 66 * 1.3125f + 0.5f, 0.1f);  // sum 0..11 = 66
}
