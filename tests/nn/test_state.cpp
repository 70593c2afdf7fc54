// tg::nn::state: safetensors round trips for every dtype (0-d and size-0 included), metadata, a file written by an
// independent writer (tests/tools/write_safetensors.py) checked against the formulas it documents, lazy loading, every
// corrupt-file error, and state dicts of Modules (get_state_dict, get_parameters, load_state_dict and its errors).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "tg/state.h"
#include "util/process.h"
#include "../tensor/tensor_test_util.h"

using namespace tg;
using namespace tg::nn::state;

namespace {

using testutil::error_of;
using testutil::expect_has;

std::string file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
void write_bytes(const std::string& path, const std::string& b) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(b.data(), std::streamsize(b.size()));
}
// a safetensors file from a header text and a data section, as the spec lays it out
std::string safetensors(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; i++) out[size_t(i)] = char(uint64_t(header.size()) >> (8 * i));
  return out + header + data;
}
template <class T> std::vector<uint8_t> raw(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

const std::string ref_file = std::string(TG_TEST_DATA) + "/reference.safetensors";

}  // namespace

// ***** 1. round trips *****

TEST(SafeTensors, RoundTripEveryDtype) {
  TempDir dir;
  std::string path = (dir.path() / "all.safetensors").string();
  std::map<std::string, Tensor> src{
      {"bool", Tensor::from_vector<bool>({true, false, true})},
      {"u8", Tensor::from_vector<uint8_t>({0, 1, 255}, {3})},
      {"i8", Tensor::from_vector<int8_t>({-128, 0, 127}, {3})},
      {"u16", Tensor::from_vector<uint16_t>({0, 65535}, {2})},
      {"i16", Tensor::from_vector<int16_t>({-32768, 32767}, {2})},
      {"f16", Tensor::from_bytes(raw<uint16_t>({0x3c00, 0xfbff, 0x7e00, 0x0001}), dtypes::float16, {2, 2})},  // 1, -65504, nan, denormal
      {"bf16", Tensor::from_bytes(raw<uint16_t>({0x3f80, 0xff80, 0x0001}), dtypes::bfloat16, {3})},           // 1, -inf, denormal
      {"u32", Tensor::from_vector<uint32_t>({0, 4294967295u}, {2})},
      {"i32", Tensor::from_vector<int32_t>({-2147483647 - 1, 2147483647, 5, 6}, {2, 1, 2})},
      {"f32", Tensor::from_vector<float>({1.5f, -0.0f, INFINITY, 1e-45f}, {4})},
      {"u64", Tensor::from_vector<uint64_t>({0, 18446744073709551615ull}, {2})},
      {"i64", Tensor::from_vector<int64_t>({INT64_MIN, INT64_MAX}, {2})},
      {"f64", Tensor::from_vector<double>({3.141592653589793, -1e308}, {2})},
      {"scalar", Tensor::from_vector<float>({2.5f}, {})},
      {"empty", Tensor::from_vector<int32_t>({}, {0, 4})},
      {"computed", (Tensor::from_vector<float>({1, 2, 3}) * 2).reshape({3, 1})},  // saving realizes it
  };
  safe_save(src, path);
  auto got = safe_load(path);
  ASSERT_EQ(got.size(), src.size());
  for (auto& [k, t] : src) {
    ASSERT_TRUE(got.contains(k)) << k;
    const Tensor& g = got.at(k);
    EXPECT_EQ(g.dtype(), t.dtype()) << k;
    EXPECT_EQ(g.shape(), t.shape()) << k;
    EXPECT_EQ(g.device(), "DISK:" + path) << k;
    EXPECT_EQ(g.to("CPU").data(), t.data()) << k;  // bit exact, nan payloads and -0.0 included
  }
  EXPECT_EQ(got.at("computed").to("CPU").to_vector<float>(), (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(got.at("scalar").shape(), Shape{});
  EXPECT_EQ(got.at("scalar").to("CPU").item<float>(), 2.5f);
}

TEST(SafeTensors, LayoutFollowsTheSpec) {
  TempDir dir;
  std::string path = (dir.path() / "layout.safetensors").string();
  safe_save({{"a", Tensor::from_vector<uint8_t>({1, 2, 3}, {3})}, {"b", Tensor::from_vector<double>({1.0}, {1})},
             {"c", Tensor::from_vector<int16_t>({7, 8}, {2})}},
            path);
  std::string b = file_bytes(path);
  ASSERT_GE(b.size(), 8u);
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--) n = n << 8 | uint8_t(b[size_t(i)]);
  EXPECT_EQ(n % 8, 0u);                     // the data section starts 8-aligned
  EXPECT_EQ(b.size(), 8 + n + 3 + 8 + 4);  // no holes: exactly the tensors' bytes follow
  std::string header = b.substr(8, n);
  EXPECT_EQ(header[0], '{');
  EXPECT_EQ(header.find_last_not_of(' '), header.rfind('}'));  // padded with spaces only
  // every tensor at a multiple of its element size: f64 first, then i16, then u8
  SafeMetadata md = safe_load_metadata(path);
  EXPECT_EQ(md.data_start, int64_t(8 + n));
  EXPECT_EQ(md.tensors.at("b").begin, 0);
  EXPECT_EQ(md.tensors.at("c").begin, 8);
  EXPECT_EQ(md.tensors.at("a").begin, 12);
  EXPECT_EQ(md.tensors.at("a").end, 15);
  EXPECT_EQ(md.tensors.at("c").dtype, dtypes::int16);
  EXPECT_EQ(md.tensors.at("c").shape, Shape{2});
  // the data section holds the raw little-endian values
  double d;
  std::memcpy(&d, b.data() + 8 + n, 8);
  EXPECT_EQ(d, 1.0);
  EXPECT_EQ(uint8_t(b[8 + n + 8]), 7);
  EXPECT_EQ(uint8_t(b[8 + n + 12]), 1);
}

TEST(SafeTensors, Fp8ByHandBytes) {
  // F8_E4M3 and F8_E5M2 as the safetensors spec names them: one byte each, the OCP formats
  TempDir dir;
  std::string path = (dir.path() / "fp8.safetensors").string();
  std::string header = R"({"e4":{"dtype":"F8_E4M3","shape":[4],"data_offsets":[0,4]},"e5":{"dtype":"F8_E5M2","shape":[2,2],"data_offsets":[4,8]}})";
  write_bytes(path, safetensors(header, std::string("\x38\xc0\x7e\x01\x3c\xc0\x7b\x01", 8)));
  auto sd = safe_load(path);
  ASSERT_EQ(sd.size(), 2u);
  EXPECT_EQ(sd.at("e4").dtype(), dtypes::fp8e4m3);
  EXPECT_EQ(sd.at("e5").dtype(), dtypes::fp8e5m2);
  EXPECT_EQ(sd.at("e5").shape(), (Shape{2, 2}));
  // e4m3: 0.0111.000 = 1, 1.1000.000 = -2, 0.1111.110 = 448 (the largest), 0.0000.001 = 2^-9; e5m2 likewise with 57344, 2^-16
  EXPECT_EQ(sd.at("e4").to("CPU").to_vector<float>(), (std::vector<float>{1, -2, 448, 0.001953125f}));
  EXPECT_EQ(sd.at("e5").to("CPU").to_vector<float>(), (std::vector<float>{1, -2, 57344, 1.52587890625e-05f}));
  // saved back: the same names and bytes
  std::string out = (dir.path() / "fp8_out.safetensors").string();
  safe_save({{"w", Tensor::from_vector<float>({1, -2, 448, 0.001953125f}).cast(dtypes::fp8e4m3)}}, out);
  std::string b = file_bytes(out);
  EXPECT_NE(b.find("\"F8_E4M3\""), std::string::npos);
  EXPECT_EQ(b.substr(b.size() - 4), std::string("\x38\xc0\x7e\x01", 4));
  EXPECT_EQ(safe_load_metadata(out).tensors.at("w").dtype, dtypes::fp8e4m3);
  // the fnuz formats have no safetensors name
  expect_has(error_of([&] { safe_save({{"f", Tensor::from_bytes({0x40}, dtypes::fp8e4m3fnuz, {1})}}, out); }), {"fp8e4m3fnuz"});
}

TEST(SafeTensors, Metadata) {
  TempDir dir;
  std::string path = (dir.path() / "meta.safetensors").string();
  safe_save({{"x", Tensor::from_vector<float>({1})}}, path, {{"format", "pt"}, {"note", "quotes \" and \\ and ünïcode"}});
  SafeMetadata md = safe_load_metadata(path);
  EXPECT_EQ(md.metadata, (std::map<std::string, std::string>{{"format", "pt"}, {"note", "quotes \" and \\ and ünïcode"}}));
  EXPECT_EQ(md.tensors.size(), 1u);
  EXPECT_EQ(safe_load(path).size(), 1u);  // __metadata__ is not a tensor
  // without metadata there is no __metadata__ entry at all
  safe_save({{"x", Tensor::from_vector<float>({1})}}, path);
  EXPECT_EQ(file_bytes(path).find("__metadata__"), std::string::npos);
  EXPECT_TRUE(safe_load_metadata(path).metadata.empty());
}

TEST(SafeTensors, SaveOverwritesAFileThatIsLoaded) {
  TempDir dir;
  std::string path = (dir.path() / "w.safetensors").string();
  safe_save({{"x", Tensor::from_vector<int32_t>({1, 2, 3})}}, path);
  Tensor old = safe_load(path).at("x");
  EXPECT_EQ(old.to("CPU").to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 3}));
  safe_save({{"x", Tensor::from_vector<int32_t>({4, 5})}}, path);
  EXPECT_EQ(safe_load(path).at("x").to("CPU").to_vector<int32_t>(), (std::vector<int32_t>{4, 5}));
}

TEST(SafeTensors, SaveErrors) {
  TempDir dir;
  std::string path = (dir.path() / "e.safetensors").string();
  expect_has(error_of([&] { safe_save({{"w", Tensor(1.5)}}, path); }), {"\"w\"", "weak"});
  expect_has(error_of([&] { safe_save({{"x", Tensor::from_vector<float>({1})}}, (dir.path() / "no/such/dir/x").string()); }),
             {"no/such/dir"});
}

// ***** 2. a file from an independent writer *****

TEST(SafeTensors, ReferenceFileFromPythonWriter) {
  auto sd = safe_load(ref_file);
  ASSERT_EQ(sd.size(), 16u);
  auto f = [&](const char* k) { return sd.at(k).to("CPU"); };
  auto idx = [](size_t n, auto fn) {
    using R = decltype(fn(int64_t(0)));
    std::vector<R> v;
    for (size_t i = 0; i < n; i++) v.push_back(fn(int64_t(i)));
    return v;
  };
  EXPECT_EQ(sd.at("f32").shape(), (Shape{2, 3}));
  EXPECT_EQ(f("f32").to_vector<float>(), idx(6, [](int64_t i) { return float(i) * 0.5f - 1; }));
  EXPECT_EQ(f("f64").to_vector<double>(), idx(4, [](int64_t i) { return double(i - 2) * 0.25; }));
  EXPECT_EQ(sd.at("f16").dtype(), dtypes::float16);
  EXPECT_EQ(f("f16").to_vector<float>(), idx(3, [](int64_t i) { return float(i - 1) * 1.5f; }));
  // bf16: the upper 16 bits of the float32 (i + 1) * 0.5
  EXPECT_EQ(sd.at("bf16").dtype(), dtypes::bfloat16);
  EXPECT_EQ(f("bf16").data(), raw(idx(4, [](int64_t i) {
              float x = float(i + 1) * 0.5f;
              uint32_t u;
              std::memcpy(&u, &x, 4);
              return uint16_t(u >> 16);
            })));
  EXPECT_EQ(f("bf16").to_vector<float>(), (std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f}));
  EXPECT_EQ(f("i8").to_vector<int8_t>(), idx(5, [](int64_t i) { return int8_t(1 - 3 * i); }));
  EXPECT_EQ(sd.at("u8").shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(f("u8").to_vector<uint8_t>(), idx(8, [](int64_t i) { return uint8_t((31 * i) % 256); }));
  EXPECT_EQ(f("i16").to_vector<int16_t>(), idx(3, [](int64_t i) { return int16_t(-1000 * i); }));
  EXPECT_EQ(f("u16").to_vector<uint16_t>(), idx(3, [](int64_t i) { return uint16_t(65535 - i); }));
  EXPECT_EQ(f("i32").to_vector<int32_t>(), idx(4, [](int64_t i) { return int32_t(7 - 100000 * i); }));
  EXPECT_EQ(f("u32").to_vector<uint32_t>(), idx(3, [](int64_t i) { return uint32_t(4000000000u + uint32_t(i)); }));
  EXPECT_EQ(f("i64").to_vector<int64_t>(), idx(2, [](int64_t i) { return i - (int64_t(1) << 40); }));
  EXPECT_EQ(f("u64").to_vector<uint64_t>(), idx(2, [](int64_t i) { return (uint64_t(1) << 63) + uint64_t(i); }));
  EXPECT_EQ(sd.at("bool").dtype(), dtypes::bool_);
  EXPECT_EQ(f("bool").to_vector<bool>(), idx(4, [](int64_t i) { return i % 3 == 0; }));
  EXPECT_EQ(sd.at("scalar").shape(), Shape{});
  EXPECT_EQ(f("scalar").item<float>(), 3.25f);
  EXPECT_EQ(sd.at("empty").shape(), (Shape{0, 3}));
  EXPECT_TRUE(f("empty").to_vector<float>().empty());
  EXPECT_EQ(f("nested.block.weight").to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(safe_load_metadata(ref_file).metadata, (std::map<std::string, std::string>{{"format", "pt"}, {"writer", "write_safetensors.py"}}));
  // and we write what we read: a re-save loads back identically
  TempDir dir;
  std::string path = (dir.path() / "resave.safetensors").string();
  safe_save(sd, path);
  for (auto& [k, t] : safe_load(path)) EXPECT_EQ(t.to("CPU").data(), sd.at(k).to("CPU").data()) << k;
}

// ***** 3. laziness *****

TEST(SafeTensors, LoadIsLazy) {
  TempDir dir;
  std::string path = (dir.path() / "lazy.safetensors").string();
  safe_save({{"x", Tensor::from_vector<int32_t>({1, 2, 3, 4})}}, path);
  auto sd = safe_load(path);
  Tensor cpu = sd.at("x").to("CPU");
  // change the data bytes in place after loading: the tensors read the file only when realized
  SafeMetadata md = safe_load_metadata(path);
  {
    std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(md.data_start + 4);
    int32_t v = 42;
    f.write(reinterpret_cast<const char*>(&v), 4);
  }
  EXPECT_EQ(cpu.to_vector<int32_t>(), (std::vector<int32_t>{1, 42, 3, 4}));
}

// ***** 4. corrupt files *****

class Corrupt : public ::testing::Test {
 protected:
  TempDir dir;
  std::string path = (dir.path() / "bad.safetensors").string();
  std::string load_error(const std::string& bytes) {
    write_bytes(path, bytes);
    return error_of([&] { safe_load(path); });
  }
};

TEST_F(Corrupt, MissingFile) {
  expect_has(error_of([&] { safe_load((dir.path() / "nope.safetensors").string()); }), {"nope.safetensors", "no such file"});
  expect_has(error_of([&] { safe_load(dir.path().string()); }), {"not a regular file"});
}
TEST_F(Corrupt, TooShortForTheHeaderSize) { expect_has(load_error("abc"), {path, "truncated", "3 bytes"}); }
TEST_F(Corrupt, HeaderSizePastEnd) {
  write_bytes(path, safetensors("{}", ""));  // a header and no tensors is a valid, empty file
  EXPECT_TRUE(safe_load(path).empty());
  std::string b = safetensors("{}", "");
  b[6] = 1;  // a size of 2^48 + 2
  expect_has(load_error(b), {path, "header size 281474976710658", "past the end"});
  b = safetensors("{}", "");
  b[0] = 100;
  expect_has(load_error(b), {path, "header size 100 runs past the end of the file (10 bytes)"});
}
TEST_F(Corrupt, HeaderNotJson) {
  expect_has(load_error(safetensors("{\"a\": [1, 2", "")), {path, "not valid JSON"});
  expect_has(load_error(safetensors("[1, 2]  ", "")), {path, "not a JSON object"});
  expect_has(load_error(safetensors("\xff\xfe{}    ", "")), {path, "not valid JSON"});
  expect_has(load_error(safetensors("{\"x\": 5}", "")), {path, "\"x\"", "not a JSON object"});
  expect_has(load_error(safetensors("{\"__metadata__\": [1]}", "")), {path, "__metadata__"});
}
TEST_F(Corrupt, MissingFields) {
  expect_has(load_error(safetensors(R"({"x":{"shape":[1],"data_offsets":[0,4]}})", "abcd")), {path, "\"x\"", "dtype"});
  expect_has(load_error(safetensors(R"({"x":{"dtype":"F32","data_offsets":[0,4]}})", "abcd")), {path, "\"x\"", "shape"});
  expect_has(load_error(safetensors(R"({"x":{"dtype":"F32","shape":[1]}})", "abcd")), {path, "\"x\"", "data_offsets"});
  expect_has(load_error(safetensors(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", "abcd")), {path, "data_offsets"});
}
TEST_F(Corrupt, UnknownDtype) {
  expect_has(load_error(safetensors(R"({"x":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}})", std::string(16, 'a'))),
             {path, "\"x\"", "unknown dtype \"F128\""});
  // a dtype of the spec that tinygrad has no type for (complex64)
  expect_has(load_error(safetensors(R"({"x":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}})", std::string(8, 'a'))), {path, "C64"});
}
TEST_F(Corrupt, BadShape) {
  expect_has(load_error(safetensors(R"({"x":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}})", "a")), {path, "\"x\"", "shape"});
  expect_has(load_error(safetensors(R"({"x":{"dtype":"U8","shape":[1.5],"data_offsets":[0,1]}})", "a")), {path, "shape"});
  // a product that overflows 64 bits is not silently wrapped around to match
  expect_has(load_error(safetensors(R"({"x":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", "")),
             {path, "\"x\"", "needs more"});
}
TEST_F(Corrupt, OffsetsOutOfRange) {
  expect_has(load_error(safetensors(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "abcd")),
             {path, "\"x\"", "[0, 8]", "out of range", "4 data bytes"});
  expect_has(load_error(safetensors(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", "abcd")), {path, "out of range"});
  expect_has(load_error(safetensors(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", "abcd")), {path, "data_offsets"});
}
TEST_F(Corrupt, OffsetsDoNotMatchDtypeTimesShape) {
  expect_has(load_error(safetensors(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "abcdefgh")),
             {path, "\"x\"", "4 bytes", "F32 (2,) needs 8"});
}
TEST_F(Corrupt, OverlappingTensors) {
  expect_has(load_error(safetensors(R"({"a":{"dtype":"I32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"I32","shape":[1],"data_offsets":[4,8]}})",
                                    "abcdefgh")),
             {path, "\"a\"", "\"b\"", "overlap"});
  // touching ranges and empty tensors anywhere are fine
  write_bytes(path, safetensors(R"({"a":{"dtype":"I32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"I32","shape":[1],"data_offsets":[4,8]},"e":{"dtype":"I32","shape":[0],"data_offsets":[2,2]}})",
                                "abcdefgh"));
  EXPECT_EQ(safe_load(path).size(), 3u);
}
TEST_F(Corrupt, TruncatedData) {
  // a good file cut short: its last tensor now runs past the end
  std::string good_path = (dir.path() / "good.safetensors").string();
  safe_save({{"a", Tensor::from_vector<float>({1, 2, 3, 4})}, {"b", Tensor::from_vector<int64_t>({5, 6})}}, good_path);
  std::string b = file_bytes(good_path);
  expect_has(load_error(b.substr(0, b.size() - 3)), {path, "out of range"});
  expect_has(load_error(b.substr(0, 20)), {path, "past the end"});  // cut inside the header
}

// ***** 5. state dicts *****

namespace {
struct Block : nn::Module {
  Tensor weight = Tensor::from_vector<float>({0, 0, 0, 0}, {2, 2});
  std::optional<Tensor> bias = Tensor::from_vector<float>({0, 0});
  std::optional<Tensor> none;  // an absent optional is not state
  void visit_state(nn::StateVisitor& v) override { v("weight", weight); v("bias", bias); v("none", none); }
};
struct Net : nn::Module {
  Block first;
  std::vector<Block> layers = std::vector<Block>(2);
  Tensor scale = Tensor::from_vector<float>({1}, {1});
  Tensor steps = Tensor::from_vector<int32_t>({0}, {});
  void visit_state(nn::StateVisitor& v) override { v("first", first); v("layers", layers); v("scale", scale); v("steps", steps); }
};
std::map<std::string, Tensor> filled(Net& net, float base) {
  std::map<std::string, Tensor> sd;
  float x = base;
  for (auto& [k, t] : get_state_dict(net)) {
    std::vector<float> v;
    for (int64_t i = 0; i < t.numel(); i++) v.push_back(x++);
    sd.emplace(k, Tensor::from_vector<float>(v, t.shape()).cast(t.dtype()));
  }
  return sd;
}
}  // namespace

TEST(StateDict, NamesAndOrder) {
  Net net;
  auto sd = get_state_dict(net);
  std::vector<std::string> keys;
  for (auto& [k, t] : sd) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"first.bias", "first.weight", "layers.0.bias", "layers.0.weight", "layers.1.bias",
                                            "layers.1.weight", "scale", "steps"}));
  auto params = get_parameters(net);
  ASSERT_EQ(params.size(), 8u);  // visit order
  EXPECT_TRUE(params[0].is(net.first.weight));
  EXPECT_TRUE(params[1].is(*net.first.bias));
  EXPECT_TRUE(params[2].is(net.layers[0].weight));
  EXPECT_TRUE(params[7].is(net.steps));
  EXPECT_TRUE(sd.at("layers.1.weight").is(net.layers[1].weight));  // the dict shares the model's tensors
}

TEST(StateDict, LoadFromSafetensorsOnDisk) {
  Net src, dst;
  auto sd = filled(src, 1);
  load_state_dict(src, sd);
  TempDir dir;
  std::string path = (dir.path() / "net.safetensors").string();
  safe_save(get_state_dict(src), path);
  auto loaded = load_state_dict(dst, safe_load(path));
  EXPECT_EQ(loaded.size(), 8u);
  for (auto& [k, t] : get_state_dict(dst)) {
    EXPECT_EQ(t.device(), "CPU") << k;  // moved to the model tensor's device
    EXPECT_EQ(t.data(), sd.at(k).data()) << k;
  }
  EXPECT_EQ(dst.first.weight.to_vector<float>(), (std::vector<float>{3, 4, 5, 6}));  // bias (2) sorts first
  EXPECT_EQ(dst.steps.item<int32_t>(), 20);
}

TEST(StateDict, LoadIntoAnotherDevice) {
  Net net;
  net.scale = Tensor::from_vector<float>({0}, {1}, std::nullopt, "CPU:1");
  auto sd = filled(net, 10);
  load_state_dict(net, sd);
  EXPECT_EQ(net.scale.device(), "CPU:1");
  EXPECT_EQ(net.scale.to_vector<float>(), sd.at("scale").to_vector<float>());
}

TEST(StateDict, RealizeFalseStaysLazy) {
  TempDir dir;
  std::string path = (dir.path() / "l.safetensors").string();
  Net net;
  safe_save(filled(net, 0), path);
  auto loaded = load_state_dict(net, safe_load(path), true, false);
  // nothing has been read yet: a change to the file now shows in the model
  SafeMetadata md = safe_load_metadata(path);
  {
    std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(md.data_start + md.tensors.at("scale").begin);
    float v = -7;
    f.write(reinterpret_cast<const char*>(&v), 4);
  }
  EXPECT_EQ(net.scale.to_vector<float>(), (std::vector<float>{-7}));
}

TEST(StateDict, ScalarAndOneElementInterchange) {
  Net net;
  auto sd = filled(net, 0);
  sd.at("scale") = Tensor::from_vector<float>({9}, {});  // () into (1,)
  sd.at("steps") = Tensor::from_vector<int32_t>({4}, {1});  // (1,) into ()
  load_state_dict(net, sd);
  EXPECT_EQ(net.scale.shape(), Shape{1});
  EXPECT_EQ(net.scale.item<float>(), 9);
  EXPECT_EQ(net.steps.shape(), Shape{});
  EXPECT_EQ(net.steps.item<int32_t>(), 4);
}

TEST(StateDict, Errors) {
  Net net;
  std::vector<float> before = net.first.weight.to_vector<float>();
  auto sd = filled(net, 1);
  auto missing = sd;
  missing.erase("layers.1.bias");
  missing.erase("scale");
  expect_has(error_of([&] { load_state_dict(net, missing); }), {"missing", "layers.1.bias", "scale"});
  auto extra = sd;
  extra.emplace("layers.2.weight", Tensor::from_vector<float>({1}));
  expect_has(error_of([&] { load_state_dict(net, extra); }), {"unexpected", "layers.2.weight"});
  auto both = missing;
  both.emplace("bogus", Tensor::from_vector<float>({1}));
  expect_has(error_of([&] { load_state_dict(net, both); }), {"missing", "scale", "unexpected", "bogus"});
  auto shape = sd;
  shape.at("first.weight") = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2});
  expect_has(error_of([&] { load_state_dict(net, shape, false); }), {"shape mismatch", "first.weight", "(2, 2)", "(3, 2)"});
  auto dt = sd;
  dt.at("layers.0.bias") = Tensor::from_vector<int32_t>({1, 2});
  expect_has(error_of([&] { load_state_dict(net, dt); }), {"dtype mismatch", "layers.0.bias", "dtypes.float", "dtypes.int"});
  // a failed load leaves the model untouched
  EXPECT_EQ(net.first.weight.to_vector<float>(), before);
  // without strict, missing keys are skipped and extra keys ignored
  auto loaded = load_state_dict(net, both, false);
  EXPECT_EQ(loaded.size(), 6u);
  EXPECT_EQ(net.first.weight.to_vector<float>(), sd.at("first.weight").to_vector<float>());
  EXPECT_EQ(net.scale.to_vector<float>(), (std::vector<float>{1}));
}
