#pragma once
// tinygrad's codegen/late/coalesce.py: index simplification under the load's validity, adjacent loads and stores
// folded into vector ones, and the float/half cast folds of pm_simplify_add_image (image layouts are not ported).
#include "renderer/cstyle.h"
#include "uop/upat.h"

namespace tg {

const PatternMatcher& indexing_simplify();
const PatternMatcher& pm_simplify_add_image();
UOp memory_coalescing(const UOp& sink, const CStyleLanguage& ren);

}  // namespace tg
