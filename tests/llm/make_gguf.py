#!/usr/bin/env python3
# Writes the GGUF files tests/llm reads, with gguf-py (the `gguf` PyPI package, ggml's own Python writer) and numpy,
# and what each must decode to: gguf.quants.dequantize is the oracle of every quantized tensor, the written arrays of
# the native ones, GGUFReader of each tensor's data offset.
#   make_gguf.py OUTDIR [SEED]   -> OUTDIR/{all,v2,bigheader,unsupported}.gguf, OUTDIR/split-0000{1,2,3}-of-00003.gguf, OUTDIR/manifest.json, OUTDIR/ref/*.bin
import json, os, sys
import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q, GGUFValueType as V

out, seed = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0
rng = np.random.default_rng(seed)
os.makedirs(os.path.join(out, "ref"), exist_ok=True)

# ** metadata: one of every value type, typed arrays, nested arrays, unicode **
f32 = lambda x: float(np.float32(x))
META = [
  ("t.u8", V.UINT8, 250), ("t.i8", V.INT8, -100), ("t.u16", V.UINT16, 65000), ("t.i16", V.INT16, -32000),
  ("t.u32", V.UINT32, 4_000_000_000), ("t.i32", V.INT32, -2_000_000_000), ("t.f32", V.FLOAT32, f32(0.1)),
  ("t.bool", V.BOOL, True), ("t.false", V.BOOL, False), ("t.str", V.STRING, "h\u00e9llo \u2713 \U0001F600"), ("t.empty_str", V.STRING, ""),
  ("t.u64", V.UINT64, 18_000_000_000_000_000_000), ("t.i64", V.INT64, -9_000_000_000_000_000_000), ("t.f64", V.FLOAT64, 1e300 / 3),
]
ARRAYS = [  # key, element type, items (nested lists are arrays of arrays; inner element types are what gguf-py picks)
  ("a.i32", V.INT32, [int(x) for x in rng.integers(-2**31, 2**31, 50)]),
  ("a.u8", V.UINT8, [int(x) for x in rng.integers(0, 256, 33)]),
  ("a.f32", V.FLOAT32, [f32(x) for x in rng.standard_normal(20)]),
  ("a.u64", V.UINT64, [int(x) for x in rng.integers(0, 2**63, 5, dtype=np.uint64)] + [2**64 - 1]),
  ("a.bool", V.BOOL, [True, False, True]),
  ("a.str", V.STRING, ["", "a", "<s>", "\u2581the", "\n\t"]),
  ("a.nested", V.ARRAY, [[1, 2, 3], [4], [-5, 6]]),
  ("a.nested_str", V.ARRAY, [["x", "yz"], ["\u00fc"]]),
  ("a.nested2", V.ARRAY, [[[1.5], [2.5, 3.5]], [[4.5]]]),
]

def enc(v, t, sub=None):  # {"t": type, "v": value} / arrays {"t": 9, "e": element type, "v": [...]}
  if t == V.ARRAY:
    e = sub if sub is not None else V.get_type(v[0])
    return {"t": int(t), "e": int(e), "v": [enc(x, e) for x in v]}
  return {"t": int(t), "v": v}

# ** tensors **
def random_blocks(rows, nblocks, nbytes, f16_offsets):  # random bytes, with finite float16s at each block's float16 fields
  raw = rng.integers(0, 256, (rows * nblocks, nbytes), dtype=np.uint8)
  for o in f16_offsets: raw[:, o:o+2] = rng.standard_normal((raw.shape[0], 1)).astype(np.float16).view(np.uint8)
  return raw.reshape(rows, nblocks * nbytes)
QUANT_F16 = {Q.Q4_0: [0], Q.Q4_1: [0, 2], Q.Q5_0: [0], Q.Q5_1: [0, 2], Q.Q8_0: [0], Q.IQ4_NL: [0], Q.Q2_K: [80, 82],
             Q.Q3_K: [108], Q.Q4_K: [0, 2], Q.Q5_K: [0, 2], Q.Q6_K: [208], Q.IQ4_XS: [0], Q.MXFP4: [],
             Q.IQ3_XXS: [0], Q.IQ3_S: [0], Q.IQ2_S: [0]}

tensors, manifest_tensors = [], []  # (name, array, raw_dtype), manifest entries
def add_native(name, a):
  tensors.append((name, a, None))
  a.tofile(os.path.join(out, "ref", name + ".bin"))
  manifest_tensors.append({"name": name, "shape": list(a.shape), "ref": f"ref/{name}.bin", "ref_dtype": a.dtype.name})
def add_quant(name, raw, qtype):  # raw: uint8 (rows..., bytes per row)
  tensors.append((name, raw, qtype))
  ref = gguf.quants.dequantize(raw, qtype).astype(np.float32)
  ref.tofile(os.path.join(out, "ref", name + ".bin"))
  manifest_tensors.append({"name": name, "shape": list(ref.shape), "ref": f"ref/{name}.bin", "ref_dtype": "float32"})

add_native("native.f32", rng.standard_normal((2, 3, 4)).astype(np.float32))
add_native("native.f16", rng.standard_normal((2, 1, 3, 2)).astype(np.float16))
add_native("native.f64", rng.standard_normal(5))
add_native("native.i8", rng.integers(-128, 128, (4, 4), dtype=np.int8))
add_native("native.i16", rng.integers(-2**15, 2**15, 7, dtype=np.int16))
add_native("native.i32", rng.integers(-2**31, 2**31, (2, 5), dtype=np.int32))
add_native("native.i64", rng.integers(-2**63, 2**63 - 1, 3, dtype=np.int64))
# bfloat16 has no numpy dtype: the top halves of float32s, written as raw bytes; the reference is their bits
bf = (rng.standard_normal((3, 8)).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
tensors.append(("native.bf16", bf.view(np.uint8), Q.BF16)); bf.tofile(os.path.join(out, "ref", "native.bf16.bin"))
manifest_tensors.append({"name": "native.bf16", "shape": [3, 8], "ref": "ref/native.bf16.bin", "ref_dtype": "bfloat16"})
for q, offs in QUANT_F16.items():  # every bit pattern of the packed fields shows up in random blocks
  blck, nbytes = gguf.GGML_QUANT_SIZES[q]
  add_quant(f"q.{q.name}", random_blocks(3, 2, nbytes, offs), q)
for q in (Q.Q4_0, Q.Q8_0, Q.Q5_1):  # and blocks from ggml's own quantizer, 3-D
  add_quant(f"quantized.{q.name}", gguf.quants.quantize(rng.standard_normal((2, 2, 64)).astype(np.float32), q), q)

def write(path, tensors, meta=True, alignment=None):
  w = gguf.GGUFWriter(path, arch="llama")
  if alignment: w.add_custom_alignment(alignment)
  if meta:
    for k, t, v in META: w.add_key_value(k, v, t)
    for k, e, v in ARRAYS: w.add_key_value(k, v, V.ARRAY, sub_type=e)
  for name, a, raw in tensors: w.add_tensor(name, a, raw_dtype=raw)
  w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
  return {t.name: int(t.data_offset) for t in gguf.GGUFReader(path).tensors}

offsets = write(os.path.join(out, "all.gguf"), tensors, alignment=64)
for t in manifest_tensors: t["data_offset"] = offsets[t["name"]]
# version 2 differs from 3 only in allowing big-endian files: the same bytes with the version patched
v2_offsets = write(os.path.join(out, "v2.gguf"), tensors[:2], meta=False)
with open(os.path.join(out, "v2.gguf"), "r+b") as f: f.seek(4); f.write((2).to_bytes(4, "little"))
# a header over 2 MiB (a vocabulary's worth of strings): gguf_load reads it in growing prefixes
vocab = [f"tok{i}_" + "\u00e9" * (i % 23) for i in range(80000)]
w = gguf.GGUFWriter(os.path.join(out, "bigheader.gguf"), arch="llama")
w.add_token_list(vocab); w.add_tensor("w", tensors[0][1])
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
big = {"n": len(vocab), "samples": {str(i): vocab[i] for i in (0, 1, 22, 12345, len(vocab) - 1)}}
# a model split in 3 parts of at most 2 tensors: split-0000{1,2,3}-of-00003.gguf
w = gguf.GGUFWriter(os.path.join(out, "split.gguf"), arch="llama", split_max_tensors=2)
w.add_uint32("t.u32", 7)
for name, a, raw in tensors[:5]: w.add_tensor(name, a, raw_dtype=raw)
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
write(os.path.join(out, "unsupported.gguf"), [("w", rng.integers(0, 256, (2, 66), dtype=np.uint8), Q.IQ2_XXS)], meta=False)

meta = {"general.architecture": enc("llama", V.STRING), "general.alignment": enc(64, V.UINT32)}
meta.update({k: enc(v, t) for k, t, v in META}); meta.update({k: enc(v, V.ARRAY, e) for k, e, v in ARRAYS})
json.dump({"metadata": meta, "tensors": manifest_tensors, "v2_offsets": v2_offsets, "bigheader": big}, open(os.path.join(out, "manifest.json"), "w"), indent=1)
