#!/usr/bin/env python3
# tinygrad's side of bench/jit: the same two jitted functions, timed the same way (see bench/jit.cpp).
# Run: PYTHONPATH=/work/ref /usr/bin/python3 bench/jit_tinygrad.py [reps]
import sys, time, statistics
from tinygrad import Tensor, TinyJit

def f1(x): return (x * 2 + 1).realize()
def f10(x):
  for _ in range(10): x = (x * 1.01 + 1).contiguous()
  return x.realize()

def median_us(fn, reps):
  ts = []
  for _ in range(reps):
    st = time.perf_counter()
    fn()
    ts.append((time.perf_counter() - st) * 1e6)
  return statistics.median(ts)

if __name__ == "__main__":
  reps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
  x = Tensor.ones(4, 4).contiguous().realize()
  for name, fn, n in (("jit1", f1, 1), ("jit10", f10, 10)):
    jit = TinyJit(fn)
    for _ in range(3): jit(x)
    replay = median_us(lambda: jit(x), reps)
    eager = median_us(lambda: fn(x), max(reps // 10, 20))
    print(f"tinygrad     {name:6s} kernels {n:2d} replay {replay:8.2f} us/call {replay / n:8.2f} us/launch   eager {eager:8.1f} us/call")
