#include <gtest/gtest.h>

#include <numeric>

#include "runtime/allocator.h"
#include "runtime/buffer.h"
#include "rt_test_util.h"
#include "tg/error.h"

using namespace tg;
using tg::test::ScopedEnv;

TEST(Buffer, LazyRoundTrip) {
  Buffer b("CPU", 100, dtypes::float32);
  EXPECT_FALSE(b.is_allocated());
  EXPECT_EQ(b.nbytes(), 400u);
  std::vector<float> in(100), out(100);
  std::iota(in.begin(), in.end(), 0.5f);
  b.copyin(in.data(), 400);
  EXPECT_TRUE(b.is_allocated());
  b.copyout(out.data(), 400);
  EXPECT_EQ(in, out);
  EXPECT_THROW(b.copyin(in.data(), 396), Error);
}

TEST(Buffer, Int64AndCopyFrom) {
  auto a = std::make_shared<Buffer>("cpu", 10, dtypes::int64);
  Buffer c("CPU:1", 10, dtypes::int64);
  std::vector<int64_t> in{1, -2, 3, -4, 5, 1ll << 40, 7, 8, 9, 10}, out(10);
  a->copyin(in.data(), 80);
  c.copy_from(*a);
  c.copyout(out.data(), 80);
  EXPECT_EQ(in, out);
  EXPECT_THROW(Buffer("CPU", 4, dtypes::weakint), Error);
}

TEST(Buffer, Views) {
  auto base = std::make_shared<Buffer>("CPU", 16, dtypes::int32);
  std::vector<int32_t> in(16);
  std::iota(in.begin(), in.end(), 0);
  base->copyin(in.data(), 64);
  auto v = Buffer::view(base, 4, dtypes::int32, 8);  // elements 2..5
  EXPECT_TRUE(v->is_view());
  EXPECT_EQ(v->offset(), 8u);
  std::vector<int32_t> out(4);
  v->copyout(out.data(), 16);
  EXPECT_EQ(out, (std::vector<int32_t>{2, 3, 4, 5}));
  auto vv = Buffer::view(v, 2, dtypes::int32, 4);  // a view of a view: elements 3..4 of the base
  EXPECT_EQ(vv->base(), base);
  EXPECT_EQ(vv->offset(), 12u);
  int32_t w[2] = {-1, -2};
  vv->copyin(w, 8);
  base->copyout(in.data(), 64);
  EXPECT_EQ(in[3], -1);
  EXPECT_EQ(in[4], -2);
  auto bytes = Buffer::view(base, 4, dtypes::uint8, 0);  // reinterpreting dtype
  uint8_t b4[4];
  bytes->copyout(b4, 4);
  EXPECT_EQ(b4[0], 0);
  EXPECT_THROW(Buffer::view(base, 16, dtypes::int32, 4), Error);
}

TEST(Buffer, ViewKeepsBaseAlive) {
  std::shared_ptr<Buffer> v;
  {
    auto base = std::make_shared<Buffer>("CPU", 8, dtypes::float32);
    float x[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    base->copyin(x, 32);
    v = Buffer::view(base, 2, dtypes::float32, 24);
  }
  float y[2];
  v->copyout(y, 8);
  EXPECT_EQ(y[0], 6.f);
  EXPECT_EQ(y[1], 7.f);
}

TEST(LRU, ReusesFreedAllocationOfSameSize) {
  ScopedEnv lru("LRU", std::nullopt);
  Device& d = get_device("CPU:7");  // a device of its own so the stats are ours
  d.allocator().free_cache();
  void* first;
  {
    Buffer a("CPU:7", 256, dtypes::float32);
    first = a.ptr();
  }
  AllocStats s = d.allocator().stats();
  EXPECT_EQ(s.cached, 1u);
  EXPECT_EQ(s.cached_bytes, 1024u);
  Buffer b("CPU:7", 256, dtypes::float32);
  EXPECT_EQ(b.ptr(), first);
  AllocStats s2 = d.allocator().stats();
  EXPECT_EQ(s2.reused, s.reused + 1);
  EXPECT_EQ(s2.raw_allocs, s.raw_allocs);
  EXPECT_EQ(s2.cached, 0u);
  Buffer c("CPU:7", 100, dtypes::float32);  // a different size is a new allocation
  c.ptr();
  EXPECT_EQ(d.allocator().stats().raw_allocs, s.raw_allocs + 1);
}

// tg::free_device_cache (public): the device's cached allocations go back to the system, live buffers stay
TEST(LRU, FreeDeviceCacheByName) {
  ScopedEnv lru("LRU", std::nullopt);
  Device& d = get_device("CPU:7");
  Buffer live("CPU:7", 64, dtypes::float32);
  live.copyin(std::vector<float>(64, 2.5f).data(), 256);
  { Buffer a("CPU:7", 300, dtypes::float32); a.ptr(); }
  EXPECT_GE(d.allocator().stats().cached_bytes, 1200u);
  free_device_cache("cpu:7");
  EXPECT_EQ(d.allocator().stats().cached, 0u);
  EXPECT_EQ(d.allocator().stats().cached_bytes, 0u);
  std::vector<float> back(64);
  live.copyout(back.data(), 256);
  EXPECT_EQ(back, std::vector<float>(64, 2.5f));
}

TEST(LRU, FreeCacheAndDisable) {
  int live = 0;
  LRUAllocator a([&](size_t n) { live++; return ::operator new(n); }, [&](void* p, size_t) { live--; ::operator delete(p); });
  void* p = a.alloc(64);
  a.free(p, 64);
  EXPECT_EQ(live, 1);
  EXPECT_EQ(a.alloc(64), p);
  a.free(p, 64);
  a.free_cache();
  EXPECT_EQ(live, 0);
  EXPECT_EQ(a.stats().cached, 0u);
  ScopedEnv off("LRU", "0");
  a.free(a.alloc(32), 32);
  EXPECT_EQ(live, 0);
}

TEST(LRU, OutOfMemoryFreesCacheAndRetries) {
  int live = 0;
  LRUAllocator a(
      [&](size_t n) {
        if (live >= 2) throw Error("out of memory");
        live++;
        return ::operator new(n);
      },
      [&](void* p, size_t) { live--; ::operator delete(p); });
  a.free(a.alloc(16), 16);
  void* x = a.alloc(32);
  void* y = a.alloc(48);  // the cached 16 is freed to make room
  EXPECT_EQ(live, 2);
  a.free(x, 32);
  a.free(y, 48);
}
