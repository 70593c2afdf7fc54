// ggml's tensor types decoded by Tensor graphs (tinygrad's ggml_data_to_tensor): native types are a bitcast of the
// bytes; a quantized tensor is reshaped into its blocks (nb, block bytes) and each field is unpacked with shifts, masks
// and casts, so the decode fuses into whatever reads it. Block layouts: ggml-common.h; the float ops are done in the
// order ggml's reference dequantizers use, so results match them bit for bit.
#include "llm/ggml_fields.h"
#include "llm/ggml_iq_grids.h"
#include "tg/gguf.h"

namespace tg::gguf {

namespace {

// a 16-entry table looked up by a chain of wheres (no table buffer, nothing to gather)
Tensor lut16(const Tensor& q, const int (&k)[16]) {
  Tensor r = Tensor(float(k[0]), dtypes::float32);
  for (int i = 1; i < 16; i++) r = (q == Tensor(i)).where(Tensor(float(k[i]), dtypes::float32), r);
  return r;
}
// the IQ types' codebook (entries of w values) as a float32 Tensor on `dev`, looked up by index (a one-hot reduce)
template <size_t N> Tensor iq_grid(const uint8_t (&g)[N], int64_t w, const std::optional<std::string>& dev) {
  return Tensor::from_vector(std::vector<uint8_t>(g, g + N), {int64_t(N) / w, w}, dtypes::float32, dev.value_or(""));
}
// the 8 bits of each byte as a new last axis; `x` negated where the bit is set (ggml's sign bits: exact, as x * -1)
Tensor bits8(const Tensor& q) { return spread(q, q.ndim(), {0, 1, 2, 3, 4, 5, 6, 7}) & Tensor(1); }
Tensor signed_by(const Tensor& x, const Tensor& bits) { return (bits != Tensor(0)).where(-x, x); }
constexpr int IQ4NL_LEVELS[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
constexpr int E2M1_TWICE[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};  // MXFP4's fp4 values, doubled

DType native_dtype(GGMLType t) {
  switch (t) {
    case GGMLType::F32: return dtypes::float32;
    case GGMLType::F16: return dtypes::float16;
    case GGMLType::BF16: return dtypes::bfloat16;
    case GGMLType::F64: return dtypes::float64;
    case GGMLType::I8: return dtypes::int8;
    case GGMLType::I16: return dtypes::int16;
    case GGMLType::I32: return dtypes::int32;
    case GGMLType::I64: return dtypes::int64;
    default: return dtypes::void_;
  }
}

// one decoded block row per block: (nb, elements per block), float32
Tensor dequant(const Tensor& b, GGMLType type) {
  switch (type) {
    case GGMLType::Q4_0: return half_at(b, 0) * (f32(nibbles(cols(b, 2, 18))) - 8);
    case GGMLType::Q4_1: return half_at(b, 0) * f32(nibbles(cols(b, 4, 20))) + half_at(b, 2);
    case GGMLType::Q5_0: return half_at(b, 0) * (f32(nibbles(cols(b, 6, 22)) | (bits32(cols(b, 2, 6)) << Tensor(4))) - 16);
    case GGMLType::Q5_1: return half_at(b, 0) * f32(nibbles(cols(b, 8, 24)) | (bits32(cols(b, 4, 8)) << Tensor(4))) + half_at(b, 2);
    case GGMLType::Q8_0: return half_at(b, 0) * f32(cols(b, 2, 34).bitcast(dtypes::int8));
    case GGMLType::IQ4_NL: return half_at(b, 0) * lut16(nibbles(cols(b, 2, 18)), IQ4NL_LEVELS);
    case GGMLType::MXFP4: {  // e (E8M0 exponent, as half the scale: a float built from its bits), qs[16] (fp4 codes)
      Tensor e = cols(b, 0, 1).cast(dtypes::uint32);
      Tensor d = (e < 2).where(Tensor(0x00200000, dtypes::uint32) << e, (e - 1) << Tensor(23)).bitcast(dtypes::float32);
      return d * lut16(nibbles(cols(b, 1, 17)), E2M1_TWICE);
    }
    case GGMLType::Q2_K: {  // scales[16] (4-bit scale | 4-bit min), qs[64] (2 bits), d, dmin
      Tensor sc = cols(b, 0, 16);
      Tensor dl = (half_at(b, 80) * f32(sc & Tensor(0xF))).unsqueeze(-1), ml = (half_at(b, 82) * f32(sc >> Tensor(4))).unsqueeze(-1);
      Tensor q = (spread(cols(b, 16, 80).reshape({-1, 2, 32}), 2, {0, 2, 4, 6}) & Tensor(3)).reshape({-1, 16, 16});
      return (dl * f32(q) - ml).flatten(1);
    }
    case GGMLType::Q3_K: {  // hmask[32] (3rd bit, inverted), qs[64] (2 bits), scales[12] (6 bits, signed), d
      Tensor s = cols(b, 96, 108);
      Tensor lo = spread(cols(s, 0, 8), 1, {0, 4}).flatten(1) & Tensor(0xF), hi = spread(cols(s, 8, 12), 1, {0, 2, 4, 6}).flatten(1) & Tensor(3);
      Tensor dl = (half_at(b, 108) * (f32(lo | (hi << Tensor(4))) - 32)).unsqueeze(-1);
      Tensor ql = (spread(cols(b, 32, 96).reshape({-1, 2, 32}), 2, {0, 2, 4, 6}) & Tensor(3)).reshape({-1, 16, 16});
      Tensor qh = (spread(cols(b, 0, 32).reshape({-1, 1, 32}), 2, {0, 1, 2, 3, 4, 5, 6, 7}) & Tensor(1)).reshape({-1, 16, 16});
      return (dl * (f32(ql) - f32((qh ^ Tensor(1)) << Tensor(2)))).flatten(1);
    }
    case GGMLType::Q4_K:
    case GGMLType::Q5_K: {  // d, dmin, scales[12], [qh[32] (5th bit),] qs[128] (4 bits): 8 sub-blocks of 32
      auto [sc, mn] = k_scale_min(cols(b, 4, 16));
      Tensor d = (half_at(b, 0) * f32(sc)).unsqueeze(-1), dm = (half_at(b, 2) * f32(mn)).unsqueeze(-1);
      int64_t qs = type == GGMLType::Q5_K ? 48 : 16;
      Tensor q = (spread(cols(b, qs, qs + 128).reshape({-1, 4, 32}), 2, {0, 4}) & Tensor(0xF)).reshape({-1, 8, 32});
      if (type == GGMLType::Q5_K)
        q = q | ((spread(cols(b, 16, 48).reshape({-1, 1, 32}), 2, {0, 1, 2, 3, 4, 5, 6, 7}) & Tensor(1)).reshape({-1, 8, 32}) << Tensor(4));
      return (d * f32(q) - dm).flatten(1);
    }
    case GGMLType::Q6_K: {  // ql[128] (low 4 bits), qh[64] (high 2 bits), scales[16] (int8), d: 16 sub-blocks of 16
      Tensor ql = (spread(cols(b, 0, 128).reshape({-1, 2, 64}), 2, {0, 4}) & Tensor(0xF)).reshape({-1, 8, 32});
      Tensor qh = (spread(cols(b, 128, 192).reshape({-1, 2, 32}), 2, {0, 2, 4, 6}) & Tensor(3)).reshape({-1, 8, 32});
      Tensor q = (f32(ql | (qh << Tensor(4))) - 32).reshape({-1, 16, 16});
      Tensor dl = (half_at(b, 208) * f32(cols(b, 192, 208).bitcast(dtypes::int8))).unsqueeze(-1);
      return (dl * q).flatten(1);
    }
    case GGMLType::IQ4_XS: {  // d, scales_h (u16: 2 bits each), scales_l[4] (4 bits each), qs[128]: 8 sub-blocks of 32
      Tensor sh = (spread(cols(b, 2, 4), 2, {0, 2, 4, 6}) & Tensor(3)).flatten(1), sl = (spread(cols(b, 4, 8), 2, {0, 4}) & Tensor(0xF)).flatten(1);
      Tensor dl = (half_at(b, 0) * (f32(sl | (sh << Tensor(4))) - 32)).unsqueeze(-1);
      Tensor q = (spread(cols(b, 8, 136).reshape({-1, 8, 16}), 2, {0, 4}) & Tensor(0xF)).reshape({-1, 8, 32});
      return (dl * lut16(q, IQ4NL_LEVELS)).flatten(1);
    }
    case GGMLType::IQ3_XXS: {  // d, qs[64] (grid indices), 8 words: 4 x 7 sign bits (the 8th: their parity), 4-bit scale
      Tensor w = cols(b, 66, 98).bitcast(dtypes::uint32);
      Tensor db = (half_at(b, 0) * (f32(w >> Tensor(28)) + 0.5f) * 0.5f).reshape({-1, 8, 1, 1});
      Tensor s = spread(w, 2, {0, 7, 14, 21}) & Tensor(0x7F), p = s;
      for (int i = 1; i < 7; i++) p = p ^ (s >> Tensor(i));
      Tensor grid = iq_grid(iq::IQ3XXS_GRID, 4, b.device())[cols(b, 2, 66).cast(dtypes::int32)].reshape({-1, 8, 4, 8});
      return signed_by(db * grid, bits8(s | ((p & Tensor(1)) << Tensor(7)))).flatten(1);
    }
    case GGMLType::IQ3_S: {  // d, qs[64] (low 8 bits of 9-bit grid indices), qh[8] (9th bits), signs[32], scales[4] (4 bits)
      Tensor sc = (spread(cols(b, 106, 110), 2, {0, 4}) & Tensor(0xF)).flatten(1);
      Tensor db = (half_at(b, 0) * f32(sc * 2 + 1)).reshape({-1, 8, 1, 1});
      Tensor idx = cols(b, 2, 66).cast(dtypes::int32) | (bits8(cols(b, 66, 74)).flatten(1).cast(dtypes::int32) << Tensor(8));
      Tensor grid = iq_grid(iq::IQ3S_GRID, 4, b.device())[idx].reshape({-1, 8, 4, 8});
      return signed_by(db * grid, bits8(cols(b, 74, 106)).reshape({-1, 8, 4, 8})).flatten(1);
    }
    case GGMLType::IQ2_S: {  // d, qs[32] (low 8 bits of 10-bit grid indices), signs[32], qh[8] (2 high bits each), scales[8]
      Tensor sc = (spread(cols(b, 74, 82), 2, {0, 4}) & Tensor(0xF)).flatten(1);
      Tensor db = (half_at(b, 0) * (f32(sc) + 0.5f) * 0.25f).reshape({-1, 16, 1, 1});
      Tensor qh = (spread(cols(b, 66, 74), 2, {0, 2, 4, 6}) & Tensor(3)).flatten(1);
      Tensor idx = cols(b, 2, 34).cast(dtypes::int32) | (qh.cast(dtypes::int32) << Tensor(8));
      Tensor grid = iq_grid(iq::IQ2S_GRID, 8, b.device())[idx].reshape({-1, 16, 2, 8});
      return signed_by(db * grid, bits8(cols(b, 34, 66)).reshape({-1, 16, 2, 8})).flatten(1);
    }
    default: throw Error("ggml_data_to_tensor: internal: no decoder for " + ggml_type_name(uint32_t(type)));
  }
}

}  // namespace

bool ggml_type_supported(GGMLType t) {
  switch (t) {
    case GGMLType::Q4_0: case GGMLType::Q4_1: case GGMLType::Q5_0: case GGMLType::Q5_1: case GGMLType::Q8_0: case GGMLType::IQ4_NL:
    case GGMLType::Q2_K: case GGMLType::Q3_K: case GGMLType::Q4_K: case GGMLType::Q5_K: case GGMLType::Q6_K: case GGMLType::IQ4_XS:
    case GGMLType::MXFP4: case GGMLType::IQ3_XXS: case GGMLType::IQ3_S: case GGMLType::IQ2_S: return true;
    default: return native_dtype(t) != dtypes::void_;
  }
}

Tensor ggml_data_to_tensor(const Tensor& t, int64_t n, GGMLType type) {
  std::string name = ggml_type_name(uint32_t(type));
  if (!ggml_type_known(uint32_t(type))) throw Error("ggml_data_to_tensor: " + name);
  if (!ggml_type_supported(type)) throw Error("ggml_data_to_tensor: type " + name + " is not supported yet");
  auto [blck, bytes] = ggml_block(type);
  if (DType dt = native_dtype(type); dt != dtypes::void_ && t.ndim() == 1 && t.dtype() == dt && t.shape()[0] == n) return t;
  if (t.ndim() != 1 || t.dtype() != dtypes::uint8) throw Error("ggml_data_to_tensor: needs a 1-D uint8 tensor of raw bytes, got " + t.shape_str() + " " + std::string(t.dtype().name()));
  if (n < 0 || n % blck) throw Error("ggml_data_to_tensor: " + std::to_string(n) + " elements are not whole " + name + " blocks of " + std::to_string(blck));
  if (t.shape()[0] != n / blck * bytes)
    throw Error("ggml_data_to_tensor: " + std::to_string(n) + " " + name + " elements take " + std::to_string(n / blck * bytes) + " bytes, got " +
                std::to_string(t.shape()[0]));
  if (DType dt = native_dtype(type); dt != dtypes::void_) return t.bitcast(dt);
  if (n == 0) return Tensor::empty({0}, dtypes::float32, t.device().value_or(""));
  return dequant(t.reshape({n / blck, bytes}), type).flatten();
}

Tensor ggml_data_to_device(const Tensor& t, int64_t n, GGMLType type, const std::string& device) {
  return native_dtype(type) != dtypes::void_ ? ggml_data_to_tensor(t, n, type).to_mapped(device) : t.to_mapped(device);
}

}  // namespace tg::gguf
