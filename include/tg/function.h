#pragma once
// tinygrad's @function: a callable whose every call records the graph its body builds as one FUNCTION of the inputs.
//
//   tg::Function f([](const std::vector<tg::Tensor>& in) { return std::vector{(in[0] * in[1]).relu()}; });
//   tg::Tensor y = f({a, b})[0];    // lazy, as (a * b).relu() would be; gradients reach a and b
//
// The inputs become the body's placeholders (Tensor::as_param), so the FUNCTION is the body applied to them; it is
// inlined when scheduled. A tensor the body reads that is not an input (a weight the lambda captured, say) is an
// implicit input: an error naming it, unless allow_implicit, which passes it as a further argument (without gradient).
#include <string>
#include <vector>

#include "tg/tensor.h"

namespace tg {

struct FunctionOpts {
  bool allow_implicit = false;
  Tensor::CallGradFxn grad_fxn = {};  // its gradient (one output), instead of differentiating the body
  std::string name = {};
};

class Function {
 public:
  using Body = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
  explicit Function(Body body, FunctionOpts opts = {}) : body_(std::move(body)), opts_(std::move(opts)) {}
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;

 private:
  Body body_;
  FunctionOpts opts_;
};

}  // namespace tg
