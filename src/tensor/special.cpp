// Inverse trigonometric and hyperbolic functions, erf, and float classification (isnan, isinf, isclose) on Tensor
// (tinygrad's mixin/elementwise.py and op.py), composed from existing ops in tinygrad's order, so autograd flows
// through them unchanged.
#include <cmath>
#include <numbers>

#include "tensor/tensor_impl.h"

namespace tg {

namespace {
// Horner's rule as tinygrad's helpers.polyN: c[0]*x^(n-1) + ... + c[n-1], starting from 0.0 * x
Tensor poly_n(const Tensor& x, std::initializer_list<double> coeffs) {
  Tensor acc = x.mul(0.0, true);
  bool first = true;
  for (double c : coeffs) acc = (first ? acc : acc * x) + c, first = false;
  return acc;
}
}  // namespace

// ***** 1. inverse trigonometric, erf *****

Tensor Tensor::asin() const {
  // Abramowitz & Stegun 4.4.46 on |x|, the sign put back
  Tensor a = abs();
  Tensor p = poly_n(a, {-0.0012624911, 0.0066700901, -0.0170881256, 0.0308918810, -0.0501743046, 0.0889789874, -0.2145988016, 1.5707963050});
  return sign() * (a.sub(1.0, true).sqrt() * p).sub(std::numbers::pi / 2, true);
}
Tensor Tensor::acos() const { return asin().sub(std::numbers::pi / 2, true); }
Tensor Tensor::atan() const { return div((*this * *this).add(1, true).sqrt()).asin(); }
Tensor Tensor::erf() const {
  // Abramowitz & Stegun 7.1.26
  Tensor t = abs().mul(0.3275911, true).add(1.0, true).div(1.0, true);
  return sign() * (t * poly_n(t, {1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592}) * (-square()).exp()).sub(1.0, true);
}

// ***** 2. hyperbolic *****

Tensor Tensor::sinh() const { return (exp() - neg().exp()) / 2; }
Tensor Tensor::cosh() const { return (exp() + neg().exp()) / 2; }
Tensor Tensor::atanh() const { return (add(1, true) / sub(1, true)).log() / 2; }
Tensor Tensor::asinh() const { return (*this + (square() + 1).sqrt()).log(); }
Tensor Tensor::acosh() const { return (*this + (square() - 1).sqrt()).log(); }

// ***** 3. classification *****

Tensor Tensor::isnan() const { return ne(*this); }
Tensor Tensor::isinf(bool detect_positive, bool detect_negative) const {
  return eq(INFINITY) * detect_positive + eq(-INFINITY) * detect_negative;
}
Tensor Tensor::isfinite() const { return (isinf() | isnan()).logical_not(); }
Tensor Tensor::isclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  try {
    Tensor finite_close = isfinite() & other.isfinite() & ((*this - other).abs() <= other.abs().mul(rtol, true).add(atol, true));
    Tensor infinite_close = (isinf() | other.isinf()) & eq(other);
    Tensor nan_close = (isnan() & other.isnan()) & equal_nan;
    return finite_close | infinite_close | nan_close;
  } catch (const Error& e) {
    throw Error(std::string("isclose: ") + e.what());
  }
}
bool Tensor::allclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  return isclose(other, rtol, atol, equal_nan).all().item<bool>();
}

}  // namespace tg
