# Writes tests/data/fp8_promotion.txt from tinygrad (a9069c177a): least_upper_dtype and can_lossless_cast for every
# pair of dtypes, fp8 included (the expectations of tests/uop/test_fp8.cpp).
# Run: PYTHONPATH=<tinygrad checkout> /usr/bin/python3 tests/tools/gen_fp8_promotion.py > tests/data/fp8_promotion.txt
from tinygrad.dtype import dtypes, least_upper_dtype, can_lossless_cast
names = ["weakint", "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "weakfloat",
         "fp8e4m3", "fp8e5m2", "fp8e4m3fnuz", "fp8e5m2fnuz", "float16", "bfloat16", "float32", "float64"]
def nm(d): return repr(d).removeprefix("dtypes.")
print("# a b least_upper_dtype(a,b) can_lossless_cast(a,b)")
for a in names:
  for b in names:
    da, db = getattr(dtypes, a), getattr(dtypes, b)
    print(a, b, nm(least_upper_dtype(da, db)), int(can_lossless_cast(da, db)))
