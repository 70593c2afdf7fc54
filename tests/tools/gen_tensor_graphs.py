#!/usr/bin/env python3
"""Generate tests/data/tensor_graphs.txt: the tensor graph tinygrad builds for each Tensor expression below.

Usage (runs the reference tinygrad as pure Python):
  TINYGRAD_PATH=/work/ref /usr/bin/python3 tests/tools/gen_tensor_graphs.py          # (re)write the case file
  TINYGRAD_PATH=/work/ref /usr/bin/python3 tests/tools/gen_tensor_graphs.py --check  # regenerate to memory and diff

tests/tensor/test_graphs.cpp builds the same expressions (same names) with tg::Tensor and compares str(t.uop).
Inputs are Tensor.empty buffers (tinygrad stages Python lists through a PYTHON device; tg::Tensor::from_vector writes
the device buffer directly, so list inputs would differ by design). Case file format, one block per case:
  case <name>
  expr <python expression>
  shape <result shape>
  dtype <result dtype>
  then the lines of str(t.uop), FLIP's bool tuple written as 0/1 ints (as our Arg holds it) and ConstFloat(x) as x
  end
BUFFER slots come from a global counter; the test renumbers them in order of appearance on both sides.
"""
from __future__ import annotations
import os, sys, re, argparse, difflib

TINYGRAD_PATH = os.environ.get("TINYGRAD_PATH", "/work/ref")
sys.path.insert(0, TINYGRAD_PATH)

from tinygrad import Tensor, dtypes  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "tensor_graphs.txt")

def E(*s, dtype=None): return Tensor.empty(*s, dtype=dtype or dtypes.float)

# name -> expression; a, b are float (2, 3) buffers, i, j int32 (4,) buffers, h a half (3,) buffer, f a float (3,) buffer
CASES = [
  # binary ops, broadcasting and promotion
  ("add", "a + b"), ("add_bcast", "E(3, 1) + E(1, 4)"), ("add_int_lit", "a + 1"), ("add_float_lit", "a + 2.5"),
  ("int_plus_float_lit", "i + 1.5"), ("int_plus_int_lit", "i + 3"), ("radd", "2 + a"), ("sub", "a - b"), ("rsub", "1 - a"),
  ("mul_half_float", "h * f"), ("mul_half_lit", "h * 2.0"), ("mul_int_float", "i * E(4)"), ("div", "a / b"), ("div_int", "i / j"),
  ("div_int_lit", "i / 2"), ("rdiv", "1 / a"), ("idiv_int", "i // 3"), ("idiv_float", "a // b"), ("mod_int", "i % 3"),
  ("mod_float", "a % b"), ("pow_lit", "a ** 2"), ("pow_float_lit", "a ** 0.5"), ("pow_tensor", "a.pow(b)"), ("rpow", "2 ** a"),
  ("maximum", "a.maximum(b)"), ("maximum_lit", "a.maximum(0)"), ("minimum", "a.minimum(b)"), ("minimum_int", "i.minimum(j)"),
  ("int_plus_bool", "i + (i > 2)"), ("bool_and", "(a > 0) & (b > 0)"), ("bool_or_lit", "(a > 0) | True"), ("bool_add", "(a > 0) + (b > 0)"),
  ("and_int", "i & j"), ("or_int_lit", "i | 5"), ("xor_int", "i ^ j"), ("lshift", "i << 2"), ("rshift", "i >> 1"),
  ("uint8_lit", "E(4, dtype=dtypes.uint8) + 300"), ("int8_int32", "E(4, dtype=dtypes.int8) * i"),
  # comparisons
  ("lt", "a < b"), ("gt", "a > b"), ("le", "a <= b"), ("ge", "a >= b"), ("eq", "a == b"), ("ne", "a != b"),
  ("lt_lit", "a < 0.5"), ("gt_int_lit", "i > 2"), ("eq_lit", "i == 1"), ("rlt_lit", "2 > a"),
  # unary
  ("neg", "-a"), ("neg_int", "-i"), ("neg_bool", "-(a > 0)"), ("logical_not", "(a > 0).logical_not()"), ("bitwise_not", "~i"),
  ("bitwise_not_u8", "~E(4, dtype=dtypes.uint8)"), ("reciprocal", "a.reciprocal()"), ("sqrt", "a.sqrt()"), ("rsqrt", "a.rsqrt()"),
  ("exp", "a.exp()"), ("exp_half", "h.exp()"), ("exp_int", "i.exp()"), ("exp2", "a.exp2()"), ("log", "a.log()"), ("log2", "a.log2()"),
  ("sin", "a.sin()"), ("cos", "a.cos()"), ("tan", "a.tan()"), ("abs", "a.abs()"), ("abs_int", "i.abs()"), ("sign", "a.sign()"),
  ("trunc", "a.trunc()"), ("floor", "a.floor()"), ("ceil", "a.ceil()"), ("round", "a.round()"), ("relu", "a.relu()"),
  ("sigmoid", "a.sigmoid()"), ("tanh", "a.tanh()"), ("gelu", "a.gelu()"), ("silu", "a.silu()"), ("square", "a.square()"),
  ("clamp", "a.clamp(-1, 1)"), ("clamp_min", "a.clamp(0.5)"), ("clamp_int", "i.clamp(0, 3)"),
  ("where", "(a > 0).where(a, b)"), ("where_lits", "(a > 0).where(1, 0.5)"), ("where_int_float", "(i > 0).where(i, 1.5)"),
  ("cast", "a.cast(dtypes.int32)"), ("cast_same", "a.cast(dtypes.float)"), ("bitcast", "a.bitcast(dtypes.int32)"),
  ("cast_half", "i.cast(dtypes.half)"),
  # reduce
  ("sum", "a.sum()"), ("sum_axis", "a.sum(1)"), ("sum_keepdim", "a.sum(0, keepdim=True)"), ("sum_axes", "E(2, 3, 4).sum((0, 2))"),
  ("sum_neg_axis", "a.sum(-1)"), ("sum_half", "h.sum()"), ("sum_int", "i.sum()"), ("sum_bool", "(a > 0).sum()"),
  ("sum_dtype", "a.sum(dtype=dtypes.half)"), ("sum_one_axis", "E(3, 1).sum(1)"), ("max", "a.max()"), ("max_axis", "a.max(1)"),
  ("min", "a.min(0)"), ("min_int", "i.min()"), ("prod", "a.prod(1)"), ("mean", "a.mean()"), ("mean_axis", "a.mean(1, keepdim=True)"),
  ("mean_int", "i.mean()"), ("var", "a.var(1)"), ("var_all", "a.var()"), ("std", "a.std(0, keepdim=True)"), ("std_int", "i.std()"), ("any", "a.any()"), ("all", "(a > 0).all(1)"),
  ("argmax", "a.argmax()"), ("argmax_axis", "a.argmax(1)"), ("argmax_keepdim", "a.argmax(0, keepdim=True)"), ("argmin", "a.argmin(1)"),
  ("softmax", "a.softmax()"), ("softmax_axis0", "a.softmax(0)"), ("log_softmax", "a.log_softmax(1)"), ("logsumexp", "a.logsumexp(1)"),
  ("logsumexp_all", "a.logsumexp()"), ("cumsum", "a.cumsum(1)"), ("cumsum_0", "E(5).cumsum()"),
  # movement
  ("reshape", "a.reshape(3, 2)"), ("reshape_infer", "a.reshape(-1)"), ("expand", "E(3, 1).expand(3, 4)"), ("expand_left", "f.expand(2, -1)"),
  ("permute", "E(2, 3, 4).permute(2, 0, 1)"), ("pad", "a.pad(((1, 0), (0, 2)))"), ("pad_value", "a.pad(((1, 1), (0, 0)), value=2.0)"),
  ("pad_neg", "a.pad(((0, 0), (-1, 1)))"), ("shrink", "a.shrink(((0, 1), (1, 3)))"), ("flip", "a.flip(1)"), ("flip_both", "a.flip((0, 1))"),
  ("transpose", "a.transpose()"), ("T", "E(2, 3, 4).transpose(0, 2)"), ("squeeze", "E(3, 1).squeeze()"), ("squeeze_dim", "E(1, 3, 1).squeeze(0)"),
  ("unsqueeze", "a.unsqueeze(1)"), ("unsqueeze_neg", "a.unsqueeze(-1)"), ("flatten", "E(2, 3, 4).flatten()"), ("flatten_1", "E(2, 3, 4).flatten(1)"),
  ("unflatten", "E(6).unflatten(0, (2, 3))"), ("cat", "a.cat(b)"), ("cat_dim1", "a.cat(E(2, 4), dim=1)"), ("cat_three", "a.cat(b, a, dim=0)"),
  ("cat_uneven", "E(2, 3).cat(E(1, 3))"), ("stack", "a.stack(b)"), ("stack_dim1", "a.stack(b, dim=1)"), ("stack_mixed", "h.stack(f)"),
  ("repeat", "a.repeat(2, 1)"), ("repeat_more", "f.repeat(2, 3)"),
  # indexing
  ("index_int", "a[1]"), ("index_neg", "a[-1]"), ("slice", "a[:, 1:3]"), ("slice_step", "E(6)[::2]"), ("slice_neg_step", "E(6)[::-1]"),
  ("slice_step3", "E(7)[1::3]"), ("slice_both", "E(4, 6)[1:3, ::-2]"), ("index_none", "a[None, 1]"), ("index_ellipsis", "E(2, 3, 4)[..., 1]"),
  ("index_mixed", "E(2, 3, 4)[1, ..., None, 1:3]"), ("slice_empty", "E(5)[3:1]"),
  # linear algebra
  ("matmul", "a @ E(3, 4)"), ("matmul_batch", "E(5, 2, 3) @ E(3, 4)"), ("matmul_bcast", "E(5, 1, 2, 3) @ E(4, 3, 2)"),
  ("dot_1d", "f.dot(f)"), ("vec_mat", "f @ E(3, 4)"), ("mat_vec", "a @ f"), ("matmul_half", "E(2, 3, dtype=dtypes.half) @ E(3, 2, dtype=dtypes.half)"),
  ("matmul_int", "E(2, 3, dtype=dtypes.int32) @ E(3, 2, dtype=dtypes.int32)"),
  # creation
  ("zeros", "Tensor.zeros(2, 3)"), ("ones", "Tensor.ones(4)"), ("full", "Tensor.full((2, 2), 7)"), ("full_float", "Tensor.full((3,), 0.5)"),
  ("full_dtype", "Tensor.full((2,), 3, dtype=dtypes.float)"), ("ones_int", "Tensor.ones(3, dtype=dtypes.int32)"),
  ("zeros_like", "a.zeros_like()"), ("full_like", "i.full_like(2)"),
  ("arange", "Tensor.arange(5)"), ("arange_start", "Tensor.arange(1, 10, 2)"), ("arange_float", "Tensor.arange(0, 1, 0.25)"),
  ("arange_neg", "Tensor.arange(5, 0, -1)"), ("arange_dtype", "Tensor.arange(4, dtype=dtypes.float)"), ("eye", "Tensor.eye(3)"),
  ("eye_rect", "Tensor.eye(2, 3, dtype=dtypes.int32)"), ("scalar", "Tensor(3)"), ("scalar_float", "Tensor(2.5, dtype=dtypes.float)"),
  ("scalar_add", "a + Tensor(1.5)"), ("empty", "E(2, 3)"),
  # data handlers
  ("contiguous", "(a + 1).contiguous()"), ("contiguous_buffer", "a.contiguous()"), ("detach", "a.detach()"), ("to_null", "a.to('NULL')"),
  ("clone", "a.clone()"), ("assign", "a.assign(b)"), ("assign_lit", "i.assign(3)"), ("assign_view", "a.reshape(6).assign(E(6))"),
  # random: the per-device key and counter are fresh empty buffers (tinygrad makes them from Python lists)
  ("rand", "Tensor.rand(3)"), ("rand_2d", "Tensor.rand(2, 3)"), ("rand_half", "Tensor.rand(5, dtype=dtypes.half)"),
  ("rand_f64", "Tensor.rand(3, dtype=dtypes.float64)"), ("randn", "Tensor.randn(2, 2)"), ("randint", "Tensor.randint(4, low=1, high=7)"),
  ("uniform", "Tensor.uniform(3, low=-1.0, high=1.0)"), ("rand_twice", "Tensor.rand(2) + Tensor.rand(2)"),
  # composites
  ("mlp", "(E(4, 3) @ E(3, 5) + E(5)).relu().sum(1).mean()"), ("sqrt_of_sum", "((a - b) ** 2).sum().sqrt()"),
  ("linear", "a.linear(E(3, 4), E(4))"), ("linear_1d_weight", "a.linear(f)"), ("layernorm", "a.layernorm()"),
  ("variance", "(a - a.mean(1, keepdim=True)).square().mean(1)"), ("softmax_cross", "-(a.log_softmax(1) * b).sum(1).mean()"),
  # autograd: gradient graphs (src/tensor/gradient.cpp)
  ("grad_mul", "(a * b).sum().gradient(a)[0]"), ("grad_bcast", "(a * f).sum().gradient(f)[0]"),
  ("grad_relu_mm", "(a @ E(3, 4)).relu().sum().gradient(a)[0]"), ("grad_max", "a.max(1).sum().gradient(a)[0]"),
  ("grad_prod", "a.prod(1).sum().gradient(a)[0]"), ("grad_pow", "a.pow(b).sum().gradient(b)[0]"),
  ("grad_maximum", "a.maximum(b).sum().gradient(a)[0]"), ("grad_where", "(a > 0).where(a, b * 2).sum().gradient(b)[0]"),
  ("grad_unary", "(a.sqrt() + a.log() + a.sin() + a.reciprocal()).sum().gradient(a)[0]"),
  ("grad_movement", "a.pad(((1, 0), (0, 2))).flip(1).shrink(((0, 2), (1, 4))).permute(1, 0).sum().gradient(a)[0]"),
  ("grad_softmax_cross", "(-(a.log_softmax(1) * b).sum(1).mean()).gradient(a)[0]"), ("grad_layernorm", "a.layernorm().sum().gradient(a)[0]"),
  ("grad_seed", "a.exp().gradient(a, gradient=b)[0]"), ("grad_stack", "a.stack(b).sin().sum().gradient(b)[0]"),
  ("grad_cast", "h.cast(dtypes.float).square().sum().gradient(h)[0]"), ("grad_unreached", "a.sum().gradient(b)[0]"),
  ("grad_contiguous_backward", "a.contiguous_backward().exp().sum().gradient(a)[0]"), ("grad_detach", "(a * a.detach()).sum().gradient(a)[0]"),
]

def build(expr:str):
  Tensor.manual_seed(0)
  Tensor._device_seeds["CPU"], Tensor._device_rng_counters["CPU"] = E(2, dtype=dtypes.uint32), E(2, dtype=dtypes.uint32)
  a, b = E(2, 3), E(2, 3)
  i, j = E(4, dtype=dtypes.int32), E(4, dtype=dtypes.int32)
  h, f = E(3, dtype=dtypes.half), E(3)
  return eval(expr, {"Tensor": Tensor, "dtypes": dtypes, "E": E, "a": a, "b": b, "i": i, "j": j, "h": h, "f": f})

def as_our_str(s:str) -> str:
  s = re.sub(r"(Ops\.FLIP, dtypes\.\w+, arg=)(\([^)]*\))", lambda m: m.group(1) + m.group(2).replace("True", "1").replace("False", "0"), s)
  return re.sub(r"ConstFloat\(([^)]*)\)", r"\1", s)

def generate() -> str:
  out = ["# generated by tests/tools/gen_tensor_graphs.py from tinygrad: do not edit"]
  for name, expr in CASES:
    t = build(expr)
    out += [f"case {name}", f"expr {expr}", f"shape {tuple(t.shape)}", f"dtype {t.dtype!r}", as_our_str(str(t.uop)), "end"]
  return "\n".join(out) + "\n"

if __name__ == "__main__":
  ap = argparse.ArgumentParser()
  ap.add_argument("--check", action="store_true")
  args = ap.parse_args()
  text = generate()
  if args.check:
    old = open(OUT).read() if os.path.exists(OUT) else ""
    diff = list(difflib.unified_diff(old.splitlines(), text.splitlines(), "old", "new", lineterm=""))
    print("\n".join(diff) if diff else "up to date")
    sys.exit(1 if diff else 0)
  with open(OUT, "w") as f: f.write(text)
  print(f"wrote {len(CASES)} cases to {OUT}")
