// tinygrad's nn/datasets.py mnist: the gzipped IDX files, checked and unpacked into uint8 tensors.
#include "tg/datasets.h"

#include <zlib.h>

#include <cstdint>
#include <memory>
#include <sys/stat.h>
#include <vector>

namespace tg::nn::datasets {

namespace {

std::vector<uint8_t> gunzip_file(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) throw Error("mnist: " + path + ": no such file");
  std::unique_ptr<gzFile_s, int (*)(gzFile)> f(gzopen(path.c_str(), "rb"), gzclose);
  if (!f) throw Error("mnist: cannot open " + path);
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  for (;;) {
    int n = gzread(f.get(), buf, sizeof buf);
    if (n < 0) {
      int err;
      const char* msg = gzerror(f.get(), &err);
      throw Error("mnist: " + path + ": not a valid gzip file (" + msg + ")");
    }
    if (n == 0) break;
    out.insert(out.end(), buf, buf + n);
  }
  int err;
  gzerror(f.get(), &err);
  if (err == Z_BUF_ERROR) throw Error("mnist: " + path + ": the gzip stream is cut short (truncated file)");
  return out;
}

uint32_t be32(const std::vector<uint8_t>& b, size_t off) {
  return uint32_t(b[off]) << 24 | uint32_t(b[off + 1]) << 16 | uint32_t(b[off + 2]) << 8 | uint32_t(b[off + 3]);
}

// an IDX file of unsigned bytes: magic 0x00000800 + ndim, then ndim big-endian u32 dims, then the data. `want` are the
// dims after the first (the count); returns the data with the count in `count`
std::vector<uint8_t> read_idx(const std::string& path, const std::vector<uint32_t>& want, uint32_t& count) {
  std::vector<uint8_t> b = gunzip_file(path);
  auto bad = [&](const std::string& why) { return Error("mnist: " + path + ": " + why); };
  size_t ndim = want.size() + 1, hdr = 4 + 4 * ndim;
  auto truncated = [&] { return bad("truncated IDX header (" + std::to_string(b.size()) + " bytes)"); };
  if (b.size() < 4) throw truncated();
  uint32_t magic = be32(b, 0);
  if (magic != 0x800u + uint32_t(ndim))
    throw bad("bad IDX magic number " + std::to_string(magic) + ", expected " + std::to_string(0x800u + ndim) + " (unsigned bytes, " +
              std::to_string(ndim) + " dims)");
  if (b.size() < hdr) throw truncated();
  count = be32(b, 4);
  uint64_t per = 1;
  for (size_t i = 0; i < want.size(); i++) {
    uint32_t d = be32(b, 8 + 4 * i);
    if (d != want[i]) throw bad("dim " + std::to_string(i + 1) + " is " + std::to_string(d) + ", expected " + std::to_string(want[i]));
    per *= d;
  }
  if (uint64_t(b.size() - hdr) != uint64_t(count) * per)
    throw bad(std::to_string(count) + " items need " + std::to_string(uint64_t(count) * per) + " data bytes, the file has " +
              std::to_string(b.size() - hdr));
  return std::vector<uint8_t>(b.begin() + int64_t(hdr), b.end());
}

std::pair<Tensor, Tensor> load_split(const std::string& dir, const std::string& prefix, const std::string& device) {
  uint32_t n_img, n_lbl;
  std::string ip = dir + "/" + prefix + "-images-idx3-ubyte.gz", lp = dir + "/" + prefix + "-labels-idx1-ubyte.gz";
  std::vector<uint8_t> img = read_idx(ip, {28, 28}, n_img), lbl = read_idx(lp, {}, n_lbl);
  if (n_img != n_lbl) throw Error("mnist: " + ip + " has " + std::to_string(n_img) + " images but " + lp + " has " + std::to_string(n_lbl) + " labels");
  return {Tensor::from_bytes(img, dtypes::uint8, {int64_t(n_img), 1, 28, 28}, std::nullopt, device),
          Tensor::from_bytes(lbl, dtypes::uint8, {int64_t(n_lbl)}, std::nullopt, device)};
}

}  // namespace

Mnist mnist(const std::string& dir_in, bool fashion, const std::string& device) {
  std::string dir = !dir_in.empty() ? dir_in : fashion ? "/usr/share/datasets/fashion-mnist" : "/usr/share/datasets/mnist";
  auto [xtr, ytr] = load_split(dir, "train", device);
  auto [xte, yte] = load_split(dir, "t10k", device);
  return {xtr, ytr, xte, yte};
}

}  // namespace tg::nn::datasets
