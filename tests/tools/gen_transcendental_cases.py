# Prints tinygrad's node counts of the transcendental decompositions (xexp2, xlog2, xsin, xpow) for each float dtype:
# the number of nodes in the built graph minus the nodes of the input(s). tests/codegen/test_transcendental.cpp holds
# these numbers. Run from a tinygrad checkout at a9069c177a: PYTHONPATH=TINYGRAD_DIR python3 tests/tools/gen_transcendental_cases.py
from tinygrad import dtypes
from tinygrad.uop.ops import UOp
from tinygrad.codegen.decomp.transcendental import xexp2, xlog2, xsin, xpow

def n(u: UOp) -> int: return len(u.toposort())
for dt in (dtypes.float16, dtypes.float32, dtypes.float64):
  x = UOp.variable("x", -1e30, 1e30, dt)
  y = UOp.variable("y", -1e30, 1e30, dt)
  base = n(x)
  print(f"{dt.name} xexp2 {n(xexp2(x)) - base}")
  print(f"{dt.name} xlog2 {n(xlog2(x)) - base}")
  print(f"{dt.name} xsin {n(xsin(x)) - base}")
  print(f"{dt.name} xsin_fast {n(xsin(x, fast=True)) - base}")
  print(f"{dt.name} xpow {n(xpow(x, y)) - n(UOp.sink(x, y)) + 1}")

# tinygrad's results (TRANSCENDENTAL=2 on the CPU device) for a few inputs: float32/float64 graphs evaluated with
# per-op rounding must give these bit for bit. (float16 is left out: clang computes half expressions in float.)
# Needs DEV=CPU TRANSCENDENTAL=2 in the environment; skipped otherwise.
import os
if os.environ.get("TRANSCENDENTAL") == "2":
  from tinygrad import Tensor
  xs = [0.3, -1.7, 5.5, 40.25, -77.125, 1e-3, 123.456, 1e4 + 0.1, -48722.206257753161, 92871.208840681255, 3e6 + 0.7, -80568802.649893835]
  for dt in (dtypes.float32, dtypes.float64):
    for name in ("exp2", "log2", "sin"):
      vals = [x for x in xs if name != "exp2" or abs(x) < 100]
      if name == "log2": vals = [abs(x) for x in vals]
      out = getattr(Tensor(vals, dtype=dt), name)().tolist()
      for x, y in zip(Tensor(vals, dtype=dt).tolist(), out): print(f"value {dt.name} {name} {x!r} {y!r}")
