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

struct Callified {
  UOp call;                                  // CALL(SINK(assigns...), *input buffers)
  std::vector<std::pair<UOp, UOp>> becomes;  // as-built tensor node -> the node it now is (a view of its buffer)
};

// the SINK's sources are the tensors to realize
Callified transform_to_call(const UOp& big_sink);
// the CALL from transform_to_call -> LINEAR(CALL(kernel SINK or COPY, *BUFFERs)...), and the bound variable values
std::pair<UOp, VarVals> create_linear_with_vars(const UOp& call);

}  // namespace tg
