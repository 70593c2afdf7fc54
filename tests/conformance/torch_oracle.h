#pragma once
// libtorch as the oracle of the conformance suite: build torch tensors from plain vectors, read any
// tensor back as doubles, and compare two results (values, shape, dtype) with per-dtype tolerances.
//
// Only <ATen/ATen.h> is used (not <torch/torch.h>): it has every at:: op, Tensor methods and autograd
// (t.requires_grad_(true), t.backward(), t.grad()), and parses in a third of the time. at:: factories
// take no requires_grad option: call requires_grad_(true) on the result instead.
// libtorch 1.13 has no uint16/uint32/uint64 tensors; to_torch() says so by returning nullopt.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <tg/dtype.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace oracle {

// one intra-op thread for every test binary that includes this header (predictable on 2-core CI)
inline const bool single_threaded = (at::set_num_threads(1), true);

// ---- dtypes ----

inline std::optional<at::ScalarType> to_torch(tg::DType d) {
  using tg::DTypeId;
  switch (d.id) {
    case DTypeId::bool_: return at::kBool;
    case DTypeId::int8: return at::kChar;
    case DTypeId::uint8: return at::kByte;
    case DTypeId::int16: return at::kShort;
    case DTypeId::int32: return at::kInt;
    case DTypeId::int64: return at::kLong;
    case DTypeId::float16: return at::kHalf;
    case DTypeId::bfloat16: return at::kBFloat16;
    case DTypeId::float32: return at::kFloat;
    case DTypeId::float64: return at::kDouble;
    default: return std::nullopt;  // uint16/32/64 (not in libtorch 1.13), weak and void types
  }
}

inline std::optional<tg::DType> from_torch(at::ScalarType s) {
  switch (s) {
    case at::kBool: return tg::dtypes::bool_;
    case at::kChar: return tg::dtypes::int8;
    case at::kByte: return tg::dtypes::uint8;
    case at::kShort: return tg::dtypes::int16;
    case at::kInt: return tg::dtypes::int32;
    case at::kLong: return tg::dtypes::int64;
    case at::kHalf: return tg::dtypes::float16;
    case at::kBFloat16: return tg::dtypes::bfloat16;
    case at::kFloat: return tg::dtypes::float32;
    case at::kDouble: return tg::dtypes::float64;
    default: return std::nullopt;
  }
}

// tinygrad's DType::name() ("float", "half", "long"), which is what failure messages print
inline std::string dtype_name(at::ScalarType s) {
  auto d = from_torch(s);
  return d ? std::string(d->name()) : std::string(c10::toString(s));
}

// ---- building torch tensors ----

// The values of `values`, reshaped to `shape` ({} is a 0-d tensor), converted to `dtype` (by default
// the dtype of T). Converting from the C++ type rounds as torch's .to() does, e.g. float -> float16.
template <class T>
at::Tensor make(const std::vector<T>& values, std::vector<int64_t> shape, std::optional<at::ScalarType> dtype = {}) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  if (n != int64_t(values.size()))
    throw std::invalid_argument("oracle::make: " + std::to_string(values.size()) + " values do not fill the shape");
  at::Tensor t;
  if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> has no data()
    std::vector<uint8_t> bytes(values.begin(), values.end());
    t = at::from_blob(bytes.data(), shape, at::kByte).to(at::kBool);  // .to() copies
  } else {
    static_assert(std::is_arithmetic_v<T>, "oracle::make takes vectors of C++ numbers or bool");
    t = at::from_blob(const_cast<T*>(values.data()), shape, c10::CppTypeToScalarType<T>::value).clone();
  }
  return dtype ? t.to(*dtype) : t;
}

// ---- reading results back ----

// what a comparison needs of one side: values in row-major order as doubles, shape, dtype.
// (int64 values beyond 2^53 lose precision as doubles; compare those tensors with at::equal.)
struct Result {
  std::vector<double> values;
  std::vector<int64_t> shape;
  at::ScalarType dtype = at::kFloat;
};

inline std::vector<double> values(const at::Tensor& t) {
  at::Tensor d = t.detach().to(at::kCPU).to(at::kDouble).contiguous();
  const double* p = d.data_ptr<double>();
  return std::vector<double>(p, p + d.numel());
}

inline Result result(const at::Tensor& t) { return {values(t), t.sizes().vec(), t.scalar_type()}; }

// ---- comparison ----

// |actual - expected| <= atol + rtol * |expected|; NaN matches NaN, an infinity matches the same infinity
struct Tol {
  double rtol = 0, atol = 0;
};

inline Tol tolerance(at::ScalarType s) {
  switch (s) {
    case at::kFloat: return {1e-5, 1e-6};
    case at::kDouble: return {1e-12, 1e-14};
    case at::kHalf: return {1e-3, 1e-3};       // epsilon 2^-10
    case at::kBFloat16: return {1e-2, 1e-2};   // epsilon 2^-7
    default: return {0, 0};                    // bool and integers: exact
  }
}

inline bool close(double a, double e, Tol tol) {
  if (std::isnan(a) || std::isnan(e)) return std::isnan(a) && std::isnan(e);
  if (std::isinf(a) || std::isinf(e)) return a == e;
  return std::fabs(a - e) <= tol.atol + tol.rtol * std::fabs(e);
}

namespace detail {
inline std::string shape_str(const std::vector<int64_t>& s) {
  std::ostringstream os;
  os << '(';
  for (size_t i = 0; i < s.size(); i++) os << (i ? ", " : "") << s[i];
  os << (s.size() == 1 ? ",)" : ")");
  return os.str();
}
inline std::string index_str(int64_t flat, const std::vector<int64_t>& shape) {  // flat index -> [i, j, k]
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < idx.size(); i++) os << (i ? ", " : "") << idx[i];
  os << ']';
  return os.str();
}
}  // namespace detail

inline constexpr int kMaxReported = 8;

// Values, shape and dtype all have to agree. The tolerance is the expected dtype's unless given.
inline ::testing::AssertionResult match(const Result& actual, const Result& expected, std::optional<Tol> tol = {},
                                        const char* actual_expr = "actual", const char* expected_expr = "expected") {
  const Tol t = tol ? *tol : tolerance(expected.dtype);
  std::ostringstream head;
  head << actual_expr << " vs " << expected_expr << ": shapes " << detail::shape_str(actual.shape) << " vs "
       << detail::shape_str(expected.shape) << ", dtypes " << dtype_name(actual.dtype) << " vs "
       << dtype_name(expected.dtype) << ", rtol " << t.rtol << " atol " << t.atol << "\n";
  if (actual.shape != expected.shape) return ::testing::AssertionFailure() << head.str() << "  shapes differ";
  if (actual.dtype != expected.dtype) return ::testing::AssertionFailure() << head.str() << "  dtypes differ";
  if (actual.values.size() != expected.values.size())
    return ::testing::AssertionFailure() << head.str() << "  " << actual.values.size() << " values vs "
                                         << expected.values.size();
  int64_t bad = 0;
  std::ostringstream msg;
  msg.precision(9);
  for (size_t i = 0; i < expected.values.size(); i++) {
    if (close(actual.values[i], expected.values[i], t)) continue;
    if (bad++ < kMaxReported)
      msg << "  at " << detail::index_str(int64_t(i), expected.shape) << ": " << actual.values[i] << " vs "
          << expected.values[i] << " (diff " << std::fabs(actual.values[i] - expected.values[i]) << ")\n";
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << head.str() << "  " << bad << " of " << expected.values.size()
                                       << " values differ" << (bad > kMaxReported ? ", the first:" : ":") << "\n"
                                       << msg.str();
}

// gtest predicate-formatters, so failures name the expressions
inline ::testing::AssertionResult match_fmt(const char* ae, const char* ee, const Result& a, const Result& e) {
  return match(a, e, std::nullopt, ae, ee);
}
inline ::testing::AssertionResult match_tol_fmt(const char* ae, const char* ee, const char*, const Result& a,
                                                const Result& e, Tol tol) {
  return match(a, e, tol, ae, ee);
}

}  // namespace oracle

// EXPECT_MATCH(actual, expected): both oracle::Result (a torch tensor converts with oracle::result(t));
// *_TOL takes an oracle::Tol to override the expected dtype's tolerance.
#define EXPECT_MATCH(actual, expected) EXPECT_PRED_FORMAT2(::oracle::match_fmt, actual, expected)
#define ASSERT_MATCH(actual, expected) ASSERT_PRED_FORMAT2(::oracle::match_fmt, actual, expected)
#define EXPECT_MATCH_TOL(actual, expected, tol) EXPECT_PRED_FORMAT3(::oracle::match_tol_fmt, actual, expected, tol)
#define ASSERT_MATCH_TOL(actual, expected, tol) ASSERT_PRED_FORMAT3(::oracle::match_tol_fmt, actual, expected, tol)
