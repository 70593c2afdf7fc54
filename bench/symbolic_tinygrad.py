#!/usr/bin/env python3
"""Time tinygrad's UOp.simplify() over a file of expressions (the Python side of the symbolic benchmark).

Usage: TINYGRAD_PATH=/work/ref /usr/bin/python3 bench/symbolic_tinygrad.py EXPRS.txt

Each non-empty line of EXPRS.txt that does not start with '#' is `vars | expr`, with the syntax of
tests/data/symbolic_cases.txt: vars is a space separated list of `name=var(lo,hi)` / `rN=range(end,N)` (or `-`),
expr a python expression over them. Lines of the case file itself (`mode | vars | expr | render | nodes`) are also
accepted: their vars and expr are used (`valid` cases, whose expr is `VALID => EXPR`, are skipped).
All UOps are built first (untimed; the rule module is imported up front too), then one pass of u.simplify() over
all of them is timed, with no warm-up, so run it in a fresh process.
Prints exactly one line: `tinygrad: N expressions in S s = R expr/s`.
"""
import os, re, sys, time

sys.path.insert(0, os.environ.get("TINYGRAD_PATH", "/work/ref"))
from tinygrad.uop.ops import UOp  # noqa: E402
# simplify() imports the rewrite rules lazily on its first call: import them here so module loading isn't timed
import tinygrad.uop.symbolic  # noqa: E402,F401  pylint: disable=unused-import

VAR_RE = re.compile(r"^(\w+)=(var|range)\((-?\d+),(-?\d+)\)$")
MODES = {"symbolic", "sym", "valid"}

def parse_vars(spec: str) -> dict:
  ns = {}
  if spec.strip() == "-": return ns
  for decl in spec.split():
    if (m := VAR_RE.match(decl)) is None: raise ValueError(f"bad var declaration {decl!r}")
    name, kind, p0, p1 = m.group(1), m.group(2), int(m.group(3)), int(m.group(4))
    ns[name] = UOp.variable(name, p0, p1) if kind == "var" else UOp.range(p0, p1)
  return ns

def load(path: str) -> list:
  uops = []
  with open(path) as f:
    for lineno, line in enumerate(f, 1):
      line = line.strip()
      if not line or line.startswith("#"): continue
      fields = line.split(" | ")
      if len(fields) >= 3 and fields[0] in MODES:
        if fields[0] == "valid": continue
        fields = fields[1:3]
      if len(fields) != 2: raise ValueError(f"{path}:{lineno}: expected 'vars | expr', got {line!r}")
      u = eval(fields[1], {"__builtins__": {}}, parse_vars(fields[0]))  # pylint: disable=eval-used
      if isinstance(u, (bool, int)): u = UOp.const(u)  # a literal-only expression folds in python
      if not isinstance(u, UOp): raise ValueError(f"{path}:{lineno}: {fields[1]!r} is not a UOp expression")
      uops.append(u)
  return uops

def main() -> int:
  if len(sys.argv) != 2:
    print(__doc__, file=sys.stderr)
    return 2
  uops = load(sys.argv[1])
  st = time.perf_counter()
  for u in uops: u.simplify()
  et = time.perf_counter() - st
  print(f"tinygrad: {len(uops)} expressions in {et:.6f} s = {len(uops)/et if et > 0 else float('inf'):.1f} expr/s")
  return 0

if __name__ == "__main__":
  sys.exit(main())
