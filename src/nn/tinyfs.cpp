// tinygrad's fs_store / fs_load (nn/state.py) over a directory instead of a TinyFS server: the data's 1 MiB chunks,
// then the chunks of their 16-byte hashes, level by level up to one root chunk whose hash is the key. Loading walks
// the levels back down, checking every chunk against the hash it was asked for.
#include <filesystem>
#include <fstream>

#include "tensor/hash.h"
#include "tg/device.h"
#include "tg/state.h"
#include "util/env.h"

namespace tg::nn::state {

namespace {
namespace fs = std::filesystem;
constexpr int64_t kChunk = int64_t(1) << 20, kHash = 16;
using Bytes = std::vector<uint8_t>;

fs::path store_dir(const std::string& store) {
  if (!store.empty()) return store;
  if (std::string d = getenv_str("TINYFS_DIR"); !d.empty()) return d;
  std::string base = getenv_str("XDG_CACHE_HOME");
  return fs::path(base.empty() ? getenv_str("HOME", "/tmp") + "/.cache" : base) / "tinygrad.cpp" / "tinyfs";
}
std::string hex(const uint8_t* h) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (int64_t i = 0; i < kHash; i++) s += d[h[i] >> 4], s += d[h[i] & 15];
  return s;
}
void pad_chunks(Bytes& b) { b.resize(size_t((int64_t(b.size()) + kChunk - 1) / kChunk * kChunk), 0); }
// the hashes of the whole chunks of b (on `device`), as n * 16 bytes
Bytes chunk_hashes(const Bytes& b, const std::string& device) {
  int64_t n = int64_t(b.size()) / kChunk;
  return hash_1mb(Tensor::from_vector(b, {n, kChunk}, std::nullopt, device)).data();
}
// levels of the tree above `chunks` data chunks: the root is reached when one chunk of hashes is left
int64_t tree_depth(int64_t chunks) {
  int64_t depth = 0;
  for (; chunks > 1; depth++) chunks = (chunks * kHash + kChunk - 1) / kChunk;
  return depth;
}
}  // namespace

Tensor fs_store(const Tensor& t, const std::string& store) {
  if (t.dtype().is_weak()) throw Error("fs_store: a " + std::string(t.dtype().name()) + " tensor has no bytes to store (give it a dtype)");
  if (t.numel() == 0) throw Error("fs_store: the tensor " + t.shape_str() + " is empty");
  fs::path dir = store_dir(store);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("fs_store: cannot create the store " + dir.string() + ": " + ec.message());
  std::string device = t.device().value_or(default_device());
  Bytes data = t.contiguous().data();
  pad_chunks(data);
  for (int64_t level = 0, depth = tree_depth(int64_t(data.size()) / kChunk); level <= depth; level++) {
    Bytes hashes = chunk_hashes(data, device);
    for (size_t i = 0; i * kHash < hashes.size(); i++) {
      fs::path f = dir / hex(&hashes[i * kHash]);
      if (fs::exists(f) && int64_t(fs::file_size(f, ec)) == kChunk) continue;  // content-addressed: already there
      fs::path tmp = f;
      tmp += ".tmp";
      std::ofstream out(tmp, std::ios::binary);
      out.write(reinterpret_cast<const char*>(&data[i * kChunk]), kChunk);
      out.close();
      if (!out) throw Error("fs_store: cannot write " + tmp.string());
      fs::rename(tmp, f, ec);
      if (ec) throw Error("fs_store: cannot write " + f.string() + ": " + ec.message());
    }
    data = std::move(hashes);
    if (level < depth) pad_chunks(data);
  }
  data.resize(kHash);
  return Tensor::from_vector(data, {kHash}, std::nullopt, device);
}

Tensor fs_load(const Tensor& key, int64_t size, const std::string& store) {
  if (key.dtype() != dtypes::uint8 || key.numel() != kHash)
    throw Error("fs_load: the key must be 16 uint8 (what fs_store returns), got " + std::string(key.dtype().name()) + " " + key.shape_str());
  if (size <= 0) throw Error("fs_load: size must be > 0, got " + std::to_string(size));
  fs::path dir = store_dir(store);
  std::string device = key.device().value_or(default_device());
  int64_t base = (size + kChunk - 1) / kChunk;
  std::vector<int64_t> counts{base};  // chunks per level, data first
  while (counts.back() > 1) counts.push_back((counts.back() * kHash + kChunk - 1) / kChunk);
  Bytes hashes = key.contiguous().data(), data;
  for (int64_t level = int64_t(counts.size()) - 1; level >= 0; level--) {
    size_t n = hashes.size() / kHash;
    data.assign(n * kChunk, 0);
    for (size_t i = 0; i < n; i++) {
      fs::path f = dir / hex(&hashes[i * kHash]);
      std::ifstream in(f, std::ios::binary);
      if (!in) throw Error("fs_load: chunk " + hex(&hashes[i * kHash]) + " is not in the store " + dir.string());
      in.read(reinterpret_cast<char*>(&data[i * kChunk]), kChunk);
      if (in.gcount() != kChunk || in.peek() != std::char_traits<char>::eof())
        throw Error("fs_load: chunk " + f.string() + " is corrupt: it is not " + std::to_string(kChunk) + " bytes");
    }
    Bytes got = chunk_hashes(data, device);
    for (size_t i = 0; i < n; i++)
      if (!std::equal(&got[i * kHash], &got[(i + 1) * kHash], &hashes[i * kHash]))
        throw Error("fs_load: chunk " + (dir / hex(&hashes[i * kHash])).string() + " is corrupt: its content hashes to " + hex(&got[i * kHash]));
    if (level > 0) hashes.assign(data.begin(), data.begin() + counts[size_t(level - 1)] * kHash);
  }
  data.resize(size_t(size));
  return Tensor::from_vector(data, {size}, std::nullopt, device);
}

}  // namespace tg::nn::state
