#pragma once
// Running one case on both libraries: inputs are made once (torch rounds them to their dtype) and copied byte for
// byte into tg::Tensors, the same op runs on each side, and the results are compared with the oracle's tolerances.
//
//   Pair x = input({3, 4}, dtypes::float32);           // random values, the same on both sides
//   expect_same(op(x), "relu");                        // where op is a generic lambda [](auto& t) { return t.relu(); }
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <string>

#include "tg/tensor.h"
#include "torch_oracle.h"

namespace conf {

using tg::DType;
namespace dtypes = tg::dtypes;

struct Pair {
  tg::Tensor t;
  at::Tensor a;
};

inline tg::Tensor to_tg(const at::Tensor& a0) {
  at::Tensor a = a0.contiguous();
  DType dt = *oracle::from_torch(a.scalar_type());
  std::vector<uint8_t> bytes(size_t(a.numel()) * size_t(a.element_size()));
  if (!bytes.empty()) std::memcpy(bytes.data(), a.data_ptr(), bytes.size());
  return tg::Tensor::from_bytes(bytes, dt, a.sizes().vec());
}

// a weak dtype (an int tensor times a float literal is weakfloat in tinygrad) is read as its strong dtype, as tinygrad does
inline at::Tensor to_torch(const tg::Tensor& t) {
  auto st = oracle::to_torch(tg::strong_dtype(t.dtype()));
  if (!st) throw std::runtime_error("no torch dtype for " + std::string(t.dtype().name()));
  std::vector<uint8_t> bytes = t.data();
  at::Tensor a = at::empty(t.shape(), at::TensorOptions().dtype(*st));
  if (!bytes.empty()) std::memcpy(a.data_ptr(), bytes.data(), bytes.size());
  return a;
}

// values in [lo, hi) (integers: whole numbers in that range; bool: coin flips), from a fixed seed per call site
inline Pair input(const std::vector<int64_t>& shape, DType dt, double lo = -3, double hi = 3, uint32_t seed = 1) {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  std::mt19937 rng(seed * 7919u + uint32_t(n) * 31u + uint32_t(dt.id));
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) {
    double u = std::uniform_real_distribution<double>(lo, hi)(rng);
    x = dt.is_bool() ? double(u > (lo + hi) / 2) : dt.is_int() ? std::floor(u) : u;
  }
  at::Tensor a = oracle::make<double>(v, shape, *oracle::to_torch(dt));
  return {to_tg(a), a};
}

// the same view of the same data on both sides: how non-contiguous inputs are made
struct Layout {
  std::string name;
  std::function<std::vector<int64_t>(std::vector<int64_t>)> source_shape;  // the shape to fill so the view has `shape`
  std::function<Pair(const Pair&)> view;
};

inline std::vector<Layout> layouts(size_t ndim) {
  std::vector<Layout> out{{"contiguous", [](auto s) { return s; }, [](const Pair& p) { return p; }}};
  if (ndim >= 2) {
    out.push_back({"permuted", [](auto s) { std::swap(s[0], s[1]); return s; },
                   [](const Pair& p) { return Pair{p.t.transpose(0, 1), p.a.transpose(0, 1)}; }});
  }
  if (ndim >= 1) {
    out.push_back({"flipped", [](auto s) { return s; }, [](const Pair& p) { return Pair{p.t.flip(0), p.a.flip({0})}; }});
    out.push_back({"shrunk", [](auto s) { s[0] += 3; return s; }, [](const Pair& p) {
                     int64_t n = p.a.size(0);
                     return Pair{p.t.shrink([&] {
                                   std::vector<std::pair<int64_t, int64_t>> r{{1, n - 2}};
                                   for (int64_t d = 1; d < p.a.dim(); d++) r.push_back({0, p.a.size(d)});
                                   return r;
                                 }()),
                                 p.a.narrow(0, 1, n - 3)};
                   }});
    out.push_back({"padded", [](auto s) { s[0] = std::max<int64_t>(s[0] - 2, 0); return s; }, [](const Pair& p) {
                     std::vector<std::pair<int64_t, int64_t>> tp{{1, 1}};
                     std::vector<int64_t> ap;
                     for (int64_t d = p.a.dim() - 1; d >= 1; d--) ap.insert(ap.end(), {0, 0});
                     for (int64_t d = 1; d < p.a.dim(); d++) tp.push_back({0, 0});
                     ap.insert(ap.end(), {1, 1});
                     return Pair{p.t.pad(tp), at::constant_pad_nd(p.a, ap, 0)};
                   }});
  }
  return out;
}

// torch 1.13 lacks some CPU kernels for float16/bfloat16 (sqrt, mm ...): then it computes in float32 and rounds
template <class F, class... A> at::Tensor torch_eval(F&& f, const A&... xs) {
  try {
    return f(xs...);
  } catch (const c10::Error&) {
    at::ScalarType st = std::get<0>(std::tie(xs...)).scalar_type();
    at::Tensor r = f(xs.to(at::kFloat)...);
    return r.is_floating_point() ? r.to(st) : r;
  }
}

// compare a tg result with torch's; when `cast_expected` the torch result is first converted to the tg dtype (for ops
// whose result dtype differs by design, e.g. argmax is int32 in tinygrad, int64 in torch)
inline ::testing::AssertionResult same(const tg::Tensor& t, at::Tensor a, bool cast_expected = false, std::optional<oracle::Tol> tol = {}) {
  at::Tensor ours;
  try {
    ours = to_torch(t);
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "tg threw: " << e.what();
  }
  if (cast_expected) a = a.to(ours.scalar_type());
  return oracle::match(oracle::result(ours), oracle::result(a), tol, "tg", "torch");
}

// one case of a group compared at once: compiling is most of a case's time, so every result of a group is flattened into
// one tensor (one kernel computes them all), then each piece is compared, in its own shape, with torch's
struct Row {
  std::string name;
  tg::Tensor t;
  at::Tensor a;
  std::optional<oracle::Tol> tol = {};
};
inline void expect_rows(const std::vector<Row>& rows, const std::string& what) {
  std::vector<tg::Tensor> ts;
  for (auto& r : rows) ts.push_back(r.t.flatten());
  at::Tensor ours;
  try {
    ours = to_torch(tg::Tensor::cat(ts));
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": tg threw " << e.what();
    return;
  }
  int64_t at = 0;
  for (auto& r : rows) {
    at::Tensor piece = ours.narrow(0, at, r.t.numel()).reshape(r.t.shape());
    at += r.t.numel();
    EXPECT_TRUE(oracle::match(oracle::result(piece), oracle::result(r.a), r.tol, "tg", "torch")) << r.name << " " << what;
  }
}

// f throws a tg::Error whose message contains every needle
inline void expect_error(const std::function<void()>& f, const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "no error, expected one naming '" << needles[0] << "'";
  } catch (const tg::Error& e) {
    for (auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

// torch's scaled_dot_product_attention written out (torch 1.13 has none): GQA repeats kv heads, is_causal is upper-left
inline at::Tensor torch_sdpa(const at::Tensor& q, at::Tensor k, at::Tensor v, std::optional<at::Tensor> mask, bool causal, bool gqa) {
  if (gqa) k = k.repeat_interleave(q.size(-3) / k.size(-3), -3), v = v.repeat_interleave(q.size(-3) / v.size(-3), -3);
  at::Tensor qk = at::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(q.size(-1)));
  if (causal) mask = at::ones({qk.size(-2), qk.size(-1)}, at::kBool).tril();
  if (mask) qk = qk + (mask->scalar_type() == at::kBool ? at::where(*mask, 0.0, -INFINITY).to(at::kFloat) : *mask);
  return at::matmul(at::softmax(qk, -1), v);
}

}  // namespace conf
