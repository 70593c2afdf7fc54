#!/usr/bin/env python3
# Kernel counts tinygrad (a9069c177a) schedules for the graphs of tests/kernels/test_kernel_counts.cpp (same names, same
# graphs). Run from the repo root with a tinygrad checkout at a9069c177a: PYTHONPATH=TINYGRAD_DIR DEV=PYTHON /usr/bin/python3 tests/tools/gen_kernel_counts.py > tests/data/kernel_counts.txt
from tinygrad import Tensor, dtypes
from tinygrad.helpers import Context

def E(*shape, dtype=dtypes.float): return Tensor.empty(*shape, dtype=dtype)

def conv_mops():
  xp = E(1, 1, 6, 6).pad(((0, 0), (0, 0), (1, 1), (1, 1)))
  cols = [xp.shrink(((0, 1), (0, 1), (i, i + 6), (j, j + 6))) for i in range(3) for j in range(3)]
  return (Tensor.stack(*cols, dim=-1) * E(9).reshape(1, 1, 1, 1, 9)).sum(-1)

def assign_add():
  a = E(4, 4).contiguous().realize()
  return [a.assign(a + 1)]
def assign_then_read():
  a = E(8).contiguous().realize()
  a.assign(a * 2)
  return [a + 1]
def two_assigns():
  a, b = E(8).contiguous().realize(), E(8).contiguous().realize()
  return [a.assign(b + 1), b.assign(a + 2)]

def I(*shape): return Tensor.empty(*shape, dtype=dtypes.int32)
def setitem_fancy():
  a = E(8, 6).contiguous().realize()
  a[I(3)] = E(3, 6)
  return [a]
def setitem_slice():
  a = E(8).contiguous().realize()
  a[2:6] = E(4)
  return [a]
def max_unpool():
  v, i = E(1, 2, 4, 4).max_pool2d(return_indices=True)
  return [v.max_unpool2d(i)]

# backward graphs: the gradients of a loss, scheduled together
def wino_conv():  # WINO=1: the Winograd F(4x4,3x3) convolution
  with Context(WINO=1): return [E(2, 4, 8, 8).conv2d(E(6, 4, 3, 3), padding=1)]
def bw_wino_conv():
  x, w = E(2, 4, 8, 8), E(6, 4, 3, 3)
  with Context(WINO=1): return list(x.conv2d(w, padding=1).sum().gradient(x, w))
def bw_relu_linear():
  x, w, b = E(8, 16), E(16, 4), E(4)
  return list((x @ w + b).relu().sum().gradient(x, w, b))
def bw_mlp2():
  x, w1, w2 = E(8, 16), E(16, 32), E(32, 4)
  return list(((x @ w1).relu() @ w2).square().mean().gradient(w1, w2))
def bw_softmax_ce():
  logits, y = E(4, 8), E(4, 8)
  return list((-(logits.log_softmax(axis=-1) * y).sum(axis=1)).mean().gradient(logits))
def bw_softmax():
  x, s = E(4, 8), E(4, 8)
  return list((x.softmax(axis=-1) * s).sum().gradient(x))
def bw_pad_shrink_flip():
  x = E(6, 6)
  return list(x.pad(((1, 1), (1, 1))).shrink(((0, 6), (2, 8))).flip(1).exp().sum().gradient(x))
def bw_max_reduce():
  x = E(4, 8)
  return list(x.max(axis=1).sum().gradient(x))
def bw_broadcast_mul():
  x, y = E(4, 1), E(1, 8)
  return list((x * y).exp().sum().gradient(x, y))
def bw_layernorm():
  x, w = E(4, 8), E(8)
  return list((x.layernorm() * w).sum().gradient(x, w))
def bw_cat_stack():
  x, y = E(4, 4), E(2, 4)
  return list(x.cat(y, dim=0).sin().stack(E(6, 4), dim=0).sum().gradient(x, y))
def bw_seeded():
  x, s = E(4, 8), E(4, 8)
  return list((x * 2).exp().gradient(x, gradient=s))
def bw_cumsum():
  x = E(8)
  return list(x.cumsum().square().sum().gradient(x))
def bw_prod():
  x = E(4, 8)
  return list(x.prod(axis=1).sum().gradient(x))
def bw_backward():
  x, w = E(4, 8), E(8, 3)
  (x @ w).relu().sum().backward()
  return [x.grad, w.grad]

graphs = {
  "add": lambda: [E(16) + E(16)],
  "ew_chain": lambda: [((E(4, 4) + 1) * 2 - E(4, 4)).exp().sqrt()],
  "broadcast_add": lambda: [E(4, 1) + E(1, 4)],
  "scalar_mul": lambda: [E(10) * 3],
  "const_only": lambda: [Tensor.full((4, 4), 2.0).contiguous()],
  "sum_all": lambda: [E(16).sum()],
  "sum_axis": lambda: [E(4, 8).sum(axis=1)],
  "sum_keepdim_sub": lambda: [(x := E(4, 8)) - x.sum(axis=1, keepdim=True)],
  "mean_var": lambda: [((x := E(4, 8)) - x.mean(axis=1, keepdim=True)).square().mean(axis=1)],
  "max_reduce": lambda: [E(4, 8).max(axis=0)],
  "softmax": lambda: [E(4, 8).softmax(axis=-1)],
  "log_softmax": lambda: [E(4, 8).log_softmax(axis=-1)],
  "logsumexp": lambda: [E(4, 8).logsumexp(axis=1)],
  "matmul": lambda: [E(8, 16) @ E(16, 4)],
  "matmul_bias_relu": lambda: [(E(8, 16) @ E(16, 4) + E(4)).relu()],
  "mlp2": lambda: [((E(8, 16) @ E(16, 32)).relu() @ E(32, 4)).relu()],
  "batched_matmul": lambda: [E(2, 3, 4, 5) @ E(2, 3, 5, 6)],
  "pad": lambda: [E(4, 4).pad(((1, 1), (2, 0)))],
  "pad_add": lambda: [E(4, 4).pad(((1, 1), (2, 0)), value=1.5) + 1],
  "shrink": lambda: [E(8, 8).shrink(((1, 5), (2, 6))) + 1],
  "flip": lambda: [E(4, 6).flip(0) * 2],
  "pad_shrink_flip": lambda: [E(6, 6).pad(((1, 1), (1, 1))).shrink(((0, 6), (2, 8))).flip(1) + 1],
  "permute_add": lambda: [E(4, 8).permute(1, 0) + E(8, 4)],
  "cat": lambda: [E(4, 4).cat(E(2, 4), dim=0)],
  "cat3": lambda: [E(4, 2).cat(E(4, 3), E(4, 1), dim=1) * 2],
  "stack": lambda: [E(4).stack(E(4), dim=0)],
  "two_outputs_shared": lambda: [(x := E(16)) + 1, x * 2],
  "two_outputs_reduce": lambda: [(x := E(4, 8)).sum(axis=1), x.max(axis=1)],
  "reduce_of_broadcast": lambda: [E(4, 1).expand(4, 8).sum(axis=1)],
  "reduce_then_expand": lambda: [E(4, 8).sum(axis=1, keepdim=True).expand(4, 8) * E(4, 8)],
  "double_reduce": lambda: [E(4, 8).sum(axis=1).sum()],
  "contiguous_mid": lambda: [((E(8) + 1).contiguous() * 2)],
  "cast_chain": lambda: [(E(8, dtype=dtypes.int32).cast(dtypes.float) / 3).cast(dtypes.half)],
  "arange": lambda: [Tensor.arange(10).contiguous()],
  "arange_dev": lambda: [Tensor.arange(10, dtype=dtypes.int32).to("CPU").contiguous()],
  "arange_float_dev": lambda: [Tensor.arange(2, 20, 3, dtype=dtypes.float).to("CPU") * 2],
  "arange_add": lambda: [Tensor.arange(8) + E(8, dtype=dtypes.int32)],
  "eye": lambda: [Tensor.eye(4).contiguous()],
  "eye_dev": lambda: [Tensor.eye(4).to("CPU").contiguous()],
  "cumsum": lambda: [E(8).cumsum()],
  "where_cmp": lambda: [((x := E(8)) > 0).where(x, x * 0.1)],
  "argmax": lambda: [E(4, 8).argmax(axis=1)],
  "conv_mops": lambda: [conv_mops()],
  "wino_conv": wino_conv,
  "repeat": lambda: [E(2, 3).repeat(2, 2) + 1],
  "slice_contig": lambda: [E(16)[4:12].contiguous()],
  "slice_step": lambda: [E(16)[::2] + 1],
  "transpose_contig": lambda: [E(4, 8).transpose().contiguous()],
  "fancy_index": lambda: [E(8, 6)[I(4)]],
  "fancy_index_consecutive": lambda: [E(4, 5, 6)[I(3), I(3)]],
  "fancy_index_separated": lambda: [E(4, 5, 6)[I(3), :, I(3)]],
  "setitem_fancy": setitem_fancy,
  "setitem_slice": setitem_slice,
  "einsum_matmul": lambda: [Tensor.einsum("ij,jk->ik", E(4, 5), E(5, 3))],
  "einsum_batch_diag": lambda: [Tensor.einsum("bii->bi", E(2, 4, 4)).contiguous()],
  "interpolate_bilinear": lambda: [E(1, 2, 4, 4).interpolate((6, 6))],
  "interpolate_nearest": lambda: [E(1, 2, 4, 4).interpolate((8, 8), mode="nearest")],
  "max_unpool2d": max_unpool,
  "rearrange": lambda: [E(2, 3, 4).rearrange("a b c -> c (a b)").contiguous()],
  "scatter": lambda: [E(4, 6).scatter(0, I(2, 6), E(2, 6))],
  "scatter_reduce_sum": lambda: [E(4, 6).scatter_reduce(0, I(2, 6), E(2, 6), "sum")],
  "sort": lambda: [E(8).sort()[0]],
  "topk": lambda: [E(8).topk(3)[0]],
  "assign_add": assign_add,
  "assign_then_read": assign_then_read,
  "two_assigns": two_assigns,
  **{name: fn for name, fn in list(globals().items()) if name.startswith("bw_")},
}

if __name__ == "__main__":
  for name, fn in graphs.items():
    outs = fn()
    print(name, len(Tensor.schedule_linear(*outs).src))
