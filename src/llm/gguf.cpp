// GGUF files on DISK: the header read in growing prefixes, each tensor a lazy view of the file decoded on a device.
#include "tg/gguf.h"
#include "tg/state.h"

namespace tg::gguf {

GGUF gguf_load(const std::string& path) {
  GGUF g;
  g.file = nn::state::file_tensor(path);
  uint64_t size = uint64_t(g.file.shape()[0]);
  // the header is read in growing prefixes: most headers fit the first MiB, a large vocabulary takes a few more reads
  uint64_t have = std::min<uint64_t>(size, 1 << 20);
  for (;;) {
    std::vector<uint8_t> b = have ? g.file.shrink({{0, int64_t(have)}}).to("CPU").data() : std::vector<uint8_t>{};
    try {
      static_cast<Header&>(g) = parse_header(b, size, "gguf: " + path);
      return g;
    } catch (const NeedMore& m) {
      have = std::min(size, std::max(m.bytes, have * 2));
    }
  }
}

const TensorInfo& GGUF::info(const std::string& name) const {
  for (auto& t : tensors)
    if (t.name == name) return t;
  throw Error("gguf: the file has no tensor \"" + name + "\"");
}

Tensor GGUF::tensor(const std::string& name, const std::string& device) const {
  const TensorInfo& t = info(name);
  if (!ggml_type_supported(t.type)) throw Error("gguf: tensor \"" + name + "\" has type " + ggml_type_name(uint32_t(t.type)) + ", which is not supported yet");
  int64_t b = int64_t(data_start + t.offset);
  Tensor raw = t.nbytes ? file.shrink({{b, b + t.nbytes}}) : Tensor::empty({0}, dtypes::uint8);
  return ggml_data_to_tensor(raw.to(device), t.numel(), t.type).reshape(t.shape);
}

std::map<std::string, Tensor> GGUF::state_dict(const std::string& device) const {
  std::map<std::string, Tensor> ret;
  for (auto& t : tensors) ret.emplace(t.name, tensor(t.name, device));
  return ret;
}

}  // namespace tg::gguf
