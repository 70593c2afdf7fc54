#!/usr/bin/env python3
# The bench/llm model: a llama of the 110M class (d 768, 12 layers, 12 heads, ffn 2048, vocab 32000; random weights, a
# SentencePiece vocabulary of byte tokens and fillers) written with gguf-py as one type, every matrix in that type.
#   llm_model.py OUT.gguf F16|Q8_0|Q4_K [--dim D --layers L --heads H --kv-heads G --ffn F --vocab V]
# bench/llm.sh's 500M-class shape: --dim 1024 --layers 24 --heads 16 --kv-heads 4 --ffn 5120 (grouped-query attention)
# gguf-py quantizes to Q8_0 but not Q4_K: Q4_K blocks are random bytes with small finite d / dmin (speed does not
# depend on the values).
import argparse
import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q

ap = argparse.ArgumentParser()
ap.add_argument("out"); ap.add_argument("type", choices=["F32", "F16", "Q8_0", "Q4_K"])
ap.add_argument("--dim", type=int, default=768); ap.add_argument("--layers", type=int, default=12)
ap.add_argument("--heads", type=int, default=12); ap.add_argument("--kv-heads", type=int, default=0)
ap.add_argument("--ffn", type=int, default=2048); ap.add_argument("--vocab", type=int, default=32000)
a = ap.parse_args()
rng = np.random.default_rng(0)
qt = Q[a.type]

w = gguf.GGUFWriter(a.out, arch="llama")
w.add_name(f"llama-bench-{a.type}"); w.add_block_count(a.layers); w.add_context_length(2048); w.add_embedding_length(a.dim)
w.add_feed_forward_length(a.ffn); w.add_head_count(a.heads); w.add_head_count_kv(a.kv_heads or a.heads); w.add_layer_norm_rms_eps(1e-5)
w.add_rope_freq_base(10000.0); w.add_rope_dimension_count(a.dim // a.heads); w.add_file_type({"F32": 0, "F16": 1, "Q8_0": 7, "Q4_K": 15}[a.type])
pieces = [f"\u2581t{i}" for i in range(a.vocab - 259)]
w.add_tokenizer_model("llama"); w.add_token_list(["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + pieces)
w.add_token_types([2, 3, 3] + [6] * 256 + [1] * len(pieces)); w.add_token_scores([0.0] * 259 + [-float(i) for i in range(len(pieces))])
w.add_bos_token_id(1); w.add_eos_token_id(2)

def mat(name, rows, cols):
  if qt == Q.Q4_K:
    blck, nbytes = gguf.GGML_QUANT_SIZES[qt]
    raw = rng.integers(0, 256, (rows * cols // blck, nbytes), dtype=np.uint8)
    raw[:, 0:4] = (np.abs(rng.standard_normal((raw.shape[0], 2))) * 2e-3).astype(np.float16).view(np.uint8)  # d, dmin
    return w.add_tensor(name, raw.reshape(rows, cols // blck * nbytes), raw_dtype=qt)
  x = (rng.standard_normal((rows, cols), dtype=np.float32) * cols ** -0.5)
  if qt == Q.F32: w.add_tensor(name, x)
  elif qt == Q.F16: w.add_tensor(name, x.astype(np.float16))
  else: w.add_tensor(name, gguf.quants.quantize(x, qt), raw_dtype=qt)
norm = lambda name: w.add_tensor(name, np.ones(a.dim, np.float32))

mat("token_embd.weight", a.vocab, a.dim)
for i in range(a.layers):
  b = f"blk.{i}."
  norm(b + "attn_norm.weight"); norm(b + "ffn_norm.weight")
  kv = (a.kv_heads or a.heads) * (a.dim // a.heads)
  for n, rows in (("attn_q", a.dim), ("attn_k", kv), ("attn_v", kv), ("attn_output", a.dim)): mat(b + n + ".weight", rows, a.dim)
  mat(b + "ffn_gate.weight", a.ffn, a.dim); mat(b + "ffn_up.weight", a.ffn, a.dim); mat(b + "ffn_down.weight", a.dim, a.ffn)
norm("output_norm.weight"); mat("output.weight", a.vocab, a.dim)
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
