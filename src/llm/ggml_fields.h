#pragma once
// the block fields of ggml's quantized types as Tensor graphs (shared by the dequantizers and the integer dot products):
// a type's bytes reshaped into blocks (nb, block bytes), each field unpacked with shrinks, shifts, masks and casts
#include <initializer_list>
#include <utility>

#include "tg/tensor.h"

namespace tg::gguf {

inline Tensor f32(const Tensor& t) { return t.cast(dtypes::float32); }
// bytes [s, e) of every block
inline Tensor cols(const Tensor& b, int64_t s, int64_t e) { return b.shrink({{0, b.shape()[0]}, {s, e}}); }
// the float16 at byte s of every block, as float32 of shape (nb, 1)
inline Tensor half_at(const Tensor& b, int64_t s) { return f32(cols(b, s, s + 2).bitcast(dtypes::float16)); }
// (t >> s) for each shift s, stacked as a new axis `dim`: numpy's t.reshape(..., 1, ...) >> [s0, s1, ...], as uint32.
// One shift by an amount picked along the new axis (the same for a vector's lanes, where a stack of shifts is a select
// per element), on 32-bit lanes: the bytes widen once as they load, then shift, mask and convert to float in place
inline Tensor spread(const Tensor& t, int64_t dim, std::initializer_list<int> shifts) {
  std::vector<Tensor> v;
  for (int s : shifts) v.push_back(Tensor(s, dtypes::uint32));
  Shape s(size_t(t.ndim() + 1), 1);
  s[size_t(dim)] = int64_t(shifts.size());
  return t.cast(dtypes::uint32).unsqueeze(dim) >> Tensor::stack(v).reshape(s);
}
// the low and high nibbles of each byte of (nb, k) as (nb, 2k): byte j's low nibble is element j, its high one j + k
inline Tensor nibbles(const Tensor& q) { return (spread(q, 1, {0, 4}) & Tensor(0xF)).flatten(1); }
// the 32 bits of 4 bytes (nb, 4), bit j of the little-endian word as element j
inline Tensor bits32(const Tensor& q) { return (spread(q, 2, {0, 1, 2, 3, 4, 5, 6, 7}) & Tensor(1)).flatten(1); }
// the 6-bit scales and mins of Q4_K / Q5_K, packed in 12 bytes, as (nb, 8) each
inline std::pair<Tensor, Tensor> k_scale_min(const Tensor& s12) {
  Tensor s = s12.reshape({-1, 3, 4}), a = s[{Slice{}, 0}], b = s[{Slice{}, 1}], c = s[{Slice{}, 2}];
  Tensor sc = (a & Tensor(0x3F)).cat((c & Tensor(0xF)) | ((a >> Tensor(2)) & Tensor(0x30)), 1);
  Tensor mn = (b & Tensor(0x3F)).cat((c >> Tensor(4)) | ((b >> Tensor(2)) & Tensor(0x30)), 1);
  return {sc, mn};
}

}  // namespace tg::gguf
