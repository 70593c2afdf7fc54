// ggml's integer dot products as Tensor graphs (ggml-cpu's ggml_vec_dot_q8_0_q8_0 and ggml_vec_dot_q4_K_q8_K): the
// activations quantized to int8 per block as ggml-cpu quantizes them, the products of W's integers with them summed in
// int32 per block, then the blocks' float scales. The sums are exact, so only the float steps (one multiply and add per
// block) differ from ggml's in order; the weight's bytes are read once, in one kernel with the products.
#include <optional>

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
// a 32-bit word's byte j as an int32: unsigned, or signed (cast through int8)
Tensor byte_of(const Tensor& w, int j, bool sign) {
  Tensor b = (w >> Tensor(8 * j, dtypes::uint32)) & Tensor(0xFF, dtypes::uint32);
  return sign ? b.cast(dtypes::int8).cast(dtypes::int32) : b.cast(dtypes::int32);
}
// the sum of the products of the 4 bytes of the words u (unsigned) and s (signed), byte by byte: x86's vpdpbusd per int32
// lane (pm_int_dot4 renders it so)
Tensor dot4(const Tensor& u, const Tensor& s) {
  Tensor d = byte_of(u, 0, false) * byte_of(s, 0, true);
  for (int j = 1; j < 4; j++) d = d + byte_of(u, j, false) * byte_of(s, j, true);
  return d;
}
// bytes as 32-bit words: a view of a realized buffer (W's bytes), else a kernel that packs them (x's int8s, once a token)
Tensor words(const Tensor& bytes) { return bytes.bitcast(dtypes::uint32).contiguous(); }

// Q4_K's 6-bit scales and mins decoded to bytes, (n, K / 256, 16): a super-block's 8 scales, then its 8 mins
Tensor q4k_scales(const Tensor& raw, int64_t n, int64_t K) {
  auto [sc, mn] = k_scale_min(cols(blocks(raw, n, K, GGMLType::Q4_K), 4, 16));
  return sc.cat(mn, 1).cast(dtypes::uint8).reshape({n, K / 256, 16});
}

// Q4_K as int32 lanes (R, n, K / 256, 2, 16), a vector register of 16 lanes per row over 64 bytes of qs: chunk c of 32
// bytes holds sub-block 2c in its low nibbles and 2c + 1 in its high ones, so lane l of pair p is the dot of word l's low
// nibbles with x's word l of sub-block 2(2p + l / 8) and of its high ones with that of 2(2p + l / 8) + 1, each times its
// sub-block's scale. `xw`: x's words in that order (q4k_x_words), so the loop loads them as they are (no shuffles)
Tensor q4k_lanes(const Tensor& xw, const Tensor& ww, const Tensor& scales, int64_t n) {
  int64_t R = xw.shape()[0], nb = scales.shape()[1];
  Tensor qw = ww.reshape({1, n, nb, 36}).shrink({{0, 1}, {0, n}, {0, nb}, {4, 36}}).reshape({1, n, nb, 2, 16});
  Tensor x = xw.reshape({R, 1, nb, 2, 2, 16}), m4 = Tensor(0x0F0F0F0F, dtypes::uint32);
  auto half = [&](int64_t h) { return x.shrink({{0, R}, {0, 1}, {0, nb}, {0, 2}, {h, h + 1}, {0, 16}}).reshape({R, 1, nb, 2, 16}); };
  auto sc = [&](int64_t h) {
    Tensor s = scales.shrink({{0, n}, {0, nb}, {0, 8}}).reshape({1, n, nb, 2, 2, 2}).shrink({{0, 1}, {0, n}, {0, nb}, {0, 2}, {0, 2}, {h, h + 1}});
    return i32(s.expand({1, n, nb, 2, 2, 8})).reshape({1, n, nb, 2, 16});
  };
  return dot4(qw & m4, half(0)) * sc(0) + dot4((qw >> Tensor(4, dtypes::uint32)) & m4, half(1)) * sc(1);
}
// x's int8s (R, K) as the words q4k_lanes reads: (R, K / 256, 2 p, 2 low/high, 16 lanes)
Tensor q4k_x_words(const Tensor& q) {
  int64_t R = q.shape()[0], nb = q.shape()[1] / 256;
  return words(q.reshape({R, nb, 2, 2, 2, 32}).permute({0, 1, 2, 4, 3, 5}).reshape({R, nb * 256})).reshape({R, nb, 2, 2, 16});
}
// Q8_0 as int32 lanes (R, n, K / 32, 16): lane l of a block of 32 sums the products of its elements l and l + 16, so
// every lane's loads are consecutive bytes (a vector register of each) and a block's sum is the sum of its 16 lanes
Tensor q8_0_lanes(const Q8Rows& xq, const Tensor& raw, int64_t n) {
  int64_t R = xq.q.shape()[0], K = xq.q.shape()[1];
  Tensor qw = cols(blocks(raw, n, K, GGMLType::Q8_0), 2, 34).bitcast(dtypes::int8);
  Tensor p = i32(qw).reshape({1, n, K / 32, 2, 16}) * i32(xq.q).reshape({R, 1, K / 32, 2, 16});
  auto half = [&](int64_t h) { return p.shrink({{0, R}, {0, n}, {0, K / 32}, {h, h + 1}, {0, 16}}).reshape({R, n, K / 32, 16}); };
  return half(0) + half(1);
}

void check(const Q8Rows& xq, GGMLType type) {
  if (!ggml_dot_supported(type)) throw Error("ggml_block_dots: " + ggml_type_name(uint32_t(type)) + " has no integer dot product (Q8_0, Q4_K)");
  if (xq.q.ndim() != 2 || xq.q.dtype() != dtypes::int8) throw Error("ggml_block_dots: needs int8 rows, got " + xq.q.shape_str());
  int64_t K = xq.q.shape()[1], blk = ggml_block(type).first;
  if (K % blk) throw Error("ggml_block_dots: K " + std::to_string(K) + " is not whole blocks of " + std::to_string(blk));
}
}  // namespace

DotWeight ggml_dot_weight(const Tensor& raw, int64_t n, int64_t K, GGMLType type) {
  if (type != GGMLType::Q4_K) throw Error("ggml_dot_weight: " + ggml_type_name(uint32_t(type)) + " reads its bytes as they are (Q4_K only)");
  blocks(raw, n, K, type);  // (checks the size)
  return {words(raw), raw.bitcast(dtypes::float16).contiguous(), q4k_scales(raw, n, K).contiguous()};
}

// The panel copy's vector lanes are 16 rows of W, so each of its loads is a gather across rows. Decoded from the bytes
// (ggml_data_to_tensor), every step gathered each qs byte, and the 12 bytes of 6-bit scales of every row, and decoded
// them again: ~2 cycles an element. Here the step gathers one 32-bit word of 8 nibbles per row (the nibble and byte
// axes are the spreads' masked axes, upcast), and d * scale and dmin * min come from a small kernel that stores them
// along the rows (one vector load each). The float ops are the dequantizer's, (d * sc) * q - dmin * mn
Tensor ggml_dequant_rows(const DotWeight& w, int64_t n, int64_t K) {
  int64_t nb = K / 256;
  if (K % 256 || w.scales.shape() != Shape{n, nb, 16} || w.words.shape() != Shape{n * nb * 36} || w.halves.shape() != Shape{n * nb * 72})
    throw Error("ggml_dequant_rows: the DotWeight is not of " + std::to_string(n) + " rows of " + std::to_string(K) + " as Q4_K");
  Tensor h = w.halves.reshape({n, nb, 72}), sc = f32(w.scales);
  auto part = [&](int64_t i) { return f32(h.shrink({{0, n}, {0, nb}, {i, i + 1}})) * sc.shrink({{0, n}, {0, nb}, {8 * i, 8 * i + 8}}); };
  // (n, nb, 4 chunks, 2 halves, 1, 1): sub-block 2c + h of each super-block, d * scale [0] and dmin * min [1]
  Tensor s = Tensor::stack({part(0), part(1)}).permute({0, 2, 3, 1}).contiguous().reshape({2, nb, 4, 2, n}).permute({0, 4, 1, 2, 3});
  auto at = [&](int64_t i) { return s.shrink({{i, i + 1}, {0, n}, {0, nb}, {0, 4}, {0, 2}}).reshape({n, nb, 4, 2, 1, 1}); };
  // chunk c's byte 4 wi + b (word wi's byte b): its low nibble is element 4 wi + b of sub-block 2c, its high one of 2c + 1
  Tensor qw = w.words.reshape({n, nb, 36}).shrink({{0, n}, {0, nb}, {4, 36}}).reshape({n, nb, 4, 8});
  Tensor q = spread(spread(qw, 3, {0, 4}), 5, {0, 8, 16, 24}) & Tensor(0xF);
  return (at(0) * f32(q) - at(1)).reshape({n, K});
}

Tensor ggml_block_dots(const Q8Rows& xq, const Tensor& raw, int64_t n, GGMLType type) {
  check(xq, type);
  if (type == GGMLType::Q8_0) return q8_0_lanes(xq, raw, n).sum(-1);
  int64_t K = xq.q.shape()[1];
  return q4k_lanes(q4k_x_words(xq.q), words(raw), q4k_scales(raw, n, K), n).sum({3, 4});  // the scaled sums of a super-block's 8 sub-blocks
}

Tensor ggml_dot(const Tensor& x, const Tensor& raw, int64_t n, GGMLType type, const std::optional<DotWeight>& w) {
  Q8Rows xq = ggml_quantize_rows(x, type);
  int64_t R = x.shape()[0], K = x.shape()[1], nb = K / ggml_block(type).first;
  Tensor dx = xq.d.contiguous().reshape({R, 1, nb});  // x's quantization: its own small kernels, not redone for each row of W
  if (type == GGMLType::Q8_0) {
    // one float reduce over the blocks and lanes: each lane's int32 sum times its block's scale (llama.cpp's SIMD dot
    // does the same: the lanes converted to float and multiplied-added with the scales, summed after the loop)
    Tensor d = half_at(blocks(raw, n, K, type), 0).reshape({1, n, nb});
    return (f32(q8_0_lanes({xq.q.contiguous(), xq.d}, raw, n)) * (d * dx).unsqueeze(-1)).sum({2, 3});
  }
  // Q4_K: d and dmin as float16 loads (a view of W's bytes); minus dmin * d_x * sum_j min_j * (x's sum over sub-block j),
  // that sum split in halves over the 16 lanes: lane l is min_(l % 8) times x's sum of the 16 elements 8(l / 8).. and
  // 8(2 + l / 8).. of sub-block l % 8 (the quarters of both pairs' lanes: no lane left empty)
  DotWeight dw = w ? *w : ggml_dot_weight(raw, n, K, type);
  if (dw.scales.shape() != Shape{n, nb, 16} || dw.scales.dtype() != dtypes::uint8 || dw.words.shape() != Shape{n * nb * 36} || dw.halves.shape() != Shape{n * nb * 72})
    throw Error("ggml_dot: the DotWeight is not of this W (" + std::to_string(n) + " rows of " + std::to_string(K) + " as Q4_K)");
  Tensor sc = dw.scales, h = dw.halves.reshape({1, n, nb, 72});
  auto field = [&](int64_t i) { return f32(h.shrink({{0, 1}, {0, n}, {0, nb}, {i, i + 1}})).reshape({1, n, nb, 1}); };
  Tensor qsum = xq.q.cast(dtypes::int32).reshape({R, nb, 8, 2, 2, 8}).sum({3, 5}).permute({0, 1, 3, 2}).contiguous().reshape({R, 1, nb, 16});
  Tensor m = i32(sc.reshape({n, nb, 2, 1, 8}).shrink({{0, n}, {0, nb}, {1, 2}, {0, 1}, {0, 8}}).expand({n, nb, 1, 2, 8})).reshape({1, n, nb, 16});
  // the two pairs' lanes added in int32 (a super-block's 8 scaled sub-block sums in one chain), then one conversion
  Tensor q = q4k_lanes(q4k_x_words(xq.q), dw.words, sc, n);
  auto pair = [&](int64_t p) { return q.shrink({{0, R}, {0, n}, {0, nb}, {p, p + 1}, {0, 16}}).reshape({R, n, nb, 16}); };
  Tensor l = (f32(pair(0) + pair(1)) * field(0) - f32(m * qsum) * field(1)) * dx.reshape({R, 1, nb, 1});
  return l.sum({2, 3});
}

}  // namespace tg::gguf
