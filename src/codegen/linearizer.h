#pragma once
// The linearizer (tinygrad's codegen/late/linearizer.py `linearize`): one kernel's SINK becomes the list of UOps the
// renderer receives, a toposort with priorities: PARAMs first (by slot), then BUFFERs, loads early, stores late,
// RANGEs as early and ENDs as late as their dependencies allow, nodes inside more loop iterations later.
#include <vector>

#include "uop/uop.h"

namespace tg {

// the program order tinygrad's linearize gives for `sink` (sink last)
std::vector<UOp> linearize(const UOp& sink);

// the RANGEs `u` runs inside, in tinygrad's order (UOp.ranges: ranges flow from sources, END/REDUCE/... close theirs)
std::vector<UOp> uop_ranges(const UOp& u);

}  // namespace tg
