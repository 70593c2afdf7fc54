// ggml's integer dot products as Tensor graphs (ggml-cpu's ggml_vec_dot_q8_0_q8_0 and ggml_vec_dot_q4_K_q8_K): the
// activations quantized to int8 per block as ggml-cpu quantizes them, the products of W's integers with them summed in
// int32 per block, then the blocks' float scales. The sums are exact, so only the float steps (one multiply and add per
// block) differ from ggml's in order; the weight's bytes are read once, in one kernel with the products.
#include "llm/ggml_fields.h"
#include "tg/gguf.h"

namespace tg::gguf {

namespace {
Tensor i32(const Tensor& t) { return t.cast(dtypes::int32); }
Tensor num(float v) { return Tensor(v, dtypes::float32); }

// W's bytes as blocks (n * K / block, block bytes), checked against x's K
Tensor blocks(const Tensor& raw, int64_t n, int64_t K, GGMLType type) {
  auto [blk, bytes] = ggml_block(type);
  if (raw.ndim() != 1 || raw.dtype() != dtypes::uint8 || raw.shape()[0] != n * K / blk * bytes)
    throw Error("ggml_dot: W needs " + std::to_string(n * K / blk * bytes) + " bytes of " + ggml_type_name(uint32_t(type)) + " as a 1-D uint8 tensor, got " +
                raw.shape_str() + " " + std::string(raw.dtype().name()));
  return raw.reshape({n * K / blk, bytes});
}
}  // namespace

bool ggml_dot_supported(GGMLType t) { return t == GGMLType::Q8_0 || t == GGMLType::Q4_K; }

Q8Rows ggml_quantize_rows(const Tensor& x, GGMLType type) {
  if (!ggml_dot_supported(type)) throw Error("ggml_quantize_rows: " + ggml_type_name(uint32_t(type)) + " has no integer dot product (Q8_0, Q4_K)");
  int64_t blk = ggml_block(type).first;
  if (x.ndim() != 2 || x.dtype() != dtypes::float32 || x.shape()[1] % blk)
    throw Error("ggml_quantize_rows: needs float32 rows of whole blocks of " + std::to_string(blk) + ", got " + x.shape_str() + " " + std::string(x.dtype().name()));
  int64_t R = x.shape()[0], K = x.shape()[1];
  Tensor b = x.reshape({R, K / blk, blk}), q, d;
  if (type == GGMLType::Q8_0) {  // ggml-cpu's x86 quantize_row_q8_0: x * (127 / amax) rounded to nearest even
    Tensor amax = b.abs().max(-1, true);
    // rounded to float16 by storing it as one (a float16 cast read back in the same kernel came out unrounded); amax / 127
    // is amax * (1 / 127) here, which can differ from ggml's quotient by an ulp of float32 before that rounding
    d = (amax / num(127)).cast(dtypes::float16).contiguous().cast(dtypes::float32);
    q = (b * (amax != num(0)).where(num(127) / amax, num(0))).round();
  } else {  // quantize_row_q8_K_ref: the scale's sign is that of the element of the largest magnitude (first of a tie)
    Tensor mx = b.max(-1, true), mn = b.min(-1, true), m = (mx >= -mn).where(mx, mn);
    Tensor iscale = (m != num(0)).where(num(-127) / m, num(0));
    q = (b * iscale).round().minimum(num(127));
    d = (m != num(0)).where(num(1) / iscale, num(0));
  }
  return {q.cast(dtypes::int8).reshape({R, K}), d.reshape({R, K / blk})};
}

namespace {
// the int32 lanes of W's products with xq's: lane l of a block of 32 sums the products of its elements l and l + 16, so
// every lane's loads are consecutive bytes (a vector register of each) and a block's sum is the sum of its 16 lanes.
// (R, n, K / 32, 16); for Q4_K each lane times its sub-block's 6-bit scale
Tensor lanes(const Q8Rows& xq, const Tensor& raw, int64_t n, GGMLType type) {
  if (!ggml_dot_supported(type)) throw Error("ggml_block_dots: " + ggml_type_name(uint32_t(type)) + " has no integer dot product (Q8_0, Q4_K)");
  if (xq.q.ndim() != 2 || xq.q.dtype() != dtypes::int8) throw Error("ggml_block_dots: needs int8 rows, got " + xq.q.shape_str());
  int64_t R = xq.q.shape()[0], K = xq.q.shape()[1], blk = ggml_block(type).first;
  if (K % blk) throw Error("ggml_block_dots: K " + std::to_string(K) + " is not whole blocks of " + std::to_string(blk));
  Tensor b = blocks(raw, n, K, type), qw;
  if (type == GGMLType::Q8_0) qw = cols(b, 2, 34).bitcast(dtypes::int8);
  else qw = (spread(cols(b, 16, 144).reshape({-1, 4, 32}), 2, {0, 4}) & Tensor(0xF)).reshape({-1, 8, 32});
  Tensor p = i32(qw).reshape({1, n, K / 32, 2, 16}) * i32(xq.q).reshape({R, 1, K / 32, 2, 16});
  auto half = [&](int64_t h) { return p.shrink({{0, R}, {0, n}, {0, K / 32}, {h, h + 1}, {0, 16}}).reshape({R, n, K / 32, 16}); };
  Tensor l = half(0) + half(1);
  if (type == GGMLType::Q8_0) return l;
  return l * i32(k_scale_min(cols(b, 4, 16)).first).reshape({1, n, K / 32, 1});
}
}  // namespace

Tensor ggml_block_dots(const Q8Rows& xq, const Tensor& raw, int64_t n, GGMLType type) {
  Tensor l = lanes(xq, raw, n, type);
  if (type == GGMLType::Q8_0) return l.sum(-1);
  return l.reshape({l.shape()[0], n, -1, 8 * 16}).sum(-1);  // Q4_K: the scaled sums of a super-block's 8 sub-blocks
}

Tensor ggml_dot(const Tensor& x, const Tensor& raw, int64_t n, GGMLType type) {
  Q8Rows xq = ggml_quantize_rows(x, type);
  xq = {xq.q.contiguous(), xq.d.contiguous()};  // their own small kernel, not redone for each row of W
  int64_t R = x.shape()[0], K = x.shape()[1], nb = K / ggml_block(type).first;
  Tensor l = f32(lanes(xq, raw, n, type)), b = blocks(raw, n, K, type), dx = xq.d.reshape({R, 1, nb});
  auto field = [&](int64_t at) { return half_at(b, at).reshape({1, n, nb}); };
  // one float reduce over the blocks and lanes: each lane's int32 sum times its block's scale (llama.cpp's SIMD dot
  // does the same: the lanes converted to float and multiplied-added with the scales, summed after the loop)
  if (type == GGMLType::Q8_0) return (l.reshape({R, n, nb, 16}) * (field(0) * dx).unsqueeze(-1)).sum({2, 3});
  // Q4_K: minus dmin * d_x * sum_j min_j * (x's sum over sub-block j), that sum split over the same lanes as x's pairs
  Tensor c = i32(xq.q).reshape({R, 1, nb * 8, 2, 16}).sum(3).contiguous();
  Tensor mins = i32(k_scale_min(cols(b, 4, 16)).second).reshape({1, n, nb * 8, 1}) * c;
  Tensor t = l.reshape({R, n, nb, 8 * 16}) * (field(0) * dx).unsqueeze(-1) - f32(mins).reshape({R, n, nb, 8 * 16}) * (field(2) * dx).unsqueeze(-1);
  return t.sum({2, 3});
}

}  // namespace tg::gguf
