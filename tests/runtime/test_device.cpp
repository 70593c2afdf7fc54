#include <gtest/gtest.h>

#include "rt_test_util.h"
#include "runtime/buffer.h"
#include "runtime/device.h"
#include "tg/device.h"
#include "tg/error.h"
#include "util/diskcache.h"
#include "util/process.h"
#include "util/settings.h"

using namespace tg;
using tg::test::ScopedEnv;

static std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(DeviceName, Canonicalize) {
  EXPECT_EQ(canonicalize_device("cpu"), "CPU");
  EXPECT_EQ(canonicalize_device("CPU:0"), "CPU");
  EXPECT_EQ(canonicalize_device("cpu:1"), "CPU:1");
  EXPECT_EQ(canonicalize_device("null"), "NULL");
  EXPECT_EQ(canonicalize_device("disk:/tmp/Some:File"), "DISK:/tmp/Some:File");
}

TEST(DeviceName, UnknownNamesTheDevice) {
  EXPECT_NE(error_of([] { canonicalize_device("FOO"); }).find("'FOO'"), std::string::npos);
  EXPECT_NE(error_of([] { canonicalize_device("cpu:x"); }).find("'cpu:x'"), std::string::npos);
  EXPECT_NE(error_of([] { canonicalize_device("DISK"); }).find("path"), std::string::npos);
  EXPECT_NE(error_of([] { get_device("bogus:1"); }).find("bogus"), std::string::npos);
  EXPECT_FALSE(device_available("bogus:1"));
  EXPECT_TRUE(device_available("cpu"));
}

// device_kinds() lists what this build has, and nothing else. CL opens where OpenCL has a device, which setup.sh
// provides (PoCL); CUDA where the NVIDIA driver has a GPU (tests/runtime/test_cuda.cpp checks what it says without one)
TEST(DeviceName, KindsAreWhatOpens) {
  EXPECT_EQ(device_kinds(), (std::vector<std::string>{"CPU", "NULL", "DISK", "CL", "CUDA"}));
  for (const std::string& kind : device_kinds()) {
    if (kind == "CUDA") continue;
    std::string name = kind == "DISK" ? "DISK:/nonexistent/file" : kind;  // DISK opens its file on first buffer use
    EXPECT_TRUE(device_available(name)) << name;
    EXPECT_EQ(get_device(name).name(), name);
  }
  std::string err = error_of([] { get_device("METAL"); });
  EXPECT_NE(err.find("'METAL'"), std::string::npos) << err;
  EXPECT_NE(err.find("CPU, CPU:n, NULL, DISK:/path, CL, CL:n, CUDA, CUDA:n"), std::string::npos) << err;
  EXPECT_THROW(canonicalize_device("metal:0"), Error);
  EXPECT_FALSE(device_available("METAL"));
}

// the device owns its renderer: CPU and NULL render clang's C with the host's caps; DISK runs no kernels
TEST(DeviceRenderer, CapsAndOwnership) {
  const CStyleLanguage& cpu = get_device("CPU").renderer();
  EXPECT_EQ(&cpu, &get_device("CPU").renderer());  // built once
  EXPECT_NE(&cpu, &get_device("CPU:1").renderer());
  EXPECT_EQ(cpu.device, "CPU");
  EXPECT_TRUE(cpu.has_threads);
  EXPECT_FALSE(cpu.has_local);
  EXPECT_FALSE(cpu.has_shared);
  EXPECT_TRUE(cpu.tensor_cores.empty());
  EXPECT_GE(cpu.global_max[0], 1);
  EXPECT_TRUE(cpu.vector_width == 8 || cpu.vector_width == 16) << cpu.vector_width;
  // the bfloat16 probe: clang's own __bf16 where this clang compiles it, else the software type
  bool native = true;
  try {
    get_device("CPU").compile("__bf16 tg_probe_bf16(__bf16 x) { return x; }\n");
  } catch (const Error&) {
    native = false;
  }
  auto bf16 = cpu.type_map.find(DTypeId::bfloat16);
  EXPECT_EQ(bf16 != cpu.type_map.end() && bf16->second == "unsigned short", !native);
  // and its answer is on disk for the next process (the probe costs a clang run, a failed one was never cached)
  if (settings().CACHELEVEL > 0) {
    EXPECT_EQ(diskcache_get("cpu_bf16", get_device("CPU").compiler_key()), std::optional<std::string>(native ? "1" : "0"));
  }
  EXPECT_EQ(get_device("NULL").renderer().vector_width, cpu.vector_width);
  std::string err = error_of([] { get_device("DISK:/tmp/x").renderer(); });
  EXPECT_NE(err.find("/tmp/x) cannot run kernels"), std::string::npos) << err;
}

// a CPU device looks its bfloat16 answer up on a thread of its own when it opens (runtime/cpu.cpp); renderer() takes
// that answer only where it was found under the compiler renderer() sees, and stores it. A device opened while clang
// was missing reports that, then gets the real answer once clang is back; simd_width() needs no answer at all
TEST(DeviceRenderer, CpuProbeOnOpeningFollowsTheCompiler) {
  bool native = true;
  try {
    get_device("CPU").compile("__bf16 tg_probe_bf16(__bf16 x) { return x; }\n");
  } catch (const Error&) {
    native = false;
  }
  TempDir dir;
  ScopedEnv db("CACHEDB", (dir.path() / "cache.db").string());  // empty: the answer is not on disk
  ScopedEnv lvl("CACHELEVEL", std::nullopt);
  Device* missing = nullptr;
  {
    ScopedEnv cc("TG_CLANG", "/nonexistent/clang");
    missing = &get_device("CPU:5");
    EXPECT_EQ(missing->simd_width(), get_device("CPU").renderer().simd_width());
    std::string err = error_of([&] { missing->renderer(); });
    EXPECT_NE(err.find("not found"), std::string::npos) << err;
  }
  auto software = [](const CStyleLanguage& r) {
    auto bf16 = r.type_map.find(DTypeId::bfloat16);
    return bf16 != r.type_map.end() && bf16->second == "unsigned short";
  };
  EXPECT_EQ(software(missing->renderer()), !native);
  // opened with clang there: the answer found on the device's thread, stored by renderer()
  Device& fresh = get_device("CPU:6");
  EXPECT_EQ(software(fresh.renderer()), !native);
  EXPECT_EQ(diskcache_get("cpu_bf16", fresh.compiler_key()), std::optional<std::string>(native ? "1" : "0"));
}

TEST(DeviceName, DefaultFromEnv) {
  {
    ScopedEnv e("DEV", std::nullopt);
    EXPECT_EQ(default_device(), "CPU");
    EXPECT_EQ(get_device().name(), "CPU");
  }
  {
    ScopedEnv e("DEV", "null");
    EXPECT_EQ(default_device(), "NULL");
    EXPECT_EQ(canonicalize_device(""), "NULL");
  }
  ScopedEnv e("DEV", "nope");
  EXPECT_THROW(default_device(), Error);
}

TEST(DeviceName, SameDeviceObject) {
  EXPECT_EQ(&get_device("cpu"), &get_device("CPU:0"));
  EXPECT_NE(&get_device("CPU"), &get_device("CPU:1"));
  EXPECT_EQ(get_device("cpu:1").name(), "CPU:1");
}

TEST(NullDevice, RunsNothing) {
  Device& d = get_device("NULL");
  EXPECT_EQ(d.compile("this is not C"), "");
  auto p = d.load("anything", "");
  EXPECT_EQ(p->name(), "anything");
  Buffer a("NULL", 1024, dtypes::float32), b("NULL", 1024, dtypes::float32);
  EXPECT_NE(a.ptr(), b.ptr());
  std::vector<float> host(1024, 1.f);
  a.copyin(host.data(), host.size() * 4);
  void* bufs[] = {a.ptr(), b.ptr()};
  p->launch(bufs, {});
  EXPECT_THROW(a.copyout(host.data(), host.size() * 4), Error);
}
