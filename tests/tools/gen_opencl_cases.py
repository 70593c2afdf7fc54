#!/usr/bin/env python3
# Prints what tinygrad's OpenCLRenderer emits for the hand-linearized programs of tests/renderer/test_cstyle.cpp (built
# by gen_cstyle_cases.py), as the expected strings of tests/renderer/test_opencl.cpp.
# Run against tinygrad at the reference commit:  PYTHONPATH=/path/to/tinygrad python3 tests/tools/gen_opencl_cases.py
import os, sys
sys.path.insert(0, os.path.dirname(__file__))
from gen_cstyle_cases import prog_add, prog_reduce, prog_idiv_half, prog_gated, prog_where_var, prog_vec4, prog_consts, prog_misc, prog_special
from tinygrad.renderer.cstyle import OpenCLRenderer
from tinygrad.helpers import Target

if __name__ == "__main__":
  ren = OpenCLRenderer(Target(device="CL", arch="cl_khr_fp16"))
  for fn in (prog_add, prog_reduce, prog_idiv_half, prog_gated, prog_where_var, prog_vec4, prog_consts, prog_misc, prog_special):
    name, lst = fn()
    try: print(f'const char* k_{fn.__name__[5:]} = R"TG({ren.render(lst)})TG";')
    except KeyError as e: print(f'// {fn.__name__}: OpenCLRenderer has no {e.args[0]}')
