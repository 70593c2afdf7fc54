#pragma once
// tinygrad's codegen/decomp/op.py: the ops a renderer lacks, built from the ones it has.
#include "uop/upat.h"

namespace tg {

PatternMatcher get_simplifying_rewrite_patterns(OpSet ops);  // integer division/modulo, threefry2x32, MAX
PatternMatcher get_late_rewrite_patterns(OpSet ops, bool disable_fast_idiv);  // shifts, NEG/SUB, comparisons, MULACC, FDIV (ctx: the renderer)

}  // namespace tg
