// GGUF headers (ggml's docs/gguf.md): metadata values, ggml's type table, and the parser, which checks every count,
// length and range against the file's size. It needs nothing but bytes (tests/tools/fuzz builds it alone).
#include <algorithm>
#include <cstring>
#include <set>

#include "tg/gguf.h"

namespace tg::gguf {

// ***** 1. metadata values *****

std::string value_type_name(ValueType t) {
  static const char* names[] = {"UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32",
                                "BOOL",  "STRING", "ARRAY", "UINT64", "INT64", "FLOAT64"};
  return uint32_t(t) < std::size(names) ? names[uint32_t(t)] : "unknown value type " + std::to_string(uint32_t(t));
}

namespace {
Error wrong_type(const Value& v, const char* want) { return Error("gguf: metadata value is " + value_type_name(v.type()) + ", not " + want); }
}  // namespace

bool Value::is_int() const { return type() <= ValueType::INT32 || type() == ValueType::UINT64 || type() == ValueType::INT64; }
bool Value::is_float() const { return type() == ValueType::FLOAT32 || type() == ValueType::FLOAT64; }
int64_t Value::as_int() const {
  if (auto* u = std::get_if<uint64_t>(&v)) {
    if (*u > uint64_t(INT64_MAX)) throw Error("gguf: UINT64 metadata value " + std::to_string(*u) + " does not fit an int64");
    return int64_t(*u);
  }
  if (!is_int()) throw wrong_type(*this, "an integer");
  return std::visit([](auto x) -> int64_t {
    if constexpr (std::is_integral_v<decltype(x)>) return int64_t(x);
    else return 0;
  }, v);
}
double Value::as_float() const {
  if (is_int()) return type() == ValueType::UINT64 ? double(std::get<uint64_t>(v)) : double(as_int());
  if (auto* f = std::get_if<float>(&v)) return *f;
  if (auto* d = std::get_if<double>(&v)) return *d;
  throw wrong_type(*this, "a number");
}
bool Value::as_bool() const {
  if (auto* b = std::get_if<bool>(&v)) return *b;
  throw wrong_type(*this, "BOOL");
}
const std::string& Value::str() const {
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  throw wrong_type(*this, "STRING");
}
const Value::Array& Value::arr() const {
  if (auto* a = std::get_if<Array>(&v)) return *a;
  throw wrong_type(*this, "ARRAY");
}

// ***** 2. ggml types *****

namespace {
struct TypeInfo {
  GGMLType t;
  const char* name;
  int64_t blck, bytes;
};
constexpr TypeInfo TYPES[] = {
    {GGMLType::F32, "F32", 1, 4},          {GGMLType::F16, "F16", 1, 2},          {GGMLType::Q4_0, "Q4_0", 32, 18},
    {GGMLType::Q4_1, "Q4_1", 32, 20},      {GGMLType::Q5_0, "Q5_0", 32, 22},      {GGMLType::Q5_1, "Q5_1", 32, 24},
    {GGMLType::Q8_0, "Q8_0", 32, 34},      {GGMLType::Q8_1, "Q8_1", 32, 40},      {GGMLType::Q2_K, "Q2_K", 256, 84},
    {GGMLType::Q3_K, "Q3_K", 256, 110},    {GGMLType::Q4_K, "Q4_K", 256, 144},    {GGMLType::Q5_K, "Q5_K", 256, 176},
    {GGMLType::Q6_K, "Q6_K", 256, 210},    {GGMLType::Q8_K, "Q8_K", 256, 292},    {GGMLType::IQ2_XXS, "IQ2_XXS", 256, 66},
    {GGMLType::IQ2_XS, "IQ2_XS", 256, 74}, {GGMLType::IQ3_XXS, "IQ3_XXS", 256, 98}, {GGMLType::IQ1_S, "IQ1_S", 256, 50},
    {GGMLType::IQ4_NL, "IQ4_NL", 32, 18},  {GGMLType::IQ3_S, "IQ3_S", 256, 110},  {GGMLType::IQ2_S, "IQ2_S", 256, 82},
    {GGMLType::IQ4_XS, "IQ4_XS", 256, 136}, {GGMLType::I8, "I8", 1, 1},           {GGMLType::I16, "I16", 1, 2},
    {GGMLType::I32, "I32", 1, 4},          {GGMLType::I64, "I64", 1, 8},          {GGMLType::F64, "F64", 1, 8},
    {GGMLType::IQ1_M, "IQ1_M", 256, 56},   {GGMLType::BF16, "BF16", 1, 2},        {GGMLType::TQ1_0, "TQ1_0", 256, 54},
    {GGMLType::TQ2_0, "TQ2_0", 256, 66},   {GGMLType::MXFP4, "MXFP4", 32, 17},
};
const TypeInfo* type_info(uint32_t t) {
  for (auto& i : TYPES)
    if (uint32_t(i.t) == t) return &i;
  return nullptr;
}
}  // namespace

bool ggml_type_known(uint32_t type) { return type_info(type) != nullptr; }
std::string ggml_type_name(uint32_t type) {
  auto* i = type_info(type);
  return i ? i->name : "unknown type " + std::to_string(type);
}
std::pair<int64_t, int64_t> ggml_block(GGMLType type) {
  auto* i = type_info(uint32_t(type));
  if (!i) throw Error("gguf: " + ggml_type_name(uint32_t(type)));
  return {i->blck, i->bytes};
}

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

// ***** 3. the header *****

namespace {

constexpr int MAX_DEPTH = 16;  // nested arrays; a deeper file is refused rather than recursed into
// a value takes ~40 bytes in memory however small it is in the file: past this many (a 256k-token vocabulary is ~1M)
// the header is refused instead of growing to dozens of times the file's size
constexpr uint64_t MAX_VALUES = uint64_t(1) << 25;
constexpr uint64_t MAX_NUMEL = uint64_t(1) << 54;  // keeps numel * bytes per element far from overflowing

struct Reader {
  std::span<const uint8_t> b;
  uint64_t size, pos = 0;  // size: the whole file's
  const std::string& what;
  uint64_t values = 0;

  Error bad(const std::string& why) const { return Error(what + ": " + why); }
  // the next n bytes; a read past the file's end is truncation, past the bytes we have is NeedMore
  const uint8_t* take(uint64_t n, const std::string& ctx) {
    if (n > size - pos) throw bad("truncated: " + ctx + " needs " + std::to_string(n) + " bytes at offset " + std::to_string(pos) +
                                  ", the file has " + std::to_string(size) + " bytes");
    if (pos + n > b.size()) throw NeedMore{pos + n};
    const uint8_t* p = b.data() + pos;
    pos += n;
    return p;
  }
  template <class T> T num(const std::string& ctx) {
    T x;
    std::memcpy(&x, take(sizeof(T), ctx), sizeof(T));  // GGUF is little-endian, as every host we build for
    return x;
  }
  uint64_t left() const { return size - pos; }
  // a count of items of at least `min_bytes` each: more than the rest of the file could hold is corrupt
  uint64_t count(uint64_t n, uint64_t min_bytes, const std::string& ctx) const {
    if (n > left() / min_bytes)
      throw bad(ctx + " " + std::to_string(n) + " is absurd: at least " + std::to_string(min_bytes) + " bytes each, only " +
                std::to_string(left()) + " bytes are left in the file");
    return n;
  }
  std::string str(const std::string& ctx) {
    uint64_t n = num<uint64_t>(ctx + " length");
    if (n > left()) throw bad(ctx + " length " + std::to_string(n) + " runs past the end of the file (" + std::to_string(left()) + " bytes left)");
    const uint8_t* p = take(n, ctx);
    return std::string(reinterpret_cast<const char*>(p), n);
  }
  ValueType vtype(const std::string& ctx) {
    uint32_t t = num<uint32_t>(ctx);
    if (t > uint32_t(ValueType::FLOAT64)) throw bad(ctx + " is unknown (" + std::to_string(t) + ")");
    return ValueType(t);
  }
  static uint64_t min_size(ValueType t) {
    switch (t) {
      case ValueType::UINT8: case ValueType::INT8: case ValueType::BOOL: return 1;
      case ValueType::UINT16: case ValueType::INT16: return 2;
      case ValueType::UINT32: case ValueType::INT32: case ValueType::FLOAT32: return 4;
      case ValueType::ARRAY: return 12;  // element type + count
      default: return 8;                 // 64-bit numbers, a string's length
    }
  }
  Value value(ValueType t, const std::string& ctx, int depth) {
    if (++values > MAX_VALUES) throw bad(ctx + ": the metadata holds more than " + std::to_string(MAX_VALUES) + " values");
    switch (t) {
      case ValueType::UINT8: return {num<uint8_t>(ctx)};
      case ValueType::INT8: return {num<int8_t>(ctx)};
      case ValueType::UINT16: return {num<uint16_t>(ctx)};
      case ValueType::INT16: return {num<int16_t>(ctx)};
      case ValueType::UINT32: return {num<uint32_t>(ctx)};
      case ValueType::INT32: return {num<int32_t>(ctx)};
      case ValueType::FLOAT32: return {num<float>(ctx)};
      case ValueType::BOOL: {
        uint8_t x = num<uint8_t>(ctx);
        if (x > 1) throw bad(ctx + ": BOOL byte is " + std::to_string(x) + ", not 0 or 1");
        return {x == 1};
      }
      case ValueType::STRING: return {str(ctx)};
      case ValueType::UINT64: return {num<uint64_t>(ctx)};
      case ValueType::INT64: return {num<int64_t>(ctx)};
      case ValueType::FLOAT64: return {num<double>(ctx)};
      case ValueType::ARRAY: {
        if (depth >= MAX_DEPTH) throw bad(ctx + ": arrays nested more than " + std::to_string(MAX_DEPTH) + " deep");
        Value::Array a{vtype(ctx + " array element type")};
        uint64_t n = count(num<uint64_t>(ctx + " array length"), min_size(a.type), ctx + " array length");
        if (n > MAX_VALUES - values) throw bad(ctx + ": the metadata holds more than " + std::to_string(MAX_VALUES) + " values");
        a.items.reserve(n);
        for (uint64_t i = 0; i < n; i++) a.items.push_back(value(a.type, ctx, depth + 1));
        return {std::move(a)};
      }
    }
    throw bad(ctx + ": internal: unhandled value type");
  }
};

}  // namespace

Header parse_header(std::span<const uint8_t> bytes, uint64_t file_size, const std::string& what) {
  if (file_size < bytes.size()) file_size = bytes.size();
  Reader r{bytes, file_size, 0, what};
  Header h;
  const uint8_t* magic = r.take(4, "the magic");
  if (std::memcmp(magic, "GGUF", 4) != 0) throw r.bad("bad magic: not a GGUF file (the first 4 bytes are not \"GGUF\")");
  h.version = r.num<uint32_t>("the version");
  if (h.version != 2 && h.version != 3)
    throw r.bad("unsupported GGUF version " + std::to_string(h.version) + " (2 and 3 are read" +
                (h.version == 1 ? "; version 1 is obsolete" : h.version > 0xffff ? "; a big-endian file?" : "") + ")");
  uint64_t n_tensors = r.num<uint64_t>("the tensor count"), n_kv = r.num<uint64_t>("the metadata count");
  r.count(n_kv, 8 + 4 + 1, "metadata count");  // key length, value type, at least one byte of value
  r.count(n_tensors, 8 + 4 + 4 + 8, "tensor count");  // name length, n_dims, type, offset
  for (uint64_t i = 0; i < n_kv; i++) {
    std::string ctx = "metadata entry " + std::to_string(i);
    std::string key = r.str(ctx + " key");
    ctx = "metadata \"" + key + "\"";
    Value v = r.value(r.vtype(ctx + " value type"), ctx, 0);
    if (!h.kv.emplace(key, std::move(v)).second) throw r.bad("duplicate metadata key \"" + key + "\"");
    h.kv_order.push_back(key);
  }
  if (auto it = h.kv.find("general.alignment"); it != h.kv.end()) {
    const Value& a = it->second;
    ValueType at = a.type();
    if (at != ValueType::UINT8 && at != ValueType::UINT16 && at != ValueType::UINT32 && at != ValueType::UINT64)
      throw r.bad("general.alignment is " + value_type_name(at) + ", not an unsigned integer");
    uint64_t al = a.type() == ValueType::UINT64 ? std::get<uint64_t>(a.v) : uint64_t(a.as_int());
    if (al == 0 || (al & (al - 1)) || al > (1u << 30)) throw r.bad("general.alignment " + std::to_string(al) + " is not a power of two up to 2^30");
    h.alignment = al;
  }
  std::set<std::string> names;
  for (uint64_t i = 0; i < n_tensors; i++) {
    TensorInfo t;
    t.name = r.str("tensor " + std::to_string(i) + " name");
    std::string ctx = "tensor \"" + t.name + "\"";
    if (!names.insert(t.name).second) throw r.bad("duplicate " + ctx);
    uint32_t nd = r.num<uint32_t>(ctx + " dimension count");
    if (nd > 4) throw r.bad(ctx + " has " + std::to_string(nd) + " dimensions, GGUF allows at most 4");
    std::vector<uint64_t> ne(nd);
    uint64_t numel = 1, bound = 1;  // bound: the product with zeros counted as ones, so no order of products overflows
    for (auto& d : ne) {
      d = r.num<uint64_t>(ctx + " dimension");
      if (bound > MAX_NUMEL / std::max<uint64_t>(d, 1)) throw r.bad(ctx + " has an absurd shape (over 2^54 elements)");
      bound *= std::max<uint64_t>(d, 1), numel *= d;
    }
    uint32_t ty = r.num<uint32_t>(ctx + " type");
    const TypeInfo* ti = type_info(ty);
    if (!ti) throw r.bad(ctx + " has " + ggml_type_name(ty));
    t.type = ti->t;
    if (nd && ne[0] % uint64_t(ti->blck))
      throw r.bad(ctx + ": its rows of " + std::to_string(ne[0]) + " elements are not whole " + ti->name + " blocks of " + std::to_string(ti->blck));
    if (!nd && ti->blck != 1) throw r.bad(ctx + ": a 0-d tensor cannot be of block type " + ti->name);
    for (size_t d = nd; d-- > 0;) t.shape.push_back(int64_t(ne[d]));
    t.nbytes = int64_t(numel / uint64_t(ti->blck) * uint64_t(ti->bytes));
    t.offset = r.num<uint64_t>(ctx + " offset");
    h.tensors.push_back(std::move(t));
  }
  h.data_start = (r.pos + h.alignment - 1) / h.alignment * h.alignment;
  uint64_t data_size = file_size > h.data_start ? file_size - h.data_start : 0;
  for (auto& t : h.tensors) {
    std::string ctx = "tensor \"" + t.name + "\"";
    if (t.offset % h.alignment) throw r.bad(ctx + " offset " + std::to_string(t.offset) + " is not a multiple of the alignment " + std::to_string(h.alignment));
    if (t.offset > data_size || uint64_t(t.nbytes) > data_size - t.offset)
      throw r.bad(ctx + " data [" + std::to_string(t.offset) + ", +" + std::to_string(t.nbytes) + ") runs past the end of the data section (" +
                  std::to_string(data_size) + " bytes from offset " + std::to_string(h.data_start) + ")");
  }
  return h;
}

}  // namespace tg::gguf
