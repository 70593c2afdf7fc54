#pragma once
// Autograd on UOp graphs (tinygrad's mixin/gradient.py): the gradient of root with respect to every node between it
// and the targets, as lazy UOp graphs.
#include <unordered_map>
#include <unordered_set>

#include "tg/tensor.h"
#include "uop/args.h"
#include "uop/uop.h"

namespace tg {

// root_grad flows into root; the result maps each node on a path from root to a target (and each target reached) to
// its gradient. DETACH stops the flow; a target no path reaches is absent.
std::unordered_map<UOp, UOp> compute_gradient(const UOp& root, const UOp& root_grad, const std::unordered_set<UOp>& targets);

// a FUNCTION's CallInfo: its name and, where given, its gradient function lifted from Tensors to UOps
CallInfo call_info_with(Tensor::CallGradFxn grad_fxn, std::optional<std::string> name);

}  // namespace tg
