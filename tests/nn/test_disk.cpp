// The DISK device and cross-device COPY: a DISK tensor is a lazy view of a file; shrink / bitcast / reshape views
// become byte ranges copied out with one COPY (no kernel runs on DISK); .to() between devices (CPU -> CPU:1 and back)
// schedules COPYs. Expected values come from the file's bytes, which the tests write themselves.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "engine/realize.h"
#include "runtime/device.h"
#include "tensor/tensor_impl.h"
#include "tg/state.h"
#include "util/process.h"
#include "util/stats.h"
#include "../tensor/tensor_test_util.h"

using namespace tg;

namespace {

using testutil::error_of;
using testutil::expect_has;

// a file of n bytes where byte i is (i * 7 + 3) % 256
class Disk : public ::testing::Test {
 protected:
  TempDir dir;
  std::string path = (dir.path() / "bytes.bin").string();
  static uint8_t byte(int64_t i) { return uint8_t((i * 7 + 3) % 256); }
  void write(int64_t n) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    for (int64_t i = 0; i < n; i++) f.put(char(byte(i)));
  }
  std::vector<uint8_t> bytes(int64_t b, int64_t e) {
    std::vector<uint8_t> v;
    for (int64_t i = b; i < e; i++) v.push_back(byte(i));
    return v;
  }
  template <class T> std::vector<T> as(int64_t b, int64_t e) {
    std::vector<uint8_t> raw = bytes(b, e);
    std::vector<T> v(raw.size() / sizeof(T));
    std::memcpy(v.data(), raw.data(), v.size() * sizeof(T));
    return v;
  }
  Tensor file(int64_t n) { return Tensor::empty({n}, dtypes::uint8, "DISK:" + path); }
};

// t[S(b, e)] is Python's t[b:e]
std::vector<Index> S(int64_t b, int64_t e) { return {Slice{b, e, std::nullopt}}; }

// realizes t, returning the calls of its LINEAR as "COPY DISK->CPU" / "KERNEL CPU"
std::vector<std::string> calls_of(const Tensor& t) {
  std::vector<std::string> out;
  UOp linear = schedule_linear({t});
  run_linear(linear);
  for (auto& c : linear.src()) {
    if (c.src(0).op() == Ops::COPY) out.push_back("COPY " + c.src(2).device().value_or("?") + "->" + c.src(1).device().value_or("?"));
    else out.push_back("KERNEL " + c.src(1).device().value_or("?"));
  }
  return out;
}

}  // namespace

TEST_F(Disk, WholeFile) {
  write(1000);
  Tensor t = nn::state::file_tensor(path);
  EXPECT_EQ(t.shape(), Shape{1000});
  EXPECT_EQ(t.dtype(), dtypes::uint8);
  EXPECT_EQ(t.device(), "DISK:" + path);
  EXPECT_EQ(t.to("CPU").to_vector<uint8_t>(), bytes(0, 1000));
  EXPECT_EQ(file(1000).to("CPU").to_vector<uint8_t>(), bytes(0, 1000));
  // a buffer shorter than the file maps its start
  EXPECT_EQ(file(10).to("CPU").to_vector<uint8_t>(), bytes(0, 10));
}

TEST_F(Disk, ShrinkBitcastReshapeViews) {
  write(256);
  Tensor t = file(256);
  EXPECT_EQ(t[S(16, 48)].to("CPU").to_vector<uint8_t>(), bytes(16, 48));
  EXPECT_EQ(t[S(16, 48)].bitcast(dtypes::int32).to("CPU").to_vector<int32_t>(), as<int32_t>(16, 48));
  EXPECT_EQ(t[S(3, 19)].bitcast(dtypes::uint64).to("CPU").to_vector<uint64_t>(), as<uint64_t>(3, 19));  // unaligned
  EXPECT_EQ(t[S(100, 106)].bitcast(dtypes::int16).to("CPU").to_vector<int16_t>(), as<int16_t>(100, 106));
  EXPECT_EQ(t[S(8, 32)].bitcast(dtypes::float32).to("CPU").data(), bytes(8, 32));
  Tensor m = t[S(64, 88)].bitcast(dtypes::int16).reshape({3, 4});
  EXPECT_EQ(m.shape(), (Shape{3, 4}));
  Tensor mc = m.to("CPU");
  EXPECT_EQ(mc.shape(), (Shape{3, 4}));
  EXPECT_EQ(mc.to_vector<int16_t>(), as<int16_t>(64, 88));
  // rows of a 2-d view are contiguous ranges too
  EXPECT_EQ(t.reshape({16, 16})[S(2, 5)].to("CPU").to_vector<uint8_t>(), bytes(32, 80));
  EXPECT_EQ(t.reshape({16, 16})[int64_t(3)].to("CPU").to_vector<uint8_t>(), bytes(48, 64));
  // a shrink of a shrink
  EXPECT_EQ(t[S(10, 200)][S(5, 9)].to("CPU").to_vector<uint8_t>(), bytes(15, 19));
}

TEST_F(Disk, ScalarAndEmptyViews) {
  write(64);
  Tensor t = file(64);
  Tensor s = t[S(4, 8)].bitcast(dtypes::uint32).reshape({});
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(s.to("CPU").item<uint32_t>(), as<uint32_t>(4, 8)[0]);
  Tensor e = t[S(4, 4)].bitcast(dtypes::float32).reshape({0, 5});
  EXPECT_EQ(e.shape(), (Shape{0, 5}));
  EXPECT_TRUE(e.to("CPU").to_vector<float>().empty());
  EXPECT_EQ(file(0).shape(), Shape{0});
  EXPECT_TRUE(file(0).to("CPU").to_vector<uint8_t>().empty());
}

TEST_F(Disk, ViewsAreOneCopyAndNoKernel) {
  write(64);
  Tensor t = file(64);
  EXPECT_EQ(calls_of(t[S(8, 24)].bitcast(dtypes::int32).reshape({2, 2}).to("CPU")),
            (std::vector<std::string>{"COPY DISK:" + path + "->CPU"}));
  // computing on the copy runs the kernel on the CPU, after the copy
  EXPECT_EQ(calls_of(t[S(0, 8)].to("CPU") + 1), (std::vector<std::string>{"COPY DISK:" + path + "->CPU", "KERNEL CPU"}));
  Tensor x = t[S(0, 8)].to("CPU") * 2;
  std::vector<uint8_t> want;
  for (auto b : bytes(0, 8)) want.push_back(uint8_t(b * 2));
  EXPECT_EQ(x.to_vector<uint8_t>(), want);
}

TEST_F(Disk, PermuteCopiesThenMovesOnTheDestination) {
  write(64);
  Tensor p = file(64).reshape({8, 8}).permute({1, 0}).to("CPU");
  EXPECT_EQ(calls_of(p), (std::vector<std::string>{"COPY DISK:" + path + "->CPU", "KERNEL CPU"}));
  std::vector<uint8_t> want;
  for (int64_t c = 0; c < 8; c++)
    for (int64_t r = 0; r < 8; r++) want.push_back(byte(r * 8 + c));
  EXPECT_EQ(p.to_vector<uint8_t>(), want);
}

TEST_F(Disk, ComputeOnDiskIsAnError) {
  write(64);
  Tensor t = file(64);
  // a column slice is not one byte range: it would need a kernel on DISK
  expect_has(error_of([&] { t.reshape({8, 8})[std::vector<Index>{Slice{}, Slice{0, 2}}].to("CPU").realize(); }), {"DISK", path, "cannot run kernels"});
  expect_has(error_of([&] { (t + 1).to("CPU").realize(); }), {"DISK", "cannot run kernels"});
}

TEST_F(Disk, MissingFileErrorsWhenRealized) {
  Tensor t = file(16);  // nothing is opened yet
  Tensor c = t.to("CPU");
  expect_has(error_of([&] { c.realize(); }), {"DISK", path, "No such file"});
  // the file appearing later is picked up: the mapping is made when the buffer is first used
  write(16);
  Tensor t2 = file(16);
  EXPECT_EQ(t2.to("CPU").to_vector<uint8_t>(), bytes(0, 16));
  expect_has(error_of([&] { nn::state::file_tensor((dir.path() / "none").string()); }), {"none", "no such file"});
}

TEST_F(Disk, BufferLargerThanFile) {
  write(10);
  expect_has(error_of([&] { file(11).to("CPU").realize(); }), {path, "10 bytes", "11 bytes"});
}

TEST_F(Disk, LazyUntilRealized) {
  write(32);
  Tensor v = file(32)[S(0, 4)].bitcast(dtypes::int32).to("CPU");
  uint64_t allocs = get_device("DISK:" + path).allocator().stats().raw_allocs;
  // rewrite the file in place: the tensor was built before, but reads at realize
  {
    std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
    int32_t x = -123456;
    f.write(reinterpret_cast<const char*>(&x), 4);
  }
  EXPECT_EQ(get_device("DISK:" + path).allocator().stats().raw_allocs, allocs);  // nothing mapped yet
  EXPECT_EQ(v.item<int32_t>(), -123456);
  EXPECT_EQ(get_device("DISK:" + path).allocator().stats().raw_allocs, allocs + 1);
}

TEST_F(Disk, CopyToDiskWritesTheFile) {
  write(8);
  Tensor src = Tensor::from_vector<uint8_t>({9, 8, 7, 6, 5, 4, 3, 2}, {8});
  Tensor d = src.to("DISK:" + path);
  EXPECT_EQ(d.to("CPU").to_vector<uint8_t>(), (std::vector<uint8_t>{9, 8, 7, 6, 5, 4, 3, 2}));
  std::ifstream f(path, std::ios::binary);
  std::string s(std::istreambuf_iterator<char>(f), {});
  EXPECT_EQ(s, std::string("\x09\x08\x07\x06\x05\x04\x03\x02", 8));
}

// to_mapped: the CPU tensor is the DISK buffer's mapping at the view's offset (no COPY, no memory of its own)
TEST_F(Disk, ToMappedIsTheFilesPagesWhereTheyLie) {
  write(4096 + 64);
  Tensor t = file(4096 + 64);
  Tensor m = t[S(4096 + 16, 4096 + 48)].bitcast(dtypes::int32).reshape({2, 4}).to_mapped("CPU");
  EXPECT_EQ(m.device(), "CPU");
  EXPECT_EQ(m.shape(), (Shape{2, 4}));
  EXPECT_TRUE(schedule_linear({m}).src().empty());  // nothing to copy or compute
  char* base = static_cast<char*>(buffer_of(uop_of(t).base()).ptr());
  EXPECT_EQ(buffer_of(uop_of(m).base()).ptr(), base + 4096 + 16);
  EXPECT_EQ(m.to_vector<int32_t>(), as<int32_t>(4096 + 16, 4096 + 48));
  // kernels read it in place; rows of a 2-d view are one range too
  std::vector<int32_t> want;
  for (int32_t v : as<int32_t>(4096 + 16, 4096 + 48)) want.push_back(v * 3);
  EXPECT_EQ((m * 3).to_vector<int32_t>(), want);
  EXPECT_EQ(t.reshape({65, 64})[S(2, 4)].to_mapped("CPU").to_vector<uint8_t>(), bytes(128, 256));
  // the mapped tensor keeps the mapping alive after every DISK tensor is gone
  Tensor keep = file(64)[S(32, 48)].to_mapped("CPU");
  EXPECT_EQ(keep.to_vector<uint8_t>(), bytes(32, 48));
}

// data() of a view of the file reads it as it lies (DISK's pread), with no schedule; a DISK tensor with a copy pending
// is realized first
TEST_F(Disk, DataOfAViewIsReadWithoutASchedule) {
  write(64);
  Tensor t = file(64);
  int64_t sched = engine_stats().schedules;
  EXPECT_EQ(t[S(8, 24)].data(), bytes(8, 24));
  EXPECT_EQ(t[S(4, 12)].bitcast(dtypes::int32).reshape({2}).to_vector<int32_t>(), as<int32_t>(4, 12));
  EXPECT_EQ(engine_stats().schedules, sched);
  Tensor d = Tensor::from_vector<uint8_t>({9, 8, 7, 6}, {4}).to("DISK:" + path);
  EXPECT_EQ(d.data(), (std::vector<uint8_t>{9, 8, 7, 6}));
  EXPECT_GT(engine_stats().schedules, sched);
}

TEST_F(Disk, ToMappedWritesStayInTheProcess) {
  write(64);
  Tensor m = file(64)[S(0, 16)].to_mapped("CPU");
  m.assign(Tensor::full({16}, 7, dtypes::uint8)).realize();
  EXPECT_EQ(m.to_vector<uint8_t>(), std::vector<uint8_t>(16, 7));
  // the file and a fresh copy of it are as written
  EXPECT_EQ(file(64)[S(0, 16)].to("CPU").to_vector<uint8_t>(), bytes(0, 16));
  std::ifstream f(path, std::ios::binary);
  std::string s(std::istreambuf_iterator<char>(f), {});
  EXPECT_EQ(std::vector<uint8_t>(s.begin(), s.begin() + 16), bytes(0, 16));
}

TEST_F(Disk, ToMappedFallsBackToACopy) {
  write(64);
  Tensor t = file(64);
  // a range not 16-byte aligned is copied (kernels' aligned vector loads), as is a tensor of another device
  Tensor u = t[S(3, 19)].bitcast(dtypes::uint64).to_mapped("CPU");
  EXPECT_EQ(calls_of(u), (std::vector<std::string>{"COPY DISK:" + path + "->CPU"}));
  EXPECT_EQ(u.to_vector<uint64_t>(), as<uint64_t>(3, 19));
  Tensor c = Tensor::from_vector<int32_t>({1, 2, 3}, {3});
  EXPECT_EQ(c.to_mapped("CPU:1").device(), "CPU:1");
  EXPECT_EQ(c.to_mapped("CPU:1").to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 3}));
  // a view that is not one byte range of the file says so
  expect_has(error_of([&] { t.reshape({8, 8})[std::vector<Index>{Slice{}, Slice{0, 2}}].to_mapped("CPU"); }), {"to_mapped", "non-contiguous", "to()"});
}

TEST(CrossDevice, CpuToCpu1AndBack) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  Tensor b = a.to("CPU:1");
  EXPECT_EQ(b.device(), "CPU:1");
  EXPECT_EQ(calls_of(b), (std::vector<std::string>{"COPY CPU->CPU:1"}));
  Tensor c = (b * 10).sum(1);
  EXPECT_EQ(c.device(), "CPU:1");
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{30, 70}));
  Tensor back = (b + 1).to("CPU");
  EXPECT_EQ(back.device(), "CPU");
  EXPECT_EQ(back.to_vector<float>(), (std::vector<float>{2, 3, 4, 5}));
  // to the same device is no copy at all
  EXPECT_TRUE(a.to("CPU").is(a));
}

TEST(CrossDevice, ViewsAreMadeContiguousOnTheSource) {
  Tensor a = Tensor::from_vector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor p = a.permute({1, 0}).to("CPU:1");
  EXPECT_EQ(calls_of(p), (std::vector<std::string>{"KERNEL CPU", "COPY CPU->CPU:1"}));
  EXPECT_EQ(p.to_vector<int32_t>(), (std::vector<int32_t>{1, 4, 2, 5, 3, 6}));
  // a contiguous range of a buffer is copied directly
  Tensor r = a[int64_t(1)].to("CPU:1");
  EXPECT_EQ(calls_of(r), (std::vector<std::string>{"COPY CPU->CPU:1"}));
  EXPECT_EQ(r.to_vector<int32_t>(), (std::vector<int32_t>{4, 5, 6}));
}

TEST(CrossDevice, MixingDevicesInOneKernelIsAnError) {
  Tensor a = Tensor::from_vector<float>({1, 2});
  Tensor b = Tensor::from_vector<float>({1, 2}, {2}, std::nullopt, "CPU:1");
  EXPECT_NE(error_of([&] { (a + b).realize(); }), "<no throw>");
}
