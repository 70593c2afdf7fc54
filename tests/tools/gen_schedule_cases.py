#!/usr/bin/env python3
"""Generate tests/data/schedule_cases.txt: tensor graphs with what tinygrad's get_kernel_graph gets and returns.

Usage (runs the reference tinygrad on its CPU backend, no numpy needed):
  TINYGRAD_PATH=/work/ref /usr/bin/python3 tests/tools/gen_schedule_cases.py          # (re)write the case file
  TINYGRAD_PATH=/work/ref /usr/bin/python3 tests/tools/gen_schedule_cases.py --check  # regenerate to memory and diff

Each case builds a small graph of Tensor ops on Tensor.empty inputs and calls linear_with_vars on its outputs;
get_kernel_graph is wrapped to capture the function it is given (the SINK body of transform_to_call's CALL) and the
kernel graph it returns (linear_with_vars, so bound Variables are allowed). Case file format, one block per case:
  case <name>
  kernels <number of entries in the LINEAR linear_with_vars returns>
  input                      then the lines of print(function)
  output                     then the lines of print(get_kernel_graph(function))
  end
"""
from __future__ import annotations
import os, sys, argparse, difflib

TINYGRAD_PATH = os.environ.get("TINYGRAD_PATH", "/work/ref")
sys.path.insert(0, TINYGRAD_PATH)

import tinygrad.schedule as S  # noqa: E402
from tinygrad.uop.ops import UOp, KernelInfo  # noqa: E402
from tinygrad import Tensor, dtypes, Variable  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "schedule_cases.txt")

_captured: list = []
_orig = S.get_kernel_graph
def _hook(function):
  ret = _orig(function)
  _captured.append((function, ret))
  return ret
S.get_kernel_graph = _hook

def E(*shape, dtype=dtypes.float): return Tensor.empty(*shape, dtype=dtype)

def c_assign():
  a = E(4, 4)
  return [a.assign(a + 1)]
def c_assign_permuted():
  a = E(4, 4)
  return [a.assign(a.permute(1, 0) + 1)]
def c_assign_reduce():
  a = E(4, 4)
  return [a.assign(a - a.sum(1, keepdim=True))]
def c_two_outputs():
  a = E(4, 4)
  return [a + 1, a * 2]
def c_two_reduces_out():
  a = E(8, 8)
  return [a.sum(0), a.max(1)]
def c_conv():
  x, w = E(1, 2, 6, 6), E(3, 2, 3, 3)
  return [x.conv2d(w)]
def c_conv_bias_relu():
  x, w, b = E(1, 2, 6, 6), E(4, 2, 3, 3), E(4)
  return [x.conv2d(w, b, padding=1).relu()]
def c_gather():
  a, idx = E(10, 4), E(3, dtype=dtypes.int32)
  return [a[idx]]

def c_setitem():
  a = E(8, 4)
  a[2:5] = E(3, 4) * 2
  return [a]
def c_assign_shrink_hazard():
  a = E(8)
  return [a[0:4].assign(a[4:8] + 1)]
def c_many_inputs():
  ret = E(4)
  for _ in range(34): ret = ret + E(4)
  return [ret]
def c_attention():
  q, k, v = E(4, 8), E(6, 8), E(6, 8)
  return [(q @ k.T).softmax(-1) @ v]
def c_copy():
  return [E(4, 4).to("CPU:1") + 1]
def c_two_assigns():
  a, b = E(4), E(4)
  return [a.assign(b + 1), b.assign(a * 2)]

def c_transformer():
  B, T, D, H = 2, 8, 32, 4
  x = E(B, T, D)
  wq, wk, wv, wo = [E(D, D) for _ in range(4)]
  q, k, v = [(x @ w).reshape(B, T, H, D // H).transpose(1, 2) for w in (wq, wk, wv)]
  a = q.scaled_dot_product_attention(k, v, is_causal=True)
  return [x + a.transpose(1, 2).reshape(B, T, D) @ wo]
def c_gradient():
  x, w, y = E(8, 16), E(16, 4), E(8, dtype=dtypes.int32)
  loss = (x @ w).sparse_categorical_crossentropy(y)
  return [loss, loss.gradient(w)[0]]
def c_conv_bn():
  y = E(2, 3, 8, 8).conv2d(E(4, 3, 3, 3), padding=1)
  m = y.mean(axis=(0, 2, 3), keepdim=True)
  v = ((y - m) ** 2).mean(axis=(0, 2, 3), keepdim=True)
  return [((y - m) / (v + 1e-5).sqrt()).relu().max_pool2d()]
def c_mlp():
  x = E(16, 32)
  for _ in range(3): x = (x @ E(32, 32) + E(32)).relu().layernorm()
  return [x.softmax(-1)]
def c_rope():
  x, c, s = E(2, 8, 16), E(8, 8), E(8, 8)
  x1, x2 = x[..., :8], x[..., 8:]
  return [(x1 * c - x2 * s).cat(x1 * s + x2 * c, dim=-1)]

def c_double_diamond():
  a0, a1, b0, b1 = E(16, 16), E(16, 16), E(16), E(16)
  r0, r1 = (a0 - b1.contiguous()).sum(1), (a1 - b0.contiguous()).sum(1)
  return [b0.assign(r0 * b0), b1.assign(r1 * b1)]
def c_post_flipped():
  a, b = E(4, 4), E(4, 4)
  return [a.assign(a.flip(0) + b)]
def c_assign_bitcast():
  a = E(4)
  a.bitcast(dtypes.uint32).assign(E(4, dtype=dtypes.uint32))
  return [a]
def c_nested_after_store():
  base = E(3, dtype=dtypes.int64)
  contig = base.contiguous()
  contig.assign(E(3, dtype=dtypes.int64))
  return [base.assign(contig)]
def c_dedup_assign():
  a, b = E(4), E(4).contiguous()
  first = a.assign(b)
  return [first, a.assign(b)]

def _add_kernel(C:UOp, A:UOp, B:UOp) -> UOp:  # a custom kernel as tinygrad's test_custom_kernel.py writes one
  C, A, B = C.flatten(), A.flatten(), B.flatten()
  i = UOp.range(C.numel(), 0)
  return C[i].store(A[i] + B[i]).end(i).sink(arg=KernelInfo(name=f"custom_add_{C.numel()}"))
def c_custom_kernel():
  a, b = E(4, 4) * 2, E(4, 4)
  c = Tensor.custom_kernel(Tensor.empty(4, 4), a, b.permute(1, 0), fxn=_add_kernel)[0]
  return [c + 1]

CASES: list[tuple[str, object]] = [
  ("elementwise_chain", lambda: [((E(4, 4) + E(4, 4)) * E(4, 4)).relu()]),
  ("unary_chain", lambda: [E(16).exp2().sqrt().log2()]),
  ("broadcast_row", lambda: [E(4, 4) + E(4)]),
  ("broadcast_outer", lambda: [E(4, 1) + E(1, 4)]),
  ("broadcast_const", lambda: [E(3, 5) * 2 + 1]),
  ("reduce_sum_axis", lambda: [E(4, 8).sum(1)]),
  ("reduce_sum_all", lambda: [E(4, 8).sum()]),
  ("reduce_max", lambda: [E(4, 8).max(0)]),
  ("reduce_then_elementwise", lambda: [E(4, 8).sum(1).exp2() + 1]),
  ("reduce_broadcast_back", lambda: [(lambda a: a - a.sum(1, keepdim=True))(E(4, 8))]),
  ("softmax", lambda: [E(4, 8).softmax(1)]),
  ("mean_var", lambda: [E(4, 8).var(1)]),
  ("matmul", lambda: [E(4, 8) @ E(8, 3)]),
  ("matmul_bias_relu", lambda: [(E(4, 8) @ E(8, 3) + E(3)).relu()]),
  ("pad", lambda: [E(4, 4).pad(((1, 1), (0, 2))) + 1]),
  ("shrink", lambda: [E(6, 6)[1:4, 2:5] * 2]),
  ("flip", lambda: [E(4, 5).flip(1) + 1]),
  ("pad_shrink_flip", lambda: [E(4, 4).pad(((2, 0), (1, 1)))[1:5, :].flip(0).exp2()]),
  ("cat", lambda: [E(2, 4).cat(E(3, 4), dim=0)]),
  ("cat_then_sum", lambda: [E(2, 4).cat(E(2, 4), dim=1).sum(1)]),
  ("two_outputs_shared_input", c_two_outputs),
  ("two_reduces_two_outputs", c_two_reduces_out),
  ("reduce_of_broadcast", lambda: [(E(4, 1) + E(4)).sum()]),
  ("reduce_of_expand", lambda: [E(4).reshape(1, 4).expand(3, 4).sum(0)]),
  ("assign", c_assign),
  ("assign_permuted", c_assign_permuted),
  ("assign_reduce", c_assign_reduce),
  ("contiguous_middle", lambda: [(E(4, 4) + 1).contiguous() * 2]),
  ("contiguous_permute", lambda: [E(4, 6).permute(1, 0).contiguous()]),
  ("cast_int_float", lambda: [(E(4, 4).cast(dtypes.int32) + 1).cast(dtypes.float) * 2]),
  ("cast_half", lambda: [E(8, dtype=dtypes.half).cast(dtypes.float).sum()]),
  ("expand_of_reduce", lambda: [E(4, 8).sum(1, keepdim=True).expand(4, 8) * E(4, 8)]),
  ("expand_reduce_all", lambda: [E(4, 4) / E(4, 4).max()]),
  ("arange", lambda: [Tensor.arange(10).cast(dtypes.float) + E(10)]),
  ("arange_sum", lambda: [Tensor.arange(12).reshape(3, 4).sum(1)]),
  ("conv2d", c_conv),
  ("conv2d_bias_relu_pad", c_conv_bias_relu),
  ("max_pool", lambda: [E(1, 1, 6, 6).max_pool2d(2)]),
  ("transpose_add", lambda: [(lambda a: a + a.T)(E(5, 5))]),
  ("where", lambda: [(E(4, 4) > 0).where(E(4, 4), 0.0)]),
  ("reshape_chain", lambda: [E(2, 3, 4).reshape(6, 4).permute(1, 0).reshape(2, 12) + 1]),
  ("cumsum", lambda: [E(8).cumsum(0)]),
  ("gather", c_gather),
  ("big_sum_split", lambda: [E(65536).sum()]),
  ("full_plus", lambda: [Tensor.full((4, 4), 2.0) + E(4, 4)]),
  ("layernorm", lambda: [E(4, 16).layernorm()]),
  ("setitem", c_setitem),
  ("assign_shrink_hazard", c_assign_shrink_hazard),
  ("many_inputs", c_many_inputs),
  ("attention", c_attention),
  ("copy_device", c_copy),
  ("two_assigns", c_two_assigns),
  ("copy_permuted", lambda: [E(4, 6).permute(1, 0).to("CPU:1") * 2]),
  ("copy_shrunk", lambda: [E(8, 4)[:, 1:3].to("CPU:1") + 1]),
  ("copy_reshaped", lambda: [E(4, 6).reshape(2, 12).to("CPU:1") + 1]),
  ("sum_two_axes", lambda: [E(2, 3, 4).sum(axis=(0, 2))]),
  ("batch_matmul", lambda: [E(2, 3, 4) @ E(2, 4, 5)]),
  ("argmax", lambda: [E(4, 8).argmax(1)]),
  ("one_hot", lambda: [E(5, dtype=dtypes.int32).one_hot(6).cast(dtypes.int32)]),
  ("avg_pool", lambda: [E(1, 2, 6, 6).avg_pool2d(2)]),
  ("stack", lambda: [Tensor.stack(E(3), E(3), E(3))]),
  ("pad_negative", lambda: [E(6, 6).pad(((-1, 2), (1, -2))) + 1]),
  ("eye", lambda: [Tensor.eye(4) * E(4, 4)]),
  ("store_half", lambda: [(E(8) * 2).cast(dtypes.half)]),
  ("bitcast_same_size", lambda: [E(8).bitcast(dtypes.int32) + 1]),
  ("bitcast_widen", lambda: [E(4, 8, dtype=dtypes.uint8).bitcast(dtypes.float32) + 1]),
  ("bitcast_narrow", lambda: [E(4, 2).bitcast(dtypes.uint16) + 1]),
  ("const_contiguous", lambda: [Tensor.ones(4, 4).contiguous()]),
  ("expand_sum", lambda: [E(4, 1).expand(4, 5).sum()]),
  ("conv_transpose", lambda: [E(1, 2, 4, 4).conv_transpose2d(E(2, 3, 3, 3))]),
  ("interpolate", lambda: [E(1, 1, 4, 4).interpolate((8, 8))]),
  ("masked_fill", lambda: [(E(4, 4) < 0.5).where(-1.0, E(4, 4)).max(1)]),
  ("assign_double_diamond_reduce", c_double_diamond),
  ("assign_post_flipped", c_post_flipped),
  ("assign_bitcast", c_assign_bitcast),
  ("assign_nested_after_contiguous", c_nested_after_store),
  ("assign_dedup", c_dedup_assign),
  ("custom_kernel", c_custom_kernel),
  ("bound_variable", lambda: [E(4) * Variable("a", 1, 10).bind(3)]),
  ("embedding", lambda: [E(50, 16)[E(2, 5, dtype=dtypes.int32)].sum(-1)]),
  ("rope", c_rope),
  ("sort", lambda: [E(16).sort()[0]]),
  ("conv_batchnorm_relu_pool", c_conv_bn),
  ("mlp_3_layers", c_mlp),
  ("attention_block", c_transformer),
  ("gradient_crossentropy", c_gradient),
]

def run_case(name, fn) -> str:
  _captured.clear()
  outs = fn()
  if any(t.dtype in dtypes.weaks for t in outs): raise RuntimeError(f"{name}: cast weak outputs to a concrete dtype")
  linear, _ = outs[0].linear_with_vars(*outs[1:])
  if len(_captured) != 1: raise RuntimeError(f"{name}: get_kernel_graph ran {len(_captured)} times")
  function, ret = _captured[0]
  ncalls = len([u for u in ret.toposort(enter_calls=False) if u.op.name == "CALL"])
  if ncalls != len(linear.src): raise RuntimeError(f"{name}: {ncalls} CALLs in the kernel graph, {len(linear.src)} in the schedule")
  return f"case {name}\nkernels {len(linear.src)}\ninput\n{function}\noutput\n{ret}\nend\n"

def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--check", action="store_true")
  args = ap.parse_args()
  text = "".join(run_case(n, f) for n, f in CASES)
  if args.check:
    old = open(OUT).read()
    if old != text:
      sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True), "old", "new"))
      sys.exit(1)
    print(f"{len(CASES)} cases match")
  else:
    with open(OUT, "w") as f: f.write(text)
    print(f"wrote {len(CASES)} cases to {OUT}")

if __name__ == "__main__": main()
