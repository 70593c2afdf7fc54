// Linear algebra built from other Tensor ops (tinygrad's mixin/op.py): newton_schulz.
#include "tg/tensor.h"

namespace tg {

Tensor Tensor::newton_schulz(int64_t steps, const std::vector<double>& params, double eps) const {
  if (ndim() < 2) throw Error("newton_schulz: needs two or more dims, got " + shape_str());
  if (steps < 0) throw Error("newton_schulz: steps must be >= 0, got " + std::to_string(steps));
  if (params.empty()) throw Error("newton_schulz: needs at least one polynomial coefficient");
  if (shape()[size_t(ndim() - 2)] > shape()[size_t(ndim() - 1)]) return transpose(-2, -1).newton_schulz(steps, params, eps).transpose(-2, -1);
  Tensor g = *this / (square().sum({-2, -1}, true).sqrt() + eps);
  for (int64_t s = 0; s < steps; s++) {
    Tensor gg = g.matmul(g.transpose(-2, -1)), term = g, acc = g * params[0];
    for (size_t i = 1; i < params.size(); i++) acc = acc + (term = gg.matmul(term)) * params[i];
    g = acc;
  }
  return g;
}

}  // namespace tg
