// tinygrad's codegen/decomp/transcendental.py (SLEEF-style EXP2/LOG2/SIN) as UOp builders and the rewrite that uses them.
#include "codegen/decomp/transcendental.h"

#include <bit>
#include <cmath>
#include <functional>
#include <numbers>

namespace tg {

namespace {
using namespace dtypes;

int mantissa_bits(DType d) { return d == float16 ? 10 : d == float32 ? 23 : 52; }
int exponent_bits(DType d) { return d == float16 ? 5 : d == float32 ? 8 : 11; }
int64_t exponent_bias(DType d) { return (int64_t(1) << (exponent_bits(d) - 1)) - 1; }
int64_t exponent_mask(DType d) { return (int64_t(1) << exponent_bits(d)) - 1; }
DType int_of(DType f) { return f == float64 ? int64 : f == float32 ? int32 : int16; }
DType uint_of(DType f) { return f == float64 ? uint64 : f == float32 ? uint32 : uint16; }

void need_float(const UOp& d, const char* fn) {
  if (!is_transcendental_dtype(d.dtype()))
    throw Error(std::string(fn) + ": dtype " + std::string(d.dtype().name()) + " is not float16/float32/float64");
}
// the pipeline's late decompositions commit the expansions' weak literals as they go; built at the dtype they are
// committed to (the other operand's), they need no commit, each of which rebuilt every node above it. The kernels are
// the same; the graphs of the helpers alone stay tinygrad's (tests/codegen/test_transcendental.cpp counts their nodes)
thread_local bool committed_literals = false;
struct CommittedLiterals {
  bool saved = committed_literals;
  explicit CommittedLiterals(bool on) { committed_literals = on; }
  ~CommittedLiterals() { committed_literals = saved; }
};
template <Scalar T> UOp lit_like(const UOp& x, T v) { return committed_literals ? x.const_like(lit(v).val()) : lit(v); }

UOp shr(const UOp& x, int y) { return x / lit_like(x, int64_t(1) << y); }
UOp shl(const UOp& x, int y) { return x * lit_like(x, int64_t(1) << y); }
UOp cf(const UOp& like, double v) { return like.const_like(ConstVal(v)); }

// inf -> inf, -inf -> _inf, nan -> nan, otherwise -> ratio
UOp lazy_map_numbers(const UOp& x, const UOp& inf, const UOp& ninf, const UOp& nan, const UOp& ratio) {
  return x.ne(lit_like(x, INFINITY)).where(x.ne(x).where(nan, x.ne(lit_like(x, -INFINITY)).where(ratio, ninf)), inf);
}
UOp ifand(const UOp& q, int64_t n) { return (q & n).ne(lit(0)); }

UOp trig_poly(const UOp& d, const std::vector<double>& c32, const std::vector<double>& c64) {
  return d * poly_n(d * d, d.dtype() == float64 ? c64 : c32);
}
UOp sin_poly(const UOp& d) {
  return trig_poly(d, {2.6083159809786593541503e-06, -0.0001981069071916863322258, 0.00833307858556509017944336, -0.166666597127914428710938, 1.0},
                   {-7.97255955009037868891952e-18, 2.81009972710863200091251e-15, -7.64712219118158833288484e-13,
                    1.60590430605664501629054e-10, -2.50521083763502045810755e-08, 2.75573192239198747630416e-06,
                    -0.000198412698412696162806809, 0.00833333333333332974823815, -0.166666666666666657414808, 1.0});
}
UOp sin_poly_small(const UOp& d, const UOp& q) {
  UOp r = sin_poly(d);
  return r * ifand(q, 1).where(cf(r, -1), cf(r, 1));
}
UOp sin_poly_large(const UOp& d, const UOp& q) {
  UOp r = sin_poly(d + ifand(q, 1).where(cf(d, std::numbers::pi / 2), cf(d, 0)));
  return r * ifand(q, 2).where(cf(r, -1), cf(r, 1));
}
}  // namespace

bool is_transcendental_dtype(DType d) { return d == float16 || d == float32 || d == float64; }

UOp poly_n(const UOp& x, const std::vector<double>& coeffs) {
  // functools.reduce(lambda acc,c: acc*x+c, p, 0.0): the first step is 0.0*x + c0 (a literal times x)
  UOp acc;
  for (size_t i = 0; i < coeffs.size(); i++) acc = (i == 0 ? lit_like(x, 0.0) * x : acc * x) + lit_like(x, coeffs[i]);
  return acc;
}

UOp rintk(const UOp& d) {
  need_float(d, "rintk");
  return (d + (d < lit_like(d, 0.0)).where(cf(d, -0.5), cf(d, 0.5))).cast(int_of(d.dtype()));
}

UOp pow2if(const UOp& q, DType float_dtype) {
  DType out = q.dtype() == int64 ? float64 : q.dtype() == int32 ? float32 : float_dtype;
  return shl(q + lit_like(q, exponent_bias(out)), mantissa_bits(out)).bitcast(out);
}

UOp ilogb2k(const UOp& d) {
  need_float(d, "ilogb2k");
  UOp dint = d.bitcast(int_of(d.dtype()));
  return (shr(dint, mantissa_bits(d.dtype())) & exponent_mask(d.dtype())) - exponent_bias(d.dtype());
}

UOp ldexp3k(const UOp& d, const UOp& e) {
  need_float(d, "ldexp3k");
  DType it = int_of(d.dtype());
  UOp m1 = d.bitcast(it), m2 = shl(e.cast(it), mantissa_bits(d.dtype()));
  return (m1 + m2).bitcast(d.dtype());
}

UOp ldexp2k(const UOp& d, const UOp& e) {
  need_float(d, "ldexp2k");
  return (d * pow2if(shr(e, 1), d.dtype())) * pow2if(e - shr(e, 1), d.dtype());
}

std::pair<UOp, UOp> frexp(const UOp& v) {
  need_float(v, "frexp");
  DType dt = v.dtype();
  int64_t m1 = dt == float64 ? 0x000FFFFFFFFFFFFF : dt == float32 ? 0x807FFFFF : 0x83FF;
  int64_t m2 = dt == float64 ? 0x3FE0000000000000 : dt == float32 ? 0x3F000000 : 0x3800;
  UOp bits = v.bitcast(uint_of(dt));
  UOp exponent = shr(bits, mantissa_bits(dt)) & exponent_mask(dt);
  UOp mantissa = ((bits & m1) | m2).bitcast(dt);
  return {mantissa, exponent - exponent_bias(dt) + 1};
}

std::pair<UOp, UOp> payne_hanek_reduction(const UOp& d) {
  need_float(d, "payne_hanek_reduction");
  // 190 bits of 2/pi
  static const int64_t two_over_pi_f[] = {0x00000000, 0x28be60db, 0x9391054a, 0x7f09d5f4, 0x7d4d3770, 0x36d8a566, 0x4f10e410};
  constexpr int n_two_over_pi = 7;
  DType inter = d.dtype() == float16 ? float32 : d.dtype();
  auto [f, e0] = frexp(d);
  UOp ia = (f.cast(inter) * 4.294967296e9).cast(uint64);
  UOp i = shr(e0.cast(uint64), 5);
  UOp e = e0.cast(int32) & 31;
  UOp offset = 32 - e;
  // an = two_over_pi_f[i + off], as a chain of WHEREs on i
  std::function<UOp(const UOp&, int, int)> take = [&](const UOp& an, int off, int count) -> UOp {
    if (count + off < n_two_over_pi - 1)
      return i.ne(lit(count)).where(take(an, off, count + 1), an.const_like(ConstVal(two_over_pi_f[count + off])));
    return an;
  };
  auto shl_lazy = [&](const UOp& x, const UOp& y) { return (x.cast(uint64) * pow2if(y, d.dtype()).cast(uint64)).cast(uint32); };
  auto shr_lazy = [&](const UOp& x, const UOp& y) { return (x.cast(uint64) / pow2if(y, d.dtype()).cast(uint64)).cast(uint32); };
  std::vector<UOp> a;
  for (int k = 0; k < 4; k++) a.push_back(take(UOp::const_(ConstVal(int64_t(0)), uint32), k, 0));
  UOp hi = shl_lazy(a[0], e) | shr_lazy(a[1], offset);
  UOp mi = shl_lazy(a[1], e) | shr_lazy(a[2], offset);
  UOp lo = shl_lazy(a[2], e) | shr_lazy(a[3], offset);
  auto hp_mul = [](const UOp& x, const UOp& y) { return x.cast(uint64) * y.cast(uint64); };
  UOp p = shl(hp_mul(ia, hi), 32) + hp_mul(ia, mi) + shr(hp_mul(ia, lo), 32);
  UOp q = shr(p, 62).cast(int32);
  p = p & int64_t(0x3fffffffffffffff);
  UOp r = (p.cast(inter) * 3.4061215800865545e-19).cast(d.dtype());
  return {(f < 0.5).where(r, r - std::numbers::pi / 2), (f < 0.5).where(q, q + 1)};
}

namespace {
UOp reduce_d(const UOp& x, const UOp& q, const UOp& qdh) {
  if (x.dtype() == float64) {
    const double PI_A = 3.1415926218032836914, PI_B = 3.1786509424591713469e-08, PI_C = 1.2246467864107188502e-16,
                 PI_D = 1.2736634327021899816e-24;
    UOp d = qdh * -PI_A + x;
    d = q * -PI_A + d;
    d = qdh * -PI_B + d;
    d = q * -PI_B + d;
    d = qdh * -PI_C + d;
    d = q * -PI_C + d;
    return (qdh + q) * -PI_D + d;
  }
  // FP16 needs FP32 precision here to reach 1 ULP
  if (x.dtype() == float16) return reduce_d(x.cast(float32), q.cast(float32), qdh).cast(float16);
  UOp d = q * -3.1414794921875 + x;
  d = q * -0.00011315941810607910156 + d;
  d = q * -1.9841872589410058936e-09 + d;
  return q * -1.2154201256553420762e-10 + d;
}
}  // namespace

std::pair<UOp, UOp> cody_waite_reduction(const UOp& d) {
  need_float(d, "cody_waite_reduction");
  const double m_1_pi = 0.318309886183790671537767526745028724;
  UOp qdh = (d * (m_1_pi / 16777216.0)).cast(int64).cast(d.dtype()) * 16777216.0;
  UOp quadrant = d.dtype() == float64 ? rintk(d * m_1_pi - qdh) : rintk(d * m_1_pi);
  return {reduce_d(d, quadrant.cast(d.dtype()), qdh), quadrant.cast(int32)};
}

UOp xsin(const UOp& d, bool fast, double switch_over) {
  need_float(d, "xsin");
  UOp zero = cf(d, 0.0);
  UOp x = lazy_map_numbers(d, zero, zero, zero, d);  // +-inf/nan masked as 0
  UOp x_sign = x.ne(lit(0)).where((x < 0).where(cf(x, -1), cf(x, 1)), cf(x, 0));
  UOp x_abs = x * x_sign;
  auto [r, q] = fast ? cody_waite_reduction(x_abs) : payne_hanek_reduction(x_abs);
  UOp result;
  if (fast) result = sin_poly_small(r, q);
  else {
    // Payne-Hanek assumes |x| >= pi/4: small values go through Cody-Waite
    auto [r_small, q_small] = cody_waite_reduction(x_abs);
    result = (x_abs < switch_over).where(sin_poly_small(r_small, q_small), sin_poly_large(r, q));
  }
  result = result * x_sign;
  UOp nan = cf(d, NAN);
  return lazy_map_numbers(d, nan, nan, nan, result);
}

UOp xexp2(const UOp& d) {
  need_float(d, "xexp2");
  UOp zero = cf(d, 0.0);
  UOp x = lazy_map_numbers(d, zero, zero, zero, d);
  UOp q = rintk(x);
  UOp s = x - q;
  UOp u = d.dtype() == float64
              ? poly_n(s, {0.4434359082926529454e-9, 0.7073164598085707425e-8, 0.1017819260921760451e-6, 0.1321543872511327615e-5,
                           0.1525273353517584730e-4, 0.1540353045101147808e-3, 0.1333355814670499073e-2, 0.9618129107597600536e-2,
                           0.5550410866482046596e-1, 0.2402265069591012214e+0, 0.6931471805599452862e+0, 0.1000000000000000000e+1})
              : poly_n(s, {0.1535920892e-3, 0.1339262701e-2, 0.9618384764e-2, 0.5550347269e-1, 0.2402264476e+0, 0.6931471825e+0, 1.0});
  u = ldexp2k(u, q);
  int64_t upper = d.dtype() == float64 ? 1024 : d.dtype() == float32 ? 128 : 23;
  int64_t lower = d.dtype() == float64 ? -2000 : d.dtype() == float32 ? -150 : -22;
  u = (d >= lit_like(d, upper)).where(cf(d, INFINITY), u);
  u = (d < lit_like(d, lower)).where(cf(d, 0.0), u);
  return d.ne(d).where(cf(d, NAN), u);
}

UOp xlog2(const UOp& d) {
  need_float(d, "xlog2");
  DType dt = d.dtype();
  int denormal_exp = dt == float16 ? 10 : 64;
  UOp flt_min = cf(d, dt == float16 ? 6.1e-5 : 1e-4);
  UOp is_denormal = d < flt_min;
  UOp a = is_denormal.where(d * std::ldexp(1.0, denormal_exp), d);
  UOp e = ilogb2k(a * (1.0 / 0.75)).cast(dt);
  UOp m = ldexp3k(a, -e);
  e = is_denormal.where(e - denormal_exp, e);
  UOp x = (m - 1.0) / (m + 1.0);
  UOp x2 = x * x;
  UOp r;
  if (dt == float64) {
    UOp t = poly_n(x2, {0.2211941750456081490e+0, 0.2200768693152277689e+0, 0.2623708057488514656e+0, 0.3205977477944495502e+0,
                        0.4121985945485324709e+0, 0.5770780162997058982e+0, 0.96179669392608091449});
    r = t * (x * x2) + e + x * 2.885390081777926774;
  } else {
    UOp t = poly_n(x2, {0.4374550283e+0, 0.5764790177e+0, 0.9618012905120});
    // the s_lo term only for float32 (it underflows in float16)
    UOp base = t * (x * x2) + e + x * 2.8853900432586669922;
    r = dt == float32 ? base + x * 3.2734474483568488616e-08 : base + 0;
  }
  r = d.ne(lit(INFINITY)).where(r, cf(r, INFINITY));
  r = d.ne(lit(0.0)).where(r, cf(r, -INFINITY));
  r = (d < -0.0).where(cf(r, NAN), r);
  r = d.ne(d).where(cf(r, NAN), r);
  // log2(-0.0) = -inf, detected through the reciprocal (x == -0.0 is not reliable everywhere)
  return d.reciprocal().ne(lit(-INFINITY)).where(r, cf(r, -INFINITY));
}

UOp xpow(const UOp& base, const UOp& exponent) {
  UOp ret = (base < 0).where(-base, base).log2().binop(Ops::MUL, exponent).exp2();
  // negative base: nan for a non-integer exponent, negated for an odd integer one; -inf never gives nan
  UOp non_int = exponent.ne(exponent.cast(int32).cast(exponent.dtype()));
  UOp is_odd = ((exponent < 0).where(-exponent, exponent).cast(int32) % 2).cast(bool_);
  UOp neg_base = non_int.where(base.ne(lit(-INFINITY)).where(cf(ret, NAN), ret), is_odd.where(-ret, ret));
  return exponent.eq(lit(0)).where(cf(ret, 1), (base < 0).where(neg_base, ret));
}

PatternMatcher get_transcendental_patterns(OpSet supported_ops, bool force_transcendental, bool commit_literals) {
  std::vector<Rule> rules;
  DTypeSet tdts{float16, float32, float64};
  DTypeSet other;
  other.bits = dtypes::floats().bits & ~tdts.bits;
  const std::pair<Ops, UOp (*)(const UOp&)> fns[] = {
      {Ops::EXP2, &xexp2}, {Ops::LOG2, &xlog2}, {Ops::SIN, [](const UOp& d) { return xsin(d); }}};
  for (auto [op, f] : fns) {
    if (supported_ops.has(op) && !force_transcendental) continue;
    rules.push_back(UPat(op, tdts, {UPat::var("d")}) >> [f, commit_literals](M m) {
      CommittedLiterals scope(commit_literals);
      return f(m["d"]);
    });
    if (other.bits)
      rules.push_back(UPat(op, other, {UPat::var("d")}, {}, "x") >>
                      [](M m) { return m["d"].cast(float32).alu(m["x"].op()).cast(m["x"].dtype()); });
  }
  if (!supported_ops.has(Ops::SQRT) || force_transcendental)
    rules.push_back(UPat(Ops::SQRT, {}, {UPat::var("d")}) >> [](M m) { return xpow(m["d"], cf(m["d"], 0.5)); });
  return PatternMatcher(std::move(rules));
}

const PatternMatcher& pm_xpow() {
  static const PatternMatcher pm = PatternMatcher{
      UPat(Ops::POW, {}, {}, {}, "p") >> [](M m) { return xpow(m["p"].src(0), m["p"].src(1)); },
  }.pure();
  return pm;
}

}  // namespace tg
