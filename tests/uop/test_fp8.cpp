// The fp8 dtypes: table entries, tinygrad's promotion lattice and lossless casts (tests/data/fp8_promotion.txt,
// written from tinygrad by tests/tools/gen_fp8_promotion.py), and float_to_fp8 / fp8_to_float (constant folding and
// host data) against the formats written out in tests/support/fp8_spec.h.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "support/fp8_spec.h"
#include "tg/dtype.h"
#include "tg/error.h"

using namespace tg;
using namespace tg::test;

namespace {
std::string S(DType d) {
  std::ostringstream os;
  os << d;
  return os.str();
}
bool same_value(double a, double b) { return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b)); }
}  // namespace

TEST(Fp8, TableEntries) {
  struct Row { DType d; const char *name, *c_name; };
  const Row rows[] = {{dtypes::fp8e4m3, "fp8e4m3", "float8_e4m3"}, {dtypes::fp8e5m2, "fp8e5m2", "float8_e5m2"},
                      {dtypes::fp8e4m3fnuz, "fp8e4m3fnuz", "float8_e4m3fnuz"}, {dtypes::fp8e5m2fnuz, "fp8e5m2fnuz", "float8_e5m2fnuz"}};
  for (auto& r : rows) {
    EXPECT_EQ(r.d.name(), r.name);
    EXPECT_EQ(r.d.c_name(), r.c_name);
    EXPECT_EQ(S(r.d), std::string("dtypes.") + r.name);
    EXPECT_EQ(r.d.bitsize(), 8);
    EXPECT_EQ(r.d.itemsize(), 1);
    EXPECT_EQ(r.d.fmt(), 0);
    EXPECT_TRUE(r.d.is_float() && r.d.is_fp8());
    EXPECT_FALSE(r.d.is_int() || r.d.is_unsigned() || r.d.is_weak());
    EXPECT_EQ(dtypes::from_name(r.name), r.d);
    EXPECT_TRUE(std::isinf(r.d.min().as_double()) && r.d.min().as_double() < 0);  // tinygrad: a float's min/max are -inf/inf
    EXPECT_TRUE(std::isinf(r.d.max().as_double()) && r.d.max().as_double() > 0);
    EXPECT_EQ(strong_dtype(r.d), r.d);
    EXPECT_EQ(weak_dtype(r.d), dtypes::weakfloat);
    EXPECT_EQ(least_upper_float(r.d), r.d);
    EXPECT_EQ(sum_acc_dtype(r.d), dtypes::float32);
  }
  EXPECT_TRUE(dtypes::fp8e4m3fnuz.is_fnuz() && dtypes::fp8e5m2fnuz.is_fnuz());
  EXPECT_FALSE(dtypes::fp8e4m3.is_fnuz() || dtypes::fp8e5m2.is_fnuz() || dtypes::float16.is_fp8());
  // tinygrad's order: same priority and size, then by name
  EXPECT_TRUE(dtypes::fp8e4m3 < dtypes::fp8e4m3fnuz && dtypes::fp8e4m3fnuz < dtypes::fp8e5m2 && dtypes::fp8e5m2 < dtypes::fp8e5m2fnuz);
  EXPECT_TRUE(dtypes::weakfloat < dtypes::fp8e4m3 && dtypes::fp8e5m2fnuz < dtypes::float16);
  EXPECT_THROW(float_to_fp8(1.0, dtypes::float16), Error);
  EXPECT_THROW(fp8_to_float(0, dtypes::uint8), Error);
}

TEST(Fp8, PromotionMatchesTinygrad) {
  std::ifstream in(std::string(TG_TEST_DATA) + "/fp8_promotion.txt");
  ASSERT_TRUE(in) << "tests/data/fp8_promotion.txt";
  int checked = 0, fp8_rows = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string a, b, lub;
    int lossless = -1;
    ASSERT_TRUE(ls >> a >> b >> lub >> lossless) << line;
    DType da = dtypes::from_name(a), db = dtypes::from_name(b);
    EXPECT_EQ(least_upper_dtype({da, db}), dtypes::from_name(lub)) << line;
    EXPECT_EQ(can_lossless_cast(da, db), lossless == 1) << line;
    checked++, fp8_rows += da.is_fp8() || db.is_fp8();
  }
  EXPECT_EQ(checked, 19 * 19);
  EXPECT_EQ(fp8_rows, 19 * 19 - 15 * 15);
  // three at once goes through the lattice, not the pair table
  EXPECT_EQ(least_upper_dtype({dtypes::fp8e4m3, dtypes::fp8e4m3fnuz, dtypes::int8}), dtypes::float16);
  EXPECT_EQ(least_upper_dtype({dtypes::fp8e5m2, dtypes::bfloat16, dtypes::weakfloat}), dtypes::bfloat16);
}

TEST(Fp8, DecodeAll256Patterns) {
  for (const Fp8Spec& f : fp8_specs()) {
    double max = 0, min_pos = INFINITY;
    int nans = 0, infs = 0;
    for (unsigned b = 0; b < 256; b++) {
      double want = fp8_spec_decode(f, b), got = fp8_to_float(uint8_t(b), f.dtype);
      EXPECT_TRUE(same_value(got, want)) << S(f.dtype) << " 0x" << std::hex << b << ": " << got << " vs " << want;
      nans += std::isnan(got), infs += std::isinf(got);
      if (std::isfinite(got)) max = std::max(max, got), min_pos = got > 0 ? std::min(min_pos, got) : min_pos;
    }
    EXPECT_EQ(max, f.max) << S(f.dtype);
    EXPECT_EQ(min_pos, f.min_subnormal) << S(f.dtype);
    // e4m3fn: S.1111.111; e5m2: S.11111.{01,10,11} and two infs; fnuz: 0x80 alone
    EXPECT_EQ(nans, f.fnuz ? 1 : f.ebits == 4 ? 2 : 6) << S(f.dtype);
    EXPECT_EQ(infs, !f.fnuz && f.ebits == 5 ? 2 : 0) << S(f.dtype);
  }
  EXPECT_TRUE(same_value(fp8_to_float(0x80, dtypes::fp8e4m3), -0.0));
  EXPECT_EQ(fp8_to_float(0x38, dtypes::fp8e4m3), 1.0);
  EXPECT_EQ(fp8_to_float(0x3c, dtypes::fp8e5m2), 1.0);
  EXPECT_EQ(fp8_to_float(0x40, dtypes::fp8e4m3fnuz), 1.0);
  EXPECT_EQ(fp8_to_float(0x40, dtypes::fp8e5m2fnuz), 1.0);
}

TEST(Fp8, EncodeRoundTripsEveryValue) {
  for (const Fp8Spec& f : fp8_specs())
    for (unsigned b = 0; b < 256; b++) {
      double v = fp8_spec_decode(f, b);
      if (!std::isfinite(v)) continue;
      EXPECT_EQ(float_to_fp8(v, f.dtype), b) << S(f.dtype) << " " << v;
    }
}

TEST(Fp8, EncodeRoundsToNearestEvenAndSaturates) {
  for (const Fp8Spec& f : fp8_specs()) {
    std::vector<double> xs;
    // every midpoint between neighbours (a tie), and just either side of it
    for (unsigned b = 0; b + 1 < 0x80; b++) {
      double lo = fp8_spec_decode(f, b), hi = fp8_spec_decode(f, b + 1);
      if (!std::isfinite(hi)) break;
      double mid = (lo + hi) / 2;
      for (double x : {mid, std::nextafter(mid, 0.0), std::nextafter(mid, INFINITY), lo + (hi - lo) / 3}) xs.insert(xs.end(), {x, -x});
    }
    // beyond the largest value, below half the smallest, and values fp8 never holds
    for (double x : {f.max * 1.03, f.max * 1.07, f.max * 2, 1e30, f.min_subnormal / 2, f.min_subnormal / 3, 1e-30, 0.1, 3.14159, 1000.5})
      xs.insert(xs.end(), {x, -x});
    int ties = 0;
    for (double x : xs) {
      unsigned want = fp8_spec_nearest(f, x);
      EXPECT_EQ(float_to_fp8(x, f.dtype), want) << S(f.dtype) << " x=" << x;
      EXPECT_TRUE(same_value(f.dtype.const_(x).as_double(), fp8_spec_decode(f, want))) << S(f.dtype) << " const " << x;
      ties += want % 2 == 0 && std::fabs(fp8_spec_decode(f, want) - std::fabs(x)) > 0;
    }
    EXPECT_GT(ties, 20) << S(f.dtype);
  }
  // the specials as tinygrad's float_to_fp8: e4m3 has no inf (NaN), e5m2 keeps it, fnuz maps NaN and inf to 0x80
  EXPECT_EQ(float_to_fp8(INFINITY, dtypes::fp8e4m3), 0x7f);
  EXPECT_EQ(float_to_fp8(-INFINITY, dtypes::fp8e4m3), 0xff);
  EXPECT_EQ(float_to_fp8(NAN, dtypes::fp8e4m3), 0x7f);
  EXPECT_EQ(float_to_fp8(INFINITY, dtypes::fp8e5m2), 0x7c);
  EXPECT_EQ(float_to_fp8(-INFINITY, dtypes::fp8e5m2), 0xfc);
  EXPECT_EQ(float_to_fp8(NAN, dtypes::fp8e5m2), 0x7f);
  for (DType d : {dtypes::fp8e4m3fnuz, dtypes::fp8e5m2fnuz}) {
    EXPECT_EQ(float_to_fp8(INFINITY, d), 0x80);
    EXPECT_EQ(float_to_fp8(-INFINITY, d), 0x80);
    EXPECT_EQ(float_to_fp8(NAN, d), 0x80);
    EXPECT_EQ(float_to_fp8(-0.0, d), 0x00);  // no negative zero
    EXPECT_EQ(float_to_fp8(-1e-30, d), 0x00);
  }
  EXPECT_EQ(float_to_fp8(-0.0, dtypes::fp8e4m3), 0x80);
  EXPECT_EQ(float_to_fp8(-1e-30, dtypes::fp8e5m2), 0x80);
  // hand-picked ties: 1 + 1/16 lies halfway between e4m3's 1 (0x38, even) and 1.125 (0x39): to 1; 1 + 3/16 to 1.25
  EXPECT_EQ(float_to_fp8(1.0625, dtypes::fp8e4m3), 0x38);
  EXPECT_EQ(float_to_fp8(1.1875, dtypes::fp8e4m3), 0x3a);
  EXPECT_EQ(float_to_fp8(464.0, dtypes::fp8e4m3), 0x7e);  // halfway to the NaN pattern: saturates
  EXPECT_EQ(float_to_fp8(61440.0, dtypes::fp8e5m2), 0x7b);  // halfway to inf: saturates
  EXPECT_TRUE(std::isnan(dtypes::fp8e4m3.const_(INFINITY).as_double()));
  EXPECT_EQ(dtypes::fp8e5m2.const_(-INFINITY).as_double(), -INFINITY);
}
