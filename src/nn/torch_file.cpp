// The three torch.save layouts (torch/serialization.py: _save, _legacy_save, and the tar layout legacy_load reads)
// and the walk from the unpickled value to tensor views.
#include "nn/torch_file.h"

#include <map>
#include <optional>

#include "nn/archive.h"
#include "nn/pickle.h"
#include "tg/error.h"

namespace tg::nn::torchfile {

using pickle::Obj;
using pickle::Pickle;
using pickle::Ref;

namespace {
// the element size without DType::itemsize (src/uop), so tests/tools/fuzz links only this folder's parsers
uint64_t elem_size(DType d) {
  switch (d.id) {
    case DTypeId::float64: case DTypeId::int64: case DTypeId::uint64: return 8;
    case DTypeId::float32: case DTypeId::int32: case DTypeId::uint32: return 4;
    case DTypeId::float16: case DTypeId::bfloat16: case DTypeId::int16: case DTypeId::uint16: return 2;
    default: return 1;
  }
}
}  // namespace

DType storage_dtype(const std::string& name, const std::string& what) {
  static const std::map<std::string, DType> m{
      {"DoubleStorage", dtypes::float64}, {"FloatStorage", dtypes::float32}, {"HalfStorage", dtypes::float16},
      {"BFloat16Storage", dtypes::bfloat16}, {"LongStorage", dtypes::int64}, {"IntStorage", dtypes::int32},
      {"ShortStorage", dtypes::int16},     {"CharStorage", dtypes::int8},    {"ByteStorage", dtypes::uint8},
      {"BoolStorage", dtypes::bool_},      {"UInt16Storage", dtypes::uint16}, {"UInt32Storage", dtypes::uint32},
      {"UInt64Storage", dtypes::uint64}};
  auto it = m.find(name);
  if (it == m.end()) throw Error(what + ": storage type torch." + name + " is not supported");
  return it->second;
}

namespace {

// ***** 1. from the unpickled value to tensor views *****

struct PidStorage {
  std::string key;
  DType dtype;
  int64_t numel = 0, view_offset = 0;
};

struct Walk {
  const Pickle& p;
  const std::string& what;
  // the tar layout pickles tensors as persistent ids of its 'tensors' file
  const std::map<std::string, TensorView>* tar_tensors = nullptr;
  std::vector<std::pair<TensorView, std::string>> out;  // each view and its storage key
  std::map<std::string, PidStorage> storages;
  uint64_t visits = 0;

  Error bad(const std::string& name, const std::string& why) const { return Error(what + ": tensor \"" + name + "\": " + why); }
  const Obj& at(Ref r) const { return p[r]; }
  bool is_global(Ref r, std::string_view name) const { return at(r).kind == Obj::Global && at(r).s == name; }

  std::string key_of(Ref r) const {
    const Obj& o = at(r);
    if (o.kind == Obj::Str) return o.s;
    if (o.kind == Obj::Int) return std::to_string(o.i);
    if (o.kind == Obj::Bool) return o.i ? "True" : "False";
    return "?";
  }
  std::vector<int64_t> ints(Ref r, const std::string& name, const char* field) const {
    const Obj& o = at(r);
    if (o.kind != Obj::Tuple && o.kind != Obj::List) throw bad(name, std::string(field) + " is not a tuple");
    if (o.items.size() > 64) throw bad(name, std::string(field) + " has " + std::to_string(o.items.size()) + " dims, more than 64");
    std::vector<int64_t> v;
    for (Ref x : o.items) {
      if (at(x).kind != Obj::Int || at(x).i < 0) throw bad(name, std::string(field) + " holds something that is not a non-negative int");
      v.push_back(at(x).i);
    }
    return v;
  }
  int64_t nonneg(Ref r, const std::string& name, const char* field) const {
    if (at(r).kind != Obj::Int || at(r).i < 0) throw bad(name, std::string(field) + " is not a non-negative int");
    return at(r).i;
  }

  // ('storage', torch.XStorage, key, location, numel[, (view key, offset, size)])
  PidStorage storage(Ref r, const std::string& name) {
    if (at(r).kind != Obj::Persistent) throw bad(name, "the storage is not a persistent id");
    const Obj& t = at(at(r).items[0]);
    if (t.kind != Obj::Tuple || t.items.size() < 5 || at(t.items[0]).kind != Obj::Str || at(t.items[0]).s != "storage")
      throw bad(name, "the storage's persistent id is not ('storage', type, key, location, size)");
    const Obj& ty = at(t.items[1]);
    if (ty.kind != Obj::Global || ty.s.rfind("torch.", 0) != 0) throw bad(name, "the storage type is not a torch global");
    PidStorage s{key_of(t.items[2]), storage_dtype(ty.s.substr(6), what), nonneg(t.items[4], name, "the storage size")};
    if (t.items.size() >= 6 && at(t.items[5]).kind == Obj::Tuple) {
      const Obj& v = at(t.items[5]);
      if (v.items.size() != 3) throw bad(name, "the storage view is not (key, offset, size)");
      s.view_offset = nonneg(v.items[1], name, "the storage view offset");
    }
    auto [it, fresh] = storages.emplace(s.key, s);
    if (!fresh && (it->second.dtype != s.dtype || it->second.numel != s.numel)) throw bad(name, "storage \"" + s.key + "\" is used with two different types or sizes");
    return s;
  }

  // a tensor, or nullopt for anything else
  std::optional<std::pair<TensorView, std::string>> tensor(Ref r, const std::string& name, int depth) {
    const Obj& o = at(r);
    if (o.kind == Obj::Persistent && tar_tensors) {
      auto it = tar_tensors->find(key_of(o.items[0]));
      if (it == tar_tensors->end()) throw bad(name, "persistent id " + key_of(o.items[0]) + " is not in the 'tensors' file");
      return std::pair{it->second, std::string()};
    }
    if (o.kind != Obj::Call || depth > 8) return std::nullopt;
    Ref fn = o.items[0];
    const std::vector<Ref>& args = at(o.items[1]).items;
    if (is_global(fn, "torch._utils._rebuild_tensor_v2") || is_global(fn, "torch._utils._rebuild_tensor")) {
      if (args.size() < 4) throw bad(name, "_rebuild_tensor with " + std::to_string(args.size()) + " arguments");
      PidStorage s = storage(args[0], name);
      TensorView v{name, s.dtype, 0, nonneg(args[1], name, "the storage offset") + s.view_offset, ints(args[2], name, "the size"), ints(args[3], name, "the stride")};
      if (v.size.size() != v.stride.size()) throw bad(name, "size and stride have different lengths");
      return std::pair{std::move(v), s.key};
    }
    // a Parameter: torch._utils._rebuild_parameter(data, requires_grad, hooks[, state]) or an object whose state is (data, ...)
    if (is_global(fn, "torch._utils._rebuild_parameter") || is_global(fn, "torch._utils._rebuild_parameter_with_state"))
      return args.empty() ? std::nullopt : tensor(args[0], name, depth + 1);
    if (at(fn).kind == Obj::Global && at(fn).s.ends_with(".Parameter")) {
      if (o.state && at(o.state).kind == Obj::Tuple && !at(o.state).items.empty()) return tensor(at(o.state).items[0], name, depth + 1);
      return args.empty() ? std::nullopt : tensor(args[0], name, depth + 1);
    }
    return std::nullopt;
  }

  void value(Ref r, const std::string& name, int depth) {
    if (depth > 100) throw Error(what + ": values nested more than 100 deep at \"" + name + "\"");
    if (++visits > 16 * p.arena.size() + 1024) throw Error(what + ": the pickle's values are shared too often to walk");
    const Obj& o = at(r);
    auto join = [&](const std::string& k) { return name.empty() ? k : name + "." + k; };
    if (o.kind == Obj::Dict) {
      for (auto& [k, v] : o.kv) value(v, join(key_of(k)), depth + 1);
    } else if (o.kind == Obj::List || o.kind == Obj::Tuple) {
      for (size_t i = 0; i < o.items.size(); i++) value(o.items[i], join(std::to_string(i)), depth + 1);
    } else if (auto t = tensor(r, name, 0)) {
      t->first.name = name;
      out.push_back(std::move(*t));
    }
  }
};

// ***** 2. the three layouts *****

const Obj& expect(const Pickle& p, Obj::Kind k, const std::string& what, const std::string& thing) {
  if (p[p.root].kind != k) throw Error(what + ": " + thing + " is not what torch writes there");
  return p[p.root];
}

// every view inside its storage; strides non-negative (what torch allows)
void check(const TorchFile& f, const std::string& what) {
  for (const TensorView& v : f.tensors) {
    const Storage& s = f.storages[v.storage];
    uint64_t bytes = s.is_inflated ? s.inflated.size() : s.size, numel = bytes / elem_size(v.dtype);
    uint64_t last = uint64_t(v.offset), count = 1;
    for (size_t i = 0; i < v.size.size(); i++) {
      if (v.size[i] && count > uint64_t(INT64_MAX) / uint64_t(v.size[i])) throw Error(what + ": tensor \"" + v.name + "\": size overflows");
      count *= uint64_t(v.size[i]);
      if (v.size[i] == 0) continue;
      if (uint64_t(v.stride[i]) > uint64_t(INT64_MAX) / uint64_t(v.size[i])) throw Error(what + ": tensor \"" + v.name + "\": stride overflows");
      last += uint64_t(v.size[i] - 1) * uint64_t(v.stride[i]);
      if (last > uint64_t(INT64_MAX)) throw Error(what + ": tensor \"" + v.name + "\": stride overflows");
    }
    if (count && last >= numel)
      throw Error(what + ": tensor \"" + v.name + "\" reaches element " + std::to_string(last) + " of a storage of " + std::to_string(numel));
  }
}

TorchFile from_zip(std::span<const uint8_t> b, const std::string& what) {
  std::vector<archive::Member> members = archive::zip_members(b, what);
  if (members.empty()) throw Error(what + ": empty zip archive, not a torch checkpoint");
  std::string base = members[0].name.substr(0, members[0].name.find('/'));
  const archive::Member* pkl = nullptr;
  std::map<std::string, const archive::Member*> data;
  for (auto& m : members) {
    if (m.name == base + "/data.pkl") pkl = &m;
    else if (m.name.rfind(base + "/data/", 0) == 0) data[m.name.substr(base.size() + 6)] = &m;
  }
  if (!pkl) throw Error(what + ": zip archive without " + base + "/data.pkl, not a torch checkpoint");
  std::vector<uint8_t> pkl_bytes = pkl->deflated ? archive::inflate(b, *pkl, what) : std::vector<uint8_t>(b.begin() + ptrdiff_t(pkl->offset), b.begin() + ptrdiff_t(pkl->offset + pkl->size));
  uint64_t pos = 0;
  Pickle p = pickle::load(pkl_bytes, pos, what + ": data.pkl");
  Walk w{p, what};
  w.value(p.root, "", 0);
  TorchFile f;
  std::map<std::string, size_t> index;
  for (auto& [v, key] : w.out) {
    auto it = index.find(key);
    if (it == index.end()) {
      auto m = data.find(key);
      if (m == data.end()) throw Error(what + ": tensor \"" + v.name + "\": storage " + base + "/data/" + key + " is not in the archive");
      Storage s{m->second->offset, m->second->size};
      if (m->second->deflated) s.inflated = archive::inflate(b, *m->second, what), s.is_inflated = true;
      it = index.emplace(key, f.storages.size()).first;
      f.storages.push_back(std::move(s));
    }
    v.storage = it->second;
    f.tensors.push_back(std::move(v));
  }
  return f;
}

TorchFile from_legacy(std::span<const uint8_t> b, const std::string& what) {
  uint64_t pos = 0;
  Pickle magic = pickle::load(b, pos, what);
  // 0x1950a86a20f9469cfc6c, the magic number torch writes first
  static const std::string want{"\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19", 10};
  if (magic[magic.root].kind != Obj::BigInt || magic[magic.root].s != want) throw Error(what + ": not a torch checkpoint (not a zip or tar archive, and no legacy magic number)");
  Pickle proto = pickle::load(b, pos, what);
  if (expect(proto, Obj::Int, what, "the protocol version").i != 1001) throw Error(what + ": legacy protocol version " + std::to_string(proto[proto.root].i) + " is not supported (only 1001)");
  Pickle sys = pickle::load(b, pos, what);
  for (auto& [k, v] : expect(sys, Obj::Dict, what, "the system info").kv)
    if (sys[k].kind == Obj::Str && sys[k].s == "little_endian" && sys[v].kind == Obj::Bool && !sys[v].i) throw Error(what + ": big-endian checkpoints are not supported");
  Pickle main = pickle::load(b, pos, what);
  Walk w{main, what};
  w.value(main.root, "", 0);
  Pickle keys = pickle::load(b, pos, what);
  TorchFile f;
  std::map<std::string, size_t> index;
  for (Ref k : expect(keys, Obj::List, what, "the storage key list").items) {
    std::string key = keys[k].kind == Obj::Str ? keys[k].s : "?";
    auto st = w.storages.find(key);
    if (st == w.storages.end()) throw Error(what + ": storage \"" + key + "\" is listed but no tensor names its type");
    if (b.size() - pos < 8) throw Error(what + ": truncated before the data of storage \"" + key + "\"");
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | b[pos + uint64_t(i)];
    uint64_t is = elem_size(st->second.dtype);
    if (n > (b.size() - pos - 8) / is) throw Error(what + ": storage \"" + key + "\" of " + std::to_string(n) + " elements runs past the end of the file");
    if (!index.emplace(key, f.storages.size()).second) throw Error(what + ": storage \"" + key + "\" is listed twice");
    f.storages.push_back({pos + 8, n * is});
    pos += 8 + n * is;
  }
  for (auto& [v, key] : w.out) {
    auto it = index.find(key);
    if (it == index.end()) throw Error(what + ": tensor \"" + v.name + "\": storage \"" + key + "\" has no data in the file");
    v.storage = it->second;
    f.tensors.push_back(std::move(v));
  }
  return f;
}

TorchFile from_tar(std::span<const uint8_t> b, const std::string& what) {
  std::map<std::string, archive::Member> files;
  for (auto& m : archive::tar_members(b, what)) files[m.name] = m;
  for (const char* n : {"storages", "tensors", "pickle"})
    if (!files.contains(n)) throw Error(what + ": tar archive without '" + n + "', not a torch checkpoint");
  auto part = [&](const char* n) { return b.subspan(files[n].offset, files[n].size); };
  auto count = [&](std::span<const uint8_t> s, uint64_t& pos, const std::string& w) {
    Pickle p = pickle::load(s, pos, w);
    int64_t n = expect(p, Obj::Int, w, "the count").i;
    if (n < 0 || uint64_t(n) > s.size()) throw Error(w + ": bad count " + std::to_string(n));
    return n;
  };
  auto i64 = [&](std::span<const uint8_t> s, uint64_t& pos, int n, const std::string& w) {
    if (s.size() - pos < uint64_t(n)) throw Error(w + ": truncated");
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | s[pos + uint64_t(i)];
    pos += uint64_t(n);
    return n == 4 ? int64_t(int32_t(uint32_t(v))) : int64_t(v);
  };
  TorchFile f;
  // 'storages': count, then per storage a pickled (key, location, storage type), an int64 element count and the data
  std::map<std::string, std::pair<size_t, DType>> storages;
  std::span<const uint8_t> s = part("storages");
  std::string ws = what + ": 'storages'";
  uint64_t pos = 0;
  for (int64_t i = 0, n = count(s, pos, ws); i < n; i++) {
    Pickle p = pickle::load(s, pos, ws);
    const Obj& t = expect(p, Obj::Tuple, ws, "a storage header");
    if (t.items.size() != 3 || p[t.items[2]].kind != Obj::Global || p[t.items[2]].s.rfind("torch.", 0) != 0) throw Error(ws + ": a storage header is not (key, location, storage type)");
    Walk kw{p, what};
    DType dt = storage_dtype(p[t.items[2]].s.substr(6), what);
    uint64_t numel = uint64_t(i64(s, pos, 8, ws)), is = elem_size(dt);
    if (numel > (s.size() - pos) / is) throw Error(ws + ": storage " + kw.key_of(t.items[0]) + " runs past the end");
    storages[kw.key_of(t.items[0])] = {f.storages.size(), dt};
    f.storages.push_back({files["storages"].offset + pos, numel * is});
    pos += numel * is;
  }
  // 'tensors': count, then per tensor a pickled (key, storage key, type), int32 ndim, 4 bytes, sizes, strides, offset
  std::map<std::string, TensorView> tensors;
  s = part("tensors"), pos = 0, ws = what + ": 'tensors'";
  for (int64_t i = 0, n = count(s, pos, ws); i < n; i++) {
    Pickle p = pickle::load(s, pos, ws);
    const Obj& t = expect(p, Obj::Tuple, ws, "a tensor header");
    if (t.items.size() != 3) throw Error(ws + ": a tensor header is not (key, storage key, type)");
    Walk kw{p, what};
    auto st = storages.find(kw.key_of(t.items[1]));
    if (st == storages.end()) throw Error(ws + ": tensor " + kw.key_of(t.items[0]) + " names storage " + kw.key_of(t.items[1]) + ", which 'storages' does not have");
    int64_t ndim = i64(s, pos, 4, ws);
    if (ndim < 0 || ndim > 64) throw Error(ws + ": tensor " + kw.key_of(t.items[0]) + " has " + std::to_string(ndim) + " dims");
    i64(s, pos, 4, ws);
    TensorView v{"", st->second.second, st->second.first};
    for (int64_t d = 0; d < ndim; d++) v.size.push_back(i64(s, pos, 8, ws));
    for (int64_t d = 0; d < ndim; d++) v.stride.push_back(i64(s, pos, 8, ws));
    v.offset = i64(s, pos, 8, ws);
    for (size_t d = 0; d < v.size.size(); d++)
      if (v.size[d] < 0 || v.stride[d] < 0) throw Error(ws + ": tensor " + kw.key_of(t.items[0]) + " has a negative size or stride");
    if (v.offset < 0) throw Error(ws + ": tensor " + kw.key_of(t.items[0]) + " has a negative offset");
    tensors[kw.key_of(t.items[0])] = std::move(v);
  }
  uint64_t ppos = 0;
  Pickle p = pickle::load(part("pickle"), ppos, what + ": 'pickle'");
  Walk w{p, what, &tensors};
  w.value(p.root, "", 0);
  for (auto& [v, key] : w.out) f.tensors.push_back(std::move(v));
  return f;
}

}  // namespace

TorchFile parse(std::span<const uint8_t> file, const std::string& what) {
  TorchFile f = archive::is_zip(file) ? from_zip(file, what) : archive::is_tar(file) ? from_tar(file, what) : from_legacy(file, what);
  check(f, what);
  return f;
}

}  // namespace tg::nn::torchfile
