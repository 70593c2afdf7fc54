// tinygrad's zip_extract, tar_extract and torch_load: archive members and PyTorch checkpoint tensors as lazy views of
// the file on DISK (src/nn/archive.cpp and torch_file.cpp read the layouts).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <numeric>

#include "nn/archive.h"
#include "nn/torch_file.h"
#include "tg/device.h"
#include "tg/state.h"

namespace tg::nn::state {

namespace {

// the whole file, mapped read-only for the time of a parse: only the pages the parser touches are read
struct Mapped {
  int fd = -1;
  void* p = MAP_FAILED;
  size_t n = 0;
  explicit Mapped(const std::string& path) {
    file_tensor(path);  // the same errors as every loader for a missing file or a directory
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st{};
    if (fd < 0 || ::fstat(fd, &st) != 0) throw Error("cannot open " + path);
    n = size_t(st.st_size);
    if (n && (p = ::mmap(nullptr, n, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED) throw Error("cannot map " + path);
  }
  ~Mapped() {
    if (p != MAP_FAILED) ::munmap(p, n);
    if (fd >= 0) ::close(fd);
  }
  std::span<const uint8_t> bytes() const { return n ? std::span<const uint8_t>(static_cast<const uint8_t*>(p), n) : std::span<const uint8_t>(); }
};

std::map<std::string, Tensor> extract(const std::string& path, const std::vector<archive::Member>& members, std::span<const uint8_t> b, const std::string& what) {
  Tensor file = file_tensor(path);
  std::map<std::string, Tensor> ret;
  for (auto& m : members) {
    if (m.deflated) ret.insert_or_assign(m.name, Tensor::from_bytes(archive::inflate(b, m, what), dtypes::uint8, {int64_t(m.usize)}));
    else ret.insert_or_assign(m.name, file.shrink({{int64_t(m.offset), int64_t(m.offset + m.size)}}));
  }
  return ret;
}

// the tensor torch sees: `size` elements at `offset + sum(i * stride)` of the storage. Contiguous views stay lazy on
// DISK; other non-overlapping strides (transposes, slices, broadcasts) become pad/reshape/shrink/permute/expand on the
// default device, still lazy
Tensor view(const Tensor& storage, const torchfile::TensorView& v, const std::string& what) {
  DType dt = v.dtype;
  int64_t is = dt.itemsize(), nd = int64_t(v.size.size());
  Shape size(v.size.begin(), v.size.end());
  int64_t numel = std::accumulate(size.begin(), size.end(), int64_t(1), std::multiplies<>());
  if (numel == 0) return Tensor::zeros(size, dt);
  auto bytes = [&](int64_t first, int64_t count) { return storage.shrink({{first * is, (first + count) * is}}).bitcast(dt); };
  bool contiguous = true;
  for (int64_t i = nd - 1, want = 1; i >= 0; i--) {
    if (size[size_t(i)] == 1) continue;
    contiguous &= v.stride[size_t(i)] == want;
    want *= size[size_t(i)];
  }
  if (contiguous) return bytes(v.offset, numel).reshape(size);
  std::vector<size_t> dims;  // the axes that move through memory, outermost (largest stride) first
  for (size_t i = 0; i < size.size(); i++)
    if (size[i] > 1 && v.stride[i] > 0) dims.push_back(i);
  std::stable_sort(dims.begin(), dims.end(), [&](size_t a, size_t b) { return v.stride[a] > v.stride[b]; });
  std::vector<int64_t> extent(dims.size() + 1, 1);  // elements spanned by dims[k:]
  for (size_t k = dims.size(); k-- > 0;) {
    extent[k] = extent[k + 1] + (size[dims[k]] - 1) * v.stride[dims[k]];
    if (v.stride[dims[k]] < extent[k + 1])
      throw Error(what + ": tensor \"" + v.name + "\" has overlapping strides, which torch_load does not support");
  }
  Tensor t = bytes(v.offset, extent[0]).to(default_device());
  Shape cur;
  for (size_t k = 0; k < dims.size(); k++) {
    int64_t n = size[dims[k]], s = v.stride[dims[k]];
    std::vector<std::pair<int64_t, int64_t>> pad(cur.size(), {0, 0});
    pad.push_back({0, n * s - extent[k]});
    Shape rs = cur;
    rs.insert(rs.end(), {n, s});
    std::vector<std::pair<int64_t, int64_t>> sh;
    for (int64_t d : cur) sh.push_back({0, d});
    sh.insert(sh.end(), {{0, n}, {0, extent[k + 1]}});
    t = t.pad(pad).reshape(rs).shrink(sh);
    cur.push_back(n);
  }
  t = t.reshape(cur);
  std::vector<int64_t> order(dims.size());  // sorted position of each moving axis, in the tensor's own axis order
  std::vector<size_t> by_axis = dims;
  std::sort(by_axis.begin(), by_axis.end());
  for (size_t j = 0; j < by_axis.size(); j++) order[j] = std::find(dims.begin(), dims.end(), by_axis[j]) - dims.begin();
  Shape ones(size.size(), 1);
  for (size_t d : dims) ones[d] = size[d];
  return t.permute(order).reshape(ones).expand(size);
}

}  // namespace

std::map<std::string, Tensor> zip_extract(const std::string& path) {
  Mapped m(path);
  std::string what = "zip_extract: " + path;
  return extract(path, archive::zip_members(m.bytes(), what), m.bytes(), what);
}

std::map<std::string, Tensor> tar_extract(const std::string& path) {
  Mapped m(path);
  std::string what = "tar_extract: " + path;
  if (!archive::is_tar(m.bytes())) throw Error(what + ": not a tar archive (no valid first header)");
  return extract(path, archive::tar_members(m.bytes(), what), m.bytes(), what);
}

std::map<std::string, Tensor> torch_load(const std::string& path) {
  Mapped m(path);
  std::string what = "torch_load: " + path;
  torchfile::TorchFile f = torchfile::parse(m.bytes(), what);
  Tensor file = file_tensor(path);
  std::vector<Tensor> storages;
  for (auto& s : f.storages)
    storages.push_back(s.is_inflated ? Tensor::from_bytes(s.inflated, dtypes::uint8, {int64_t(s.inflated.size())})
                                     : file.shrink({{int64_t(s.offset), int64_t(s.offset + s.size)}}));
  std::map<std::string, Tensor> ret;
  for (auto& v : f.tensors) ret.insert_or_assign(v.name, view(storages[v.storage], v, what));
  return ret;
}

}  // namespace tg::nn::state
