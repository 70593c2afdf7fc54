#pragma once
// tinygrad's codegen/simplify.py: range flattening, splitting and merging, and reduce simplification (a REDUCE over a
// range folds to closed form where it can: arange, one-hot, indexing a tensor by a tensor). Codegen and the
// scheduler (pm_reduce_simplify, pm_flatten_range) both use it.
#include <unordered_map>

#include "uop/upat.h"

namespace tg {

const PatternMatcher& pm_flatten_range();    // REDUCE/END close only real RANGEs
// the RANGEs that END/REDUCE sources close, in UOp.ranges order: a RANGE source only itself, not the ranges its end
// reads (a range clipped by pm_clip_reduce_gates runs inside them), an expression of ranges (r*4+r2) all of its ranges
std::vector<UOp> closed_ranges(const std::vector<UOp>& srcs);
const PatternMatcher& pm_simplify_ranges();  // merge adjacent ranges, shrink gated ones (ctx: std::unordered_map<UOp, UOp>)
const PatternMatcher& pm_split_ranges();     // split a range taken mod c (ctx: std::unordered_map<UOp, UOp>)
// a REDUCE(ADD) of a product gated on `r + e < b` (or >=) runs r over the gate's range only (a padded window's borders)
const PatternMatcher& pm_clip_reduce_gates();

const PatternMatcher& pm_reduce_unparented();  // a REDUCE drops the ranges its source does not use
const PatternMatcher& pm_reduce_collapse();    // a REDUCE without loads folds to closed form (arange, one-hot)
// red's ranges folded out of u one at a time with pm (pm_reduce_collapse or its load variant); empty if one stays
UOp reduce_collapse(const UOp& red, UOp u, const PatternMatcher& pm = pm_reduce_collapse());
const PatternMatcher& pm_reduce_simplify();  // pm_reduce_unparented + reduce_collapse on every ADD REDUCE
const PatternMatcher& pm_load_collapse();    // a REDUCE over a gated load of a loaded index becomes that load

}  // namespace tg
