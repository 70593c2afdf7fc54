#!/usr/bin/env python3
# Writes tests/data/cuda_cases.txt: small Tensor graphs, and for each kernel tinygrad schedules for them, the kernel AST
# with what tinygrad's to_program makes of it for its CUDARenderer (sm_90, with its tensor cores): the CUDA C source, the
# launch dims and the applied opts, with the default (GPU) heuristic: tensor cores, locals, GROUPTOP, upcasts. Same
# format as codegen_cases.txt (tests/codegen/codegen_cases.h reads both); a case's settings follow NOOPT=0 on its CASE
# line (TC_CASES: TC_OPT=2 lets the tensor cores pad and take several reduce axes). For tests/codegen/test_cuda_source.cpp.
# Run against tinygrad at the reference commit (no GPU needed: tinygrad renders for CUDA without one):
#   PYTHONPATH=/path/to/tinygrad python3 tests/tools/gen_cuda_cases.py > tests/data/cuda_cases.txt
from tinygrad import Tensor, dtypes
from tinygrad.uop.ops import Ops
from tinygrad.helpers import Context, Target
from tinygrad.codegen import to_program
from tinygrad.renderer.cstyle import CUDARenderer

def seq(n, start=1.0, step=0.5): return [start + step*i for i in range(n)]
def F(*shape, start=1.0, step=0.5):
  n = 1
  for s in shape: n *= s
  return Tensor(seq(n, start, step)).reshape(shape).realize()
def E(*shape, dtype=dtypes.float): return Tensor.empty(*shape, dtype=dtype).realize()

CASES = {
  "add": lambda: F(4, 4) + F(4, 4, start=2.0),
  "big_add": lambda: E(256, 256) + E(256, 256),
  "chain": lambda: ((E(64, 64) * 2 - 1) * E(64, 64) + 3).relu(),
  "exp_sqrt": lambda: E(1024).exp() + E(1024).sqrt(),
  "half_mul": lambda: (E(1024, dtype=dtypes.half) * 3).float(),
  "half_sum": lambda: E(64, 64, dtype=dtypes.half).sum(1),
  "bf16_add": lambda: (E(512, dtype=dtypes.bfloat16) + 1).float(),
  "int_where": lambda: (E(512, dtype=dtypes.int) < 0).where(E(512, dtype=dtypes.int), 7),
  "sum_axis1": lambda: E(256, 256).sum(1),
  "sum_all": lambda: E(4096).sum(),
  "max_axis0": lambda: E(512, 64).max(0),
  "softmax": lambda: E(64, 128).softmax(1),
  "matmul": lambda: E(64, 64) @ E(64, 64),
  "matmul_big": lambda: E(256, 256) @ E(256, 256),
  "matvec": lambda: E(1, 512) @ E(512, 32),
  "conv2d": lambda: E(1, 4, 16, 16).conv2d(E(8, 4, 3, 3)),
  "conv2d_pad": lambda: E(2, 3, 8, 8).conv2d(E(4, 3, 3, 3), padding=1),
  "argmax": lambda: E(64, 100).argmax(1),
  "pad_mul": lambda: E(3, 4).pad(((1, 1), (0, 0))) * E(5, 4),
  "pad_mul2": lambda: E(5, 2).pad(((2, 3), (0, 0))) * E(10, 2),
  "fp8_add": lambda: E(512, dtype=dtypes.fp8e4m3) + E(512, dtype=dtypes.fp8e4m3),
  "fp8_from_float": lambda: E(512).cast(dtypes.fp8e5m2),
  "fp8_to_float": lambda: E(512, dtype=dtypes.fp8e4m3).float() * 2,
}

# half/bfloat16 matmuls and convolutions tinygrad puts on the mma.sync tensor cores, each with the settings it runs under
# (TC_OPT=2: padded and several reduce axes; TC=2: the tensor core's shape without WMMA; TC=0: none; TC_SELECT: the
# renderer's 4th core, the 8x16x8 half one; ALLOW_TF32=1: a float matmul on the tf32 core)
H, BF = dtypes.half, dtypes.bfloat16
TC_CASES = {
  "tc_half_matmul": (lambda: E(64, 64, dtype=H).matmul(E(64, 64, dtype=H), dtype=dtypes.float), {}),
  "tc_half_out": (lambda: E(64, 64, dtype=H) @ E(64, 64, dtype=H), {}),
  "tc_half_256": (lambda: E(256, 256, dtype=H).matmul(E(256, 256, dtype=H), dtype=dtypes.float), {}),
  "tc_bf16_matmul": (lambda: E(256, 256, dtype=BF).matmul(E(256, 256, dtype=BF), dtype=dtypes.float), {}),
  "tc_conv1x1": (lambda: E(1, 32, 16, 16, dtype=H).conv2d(E(32, 32, 1, 1, dtype=H), dtype=dtypes.float), {}),
  "tc_conv3x3": (lambda: E(1, 16, 16, 16, dtype=H).conv2d(E(32, 16, 3, 3, dtype=H), dtype=dtypes.float), {"TC_OPT": 2}),
  "tc_pad": (lambda: E(60, 64, dtype=H).matmul(E(64, 56, dtype=H), dtype=dtypes.float), {"TC_OPT": 2}),
  "tc_shape_only": (lambda: E(64, 64, dtype=H).matmul(E(64, 64, dtype=H), dtype=dtypes.float), {"TC": 2}),
  "tc_off": (lambda: E(64, 64, dtype=H).matmul(E(64, 64, dtype=H), dtype=dtypes.float), {"TC": 0}),
  "tc_select_8168": (lambda: E(64, 64, dtype=H).matmul(E(64, 64, dtype=H), dtype=dtypes.float), {"TC_SELECT": 3}),
  "tc_tf32": (lambda: E(64, 64) @ E(64, 64), {"ALLOW_TF32": 1}),
  "tc_fp8_matmul": (lambda: E(64, 64, dtype=dtypes.fp8e4m3).matmul(E(64, 64, dtype=dtypes.fp8e4m3), dtype=dtypes.float), {}),
}

def dump(name, make, ren, settings=""):
  out = make()
  graph = str(out.uop)
  lin = out.schedule_linear()
  print(f"### CASE {name} NOOPT=0{settings}")
  print("### GRAPH")
  print(graph)
  k = 0
  for call in lin.src:
    ast = call.src[0]
    if ast.op is not Ops.SINK: continue
    prg = to_program(ast, ren)
    info, est = prg.arg, prg.src[0].arg.estimates
    print(f"### KERNEL {k}")
    print("### AST")
    print(ast)
    print("### SRC")
    print(prg.src[2].arg)
    print("### INFO")
    print(f"name={info.function_name} global={tuple(info.global_size)} local={info.local_size} outs={tuple(info.outs)} ins={tuple(info.ins)} "
          f"vars={tuple(v.arg.name for v in info.vars)} ops={est.ops} lds={est.lds} mem={est.mem} "
          f"opts={prg.src[0].arg.applied_opts}")
    k += 1
  print("### END")

if __name__ == "__main__":
  ren = CUDARenderer(Target(device="CUDA", arch="sm_90"))
  with Context(NOOPT=0):
    for name, make in CASES.items(): dump(name, make, ren)
  for name, (make, settings) in TC_CASES.items():
    with Context(NOOPT=0, **settings): dump(name, make, ren, "".join(f" {k}={v}" for k, v in settings.items()))
