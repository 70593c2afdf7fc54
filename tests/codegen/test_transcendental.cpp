// The transcendental decompositions (src/codegen/decomp/transcendental.cpp): graph sizes equal tinygrad's
// (tests/tools/gen_transcendental_cases.py), and the graphs, evaluated with each dtype's own arithmetic, stay within
// the tolerances of tinygrad's test/backend/test_transcendental.py over thousands of inputs per dtype.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <unordered_map>

#include "codegen/decomp/transcendental.h"
#include "uop/symbolic.h"

using namespace tg;

namespace {

// ** a small evaluator with each dtype's own arithmetic: floats rounded to their width after every op, ints wrapped
// (uint64 kept unsigned), CAST as C/x86 does it, BITCAST on the bit patterns. (tg::eval_uop has no BITCAST and keeps
// uint64 values signed, which Payne-Hanek needs.)
struct Val {
  double f = 0;
  uint64_t u = 0;  // the bit pattern of an int/bool, wrapped to its width
};

double round_to(DType dt, double x) {
  if (dt == dtypes::float32) return double(float(x));
  if (dt == dtypes::float16) return double(_Float16(x));
  return x;
}
int64_t sext(DType dt, uint64_t u) {
  int nb = dt.bitsize();
  if (nb >= 64) return int64_t(u);
  uint64_t m = uint64_t(1) << (nb - 1);
  u &= (m << 1) - 1;
  return int64_t((u ^ m) - m);
}
uint64_t wrap(DType dt, uint64_t u) {
  if (dt == dtypes::bool_) return u != 0;
  int nb = dt.bitsize();
  if (nb >= 64) return u;
  u &= (uint64_t(1) << nb) - 1;
  return dt.is_unsigned() ? u : uint64_t(sext(dt, u));
}
bool isf(DType dt) { return dt.is_float(); }
double as_d(DType dt, const Val& v) {
  if (isf(dt)) return v.f;
  if (dt.is_unsigned() || dt == dtypes::bool_) return double(v.u);
  return double(int64_t(v.u));
}
uint64_t float_bits(DType dt, double x) {
  if (dt == dtypes::float64) return std::bit_cast<uint64_t>(x);
  if (dt == dtypes::float32) return std::bit_cast<uint32_t>(float(x));
  return std::bit_cast<uint16_t>(_Float16(x));
}
double bits_float(DType dt, uint64_t u) {
  if (dt == dtypes::float64) return std::bit_cast<double>(u);
  if (dt == dtypes::float32) return std::bit_cast<float>(uint32_t(u));
  return double(std::bit_cast<_Float16>(uint16_t(u)));
}
Val cast_to(DType from, DType to, const Val& v) {
  Val r;
  if (isf(to)) r.f = round_to(to, as_d(from, v));
  else if (to == dtypes::bool_) r.u = isf(from) ? v.f != 0 : v.u != 0;
  else if (isf(from)) {
    double x = std::trunc(v.f);
    if (to == dtypes::uint64 && x >= 0 && x < 18446744073709551616.0) r.u = uint64_t(x);
    else if (std::isnan(x) || x < -9223372036854775808.0 || x >= 9223372036854775808.0) r.u = uint64_t(1) << 63;  // x86 cvttsd2si
    else r.u = uint64_t(int64_t(x));
    r.u = wrap(to, r.u);
  } else r.u = wrap(to, v.u);
  return r;
}

struct Program {
  struct Ins {
    Ops op;
    DType dt;
    std::vector<int> src;
    Val c;
  };
  std::vector<Ins> ins;
  int input = -1;
  Program(const UOp& root, const UOp& x) {
    std::unordered_map<const UOpNode*, int> idx;
    for (auto* n : root.topo_nodes()) {
      UOp u(n);
      Ins in{n->op, n->dtype, {}, {}};
      for (auto& s : u.src()) in.src.push_back(idx.at(s.get()));
      if (u == x) in.op = Ops::NOOP;
      else if (n->op == Ops::CONST) {
        ConstVal cv = u.val();
        if (isf(n->dtype)) in.c.f = round_to(n->dtype, cv.as_double());
        else in.c.u = wrap(n->dtype, uint64_t(cv.i));
      }
      idx[n] = int(ins.size());
      ins.push_back(std::move(in));
    }
    input = idx.count(x.get()) ? idx.at(x.get()) : -1;
  }
  double run(double xv) const {
    std::vector<Val> v(ins.size());
    for (size_t k = 0; k < ins.size(); k++) {
      const Ins& in = ins[k];
      auto S = [&](int j) -> const Val& { return v[in.src[j]]; };
      auto SD = [&](int j) { return ins[in.src[j]].dt; };
      DType dt = in.dt;
      Val r;
      using enum Ops;
      switch (in.op) {
        case NOOP: r.f = xv; break;
        case STACK: break;
        case CONST: r = in.c; break;
        case CAST: r = cast_to(SD(0), dt, S(0)); break;
        case BITCAST:
          if (isf(dt)) r.f = bits_float(dt, isf(SD(0)) ? float_bits(SD(0), S(0).f) : S(0).u);
          else r.u = wrap(dt, isf(SD(0)) ? float_bits(SD(0), S(0).f) : S(0).u);
          break;
        case WHERE: r = S(0).u ? S(1) : S(2); break;
        case CMPLT: {
          DType s = SD(0);
          if (isf(s)) r.u = S(0).f < S(1).f;
          else if (s.is_unsigned() || s == dtypes::bool_) r.u = S(0).u < S(1).u;
          else r.u = int64_t(S(0).u) < int64_t(S(1).u);
          break;
        }
        case CMPNE: r.u = isf(SD(0)) ? !(S(0).f == S(1).f) : S(0).u != S(1).u; break;
        case ADD: if (isf(dt)) r.f = round_to(dt, S(0).f + S(1).f); else r.u = wrap(dt, S(0).u + S(1).u); break;
        case MUL: if (isf(dt)) r.f = round_to(dt, S(0).f * S(1).f); else r.u = wrap(dt, S(0).u * S(1).u); break;
        case FDIV: r.f = round_to(dt, S(0).f / S(1).f); break;
        case RECIPROCAL: r.f = round_to(dt, 1.0 / S(0).f); break;
        case EXP2: r.f = round_to(dt, std::exp2(S(0).f)); break;
        case LOG2: r.f = round_to(dt, std::log2(S(0).f)); break;
        case AND: r.u = S(0).u & S(1).u; break;
        case OR: r.u = S(0).u | S(1).u; break;
        case FLOORDIV: case FLOORMOD: {
          if (dt.is_unsigned()) { r.u = in.op == FLOORDIV ? S(0).u / S(1).u : S(0).u % S(1).u; break; }
          int64_t a = int64_t(S(0).u), b = int64_t(S(1).u), q = a / b;
          if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
          r.u = wrap(dt, uint64_t(in.op == FLOORDIV ? q : a - q * b));
          break;
        }
        default: throw Error(std::string("test evaluator: no ") + std::string(op_name(in.op)));
      }
      v[k] = r;
    }
    return v.back().f;
  }
};

UOp input(DType dt) { return UOp::variable("x", 0, 1, dt); }
size_t nodes(const UOp& u) { return u.toposort().size(); }

std::vector<double> inputs(DType dt, double lo, double hi, int n_uniform, int n_bits, uint32_t seed) {
  std::vector<double> xs = {0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, 10.0, -10.0, 0.75, 1.5, 30.0, -30.0, 25.0, 35.0, -35.0,
                            std::numbers::pi, std::numbers::pi / 2, 2 * std::numbers::pi, 88.7, 11.0, 709.5, 1e-4, 6e-5, 1e-5,
                            INFINITY, -INFINITY, NAN, 39800.0, 1e5, 1e6, 1e7};
  double tiny = dt == dtypes::float16 ? 6.103515625e-05 : dt == dtypes::float32 ? double(std::numeric_limits<float>::min())
                                                                                 : std::numeric_limits<double>::min();
  double maxv = dt == dtypes::float16 ? 65504.0 : dt == dtypes::float32 ? double(std::numeric_limits<float>::max())
                                                                         : std::numeric_limits<double>::max();
  for (double s : {1.0, 0.5, 0.25, 1e-3, 1e10, 1e20, 1e30}) xs.push_back(tiny * s), xs.push_back(-tiny * s);  // incl. denormals
  xs.push_back(maxv), xs.push_back(-maxv);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uni(lo, hi);
  for (int i = 0; i < n_uniform; i++) xs.push_back(uni(rng));
  for (int i = 0; i < n_bits; i++) xs.push_back(bits_float(dt, rng()));  // every magnitude, denormals, inf and nan
  for (double& x : xs) x = round_to(dt, x);
  return xs;
}

// numpy's assert_allclose: |a-e| <= atol + rtol*|e|, nan matches nan, infinities must be equal
bool close(double a, double e, double atol, double rtol) {
  if (std::isnan(e) || std::isnan(a)) return std::isnan(e) && std::isnan(a);
  if (std::isinf(e) || std::isinf(a)) return a == e;
  return std::fabs(a - e) <= atol + rtol * std::fabs(e);
}
double ulps(DType dt, double a, double e) {
  if (std::isnan(a) || std::isnan(e) || std::isinf(a) || std::isinf(e)) return (a == e || (std::isnan(a) && std::isnan(e))) ? 0 : INFINITY;
  double min_ulp = dt == dtypes::float16 ? 0x1p-24 : dt == dtypes::float32 ? 0x1p-149 : 0x1p-1074;  // the denormal step
  double ulp = e == 0 ? min_ulp : std::max(min_ulp, std::ldexp(1.0, std::ilogb(e) - (dt == dtypes::float16 ? 10 : dt == dtypes::float32 ? 23 : 52)));
  return std::fabs(a - e) / ulp;
}

struct Tol {
  double atol, rtol;
};
Tol tol(DType dt) {  // test_float64 / test_float32 / test_float16 of test_transcendental.py
  if (dt == dtypes::float64) return {3e-2, 1e-5};
  if (dt == dtypes::float32) return {2e-5, 1e-5};
  return {1e-2, 5e-3};
}

double ref_exp2(double x) { return std::exp2(x); }
double ref_log2(double x) { return x == 0 ? -INFINITY : x < 0 ? NAN : std::log2(x); }
double ref_sin(double x) { return std::sin(x); }

void check_fn(const char* name, const UOp& x, const UOp& g, double (*ref)(double), const std::vector<double>& xs,
              double skip_abs_over = INFINITY) {
  DType dt = x.dtype();
  Program p(g, x);
  Tol t = tol(dt);
  int bad = 0, n = 0;
  double max_ulp = 0, max_abs = 0;
  for (double xv : xs) {
    if (std::fabs(xv) > skip_abs_over) continue;
    n++;
    double got = p.run(xv), want = round_to(dt, ref(xv));
    // tinygrad's xlog2 finds -0.0 through 1/x == -inf: a negative x whose reciprocal overflows (a negative denormal)
    // gives -inf there too (tinygrad on CPU, float32: log2(-1e-39) = -inf)
    if (ref == ref_log2 && xv < 0 && round_to(dt, 1.0 / xv) == -INFINITY) want = -INFINITY;
    if (!close(got, want, t.atol, t.rtol)) {
      if (bad++ < 10) ADD_FAILURE() << name << "(" << dt << " " << xv << ") = " << got << ", want " << want;
    }
    // ulps where the result is not near a zero of the function (there the absolute error is what counts)
    if (std::isfinite(want) && std::fabs(want) > 1e-2) max_ulp = std::max(max_ulp, ulps(dt, got, want));
    if (std::isfinite(want)) max_abs = std::max(max_abs, std::fabs(got - want));
  }
  EXPECT_EQ(bad, 0) << name << " " << dt;
  std::printf("%-6s %-8s %6d inputs, max error %.3g ulp (|result| > 0.01), max abs error %.3g\n", name,
              std::string(dt.name()).c_str(), n, max_ulp, max_abs);
}


const DType kDtypes[] = {dtypes::float16, dtypes::float32, dtypes::float64};

}  // namespace

TEST(Transcendental, NodeCountsMatchTinygrad) {
  // tests/tools/gen_transcendental_cases.py: nodes of the result minus the nodes of the input(s)
  struct Case {
    DType dt;
    size_t exp2, log2, sin, sin_fast, pow;
  } cases[] = {{dtypes::float16, 67, 69, 212, 70, 31}, {dtypes::float32, 67, 71, 205, 66, 31}, {dtypes::float64, 82, 80, 247, 98, 31}};
  for (auto& c : cases) {
    UOp x = input(c.dt), y = UOp::variable("y", 0, 1, c.dt);
    size_t base = nodes(x);
    EXPECT_EQ(nodes(xexp2(x)) - base, c.exp2) << c.dt;
    EXPECT_EQ(nodes(xlog2(x)) - base, c.log2) << c.dt;
    EXPECT_EQ(nodes(xsin(x)) - base, c.sin) << c.dt;
    EXPECT_EQ(nodes(xsin(x, true)) - base, c.sin_fast) << c.dt;
    EXPECT_EQ(nodes(xpow(x, y)) - nodes(UOp::sink({x, y})) + 1, c.pow) << c.dt;
  }
}

TEST(Transcendental, Exp2) {
  for (DType dt : kDtypes) {
    UOp x = input(dt);
    double lim = dt == dtypes::float16 ? 20 : dt == dtypes::float32 ? 140 : 1100;
    check_fn("exp2", x, xexp2(x), ref_exp2, inputs(dt, -lim, lim, 6000, 6000, 1));
  }
}

TEST(Transcendental, Log2) {
  for (DType dt : kDtypes) {
    UOp x = input(dt);
    std::vector<double> xs = inputs(dt, -10, 1000, 6000, 6000, 2);
    for (double v : inputs(dt, 0, 1e-3, 2000, 0, 3)) xs.push_back(v);
    check_fn("log2", x, xlog2(x), ref_log2, xs);
  }
}

TEST(Transcendental, Sin) {
  for (DType dt : kDtypes) {
    UOp x = input(dt);
    std::vector<double> xs = inputs(dt, -100, 100, 6000, 6000, 4);
    for (double v : inputs(dt, -1e5, 1e5, 2000, 0, 5)) xs.push_back(v);  // Payne-Hanek (|x| >= 30)
    if (dt != dtypes::float16)
      for (double v : inputs(dt, -1e7, 1e7, 2000, 0, 6)) xs.push_back(v);
    // tinygrad's own test skips float64 sin above 1e8 ("reduction does not work"); float32/16 take every input
    check_fn("sin", x, xsin(x), ref_sin, xs, dt == dtypes::float64 ? 1e8 : INFINITY);
    // fast (Cody-Waite only) for |x| <= 30
    check_fn("sinf", x, xsin(x, true), ref_sin, inputs(dt, -30, 30, 3000, 0, 7), 30);
  }
}

TEST(Transcendental, FuzzerValuesWithinOneUlp) {
  // TestFromFuzzer: atol = ulp(1.0) of the dtype (1.5 for sin(2pi)), rtol 1e-5
  for (DType dt : kDtypes) {
    UOp x = input(dt);
    double one_ulp = dt == dtypes::float16 ? 0x1p-10 : dt == dtypes::float32 ? 0x1p-23 : 0x1p-52;
    Program s(xsin(x), x), l(xlog2(x), x);
    for (double v : {-35.0, -25.0, 25.0, 30.0, 35.0, 0.0, std::numbers::pi / 2}) {
      double xv = round_to(dt, v);
      EXPECT_TRUE(close(s.run(xv), round_to(dt, std::sin(xv)), one_ulp, 1e-5)) << "sin " << dt << " " << v;
    }
    double tp = round_to(dt, 2 * std::numbers::pi);
    EXPECT_TRUE(close(s.run(tp), round_to(dt, std::sin(tp)), 1.5 * one_ulp, 1e-5)) << "sin(2pi) " << dt;
    double tiny = dt == dtypes::float16 ? 6.103515625e-05 : dt == dtypes::float32 ? double(std::numeric_limits<float>::min())
                                                                                   : std::numeric_limits<double>::min();
    std::vector<double> vs = {0, 0.0000009};
    for (double sc : {1.0, 1e10, 1e20, 1e30}) vs.push_back(tiny * sc), vs.push_back(-tiny * sc);
    for (double v : vs) {
      double xv = round_to(dt, v);
      EXPECT_TRUE(close(l.run(xv), round_to(dt, ref_log2(xv)), one_ulp, 1e-5)) << "log2 " << dt << " " << v;
    }
  }
}

TEST(Transcendental, BitExactWithTinygradOnCpu) {
  // tinygrad's outputs with TRANSCENDENTAL=2 on its CPU device (tests/tools/gen_transcendental_cases.py with
  // DEV=CPU TRANSCENDENTAL=2)
  struct {
    DType dt;
    const char* fn;
    double x, want;
  } cases[] = {
      {dtypes::float32, "exp2", 0.30000001192092896, 1.2311444282531738},
      {dtypes::float32, "exp2", -1.7000000476837158, 0.30778607726097107},
      {dtypes::float32, "exp2", 5.5, 45.25483322143555},
      {dtypes::float32, "exp2", 40.25, 1307547009024.0},
      {dtypes::float32, "exp2", -77.125, 6.068223766560796e-24},
      {dtypes::float32, "exp2", 0.0010000000474974513, 1.000693440437317},
      {dtypes::float32, "log2", 0.30000001192092896, -1.736965537071228},
      {dtypes::float32, "log2", 1.7000000476837158, 0.7655348181724548},
      {dtypes::float32, "log2", 5.5, 2.4594316482543945},
      {dtypes::float32, "log2", 40.25, 5.330916881561279},
      {dtypes::float32, "log2", 77.125, 6.269126892089844},
      {dtypes::float32, "log2", 0.0010000000474974513, -9.965784072875977},
      {dtypes::float32, "log2", 123.45600128173828, 6.947853088378906},
      {dtypes::float32, "log2", 10000.099609375, 13.287726402282715},
      {dtypes::float32, "log2", 48722.20703125, 15.572291374206543},
      {dtypes::float32, "log2", 92871.2109375, 16.50294303894043},
      {dtypes::float32, "log2", 3000000.75, 21.516530990600586},
      {dtypes::float32, "log2", 80568800.0, 26.263717651367188},
      {dtypes::float32, "sin", 0.30000001192092896, 0.29552021622657776},
      {dtypes::float32, "sin", -1.7000000476837158, -0.9916647672653198},
      {dtypes::float32, "sin", 5.5, -0.7055404186248779},
      {dtypes::float32, "sin", 40.25, 0.5569462776184082},
      {dtypes::float32, "sin", -77.125, -0.9878597855567932},
      {dtypes::float32, "sin", 0.0010000000474974513, 0.0009999998146668077},
      {dtypes::float32, "sin", 123.45600128173828, -0.803938090801239},
      {dtypes::float32, "sin", 10000.099609375, -0.39878639578819275},
      {dtypes::float32, "sin", -48722.20703125, -0.6841468214988708},
      {dtypes::float32, "sin", 92871.2109375, -0.5236144661903381},
      {dtypes::float32, "sin", 3000000.75, -0.3171212375164032},
      {dtypes::float32, "sin", -80568800.0, 0.983465313911438},
      {dtypes::float64, "exp2", 0.3, 1.2311444133449163},
      {dtypes::float64, "exp2", -1.7, 0.3077861033362291},
      {dtypes::float64, "exp2", 5.5, 45.25483399593904},
      {dtypes::float64, "exp2", 40.25, 1307547050779.4426},
      {dtypes::float64, "exp2", -77.125, 6.068223729373144e-24},
      {dtypes::float64, "exp2", 0.001, 1.0006933874625807},
      {dtypes::float64, "log2", 0.3, -1.7369655941662063},
      {dtypes::float64, "log2", 1.7, 0.765534746362977},
      {dtypes::float64, "log2", 5.5, 2.4594316186372973},
      {dtypes::float64, "log2", 40.25, 5.330916878114617},
      {dtypes::float64, "log2", 77.125, 6.2691266791494185},
      {dtypes::float64, "log2", 0.001, -9.965784284662087},
      {dtypes::float64, "log2", 123.456, 6.947853143387016},
      {dtypes::float64, "log2", 10000.1, 13.287726806427724},
      {dtypes::float64, "log2", 48722.20625775316, 15.572291842946658},
      {dtypes::float64, "log2", 92871.20884068125, 16.50294379315887},
      {dtypes::float64, "log2", 3000000.7, 21.516531406674137},
      {dtypes::float64, "log2", 80568802.64989384, 26.263717979700857},
      {dtypes::float64, "sin", 0.3, 0.29552020666133955},
      {dtypes::float64, "sin", -1.7, -0.9916648104524686},
      {dtypes::float64, "sin", 5.5, -0.7055403255703917},
      {dtypes::float64, "sin", 40.25, 0.5569462797382115},
      {dtypes::float64, "sin", -77.125, -0.9878597658698022},
      {dtypes::float64, "sin", 0.001, 0.0009999998333333417},
      {dtypes::float64, "sin", 123.456, -0.8039373509907551},
      {dtypes::float64, "sin", 10000.1, -0.3991431144440583},
      {dtypes::float64, "sin", -48722.20625775316, -0.6847141934172317},
      {dtypes::float64, "sin", 92871.20884068125, -0.5254072103876783},
      {dtypes::float64, "sin", 3000000.7, -0.36485191694533187},
      {dtypes::float64, "sin", -80568802.64989384, -0.9445773629196954}};
  int exact = 0;
  for (auto& c : cases) {
    UOp x = input(c.dt);
    std::string fn = c.fn;
    UOp g = fn == "exp2" ? xexp2(x) : fn == "log2" ? xlog2(x) : xsin(x);
    // tinygrad's pipeline simplifies the graph before rendering (constant folding and reassociation), so the last bit
    // may differ from the raw graph's (51 of 60 are equal, the rest within 2 ulp)
    double got = Program(g, x).run(c.x);
    EXPECT_LE(ulps(c.dt, got, c.want), 2.0) << fn << " " << c.dt << " " << c.x << ": " << got << " vs " << c.want;
    exact += got == c.want;
  }
  std::printf("%d of %zu equal to tinygrad's CPU result bit for bit\n", exact, std::size(cases));
}

TEST(Transcendental, SpecialValues) {
  for (DType dt : kDtypes) {
    UOp x = input(dt);
    Program e(xexp2(x), x), l(xlog2(x), x), s(xsin(x), x);
    EXPECT_EQ(e.run(INFINITY), INFINITY);
    EXPECT_EQ(e.run(-INFINITY), 0.0);
    EXPECT_TRUE(std::isnan(e.run(NAN)));
    EXPECT_EQ(e.run(0.0), 1.0);
    EXPECT_EQ(l.run(INFINITY), INFINITY);
    EXPECT_EQ(l.run(0.0), -INFINITY);
    EXPECT_EQ(l.run(-0.0), -INFINITY);
    EXPECT_TRUE(std::isnan(l.run(-1.0)));
    EXPECT_TRUE(std::isnan(l.run(-INFINITY)));
    EXPECT_TRUE(std::isnan(l.run(NAN)));
    EXPECT_EQ(l.run(1.0), 0.0);
    EXPECT_TRUE(std::isnan(s.run(INFINITY)));
    EXPECT_TRUE(std::isnan(s.run(-INFINITY)));
    EXPECT_TRUE(std::isnan(s.run(NAN)));
    EXPECT_EQ(s.run(0.0), 0.0);
  }
}

TEST(Transcendental, Pow) {
  for (DType dt : {dtypes::float32, dtypes::float64}) {
    UOp b = input(dt), ex = UOp::variable("y", 0, 1, dt);
    UOp g = xpow(b, ex);
    struct {
      double b, e, want;
    } cs[] = {{2, 3, 8}, {-2, 3, -8}, {-2, 2, 4}, {4, 0.5, 2}, {0, 0, 1}, {INFINITY, 0, 1}, {-INFINITY, 0.5, INFINITY}, {-2, 0.5, NAN}};
    for (auto& c : cs) {
      // two inputs: evaluate with the exponent folded in as a constant
      UOp ge = g.substitute({{ex, UOp::const_(ConstVal(c.e), dt)}});
      double got = Program(ge, b).run(c.b);
      if (std::isnan(c.want)) EXPECT_TRUE(std::isnan(got)) << c.b << "**" << c.e;
      else if (std::isinf(c.want)) EXPECT_EQ(got, c.want) << c.b << "**" << c.e;
      else EXPECT_NEAR(got, c.want, 1e-5 * std::fabs(c.want) + 1e-6) << c.b << "**" << c.e;
    }
  }
}

TEST(Transcendental, PatternsRewriteAndBitcastFolds) {
  UOp x = input(dtypes::float32);
  UOp g = UOp::sink({x.exp2(), x.log2(), x.sin(), x.sqrt()});
  PatternMatcher pm = get_transcendental_patterns({}, false) + pm_fold_bitcast() + symbolic_simple();
  UOp out = graph_rewrite(g, pm);
  for (auto& u : out.toposort()) {
    EXPECT_FALSE(u.op() == Ops::EXP2 || u.op() == Ops::LOG2 || u.op() == Ops::SIN || u.op() == Ops::SQRT) << op_name(u.op());
    if (u.op() == Ops::BITCAST) { EXPECT_NE(u.src(0).op(), Ops::CONST); }
  }
  Program p0(out.src(0), x), p1(out.src(1), x), p2(out.src(2), x), p3(out.src(3), x);
  for (double v : {0.3, 1.7, 5.0, 40.0}) {
    EXPECT_NEAR(p0.run(v), std::exp2(v), 1e-5 * std::exp2(v));
    EXPECT_NEAR(p1.run(v), std::log2(v), 2e-5);
    EXPECT_NEAR(p2.run(v), std::sin(v), 2e-5);
    EXPECT_NEAR(p3.run(v), std::sqrt(v), 1e-5 * std::sqrt(v));
  }
  // supported ops stay; bfloat16 goes through float32
  PatternMatcher keep = get_transcendental_patterns(OpSet{Ops::EXP2, Ops::LOG2, Ops::SIN, Ops::SQRT}, false);
  EXPECT_EQ(graph_rewrite(g, keep), g);
  UOp xb = input(dtypes::bfloat16);
  UOp rb = graph_rewrite(xb.exp2(), get_transcendental_patterns({}, false));
  EXPECT_EQ(rb.op(), Ops::CAST);
  EXPECT_EQ(rb.dtype(), dtypes::bfloat16);
  // the folding itself
  EXPECT_EQ(graph_rewrite(UOp::const_(ConstVal(1.0), dtypes::float32).bitcast(dtypes::int32), pm_fold_bitcast()).val().i, 0x3f800000);
  EXPECT_EQ(graph_rewrite(UOp::const_(ConstVal(int64_t(0x3c00)), dtypes::int16).bitcast(dtypes::float16), pm_fold_bitcast()).val().f, 1.0);
  EXPECT_EQ(graph_rewrite(UOp::const_(ConstVal(-1.0), dtypes::float64).bitcast(dtypes::uint64), pm_fold_bitcast()).val().i,
            int64_t(0xBFF0000000000000ull));
}
