#pragma once
// tinygrad's renderer/__init__.py Renderer: what a target offers the kernel optimizer (threads, locals, shared memory,
// tensor cores, vector width), as plain fields a dialect sets in its constructor. The settings narrow them per kernel
// (THREADS, NUM_CPU_THREADS, SIMD: codegen/opt/postrange.h caps_of); the fields are the hardware's.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "renderer/tc.h"

namespace tg {

class Renderer {
 public:
  virtual ~Renderer() = default;
  std::string device;  // the device kind it renders for ("CPU")
  bool has_local = false, has_threads = false, has_shared = false;
  std::array<int64_t, 3> global_max{0x8FFFFFFF, 0x8FFFFFFF, 0x8FFFFFFF}, local_max{0x8FFFFFFF, 0x8FFFFFFF, 0x8FFFFFFF};
  int64_t shared_max = 32768;  // bytes of shared memory a kernel may use
  std::vector<TensorCore> tensor_cores;
  // floats in the target's vector register (clang: 16 with AVX-512, else 8); 0: the C has no SIMD shaping
  int64_t vector_width = 0;
  // the most int32 lanes of one x86 pmaddwd on the host (8: AVX2, 16: AVX512BW); 0: none (pm_int_madd)
  int64_t pmaddwd_lanes = 0;
  // the most int32 lanes of one x86 vpdpbusd (8: AVX-VNNI, 16: AVX512-VNNI); 0: none (pm_int_dot4)
  int64_t vpdpbusd_lanes = 0;
  // what besides the class decides its output: the program memo keys it (a test may build two renderers of one class
  // that render differently)
  virtual std::string identity() const;
};

}  // namespace tg
