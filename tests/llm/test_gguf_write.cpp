// tg::gguf::write against ggml's spec as two readers see it: our parser (every value and tensor back as written, offsets
// aligned) and gguf-py's GGUFReader (tests/llm/read_gguf.py), which is independent of our code.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/generated.h"
#include "tg/gguf.h"
#include "support/error_of.h"

using namespace tg;
using namespace tg::gguf;
using nlohmann::json;

using tg::test::error_of;

namespace {

const test::GeneratedFiles& scratch() {
  static test::GeneratedFiles f("tg_gguf_write", "true", "");
  return f;
}
Value arr(ValueType t, std::vector<Value> items) { return {Value::Array{t, std::move(items)}}; }

// one of every value type, typed, empty and nested arrays, unicode; alignment 64
KV all_kv() {
  return {{"general.alignment", {uint32_t(64)}}, {"t.u8", {uint8_t(250)}}, {"t.i8", {int8_t(-100)}}, {"t.u16", {uint16_t(65000)}},
          {"t.i16", {int16_t(-32000)}}, {"t.u32", {uint32_t(4000000000u)}}, {"t.i32", {int32_t(-2000000000)}}, {"t.f32", {0.1f}},
          {"t.bool", {true}}, {"t.false", {false}}, {"t.str", {std::string("h\u00e9llo \u2713")}}, {"t.empty_str", {std::string()}},
          {"t.u64", {uint64_t(18000000000000000000ull)}}, {"t.i64", {int64_t(-9000000000000000000ll)}}, {"t.f64", {1e300 / 3}},
          {"a.i32", arr(ValueType::INT32, {{int32_t(1)}, {int32_t(-7)}, {int32_t(1 << 30)}})},
          {"a.f32", arr(ValueType::FLOAT32, {{1.5f}, {-2.25f}})},
          {"a.str", arr(ValueType::STRING, {{std::string("")}, {std::string("\u0120the")}, {std::string("\n\t")}})},
          {"a.bool", arr(ValueType::BOOL, {{true}, {false}})},
          {"a.empty", arr(ValueType::UINT64, {})},
          {"a.nested", arr(ValueType::ARRAY, {arr(ValueType::INT8, {{int8_t(1)}, {int8_t(2)}}), arr(ValueType::INT8, {})})}};
}
std::vector<std::pair<std::string, Tensor>> all_tensors() {
  auto r = [](Shape s, DType d) {  // -2.25, -1.5, ... (exact in every dtype above)
    int64_t n = 1;
    for (auto x : s) n *= x;
    return (Tensor::arange(n) * 0.75 - 2.25).cast(d).reshape(s);
  };
  return {{"w.f32", r({2, 3, 5}, dtypes::float32)}, {"w.f16", r({7}, dtypes::float16)}, {"w.bf16", r({3, 2}, dtypes::bfloat16)},
          {"w.f64", r({1, 2, 1, 3}, dtypes::float64)}, {"w.i8", r({5}, dtypes::int8)}, {"w.i16", r({2, 2}, dtypes::int16)},
          {"w.i32", r({3, 1}, dtypes::int32)}, {"w.i64", r({4}, dtypes::int64)}};
}

}  // namespace

TEST(GGUFWrite, RoundTrip) {
  ASSERT_TRUE(scratch().error.empty()) << scratch().error;
  std::string path = scratch().path("rt.gguf");
  KV kv = all_kv();
  auto ts = all_tensors();
  write(path, kv, ts);
  GGUF g = gguf_load(path);
  EXPECT_EQ(g.version, 3u);
  EXPECT_EQ(g.alignment, 64u);
  ASSERT_EQ(g.kv_order.size(), kv.size());
  for (size_t i = 0; i < kv.size(); i++) {
    EXPECT_EQ(g.kv_order[i], kv[i].first);
    EXPECT_TRUE(g.kv.at(kv[i].first) == kv[i].second) << kv[i].first;
  }
  ASSERT_EQ(g.tensors.size(), ts.size());
  for (size_t i = 0; i < ts.size(); i++) {
    SCOPED_TRACE(ts[i].first);
    EXPECT_EQ(g.tensors[i].name, ts[i].first);
    EXPECT_EQ(g.tensors[i].shape, ts[i].second.shape());
    EXPECT_EQ((g.data_start + g.tensors[i].offset) % 64, 0u);
    Tensor back = g.tensor(ts[i].first);
    EXPECT_EQ(back.dtype(), ts[i].second.dtype());
    EXPECT_EQ(back.data(), ts[i].second.data());
  }
  // the default alignment is 32; an empty file (no metadata, no tensors) is 24 bytes: magic, version, two counts
  EXPECT_EQ(serialize({}, {}).size(), 24u);
  std::vector<uint8_t> b = serialize({{"k", {std::string("v")}}}, {{"x", Tensor::ones({3})}});
  Header h = parse_header(b, b.size());
  EXPECT_EQ(h.alignment, 32u);
  EXPECT_EQ(h.data_start % 32, 0u);
  EXPECT_EQ(b.size(), h.data_start + 12);
}

TEST(GGUFWrite, GgufPyReadsIt) {
  ASSERT_TRUE(scratch().error.empty()) << scratch().error;
  std::string path = scratch().path("py.gguf");
  KV kv = all_kv();
  auto ts = all_tensors();
  write(path, kv, ts);
  std::string script = (std::filesystem::path(TG_LLM_SCRIPT).parent_path() / "read_gguf.py").string();
  test::Shell r = test::run_shell(test::shell_quote(TG_PYTHON) + " " + test::shell_quote(script) + " " + test::shell_quote(path) + " 2>&1");
  ASSERT_EQ(r.rc, 0) << r.out;
  json j = json::parse(r.out);
  EXPECT_EQ(j["alignment"].get<uint64_t>(), 64u);
  ASSERT_EQ(j["fields"].size(), kv.size());
  for (size_t i = 0; i < kv.size(); i++) {
    const json& f = j["fields"][i];
    const Value& v = kv[i].second;
    SCOPED_TRACE(kv[i].first);
    EXPECT_EQ(f["key"].get<std::string>(), kv[i].first);
    EXPECT_EQ(f["types"][0].get<int>(), int(v.type()));
    if (v.type() == ValueType::ARRAY && v.arr().type == ValueType::ARRAY) {
      EXPECT_EQ(f["types"][1].get<int>(), int(ValueType::ARRAY));  // GGUFReader does not decode nested arrays
      continue;
    }
    auto same = [&](const Value& x, const json& y) {
      switch (x.type()) {
        case ValueType::STRING: EXPECT_EQ(x.str(), y.get<std::string>()); break;
        case ValueType::BOOL: EXPECT_EQ(x.as_bool(), y.get<bool>()); break;
        case ValueType::UINT64: EXPECT_EQ(std::get<uint64_t>(x.v), y.get<uint64_t>()); break;
        case ValueType::FLOAT32: case ValueType::FLOAT64: EXPECT_EQ(x.as_float(), y.get<double>()); break;
        default: EXPECT_EQ(x.as_int(), y.get<int64_t>());
      }
    };
    if (v.type() != ValueType::ARRAY) {
      same(v, f["v"]);
      continue;
    }
    if (!v.arr().items.empty()) {
      EXPECT_EQ(f["types"].back().get<int>(), int(v.arr().type));
    }
    ASSERT_EQ(f["v"].size(), v.arr().items.size());
    for (size_t k = 0; k < v.arr().items.size(); k++) same(v.arr().items[k], f["v"][k]);
  }
  ASSERT_EQ(j["tensors"].size(), ts.size());
  const std::map<DType, int> types{{dtypes::float32, 0}, {dtypes::float16, 1}, {dtypes::bfloat16, 30}, {dtypes::float64, 28},
                                   {dtypes::int8, 24},   {dtypes::int16, 25},   {dtypes::int32, 26},    {dtypes::int64, 27}};
  GGUF g = gguf_load(path);
  for (size_t i = 0; i < ts.size(); i++) {
    const json& t = j["tensors"][i];
    SCOPED_TRACE(ts[i].first);
    EXPECT_EQ(t["name"].get<std::string>(), ts[i].first);
    EXPECT_EQ(t["shape"].get<Shape>(), ts[i].second.shape());
    EXPECT_EQ(t["type"].get<int>(), types.at(ts[i].second.dtype()));
    EXPECT_EQ(t["offset"].get<uint64_t>(), g.data_start + g.tensors[i].offset);
    std::string hex;
    for (uint8_t c : ts[i].second.data()) hex += "0123456789abcdef"[c >> 4], hex += "0123456789abcdef"[c & 15];
    EXPECT_EQ(t["hex"].get<std::string>(), hex);
  }
}

TEST(GGUFWrite, BadInputIsAnError) {
  auto has = [](const std::string& e, const std::string& s) { EXPECT_NE(e.find(s), std::string::npos) << e; };
  has(error_of([] { serialize({{"k", {1.0f}}, {"k", {2.0f}}}, {}); }), "duplicate metadata key \"k\"");
  has(error_of([] { serialize({}, {{"x", Tensor::ones({1})}, {"x", Tensor::ones({1})}}); }), "duplicate tensor \"x\"");
  has(error_of([] { serialize({}, {{"b", Tensor::ones({2}, dtypes::bool_)}}); }), "\"b\" is bool");
  has(error_of([] { serialize({}, {{"u", Tensor::ones({2}, dtypes::uint32)}}); }), "\"u\" is uint");
  has(error_of([] { serialize({}, {{"d5", Tensor::ones({1, 1, 1, 1, 2})}}); }), "5 dims");
  has(error_of([] { serialize({{"a", arr(ValueType::INT32, {{int32_t(1)}, {1.0f}})}}, {}); }), "array of INT32 holds a FLOAT32");
  has(error_of([] { serialize({{"general.alignment", {uint32_t(48)}}}, {}); }), "48 is not a power of two");
  has(error_of([] { serialize({{"general.alignment", {int32_t(64)}}}, {}); }), "INT32, not an unsigned");
  Value deep = arr(ValueType::INT8, {});
  for (int i = 0; i < 17; i++) deep = arr(ValueType::ARRAY, {deep});
  has(error_of([&] { serialize({{"deep", deep}}, {}); }), "nested more than 16 deep");
  has(error_of([] { write("/nonexistent-dir/x.gguf", {}, {}); }), "cannot write /nonexistent-dir/x.gguf");
}
