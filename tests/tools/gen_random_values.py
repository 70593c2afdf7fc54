#!/usr/bin/env python3
"""Print tinygrad's values for the seeded random ops that tests/conformance/test_tensor_create.cpp pins
(TensorCreate.RandomMatchesTinygrad): the same threefry graph gives the same bits, so our values must be these.

Usage (the reference tinygrad as pure Python, on its PYTHON device):
  TINYGRAD_PATH=/work/ref DEV=PYTHON /usr/bin/python3 tests/tools/gen_random_values.py
"""
import os, sys
sys.path.insert(0, os.environ.get("TINYGRAD_PATH", "."))
from tinygrad import Tensor, dtypes

Tensor.manual_seed(3); print("randperm(8), seed 3:", Tensor.randperm(8).tolist())
Tensor.manual_seed(3); print("normal(4, mean=2, std=0.5), seed 3:", Tensor.normal(4, mean=2.0, std=0.5).tolist())
Tensor.manual_seed(3); print("kaiming_normal(2, 3, a=0.5), seed 3:", Tensor.kaiming_normal(2, 3, a=0.5).tolist())
Tensor.manual_seed(5); print("multinomial([1,2,3,4], 6, replacement), seed 5:", Tensor([1.0, 2.0, 3.0, 4.0]).multinomial(6, replacement=True).tolist())
Tensor.manual_seed(5)
print("multinomial([[1,2,3,4],[4,.5,1,1]], 3), seed 5:", Tensor([[1.0, 2.0, 3.0, 4.0], [4.0, 0.5, 1.0, 1.0]]).multinomial(3).tolist())
print("random_bits(key=[7,9], counter=[1,0], 5):",
      Tensor.random_bits(Tensor([7, 9], dtype=dtypes.uint32), Tensor([1, 0], dtype=dtypes.uint32), 5).tolist())
