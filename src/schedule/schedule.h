#pragma once
// From a tensor graph to the LINEAR of CALLs that realizes it (tinygrad's tensor.py transform_to_call and
// schedule/__init__.py create_linear_with_vars).
//
//   auto [call, becomes] = transform_to_call(UOp::sink({a, b}));   // callify
//   apply becomes to every live tensor (the tensor layer owns that), then
//   auto [linear, vars] = create_linear_with_vars(call);           // rangeify, kernel split, order, memory plan
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "uop/uop.h"

namespace tg {

using VarVals = std::map<std::string, int64_t>;

// what the schedule caches key on: a graph and settings().key() (the knobs that change kernels, among them those the
// scheduler reads: MAX_KERNEL_BUFFERS, SPLIT_REDUCEOP, REDUCEOP_SPLIT_*, NO_MEMORY_PLANNER, SIMD), so a graph
// scheduled under other values is scheduled again
struct ScheduleKey {
  UOp graph;
  uint32_t settings_key;
  static ScheduleKey of(const UOp& graph);
  bool operator==(const ScheduleKey&) const = default;
};
struct ScheduleKeyHash {
  size_t operator()(const ScheduleKey& k) const;
};

struct Callified {
  UOp call;                                  // CALL(SINK(assigns...), *input buffers)
  std::vector<std::pair<UOp, UOp>> becomes;  // as-built tensor node -> the node it now is (a view of its buffer)
};

// the SINK's sources are the tensors to realize
Callified transform_to_call(const UOp& big_sink);
// the CALL from transform_to_call -> LINEAR(CALL(kernel SINK or COPY, *BUFFERs)...), and the bound variable values
std::pair<UOp, VarVals> create_linear_with_vars(const UOp& call);

// both of the above for a tensor graph, through the realize cache (structure_cache.cpp): the same structure on other
// buffers reuses the schedule. becomes as in Callified, over the nodes of big_sink
struct Scheduled {
  UOp linear;
  VarVals vars;
  std::vector<std::pair<UOp, UOp>> becomes;
};
Scheduled schedule_tensor_graph(const UOp& big_sink);

}  // namespace tg
