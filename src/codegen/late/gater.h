#pragma once
// tinygrad's codegen/late/gater.py: gates move from an INVALID index onto the LOAD/STORE (the renderer cannot
// render an INVALID index), and a WHERE on a gated load folds into the load's alternative value.
#include "uop/upat.h"

namespace tg {

const PatternMatcher& pm_move_gates_from_index();

}  // namespace tg
