#pragma once
// From the tensor graph of one CALL to the kernel graph (tinygrad's schedule/rangeify.py get_kernel_graph): movement
// ops become index math on RANGEs, realized values become STOREs into BUFFERs, and each STORE is split into its own
// kernel, a CALL of a SINK (with KernelInfo) on the buffers it touches.
//
//   UOp kernels = get_kernel_graph(function);  // SINK(AFTER(buffer, CALL(SINK(kernel AST), *buffers))...)
#include <unordered_map>
#include <vector>

#include "uop/upat.h"

namespace tg {

// the passes of get_kernel_graph, in order (each is a matcher; get_kernel_graph says how each one is run); pm_mops is
// in uop/movement.h, pm_reduce_simplify and pm_flatten_range in codegen/simplify.h
// FUNCTION calls replaced by their bodies on the arguments (GETTUPLE of the body's TUPLE resolved)
const PatternMatcher& pm_inline_functions();
UOp inline_functions(const UOp& x);
const PatternMatcher& earliest_rewrites();   // mop_cleanup, size 0, split reduce, store/copy cleanups (bottom up)
const PatternMatcher& pm_copy_to_store();     // COPY -> STORE into a new BUFFER (ctx: int64_t slot counter)
const PatternMatcher& pm_const_buffer_folding();
const PatternMatcher& pm_remove_bufferize();  // inline a STAGE where recomputing is cheap
struct LimitBufsContext {
  std::unordered_map<UOp, std::vector<UOp>> buf_cache;
  int64_t range_idx = 0;  // where the ranges of new STAGEs start
};
const PatternMatcher& pm_limit_bufs();        // stage inputs when a kernel would read too many buffers (ctx: LimitBufsContext)
const PatternMatcher& pm_add_buffers();       // STAGE -> STORE into a BUFFER (ctx: int64_t slot counter)
const PatternMatcher& pm_add_param_range_tags();
const PatternMatcher& split_kernels();        // each closed STORE/END -> CALL of a kernel SINK
const PatternMatcher& pm_no_indexing_calls(); // CALL arguments are buffers, not INDEX/SHRINK views

// function: the SINK body of the CALL transform_to_call builds (PARAMs for inputs, STORE/AFTER for outputs)
UOp get_kernel_graph(const UOp& function);

}  // namespace tg
