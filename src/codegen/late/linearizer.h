#pragma once
// The linearizer (tinygrad's codegen/late/linearizer.py `linearize`): one kernel's SINK becomes the list of UOps the
// renderer receives, a toposort with priorities: PARAMs first (by slot), then BUFFERs, loads early, stores late,
// RANGEs as early and ENDs as late as their dependencies allow, nodes inside more loop iterations later.
#include <unordered_map>
#include <vector>

#include "uop/upat.h"
#include "uop/uop.h"

namespace tg {

// the program order tinygrad's linearize gives for `sink` (sink last)
std::vector<UOp> linearize(const UOp& sink);

// the RANGEs `u` runs inside, in tinygrad's order (UOp.ranges: ranges flow from sources, END/REDUCE/... close theirs)
std::vector<UOp> uop_ranges(const UOp& u);

// The control flow tinygrad adds before linearizing ("add control flow" in full_rewrite_to_sink): loops that are
// siblings (ended by the same END or both directly under the SINK) are chained, so that a later loop's RANGE gets the
// earlier loop's END as an extra source. edges maps such a RANGE to the END it must come after.
struct CFGContext {
  explicit CFGContext(const UOp& sink);
  std::unordered_map<UOp, UOp> edges;
};
// tinygrad's graph_rewrite(sink, pm_add_control_flow, ctx=CFGContext(sink), bottom_up=True): each edge's RANGE gets
// its END appended as a source
UOp add_control_flow(const UOp& sink);

// END of several ranges -> nested ENDs of one range each, innermost (highest axis) first; void/bool sources (the loop
// of a while and its exit condition) stay together on the outermost END (tinygrad's pm_split_ends, part of the final
// rewrite before control flow is added)
const PatternMatcher& pm_split_ends();

}  // namespace tg
