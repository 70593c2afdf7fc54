#!/usr/bin/env python3
# Writes tests/data/codegen_cases.txt: small Tensor graphs, and for each kernel tinygrad schedules for them, the kernel
# AST (the CALL's src[0] as printed) with what tinygrad's to_program makes of it for the CPU (clang) renderer: the C
# source, the launch dims and the estimates; once with NOOPT=1 and once with the default opts.
# For tests/codegen/test_parse.cpp (round trip of printed graphs) and tests/codegen/test_pipeline.cpp.
# Run against tinygrad at the reference commit (NUM_CPU_THREADS=8 fixes the THREAD opt's limit; the C++ test sets it too):
#   NUM_CPU_THREADS=8 PYTHONPATH=/path/to/tinygrad python3 tests/tools/gen_codegen_cases.py > tests/data/codegen_cases.txt
from tinygrad import Tensor, dtypes, Device
from tinygrad.uop.ops import Ops
from tinygrad.helpers import Context
from tinygrad.codegen import to_program

def seq(n, start=1.0, step=0.5): return [start + step*i for i in range(n)]
def F(*shape, start=1.0, step=0.5):
  n = 1
  for s in shape: n *= s
  return Tensor(seq(n, start, step)).reshape(shape).realize() if shape else Tensor(start).realize()
def I(*shape, start=-5):
  n = 1
  for s in shape: n *= s
  return Tensor([start + 3*i for i in range(n)], dtype=dtypes.int).reshape(shape).realize()

def E(*shape): return Tensor.empty(*shape).realize()

CASES = {
  "add": lambda: F(4, 4) + F(4, 4, start=2.0),
  "broadcast_mul_add": lambda: F(3, 4) * F(4) + 1,
  "zero_d": lambda: F() * 2 + 1,
  "chain": lambda: ((F(8) * 2 - 1) * F(8, start=-1.0) + 3).relu(),
  "sum_all": lambda: F(4, 4).sum(),
  "sum_axis1": lambda: F(3, 4).sum(1),
  "sum_axis0_keepdim": lambda: F(3, 4).sum(0, keepdim=True),
  "sum_two_axes": lambda: F(2, 3, 4).sum((0, 2)),
  "max_axis1": lambda: F(3, 4).max(1),
  "mean": lambda: F(3, 4).mean(1),
  "permute": lambda: (F(3, 4).T + 1).contiguous(),
  "flip": lambda: F(3, 4).flip(1) * 2,
  "pad": lambda: F(3, 4).pad(((1, 1), (0, 2))) + 1,
  "shrink": lambda: F(4, 4)[1:3, 0:2] + 1,
  "pad_value": lambda: F(3, 4).pad(((1, 0), (0, 1)), value=2.0),
  "int_divmod": lambda: (I(8) // 3) + (I(8) % 3),
  "int_div_pow2": lambda: (I(8) // 4) * (I(8) % 8),
  "cast_half": lambda: (F(4).half() * 2).float(),
  "cast_bfloat16": lambda: (F(4).cast(dtypes.bfloat16) + 1).float(),
  "cast_int": lambda: F(6).cast(dtypes.int) + 1,
  "exp": lambda: F(4).exp(),
  "log": lambda: F(4).log(),
  "sin": lambda: F(4).sin(),
  "sqrt": lambda: F(4).sqrt(),
  "recip": lambda: 1 / F(4),
  "where_cmp": lambda: (F(6) > F(6, start=3.0, step=-0.5)).where(F(6), -1.0),
  "argmax": lambda: F(3, 4).argmax(1),
  "matmul": lambda: F(3, 4) @ F(4, 5),
  "cumsum": lambda: F(5).cumsum(),
  "softmax": lambda: F(3, 4).softmax(1),
  "reduce_broadcast": lambda: F(3, 4) - F(3, 4).sum(1, keepdim=True),
  "pad_sum": lambda: F(3, 4).pad(((0, 1), (1, 0))).sum(0),
  "half_sum": lambda: F(8).half().sum(),
  "gather": lambda: F(5, 3)[Tensor([4, 0, 2, 2], dtype=dtypes.int).realize()],
  "cast_bool": lambda: (F(6) > 2).cast(dtypes.uint8) + 1,
  "double_mul": lambda: F(4).cast(dtypes.double) * 3,
  "min_reduce": lambda: F(3, 4).min(0),
  "expand_add": lambda: F(3, 1) + F(1, 4),
  "arange_mul": lambda: Tensor.arange(8).float() * F(8),
  "reshape_permute": lambda: F(2, 6).permute(1, 0).reshape(3, 4) + 1,
  "conv2d": lambda: F(1, 1, 6, 6).conv2d(F(1, 1, 3, 3, start=-1.0)),
  "max_pool": lambda: F(1, 1, 4, 4).max_pool2d(),
  "var": lambda: F(3, 4).var(1),
  "stack": lambda: Tensor.stack(F(3), F(3, start=5.0)),
  "pow": lambda: F(4) ** 2.5,
  "sigmoid": lambda: F(6).sigmoid(),
  "int_where": lambda: (I(6) < 0).where(I(6), I(6) * 2),
  "long_sum": lambda: I(6).cast(dtypes.int64).sum(),
  "two_reduces": lambda: (lambda a: a.sum(1) + (a * a).max(1))(F(3, 4)),
  "reduce_then_ew": lambda: (F(4, 4).sum(0) * F(4)).sum(),
  # big enough for the THREAD opt (run with NUM_CPU_THREADS=8, as the C++ test does)
  "big_add": lambda: E(1024, 1024) + E(1024, 1024),
  "big_sum": lambda: E(2048, 512).sum(1),
  "big_matmul": lambda: E(64, 128) @ E(128, 64),
  "big_softmax": lambda: E(1024, 256).softmax(1),
  "big_argmax": lambda: E(512, 600).argmax(1),
  "big_cumsum": lambda: E(64, 300).cumsum(1),
  "big_pad_half": lambda: E(512, 512).half().pad(((1, 1), (3, 0))) * 2,
  "big_transpose": lambda: (E(512, 1024).T + 1).contiguous(),
}

def dump(name, make, noopt):
  with Context(NOOPT=noopt):
    out = make()
    graph = str(out.uop)
    lin = out.schedule_linear()
    print(f"### CASE {name} NOOPT={noopt}")
    print("### GRAPH")
    print(graph)
    k = 0
    for call in lin.src:
      ast = call.src[0]
      if ast.op is not Ops.SINK: continue
      prg = to_program(ast, Device["CPU"].renderer)
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
  for noopt in (1, 0):
    for name, make in CASES.items(): dump(name, make, noopt)
