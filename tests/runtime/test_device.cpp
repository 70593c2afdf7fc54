#include <gtest/gtest.h>

#include "rt_test_util.h"
#include "runtime/buffer.h"
#include "tg/device.h"
#include "tg/error.h"

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
  EXPECT_EQ(canonicalize_device("cuda:0"), "CUDA");
  EXPECT_EQ(canonicalize_device("disk:/tmp/Some:File"), "DISK:/tmp/Some:File");
}

TEST(DeviceName, UnknownNamesTheDevice) {
  EXPECT_NE(error_of([] { canonicalize_device("FOO"); }).find("'FOO'"), std::string::npos);
  EXPECT_NE(error_of([] { canonicalize_device("cpu:x"); }).find("'cpu:x'"), std::string::npos);
  EXPECT_NE(error_of([] { canonicalize_device("DISK"); }).find("path"), std::string::npos);
  EXPECT_NE(error_of([] { get_device("bogus:1"); }).find("bogus"), std::string::npos);
  EXPECT_NE(error_of([] { get_device("CUDA"); }).find("not available"), std::string::npos);
  EXPECT_FALSE(device_available("CUDA"));
  EXPECT_TRUE(device_available("cpu"));
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
