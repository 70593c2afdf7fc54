#!/usr/bin/env python3
"""Generate tests/data/nn_graphs.txt: the tensor graph tinygrad builds for each nn functional / layer call below.

Usage (runs the reference tinygrad as pure Python):
  TINYGRAD_PATH=/work/ref /usr/bin/python3 tests/tools/gen_nn_graphs.py          # (re)write the case file
  TINYGRAD_PATH=/work/ref /usr/bin/python3 tests/tools/gen_nn_graphs.py --check  # regenerate to memory and diff

tests/nn/test_layers_graphs.cpp builds the same expressions (same names) with tg::Tensor / tg::nn and compares
str(t.uop). The format is gen_tensor_graphs.py's. Layers get their weights replaced by empty buffers (their random
initial values are covered by the rand cases), so the graphs show the forward computation only.
"""
from __future__ import annotations
import os, sys, argparse, difflib

TINYGRAD_PATH = os.environ.get("TINYGRAD_PATH", "/work/ref")
sys.path.insert(0, TINYGRAD_PATH)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from tinygrad import Tensor, dtypes, nn  # noqa: E402
from tinygrad.helpers import Context  # noqa: E402
from gen_tensor_graphs import as_our_str  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "nn_graphs.txt")

def E(*s, dtype=None): return Tensor.empty(*s, dtype=dtype or dtypes.float)
def train(f):
  with Context(TRAINING=1): return f()
def layer(l, **tensors):
  for k, v in tensors.items(): setattr(l, k, v)
  return l

# x a float (1, 2, 5, 5) buffer, w a float (3, 2, 3, 3) buffer, a a float (2, 3) buffer, y an int32 (2,) buffer
CASES = [
  # conv
  ("conv2d", "x.conv2d(w)"), ("conv2d_bias", "x.conv2d(w, E(3))"), ("conv2d_stride", "x.conv2d(w, stride=2)"),
  ("conv2d_stride_tuple", "x.conv2d(w, stride=(2, 1))"), ("conv2d_pad", "x.conv2d(w, padding=1)"),
  ("conv2d_pad_hw", "x.conv2d(w, padding=(1, 2))"), ("conv2d_pad_sides", "x.conv2d(w, padding=(1, 0, 2, 1))"),
  ("conv2d_dilation", "x.conv2d(w, dilation=2)"), ("conv2d_groups", "E(1, 4, 5, 5).conv2d(E(4, 2, 3, 3), groups=2)"),
  ("conv1d", "E(2, 2, 7).conv2d(E(3, 2, 3), padding=1)"), ("conv2d_neg_pad", "x.conv2d(w, padding=(-1, 1, 0, 0))"),
  ("conv_transpose2d", "x.conv_transpose2d(E(2, 3, 3, 3))"), ("conv_transpose2d_bias", "x.conv_transpose2d(E(2, 3, 3, 3), E(3))"),
  ("conv_transpose2d_stride", "x.conv_transpose2d(E(2, 3, 3, 3), stride=2, padding=1, output_padding=1)"),
  ("conv_transpose2d_groups", "E(1, 4, 3, 3).conv_transpose2d(E(4, 1, 2, 2), groups=2, dilation=2)"),
  # pooling
  ("max_pool2d", "x.max_pool2d()"), ("max_pool2d_k3s1", "x.max_pool2d(3, 1)"), ("max_pool2d_pad", "x.max_pool2d(3, 2, padding=1)"),
  ("max_pool2d_ceil", "x.max_pool2d(ceil_mode=True)"), ("max_pool2d_dilation", "x.max_pool2d(2, 1, dilation=2)"),
  ("max_pool2d_indices", "x.max_pool2d(return_indices=True)[1]"), ("max_pool1d", "E(1, 2, 7).max_pool2d((3,), 2)"),
  ("avg_pool2d", "x.avg_pool2d()"), ("avg_pool2d_pad", "x.avg_pool2d(3, 2, padding=1)"),
  ("avg_pool2d_nocount", "x.avg_pool2d(3, 2, padding=1, count_include_pad=False)"), ("avg_pool2d_ceil", "x.avg_pool2d(ceil_mode=True)"),
  ("avg_pool2d_ceil_pad", "x.avg_pool2d(3, 2, padding=1, ceil_mode=True)"),
  # indexing-style
  ("dropout_eval", "a.dropout(0.5)"), ("dropout_train", "train(lambda: a.dropout(0.25))"), ("dropout_one", "train(lambda: a.dropout(1.0))"),
  ("one_hot", "y.one_hot(4)"), ("gather", "a.gather(1, E(2, 2, dtype=dtypes.int32))"), ("gather_0", "a.gather(0, E(1, 3, dtype=dtypes.int32))"),
  ("sequential", "a.sequential([lambda t: t * 2, lambda t: t.relu()])"),
  # normalization
  ("batchnorm", "x.batchnorm(E(2), E(2), E(2), E(2))"), ("batchnorm_noaffine", "x.batchnorm(None, None, E(2), E(1, 2, 1, 1))"),
  ("layernorm_layer", "layer(nn.LayerNorm(3), weight=E(3), bias=E(3))(a)"),
  ("layernorm_2d_shape", "layer(nn.LayerNorm((2, 3)), weight=E(2, 3), bias=E(2, 3))(E(4, 2, 3))"),
  ("rmsnorm_layer", "layer(nn.RMSNorm(3), weight=E(3))(a)"), ("groupnorm_layer", "layer(nn.GroupNorm(2, 4), weight=E(4), bias=E(4))(E(2, 4, 3))"),
  ("batchnorm_eval", "layer(nn.BatchNorm(2), weight=E(2), bias=E(2), running_mean=E(2), running_var=E(2))(x)"),
  ("batchnorm_train_out", "train(lambda: layer(nn.BatchNorm(2), weight=E(2), bias=E(2), running_mean=E(2), running_var=E(2))(x))"),
  ("batchnorm_train_stats", "train(lambda: (lambda l: (l(x), l.running_var)[1])(layer(nn.BatchNorm(2), weight=E(2), bias=E(2), running_mean=E(2), running_var=E(2))))"),
  # layers
  ("linear_layer", "layer(nn.Linear(3, 4), weight=E(4, 3), bias=E(4))(a)"), ("linear_nobias", "layer(nn.Linear(3, 4, bias=False), weight=E(4, 3))(a)"),
  ("conv2d_layer", "layer(nn.Conv2d(2, 3, 3, padding=1), weight=E(3, 2, 3, 3), bias=E(3))(x)"),
  ("conv2d_same", "layer(nn.Conv2d(2, 3, 4, padding='same', bias=False), weight=E(3, 2, 4, 4))(x)"),
  ("conv1d_layer", "layer(nn.Conv1d(2, 3, 3, stride=2), weight=E(3, 2, 3), bias=E(3))(E(1, 2, 7))"),
  ("conv_transpose2d_layer", "layer(nn.ConvTranspose2d(2, 3, 3, stride=2), weight=E(2, 3, 3, 3), bias=E(3))(x)"),
  ("embedding_layer", "layer(nn.Embedding(5, 3), weight=E(5, 3))(E(2, 4, dtype=dtypes.int32))"),
  # losses
  ("sparse_ce", "a.sparse_categorical_crossentropy(y)"), ("sparse_ce_ignore", "a.sparse_categorical_crossentropy(y, ignore_index=1)"),
  ("sparse_ce_smooth_sum", "a.sparse_categorical_crossentropy(y, label_smoothing=0.1, reduction='sum')"),
  ("sparse_ce_none", "a.sparse_categorical_crossentropy(y, reduction='none')"),
  ("cross_entropy_idx", "a.cross_entropy(y)"), ("cross_entropy_probs", "a.cross_entropy(E(2, 3), reduction='sum', label_smoothing=0.2)"),
  ("cross_entropy_1d", "E(3).cross_entropy(E(3), reduction='none')"),
  ("bce", "a.sigmoid().binary_crossentropy(E(2, 3))"), ("bce_none", "a.sigmoid().binary_crossentropy(E(2, 3), reduction='none')"),
  ("bce_logits", "a.binary_crossentropy_logits(E(2, 3))"), ("bce_logits_pos", "a.binary_crossentropy_logits(E(2, 3), 'sum', E(3))"),
  # attention
  ("sdpa", "E(2, 3, 4).scaled_dot_product_attention(E(2, 5, 4), E(2, 5, 6))"),
  ("sdpa_mask_bool", "E(2, 3, 4).scaled_dot_product_attention(E(2, 5, 4), E(2, 5, 6), E(3, 5, dtype=dtypes.bool))"),
  ("sdpa_mask_float", "E(2, 3, 4).scaled_dot_product_attention(E(2, 5, 4), E(2, 5, 6), E(3, 5))"),
  ("sdpa_causal", "E(1, 2, 4, 3).scaled_dot_product_attention(E(1, 2, 4, 3), E(1, 2, 4, 3), is_causal=True)"),
  ("sdpa_gqa", "E(1, 4, 3, 2).scaled_dot_product_attention(E(1, 2, 3, 2), E(1, 2, 3, 2), enable_gqa=True)"),
  ("sdpa_half", "E(2, 3, 4, dtype=dtypes.half).scaled_dot_product_attention(E(2, 3, 4, dtype=dtypes.half), E(2, 3, 4, dtype=dtypes.half))"),
  # activations
  ("leaky_relu", "a.leaky_relu()"), ("leaky_relu_slope", "a.leaky_relu(0.2)"), ("elu", "a.elu()"), ("elu_alpha", "a.elu(0.5)"),
  ("softplus", "a.softplus()"), ("softplus_beta", "a.softplus(2.0)"), ("logsigmoid", "a.logsigmoid()"), ("hardtanh", "a.hardtanh()"),
  ("hardtanh_range", "a.hardtanh(-2.5, 0.5)"), ("hardswish", "a.hardswish()"), ("hardsigmoid", "a.hardsigmoid()"), ("mish", "a.mish()"),
  # initializers
  ("glorot_uniform", "Tensor.glorot_uniform(3, 4)"), ("kaiming_uniform", "Tensor.kaiming_uniform(4, 2, 3)"),
  ("scaled_uniform", "Tensor.scaled_uniform(2, 3)"),
]

def build(expr:str):
  Tensor.manual_seed(0)
  Tensor._device_seeds["CPU"], Tensor._device_rng_counters["CPU"] = E(2, dtype=dtypes.uint32), E(2, dtype=dtypes.uint32)
  x, w, a, y = E(1, 2, 5, 5), E(3, 2, 3, 3), E(2, 3), E(2, dtype=dtypes.int32)
  return eval(expr, {"Tensor": Tensor, "dtypes": dtypes, "nn": nn, "E": E, "train": train, "layer": layer, "x": x, "w": w, "a": a, "y": y})

def generate() -> str:
  out = ["# generated by tests/tools/gen_nn_graphs.py from tinygrad: do not edit"]
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
