// DType, ConstVal and the promotion lattice. Expected values come from tinygrad (a9069c177a) run under
// /usr/bin/python3 (least_upper_dtype, least_upper_float, can_lossless_cast, sum_acc_dtype, DType.const, repr(float)).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "tg/dtype.h"
#include "tg/error.h"

using namespace tg;
using namespace tg::dtypes;

namespace {

// every dtype tinygrad.cpp has except void (tinygrad's fp8 types are left out everywhere below)
const std::vector<DType> kAll = {weakint, bool_, int8, uint8, int16, uint16, int32, uint32, int64, uint64,
                                 weakfloat, float16, bfloat16, float32, float64};

std::string S(DType d) {
  std::ostringstream os;
  os << d;
  return os.str();
}

}  // namespace

// ***** sizes, names, printing *****

TEST(DType, ItemAndBitSizes) {
  struct Row { DType d; int bits, bytes; };
  // weakint/weakfloat are 800 bits (their place in the lattice), so itemsize 100, as tinygrad
  const Row rows[] = {{bool_, 1, 1},     {int8, 8, 1},      {uint8, 8, 1},      {int16, 16, 2},   {uint16, 16, 2},
                      {int32, 32, 4},    {uint32, 32, 4},   {int64, 64, 8},     {uint64, 64, 8},  {float16, 16, 2},
                      {bfloat16, 16, 2}, {float32, 32, 4},  {float64, 64, 8},   {weakint, 800, 100}, {weakfloat, 800, 100},
                      {void_, 0, 0}};
  for (auto& r : rows) {
    EXPECT_EQ(r.d.bitsize(), r.bits) << S(r.d);
    EXPECT_EQ(r.d.itemsize(), r.bytes) << S(r.d);
  }
}

TEST(DType, NamesAndCNames) {
  struct Row { DType d; const char *name, *c_name; char fmt; };
  const Row rows[] = {{void_, "void", "void", 0},          {weakint, "weakint", "weakint", 0},
                      {bool_, "bool", "bool", '?'},         {int8, "char", "signed char", 'b'},
                      {uint8, "uchar", "unsigned char", 'B'}, {int16, "short", "short", 'h'},
                      {uint16, "ushort", "unsigned short", 'H'}, {int32, "int", "int", 'i'},
                      {uint32, "uint", "unsigned int", 'I'}, {int64, "long", "long", 'q'},
                      {uint64, "ulong", "unsigned long", 'Q'}, {weakfloat, "weakfloat", "weakfloat", 0},
                      {float16, "half", "half", 'e'},     {bfloat16, "bfloat16", "__bf16", 0},
                      {float32, "float", "float", 'f'},    {float64, "double", "double", 'd'}};
  for (auto& r : rows) {
    EXPECT_EQ(r.d.name(), r.name);
    EXPECT_EQ(r.d.c_name(), r.c_name) << r.name;
    EXPECT_EQ(r.d.fmt(), r.fmt) << r.name;
  }
}

TEST(DType, Printing) {
  // as tinygrad's repr (python3 -c "from tinygrad.dtype import dtypes; print(repr(dtypes.float))" -> dtypes.float)
  EXPECT_EQ(S(float32), "dtypes.float");
  EXPECT_EQ(S(float16), "dtypes.half");
  EXPECT_EQ(S(uint8), "dtypes.uchar");
  EXPECT_EQ(S(bool_), "dtypes.bool");
  EXPECT_EQ(S(weakint), "dtypes.weakint");
  EXPECT_EQ(S(weakfloat), "dtypes.weakfloat");
  EXPECT_EQ(S(void_), "dtypes.void");
  EXPECT_EQ(S(bfloat16), "dtypes.bfloat16");
}

TEST(DType, Aliases) {
  EXPECT_EQ(half, float16);
  EXPECT_EQ(float_, float32);
  EXPECT_EQ(double_, float64);
  EXPECT_EQ(char_, int8);
  EXPECT_EQ(uchar, uint8);
  EXPECT_EQ(short_, int16);
  EXPECT_EQ(dtypes::ushort, uint16);
  EXPECT_EQ(int_, int32);
  EXPECT_EQ(dtypes::uint, uint32);
  EXPECT_EQ(long_, int64);
  EXPECT_EQ(dtypes::ulong, uint64);
  EXPECT_EQ(default_float, float32);
  EXPECT_EQ(default_int, int32);
  EXPECT_NE(float32, float64);
}

// ***** kinds *****

TEST(DType, Kinds) {
  for (DType d : kAll) {
    bool is_f = d == weakfloat || d == float16 || d == bfloat16 || d == float32 || d == float64;
    bool is_u = d == uint8 || d == uint16 || d == uint32 || d == uint64;
    bool is_i = !is_f && d != bool_;
    EXPECT_EQ(d.is_float(), is_f) << S(d);
    EXPECT_EQ(d.is_int(), is_i) << S(d);
    EXPECT_EQ(d.is_unsigned(), is_u) << S(d);
    EXPECT_EQ(d.is_bool(), d == bool_) << S(d);
    EXPECT_EQ(d.is_weak(), d == weakint || d == weakfloat) << S(d);
  }
  EXPECT_FALSE(void_.is_int());
  EXPECT_FALSE(void_.is_float());
  EXPECT_FALSE(void_.is_bool());
}

TEST(DType, MinMax) {
  // from tinygrad's DType.min / DType.max
  EXPECT_EQ(int8.min().str(), "-128");
  EXPECT_EQ(int8.max().str(), "127");
  EXPECT_EQ(uint8.min().str(), "0");
  EXPECT_EQ(uint8.max().str(), "255");
  EXPECT_EQ(int16.min().str(), "-32768");
  EXPECT_EQ(int16.max().str(), "32767");
  EXPECT_EQ(uint16.max().str(), "65535");
  EXPECT_EQ(int32.min().str(), "-2147483648");
  EXPECT_EQ(int32.max().str(), "2147483647");
  EXPECT_EQ(uint32.min().str(), "0");
  EXPECT_EQ(uint32.max().str(), "4294967295");
  EXPECT_EQ(int64.min().str(), "-9223372036854775808");
  EXPECT_EQ(int64.max().str(), "9223372036854775807");
  EXPECT_EQ(uint64.min().str(), "0");
  EXPECT_EQ(bool_.min().str(), "False");
  EXPECT_EQ(bool_.max().str(), "True");
  for (DType d : {float16, bfloat16, float32, float64, weakfloat}) {
    EXPECT_TRUE(d.min().is_float() && std::isinf(d.min().f) && d.min().f < 0) << S(d);
    EXPECT_TRUE(d.max().is_float() && std::isinf(d.max().f) && d.max().f > 0) << S(d);
  }
  // documented deviation (dtype.cpp): tinygrad's weakint is unbounded and uint64.max is 2**64-1; here both sit at the
  // int64 limits
  EXPECT_EQ(uint64.max().str(), "9223372036854775807");
  EXPECT_EQ(weakint.min().str(), "-9223372036854775808");
  EXPECT_EQ(weakint.max().str(), "9223372036854775807");
}

TEST(DType, ConstConversion) {
  // tinygrad: DType.const(v)
  EXPECT_EQ(float16.const_(0.1).str(), "0.0999755859375");
  EXPECT_EQ(bfloat16.const_(0.1).str(), "0.10009765625");
  EXPECT_EQ(float32.const_(0.1).str(), "0.10000000149011612");
  EXPECT_EQ(float64.const_(0.1).str(), "0.1");
  EXPECT_EQ(int32.const_(2.7).str(), "2");
  EXPECT_EQ(int32.const_(-2.7).str(), "-2");
  EXPECT_EQ(bool_.const_(2).str(), "True");
  EXPECT_EQ(bool_.const_(0.0).str(), "False");
  EXPECT_EQ(float16.const_(1e5).str(), "inf");
  EXPECT_EQ(float16.const_(-1e5).str(), "-inf");
  EXPECT_EQ(bfloat16.const_(1e39).str(), "inf");
  EXPECT_EQ(int8.const_(300).str(), "300");  // tinygrad's DType.const does int(v): no wrap to the width
  EXPECT_EQ(float32.const_(3).str(), "3.0");
  EXPECT_EQ(float64.const_(true).str(), "1.0");
  EXPECT_TRUE(float32.const_(3).is_float());
  EXPECT_TRUE(int32.const_(2.7).is_int());
  EXPECT_TRUE(bool_.const_(2).is_bool());
  EXPECT_TRUE(float32.const_(ConstVal::invalid()).is_invalid());
}

// ***** ConstVal *****

TEST(ConstVal, StrLikePythonRepr) {
  // expected: Python's repr(float) / str(int) / str(bool)
  EXPECT_EQ(ConstVal(3).str(), "3");
  EXPECT_EQ(ConstVal(int64_t(-7)).str(), "-7");
  EXPECT_EQ(ConstVal(true).str(), "True");
  EXPECT_EQ(ConstVal(false).str(), "False");
  EXPECT_EQ(ConstVal::invalid().str(), "Invalid");
  EXPECT_EQ(ConstVal(3.0).str(), "3.0");
  EXPECT_EQ(ConstVal(0.1).str(), "0.1");
  EXPECT_EQ(ConstVal(2.5).str(), "2.5");
  EXPECT_EQ(ConstVal(-0.0).str(), "-0.0");
  EXPECT_EQ(ConstVal(1.0 / 3).str(), "0.3333333333333333");
  EXPECT_EQ(ConstVal(1e20).str(), "1e+20");
  EXPECT_EQ(ConstVal(1e16).str(), "1e+16");
  EXPECT_EQ(ConstVal(1e-5).str(), "1e-05");
  EXPECT_EQ(ConstVal(1.5e300).str(), "1.5e+300");
  EXPECT_EQ(ConstVal(123456789.0).str(), "123456789.0");
  EXPECT_EQ(ConstVal(12345678901234567.0).str(), "1.2345678901234568e+16");
  EXPECT_EQ(ConstVal(INFINITY).str(), "inf");
  EXPECT_EQ(ConstVal(-INFINITY).str(), "-inf");
  EXPECT_EQ(ConstVal(NAN).str(), "nan");
}

// Python's repr(100.0) is '100.0' and repr(1e15) is '1000000000000000.0': it only switches to exponent notation at
// an exponent of 16 (or below -4), whatever the number of significant digits
TEST(ConstVal, StrFewDigitsLargeExponent) {
  EXPECT_EQ(ConstVal(100.0).str(), "100.0");
  EXPECT_EQ(ConstVal(10.0).str(), "10.0");
  EXPECT_EQ(ConstVal(1000.0).str(), "1000.0");
  EXPECT_EQ(ConstVal(-200.0).str(), "-200.0");
  EXPECT_EQ(ConstVal(1e15).str(), "1000000000000000.0");
  EXPECT_EQ(ConstVal(0.0001).str(), "0.0001");
}

TEST(ConstVal, IdentityVsNumericEquality) {
  // same(): what hash-consing needs
  EXPECT_TRUE(ConstVal(1).same(ConstVal(int64_t(1))));
  EXPECT_FALSE(ConstVal(1).same(ConstVal(1.0)));
  EXPECT_FALSE(ConstVal(1).same(ConstVal(true)));
  EXPECT_FALSE(ConstVal(0.0).same(ConstVal(-0.0)));
  EXPECT_TRUE(ConstVal(NAN).same(ConstVal(NAN)));
  EXPECT_TRUE(ConstVal::invalid().same(ConstVal::invalid()));
  EXPECT_FALSE(ConstVal::invalid().same(ConstVal(false)));
  // ==: Python numeric equality
  EXPECT_TRUE(ConstVal(1) == ConstVal(1.0));
  EXPECT_TRUE(ConstVal(1) == ConstVal(true));
  EXPECT_TRUE(ConstVal(0.0) == ConstVal(-0.0));
  EXPECT_TRUE(ConstVal(NAN) == ConstVal(NAN));
  EXPECT_FALSE(ConstVal(2) == ConstVal(true));
  EXPECT_FALSE(ConstVal::invalid() == ConstVal(false));
  EXPECT_TRUE(ConstVal(1) < ConstVal(1.5));
  EXPECT_FALSE(ConstVal(2) < ConstVal(true));
  EXPECT_THROW((void)(ConstVal::invalid() < ConstVal(1)), Error);
  // the hash agrees with same()
  EXPECT_EQ(ConstVal(NAN).hash(), ConstVal(-NAN).hash());
  EXPECT_NE(ConstVal(1).hash(), ConstVal(1.0).hash());
}

TEST(ConstVal, AsInt) {
  EXPECT_EQ(ConstVal(2.9).as_int(), 2);
  EXPECT_EQ(ConstVal(-2.9).as_int(), -2);
  EXPECT_EQ(ConstVal(true).as_int(), 1);
  EXPECT_THROW(ConstVal::invalid().as_int(), Error);
  EXPECT_THROW(ConstVal(INFINITY).as_int(), Error);
  EXPECT_THROW(ConstVal(NAN).as_int(), Error);
}

// ***** promotion lattice *****

TEST(DType, LeastUpperDtypeAllPairs) {
  // tinygrad: least_upper_dtype(row, col) for every pair of non-fp8 dtypes; col runs over kAll's order
  struct Row { DType a; std::vector<DType> lub; };
  const Row table[] = {
    {weakint, {weakint, weakint, int8, uint8, int16, uint16, int32, uint32, int64, uint64, weakfloat, float16, bfloat16, float32, float64}},
    {bool_, {weakint, bool_, int8, uint8, int16, uint16, int32, uint32, int64, uint64, weakfloat, float16, bfloat16, float32, float64}},
    {int8, {int8, int8, int8, int16, int16, int32, int32, int64, int64, weakfloat, weakfloat, float16, bfloat16, float32, float64}},
    {uint8, {uint8, uint8, int16, uint8, int16, uint16, int32, uint32, int64, uint64, weakfloat, float16, bfloat16, float32, float64}},
    {int16, {int16, int16, int16, int16, int16, int32, int32, int64, int64, weakfloat, weakfloat, float16, bfloat16, float32, float64}},
    {uint16, {uint16, uint16, int32, uint16, int32, uint16, int32, uint32, int64, uint64, weakfloat, float16, bfloat16, float32, float64}},
    {int32, {int32, int32, int32, int32, int32, int32, int32, int64, int64, weakfloat, weakfloat, float16, bfloat16, float32, float64}},
    {uint32, {uint32, uint32, int64, uint32, int64, uint32, int64, uint32, int64, uint64, weakfloat, float16, bfloat16, float32, float64}},
    {int64, {int64, int64, int64, int64, int64, int64, int64, int64, int64, weakfloat, weakfloat, float16, bfloat16, float32, float64}},
    {uint64, {uint64, uint64, weakfloat, uint64, weakfloat, uint64, weakfloat, uint64, weakfloat, uint64, weakfloat, float16, bfloat16, float32, float64}},
    {weakfloat, {weakfloat, weakfloat, weakfloat, weakfloat, weakfloat, weakfloat, weakfloat, weakfloat, weakfloat, weakfloat, weakfloat, float16, bfloat16, float32, float64}},
    {float16, {float16, float16, float16, float16, float16, float16, float16, float16, float16, float16, float16, float16, float32, float32, float64}},
    {bfloat16, {bfloat16, bfloat16, bfloat16, bfloat16, bfloat16, bfloat16, bfloat16, bfloat16, bfloat16, bfloat16, bfloat16, float32, bfloat16, float32, float64}},
    {float32, {float32, float32, float32, float32, float32, float32, float32, float32, float32, float32, float32, float32, float32, float32, float64}},
    {float64, {float64, float64, float64, float64, float64, float64, float64, float64, float64, float64, float64, float64, float64, float64, float64}},
  };
  int checked = 0;
  for (auto& row : table) {
    ASSERT_EQ(row.lub.size(), kAll.size());
    for (size_t j = 0; j < kAll.size(); j++, checked++)
      EXPECT_EQ(least_upper_dtype({row.a, kAll[j]}), row.lub[j]) << S(row.a) << " , " << S(kAll[j]);
  }
  EXPECT_EQ(checked, 225);
}

TEST(DType, LeastUpperDtypeSingleAndTriples) {
  for (DType d : kAll) EXPECT_EQ(least_upper_dtype({d}), d) << S(d);
  // tinygrad: least_upper_dtype(a, b, c)
  struct Row { DType a, b, c, want; };
  const Row rows[] = {
    {int8, uint64, bfloat16, bfloat16},   {bfloat16, bool_, int16, bfloat16},  {bool_, uint32, bfloat16, bfloat16},
    {uint32, float64, weakfloat, float64}, {int32, bfloat16, uint8, bfloat16}, {bool_, uint32, weakint, uint32},
    {float64, float32, int32, float64},   {int32, uint64, bfloat16, bfloat16}, {bfloat16, weakint, float16, float32},
    {uint32, int16, float16, float16},    {bfloat16, uint8, uint64, bfloat16}, {bool_, uint16, weakint, uint16},
    {weakint, float64, weakfloat, float64}, {int64, weakint, int32, int64},    {weakfloat, uint8, int32, weakfloat},
    {float16, weakint, int64, float16},   {uint32, int64, uint8, int64},       {uint16, uint8, weakfloat, weakfloat},
    {int16, weakint, int32, int32},       {float32, int64, weakfloat, float32}, {bool_, int8, weakfloat, weakfloat},
    {float16, float32, int16, float32},   {bool_, float16, uint16, float16},   {float64, float16, float32, float64},
    {int64, int32, float64, float64},     {float32, weakfloat, uint8, float32}, {int16, float64, uint64, float64},
    {float64, uint32, int64, float64},    {int32, uint64, weakint, weakfloat},  {uint32, uint8, float16, float16},
    {bfloat16, int32, float32, float32},  {weakfloat, int8, uint16, weakfloat}, {int64, float16, bfloat16, float32},
    {weakfloat, float16, uint16, float16}, {bool_, uint32, weakfloat, weakfloat}, {int64, bool_, bfloat16, bfloat16},
    {int8, int64, int32, int64},          {uint16, uint32, float16, float16},
  };
  for (auto& r : rows) {
    EXPECT_EQ(least_upper_dtype({r.a, r.b, r.c}), r.want) << S(r.a) << " " << S(r.b) << " " << S(r.c);
    EXPECT_EQ(least_upper_dtype({r.c, r.a, r.b}), r.want) << "order must not matter";
  }
  // a longer list
  EXPECT_EQ(least_upper_dtype({bool_, int8, uint8, int16, uint16}), int32);
  EXPECT_EQ(least_upper_dtype({weakint, weakint, bool_}), weakint);
}

TEST(DType, LeastUpperDtypeVoidThrows) {
  EXPECT_THROW(least_upper_dtype({void_, int32}), Error);
}

TEST(DType, LeastUpperFloat) {
  struct Row { DType d, want; };
  const Row rows[] = {{weakint, weakfloat}, {bool_, float32}, {int8, float32}, {uint8, float32}, {int16, float32},
                      {uint16, float32}, {int32, float32}, {uint32, float32}, {int64, float32}, {uint64, float32},
                      {weakfloat, weakfloat}, {float16, float16}, {bfloat16, bfloat16}, {float32, float32}, {float64, float64}};
  for (auto& r : rows) EXPECT_EQ(least_upper_float(r.d), r.want) << S(r.d);
}

TEST(DType, StrongAndWeak) {
  struct Row { DType d, strong, weak; };
  const Row rows[] = {{weakint, int32, weakint},   {bool_, bool_, bool_},       {int8, int8, weakint},
                      {uint8, uint8, weakint},     {int16, int16, weakint},     {uint16, uint16, weakint},
                      {int32, int32, weakint},     {uint32, uint32, weakint},   {int64, int64, weakint},
                      {uint64, uint64, weakint},   {weakfloat, float32, weakfloat}, {float16, float16, weakfloat},
                      {bfloat16, bfloat16, weakfloat}, {float32, float32, weakfloat}, {float64, float64, weakfloat}};
  for (auto& r : rows) {
    EXPECT_EQ(strong_dtype(r.d), r.strong) << S(r.d);
    EXPECT_EQ(weak_dtype(r.d), r.weak) << S(r.d);
  }
  EXPECT_EQ(strong_dtype(void_), void_);
  EXPECT_EQ(weak_dtype(void_), void_);
}

TEST(DType, CanLosslessCastAllPairs) {
  // tinygrad: the set of `to` with can_lossless_cast(from, to) for each from (fp8 left out)
  struct Row { DType from; std::vector<DType> to; };
  const Row table[] = {
    {weakint, {weakint}},
    {bool_, {weakint, bool_, int8, uint8, int16, uint16, int32, uint32, int64, uint64, weakfloat, float16, bfloat16, float32, float64}},
    {int8, {weakint, int8, int16, int32, int64, float16, float32, float64}},
    {uint8, {weakint, uint8, int16, uint16, int32, uint32, int64, uint64, float16, float32, float64}},
    {int16, {weakint, int16, int32, int64, float32, float64}},
    {uint16, {weakint, uint16, int32, uint32, int64, uint64, float32, float64}},
    {int32, {weakint, int32, int64, float64}},
    {uint32, {weakint, uint32, int64, uint64, float64}},
    {int64, {weakint, int64}},
    {uint64, {weakint, uint64}},
    {weakfloat, {weakfloat}},
    {float16, {float16, float32, float64}},
    {bfloat16, {bfloat16, float32, float64}},
    {float32, {float32, float64}},
    {float64, {float64}},
  };
  for (auto& row : table)
    for (DType to : kAll) {
      bool want = std::find(row.to.begin(), row.to.end(), to) != row.to.end();
      EXPECT_EQ(can_lossless_cast(row.from, to), want) << S(row.from) << " -> " << S(to);
    }
}

TEST(DType, SumAccDtype) {
  struct Row { DType d, want; };
  const Row rows[] = {{weakint, int32}, {bool_, int32}, {int8, int32}, {uint8, uint32}, {int16, int32},
                      {uint16, uint32}, {int32, int32}, {uint32, uint32}, {int64, int64}, {uint64, uint64},
                      {weakfloat, float32}, {float16, float32}, {bfloat16, float32}, {float32, float32}, {float64, float64}};
  for (auto& r : rows) EXPECT_EQ(sum_acc_dtype(r.d), r.want) << S(r.d);
}

// ***** from_name *****

TEST(DType, FromName) {
  struct Row { const char* n; DType d; };
  const Row rows[] = {{"float32", float32}, {"float", float32}, {"half", float16}, {"float16", float16}, {"bfloat16", bfloat16},
                      {"double", float64}, {"float64", float64}, {"bool", bool_}, {"int8", int8}, {"char", int8},
                      {"uint8", uint8}, {"uchar", uint8}, {"int16", int16}, {"short", int16}, {"uint16", uint16},
                      {"ushort", uint16}, {"int32", int32}, {"int", int32}, {"uint32", uint32}, {"uint", uint32},
                      {"int64", int64}, {"long", int64}, {"uint64", uint64}, {"ulong", uint64}};
  for (auto& r : rows) EXPECT_EQ(from_name(r.n), r.d) << r.n;
  for (DType d : kAll) EXPECT_EQ(from_name(d.name()), d) << "round trip of " << d.name();
}

TEST(DType, FromNameUnknownThrows) {
  for (const char* bad : {"float31", "", "int 32", "dtypes.float", "float8_e4m3"}) {
    try {
      (void)from_name(bad);
      ADD_FAILURE() << "no throw for '" << bad << "'";
    } catch (const Error& e) {
      if (*bad) { EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << "message should name the bad input: " << e.what(); }
    }
  }
}

// tinygrad's to_dtype lowercases (DEFAULT_FLOAT=HALF works)
TEST(DType, FromNameIsCaseInsensitive) {
  EXPECT_EQ(from_name("HALF"), float16);
  EXPECT_EQ(from_name("Float32"), float32);
}

// ***** ordering *****

TEST(DType, Ordering) {
  // tinygrad: sorted() by (priority, bitsize, name, fmt)
  const std::vector<DType> want = {bool_, weakint, int8, uint8, int16, uint16, int32, uint32, int64, uint64,
                                   weakfloat, float16, bfloat16, float32, float64};
  std::vector<DType> got = kAll;
  std::reverse(got.begin(), got.end());
  std::sort(got.begin(), got.end());
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); i++) EXPECT_EQ(got[i], want[i]) << "position " << i << " got " << S(got[i]);
  EXPECT_TRUE(void_ < bool_);
  EXPECT_FALSE(float32 < float32);
  EXPECT_TRUE(float16 < bfloat16);
  EXPECT_FALSE(bfloat16 < float16);
  EXPECT_TRUE(int64 < uint64);
  EXPECT_TRUE(uint64 < weakfloat);
  EXPECT_TRUE(bool_ < weakint);  // both priority 0: bitsize 1 < 800
}
