#pragma once
// SIMD CPU kernels that stream a matrix past a vector (decode's matrix-vector products): each step of the loop around
// the reduce reads a block of rows nothing else reads, a few cache lines per row, too short a run for the hardware
// prefetcher to get ahead of. Each such load also prefetches what it reads in the loop's next step (PREFETCH=0: off).
#include "uop/uop.h"

namespace tg {

UOp add_prefetches(const UOp& sink);

}  // namespace tg
