#pragma once
// The expander of tinygrad's codegen/__init__.py (once its own file, codegen/late/expander.py): UPCAST/UNROLL ranges
// become shaped constants, REDUCEs become accumulators in registers, STAGEs become local buffers.
#include <unordered_map>

#include "uop/upat.h"

namespace tg {

// UPCAST/UNROLL axis id -> its position among the expanded axes
std::unordered_map<int64_t, int64_t> build_range_map(const UOp& sink, bool last_opt_outermost = false);
const PatternMatcher& expander2();  // ctx: the range map
struct ReduceContext { int64_t acc_num = 0; };
const PatternMatcher& pm_wmma_add();           // an add into a WMMA's result becomes its accumulator
const PatternMatcher& pm_reduce_local();       // ctx: ReduceContext
const PatternMatcher& pm_add_local_buffers();  // ctx: int64_t slot counter
// tinygrad's UOp.placeholder: prod(shape) elements in a slot (a PARAM when GLOBAL, else a BUFFER), reshaped to shape
UOp placeholder(const Shape& shape, DType dtype, int64_t slot, AddrSpace addrspace);

}  // namespace tg
