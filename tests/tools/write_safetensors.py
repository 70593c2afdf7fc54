#!/usr/bin/env python3
"""Writes tests/data/reference.safetensors, an oracle for tg::nn::state::safe_load written independently of
tinygrad.cpp: Python's struct and json only, following the safetensors spec (u64 little-endian header size N, N bytes
of JSON {name: {dtype, shape, data_offsets}} plus __metadata__, the header padded with spaces to a multiple of 8, then
the data section, each tensor row-major little-endian at its data_offsets).

Every tensor is a function of its flat index i (0 <= i < numel), which tests/nn/test_state.cpp recomputes by hand:

  name                 dtype  shape       value at flat index i
  f32                  F32    (2, 3)      i * 0.5 - 1
  f64                  F64    (4,)        (i - 2) * 0.25
  f16                  F16    (3,)        (i - 1) * 1.5
  bf16                 BF16   (4,)        (i + 1) * 0.5      (the upper 16 bits of that float32)
  i8                   I8     (5,)        1 - 3 * i
  u8                   U8     (2, 2, 2)   (31 * i) % 256
  i16                  I16    (3,)        -1000 * i
  u16                  U16    (3,)        65535 - i
  i32                  I32    (2, 2)      7 - 100000 * i
  u32                  U32    (3,)        4000000000 + i
  i64                  I64    (2,)        i - 2**40
  u64                  U64    (2,)        2**63 + i
  bool                 BOOL   (4,)        i % 3 == 0
  scalar               F32    ()          3.25
  empty                F32    (0, 3)      (no elements)
  nested.block.weight  I32    (3,)        i

metadata: {"format": "pt", "writer": "write_safetensors.py"}

The tensors are written in the order above (not sorted), so the file also checks that a reader follows data_offsets.
Run: python3 tests/tools/write_safetensors.py [out_path]
"""
import json, os, struct, sys

TENSORS = [
  ("f32", "F32", (2, 3), lambda i: i * 0.5 - 1),
  ("f64", "F64", (4,), lambda i: (i - 2) * 0.25),
  ("f16", "F16", (3,), lambda i: (i - 1) * 1.5),
  ("bf16", "BF16", (4,), lambda i: (i + 1) * 0.5),
  ("i8", "I8", (5,), lambda i: 1 - 3 * i),
  ("u8", "U8", (2, 2, 2), lambda i: (31 * i) % 256),
  ("i16", "I16", (3,), lambda i: -1000 * i),
  ("u16", "U16", (3,), lambda i: 65535 - i),
  ("i32", "I32", (2, 2), lambda i: 7 - 100000 * i),
  ("u32", "U32", (3,), lambda i: 4000000000 + i),
  ("i64", "I64", (2,), lambda i: i - 2**40),
  ("u64", "U64", (2,), lambda i: 2**63 + i),
  ("bool", "BOOL", (4,), lambda i: i % 3 == 0),
  ("scalar", "F32", (), lambda i: 3.25),
  ("empty", "F32", (0, 3), lambda i: 0.0),
  ("nested.block.weight", "I32", (3,), lambda i: i),
]
FMT = {"F32": "<f", "F64": "<d", "F16": "<e", "I8": "<b", "U8": "<B", "I16": "<h", "U16": "<H", "I32": "<i", "U32": "<I",
       "I64": "<q", "U64": "<Q", "BOOL": "<?"}

def encode(dtype, v):
  if dtype == "BF16": return struct.pack("<f", v)[2:]  # the high half of the little-endian float32
  return struct.pack(FMT[dtype], v)

def main(out):
  header, data = {"__metadata__": {"format": "pt", "writer": "write_safetensors.py"}}, b""
  for name, dtype, shape, f in TENSORS:
    numel = 1
    for d in shape: numel *= d
    blob = b"".join(encode(dtype, f(i)) for i in range(numel))
    header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [len(data), len(data) + len(blob)]}
    data += blob
  j = json.dumps(header, separators=(",", ":")).encode()
  j += b" " * (-len(j) % 8)
  with open(out, "wb") as fh: fh.write(struct.pack("<Q", len(j)) + j + data)

if __name__ == "__main__":
  main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "data", "reference.safetensors"))
