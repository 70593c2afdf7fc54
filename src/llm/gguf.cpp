// GGUF files on DISK: the header read in growing prefixes, each tensor a lazy view of its file decoded on a device;
// a model split over several files (NAME-00001-of-0000N.gguf, as gguf-split writes them) is loaded from its first.
#include <cstdio>
#include <regex>
#include <set>

#include "tg/gguf.h"
#include "tg/state.h"

namespace tg::gguf {

namespace {

std::pair<Header, Tensor> load_one(const std::string& path) {
  Tensor file = nn::state::file_tensor(path);
  uint64_t size = uint64_t(file.shape()[0]);
  // most headers fit the first MiB; a large vocabulary takes a few more reads
  uint64_t have = std::min<uint64_t>(size, 1 << 20);
  for (;;) {
    std::vector<uint8_t> b = have ? file.shrink({{0, int64_t(have)}}).to("CPU").data() : std::vector<uint8_t>{};
    try {
      return {parse_header(b, size, "gguf: " + path), file};
    } catch (const NeedMore& m) {
      have = std::min(size, std::max(m.bytes, have * 2));
    }
  }
}

int64_t kv_int(const Header& h, const std::string& key, int64_t dflt, const std::string& path) {
  auto it = h.kv.find(key);
  if (it == h.kv.end()) return dflt;
  if (!it->second.is_int()) throw Error("gguf: " + path + ": " + key + " is " + value_type_name(it->second.type()) + ", not an integer");
  return it->second.as_int();
}

}  // namespace

GGUF gguf_load(const std::string& path) {
  GGUF g;
  Tensor file;
  std::tie(static_cast<Header&>(g), file) = load_one(path);
  g.parts.push_back({file, g.data_start});
  int64_t count = kv_int(g, "split.count", 1, path);
  if (count <= 1) return g;
  if (int64_t no = kv_int(g, "split.no", 0, path); no != 0)
    throw Error("gguf: " + path + " is part " + std::to_string(no + 1) + " of a split model: load it from its first part (split.no = 0)");
  auto name = [&](const std::string& stem, int64_t i) {
    char s[40];
    std::snprintf(s, sizeof s, "-%05lld-of-%05lld.gguf", (long long)i, (long long)count);
    return stem + s;
  };
  std::smatch m;
  if (!std::regex_match(path, m, std::regex("^(.*)-00001-of-(\\d{5})\\.gguf$")) || std::stoll(m[2]) != count)
    throw Error("gguf: " + path + " is the first of " + std::to_string(count) + " parts, but is not named " + name("NAME", 1) +
                ", which names the others");
  std::set<std::string> names;
  for (auto& t : g.tensors) names.insert(t.name);
  for (int64_t i = 1; i < count; i++) {
    std::string p = name(m[1].str(), i + 1);
    auto [h, f] = load_one(p);
    if (kv_int(h, "split.no", -1, p) != i || kv_int(h, "split.count", -1, p) != count)
      throw Error("gguf: " + p + " does not say it is part " + std::to_string(i + 1) + " of " + std::to_string(count) + " (split.no, split.count)");
    for (auto& t : h.tensors) {
      if (!names.insert(t.name).second) throw Error("gguf: " + p + ": tensor \"" + t.name + "\" is in an earlier part too");
      t.split = uint32_t(i);
      g.tensors.push_back(std::move(t));
    }
    g.parts.push_back({f, h.data_start});
  }
  if (int64_t n = kv_int(g, "split.tensors.count", int64_t(g.tensors.size()), path); n != int64_t(g.tensors.size()))
    throw Error("gguf: " + path + ": split.tensors.count is " + std::to_string(n) + ", the parts hold " + std::to_string(g.tensors.size()));
  return g;
}

const TensorInfo& GGUF::info(const std::string& name) const {
  for (auto& t : tensors)
    if (t.name == name) return t;
  throw Error("gguf: the file has no tensor \"" + name + "\"");
}

Tensor GGUF::tensor(const std::string& name, const std::string& device) const {
  const TensorInfo& t = info(name);
  if (!ggml_type_supported(t.type)) throw Error("gguf: tensor \"" + name + "\" has type " + ggml_type_name(uint32_t(t.type)) + ", which is not supported yet");
  if (t.split >= parts.size()) throw Error("gguf: tensor \"" + name + "\" is in part " + std::to_string(t.split + 1) + ", which was not loaded");
  int64_t b = int64_t(parts[t.split].data_start + t.offset);
  Tensor raw = t.nbytes ? parts[t.split].file.shrink({{b, b + t.nbytes}}) : Tensor::empty({0}, dtypes::uint8);
  return ggml_data_to_tensor(ggml_data_to_device(raw, t.numel(), t.type, device), t.numel(), t.type).reshape(t.shape);
}

std::map<std::string, Tensor> GGUF::state_dict(const std::string& device) const {
  std::map<std::string, Tensor> ret;
  for (auto& t : tensors) ret.emplace(t.name, tensor(t.name, device));
  return ret;
}

}  // namespace tg::gguf
