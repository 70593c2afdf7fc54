// GGUF writer (ggml's docs/gguf.md, version 3): metadata, tensor infos, and the data section, every tensor aligned.
#include <cstring>
#include <fstream>
#include <set>

#include "tg/gguf.h"

namespace tg::gguf {

namespace {

struct Writer {
  std::vector<uint8_t> b;
  template <class T> void num(T x) {
    size_t n = b.size();
    b.resize(n + sizeof(T));
    std::memcpy(b.data() + n, &x, sizeof(T));  // little-endian, as every host we build for
  }
  void str(const std::string& s) {
    num<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
  }
  void value(const Value& v, const std::string& key, int depth) {
    if (auto* a = std::get_if<Value::Array>(&v.v)) {
      if (depth >= 16) throw Error("gguf write: \"" + key + "\": arrays nested more than 16 deep");
      num<uint32_t>(uint32_t(a->type));
      num<uint64_t>(a->items.size());
      for (auto& x : a->items) {
        if (x.type() != a->type)
          throw Error("gguf write: \"" + key + "\": an array of " + value_type_name(a->type) + " holds a " + value_type_name(x.type()));
        value(x, key, depth + 1);
      }
      return;
    }
    std::visit([&](const auto& x) {
      using T = std::decay_t<decltype(x)>;
      if constexpr (std::is_same_v<T, std::string>) str(x);
      else if constexpr (std::is_same_v<T, bool>) num<uint8_t>(x ? 1 : 0);
      else if constexpr (!std::is_same_v<T, Value::Array>) num<T>(x);
    }, v.v);
  }
};

GGMLType ggml_type_of(DType d, const std::string& name) {
  if (d == dtypes::float32) return GGMLType::F32;
  if (d == dtypes::float16) return GGMLType::F16;
  if (d == dtypes::bfloat16) return GGMLType::BF16;
  if (d == dtypes::float64) return GGMLType::F64;
  if (d == dtypes::int8) return GGMLType::I8;
  if (d == dtypes::int16) return GGMLType::I16;
  if (d == dtypes::int32) return GGMLType::I32;
  if (d == dtypes::int64) return GGMLType::I64;
  throw Error("gguf write: tensor \"" + name + "\" is " + std::string(d.name()) + ", which GGUF has no type for (float32, float16, bfloat16, float64, int8..int64)");
}

}  // namespace

std::vector<uint8_t> serialize(const KV& kv, const std::vector<std::pair<std::string, Tensor>>& tensors) {
  uint64_t align = 32;
  std::set<std::string> keys, names;
  for (auto& [k, v] : kv) {
    if (!keys.insert(k).second) throw Error("gguf write: duplicate metadata key \"" + k + "\"");
    if (k != "general.alignment") continue;
    ValueType t = v.type();
    if (t != ValueType::UINT8 && t != ValueType::UINT16 && t != ValueType::UINT32 && t != ValueType::UINT64)
      throw Error("gguf write: general.alignment is " + value_type_name(t) + ", not an unsigned integer");
    align = t == ValueType::UINT64 ? std::get<uint64_t>(v.v) : uint64_t(v.as_int());
    if (align == 0 || (align & (align - 1)) || align > (1u << 30))
      throw Error("gguf write: general.alignment " + std::to_string(align) + " is not a power of two up to 2^30");
  }
  Writer w;
  w.b.insert(w.b.end(), {'G', 'G', 'U', 'F'});
  w.num<uint32_t>(3);
  w.num<uint64_t>(tensors.size());
  w.num<uint64_t>(kv.size());
  for (auto& [k, v] : kv) {
    w.str(k);
    w.num<uint32_t>(uint32_t(v.type()));
    w.value(v, k, 0);
  }
  std::vector<std::vector<uint8_t>> data;
  uint64_t offset = 0;
  for (auto& [name, t] : tensors) {
    if (!names.insert(name).second) throw Error("gguf write: duplicate tensor \"" + name + "\"");
    GGMLType ty = ggml_type_of(t.dtype(), name);
    if (t.ndim() > 4) throw Error("gguf write: tensor \"" + name + "\" has " + std::to_string(t.ndim()) + " dims, GGUF allows at most 4");
    w.str(name);
    w.num<uint32_t>(uint32_t(t.ndim()));
    for (size_t d = t.shape().size(); d-- > 0;) w.num<uint64_t>(uint64_t(t.shape()[d]));
    w.num<uint32_t>(uint32_t(ty));
    w.num<uint64_t>(offset);
    data.push_back(t.to("CPU").data());
    offset += (data.back().size() + align - 1) / align * align;
  }
  for (auto& d : data) {
    w.b.resize((w.b.size() + align - 1) / align * align);
    w.b.insert(w.b.end(), d.begin(), d.end());
  }
  return w.b;
}

void write(const std::string& path, const KV& kv, const std::vector<std::pair<std::string, Tensor>>& tensors) {
  std::vector<uint8_t> b = serialize(kv, tensors);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f || !f.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size())) || !f.flush())
    throw Error("gguf write: cannot write " + path);
}

}  // namespace tg::gguf
