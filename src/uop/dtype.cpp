#include "tg/dtype.h"
#include "tg/error.h"
#include "util/error.h"

#include <array>
#include <bit>
#include <charconv>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <ostream>
#include <vector>

namespace tg {

// ***** ConstVal *****

int64_t ConstVal::as_int() const {
  if (kind == Invalid) throw Error("ConstVal: Invalid has no integer value");
  if (kind != Float) return i;
  if (!std::isfinite(f) || std::fabs(f) >= 9.2e18) throw Error("ConstVal: float " + str() + " does not fit an int64");
  return int64_t(f);
}

bool ConstVal::same(const ConstVal& o) const {
  if (kind != o.kind) return false;
  if (kind != Float) return kind == Invalid || i == o.i;
  return (std::isnan(f) && std::isnan(o.f)) || std::bit_cast<uint64_t>(f) == std::bit_cast<uint64_t>(o.f);
}

size_t ConstVal::hash() const {
  uint64_t bits = kind == Float ? (std::isnan(f) ? 0x7ff8000000000000ull : std::bit_cast<uint64_t>(f)) : uint64_t(i);
  return size_t((bits ^ (uint64_t(kind) << 61)) * 0x9E3779B97F4A7C15ull);
}

std::string ConstVal::str() const {
  switch (kind) {
    case Int: return std::to_string(i);
    case Bool: return i ? "True" : "False";
    case Invalid: return "Invalid";
    case Float: break;
  }
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  // Python's repr: the shortest digits that round-trip, fixed notation for exponents -4..15, else d.ddde+XX. The
  // search for the first printf precision that round-trips starts at to_chars' shortest digit count (no fewer digits
  // can round-trip), not at 0; printf's rounding stays the reference
  char buf[64];
  const char* end = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific).ptr;
  int shortest = 0;
  for (const char* c = buf; c < end && *c != 'e'; c++) shortest += *c >= '0' && *c <= '9';
  for (int prec = std::max(0, shortest - 1); prec <= 16; prec++) {
    snprintf(buf, sizeof buf, "%.*e", prec, f);
    if (std::strtod(buf, nullptr) == f) break;
  }
  std::string m(buf);
  size_t epos = m.find('e');
  int exp = std::atoi(m.c_str() + epos + 1);
  bool neg = m[0] == '-';
  std::string digits;
  for (size_t i = neg; i < epos; i++) if (m[i] != '.') digits += m[i];
  std::string out = neg ? "-" : "";
  if (exp >= -4 && exp < 16) {
    if (exp < 0) out += "0." + std::string(size_t(-exp - 1), '0') + digits;
    else {
      if (digits.size() < size_t(exp + 1)) digits += std::string(size_t(exp + 1) - digits.size(), '0');
      std::string frac = digits.substr(size_t(exp + 1));
      out += digits.substr(0, size_t(exp + 1)) + "." + (frac.empty() ? "0" : frac);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char e[16];
  snprintf(e, sizeof e, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
  return out + e;
}

bool operator==(const ConstVal& a, const ConstVal& b) {
  if (a.is_invalid() || b.is_invalid()) return a.is_invalid() && b.is_invalid();
  if (a.is_float() || b.is_float()) {
    double x = a.as_double(), y = b.as_double();
    return x == y || (std::isnan(x) && std::isnan(y));
  }
  return a.i == b.i;
}

bool operator<(const ConstVal& a, const ConstVal& b) {
  if (a.is_invalid() || b.is_invalid()) throw Error("ConstVal: Invalid is not ordered");
  if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
  return a.i < b.i;
}

std::ostream& operator<<(std::ostream& os, const ConstVal& c) { return os << c.str(); }

// ***** DType *****

namespace {
struct DTypeInfo { int priority, bitsize; const char *c_name, *name; char fmt; };
constexpr DTypeInfo infos[] = {
  {-1, 0, "void", "void", 0},          {0, 800, "weakint", "weakint", 0},  {0, 1, "bool", "bool", '?'},
  {1, 8, "signed char", "char", 'b'},  {2, 8, "unsigned char", "uchar", 'B'}, {3, 16, "short", "short", 'h'},
  {4, 16, "unsigned short", "ushort", 'H'}, {5, 32, "int", "int", 'i'}, {6, 32, "unsigned int", "uint", 'I'},
  {7, 64, "long", "long", 'q'},        {8, 64, "unsigned long", "ulong", 'Q'}, {9, 800, "weakfloat", "weakfloat", 0},
  {10, 8, "float8_e4m3", "fp8e4m3", 0}, {11, 8, "float8_e5m2", "fp8e5m2", 0}, {10, 8, "float8_e4m3fnuz", "fp8e4m3fnuz", 0},
  {11, 8, "float8_e5m2fnuz", "fp8e5m2fnuz", 0},
  {12, 16, "half", "half", 'e'},       {13, 16, "__bf16", "bfloat16", 0},  {14, 32, "float", "float", 'f'},
  {15, 64, "double", "double", 'd'},
};
static_assert(sizeof(infos) / sizeof(infos[0]) == size_t(DTypeId::count));
const DTypeInfo& info(DType d) { return infos[size_t(d.id)]; }
}  // namespace

int DType::priority() const { return info(*this).priority; }
int DType::bitsize() const { return info(*this).bitsize; }
std::string_view DType::c_name() const { return info(*this).c_name; }
std::string_view DType::name() const { return info(*this).name; }
char DType::fmt() const { return info(*this).fmt; }
bool DType::is_float() const { return id >= DTypeId::weakfloat && id <= DTypeId::float64; }
bool DType::is_int() const { return id == DTypeId::weakint || (id >= DTypeId::int8 && id <= DTypeId::uint64); }
bool DType::is_unsigned() const {
  return id == DTypeId::uint8 || id == DTypeId::uint16 || id == DTypeId::uint32 || id == DTypeId::uint64;
}

// ints are int64: weakint is unbounded in tinygrad, here it saturates at the int64 limits (as does uint64's max)
ConstVal DType::min() const {
  if (is_int()) return is_unsigned() ? int64_t(0) : bitsize() >= 64 ? std::numeric_limits<int64_t>::min() : -(int64_t(1) << (bitsize() - 1));
  if (is_float()) return -std::numeric_limits<double>::infinity();
  return false;
}
ConstVal DType::max() const {
  if (is_int()) {
    int bits = bitsize() - (is_unsigned() ? 0 : 1);
    return bits >= 63 ? std::numeric_limits<int64_t>::max() : (int64_t(1) << bits) - 1;
  }
  if (is_float()) return std::numeric_limits<double>::infinity();
  return true;
}

namespace {
double to_fp16(double x) {
  if (!std::isfinite(x)) return x;
  float f = float(x);
  _Float16 h = static_cast<_Float16>(f);
  if (std::isinf(float(h)) && !std::isinf(f)) return std::copysign(INFINITY, x);
  return double(float(h));
}
double to_bf16(double x) {
  if (!std::isfinite(x)) return x;
  uint32_t u = std::bit_cast<uint32_t>(float(x));
  u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000u;
  return double(std::bit_cast<float>(u));
}
}  // namespace

// ***** fp8 *****

namespace {
struct Fp8Format { int mbits, bias, max_code; };
Fp8Format fp8_format(DType d) {
  switch (d.id) {
    case DTypeId::fp8e4m3: return {3, 7, 0x7e};  // 0x7f is NaN
    case DTypeId::fp8e5m2: return {2, 15, 0x7b};  // 0x7c is inf
    case DTypeId::fp8e4m3fnuz: return {3, 8, 0x7f};
    case DTypeId::fp8e5m2fnuz: return {2, 16, 0x7f};
    default: throw Error("fp8: " + std::string(d.name()) + " is not an fp8 dtype");
  }
}
}  // namespace

uint8_t float_to_fp8(double x, DType d) {
  auto [mbits, bias, max_code] = fp8_format(d);
  uint8_t sign = std::signbit(x) ? 0x80 : 0;
  if (d.is_fnuz() && !std::isfinite(x)) return 0x80;
  if (d == dtypes::fp8e4m3 && !std::isfinite(x)) return sign | 0x7f;
  if (d == dtypes::fp8e5m2 && !std::isfinite(x)) return sign | (std::isinf(x) ? 0x7c : 0x7f);
  double a = std::fabs(x);
  if (a == 0) return d.is_fnuz() ? 0 : sign;
  // the exponent of a's quantum: a normal's own exponent, never below the subnormals' (1 - bias)
  int e = std::max(std::ilogb(a), 1 - bias);
  int64_t q = int64_t(std::nearbyint(std::ldexp(a, mbits - e)));  // exact in a double, rounded to nearest even
  if (q >> (mbits + 1)) q >>= 1, e++;  // rounding carried into the next binade
  int64_t code = q < (int64_t(1) << mbits) ? q : (int64_t(e + bias) << mbits) | (q - (int64_t(1) << mbits));
  if (code > max_code) code = max_code;
  if (code == 0) return d.is_fnuz() ? 0 : sign;
  return uint8_t(code) | sign;
}

double fp8_to_float(uint8_t bits, DType d) {
  auto [mbits, bias, max_code] = fp8_format(d);
  int e = (bits & 0x7f) >> mbits, m = bits & ((1 << mbits) - 1), emax = (1 << (7 - mbits)) - 1;
  double sign = bits & 0x80 ? -1.0 : 1.0;
  if (d.is_fnuz() && bits == 0x80) return NAN;
  if (d == dtypes::fp8e4m3 && (bits & 0x7f) == 0x7f) return NAN;
  if (d == dtypes::fp8e5m2 && e == emax) return m ? NAN : sign * INFINITY;
  return sign * (e == 0 ? std::ldexp(m, 1 - bias - mbits) : std::ldexp(m + (1 << mbits), e - bias - mbits));
}

ConstVal DType::const_(ConstVal v) const {
  if (v.is_invalid()) return v;
  if (is_bool()) return ConstVal(v.truthy());
  if (is_float()) {
    double x = v.as_double();
    switch (id) {
      case DTypeId::float16: return to_fp16(x);
      case DTypeId::bfloat16: return to_bf16(x);
      case DTypeId::float32: return double(float(x));
      case DTypeId::float64: case DTypeId::weakfloat: return x;
      default: return fp8_to_float(float_to_fp8(x, *this), *this);
    }
  }
  if (is_int()) return v.as_int();
  return v;
}

bool DType::operator<(const DType& o) const {
  if (priority() != o.priority()) return priority() < o.priority();
  if (bitsize() != o.bitsize()) return bitsize() < o.bitsize();
  if (c_name() != o.c_name()) return c_name() < o.c_name();
  return fmt() < o.fmt();
}

std::ostream& operator<<(std::ostream& os, DType d) { return os << "dtypes." << d.name(); }

DType dtypes::from_name(std::string_view name) {
  static const std::pair<const char*, DType> aliases[] = {
    {"float16", float16}, {"float32", float32}, {"float64", float64}, {"int8", int8}, {"uint8", uint8}, {"int16", int16},
    {"uint16", uint16}, {"int32", int32}, {"uint32", uint32}, {"int64", int64}, {"uint64", uint64}};
  std::string n(name);
  for (char& c : n) c = char(std::tolower(static_cast<unsigned char>(c)));  // as tinygrad's to_dtype
  for (size_t i = 0; i < size_t(DTypeId::count); i++) if (infos[i].name == n) return DType(DTypeId(i));
  for (auto& [a, d] : aliases) if (n == a) return d;
  throw Error("unknown dtype name '" + std::string(name) + "'");
}

// ***** promotion lattice *****

namespace {
using D = DTypeId;
// parents of each dtype in the lattice (jax-style, without complex)
const std::vector<D>& parents(D d) {
  static const std::vector<D> table[size_t(D::count)] = {
    /*void*/ {}, /*weakint*/ {D::int8, D::uint8}, /*bool*/ {D::weakint}, /*int8*/ {D::int16}, /*uint8*/ {D::int16, D::uint16},
    /*int16*/ {D::int32}, /*uint16*/ {D::int32, D::uint32}, /*int32*/ {D::int64}, /*uint32*/ {D::int64, D::uint64},
    /*int64*/ {D::weakfloat}, /*uint64*/ {D::weakfloat}, /*weakfloat*/ {D::fp8e4m3, D::fp8e5m2, D::fp8e4m3fnuz, D::fp8e5m2fnuz},
    /*fp8e4m3*/ {D::float16, D::bfloat16}, /*fp8e5m2*/ {D::float16, D::bfloat16}, /*fp8e4m3fnuz*/ {D::float16, D::bfloat16},
    /*fp8e5m2fnuz*/ {D::float16, D::bfloat16}, /*float16*/ {D::float32},
    /*bfloat16*/ {D::float32}, /*float32*/ {D::float64}, /*float64*/ {}};
  return table[size_t(d)];
}
// bitmask of d and everything above it
uint32_t ancestors(D d) {
  static uint32_t memo[size_t(D::count)] = {};
  uint32_t& m = memo[size_t(d)];
  if (m) return m;
  uint32_t r = 1u << unsigned(d);
  for (D p : parents(d)) r |= ancestors(p);
  return m = r;
}
}  // namespace

namespace {
DType least_upper_slow(std::initializer_list<DType> ds) {
  uint32_t common = ~0u;
  for (DType d : ds) {
    if (d.id == D::void_) throw Error("least_upper_dtype: void has no promotion");
    common &= ancestors(d.id);
  }
  std::optional<DType> best;
  for (size_t i = 0; i < size_t(D::count); i++)
    if (common >> i & 1) if (!best || DType(D(i)) < *best) best = DType(D(i));
  if (!best) internal_error("least_upper_dtype found no common type");
  return *best;
}
}  // namespace

DType least_upper_dtype(std::initializer_list<DType> ds) {
  // the hot case (two dtypes) from a table built once
  static const auto pairs = [] {
    std::array<std::array<DType, size_t(D::count)>, size_t(D::count)> t{};
    for (size_t a = 1; a < size_t(D::count); a++)
      for (size_t b = 1; b < size_t(D::count); b++) t[a][b] = least_upper_slow({DType(D(a)), DType(D(b))});
    return t;
  }();
  if (ds.size() == 2) {
    DType a = ds.begin()[0], b = ds.begin()[1];
    if (a == b && a != dtypes::void_) return a;
    if (a != dtypes::void_ && b != dtypes::void_) return pairs[size_t(a.id)][size_t(b.id)];
  }
  return least_upper_slow(ds);
}

DType least_upper_float(DType d) {
  if (d == dtypes::weakint) return dtypes::weakfloat;
  return d.is_float() ? d : least_upper_dtype({d, dtypes::default_float});
}
DType strong_dtype(DType d) { return d == dtypes::weakint ? dtypes::default_int : d == dtypes::weakfloat ? dtypes::default_float : d; }
DType weak_dtype(DType d) { return d.is_float() ? dtypes::weakfloat : d.is_int() ? dtypes::weakint : d; }

bool can_lossless_cast(DType from, DType to) {
  if (from == to || from == dtypes::bool_) return true;
  auto in = [&](std::initializer_list<DType> l) { for (DType d : l) if (d == from) return true; return false; };
  using namespace dtypes;
  switch (to.id) {
    case D::weakint: return from.is_int() && from != weakint;
    case D::float64: return from.is_fp8() || in({float32, float16, bfloat16, uint32, uint16, uint8, int32, int16, int8});
    case D::float32: return from.is_fp8() || in({float16, bfloat16, uint16, uint8, int16, int8});
    case D::float16: return from.is_fp8() || in({uint8, int8});
    case D::uint64: return in({uint32, uint16, uint8});
    case D::uint32: return in({uint16, uint8});
    case D::uint16: return in({uint8});
    case D::int64: return in({uint32, uint16, uint8, int32, int16, int8});
    case D::int32: return in({uint16, uint8, int16, int8});
    case D::int16: return in({uint8, int8});
    default: return false;
  }
}

DType sum_acc_dtype(DType d) {
  if (d.is_unsigned()) return least_upper_dtype({d, dtypes::uint32});
  if (d.is_int() || d.is_bool()) return least_upper_dtype({d, dtypes::int32});
  return least_upper_dtype({d, dtypes::float32});
}

}  // namespace tg
