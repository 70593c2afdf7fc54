#pragma once
// Data types and tinygrad's type-promotion lattice, including the weak (literal) int and float types.
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <string_view>

namespace tg {

// the order matches tinygrad's promotion priority; weakint/weakfloat are the types of bare C++ literals
enum class DTypeId : uint8_t {
  void_, weakint, bool_, int8, uint8, int16, uint16, int32, uint32, int64, uint64, weakfloat,
  fp8e4m3, fp8e5m2, fp8e4m3fnuz, fp8e5m2fnuz, float16, bfloat16, float32, float64, count
};

// a compile-time constant value: int, float, bool, or Invalid (the poison value of gated index math)
struct ConstVal {
  enum Kind : uint8_t { Int, Float, Bool, Invalid } kind = Int;
  union { int64_t i = 0; double f; };
  constexpr ConstVal() = default;
  constexpr ConstVal(int64_t v) : kind(Int), i(v) {}
  constexpr ConstVal(int v) : kind(Int), i(v) {}
  constexpr ConstVal(double v) : kind(Float), f(v) {}
  constexpr ConstVal(bool v) : kind(Bool), i(v) {}
  static constexpr ConstVal invalid() { ConstVal c; c.kind = Invalid; return c; }
  bool is_int() const { return kind == Int; }
  bool is_float() const { return kind == Float; }
  bool is_bool() const { return kind == Bool; }
  bool is_invalid() const { return kind == Invalid; }
  double as_double() const { return kind == Float ? f : double(i); }
  int64_t as_int() const;  // a float is truncated; throws on Invalid
  bool truthy() const { return kind == Float ? f != 0 : i != 0; }
  // identity: 0.0 and -0.0 differ, nan equals nan, 1 and 1.0 and true differ (what hash-consing needs)
  bool same(const ConstVal& o) const;
  size_t hash() const;
  std::string str() const;  // as Python prints it: 3, 3.0, True, Invalid
};
// numeric comparison as Python does it (True == 1 == 1.0; nan == nan for pattern args)
bool operator==(const ConstVal& a, const ConstVal& b);
bool operator<(const ConstVal& a, const ConstVal& b);
std::ostream& operator<<(std::ostream& os, const ConstVal& c);

struct DType {
  DTypeId id = DTypeId::void_;
  constexpr DType() = default;
  constexpr DType(DTypeId i) : id(i) {}
  int priority() const;
  int bitsize() const;
  int itemsize() const { return (bitsize() + 7) / 8; }
  std::string_view c_name() const;  // the C spelling tinygrad uses as its name: "float", "unsigned char", "__bf16"
  std::string_view name() const;    // the dtypes.<name>: "float32", "uint8", "weakint"
  char fmt() const;                 // struct-module format char, 0 where there is none
  bool is_float() const;            // includes weakfloat
  bool is_int() const;              // includes weakint
  bool is_unsigned() const;
  bool is_bool() const { return id == DTypeId::bool_; }
  bool is_weak() const { return id == DTypeId::weakint || id == DTypeId::weakfloat; }
  bool is_fp8() const { return id >= DTypeId::fp8e4m3 && id <= DTypeId::fp8e5m2fnuz; }
  bool is_fnuz() const { return id == DTypeId::fp8e4m3fnuz || id == DTypeId::fp8e5m2fnuz; }
  ConstVal min() const;
  ConstVal max() const;
  ConstVal const_(ConstVal v) const;  // v converted to this dtype's value kind and truncated to its width
  constexpr bool operator==(const DType& o) const { return id == o.id; }
  bool operator<(const DType& o) const;  // tinygrad's order: (priority, bitsize, name, fmt)
};
std::ostream& operator<<(std::ostream& os, DType d);  // "dtypes.float32"

namespace dtypes {
inline constexpr DType void_{DTypeId::void_}, weakint{DTypeId::weakint}, weakfloat{DTypeId::weakfloat}, bool_{DTypeId::bool_};
inline constexpr DType int8{DTypeId::int8}, uint8{DTypeId::uint8}, int16{DTypeId::int16}, uint16{DTypeId::uint16};
inline constexpr DType int32{DTypeId::int32}, uint32{DTypeId::uint32}, int64{DTypeId::int64}, uint64{DTypeId::uint64};
// the fp8 formats: OCP float8_e4m3fn (no inf, one NaN pattern per sign) and float8_e5m2 (IEEE-like), and the "fnuz"
// variants (finite, no negative zero: 0x80 is the only NaN; bias one larger)
inline constexpr DType fp8e4m3{DTypeId::fp8e4m3}, fp8e5m2{DTypeId::fp8e5m2}, fp8e4m3fnuz{DTypeId::fp8e4m3fnuz}, fp8e5m2fnuz{DTypeId::fp8e5m2fnuz};
inline constexpr DType float16{DTypeId::float16}, bfloat16{DTypeId::bfloat16}, float32{DTypeId::float32}, float64{DTypeId::float64};
inline constexpr DType half = float16, float_ = float32, double_ = float64, char_ = int8, uchar = uint8, short_ = int16;
inline constexpr DType ushort = uint16, int_ = int32, uint = uint32, long_ = int64, ulong = uint64;
inline constexpr DType default_float = float32, default_int = int32;
DType from_name(std::string_view name);  // "float32", "float", "half", ...; throws tg::Error for an unknown name
}  // namespace dtypes

DType least_upper_dtype(std::initializer_list<DType> ds);
DType least_upper_float(DType d);
DType strong_dtype(DType d);  // weakint -> default_int, weakfloat -> default_float
DType weak_dtype(DType d);    // a float -> weakfloat, an int -> weakint
bool can_lossless_cast(DType from, DType to);
DType sum_acc_dtype(DType d);

// fp8 <-> double as tinygrad's float_to_fp8 / fp8_to_float (constant folding, host-side data): round to nearest
// even, finite overflow saturates to the largest normal; inf becomes NaN in e4m3 (which has no inf) and stays inf in
// e5m2; the fnuz formats map NaN and inf to 0x80 and -0.0 to 0x00
uint8_t float_to_fp8(double x, DType fp8);
double fp8_to_float(uint8_t bits, DType fp8);

}  // namespace tg
