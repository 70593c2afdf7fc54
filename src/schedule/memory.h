#pragma once
// The memory planner (tinygrad's schedule/memory.py): intermediate BUFFERs whose lifetimes in the LINEAR do not overlap
// share one arena per device; each becomes a byte range of it (a SHRINK of the arena, BITCAST to its dtype).
#include <unordered_set>

#include "uop/uop.h"

namespace tg {

// held: buffers that outlive the LINEAR (its outputs and inputs); NO_MEMORY_PLANNER=1 turns planning off
UOp memory_plan_rewrite(const UOp& linear, const std::unordered_set<UOp>& held);

}  // namespace tg
