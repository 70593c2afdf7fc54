// The fp8 formats written out from their specifications (OCP 8-bit floating point v1.0 for float8_e4m3fn and
// float8_e5m2; the "fnuz" variants: finite, no negative zero, 0x80 the only NaN, bias one larger), as the oracle of
// tests/uop/test_fp8.cpp and tests/conformance/test_fp8.cpp. Decoding is the textbook formula; encoding searches all
// 256 patterns for the nearest value (ties to the even pattern), never the library's bit tricks.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "tg/dtype.h"

namespace tg::test {

struct Fp8Spec {
  DType dtype;
  int ebits, mbits, bias;
  bool fnuz;
  double max, min_subnormal;  // stated by the specifications, checked against the decoding
};

inline const std::vector<Fp8Spec>& fp8_specs() {
  static const std::vector<Fp8Spec> s{
      {dtypes::fp8e4m3, 4, 3, 7, false, 448.0, 0.001953125},           // 2**-9
      {dtypes::fp8e5m2, 5, 2, 15, false, 57344.0, 1.52587890625e-05},  // 2**-16
      {dtypes::fp8e4m3fnuz, 4, 3, 8, true, 240.0, 0.0009765625},       // 2**-10
      {dtypes::fp8e5m2fnuz, 5, 2, 16, true, 57344.0, 7.62939453125e-06},  // 2**-17
  };
  return s;
}

// (-1)^s * 2^(e - bias) * (1 + m / 2^M), or (-1)^s * 2^(1 - bias) * (m / 2^M) for e = 0; the special patterns first
inline double fp8_spec_decode(const Fp8Spec& f, unsigned b) {
  unsigned s = b >> 7, e = (b >> f.mbits) & ((1u << f.ebits) - 1), m = b & ((1u << f.mbits) - 1);
  unsigned emax = (1u << f.ebits) - 1, mmax = (1u << f.mbits) - 1;
  if (f.fnuz && b == 0x80) return std::numeric_limits<double>::quiet_NaN();
  if (!f.fnuz && f.ebits == 4 && e == emax && m == mmax) return std::numeric_limits<double>::quiet_NaN();
  if (!f.fnuz && f.ebits == 5 && e == emax) return m ? std::numeric_limits<double>::quiet_NaN() : (s ? -INFINITY : INFINITY);
  double frac = double(m) / double(1u << f.mbits);
  double mag = e == 0 ? std::pow(2.0, 1 - f.bias) * frac : std::pow(2.0, int(e) - f.bias) * (1.0 + frac);
  return s ? -mag : mag;
}

// the pattern nearest to finite x (ties to the even pattern), |x| beyond the largest finite value saturating to it
inline unsigned fp8_spec_nearest(const Fp8Spec& f, double x) {
  double a = std::fabs(x);
  unsigned best = 0;
  for (unsigned b = 1; b < 0x80; b++) {
    double v = fp8_spec_decode(f, b);
    if (!std::isfinite(v)) continue;
    double d = std::fabs(v - a), db = std::fabs(fp8_spec_decode(f, best) - a);
    if (v == f.max && a >= f.max) d = -1;  // at or past the largest value (where the distances round together in a double)
    if (d < db || (d == db && b % 2 == 0)) best = b;
  }
  if (best == 0 && f.fnuz) return 0;  // no negative zero
  return best | (std::signbit(x) ? 0x80u : 0u);
}

// what a kernel's cast float -> fp8 gives: nearest, saturating (inf included); NaN gives a NaN pattern (checked by
// decoding, so returned as nullopt-like 0x100)
inline unsigned fp8_spec_kernel_cast(const Fp8Spec& f, double x) {
  if (std::isnan(x)) return 0x100;
  if (std::isinf(x)) return fp8_spec_nearest(f, x > 0 ? f.max : -f.max);
  return fp8_spec_nearest(f, x);
}

}  // namespace tg::test
