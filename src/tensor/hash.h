#pragma once
// tinygrad's _hash_1mb, which Tensor::hash builds its tree from and nn::state's fs_store keys chunks with
#include "tg/tensor.h"

namespace tg {

// rows: (n, 1 MiB) uint8 -> (n, 16) uint8: shake_128 of each 4 KiB piece, then shake_128 of those 4096 digest bytes
Tensor hash_1mb(const Tensor& rows);

}  // namespace tg
