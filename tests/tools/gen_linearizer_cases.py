#!/usr/bin/env python3
# Prints what tinygrad's linearizer (codegen/late/linearizer.py `linearize`) makes of the SINKs of the hand-linearized
# programs of tests/renderer/test_cstyle.cpp (built by gen_cstyle_cases.py, next to this file), for
# tests/codegen/test_linearizer.cpp. Run against tinygrad at the reference commit:
#   PYTHONPATH=/path/to/tinygrad python3 tests/tools/gen_linearizer_cases.py [--cpp]
# For each program: the linearized order as positions in the hand-built list, and whether tinygrad's renderer gives
# the same C for the linearized list as for the hand-built one. With --cpp it prints the C++ test's expectation table
# (and the C tinygrad renders from the linearized list where that differs from the hand-built list's).
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_cstyle_cases as g
from tinygrad.uop.ops import UOp, Ops, AxisType, graph_rewrite
from tinygrad.dtype import dtypes
from tinygrad.codegen.late.linearizer import linearize, CFGContext, pm_add_control_flow, pm_split_ends
from tinygrad.renderer.cstyle import ClangRenderer
from tinygrad.helpers import Target

PROGS = (g.prog_add, g.prog_reduce, g.prog_idiv_half, g.prog_gated, g.prog_where_var, g.prog_vec4, g.prog_consts, g.prog_misc,
         g.prog_special)

# ***** kernels before "final rewrite" (split ends) and "add control flow": sibling and nested loops *****
# each runs pm_split_ends, pm_add_control_flow and linearize as full_rewrite_to_sink/do_linearize do, then the renderer
cc, param, rng, alu, sink = g.cc, g.param, g.rng, g.alu, g.sink
def load(i, *rest): return UOp(Ops.LOAD, i.dtype, (i,)+rest)
def store(i, v): return UOp(Ops.STORE, dtypes.void, (i, v))
def end(x, *r): return UOp(Ops.END, dtypes.void, (x,)+r)
def F(v): return cc(v, dtypes.float)
def I(v): return cc(v, dtypes.int)

def cfg_siblings():
  # three independent loops straight under the sink
  d0, d1, d2, d3 = [param(i, dtypes.float, 16) for i in range(4)]
  r0, r1, r2 = rng(I(16), 0), rng(I(8), 1), rng(I(4), 2)
  e0 = end(store(d0.index(r0), alu(Ops.MUL, load(d3.index(r0)), F(2.0))), r0)
  e1 = end(store(d1.index(r1), alu(Ops.ADD, load(d3.index(r1)), F(1.0))), r1)
  e2 = end(store(d2.index(r2), F(0.0)), r2)
  return sink("cfg_siblings", e0, e1, e2)

def cfg_nested_split():
  # one END of two ranges: split into END(END(st, r1), r0)
  d0, d1 = param(0, dtypes.float, 32), param(1, dtypes.float, 32)
  r0, r1 = rng(I(4), 0), rng(I(8), 1)
  i = alu(Ops.ADD, alu(Ops.MUL, r0, I(8)), r1)
  return sink("cfg_nested_split", end(store(d0.index(i), load(d1.index(i))), r0, r1))

def cfg_inner_siblings():
  # an outer loop holding two independent inner loops
  d0, d1, d2 = param(0, dtypes.float, 32), param(1, dtypes.float, 32), param(2, dtypes.float, 32)
  r0, r1, r2 = rng(I(4), 0), rng(I(8), 1), rng(I(8), 2)
  i1, i2 = alu(Ops.ADD, alu(Ops.MUL, r0, I(8)), r1), alu(Ops.ADD, alu(Ops.MUL, r0, I(8)), r2)
  e1 = end(store(d0.index(i1), load(d2.index(i1))), r1)
  e2 = end(store(d1.index(i2), alu(Ops.MUL, load(d2.index(i2)), F(3.0))), r2)
  return sink("cfg_inner_siblings", end(UOp(Ops.GROUP, dtypes.void, (e1, e2)), r0))

def cfg_dependent():
  # per row: a sum over r1 into a register, then a second loop r2 that reads it (depends on the first END)
  d0, d1 = param(0, dtypes.float, 32), param(1, dtypes.float, 32)
  acc = UOp(Ops.BUFFER, dtypes.float, (I(1),), g.ParamArg(0, dtypes.float, addrspace=g.AddrSpace.REG))
  r0, r1, r2 = rng(I(4), 0), rng(I(8), 1, AxisType.REDUCE), rng(I(8), 2)
  st0 = store(UOp(Ops.AFTER, dtypes.float, (acc, r0)).index(I(0)), F(0.0))
  a1 = UOp(Ops.AFTER, dtypes.float, (acc, st0, r1)).index(I(0))
  e1 = end(store(a1, alu(Ops.ADD, load(a1), load(d1.index(alu(Ops.ADD, alu(Ops.MUL, r0, I(8)), r1))))), r1)
  tot = load(UOp(Ops.AFTER, dtypes.float, (acc, e1)).index(I(0)))
  i2 = alu(Ops.ADD, alu(Ops.MUL, r0, I(8)), r2)
  e2 = end(store(d0.index(i2), alu(Ops.MUL, load(d1.index(i2)), tot)), r2)
  return sink("cfg_dependent", end(e2, r0))

CFG_PROGS = (cfg_siblings, cfg_nested_split, cfg_inner_siblings, cfg_dependent)

def cfg_linearize(s):
  s = graph_rewrite(s, pm_split_ends, name="split ends")
  s = graph_rewrite(s, pm_add_control_flow, ctx=CFGContext(s), name="add control flow", bottom_up=True)
  return linearize(s)

def line(lin, u):
  extra = u.arg[0] if u.op is Ops.RANGE else u.arg.slot if u.op is Ops.PARAM else u.arg if u.op is Ops.CONST else ""
  return f"{u.op.name} {','.join(str(lin.index(s)) for s in u.src)} {extra}".rstrip()

if __name__ == "__main__":
  ren = ClangRenderer(Target(device="CPU", arch="x86_64,native"))
  for fn in PROGS:
    name, lst = fn()
    lin = linearize(lst[-1])
    order = [lst.index(u) for u in lin]
    # clang can't render SPECIAL; the rendering check is for the clang programs
    same_c = None if fn is g.prog_special else ren.render(lin) == ren.render(lst)
    if "--cpp" in sys.argv:
      # the C of the linearized list where it differs from the hand-built list's
      lin_c = "nullptr" if same_c is not False else f'R"TG({ren.render(lin)})TG"'
      print(f'    {{"{fn.__name__[5:]}", prog_{fn.__name__[5:]}, {{{", ".join(map(str, order))}}}, {lin_c}}},')
    else:
      print(f"===== {fn.__name__}: {len(lin)} of {len(lst)} uops, {'in the hand-built order' if order == list(range(len(lst))) else 'reordered'}"
            f"{'' if same_c is None else ', same C' if same_c else ', different C'}")
      for i, u in enumerate(lin): print(f"  {i:3d} [{order[i]:3d}] {u.op} {u.dtype} {[lin.index(s) for s in u.src]} {u.arg!r}")
  for fn in CFG_PROGS:
    lin = cfg_linearize(fn())
    # one line per uop: op, sources as positions in the list, and the RANGE axis / PARAM slot / CONST value
    if "--cpp" in sys.argv:
      print(f'    {{"{fn.__name__}", {fn.__name__}, R"TG(\n' + "\n".join(line(lin, u) for u in lin) + '\n)TG",\n     R"TG(' + ren.render(lin) + ')TG"},')
    else:
      print(f"===== {fn.__name__}\n" + "\n".join(f"  {i:3d} {line(lin, u)}" for i, u in enumerate(lin)))
      print(ren.render(lin))
