// tinygrad's nn/state.py: state dicts of Modules, and safetensors files loaded lazily from DISK.
#include "tg/state.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tg/device.h"

namespace tg::nn::state {

namespace {

std::string shape_s(const Shape& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); i++) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

struct Collect : StateVisitor {
  std::vector<std::pair<std::string, Tensor*>> items;
  void tensor(const std::string& name, Tensor& t) override { items.push_back({name, &t}); }
};
std::vector<std::pair<std::string, Tensor*>> visit(Module& m) {
  Collect c;
  m.visit_state(c);
  return std::move(c.items);
}

// the bytes of a (small) tensor, copied to the CPU first so only its range of a DISK file is read
std::vector<uint8_t> host_bytes(const Tensor& t) { return t.device() && *t.device() != "CPU" ? t.to("CPU").data() : t.data(); }

const std::vector<std::pair<std::string, DType>>& safe_dtypes() {
  static const std::vector<std::pair<std::string, DType>> m{
      {"BOOL", dtypes::bool_},   {"I8", dtypes::int8},      {"U8", dtypes::uint8},     {"I16", dtypes::int16},
      {"U16", dtypes::uint16},   {"I32", dtypes::int32},    {"U32", dtypes::uint32},   {"I64", dtypes::int64},
      {"U64", dtypes::uint64},   {"F16", dtypes::float16},  {"BF16", dtypes::bfloat16}, {"F32", dtypes::float32},
      {"F64", dtypes::float64},  {"F8_E4M3", dtypes::fp8e4m3}, {"F8_E5M2", dtypes::fp8e5m2}};
  return m;
}

}  // namespace

// ***** 1. state dicts *****

std::map<std::string, Tensor> get_state_dict(Module& m) {
  std::map<std::string, Tensor> ret;
  for (auto& [k, t] : visit(m)) ret.emplace(k, *t);
  return ret;
}

std::vector<Tensor> get_parameters(Module& m) {
  std::vector<Tensor> ret;
  for (auto& [k, t] : visit(m)) ret.push_back(*t);
  return ret;
}

std::vector<Tensor> load_state_dict(Module& m, const std::map<std::string, Tensor>& state_dict, bool strict, bool realize) {
  auto model = visit(m);
  if (strict) {
    std::set<std::string> names;
    std::string missing, unexpected;
    for (auto& [k, t] : model) {
      names.insert(k);
      if (!state_dict.contains(k)) missing += (missing.empty() ? "" : ", ") + k;
    }
    for (auto& [k, v] : state_dict)
      if (!names.contains(k)) unexpected += (unexpected.empty() ? "" : ", ") + k;
    if (!missing.empty() || !unexpected.empty())
      throw Error("load_state_dict: " + (missing.empty() ? "" : "missing keys in the state dict: " + missing) +
                  (missing.empty() || unexpected.empty() ? "" : "; ") +
                  (unexpected.empty() ? "" : "unexpected keys the model does not have: " + unexpected));
  }
  // check everything before replacing anything, so a bad dict leaves the model as it was
  std::vector<std::pair<Tensor*, Tensor>> todo;
  for (auto& [k, t] : model) {
    auto it = state_dict.find(k);
    if (it == state_dict.end()) continue;
    Tensor v = it->second;
    if (v.shape() != t->shape()) {
      if (v.numel() == 1 && t->numel() == 1 && v.ndim() <= 1 && t->ndim() <= 1) v = v.reshape(t->shape());
      else throw Error("load_state_dict: shape mismatch in `" + k + "`: the model has " + shape_s(t->shape()) + ", the state dict " + shape_s(v.shape()));
    }
    if (v.dtype() != t->dtype()) {
      std::ostringstream os;
      os << "load_state_dict: dtype mismatch in `" << k << "`: the model has " << t->dtype() << ", the state dict " << v.dtype();
      throw Error(os.str());
    }
    if (t->device() && v.device()) v = v.to(*t->device());
    todo.push_back({t, v});
  }
  std::vector<Tensor> ret;
  for (auto& [t, v] : todo) ret.push_back(t->replace(v));
  if (realize) Tensor::realize(ret);
  return ret;
}

// ***** 2. files on DISK *****

Tensor file_tensor(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) throw Error("cannot open " + path + ": no such file");
  if (!S_ISREG(st.st_mode)) throw Error("cannot open " + path + ": not a regular file");
  return Tensor::empty({int64_t(st.st_size)}, dtypes::uint8, "DISK:" + path);
}

// ***** 3. safetensors *****

std::string safe_dtype_name(DType dt) {
  for (auto& [n, d] : safe_dtypes())
    if (d == dt) return n;
  throw Error("safetensors: no safetensors dtype for " + std::string(dt.name()));
}
DType safe_dtype(const std::string& name) {
  for (auto& [n, d] : safe_dtypes())
    if (n == name) return d;
  throw Error("safetensors: unknown dtype \"" + name + "\"");
}

SafeMetadata safe_load_metadata(const std::string& path) {
  using nlohmann::json;
  auto bad = [&](const std::string& why) { return Error("safetensors: " + path + ": " + why); };
  SafeMetadata r{file_tensor(path)};
  int64_t fsize = r.file.shape()[0];
  if (fsize < 8) throw bad("truncated: " + std::to_string(fsize) + " bytes, the 8-byte header size does not fit");
  std::vector<uint8_t> lb = host_bytes(r.file.shrink({{0, 8}}));
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--) n = n << 8 | lb[size_t(i)];
  // the spec caps the header at 100MB, which also stops a garbage size from allocating
  if (n > uint64_t(fsize - 8)) throw bad("header size " + std::to_string(n) + " runs past the end of the file (" + std::to_string(fsize) + " bytes)");
  if (n > 100'000'000) throw bad("header size " + std::to_string(n) + " is over the 100MB limit");
  r.data_start = 8 + int64_t(n);
  std::vector<uint8_t> hb = n ? host_bytes(r.file.shrink({{8, r.data_start}})) : std::vector<uint8_t>{};
  json h;
  try {
    h = json::parse(hb.begin(), hb.end());
  } catch (const json::exception& e) {
    throw bad(std::string("header is not valid JSON: ") + e.what());
  }
  if (!h.is_object()) throw bad("header is not a JSON object");
  int64_t data_size = fsize - r.data_start;
  std::vector<std::pair<std::pair<int64_t, int64_t>, std::string>> ranges;
  for (auto& [k, v] : h.items()) {
    if (k == "__metadata__") {
      if (!v.is_object()) throw bad("__metadata__ is not a JSON object");
      for (auto& [mk, mv] : v.items()) r.metadata[mk] = mv.is_string() ? mv.get<std::string>() : mv.dump();
      continue;
    }
    auto badk = [&](const std::string& why) { return bad("tensor \"" + k + "\": " + why); };
    if (!v.is_object()) throw badk("entry is not a JSON object");
    if (!v.contains("dtype") || !v["dtype"].is_string()) throw badk("no \"dtype\" string");
    if (!v.contains("shape") || !v["shape"].is_array()) throw badk("no \"shape\" list");
    if (!v.contains("data_offsets") || !v["data_offsets"].is_array() || v["data_offsets"].size() != 2) throw badk("no \"data_offsets\" pair");
    SafeTensorInfo info;
    std::string dn = v["dtype"].get<std::string>();
    try {
      info.dtype = safe_dtype(dn);
    } catch (const Error&) {
      throw badk("unknown dtype \"" + dn + "\"");
    }
    // element count, guarding the product against overflow on absurd shapes
    uint64_t numel = 1;
    bool huge = false;
    for (auto& d : v["shape"]) {
      if (!d.is_number_unsigned()) throw badk("shape " + v["shape"].dump() + " is not a list of non-negative integers");
      uint64_t x = d.get<uint64_t>();
      if (x > uint64_t(INT64_MAX)) huge = true;
      info.shape.push_back(int64_t(std::min<uint64_t>(x, uint64_t(INT64_MAX))));
      if (x && numel > uint64_t(INT64_MAX) / x) huge = true;
      else numel *= x;
    }
    for (auto& o : v["data_offsets"])
      if (!o.is_number_unsigned()) throw badk("data_offsets " + v["data_offsets"].dump() + " are not non-negative integers");
    uint64_t b = v["data_offsets"][0].get<uint64_t>(), e = v["data_offsets"][1].get<uint64_t>();
    if (b > e || e > uint64_t(data_size))
      throw badk("data_offsets [" + std::to_string(b) + ", " + std::to_string(e) + "] out of range of the " + std::to_string(data_size) +
                 " data bytes");
    if (huge || numel * uint64_t(info.dtype.itemsize()) != e - b)
      throw badk("data_offsets [" + std::to_string(b) + ", " + std::to_string(e) + "] hold " + std::to_string(e - b) + " bytes, but " + dn +
                 " " + shape_s(info.shape) + " needs " + (huge ? std::string("more") : std::to_string(numel * uint64_t(info.dtype.itemsize()))));
    info.begin = int64_t(b), info.end = int64_t(e);
    if (e > b) ranges.push_back({{info.begin, info.end}, k});
    r.tensors[k] = std::move(info);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); i++)
    if (ranges[i].first.first < ranges[i - 1].first.second)
      throw bad("tensors \"" + ranges[i - 1].second + "\" and \"" + ranges[i].second + "\" overlap");
  return r;
}

std::map<std::string, Tensor> safe_load(const std::string& path) {
  SafeMetadata md = safe_load_metadata(path);
  std::map<std::string, Tensor> ret;
  for (auto& [k, info] : md.tensors) {
    int64_t b = md.data_start + info.begin, e = md.data_start + info.end;
    ret.emplace(k, md.file.shrink({{b, e}}).bitcast(info.dtype).reshape(info.shape));
  }
  return ret;
}

void safe_save(const std::map<std::string, Tensor>& tensors, const std::string& path, const std::map<std::string, std::string>& metadata) {
  using nlohmann::json;
  std::vector<std::pair<std::string, Tensor>> order(tensors.begin(), tensors.end());
  for (auto& [k, t] : order) {
    if (k == "__metadata__") throw Error("safe_save: \"__metadata__\" is reserved for the metadata, it cannot name a tensor");
    if (t.dtype().is_weak()) throw Error("safe_save: tensor \"" + k + "\" has weak dtype " + std::string(t.dtype().name()) + ", cast it to a concrete dtype");
    safe_dtype_name(t.dtype());
  }
  // larger elements first: every offset is then a multiple of its own element size
  std::stable_sort(order.begin(), order.end(), [](auto& a, auto& b) { return a.second.dtype().itemsize() > b.second.dtype().itemsize(); });
  json h = json::object();
  if (!metadata.empty()) h["__metadata__"] = metadata;
  int64_t off = 0;
  for (auto& [k, t] : order) {
    int64_t nb = t.numel() * t.dtype().itemsize();
    h[k] = {{"dtype", safe_dtype_name(t.dtype())}, {"shape", t.shape()}, {"data_offsets", {off, off + nb}}};
    off += nb;
  }
  std::string j = h.dump();
  j.append((8 - j.size() % 8) % 8, ' ');
  // written beside the target and renamed over it: buffers still mapping the old file keep seeing the old file
  std::string tmp = path + ".tmp" + std::to_string(::getpid());
  std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
  if (!f) throw Error("safe_save: cannot write " + tmp);
  try {
    uint8_t lb[8];
    for (int i = 0; i < 8; i++) lb[i] = uint8_t(uint64_t(j.size()) >> (8 * i));
    f.write(reinterpret_cast<const char*>(lb), 8);
    f.write(j.data(), std::streamsize(j.size()));
    for (auto& [k, t] : order) {
      std::vector<uint8_t> d = t.numel() ? host_bytes(t) : std::vector<uint8_t>{};
      f.write(reinterpret_cast<const char*>(d.data()), std::streamsize(d.size()));
    }
    f.close();
    if (!f) throw Error("safe_save: writing " + tmp + " failed");
    if (std::rename(tmp.c_str(), path.c_str()) != 0) throw Error("safe_save: cannot rename " + tmp + " to " + path);
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
}

}  // namespace tg::nn::state
