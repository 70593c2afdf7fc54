#!/usr/bin/env python3
# tinygrad's side of bench/overhead: the same graphs, timed the same way (see bench/overhead.cpp).
#   cold:   build a fresh graph, schedule it (schedule cache off) and render every kernel's source (program cache
#           cleared): the time from building to having all sources; the C compiler is not run.
#   steady: the same graph structure on new buffers, realized end to end (schedule cache and compiled kernels hit);
#           per graph and per kernel launch.
# Run: PYTHONPATH=/work/ref /usr/bin/python3 bench/overhead_tinygrad.py [reps]
import sys, time, statistics
from tinygrad import Tensor, Device, dtypes
from tinygrad.helpers import Context
from tinygrad.codegen import to_program, to_program_cache

def E(*s): return Tensor.empty(*s, dtype=dtypes.float)

def mlp(): return [((E(32, 64) @ E(64, 128) + E(128)).relu() @ E(128, 10)).softmax(-1)]
def softmax(): return [E(64, 100).softmax(-1)]
def conv():
  xp = E(2, 4, 16, 16).pad(((0, 0), (0, 0), (1, 1), (1, 1)))
  cols = [xp.shrink(((0, 2), (0, 4), (i, i + 16), (j, j + 16))) for i in range(3) for j in range(3)]
  x = Tensor.stack(*cols, dim=-1).reshape(2, 1, 4, 16, 16, 9)
  return [(x * E(8, 4, 1, 1, 9).reshape(1, 8, 4, 1, 1, 9)).sum((2, 5)).relu()]
def chain():
  x, y = E(256), E(256)
  for i in range(5): x = ((x + y) * 1.5 - y).relu()
  return [x]  # 20 elementwise ops
GRAPHS = {"mlp": mlp, "softmax": softmax, "conv": conv, "chain20": chain}

def cold(fn, reps):
  ren = Device["CPU"].renderer
  ts, nk = [], 0
  for _ in range(reps):
    to_program_cache.clear()
    st = time.perf_counter()
    outs = fn()  # building the graph is timed, as on our side
    with Context(SCACHE=0):
      linear = Tensor.schedule_linear(*outs)
      for call in linear.src:
        if call.src[0].op.name == "SINK": to_program(call.src[0], ren)
    ts.append(time.perf_counter() - st)
    nk = len(linear.src)
  return statistics.median(ts), nk

def steady(fn, reps):
  for _ in range(3): [t.realize() for t in fn()]  # warm: compile and fill the caches
  ts, nk = [], 0
  for _ in range(reps):
    outs = fn()
    st = time.perf_counter()
    linear = Tensor.schedule_linear(*outs)
    from tinygrad.engine.realize import run_linear
    run_linear(linear)
    ts.append(time.perf_counter() - st)
    nk = len(linear.src)
  return statistics.median(ts), nk

if __name__ == "__main__":
  reps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
  for name, fn in GRAPHS.items():
    c, nk = cold(fn, reps)
    s, _ = steady(fn, reps)
    print(f"tinygrad {name:8s} kernels {nk:2d} cold {c*1e3:9.3f} ms steady {s*1e6:9.1f} us/graph {s*1e6/max(nk,1):8.1f} us/launch")
