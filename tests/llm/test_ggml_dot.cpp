// tg::gguf::ggml_dot against ggml's integer dot products written out in numpy from ggml's C (tests/llm/ggml_dot_ref.py)
// on random blocks: x quantized bit for bit (int8 values and scales, a block of zeros included), the int32 sums per
// block equal, x @ W^T (24 rows: a short prompt's kernel, 8 rows of x by 2 of W; and one row of x, decode's kernel: for
// Q4_K on AVX512-VNNI vpdpbusd, its sub-block scales applied by vpdpwssd) equal up to float32 rounding; each with SIMD
// kernels and tinygrad's (SIMD=0).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <nlohmann/json.hpp>

#include "support/error_of.h"
#include "support/generated.h"
#include "tg/context.h"
#include "tg/gguf.h"

using namespace tg;
using namespace tg::gguf;

namespace {

struct Ref : test::GeneratedFiles {
  Ref() : GeneratedFiles("tg_dot", test::shell_quote(TG_PYTHON) + " " + test::shell_quote(TG_DOT_REF), "setup.sh makes the venv with numpy") {}
  template <class T> std::vector<T> load(const std::string& name) const {
    std::ifstream f(path(name), std::ios::binary);
    std::vector<char> b((std::istreambuf_iterator<char>(f)), {});
    std::vector<T> v(b.size() / sizeof(T));
    std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
    return v;
  }
};
const Ref& ref() {
  static Ref r;
  return r;
}
constexpr int64_t N = 64, K = 768, R = 24;

class GgmlDot : public testing::TestWithParam<std::tuple<GGMLType, int>> {};

TEST_P(GgmlDot, MatchesGgmlsIntegerDot) {
  ASSERT_TRUE(ref().error.empty()) << ref().error;
  auto [type, simd] = GetParam();
  Context ctx({{"SIMD", simd}});
  std::string t = ggml_type_name(uint32_t(type)) + ".";
  Tensor x = Tensor::from_vector(ref().load<float>("x.bin"), {R, K});
  std::vector<uint8_t> wb = ref().load<uint8_t>(t + "w.bin");
  Tensor w = Tensor::from_vector(wb, {int64_t(wb.size())});
  Q8Rows q = ggml_quantize_rows(x, type);
  EXPECT_EQ(q.q.to_vector<int8_t>(), ref().load<int8_t>(t + "q.bin"));
  EXPECT_EQ(q.d.to_vector<float>(), ref().load<float>(t + "d.bin"));
  EXPECT_EQ(ggml_block_dots(q, w, N, type).to_vector<int32_t>(), ref().load<int32_t>(t + "dots.bin"));
  std::vector<float> y = ggml_dot(x, w, N, type).to_vector<float>();
  std::vector<double> ry = ref().load<double>(t + "y.bin"), scale = ref().load<double>(t + "yabs.bin");
  ASSERT_EQ(y.size(), ry.size());
  // float32 sums of the lanes' terms (Q4_K: 96 an output, each a few roundings): n * 2^-24 of the terms' magnitudes
  double tol = type == GGMLType::Q4_K ? 1e-5 : 1e-6;
  for (size_t i = 0; i < y.size(); i++) EXPECT_NEAR(y[i], ry[i], tol * scale[i]) << "row " << i / N << " column " << i % N;
  // one row of x, as in decode: the matrix-vector kernel (SIMD: matvec lanes, pmaddwd on x86)
  // (Q4_K with its scales decoded once, as the model does: there the loop is vpdpbusd on AVX512-VNNI)
  std::optional<DotWeight> sc;
  if (type == GGMLType::Q4_K) sc = ggml_dot_weight(w, N, K, type), Tensor::realize({sc->words, sc->halves, sc->scales});
  std::vector<float> y0 = ggml_dot(x.shrink({{0, 1}, {0, K}}), w, N, type, sc).to_vector<float>();
  for (size_t i = 0; i < size_t(N); i++) EXPECT_NEAR(y0[i], ry[i], tol * scale[i]) << "one row, column " << i;
}

// ggml_dequant_rows equals W decoded from its bytes (ggml_data_to_tensor, which test_gguf checks against gguf-py bit for
// bit), and so does a prompt's x @ W^T through the packed GEMM (tensor/gemm.cpp: from 64 rows of x and 256K weights)
// with either graph of W: the same panels, bit for bit, and the same GEMM
TEST(GgmlDequantRows, PromptGemmEqualsDecodedWeights) {
  ASSERT_TRUE(ref().error.empty()) << ref().error;
  for (int simd : {1, 0}) {
    Context ctx({{"SIMD", simd}});
    std::vector<uint8_t> wb = ref().load<uint8_t>("Q4_K.w.bin"), w8;
    for (int i = 0; i < 8; i++) w8.insert(w8.end(), wb.begin(), wb.end());  // 512 rows (8 copies of the reference's 64)
    int64_t n = 8 * N;
    Tensor w = Tensor::from_vector(w8, {int64_t(w8.size())}).realize();
    DotWeight dw = ggml_dot_weight(w, n, K, GGMLType::Q4_K);
    Tensor::realize({dw.words, dw.halves, dw.scales});
    Tensor rows = ggml_dequant_rows(dw, n, K), deq = ggml_data_to_tensor(w, n * K, GGMLType::Q4_K).reshape({n, K});
    EXPECT_EQ(rows.to_vector<float>(), deq.to_vector<float>()) << "SIMD=" << simd;
    Tensor x = Tensor::from_vector(ref().load<float>("x.bin"), {R, K});
    Tensor x6 = Tensor::cat({x, x * 0.5f, x, x * -2.0f, x, x}, 0);  // 144 rows
    // (SIMD=0 has no panels: each graph's decode fuses into the GEMM's loop, where the compiler may contract differently)
    if (simd) EXPECT_EQ(x6.matmul(rows.transpose(0, 1)).to_vector<float>(), x6.matmul(deq.transpose(0, 1)).to_vector<float>());
  }
  DotWeight none{Tensor::zeros({36}, dtypes::uint32), Tensor::zeros({72}, dtypes::float16), Tensor::zeros({1, 1, 16}, dtypes::uint8)};
  EXPECT_NE(test::error_of([&] { ggml_dequant_rows(none, 2, 256); }).find("not of 2 rows of 256"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Types, GgmlDot, testing::Combine(testing::Values(GGMLType::Q8_0, GGMLType::Q4_K), testing::Values(1, 0)));

TEST(GgmlDotErrors, BadInputIsAnError) {
  Tensor x = Tensor::zeros({2, 64}), w = Tensor::zeros({3 * 2 * 34}, dtypes::uint8);
  EXPECT_NE(test::error_of([&] { ggml_dot(x, w, 3, GGMLType::Q4_0); }).find("Q4_0 has no integer dot"), std::string::npos);
  EXPECT_NE(test::error_of([&] { ggml_dot(x, w, 4, GGMLType::Q8_0); }).find("W needs 272 bytes of Q8_0"), std::string::npos);
  EXPECT_NE(test::error_of([&] { ggml_dot(x, w, 3, GGMLType::Q4_K); }).find("whole blocks of 256"), std::string::npos);
  EXPECT_NE(test::error_of([&] { ggml_dot(x.cast(dtypes::float16), w, 3, GGMLType::Q8_0); }).find("float32 rows"), std::string::npos);
}

}  // namespace
