#!/usr/bin/env python3
# ggml's integer dot products written out in numpy from ggml's C (ggml-cpu's x86 quantize_row_q8_0, quantize_row_q8_K_ref,
# ggml_vec_dot_q8_0_q8_0 and ggml_vec_dot_q4_K_q8_K's generic loop, get_scale_min_k4): the oracle of tg::gguf::ggml_dot.
#   ggml_dot_ref.py OUTDIR [SEED] -> OUTDIR/{Q8_0,Q4_K}.{w,x,q,d,dots,y,yabs}.bin, OUTDIR/manifest.json
# W: random blocks (every bit pattern of the packed fields; finite float16 scales), x: rows of different magnitudes, one
# with a block of zeros (its scale is 0). q, d: x quantized (int8, float32 scales); dots: the int32 sums per block (Q8_0:
# sum of q_w * q_x per block of 32; Q4_K: sum over the 8 sub-blocks of scale_j * sum of q4 * q8 per super-block); y: x @ W^T
# from those sums and the float32 scales in float64; yabs: the same with every block term's magnitude (the tolerance's scale)
import json, os, sys
import numpy as np

out, seed = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0
rng = np.random.default_rng(seed)
os.makedirs(out, exist_ok=True)
N, K, R = 64, 768, 24  # R: 3 blocks of 8 rows of x (a prompt's GEMM kernel)

def blocks(nb, nbytes, f16_at):
  raw = rng.integers(0, 256, (nb, nbytes), dtype=np.uint8)
  for o in f16_at: raw[:, o:o+2] = (rng.standard_normal((nb, 1)) * 0.1).astype(np.float16).view(np.uint8)
  return raw

def rows():
  x = rng.standard_normal((R, K)).astype(np.float32) * np.tile(np.array([1.0, 1e-3, 50.0], np.float32), R // 3)[:, None]
  x[1, 32:64] = 0  # a Q8_0 block of zeros
  x[2, 256:] = 0   # a Q8_K block of zeros
  return x

def q8_0(x):  # quantize_row_q8_0 (x86): d = amax / 127 as float16, q = round-to-even(x * (127 / amax))
  b = x.reshape(R, -1, 32)
  amax = np.abs(b).max(-1, keepdims=True)
  d = (amax / np.float32(127)).astype(np.float16).astype(np.float32)
  with np.errstate(divide="ignore"): idv = np.where(amax != 0, np.float32(127) / amax, np.float32(0)).astype(np.float32)
  return np.rint(b * idv).astype(np.int8).reshape(R, K), d.reshape(R, -1)

def q8_K(x):  # quantize_row_q8_K_ref: max = the element of the largest magnitude, iscale = -127 / max, q = min(127, nearest)
  b = x.reshape(R, -1, 256)
  first = np.abs(b).argmax(-1)[..., None]
  mx = np.take_along_axis(b, first, -1)
  with np.errstate(divide="ignore"): iscale = np.where(mx != 0, np.float32(-127) / mx, np.float32(0)).astype(np.float32)
  q = np.minimum(127, np.rint(b * iscale)).astype(np.int8)
  with np.errstate(divide="ignore"): d = np.where(mx != 0, np.float32(1) / iscale, np.float32(0)).astype(np.float32)
  return q.reshape(R, K), d.reshape(R, -1)

def scale_min_k4(s):  # get_scale_min_k4 for j in 0..7 on the 12 scale bytes: (scales, mins) as (nb, 8) ints
  sc, mn = np.zeros((s.shape[0], 8), np.int64), np.zeros((s.shape[0], 8), np.int64)
  s = s.astype(np.int64)
  for j in range(8):
    if j < 4: sc[:, j], mn[:, j] = s[:, j] & 63, s[:, j + 4] & 63
    else: sc[:, j], mn[:, j] = (s[:, j + 4] & 0xF) | ((s[:, j - 4] >> 6) << 4), (s[:, j + 4] >> 4) | ((s[:, j] >> 6) << 4)
  return sc, mn

f16 = lambda raw, at: raw[:, at:at+2].copy().view(np.float16).astype(np.float32)[:, 0]
man = {"N": N, "K": K, "R": R}
x = rows()
# Q8_0: d (f16), qs[32] (int8)
w = blocks(N * K // 32, 34, [0])
qx, dx = q8_0(x)
qw, dw = w[:, 2:].view(np.int8).astype(np.int64).reshape(N, K // 32, 32), f16(w, 0).reshape(N, K // 32)
dots = np.einsum("nbk,rbk->rnb", qw, qx.astype(np.int64).reshape(R, K // 32, 32))
terms = dots.astype(np.float64) * (dw[None] * dx[:, None]).astype(np.float64)  # sumi * (d_w * d_x), the scale product in float32
res = {"Q8_0": (w, qx, dx, dots, terms.sum(-1), np.abs(terms).sum(-1))}
# Q4_K: d, dmin (f16), scales[12], qs[128]: byte j of each group of 32 holds sub-block 2g's element j low, 2g+1's high
w = blocks(N * K // 256, 144, [0, 2])
qx, dx = q8_K(x)
sc, mn = scale_min_k4(w[:, 4:16])
qs = w[:, 16:].reshape(-1, 4, 32).astype(np.int64)
q4 = np.stack([qs & 0xF, qs >> 4], 2).reshape(-1, 8, 32)  # (nb, sub-block, 32)
q8 = qx.astype(np.int64).reshape(R, K // 256, 8, 32)
nb = K // 256
sumi = np.einsum("nbjk,rbjk->rnbj", q4.reshape(N, nb, 8, 32), q8)
dots = (sumi * sc.reshape(N, nb, 8)[None]).sum(-1)
bsums = q8.sum(-1)  # the bsums of each pair of 16
mins = (bsums[:, None] * mn.reshape(N, nb, 8)[None]).sum(-1)
d, dmin = f16(w, 0).reshape(N, nb), f16(w, 2).reshape(N, nb)
a = dots.astype(np.float64) * (d[None] * dx[:, None]).astype(np.float64)
b = mins.astype(np.float64) * (dmin[None] * dx[:, None]).astype(np.float64)
res["Q4_K"] = (w, qx, dx, dots, (a - b).sum(-1), (np.abs(a) + np.abs(b)).sum(-1))
x.tofile(os.path.join(out, "x.bin"))
for t, arrs in res.items():
  for name, arr in zip(("w", "q", "d", "dots", "y", "yabs"), arrs):
    np.ascontiguousarray(arr.astype({"w": np.uint8, "q": np.int8, "d": np.float32, "dots": np.int32, "y": np.float64, "yabs": np.float64}[name])).tofile(os.path.join(out, f"{t}.{name}.bin"))
json.dump(man, open(os.path.join(out, "manifest.json"), "w"))
