// tg::nn::datasets::mnist on Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist): counts, shapes, dtypes,
// 6000 train / 1000 test images per class (the dataset's documented balance), and spot values read independently with
// Python's gzip module (`gzip.open(path).read()`, images from byte 16, labels from byte 8). Malformed files (written
// here with zlib) and missing files give errors naming the file.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <numeric>

#include "tg/datasets.h"
#include "util/process.h"
#include "../tensor/tensor_test_util.h"

using namespace tg;
using tg::nn::datasets::mnist;

namespace {

const char* kDir = "/usr/share/datasets/fashion-mnist";

using testutil::error_of;
using testutil::expect_has;

std::vector<uint8_t> be32(uint32_t v) { return {uint8_t(v >> 24), uint8_t(v >> 16), uint8_t(v >> 8), uint8_t(v)}; }
std::vector<uint8_t> idx_file(uint32_t magic, std::vector<uint32_t> dims, size_t data_bytes) {
  std::vector<uint8_t> b = be32(magic);
  for (auto d : dims) for (auto x : be32(d)) b.push_back(x);
  b.resize(b.size() + data_bytes, 1);
  return b;
}
void write_gz(const std::filesystem::path& p, const std::vector<uint8_t>& b) {
  gzFile f = gzopen(p.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  if (!b.empty()) {
    ASSERT_EQ(gzwrite(f, b.data(), unsigned(b.size())), int(b.size()));
  }
  gzclose(f);
}
// a well-formed little dataset of n train and m test items
void write_set(const std::filesystem::path& d, uint32_t n, uint32_t m) {
  write_gz(d / "train-images-idx3-ubyte.gz", idx_file(0x803, {n, 28, 28}, n * 784));
  write_gz(d / "train-labels-idx1-ubyte.gz", idx_file(0x801, {n}, n));
  write_gz(d / "t10k-images-idx3-ubyte.gz", idx_file(0x803, {m, 28, 28}, m * 784));
  write_gz(d / "t10k-labels-idx1-ubyte.gz", idx_file(0x801, {m}, m));
}

}  // namespace

TEST(Mnist, FashionMnistFromDebian) {
  if (!std::filesystem::exists(kDir)) FAIL() << kDir << " is missing: apt-get install dataset-fashion-mnist (setup.sh does)";
  auto d = mnist();  // the default directory
  EXPECT_EQ(d.X_train.shape(), (Shape{60000, 1, 28, 28}));
  EXPECT_EQ(d.Y_train.shape(), Shape{60000});
  EXPECT_EQ(d.X_test.shape(), (Shape{10000, 1, 28, 28}));
  EXPECT_EQ(d.Y_test.shape(), Shape{10000});
  for (auto* t : {&d.X_train, &d.Y_train, &d.X_test, &d.Y_test}) {
    EXPECT_EQ(t->dtype(), dtypes::uint8);
    EXPECT_EQ(t->device(), "CPU");
  }
  std::vector<uint8_t> ytr = d.Y_train.to_vector<uint8_t>(), yte = d.Y_test.to_vector<uint8_t>();
  std::vector<int> ctr(256), cte(256);
  for (auto y : ytr) ctr[y]++;
  for (auto y : yte) cte[y]++;
  for (int c = 0; c < 10; c++) {
    EXPECT_EQ(ctr[size_t(c)], 6000) << "class " << c;
    EXPECT_EQ(cte[size_t(c)], 1000) << "class " << c;
  }
  EXPECT_EQ(std::accumulate(ctr.begin() + 10, ctr.end(), 0), 0);  // no label outside 0..9
  EXPECT_EQ(std::vector<uint8_t>(ytr.begin(), ytr.begin() + 10), (std::vector<uint8_t>{9, 0, 0, 3, 0, 2, 7, 2, 5, 5}));
  EXPECT_EQ(std::vector<uint8_t>(yte.begin(), yte.begin() + 10), (std::vector<uint8_t>{9, 2, 1, 1, 6, 1, 4, 6, 5, 7}));
  // pixel sums, on the device (int64 accumulation) and checked against Python's reading of the same files
  EXPECT_EQ(d.X_train[int64_t(0)].cast(dtypes::int64).sum().item<int64_t>(), 76247);
  Tensor px = d.X_train[std::vector<Index>{int64_t(0), int64_t(0), int64_t(14), int64_t(14)}];
  EXPECT_EQ(px.item<uint8_t>(), 217);
  EXPECT_EQ(d.X_train[int64_t(59999)].cast(dtypes::int64).sum().item<int64_t>(), 16684);
  EXPECT_EQ(d.X_test[int64_t(0)].cast(dtypes::int64).sum().item<int64_t>(), 33456);
  EXPECT_EQ(d.X_train.cast(dtypes::int64).sum().item<int64_t>(), 3431114169);
  EXPECT_EQ(d.X_test.cast(dtypes::int64).sum().item<int64_t>(), 573469082);
}

TEST(Mnist, ExplicitDirAndDevice) {
  if (!std::filesystem::exists(kDir)) FAIL() << kDir << " is missing";
  auto d = mnist(kDir, true, "CPU:1");
  EXPECT_EQ(d.X_test.device(), "CPU:1");
  EXPECT_EQ(d.Y_test[int64_t(0)].item<uint8_t>(), 9);
}

TEST(Mnist, SmallWellFormedSet) {
  TempDir dir;
  write_set(dir.path(), 3, 2);
  auto d = mnist(dir.path().string());
  EXPECT_EQ(d.X_train.shape(), (Shape{3, 1, 28, 28}));
  EXPECT_EQ(d.Y_test.shape(), Shape{2});
  EXPECT_EQ(d.Y_train.to_vector<uint8_t>(), (std::vector<uint8_t>{1, 1, 1}));
}

TEST(Mnist, MissingFiles) {
  TempDir dir;
  expect_has(error_of([&] { mnist(dir.path().string()); }), {"train-images-idx3-ubyte.gz", "no such file"});
  write_set(dir.path(), 1, 1);
  std::filesystem::remove(dir.path() / "t10k-labels-idx1-ubyte.gz");
  expect_has(error_of([&] { mnist(dir.path().string()); }), {(dir.path() / "t10k-labels-idx1-ubyte.gz").string(), "no such file"});
}

TEST(Mnist, MalformedFiles) {
  TempDir dir;
  auto p = dir.path();
  std::string imgs = (p / "train-images-idx3-ubyte.gz").string(), lbls = (p / "train-labels-idx1-ubyte.gz").string();
  auto err = [&] { return error_of([&] { mnist(p.string()); }); };
  write_set(p, 2, 1);
  // wrong magic (a labels file where images belong, and a float IDX)
  write_gz(imgs, idx_file(0x801, {2}, 2));
  expect_has(err(), {imgs, "magic", "2049", "2051"});
  write_gz(imgs, idx_file(0x0D03, {2, 28, 28}, 2 * 784 * 4));
  expect_has(err(), {imgs, "magic"});
  // wrong image size
  write_gz(imgs, idx_file(0x803, {2, 32, 32}, 2 * 1024));
  expect_has(err(), {imgs, "dim 1 is 32, expected 28"});
  // data shorter / longer than the count says
  write_gz(imgs, idx_file(0x803, {2, 28, 28}, 784 + 100));
  expect_has(err(), {imgs, "2 items need 1568 data bytes, the file has 884"});
  write_gz(imgs, idx_file(0x803, {2, 28, 28}, 2 * 784 + 1));
  expect_has(err(), {imgs, "1569"});
  // a header cut short, and an empty file
  write_gz(imgs, {0, 0, 8, 3, 0, 0});
  expect_has(err(), {imgs, "truncated"});
  write_gz(imgs, {});
  expect_has(err(), {imgs, "truncated"});
  // counts that disagree between images and labels
  write_gz(imgs, idx_file(0x803, {2, 28, 28}, 2 * 784));
  write_gz(lbls, idx_file(0x801, {3}, 3));
  expect_has(err(), {imgs, lbls, "2 images", "3 labels"});
  // a gzip stream cut in the middle
  write_gz(lbls, idx_file(0x801, {2}, 2));
  write_gz(imgs, idx_file(0x803, {2, 28, 28}, 2 * 784));
  {
    std::ifstream f(imgs, std::ios::binary);
    std::string s(std::istreambuf_iterator<char>(f), {});
    std::ofstream o(imgs, std::ios::binary | std::ios::trunc);
    o.write(s.data(), std::streamsize(s.size() / 2));
  }
  expect_has(err(), {imgs});
  EXPECT_NE(err().find("gzip"), std::string::npos) << err();
}
