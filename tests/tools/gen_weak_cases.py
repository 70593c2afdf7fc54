# Prints what tinygrad's pm_lower_index_dtype makes of a few weak-dtype graphs (the expectations of tests/uop/test_weak.cpp).
# Run: PYTHONPATH=<tinygrad checkout> /usr/bin/python3 tests/tools/gen_weak_cases.py
from tinygrad.uop.ops import UOp, graph_rewrite
from tinygrad.uop.weak import pm_lower_index_dtype
from tinygrad.dtype import dtypes
r0, r1 = UOp.range(16, 0), UOp.range(8, 1)
a = UOp.variable("a", 0, 2**40)
b = UOp.variable("b", 0, 10)
cases = {
 "range_sum": (r0*4+r1).cast(dtypes.int),
 "cmp": (r0*4+r1 < 10),
 "where": (r0 < 3).where(r0, 5).cast(dtypes.int),
 "big": (a*2+1).cast(dtypes.long),
 "cast_float": (b*3).cast(dtypes.float),
 "sink": UOp.sink((r0+1).cast(dtypes.int), (b < 5)),
}
for k, e in cases.items():
  r = graph_rewrite(e, pm_lower_index_dtype, ctx={})
  print("#", k); print(repr(r))
