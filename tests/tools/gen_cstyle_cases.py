#!/usr/bin/env python3
# Prints what tinygrad's ClangRenderer emits for the hand-linearized programs of tests/renderer/test_cstyle.cpp.
# Run against tinygrad at the reference commit:  PYTHONPATH=/path/to/tinygrad python3 tests/tools/gen_cstyle_cases.py [--cpp]
# Each program is built as the list of UOps the renderer receives (consts already spelled CAST(dtype, CONST)), in the same
# order as the C++ test builds it. With --cpp it prints the C++ test's expected strings.
import math
from tinygrad.uop.ops import UOp, Ops, AxisType, ParamArg, KernelInfo
from tinygrad.dtype import dtypes, AddrSpace
from tinygrad.renderer.cstyle import ClangRenderer, CStyleLanguage
from tinygrad.helpers import Target

def cc(v, dt): return UOp(Ops.CAST, dt, (UOp.const(v),), dt)   # a casted const, as the renderer sees literals
def param(slot, dt, n, volatile=False): return UOp(Ops.PARAM, dt, (cc(n, dtypes.int),), ParamArg(slot, dt, volatile=volatile))
def var(slot, name, lo, hi, dt=dtypes.int):
  return UOp(Ops.PARAM, dt, (UOp(Ops.STACK, dtypes.void, ()),), ParamArg(slot, dt, vmin_vmax=(lo, hi), name=name, addrspace=AddrSpace.ALU))
def rng(end, axis, at=AxisType.WEAK, *extra): return UOp(Ops.RANGE, end.dtype, (end,)+extra, (axis, at))
def alu(op, *src, dt=None): return UOp(op, dt if dt is not None else (dtypes.bool if op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ) else src[-1].dtype), src)
def sink(name, *src): return UOp(Ops.SINK, dtypes.void, src, KernelInfo(name=name))

def prog_add():
  n = cc(16, dtypes.int); d0, d1, d2 = param(0, dtypes.float, 16), param(1, dtypes.float, 16), param(2, dtypes.float, 16)
  r = rng(n, 0)
  l1 = UOp(Ops.LOAD, dtypes.float, (i1:=d1.index(r),)); l2 = UOp(Ops.LOAD, dtypes.float, (i2:=d2.index(r),))
  i0 = d0.index(r); a = alu(Ops.ADD, l1, l2); st = UOp(Ops.STORE, dtypes.void, (i0, a)); e = UOp(Ops.END, dtypes.void, (st, r))
  return "E_16", [n.src[0], n, d0, d1, d2, r, i1, l1, i2, l2, i0, a, st, e, sink("E_16", e)]

def prog_reduce():
  c4, c16, c1, c0, c2 = cc(4, dtypes.int), cc(16, dtypes.int), cc(1, dtypes.int), cc(0, dtypes.int), cc(2, dtypes.int)
  f0 = cc(0.0, dtypes.float)
  d0, d1 = param(0, dtypes.float, 4), param(1, dtypes.float, 16)
  acc = UOp(Ops.BUFFER, dtypes.float, (c1,), ParamArg(0, dtypes.float, addrspace=AddrSpace.REG))
  r1 = rng(c4, 1); a1 = UOp(Ops.AFTER, dtypes.float, (acc, r1)); ia = a1.index(c0); shl = alu(Ops.SHL, r1, c2)
  st0 = UOp(Ops.STORE, dtypes.void, (ia, f0)); r0 = rng(c4, 0, AxisType.REDUCE, r1); add = alu(Ops.ADD, shl, r0)
  i1 = d1.index(add); l1 = UOp(Ops.LOAD, dtypes.float, (i1,)); a2 = UOp(Ops.AFTER, dtypes.float, (acc, st0, r0)); ia2 = a2.index(c0)
  la = UOp(Ops.LOAD, dtypes.float, (ia2,)); s = alu(Ops.ADD, la, l1); st1 = UOp(Ops.STORE, dtypes.void, (ia2, s))
  e0 = UOp(Ops.END, dtypes.void, (st1, r0)); a3 = UOp(Ops.AFTER, dtypes.float, (acc, e0)); ia3 = a3.index(c0)
  l3 = UOp(Ops.LOAD, dtypes.float, (ia3,)); io = d0.index(r1); st2 = UOp(Ops.STORE, dtypes.void, (io, l3)); e1 = UOp(Ops.END, dtypes.void, (st2, r1))
  lst = [c4.src[0], c4, d0, c16.src[0], c16, d1, c1.src[0], c1, acc, c0.src[0], c0, c2.src[0], c2, f0.src[0], f0,
         r1, a1, ia, shl, st0, r0, add, i1, l1, a2, ia2, la, s, st1, e0, a3, ia3, l3, io, st2, e1, sink("r_4_4", e1)]
  return "r_4_4", lst

def prog_idiv_half():
  c8, c0, c3 = cc(8, dtypes.int), cc(0, dtypes.int), cc(3, dtypes.int)
  d0, d1 = param(0, dtypes.half, 8), param(1, dtypes.int, 8)
  r = rng(c8, 0); i1 = d1.index(r); v = UOp(Ops.LOAD, dtypes.int, (i1,)); i0 = d0.index(r)
  m = alu(Ops.CMOD, v, c3); lt = alu(Ops.CMPLT, v, c0); ne = alu(Ops.CMPNE, m, c0); an = alu(Ops.AND, ne, lt)
  ci = UOp(Ops.CAST, dtypes.int, (an,), dtypes.int); dv = alu(Ops.CDIV, v, c3); sb = alu(Ops.SUB, dv, ci)
  ch = UOp(Ops.CAST, dtypes.half, (sb,), dtypes.half); sq = alu(Ops.SQRT, ch); st = UOp(Ops.STORE, dtypes.void, (i0, sq))
  e = UOp(Ops.END, dtypes.void, (st, r))
  return "E_8", [c8.src[0], c8, d0, d1, c0.src[0], c0, c3.src[0], c3, r, i1, v, i0, m, lt, ne, an, ci, dv, sb, ch, sq, st, e, sink("E_8", e)]

def prog_gated():
  c24, c16, cm4, c3, c20, f0 = cc(24, dtypes.int), cc(16, dtypes.int), cc(-4, dtypes.int), cc(3, dtypes.int), cc(20, dtypes.int), cc(0.0, dtypes.float)
  d0, d1 = param(0, dtypes.float, 24), param(1, dtypes.float, 16)
  r = rng(c24, 0); ad = alu(Ops.ADD, r, cm4); i1 = d1.index(ad); g1 = alu(Ops.CMPLT, c3, r); g2 = alu(Ops.CMPLT, r, c20)
  g = alu(Ops.AND, g1, g2); l = UOp(Ops.LOAD, dtypes.float, (i1, f0, g)); i0 = d0.index(r); st = UOp(Ops.STORE, dtypes.void, (i0, l))
  e = UOp(Ops.END, dtypes.void, (st, r))
  return "E_24", [c24.src[0], c24, d0, c16.src[0], c16, d1, cm4.src[0], cm4, c3.src[0], c3, c20.src[0], c20, f0.src[0], f0,
                  r, ad, i1, g1, g2, g, l, i0, st, e, sink("E_24", e)]

def prog_where_var():
  # out[i] = (a[i] < n) ? a[i]*2.5f : -a[i], with an int variable n and a thread id core_id
  c32, c8, c0, c2 = cc(32, dtypes.int), cc(8, dtypes.int), cc(0, dtypes.int), cc(2.5, dtypes.float)
  d0, d1 = param(0, dtypes.float, 32), param(1, dtypes.float, 32)
  n = var(2, "n", 1, 10); core = var(3, "core_id", 0, 3)
  r = rng(c8, 0); m = alu(Ops.MUL, core, c8); ad = alu(Ops.ADD, m, r); i1 = d1.index(ad); v = UOp(Ops.LOAD, dtypes.float, (i1,))
  nf = UOp(Ops.CAST, dtypes.float, (n,), dtypes.float); lt = alu(Ops.CMPLT, v, nf); mul = alu(Ops.MUL, v, c2); ng = alu(Ops.NEG, v)
  w = alu(Ops.WHERE, lt, mul, ng); i0 = d0.index(ad); st = UOp(Ops.STORE, dtypes.void, (i0, w)); e = UOp(Ops.END, dtypes.void, (st, r))
  return "E_4_8", [c32.src[0], c32, d0, d1, n.src[0], n, core, c8.src[0], c8, c0.src[0], c0, c2.src[0], c2,
                   r, m, ad, i1, v, nf, lt, mul, ng, w, i0, st, e, sink("E_4_8", e)]

def prog_vec4():
  c16, c0, c1, c2, c3, c4 = [cc(x, dtypes.int) for x in (16, 0, 1, 2, 3, 4)]
  d0, d1, d2 = param(0, dtypes.float, 16), param(1, dtypes.float, 16), param(2, dtypes.float, 16)
  r = rng(c4, 0); shl = alu(Ops.SHL, r, c2)
  s1 = UOp(Ops.SHRINK, dtypes.float, (d1, shl, c4)); l1 = UOp(Ops.LOAD, dtypes.float, (s1,))
  s2 = UOp(Ops.SHRINK, dtypes.float, (d2, shl, c4)); l2 = UOp(Ops.LOAD, dtypes.float, (s2,))
  g1 = [l1.index(c) for c in (c0, c1, c2, c3)]; g2 = [l2.index(c) for c in (c0, c1, c2, c3)]
  adds = [alu(Ops.ADD, a, b) for a, b in zip(g1, g2)]
  stk = UOp(Ops.STACK, dtypes.float, tuple(adds)); s0 = UOp(Ops.SHRINK, dtypes.float, (d0, shl, c4))
  st = UOp(Ops.STORE, dtypes.void, (s0, stk)); grp = UOp(Ops.GROUP, dtypes.void, (st,)*4); e = UOp(Ops.END, dtypes.void, (grp, r))
  lst = [c16.src[0], c16, d0, d1, d2, c0.src[0], c0, c1.src[0], c1, c2.src[0], c2, c3.src[0], c3, c4.src[0], c4,
         r, shl, s1, l1, s2, l2, *g1, *g2, *adds, stk, s0, st, grp, e, sink("E_4_4", e)]
  return "E_4_4", lst

def prog_consts():
  # one store per literal kind and a few ops the others miss (XOR SHR TRUNC BITCAST CMPEQ FDIV, double, volatile)
  c1 = cc(1, dtypes.int); c0 = cc(0, dtypes.int)
  d0 = param(0, dtypes.uint, 1); d1 = param(1, dtypes.long, 1); d2 = param(2, dtypes.ulong, 1); d3 = param(3, dtypes.bool, 1)
  d4 = param(4, dtypes.char, 1); d5 = param(5, dtypes.uchar, 1); d6 = param(6, dtypes.half, 1); d7 = param(7, dtypes.float, 1)
  d8 = param(8, dtypes.double, 1, volatile=True); d9 = param(9, dtypes.short, 1)
  ku, kl, kul, kb = cc(7, dtypes.uint), cc(-5, dtypes.long), cc(2**63, dtypes.ulong), cc(True, dtypes.bool)
  kc, kuc, kh, kinf = cc(-3, dtypes.char), cc(200, dtypes.uchar), cc(1.5, dtypes.half), cc(math.inf, dtypes.float)
  knan, kd, ks = cc(math.nan, dtypes.double), cc(0.25, dtypes.double), cc(-7, dtypes.short)
  lu = UOp(Ops.LOAD, dtypes.uint, (iu:=d0.index(c0),))
  xo = alu(Ops.XOR, lu, ku); sh = alu(Ops.SHR, xo, cc(1, dtypes.uint)); mx = alu(Ops.WHERE, alu(Ops.CMPLT, sh, ku), ku, sh)
  ll = UOp(Ops.LOAD, dtypes.long, (il:=d1.index(c0),)); ml = alu(Ops.MUL, ll, kl)
  lf = UOp(Ops.LOAD, dtypes.float, (if_:=d7.index(c0),)); tr = alu(Ops.TRUNC, lf); fd = alu(Ops.FDIV, tr, kinf)
  bc = UOp(Ops.BITCAST, dtypes.uint, (lf,), dtypes.uint); eq = alu(Ops.CMPEQ, bc, ku)
  ld = UOp(Ops.LOAD, dtypes.double, (id_:=d8.index(c0),)); sq = alu(Ops.SQRT, ld); ad = alu(Ops.ADD, sq, kd); mxd = alu(Ops.WHERE, alu(Ops.CMPNE, ad, ad), knan, ad)
  sts = [UOp(Ops.STORE, dtypes.void, (iu, mx)), UOp(Ops.STORE, dtypes.void, (il, ml)), UOp(Ops.STORE, dtypes.void, (d2.index(c0), kul)),
         UOp(Ops.STORE, dtypes.void, (d3.index(c0), alu(Ops.AND, eq, kb))), UOp(Ops.STORE, dtypes.void, (d4.index(c0), kc)),
         UOp(Ops.STORE, dtypes.void, (d5.index(c0), kuc)), UOp(Ops.STORE, dtypes.void, (d6.index(c0), kh)),
         UOp(Ops.STORE, dtypes.void, (if_, fd)), UOp(Ops.STORE, dtypes.void, (id_, mxd)), UOp(Ops.STORE, dtypes.void, (d9.index(c0), ks))]
  lst = [c1.src[0], c1, d0, d1, d2, d3, d4, d5, d6, d7, d8, d9, c0.src[0], c0]
  for k in (ku, kl, kul, kb, kc, kuc, kh, kinf, knan, kd, ks, sh.src[1]): lst += [k.src[0], k]
  lst += [iu, lu, xo, sh, mx.src[0], mx, il, ll, ml, if_, lf, tr, fd, bc, eq, id_, ld, sq, ad, mxd.src[0], mxd]
  for s in sts:
    for x in s.src:
      if x not in lst:
        for y in x.src:
          if y not in lst: lst.append(y)
        lst.append(x)
    lst.append(s)
  # dedup keeping order (consts may repeat)
  out = []
  for u in lst:
    if u not in out: out.append(u)
  return "consts", out + [sink("consts", *sts)]

def prog_misc():
  # gated store (IF/ENDIF), a vector CAST, an unsigned vector, a pointer BITCAST, a BARRIER and an unbounded loop with an exit test
  c16, c4, c0, c2, c7 = [cc(x, dtypes.int) for x in (16, 4, 0, 2, 7)]
  d0, d1 = param(0, dtypes.float, 16), param(1, dtypes.uint, 16)
  r = rng(c4, 0, AxisType.LOOP); shl = alu(Ops.SHL, r, c2)
  s1 = UOp(Ops.SHRINK, dtypes.uint, (d1, shl, c4)); l1 = UOp(Ops.LOAD, dtypes.uint, (s1,))
  cv = UOp(Ops.CAST, dtypes.float, (l1,), dtypes.float); s0 = UOp(Ops.SHRINK, dtypes.float, (d0, shl, c4))
  g = alu(Ops.CMPLT, r, c2); iff = UOp(Ops.IF, dtypes.void, (g, s0)); st = UOp(Ops.STORE, dtypes.void, (s0, cv))
  ei = UOp(Ops.ENDIF, dtypes.void, (iff,)); e = UOp(Ops.END, dtypes.void, (ei, r))
  bc = UOp(Ops.BITCAST, dtypes.uint, (d0,), dtypes.uint); bar = UOp(Ops.BARRIER, dtypes.void, (e,))
  lp = UOp(Ops.RANGE, dtypes.void, (UOp(Ops.NOOP, dtypes.void, ()),), (1, AxisType.WEAK))
  i7 = bc.index(c7); l7 = UOp(Ops.LOAD, dtypes.uint, (i7,)); x = alu(Ops.XOR, l7, cc(1, dtypes.uint))
  st7 = UOp(Ops.STORE, dtypes.void, (i7, x)); cnd = alu(Ops.CMPNE, x, cc(0, dtypes.uint)); e2 = UOp(Ops.END, dtypes.void, (st7, lp, cnd))
  lst = [c16.src[0], c16, d0, d1, c4.src[0], c4, c2.src[0], c2, c7.src[0], c7, r, shl, s1, l1, cv, s0, g, iff, st, ei, e,
         bc, bar, lp.src[0], lp, i7, l7, x.src[1].src[0], x.src[1], x, st7, cnd.src[1].src[0], cnd.src[1], cnd, e2, sink("misc", e2, bar)]
  return "misc", lst

class GPULike(CStyleLanguage):
  # the base C-style dialect with GPU thread ids: checks SPECIAL and the non-clang defaults (no restrict, no typedefs)
  code_for_workitem = {"g": lambda x: f"blockIdx.{chr(120+int(x))}", "l": lambda x: f"threadIdx.{chr(120+int(x))}"}

def prog_special():
  c16, c4, c2 = cc(16, dtypes.int), cc(4, dtypes.int), cc(2.0, dtypes.float)
  d0, d1 = param(0, dtypes.float, 16), param(1, dtypes.float, 16)
  g = UOp(Ops.SPECIAL, dtypes.int, (c4,), "gidx0"); l = UOp(Ops.SPECIAL, dtypes.int, (c4,), "lidx1")
  a = alu(Ops.ADD, alu(Ops.MUL, g, c4), l); i1 = d1.index(a); v = UOp(Ops.LOAD, dtypes.float, (i1,)); m = alu(Ops.MUL, v, c2)
  i0 = d0.index(a); st = UOp(Ops.STORE, dtypes.void, (i0, m))
  return "E_4_4n1", [c16.src[0], c16, d0, d1, c4.src[0], c4, c2.src[0], c2, g, l, a.src[0], a, i1, v, m, i0, st, sink("E_4_4n1", st)]

if __name__ == "__main__":
  import sys
  ren = ClangRenderer(Target(device="CPU", arch="x86_64,native"))
  progs = (prog_add, prog_reduce, prog_idiv_half, prog_gated, prog_where_var, prog_vec4, prog_consts, prog_misc)
  for fn in progs:
    name, lst = fn()
    if "--cpp" in sys.argv:  # the expected strings, ready to paste into tests/renderer/test_cstyle.cpp
      print(f'const char* k_{fn.__name__[5:]} = R"TG({ren.render(lst)})TG";')
      continue
    print(f"===== {fn.__name__} ({len(lst)} uops)")
    for i, u in enumerate(lst): print(f"  {i:3d} {u.op} {u.dtype} {[lst.index(s) for s in u.src]} {u.arg!r}")
    print("----- source")
    print(ren.render(lst))
  name, lst = prog_special()
  src = GPULike(Target(device="CPU", arch="x86_64,native")).render(lst)
  print(f'const char* k_special = R"TG({src})TG";' if "--cpp" in sys.argv else src)
