// tg::gguf against files written by gguf-py (ggml's own Python writer, tests/llm/make_gguf.py): metadata as written,
// tensor offsets as GGUFReader reads them, every supported type decoded bit for bit as gguf.quants.dequantize does;
// and hand-made broken headers (docs/gguf.md's layout) and many truncated / corrupted files, which must all give a
// tg::Error and nothing else.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "engine/realize.h"
#include "support/generated.h"
#include "tensor/tensor_impl.h"
#include "tg/gguf.h"
#include "support/error_of.h"

using namespace tg;
using namespace tg::gguf;
using nlohmann::json;

using tg::test::error_of;

namespace {

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

// the files of make_gguf.py, written once per run into a fresh directory
struct Files : test::GeneratedFiles {
  json manifest;
  Files() : GeneratedFiles("tg_gguf", test::shell_quote(TG_PYTHON) + " " + test::shell_quote(TG_LLM_SCRIPT), "setup.sh makes the venv with gguf and numpy") {
    if (error.empty()) manifest = json::parse(std::ifstream(path("manifest.json")));
  }
};
const Files& files() {
  static Files f;
  return f;
}
#define NEED_FILES() ASSERT_TRUE(files().error.empty()) << files().error

void expect_value(const Value& v, const json& j, const std::string& ctx) {
  ASSERT_EQ(int(v.type()), j["t"].get<int>()) << ctx;
  const json& x = j["v"];
  switch (v.type()) {
    case ValueType::UINT64: EXPECT_EQ(std::get<uint64_t>(v.v), x.get<uint64_t>()) << ctx; break;
    case ValueType::FLOAT32: EXPECT_EQ(double(std::get<float>(v.v)), x.get<double>()) << ctx; break;
    case ValueType::FLOAT64: EXPECT_EQ(std::get<double>(v.v), x.get<double>()) << ctx; break;
    case ValueType::BOOL: EXPECT_EQ(v.as_bool(), x.get<bool>()) << ctx; break;
    case ValueType::STRING: EXPECT_EQ(v.str(), x.get<std::string>()) << ctx; break;
    case ValueType::ARRAY: {
      const Value::Array& a = v.arr();
      EXPECT_EQ(int(a.type), j["e"].get<int>()) << ctx;
      ASSERT_EQ(a.items.size(), x.size()) << ctx;
      for (size_t i = 0; i < a.items.size(); i++) expect_value(a.items[i], x[i], ctx + "[" + std::to_string(i) + "]");
      break;
    }
    default: EXPECT_EQ(v.as_int(), x.get<int64_t>()) << ctx;
  }
}

// the decoded tensor's bytes against the reference file's (floats compared as bits)
void expect_tensor(const GGUF& g, const json& t) {
  std::string name = t["name"];
  SCOPED_TRACE(name);
  Tensor x = g.tensor(name);
  EXPECT_EQ(x.shape(), t["shape"].get<Shape>());
  std::string rd = t["ref_dtype"];
  const std::map<std::string, DType> dts{{"float32", dtypes::float32}, {"float16", dtypes::float16}, {"bfloat16", dtypes::bfloat16},
                                         {"float64", dtypes::float64}, {"int8", dtypes::int8},       {"int16", dtypes::int16},
                                         {"int32", dtypes::int32},     {"int64", dtypes::int64}};
  EXPECT_EQ(x.dtype(), dts.at(rd));
  std::vector<uint8_t> got = x.data(), want = read_file(files().path(t["ref"]));
  ASSERT_EQ(got.size(), want.size());
  size_t isz = size_t(x.dtype().itemsize()), bad = 0, first = got.size();
  for (size_t i = 0; i < got.size(); i += isz)
    if (std::memcmp(&got[i], &want[i], isz) != 0 && bad++ == 0) first = i / isz;
  if (bad && rd == "float32") {
    float a, b;
    std::memcpy(&a, &got[first * 4], 4), std::memcpy(&b, &want[first * 4], 4);
    ADD_FAILURE() << bad << " of " << got.size() / isz << " elements differ; first at " << first << ": " << a << " vs " << b;
  } else EXPECT_EQ(bad, 0u) << "first at element " << first;
}

}  // namespace

// ***** 1. files from gguf-py *****

TEST(GGUF, Metadata) {
  NEED_FILES();
  GGUF g = gguf_load(files().path("all.gguf"));
  EXPECT_EQ(g.version, 3u);
  EXPECT_EQ(g.alignment, 64u);
  const json& meta = files().manifest["metadata"];
  EXPECT_EQ(g.kv.size(), meta.size());
  EXPECT_EQ(g.kv_order.size(), g.kv.size());
  for (auto& [k, j] : meta.items()) {
    ASSERT_TRUE(g.kv.contains(k)) << k;
    expect_value(g.kv.at(k), j, k);
  }
  // typed access says what is wrong
  EXPECT_NE(error_of([&] { g.kv.at("t.str").as_int(); }).find("STRING"), std::string::npos);
  EXPECT_NE(error_of([&] { g.kv.at("a.u64").arr().items.back().as_int(); }).find("does not fit"), std::string::npos);
  EXPECT_EQ(g.kv.at("t.u32").as_float(), 4e9);
}

TEST(GGUF, TensorInfos) {
  NEED_FILES();
  GGUF g = gguf_load(files().path("all.gguf"));
  const json& ts = files().manifest["tensors"];
  ASSERT_EQ(g.tensors.size(), ts.size());
  for (size_t i = 0; i < ts.size(); i++) {
    const TensorInfo& t = g.tensors[i];
    EXPECT_EQ(t.name, ts[i]["name"].get<std::string>());
    EXPECT_EQ(t.shape, ts[i]["shape"].get<Shape>()) << t.name;
    EXPECT_EQ(g.data_start + t.offset, ts[i]["data_offset"].get<uint64_t>()) << t.name;  // GGUFReader's data offset
    std::string n = t.name.substr(t.name.find('.') + 1);
    if (t.name.starts_with("q.")) {
      EXPECT_EQ(ggml_type_name(uint32_t(t.type)), n);
    }
  }
  EXPECT_EQ(g.info("q.Q6_K").type, GGMLType::Q6_K);
  EXPECT_EQ(g.info("native.bf16").type, GGMLType::BF16);
  EXPECT_EQ(g.info("q.Q4_K").nbytes, 3 * 2 * 144);
  EXPECT_NE(error_of([&] { g.info("nope"); }).find("\"nope\""), std::string::npos);
}

TEST(GGUF, DecodeEveryType) {
  NEED_FILES();
  GGUF g = gguf_load(files().path("all.gguf"));
  for (auto& t : files().manifest["tensors"]) expect_tensor(g, t);
}

TEST(GGUF, StateDict) {
  NEED_FILES();
  GGUF g = gguf_load(files().path("all.gguf"));
  auto sd = g.state_dict();
  EXPECT_EQ(sd.size(), g.tensors.size());
  // lazy: built on the file's DISK buffer, decoded where asked
  Tensor q = sd.at("q.Q4_K");
  EXPECT_EQ(q.device(), "CPU");
  EXPECT_EQ(q.dtype(), dtypes::float32);
  ASSERT_EQ(g.parts.size(), 1u);
  EXPECT_EQ(*g.parts[0].file.device(), "DISK:" + files().path("all.gguf"));
  // the decode is a graph that fuses into its reader: summing the dequantized rows is one kernel on the block bytes,
  // which are the file's pages (Tensor::to_mapped: no copy off DISK), with no dequantized copy in between
  Tensor rows_t = q.sum(1);
  Schedule s = Tensor::schedule_linear({rows_t});
  EXPECT_EQ(s.size(), 1u) << s.str();
  s.run();
  std::vector<float> ref(3 * 512);
  std::vector<uint8_t> b = read_file(files().path("ref/q.Q4_K.bin"));
  std::memcpy(ref.data(), b.data(), b.size());
  std::vector<float> rows = rows_t.to_vector<float>();
  for (int r = 0; r < 3; r++) {
    double s = 0;
    for (int i = 0; i < 512; i++) s += ref[size_t(r * 512 + i)];
    EXPECT_NEAR(rows[size_t(r)], s, 1e-3 * (1 + std::abs(s)));
  }
}

TEST(GGUF, Version2) {
  NEED_FILES();
  GGUF g = gguf_load(files().path("v2.gguf"));
  EXPECT_EQ(g.version, 2u);
  EXPECT_EQ(g.alignment, 32u);
  ASSERT_EQ(g.tensors.size(), 2u);
  for (auto& t : files().manifest["tensors"]) {
    if (t["name"] != "native.f32" && t["name"] != "native.f16") continue;
    EXPECT_EQ(g.data_start + g.info(t["name"]).offset, files().manifest["v2_offsets"][t["name"].get<std::string>()].get<uint64_t>());
    expect_tensor(g, t);
  }
}

TEST(GGUF, LargeHeader) {
  NEED_FILES();
  std::string path = files().path("bigheader.gguf");
  GGUF g = gguf_load(path);
  EXPECT_GT(g.data_start, 2u << 20);
  EXPECT_EQ(g.data_start % 32, 0u);
  EXPECT_LE(g.data_start + g.info("w").offset + uint64_t(g.info("w").nbytes), std::filesystem::file_size(path));
  const json& big = files().manifest["bigheader"];
  const Value::Array& toks = g.kv.at("tokenizer.ggml.tokens").arr();
  EXPECT_EQ(toks.type, ValueType::STRING);
  ASSERT_EQ(toks.items.size(), big["n"].get<size_t>());
  for (auto& [i, s] : big["samples"].items()) EXPECT_EQ(toks.items.at(std::stoul(i)).str(), s.get<std::string>());
  EXPECT_EQ(g.tensor("w").data(), read_file(files().path("ref/native.f32.bin")));  // the same array as native.f32
}

TEST(GGUF, SplitModel) {
  NEED_FILES();
  GGUF g = gguf_load(files().path("split-00001-of-00003.gguf"));
  EXPECT_EQ(g.parts.size(), 3u);
  EXPECT_EQ(g.kv.at("t.u32").as_int(), 7);
  EXPECT_EQ(g.kv.at("split.count").as_int(), 3);
  ASSERT_EQ(g.tensors.size(), 5u);
  for (size_t i = 0; i < 5; i++) {
    const json& t = files().manifest["tensors"][i];
    EXPECT_EQ(g.tensors[i].name, t["name"].get<std::string>());
    EXPECT_EQ(g.tensors[i].split, i / 2);
    expect_tensor(g, t);
  }
  // broken sets of parts
  namespace fs = std::filesystem;
  std::string d = files().path("splits");
  fs::create_directory(d);
  auto part = [&](int i) { return files().path("split-0000" + std::to_string(i) + "-of-00003.gguf"); };
  EXPECT_NE(error_of([&] { gguf_load(part(2)); }).find("load it from its first part"), std::string::npos);
  fs::copy_file(part(1), d + "/m.gguf");
  EXPECT_NE(error_of([&] { gguf_load(d + "/m.gguf"); }).find("not named NAME-00001-of-00003.gguf"), std::string::npos);
  fs::copy_file(part(1), d + "/m-00001-of-00003.gguf");
  fs::copy_file(part(2), d + "/m-00002-of-00003.gguf");
  std::string e = error_of([&] { gguf_load(d + "/m-00001-of-00003.gguf"); });
  EXPECT_NE(e.find("m-00003-of-00003.gguf: no such file"), std::string::npos) << e;
  fs::copy_file(part(2), d + "/m-00003-of-00003.gguf");
  e = error_of([&] { gguf_load(d + "/m-00001-of-00003.gguf"); });
  EXPECT_NE(e.find("does not say it is part 3 of 3"), std::string::npos) << e;
}

TEST(GGUF, UnsupportedType) {
  NEED_FILES();
  GGUF g = gguf_load(files().path("unsupported.gguf"));
  ASSERT_EQ(g.tensors.size(), 1u);
  EXPECT_EQ(g.tensors[0].type, GGMLType::IQ2_XXS);
  EXPECT_EQ(g.tensors[0].shape, (Shape{2, 256}));
  std::string e = error_of([&] { g.tensor("w"); });
  EXPECT_NE(e.find("IQ2_XXS"), std::string::npos) << e;
  EXPECT_NE(e.find("\"w\""), std::string::npos) << e;
  EXPECT_NE(error_of([&] { g.state_dict(); }).find("IQ2_XXS"), std::string::npos);
}

TEST(GGUF, DataToTensorChecks) {
  Tensor raw = Tensor::zeros({36}, dtypes::uint8).contiguous();
  EXPECT_NE(error_of([&] { ggml_data_to_tensor(raw, 64, GGMLType::Q8_0); }).find("68 bytes"), std::string::npos);
  EXPECT_NE(error_of([&] { ggml_data_to_tensor(raw, 40, GGMLType::Q8_0); }).find("whole Q8_0 blocks"), std::string::npos);
  EXPECT_NE(error_of([&] { ggml_data_to_tensor(raw.cast(dtypes::int16), 36, GGMLType::I8); }).find("uint8"), std::string::npos);
  EXPECT_NE(error_of([&] { ggml_data_to_tensor(raw, 1, GGMLType(77)); }).find("unknown type 77"), std::string::npos);
  EXPECT_EQ(ggml_data_to_tensor(raw, 9, GGMLType::F32).shape(), Shape{9});
  EXPECT_NE(error_of([] { gguf_load("/nonexistent/x.gguf"); }).find("no such file"), std::string::npos);
}

// ***** 2. broken headers, made by hand *****

namespace {
struct Builder {  // a GGUF header, field by field
  std::vector<uint8_t> b;
  template <class T> Builder& num(T x) {
    uint8_t t[sizeof(T)];
    std::memcpy(t, &x, sizeof(T));
    b.insert(b.end(), t, t + sizeof(T));
    return *this;
  }
  Builder& str(const std::string& s) {
    num<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Builder& head(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) { return str_raw("GGUF").num(version).num(n_tensors).num(n_kv); }
  Builder& str_raw(const std::string& s) {
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Builder& kv_u32(const std::string& k, uint32_t v) { return str(k).num<uint32_t>(4).num(v); }
  Builder& tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, uint64_t off) {
    str(name).num<uint32_t>(uint32_t(ne.size()));
    for (auto d : ne) num(d);
    return num(type).num(off);
  }
  Builder& pad(size_t to) {
    b.resize(std::max(b.size(), to));
    return *this;
  }
};
std::string parse_error(const std::vector<uint8_t>& b) { return error_of([&] { parse_header(b, b.size(), "gguf: test"); }); }
#define EXPECT_PARSE_ERROR(bytes, ...)                                                  \
  do {                                                                                  \
    std::string e_ = parse_error(bytes);                                                \
    for (const char* s_ : {__VA_ARGS__}) EXPECT_NE(e_.find(s_), std::string::npos) << e_; \
  } while (0)
}  // namespace

TEST(GGUF, BrokenHeaders) {
  EXPECT_PARSE_ERROR(Builder().str_raw("GGU").b, "truncated", "magic");
  EXPECT_PARSE_ERROR(Builder().str_raw("GGML").num<uint32_t>(3).b, "bad magic");
  EXPECT_PARSE_ERROR(Builder().head(0, 0, 1).b, "version 1");
  EXPECT_PARSE_ERROR(Builder().head(0, 0, 4).b, "version 4");
  EXPECT_PARSE_ERROR(Builder().head(0, 0, 0x03000000).b, "big-endian");
  EXPECT_PARSE_ERROR(Builder().str_raw("GGUF").num<uint32_t>(3).num<uint64_t>(0).b, "truncated", "metadata count");
  EXPECT_PARSE_ERROR(Builder().head(0, uint64_t(1) << 60).b, "metadata count", "absurd");
  EXPECT_PARSE_ERROR(Builder().head(~uint64_t(0), 0).b, "tensor count", "absurd");
  EXPECT_PARSE_ERROR(Builder().head(0, 1).num<uint64_t>(~uint64_t(0)).pad(64).b, "metadata entry 0 key length", "runs past the end");
  EXPECT_PARSE_ERROR(Builder().head(0, 1).str("k").num<uint32_t>(13).pad(64).b, "\"k\" value type is unknown (13)");
  EXPECT_PARSE_ERROR(Builder().head(0, 1).str("k").num<uint32_t>(7).num<uint8_t>(2).b, "\"k\"", "BOOL byte is 2");
  EXPECT_PARSE_ERROR(Builder().head(0, 1).str("k").num<uint32_t>(9).num<uint32_t>(5).num<uint64_t>(1000).pad(200).b, "\"k\" array length", "absurd");
  EXPECT_PARSE_ERROR(Builder().head(0, 1).str("k").num<uint32_t>(8).num<uint64_t>(5).str_raw("ab").b, "metadata \"k\" length 5 runs past the end of the file (2 bytes left)");
  EXPECT_PARSE_ERROR(Builder().head(0, 2).kv_u32("k", 1).kv_u32("k", 2).b, "duplicate metadata key \"k\"");
  {  // arrays of arrays of ... : refused past a fixed depth instead of recursing as deep as the file says
    Builder d;
    d.head(0, 1).str("deep").num<uint32_t>(9);
    for (int i = 0; i < 40; i++) d.num<uint32_t>(9).num<uint64_t>(1);
    d.num<uint32_t>(0).num<uint64_t>(0);
    EXPECT_PARSE_ERROR(d.b, "\"deep\"", "nested");
  }
  {  // a count the file could hold, but whose values would take ~40x the file's size in memory
    Builder big;
    big.head(0, 1).str("big").num<uint32_t>(9).num<uint32_t>(0).num<uint64_t>((uint64_t(1) << 25) + 1).pad((size_t(1) << 25) + 64);
    EXPECT_PARSE_ERROR(big.b, "\"big\"", "more than 33554432 values");
  }
  // empty arrays keep their element type; nesting within the limit is fine
  {
    Builder e;
    e.head(0, 2).str("e").num<uint32_t>(9).num<uint32_t>(8).num<uint64_t>(0).str("n").num<uint32_t>(9).num<uint32_t>(9).num<uint64_t>(1).num<uint32_t>(4).num<uint64_t>(1).num<uint32_t>(7);
    Header h = parse_header(e.b, e.b.size());
    EXPECT_EQ(h.kv.at("e").arr().type, ValueType::STRING);
    EXPECT_TRUE(h.kv.at("e").arr().items.empty());
    EXPECT_EQ(h.kv.at("n").arr().items.at(0).arr().items.at(0).as_int(), 7);
  }
  EXPECT_PARSE_ERROR(Builder().head(0, 1).kv_u32("general.alignment", 0).b, "general.alignment 0");
  EXPECT_PARSE_ERROR(Builder().head(0, 1).kv_u32("general.alignment", 48).b, "general.alignment 48", "power of two");
  EXPECT_PARSE_ERROR(Builder().head(0, 1).str("general.alignment").num<uint32_t>(5).num<int32_t>(32).b, "general.alignment is INT32");
  EXPECT_PARSE_ERROR(Builder().head(2, 0).tensor("a", {32}, 0, 0).tensor("a", {32}, 0, 128).pad(512).b, "duplicate tensor \"a\"");
  EXPECT_PARSE_ERROR(Builder().head(1, 0).tensor("a", {1, 1, 1, 1, 1}, 0, 0).pad(512).b, "\"a\" has 5 dimensions");
  EXPECT_PARSE_ERROR(Builder().head(1, 0).tensor("a", {32}, 99, 0).pad(512).b, "\"a\" has unknown type 99");
  EXPECT_PARSE_ERROR(Builder().head(1, 0).tensor("a", {32}, 4, 0).pad(512).b, "\"a\" has unknown type 4");
  EXPECT_PARSE_ERROR(Builder().head(1, 0).tensor("a", {48, 2}, 8, 0).pad(512).b, "\"a\"", "not whole Q8_0 blocks of 32");
  EXPECT_PARSE_ERROR(Builder().head(1, 0).tensor("a", {1ull << 40, 1ull << 40}, 0, 0).pad(512).b, "\"a\" has an absurd shape");
  EXPECT_PARSE_ERROR(Builder().head(1, 0).tensor("a", {0, 1ull << 40, 1ull << 40}, 0, 0).pad(512).b, "\"a\" has an absurd shape");
  EXPECT_PARSE_ERROR(Builder().head(1, 0).tensor("a", {8}, 0, 16).pad(512).b, "\"a\" offset 16 is not a multiple of the alignment 32");
  EXPECT_PARSE_ERROR(Builder().head(1, 0).tensor("a", {200}, 0, 0).pad(512).b, "\"a\" data", "runs past the end");
  EXPECT_PARSE_ERROR(Builder().head(1, 0).tensor("a", {8}, 0, ~uint64_t(31)).pad(512).b, "\"a\" data", "runs past the end");
  {  // a good one: 8 floats at offset 32 of the data section
    Builder g;
    g.head(1, 0).tensor("a", {8, 1}, 0, 32);
    size_t start = (g.b.size() + 31) / 32 * 32;
    g.pad(start + 64);
    Header h = parse_header(g.b, g.b.size());
    EXPECT_EQ(h.data_start, start);
    EXPECT_EQ(h.tensors.at(0).shape, (Shape{1, 8}));
    EXPECT_PARSE_ERROR(std::vector<uint8_t>(g.b.begin(), g.b.end() - 1), "\"a\" data", "runs past the end");
    // fewer bytes than the file has: parse_header asks for more instead of failing
    EXPECT_THROW(parse_header(std::span(g.b).first(20), g.b.size()), NeedMore);
  }
}

// ***** 3. truncated and corrupted files: a tg::Error or a good parse, never anything else *****

TEST(GGUF, FuzzTruncateAndCorrupt) {
  NEED_FILES();
  std::vector<uint8_t> file = read_file(files().path("all.gguf"));
  Header h = parse_header(file, file.size());
  uint64_t end = 0;  // where the last tensor's data ends
  for (auto& t : h.tensors) end = std::max(end, h.data_start + t.offset + uint64_t(t.nbytes));
  auto parse = [&](const std::vector<uint8_t>& b, const std::string& what) -> int {  // 1 parsed, 0 tg::Error
    try {
      parse_header(b, b.size());
      return 1;
    } catch (const Error&) {
      return 0;
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": " << e.what();
    } catch (...) {
      ADD_FAILURE() << what << ": an exception that is not a tg::Error";
    }
    return -1;
  };
  // every truncation: an error exactly when some tensor's data is cut off
  for (size_t n = 0; n < file.size(); n += n < h.data_start + 64 ? 1 : 61)
    ASSERT_EQ(parse(std::vector<uint8_t>(file.begin(), file.begin() + ptrdiff_t(n)), "truncated at " + std::to_string(n)), n >= end ? 1 : 0) << n;
  // single-byte corruption at every header position, several values each
  std::mt19937 rng(1);
  int parsed = 0, errors = 0;
  for (size_t pos = 0; pos < h.data_start; pos++)
    for (uint8_t v : {uint8_t(0), uint8_t(0xFF), uint8_t(0x80), uint8_t(rng())}) {
      if (file[pos] == v) continue;
      std::vector<uint8_t> b = file;
      b[pos] = v;
      int r = parse(b, "byte " + std::to_string(pos) + " = " + std::to_string(v));
      ASSERT_GE(r, 0);
      (r ? parsed : errors)++;
    }
  EXPECT_GT(errors, 0);
  EXPECT_GT(parsed, 0);  // most bytes are values and strings: corrupting them leaves a valid header
  // runs of random bytes over the header
  for (int i = 0; i < 2000; i++) {
    std::vector<uint8_t> b = file;
    size_t pos = rng() % h.data_start, n = 1 + rng() % 16;
    for (size_t j = pos; j < std::min<size_t>(pos + n, b.size()); j++) b[j] = uint8_t(rng());
    ASSERT_GE(parse(b, "random run at " + std::to_string(pos)), 0);
  }
  // a corrupted file read through gguf_load, and a truncated one: still only a tg::Error
  std::string p = files().path("corrupt.gguf");
  std::vector<uint8_t> b = file;
  b.resize(size_t(end - 1));
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
  EXPECT_NE(error_of([&] { gguf_load(p); }).find("runs past the end"), std::string::npos);
  std::ofstream(p, std::ios::binary).write("GGUF\x03\0\0\0", 8);
  EXPECT_NE(error_of([&] { gguf_load(p); }).find("truncated"), std::string::npos);
}

// the grid types' decode (a codebook lookup: a one-hot reduce over the grid) still fuses into its reader: the block
// bytes' copy off DISK and one kernel
TEST(GGUF, GridDecodeFuses) {
  NEED_FILES();
  GGUF g = gguf_load(files().path("all.gguf"));
  for (const char* name : {"q.IQ3_XXS", "q.IQ3_S", "q.IQ2_S"}) {
    SCOPED_TRACE(name);
    Tensor rows_t = g.tensor(name).sum(1);
    Schedule s = Tensor::schedule_linear({rows_t});
    EXPECT_EQ(s.size(), 1u) << s.str();  // the kernel, on the mapped bytes
    s.run();
    std::vector<float> ref(3 * 512), rows = rows_t.to_vector<float>();
    std::vector<uint8_t> b = read_file(files().path(std::string("ref/") + name + ".bin"));
    ASSERT_EQ(b.size(), ref.size() * 4);
    std::memcpy(ref.data(), b.data(), b.size());
    for (int r = 0; r < 3; r++) {
      double sum = 0;
      for (int i = 0; i < 512; i++) sum += ref[size_t(r * 512 + i)];
      EXPECT_NEAR(rows[size_t(r)], sum, 1e-3 * (1 + std::abs(sum)));
    }
  }
}

// on the CPU a tensor is the file's pages where they lie (Tensor::to_mapped), typed for a native type and the block
// bytes for a quantized one: nothing is scheduled, its buffer is the DISK buffer's mapping at the tensor's offset, and
// its bytes are the file's as read with a plain ifstream
TEST(GGUF, CpuTensorsAreTheFilesPages) {
  NEED_FILES();
  GGUF g = gguf_load(files().path("all.gguf"));
  char* file = static_cast<char*>(tg::buffer_of(tg::uop_of(g.parts[0].file).base()).ptr());
  std::ifstream f(files().path("all.gguf"), std::ios::binary);
  for (const char* name : {"native.f16", "q.Q4_K"}) {
    SCOPED_TRACE(name);
    const TensorInfo& t = g.info(name);
    int64_t b = int64_t(g.parts[0].data_start + t.offset);
    Tensor w = ggml_data_to_device(g.parts[0].file.shrink({{b, b + t.nbytes}}), t.numel(), t.type, "CPU");
    EXPECT_EQ(Tensor::schedule_linear({w}).size(), 0u);
    EXPECT_EQ(tg::buffer_of(tg::uop_of(w).base()).ptr(), file + b);
    std::string want(t.nbytes, '\0');
    f.seekg(b).read(want.data(), std::streamsize(want.size()));
    std::vector<uint8_t> got = w.data();
    EXPECT_EQ(std::string(got.begin(), got.end()), want);
  }
}

// a native type is copied to the device as its dtype: the kernels reading it load float16s / float32s, with no BITCAST
// assembling them from bytes on every use; quantized blocks stay bytes
TEST(GGUF, NativeTypesReachTheDeviceTyped) {
  NEED_FILES();
  GGUF g = gguf_load(files().path("all.gguf"));
  for (const char* name : {"native.f16", "native.f32", "q.Q8_0"}) {
    SCOPED_TRACE(name);
    const TensorInfo& t = g.info(name);
    int64_t b = int64_t(g.parts[0].data_start + t.offset);
    Tensor stored = ggml_data_to_device(g.parts[0].file.shrink({{b, b + t.nbytes}}), t.numel(), t.type, "CPU").contiguous();
    stored.realize();
    bool native = t.type != GGMLType::Q8_0;
    EXPECT_EQ(stored.dtype(), t.type == GGMLType::F16 ? dtypes::float16 : native ? dtypes::float32 : dtypes::uint8);
    Tensor x = ggml_data_to_tensor(stored, t.numel(), t.type);
    Schedule s = Tensor::schedule_linear({x.cast(dtypes::float32).sum()});
    EXPECT_EQ(s.str().find("BITCAST") == std::string::npos, native) << s.str();
    EXPECT_EQ(x.data(), g.tensor(name).data());
  }
}
