// The CL device on this machine's OpenCL (PoCL's CPU device, which setup.sh installs): listing, memory and copies,
// compile errors, launches with variables, work-groups and local memory. Kernels here are hand-written OpenCL C and
// the expected values are worked out by hand; the op-level checks against libtorch are the conformance suite run with
// DEV=CL (ctest: conformance_cl).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <numeric>

#include "rt_test_util.h"
#include "runtime/buffer.h"
#include "runtime/device.h"
#include "tg/context.h"
#include "tg/device.h"
#include "tg/error.h"
#include "tg/jit.h"
#include "tg/tensor.h"
#include "util/process.h"

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
}  // namespace

TEST(ClDevice, ListedAndOpens) {
  EXPECT_TRUE(std::find(device_kinds().begin(), device_kinds().end(), "CL") != device_kinds().end());
  ASSERT_TRUE(device_available("CL")) << "no OpenCL device: setup.sh installs pocl-opencl-icd";
  EXPECT_EQ(canonicalize_device("cl:0"), "CL");
  EXPECT_EQ(get_device("cl").name(), "CL");
  EXPECT_FALSE(device_available("CL:4096"));
  std::string err = error_of([] { get_device("CL:4096"); });
  EXPECT_TRUE(has(err, "cannot open CL:4096") && has(err, "OpenCL device")) << err;
  // the device owns an OpenCL renderer with GPU caps from the device
  const CStyleLanguage& r = get_device("CL").renderer();
  EXPECT_EQ(r.device, "CL");
  EXPECT_TRUE(r.has_local && r.has_shared);
  EXPECT_FALSE(r.has_threads);
  EXPECT_GE(r.local_max[0], 1);
  EXPECT_GT(r.shared_max, 0);
  EXPECT_EQ(r.kernel_typedef, "__kernel void");
}

// with no OpenCL platform (ocl-icd reads its vendor files from OCL_ICD_VENDORS): run here, the test reruns itself in a
// child process that sees none; in that child it checks what a user without OpenCL gets
TEST(ClDevice, NoPlatformSaysWhy) {
  const char* vendors = std::getenv("OCL_ICD_VENDORS");
  if (!vendors || std::string(vendors) != "/nonexistent-tg-test") {
    ProcessResult r = run_process({"env", "OCL_ICD_VENDORS=/nonexistent-tg-test", std::filesystem::read_symlink("/proc/self/exe").string(),
                                   "--gtest_filter=ClDevice.NoPlatformSaysWhy"});
    ASSERT_TRUE(r.started);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_TRUE(has(r.out, "[  PASSED  ] 1 test")) << r.out;
    return;
  }
  EXPECT_FALSE(device_available("CL"));
  EXPECT_TRUE(std::find(device_kinds().begin(), device_kinds().end(), "CL") != device_kinds().end());  // still built
  std::string err = error_of([] { get_device("CL"); });
  EXPECT_TRUE(has(err, "cannot open CL") && has(err, "no OpenCL platform")) << err;
  EXPECT_EQ(get_device("CPU").name(), "CPU");  // the rest works
}

TEST(ClMemory, CopiesAndViews) {
  std::vector<int32_t> v(256);
  std::iota(v.begin(), v.end(), 0);
  auto a = std::make_shared<Buffer>("CL", 256, dtypes::int32);
  a->copyin(v.data(), 1024);
  std::vector<int32_t> back(256, -1);
  a->copyout(back.data(), 1024);
  EXPECT_EQ(back, v);
  // device to device
  Buffer b("CL", 256, dtypes::int32);
  b.copy_from(*a);
  std::fill(back.begin(), back.end(), -1);
  b.copyout(back.data(), 1024);
  EXPECT_EQ(back, v);
  // a view 40 elements in reads and writes its part of the base
  auto view = Buffer::view(a, 8, dtypes::int32, 160);
  std::vector<int32_t> part(8);
  view->copyout(part.data(), 32);
  EXPECT_EQ(part, (std::vector<int32_t>{40, 41, 42, 43, 44, 45, 46, 47}));
  std::vector<int32_t> minus(8, -7);
  view->copyin(minus.data(), 32);
  a->copyout(back.data(), 1024);
  EXPECT_EQ(back[39], 39);
  EXPECT_EQ(back[40], -7);
  EXPECT_EQ(back[47], -7);
  EXPECT_EQ(back[48], 48);
  // CL <-> CPU buffers
  Buffer c("CPU", 256, dtypes::int32);
  c.copy_from(b);
  EXPECT_EQ(std::memcmp(c.ptr(), v.data(), 1024), 0);
  EXPECT_THROW(c.copy_from(*view), Error);  // sizes differ
}

TEST(ClMemory, TensorsMoveBetweenDevices) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, std::nullopt, "CPU");
  Tensor y = x.to("CL");
  EXPECT_EQ(y.device(), "CL");
  Tensor z = (y * 2 + 1).sum(1).to("CPU");
  EXPECT_EQ(z.device(), "CPU");
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{15, 33}));  // 3+5+7, 9+11+13
  EXPECT_EQ((x.to("CL") - y).abs().sum().item<float>(), 0.f);
}

TEST(ClCompile, BuildErrorCarriesTheLog) {
  Device& d = get_device("CL");
  std::string err = error_of([&] { d.compile("__kernel void f(__global float* a) { a[0] = tg_no_such_name; }"); });
  EXPECT_TRUE(has(err, "CL: OpenCL failed to compile") && has(err, "tg_no_such_name")) << err;
  std::string bin = d.compile("__kernel void f(__global float* a) { a[0] = 1.0f; }");
  err = error_of([&] { d.load("g", bin); });
  EXPECT_TRUE(has(err, "no kernel named 'g'")) << err;
  EXPECT_THROW(d.load("f", "not a program"), Error);
  EXPECT_NE(d.compiler_key(), "");  // programs are cached on disk
}

// buffers and variables interleave in the signature; the launch passes each where the kernel takes it
TEST(ClLaunch, BuffersAndVariablesInOrder) {
  auto p = test::build("scale", "__kernel void scale(__global int* out, const int n, __global const int* in, const long m) {\n"
                                "  int i = get_global_id(0); out[i] = in[i] * n + (int)(m >> 32); }", "CL");
  Buffer out("CL", 5, dtypes::int32), in("CL", 5, dtypes::int32);
  std::vector<int32_t> v{1, 2, 3, 4, 5}, r(5);
  in.copyin(v.data(), 20);
  void* bufs[] = {out.ptr(), in.ptr()};
  int64_t vars[] = {3, int64_t(7) << 32};
  LaunchDims dims;
  dims.global = {5, 1, 1};
  EXPECT_GE(p->launch(bufs, vars, dims, true), 0.0);
  out.copyout(r.data(), 20);
  EXPECT_EQ(r, (std::vector<int32_t>{10, 13, 16, 19, 22}));
  int64_t too_few[] = {3};
  EXPECT_THROW(p->launch(bufs, too_few, dims), Error);
}

// work-groups of 8 with local memory and a barrier: each group sums its 8 inputs
TEST(ClLaunch, WorkGroupsAndLocalMemory) {
  auto p = test::build("gsum", "__kernel void gsum(__global float* out, __global const float* in) {\n"
                               "  __local float s[8]; int l = get_local_id(0), g = get_group_id(0);\n"
                               "  s[l] = in[g * 8 + l]; barrier(CLK_LOCAL_MEM_FENCE);\n"
                               "  if (l == 0) { float t = 0; for (int i = 0; i < 8; i++) t += s[i]; out[g] = t; } }", "CL");
  Buffer out("CL", 3, dtypes::float32), in("CL", 24, dtypes::float32);
  std::vector<float> v(24), r(3);
  std::iota(v.begin(), v.end(), 0.f);
  in.copyin(v.data(), 96);
  void* bufs[] = {out.ptr(), in.ptr()};
  LaunchDims dims;
  dims.global = {3, 1, 1}, dims.local = {8, 1, 1};  // 3 groups of 8
  p->launch(bufs, {}, dims);
  out.copyout(r.data(), 12);
  EXPECT_EQ(r, (std::vector<float>{28, 92, 156}));  // 0+..+7, 8+..+15, 16+..+23
}

// a kernel argument that is a view becomes a sub-buffer, which OpenCL wants aligned
TEST(ClLaunch, ViewsAsArguments) {
  auto p = test::build("inc", "__kernel void inc(__global int* a) { a[get_global_id(0)] += 1; }", "CL");
  auto base = std::make_shared<Buffer>("CL", 1024, dtypes::int32);
  std::vector<int32_t> zeros(1024, 0), r(1024);
  base->copyin(zeros.data(), 4096);
  auto aligned = Buffer::view(base, 4, dtypes::int32, 1024);  // 1024 bytes in: aligned for any OpenCL device
  void* bufs[] = {aligned->ptr()};
  LaunchDims dims;
  dims.global = {4, 1, 1};
  p->launch(bufs, {}, dims);
  base->copyout(r.data(), 4096);
  EXPECT_EQ(std::accumulate(r.begin(), r.end(), 0), 4);
  EXPECT_EQ(r[256] + r[257] + r[258] + r[259], 4);
  auto odd = Buffer::view(base, 4, dtypes::int32, 4);
  void* obufs[] = {odd->ptr()};
  std::string err = error_of([&] { p->launch(obufs, {}, dims); });
  EXPECT_TRUE(has(err, "byte offset 4") && has(err, "aligned")) << err;
}

// float16 on a device without cl_khr_fp16 (PoCL's CPU device) is stored as ushort and computed in float32: the bits
// must be IEEE half's, rounded to nearest even (values worked out by hand)
TEST(ClHalf, BitsAreIeeeHalf) {
  Tensor a = Tensor::from_vector<float>({1.5f, -2.25f, 65504.f, 1e-7f, 3.0e-5f, 70000.f, 1.0009765625f, 1.00146484375f}, {8},
                                        std::nullopt, "CL");
  std::vector<uint8_t> b = a.cast(dtypes::float16).data();
  std::vector<uint16_t> h(8);
  std::memcpy(h.data(), b.data(), 16);
  // 1.5, -2.25, max half, 1e-7 = 1.68 * 2^-24 -> 2 steps, 3e-5 = 503.3 steps, overflow, 1 + 2^-10 exact, 1 + 1.5 * 2^-10 ties to even
  EXPECT_EQ(h, (std::vector<uint16_t>{0x3E00, 0xC080, 0x7BFF, 0x0002, 0x01F7, 0x7C00, 0x3C01, 0x3C02}));
  Tensor back = Tensor::from_bytes(b, dtypes::float16, {8}, dtypes::float32, "CL");
  std::vector<float> f = back.to_vector<float>();
  EXPECT_EQ(f[0], 1.5f);
  EXPECT_EQ(f[3], 2 * 0x1p-24f);
  EXPECT_EQ(f[4], 503 * 0x1p-24f);
  EXPECT_TRUE(std::isinf(f[5]));
  EXPECT_EQ((a.cast(dtypes::float16) * 2).cast(dtypes::float32).to_vector<float>()[1], -4.5f);
}

// BEAM times candidates on the CL device (work-group sizes among them); the result still computes the matmul
TEST(ClLaunch, BeamSearchOnCl) {
  Context beam({{"BEAM", 1}, {"IGNORE_BEAM_CACHE", 1}});
  std::vector<float> av(16 * 24), bv(24 * 8);
  for (size_t i = 0; i < av.size(); i++) av[i] = float(int(i % 7) - 3);
  for (size_t i = 0; i < bv.size(); i++) bv[i] = float(int(i % 5) - 2);
  Tensor a = Tensor::from_vector<float>(av, {16, 24}, std::nullopt, "CL"), b = Tensor::from_vector<float>(bv, {24, 8}, std::nullopt, "CL");
  std::vector<float> c = a.matmul(b).to_vector<float>();
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 8; j++) {
      float s = 0;
      for (int k = 0; k < 24; k++) s += av[size_t(i * 24 + k)] * bv[size_t(k * 8 + j)];
      ASSERT_EQ(c[size_t(i * 8 + j)], s) << i << "," << j;  // small integers: exact in any order
    }
}

// TinyJit replays its captured CL launches with each call's new input buffers
TEST(ClJit, ReplaysOnCl) {
  TinyJit f([](const std::vector<Tensor>& in) { return (in[0] * in[1] + 1).sum(0); });
  for (int call = 0; call < 4; call++) {
    std::vector<float> x{1, 2, 3, 4, 5, 6}, y(6, float(call));
    Tensor r = f(Tensor::from_vector<float>(x, {2, 3}, std::nullopt, "CL"), Tensor::from_vector<float>(y, {2, 3}, std::nullopt, "CL"));
    EXPECT_EQ(r.device(), "CL");
    // column sums of x * call + 1: (1+4, 2+5, 3+6) * call + 2
    EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{5.f * float(call) + 2, 7.f * float(call) + 2, 9.f * float(call) + 2})) << "call " << call;
  }
}

// whole-tensor reduces big enough to be grouped over a work-group (GROUPTOP, local memory, barriers), end to end
TEST(ClLaunch, GroupedReducesEndToEnd) {
  std::vector<float> v(4096);
  std::iota(v.begin(), v.end(), 0.f);
  Tensor x = Tensor::from_vector<float>(v, {4096}, std::nullopt, "CL");
  EXPECT_EQ(x.sum().item<float>(), 8386560.f);  // 4096 * 4095 / 2, every partial sum an exact integer
  EXPECT_EQ(x.max().item<float>(), 4095.f);
  EXPECT_EQ((-x).max().item<float>(), 0.f);
  Tensor m = x.reshape({64, 64}).max(0);  // column j: 63 * 64 + j
  std::vector<float> want(64);
  for (int j = 0; j < 64; j++) want[size_t(j)] = float(63 * 64 + j);
  EXPECT_EQ(m.to_vector<float>(), want);
}
