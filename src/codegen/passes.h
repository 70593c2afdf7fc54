#pragma once
// The matchers of tinygrad's full_rewrite_to_sink that live outside the linearizer and the decompositions:
// codegen/simplify.py, the expander/reduce/load/devectorize passes of codegen/__init__.py, gpudims.py, late/coalesce.py,
// late/gater.py, and the symbolic.py rules only codegen uses. The pass list itself is in pipeline.cpp.
#include <unordered_map>

#include "renderer/cstyle.h"
#include "uop/upat.h"

namespace tg {

// ** codegen/simplify.py **
const PatternMatcher& pm_reduce_unparented();
const PatternMatcher& pm_reduce_collapse();  // a REDUCE without loads folds to closed form (arange, one-hot)
const PatternMatcher& pm_load_collapse();    // a REDUCE over a gated load of a loaded index becomes that load
// red's ranges folded out of u one at a time with pm (pm_reduce_collapse or its load variant); empty if one stays
UOp reduce_collapse(const UOp& red, UOp u, const PatternMatcher& pm);
const PatternMatcher& pm_split_ranges();     // ctx: std::unordered_map<UOp, UOp>
const PatternMatcher& pm_simplify_ranges();  // ctx: std::unordered_map<UOp, UOp>

// ** uop/symbolic.py rules outside sym() **
const PatternMatcher& sym_extra();  // sym's load/store/reduce/pow rules (combined after sym() by the pipeline)
const PatternMatcher& pm_fold_invalid_access();  // symbolic_simple's gated LOAD/STORE folding (added to it by the pipeline)
const PatternMatcher& pm_move_where_on_load();
const PatternMatcher& pm_clean_up_group_sink();
const PatternMatcher& pm_remove_invalid();

// ** codegen/__init__.py **
std::unordered_map<int64_t, int64_t> build_range_map(const UOp& sink, bool last_opt_outermost = false);  // UPCAST/UNROLL axis id -> position
const PatternMatcher& expander2();          // ctx: the range map
struct ReduceContext { int64_t acc_num = 0; };
const PatternMatcher& pm_reduce_local();    // ctx: ReduceContext
const PatternMatcher& pm_add_local_buffers();  // ctx: int64_t slot counter
const PatternMatcher& pm_expand_broadcast();
const PatternMatcher& pm_add_loads();
const PatternMatcher& devectorizer2();
const PatternMatcher& ew_devectorizer();
const PatternMatcher& pm_simplify_add_image();  // the float/half cast folds (image layouts themselves are not ported)
const PatternMatcher& pm_cast_float_alu();
const PatternMatcher& pm_casted_consts();   // run with walk
const PatternMatcher& pm_number_params();   // ctx: int64_t next slot; run with walk

// ** gpudims.py (ctx: the renderer) **
const PatternMatcher& pm_add_gpudims();

// ** late/coalesce.py, late/gater.py **
const PatternMatcher& indexing_simplify();
UOp memory_coalescing(const UOp& sink, const CStyleLanguage& ren);
const PatternMatcher& pm_move_gates_from_index();

// ** decomp/op.py and the renderer's extra matcher **
PatternMatcher get_simplifying_rewrite_patterns(OpSet ops);
PatternMatcher get_late_rewrite_patterns(OpSet ops, bool disable_fast_idiv);  // ctx: the renderer
const PatternMatcher& clang_extra_matcher();  // ClangRenderer.extra_matcher: float casts through float32, bfloat16 in software

// small helpers shared by the codegen files
UOp placeholder(const Shape& shape, DType dtype, int64_t slot, AddrSpace addrspace);
std::string colored(const std::string& s, const std::string& color);  // tinygrad's helpers.colored (ANSI)

}  // namespace tg
