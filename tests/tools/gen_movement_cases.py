#!/usr/bin/env python3
"""Generate tests/data/movement_cases.txt: movement-op chains on a UOp buffer with tinygrad's results.

Usage (runs the reference tinygrad as pure Python):
  TINYGRAD_PATH=/work/ref /usr/bin/python3 tests/tools/gen_movement_cases.py          # (re)write the case file
  TINYGRAD_PATH=/work/ref /usr/bin/python3 tests/tools/gen_movement_cases.py --check  # regenerate to memory and diff

Each case starts from UOp.new_buffer('CPU', N, dtypes.float, num=0) reshaped (MovementMixin.reshape) to a start shape,
then applies a chain of MovementMixin calls (pad is MovementMixin.pad: UOp.pad resolves to OpMixin's Tensor-level pad). Chain syntax, steps separated by " ; ":
  reshape 2,3,-1   expand 5,-1,3   permute 2,0,1   pad 1:0,0:2   shrink 0:1,1:3   flip 0,-1   ("_" is an empty tuple)
  shrink_to 1,2   pad_to 4,3   squeeze 1 (squeeze _: all)   unsqueeze -1   flatten 0,-1   unflatten DIM,SIZES...   transpose 0,2
Case file format, one block per case:
  case <start shape> | <chain>
  shape <result shape>            (or: error <python exception type>, and the block ends)
  str                             then the lines of str(result) (FLIP's bool tuple written as 0/1 ints, as our Arg holds it)
  cleanup                         then the lines of str(graph_rewrite(result, mop_cleanup))
  end
The generator also checks graph_rewrite(result, symbolic_simple) gives the same node as mop_cleanup.
"""
from __future__ import annotations
import os, sys, re, argparse, difflib

TINYGRAD_PATH = os.environ.get("TINYGRAD_PATH", "/work/ref")
sys.path.insert(0, TINYGRAD_PATH)

from tinygrad.uop.ops import UOp, graph_rewrite  # noqa: E402
from tinygrad.uop.movement import mop_cleanup  # noqa: E402
from tinygrad.uop.symbolic import symbolic_simple  # noqa: E402
from tinygrad.dtype import dtypes  # noqa: E402
from tinygrad.mixin.movement import MovementMixin  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "movement_cases.txt")

CASES = [
  # reshape
  ("24", "reshape 2,3,4"), ("2,3,4", "reshape 24"), ("2,3,4", "reshape 4,-1"), ("2,3,4", "reshape -1"), ("2,3,4", "reshape 2,3,4"),
  ("2,3,4", "reshape 4,3,2 ; reshape 6,4"), ("2,3,4", "reshape 6,4 ; reshape 2,3,4"), ("1", "reshape _"), ("1,1", "reshape _"),
  ("6", "reshape 1,6 ; reshape 6"), ("2,3,4", "reshape 2,1,3,4"), ("2,2,2", "reshape 8"), ("0,3", "reshape 3,0"), ("0,3", "reshape 0"),
  ("2,3,4", "reshape 2,3,2,2 ; reshape 2,3,4 ; reshape 24"),
  # expand
  ("2,3,4", "expand 5,2,3,4"), ("2,1,4", "expand 2,3,4"), ("1,3,1", "expand 2,3,4"), ("1,3,1", "expand 5,2,-1,4"), ("3", "expand 2,3"),
  ("2,3,4", "expand 2,3,4"), ("2,3,4", "expand -1,-1,-1"), ("1", "expand 0"), ("1,1", "expand 3,1"), ("1,1", "expand 3,5"),
  ("3,1", "expand 1,3,2"), ("2,3,4", "expand _"),
  # permute
  ("2,3,4", "permute 2,0,1"), ("2,3,4", "permute 0,1,2"), ("2,3,4", "permute -1,0,1"), ("2,3,4", "permute 2,0,1 ; permute 1,2,0"),
  ("2,3,4", "permute 1,0,2 ; permute 1,0,2"), ("2,3,4", "permute 2,1,0 ; permute 0,2,1 ; permute 1,0,2"), ("5", "permute 0"), ("_", "permute _"),
  # pad
  ("2,3,4", "pad 1:1,0:0,2:0"), ("2,3,4", "pad 0:0,0:0,0:0"), ("4", "pad 3:2"), ("2,3", "pad 0:1,0:0 ; pad 1:0,0:2"), ("_", "pad _"),
  ("1,1", "pad 0:0,5:0"),
  # shrink
  ("2,3,4", "shrink 0:1,1:3,0:4"), ("2,3,4", "shrink 0:2,0:3,0:4"), ("6", "shrink 2:5"), ("6", "shrink 3:3"), ("4,4", "shrink 1:3,1:3 ; shrink 0:1,1:2"),
  ("_", "shrink _"),
  # flip
  ("2,3,4", "flip 0,2"), ("2,3,4", "flip -1"), ("2,3,4", "flip _"), ("5", "flip 0 ; flip 0"),
  # chains
  ("2,3,4", "permute 2,0,1 ; reshape 4,6 ; pad 0:1,2:2 ; shrink 1:4,0:10 ; flip 1"),
  ("2,1,4", "expand 2,3,4 ; permute 1,0,2 ; reshape 3,8"), ("4,4", "reshape 2,2,2,2 ; permute 0,2,1,3 ; reshape 4,4"),
  ("3,4", "pad 1:1,1:1 ; shrink 1:4,1:5"), ("2,3", "flip 0,1 ; permute 1,0 ; expand 2,3,2"),
  ("6", "reshape 2,3 ; reshape 3,2 ; permute 1,0 ; permute 1,0 ; reshape 6"),
  # derived ones
  ("2,3,4", "shrink_to 1,2,4"), ("2,3,4", "shrink_to 2,3,4"), ("2,3", "pad_to 4,3"), ("2,3", "pad_to 2,3"), ("1,3,1", "squeeze _"),
  ("1,3,1", "squeeze 0"), ("1,3,1", "squeeze 1"), ("1,3,1", "squeeze -1"), ("_", "squeeze 0"), ("2,3", "unsqueeze 0"), ("2,3", "unsqueeze -1"),
  ("2,3", "unsqueeze 1"), ("2,3,4", "flatten 0,-1"), ("2,3,4", "flatten 1,2"), ("2,3,4", "flatten 0,0"), ("_", "flatten 0,-1"),
  ("2,12", "unflatten 1,3,4"), ("2,12", "unflatten -1,2,-1"), ("2,3,4", "transpose 1,0"), ("2,3,4", "transpose 0,-1"), ("2,3,4", "transpose 1,1"),
  ("2,3,4", "unsqueeze 1 ; expand 2,5,3,4 ; flatten 0,1 ; transpose 0,2 ; shrink_to 4,3,5"),
  # errors
  ("2,3", "reshape 4,2"), ("2,3", "reshape -1,-1"), ("2,3", "reshape -2,-3"), ("0,3", "reshape 0,-1"), ("2,3", "reshape 5,-1"),
  ("2,3", "expand 4,3"), ("2,3", "expand 3"), ("2,3", "expand 2,-2"),
  ("2,3", "permute 0,0"), ("2,3", "permute 0"), ("2,3", "permute 0,2"), ("2,3", "permute 1,0,2"),
  ("2,3", "pad 1:1"), ("2,3", "pad -1:0,0:0"), ("2,3", "pad 0:0,0:-4"),
  ("2,3", "shrink 0:2"), ("2,3", "shrink 0:3,0:3"), ("2,3", "shrink -1:1,0:3"), ("2,3", "shrink 0:2,2:1"), ("2,3", "shrink 1:1,0:4"),
  ("2,3", "flip 0,0"), ("2,3", "flip 2"), ("2,3", "flip -3"),
  ("2,3", "shrink_to 3,3"), ("2,3", "pad_to 1,3"), ("2,3", "pad_to 4"), ("2,3", "squeeze 2"), ("2,3", "unsqueeze 3"), ("2,3", "flatten 0,2"),
  ("2,3", "unflatten 1,2,2"), ("2,3", "transpose 0,2"),
]

def ints(s:str) -> tuple[int, ...]: return () if s == "_" else tuple(int(x) for x in s.split(","))
def pairs(s:str) -> tuple[tuple[int, int], ...]: return () if s == "_" else tuple(tuple(int(y) for y in x.split(":")) for x in s.split(","))

def apply(x:UOp, step:str) -> UOp:
  op, arg = step.split()
  if op in ("reshape", "expand", "permute", "flip", "shrink_to", "pad_to"): return getattr(x, op)(ints(arg))
  if op == "squeeze": return x.squeeze(None if arg == "_" else int(arg))
  if op == "unsqueeze": return x.unsqueeze(int(arg))
  if op == "flatten": return x.flatten(*ints(arg))
  if op == "unflatten": return x.unflatten(ints(arg)[0], ints(arg)[1:])
  if op == "transpose": return x.transpose(*ints(arg))
  # UOp.pad is OpMixin's (negative pads, modes, fill values: the Tensor-level pad); the movement op is MovementMixin's
  return getattr(MovementMixin, op)(x, pairs(arg))

def fmt_str(u:UOp) -> list[str]:
  # our FLIP arg is a 0/1 int tuple
  return [re.sub(r"arg=\(((?:True|False)(?:, (?:True|False))*,?)\)", lambda m: "arg=(" + m.group(1).replace("True", "1").replace("False", "0") + ")", l)
          for l in str(u).split("\n")]

def gen() -> str:
  out = ["# generated by tests/tools/gen_movement_cases.py from tinygrad; do not edit"]
  for start, chain in CASES:
    shp = ints(start)
    n = 1
    for s in shp: n *= s
    out.append(f"case {start} | {chain}")
    try:
      x = UOp.new_buffer("CPU", n, dtypes.float, num=0).reshape(shp)
      for step in chain.split(" ; "): x = apply(x, step)
      shape = x.shape
    except Exception as e:  # noqa: BLE001
      out += [f"error {type(e).__name__}", "end"]
      continue
    c = graph_rewrite(x, mop_cleanup)
    assert graph_rewrite(x, symbolic_simple) is c, f"symbolic_simple differs from mop_cleanup on {start} | {chain}"
    out.append("shape " + ",".join(str(s) for s in shape) if len(shape) else "shape _")
    out += ["str"] + fmt_str(x) + ["cleanup"] + fmt_str(c) + ["end"]
  return "\n".join(out) + "\n"

if __name__ == "__main__":
  ap = argparse.ArgumentParser()
  ap.add_argument("--check", action="store_true")
  args = ap.parse_args()
  text = gen()
  if args.check:
    old = open(OUT).read()
    if old != text:
      sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True), "old", "new"))
      sys.exit(1)
    print("up to date")
  else:
    with open(OUT, "w") as f: f.write(text)
    print(f"wrote {len(CASES)} cases to {OUT}")
