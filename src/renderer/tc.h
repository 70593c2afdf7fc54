#pragma once
// tinygrad's codegen/opt/tc.py: a tensor core (a warp's matrix multiply-accumulate D = A * B + C) described by the opts
// that shape a kernel's N, M and K ranges into its threads, upcasts and reduces, and the swizzle that maps those axes onto
// what each thread holds of A and B. The tables for CUDA (sm_75, sm_80, sm_89+) are the ones tinygrad gives its renderer.
#include <array>
#include <string>
#include <vector>

#include "tg/dtype.h"

namespace tg {

struct TensorCore {
  std::array<int64_t, 3> dims{};  // N, M, K
  int64_t threads = 0;            // the threads of the warp that share one op
  std::array<int64_t, 3> elements_per_thread{};  // of A, B and C
  DType dtype_in, dtype_out;
  std::vector<std::string> opts;  // "u0" upcasts dim 0 by 2, "l1" localizes dim 1 by 2, in this order
  // for A and B: the (local, upcast, reduce) axes each of the kernel's l<i>, u<i>, r<i> axes stands for
  std::array<std::array<std::vector<std::string>, 3>, 2> swizzle;

  int64_t reduce_axes() const;  // K as log2(K) axes of 2
  std::vector<std::string> base_shape_str() const;  // the opts' axes, then the reduce axes: l0 l1 u0 ... r0 r1 ...
  std::vector<std::string> base_upcast_axes() const;  // the upcast then reduce axes, last first
  // for A and B: the permutation of shape_str's axes the swizzle asks for
  std::array<std::vector<int64_t>, 2> permutes_for_shape_str(const std::vector<std::string>& shape_str) const;
  std::string str() const;  // WMMA_8_16_16_half_float
};

// the tensor cores of a CUDA arch ("sm_90"): none before sm_75
std::vector<TensorCore> cuda_tensor_cores(const std::string& arch);

}  // namespace tg
