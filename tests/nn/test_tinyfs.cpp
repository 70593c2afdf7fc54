// tg::nn::state::fs_store / fs_load (tinygrad's tinyfs, test/unit/test_tinyfs.py) on a directory store: round trips
// (one chunk, several, a module's state dict), the key against tinygrad's reference hash (extra/tinyfs/fetch_file.py's
// hash_file, run with Python's hashlib), content addressing on disk, and missing, corrupt and bad-argument errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/generated.h"
#include "support/hex.h"
#include "tg/nn.h"
#include "tg/state.h"
#include "util/process.h"
#include "../tensor/tensor_test_util.h"

using namespace tg;
using tg::test::hex;
using namespace tg::nn::state;
using testutil::error_of;
using testutil::expect_has;
namespace fs = std::filesystem;

namespace {
constexpr int64_t kChunk = int64_t(1) << 20;
uint8_t byte_at(int64_t i) { return uint8_t((i * 131 + (i >> 9) * 7 + 3) & 0xff); }  // both sides build the data from this
std::vector<uint8_t> bytes(int64_t n) {
  std::vector<uint8_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++) v[size_t(i)] = byte_at(i);
  return v;
}
// tinygrad's hash_file over the same n bytes (chunks of 1 MiB, shake_128 per 4 KiB, levels until one hash is left)
std::string reference_key(int64_t n) {
  std::string py = R"(import hashlib, math
C = 2**20
def h1(d): return hashlib.shake_128(bytes().join(hashlib.shake_128(d[i:i+4096]).digest(16) for i in range(0, len(d), 4096))).digest(16)
data = bytes(((i*131 + (i >> 9)*7 + 3) & 255) for i in range(N))
data += bytes(-len(data) % C)
depth = math.ceil(math.log(len(data) // C, C // 16))
for _ in range(depth + 1):
  data = bytes().join(h1(data[i:i+C]) for i in range(0, len(data), C))
  data += bytes(-len(data) % C)
print(data[:16].hex())
)";
  py.replace(py.find("range(N)"), 8, "range(" + std::to_string(n) + ")");
  test::Shell sh = test::run_shell(test::shell_quote(TG_SYSTEM_PYTHON) + " -c " + test::shell_quote(py) + " 2>&1");
  EXPECT_EQ(sh.rc, 0) << sh.out;
  return sh.out.substr(0, 32);
}
size_t files_in(const fs::path& d) { return size_t(std::distance(fs::directory_iterator(d), fs::directory_iterator{})); }
}  // namespace

TEST(TinyFS, RoundTrip) {
  TempDir dir;
  std::string store = dir.path().string();
  // a float tensor: fs_load gives its bytes back, which bitcast and reshape to the tensor
  std::vector<float> v{1.5f, -2.0f, 3.25f, 0.0f, 1e-30f, 7.0f};
  Tensor t = Tensor::from_vector(v, {2, 3});
  Tensor key = fs_store(t, store);
  EXPECT_EQ(key.shape(), (Shape{16}));
  EXPECT_EQ(key.dtype(), dtypes::uint8);
  Tensor back = fs_load(key, t.nbytes(), store);
  EXPECT_EQ(back.dtype(), dtypes::uint8);
  EXPECT_EQ(back.bitcast(dtypes::float32).reshape({2, 3}).to_vector<float>(), v);
  EXPECT_EQ(files_in(dir.path()), 1u) << "one chunk: the key is its hash, no level above";
  // more than one chunk (tinygrad's test_roundtrip_multichunk_uint8): two data chunks and one chunk of their hashes
  int64_t n = kChunk + 1024;
  Tensor big = Tensor::from_vector(bytes(n), {n});
  Tensor bkey = fs_store(big, store);
  EXPECT_EQ(files_in(dir.path()), 4u);
  EXPECT_EQ(fs_load(bkey, n, store).data(), bytes(n));
}

TEST(TinyFS, KeyIsTinygradsHash) {
  TempDir dir;
  for (int64_t n : {int64_t(256), kChunk + 1024}) {
    std::vector<uint8_t> b = bytes(n);
    std::vector<uint8_t> key = fs_store(Tensor::from_vector(b, {n}), dir.path().string()).data();
    EXPECT_EQ(hex(key), reference_key(n)) << n << " bytes";
    // Tensor::hash of the bytes padded to whole chunks is the same tree
    std::vector<uint8_t> padded = b;
    padded.resize(size_t((n + kChunk - 1) / kChunk * kChunk), 0);
    EXPECT_EQ(Tensor::from_vector(padded, {int64_t(padded.size())}).hash().data(), key) << n << " bytes";
  }
}

TEST(TinyFS, ContentAddressed) {
  TempDir dir;
  std::string store = dir.path().string();
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4});
  std::vector<uint8_t> k1 = fs_store(a, store).data();
  size_t files = files_in(dir.path());
  EXPECT_EQ(fs_store(Tensor::from_vector<float>({1, 2, 3, 4}), store).data(), k1) << "same data, same key";
  EXPECT_EQ(files_in(dir.path()), files) << "and nothing new on disk";
  EXPECT_EQ(fs_store(a.bitcast(dtypes::uint8), store).data(), k1) << "the key is of the bytes, not the dtype";
  std::vector<uint8_t> k2 = fs_store(Tensor::from_vector<float>({5, 6, 7, 8}), store).data();
  EXPECT_NE(k1, k2);
  EXPECT_EQ(files_in(dir.path()), files + 1);
  // the store defaults to $TINYFS_DIR
  TempDir env_dir;
  setenv("TINYFS_DIR", env_dir.path().string().c_str(), 1);
  EXPECT_EQ(fs_store(a).data(), k1);
  EXPECT_EQ(fs_load(Tensor::from_vector(k1, {16}), 16).bitcast(dtypes::float32).to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
  unsetenv("TINYFS_DIR");
  EXPECT_EQ(files_in(env_dir.path()), 1u);
}

TEST(TinyFS, StateDictTree) {
  // a module's tensors stored one by one under their names; a fresh module loads them back by key
  TempDir dir;
  std::string store = dir.path().string();
  Tensor::manual_seed(3);
  nn::Linear src(5, 3), dst(5, 3);
  std::map<std::string, std::pair<Tensor, Tensor>> index;  // name -> (key, the tensor's meta as a template)
  for (auto& [name, t] : get_state_dict(src)) index.emplace(name, std::pair{fs_store(t.realize(), store), t});
  std::map<std::string, Tensor> loaded;
  for (auto& [name, kt] : index) {
    const Tensor& t = kt.second;
    loaded.emplace(name, fs_load(kt.first, t.nbytes(), store).bitcast(t.dtype()).reshape(t.shape()));
  }
  load_state_dict(dst, loaded);
  Tensor x = Tensor::from_vector<float>({1, -2, 3, 0.5f, 2}, {1, 5});
  EXPECT_EQ(dst(x).to_vector<float>(), src(x).to_vector<float>());
  EXPECT_EQ(dst.weight.to_vector<float>(), src.weight.to_vector<float>());
}

TEST(TinyFS, Errors) {
  TempDir dir;
  std::string store = dir.path().string();
  int64_t n = kChunk + 1024;
  Tensor key = fs_store(Tensor::from_vector(bytes(n), {n}), store);
  std::vector<uint8_t> k = key.data();
  // a data chunk gone: its hash is named
  std::vector<uint8_t> first = Tensor::from_vector(bytes(kChunk), {kChunk}).hash().data();
  fs::path chunk0 = dir.path() / hex(first);
  ASSERT_TRUE(fs::exists(chunk0)) << "the first data chunk is named by its hash";
  fs::path saved = dir.path() / "saved";
  fs::copy_file(chunk0, saved);
  fs::remove(chunk0);
  expect_has(error_of([&] { fs_load(key, n, store); }), {"fs_load: chunk " + hex(first) + " is not in the store " + store});
  // a flipped byte: the chunk no longer hashes to its name
  fs::copy_file(saved, chunk0);
  {
    std::fstream f(chunk0, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(12345);
    f.put(char(~byte_at(12345)));
  }
  expect_has(error_of([&] { fs_load(key, n, store); }), {"fs_load: chunk " + chunk0.string() + " is corrupt: its content hashes to"});
  fs::resize_file(chunk0, 1000);
  expect_has(error_of([&] { fs_load(key, n, store); }), {"is corrupt: it is not 1048576 bytes"});
  fs::remove(chunk0);
  fs::copy_file(saved, chunk0);
  EXPECT_EQ(fs_load(key, n, store).data(), bytes(n)) << "repaired";
  // a key that was never stored, and bad arguments
  std::vector<uint8_t> other(16, 0xab);
  expect_has(error_of([&] { fs_load(Tensor::from_vector(other, {16}), 10, store); }), {"chunk abababab", "is not in the store"});
  expect_has(error_of([&] { fs_load(Tensor::from_vector<int32_t>({1, 2, 3, 4}), 10, store); }), {"the key must be 16 uint8", "int (4,)"});
  expect_has(error_of([&] { fs_load(key, 0, store); }), {"size must be > 0, got 0"});
  expect_has(error_of([&] { fs_store(Tensor(1.5), store); }), {"fs_store: a weakfloat tensor has no bytes"});
  expect_has(error_of([&] { fs_store(Tensor::empty({0}), store); }), {"fs_store: the tensor (0,) is empty"});
}
