// fp8 through kernels (the default device: CPU; DEV=CL runs them on OpenCL, DEV=CPU with NVRTC_CHECK compiles them
// for CUDA too). libtorch 1.13 has no fp8, so the oracle is the formats written out (tests/support/fp8_spec.h):
// every bit pattern decoded by the textbook formula, every cast by a search for the nearest value, ties to even.
#include "tensor_harness.h"

#include "support/fp8_spec.h"

using namespace conf;
using tg::test::Fp8Spec;
using tg::test::fp8_spec_decode;
using tg::test::fp8_spec_kernel_cast;
using tg::test::fp8_specs;

namespace {

std::string nm(DType d) { return std::string(d.name()); }
bool same_value(double a, double b) { return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b)); }

tg::Tensor all_patterns(DType d) {
  std::vector<uint8_t> b(256);
  for (unsigned i = 0; i < 256; i++) b[i] = uint8_t(i);
  return tg::Tensor::from_bytes(b, d, {256});
}

// the float32 values a cast is checked on: every finite fp8 value, the midpoints between neighbours and either side of
// them, values beyond the range and below it, the specials
std::vector<float> probe_values(const Fp8Spec& f) {
  std::vector<float> xs;
  for (unsigned b = 0; b < 0x80; b++) {
    double lo = fp8_spec_decode(f, b), hi = fp8_spec_decode(f, b + 1);
    if (!std::isfinite(lo)) continue;
    xs.push_back(float(lo));
    if (b + 1 < 0x80 && std::isfinite(hi)) {
      float mid = float((lo + hi) / 2);
      xs.insert(xs.end(), {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)});
    }
  }
  for (double x : {f.max * 1.03, f.max * 4, 1e30, f.min_subnormal / 2, f.min_subnormal / 3, 1e-30, 0.1, 3.14159}) xs.push_back(float(x));
  size_t n = xs.size();
  for (size_t i = 0; i < n; i++) xs.push_back(-xs[i]);
  xs.insert(xs.end(), {INFINITY, -INFINITY, NAN, -0.0f});
  return xs;
}

void expect_patterns(const std::vector<uint8_t>& got, const std::vector<unsigned>& want, const Fp8Spec& f, const std::string& what,
                     const std::vector<float>* xs = nullptr) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); i++) {
    if (want[i] == 0x100) EXPECT_TRUE(std::isnan(fp8_spec_decode(f, got[i]))) << what << " " << nm(f.dtype) << " #" << i;
    else EXPECT_EQ(unsigned(got[i]), want[i]) << what << " " << nm(f.dtype) << " #" << i << (xs ? " x=" + std::to_string((*xs)[i]) : "");
  }
}

}  // namespace

TEST(Fp8, DecodeEveryPatternInAKernel) {
  for (const Fp8Spec& f : fp8_specs()) {
    std::vector<float> got = all_patterns(f.dtype).cast(dtypes::float32).to_vector<float>();
    std::vector<double> got64 = all_patterns(f.dtype).cast(dtypes::float64).to_vector<double>();
    ASSERT_EQ(got.size(), 256u);
    for (unsigned b = 0; b < 256; b++) {
      EXPECT_TRUE(same_value(got[b], fp8_spec_decode(f, b))) << nm(f.dtype) << " 0x" << std::hex << b << ": " << got[b];
      EXPECT_TRUE(same_value(got64[b], fp8_spec_decode(f, b))) << nm(f.dtype) << " f64 0x" << std::hex << b;
    }
  }
}

TEST(Fp8, CastFromFloatRoundsNearestEvenAndSaturates) {
  for (const Fp8Spec& f : fp8_specs()) {
    std::vector<float> xs = probe_values(f);
    std::vector<unsigned> want;
    for (float x : xs) want.push_back(fp8_spec_kernel_cast(f, x));
    tg::Tensor t = tg::Tensor::from_vector(xs).cast(f.dtype);
    EXPECT_EQ(t.dtype(), f.dtype);
    expect_patterns(t.bitcast(dtypes::uint8).to_vector<uint8_t>(), want, f, "float32 ->", &xs);
    // and back: the decoded value of what was stored
    std::vector<float> back = t.cast(dtypes::float32).to_vector<float>();
    for (size_t i = 0; i < xs.size(); i++)
      if (want[i] != 0x100) EXPECT_TRUE(same_value(back[i], fp8_spec_decode(f, want[i]))) << nm(f.dtype) << " x=" << xs[i];
    // float64 and float16 sources go through float32 (exact for these values)
    std::vector<double> xd(xs.begin(), xs.end());
    expect_patterns(tg::Tensor::from_vector(xd).cast(f.dtype).bitcast(dtypes::uint8).to_vector<uint8_t>(), want, f, "float64 ->", &xs);
  }
}

TEST(Fp8, CastsToAndFromOtherDtypes) {
  for (const Fp8Spec& f : fp8_specs()) {
    tg::Tensor p = all_patterns(f.dtype);
    std::vector<int32_t> ints = p.cast(dtypes::int32).to_vector<int32_t>();
    std::vector<uint8_t> bools = p.cast(dtypes::bool_).bitcast(dtypes::uint8).to_vector<uint8_t>();
    std::vector<float> halves = p.cast(dtypes::float16).cast(dtypes::float32).to_vector<float>();
    for (unsigned b = 0; b < 256; b++) {
      double v = fp8_spec_decode(f, b);
      if (std::isfinite(v)) EXPECT_EQ(ints[b], int32_t(std::trunc(v))) << nm(f.dtype) << " -> int32 0x" << std::hex << b;
      EXPECT_EQ(bools[b], v != 0 ? 1 : 0) << nm(f.dtype) << " -> bool 0x" << std::hex << b;  // NaN is true
      EXPECT_TRUE(same_value(halves[b], v)) << nm(f.dtype) << " -> float16 0x" << std::hex << b;  // every fp8 value is a half
    }
    // ints, bools and halves into fp8
    std::vector<int32_t> is{0, 1, -1, 7, 17, -33, 100, 239, 241, 300, 448, 449, 1000, 70000, -70000};
    std::vector<unsigned> want;
    for (int32_t i : is) want.push_back(fp8_spec_kernel_cast(f, double(i)));
    expect_patterns(tg::Tensor::from_vector(is).cast(f.dtype).bitcast(dtypes::uint8).to_vector<uint8_t>(), want, f, "int32 ->");
    std::vector<uint8_t> us{0, 1, 2, 3, 9, 15, 17, 255};
    want.clear();
    for (uint8_t u : us) want.push_back(fp8_spec_kernel_cast(f, double(u)));
    expect_patterns(tg::Tensor::from_vector(us).cast(f.dtype).bitcast(dtypes::uint8).to_vector<uint8_t>(), want, f, "uint8 ->");
    expect_patterns(tg::Tensor::from_vector(std::vector<bool>{true, false}).cast(f.dtype).bitcast(dtypes::uint8).to_vector<uint8_t>(),
                    {fp8_spec_kernel_cast(f, 1.0), 0}, f, "bool ->");
    std::vector<float> hs{0.5f, -2.75f, 0.0999755859375f, 1000.0f};
    want.clear();
    for (float h : hs) want.push_back(fp8_spec_kernel_cast(f, h));
    expect_patterns(tg::Tensor::from_vector(hs).cast(dtypes::float16).cast(f.dtype).bitcast(dtypes::uint8).to_vector<uint8_t>(), want, f,
                    "float16 ->");
    // between the fp8 formats: decode, then the nearest pattern of the target (saturating)
    for (const Fp8Spec& g : fp8_specs()) {
      if (g.dtype == f.dtype) continue;
      std::vector<unsigned> w;
      for (unsigned b = 0; b < 256; b++) w.push_back(fp8_spec_kernel_cast(g, fp8_spec_decode(f, b)));
      expect_patterns(p.cast(g.dtype).bitcast(dtypes::uint8).to_vector<uint8_t>(), w, g, nm(f.dtype) + " ->");
    }
  }
}

TEST(Fp8, ArithmeticRoundsEachResult) {
  // every pair from a spread of patterns: the result of each op is the float32 result cast to fp8
  for (const Fp8Spec& f : fp8_specs()) {
    std::vector<uint8_t> av, bv;
    const unsigned picks[] = {0x00, 0x01, 0x07, 0x0d, 0x22, 0x38, 0x3b, 0x41, 0x55, 0x6e, 0x7a, 0x80, 0x93, 0xb8, 0xc5, 0xf0};
    for (unsigned a : picks)
      for (unsigned b : picks) {
        if (!std::isfinite(fp8_spec_decode(f, a)) || !std::isfinite(fp8_spec_decode(f, b))) continue;
        av.push_back(uint8_t(a)), bv.push_back(uint8_t(b));
      }
    int64_t n = int64_t(av.size());
    tg::Tensor a = tg::Tensor::from_bytes(av, f.dtype, {n}), b = tg::Tensor::from_bytes(bv, f.dtype, {n});
    struct Op { const char* name; tg::Tensor t; float (*fn)(float, float); };
    std::vector<Op> ops{{"add", a + b, [](float x, float y) { return x + y; }},
                        {"sub", a - b, [](float x, float y) { return x - y; }},
                        {"mul", a * b, [](float x, float y) { return x * y; }},
                        {"max", a.maximum(b), [](float x, float y) { return std::max(x, y); }}};
    for (auto& op : ops) {
      ASSERT_EQ(op.t.dtype(), f.dtype) << op.name;
      std::vector<unsigned> want;
      for (int64_t i = 0; i < n; i++) want.push_back(fp8_spec_kernel_cast(f, op.fn(float(fp8_spec_decode(f, av[i])), float(fp8_spec_decode(f, bv[i])))));
      expect_patterns(op.t.bitcast(dtypes::uint8).to_vector<uint8_t>(), want, f, op.name);
    }
    // unary ops: also through float32, rounded once
    std::vector<uint8_t> neg = (-a).bitcast(dtypes::uint8).to_vector<uint8_t>(), rt = a.abs().sqrt().bitcast(dtypes::uint8).to_vector<uint8_t>();
    std::vector<unsigned> wneg, wrt;
    for (int64_t i = 0; i < n; i++) {
      float x = float(fp8_spec_decode(f, av[i]));
      wneg.push_back(fp8_spec_kernel_cast(f, -x)), wrt.push_back(fp8_spec_kernel_cast(f, std::sqrt(std::fabs(x))));
    }
    expect_patterns(neg, wneg, f, "neg");
    for (int64_t i = 0; i < n; i++)  // the sign of sqrt(abs(-0)) is abs's business: zeros compare as values
      EXPECT_TRUE(rt[size_t(i)] == wrt[size_t(i)] || (fp8_spec_decode(f, rt[size_t(i)]) == 0 && fp8_spec_decode(f, wrt[size_t(i)]) == 0))
          << nm(f.dtype) << " sqrt #" << i;
    std::vector<bool> lt = (a < b).to_vector<bool>();
    for (int64_t i = 0; i < n; i++) EXPECT_EQ(lt[i], fp8_spec_decode(f, av[i]) < fp8_spec_decode(f, bv[i])) << nm(f.dtype) << " lt #" << i;
    // mixed with a float32 tensor: promoted to float32, no rounding to fp8
    std::vector<float> sum = (a + tg::Tensor::from_vector(std::vector<float>(size_t(n), 0.1f))).to_vector<float>();
    for (int64_t i = 0; i < n; i++) EXPECT_EQ(sum[i], float(fp8_spec_decode(f, av[i])) + 0.1f) << nm(f.dtype);
  }
}

TEST(Fp8, CreationAndReduce) {
  for (const Fp8Spec& f : fp8_specs()) {
    tg::Tensor full = tg::Tensor::full({2, 3}, 1.3, f.dtype);
    EXPECT_EQ(full.dtype(), f.dtype);
    unsigned want = tg::test::fp8_spec_nearest(f, 1.3);
    for (uint8_t b : full.bitcast(dtypes::uint8).to_vector<uint8_t>()) EXPECT_EQ(unsigned(b), want) << nm(f.dtype);
    for (float v : tg::Tensor::ones({4}, f.dtype).cast(dtypes::float32).to_vector<float>()) EXPECT_EQ(v, 1.0f) << nm(f.dtype);
    EXPECT_EQ(tg::Tensor::from_vector(std::vector<float>{0.3f, -5.0f}, {2}, f.dtype).dtype(), f.dtype);
    // sum accumulates in float32 and casts back (tinygrad's sum of a narrow float)
    std::vector<uint8_t> bytes{0x38, 0x39, 0x3a, 0x3b, 0x30, 0x28, 0x41, 0x45};
    tg::Tensor t = tg::Tensor::from_bytes(bytes, f.dtype, {8});
    float acc = 0;
    for (uint8_t b : bytes) acc += float(fp8_spec_decode(f, b));
    tg::Tensor s = t.sum();
    EXPECT_EQ(s.dtype(), f.dtype);
    EXPECT_EQ(unsigned(s.bitcast(dtypes::uint8).item<uint8_t>()), fp8_spec_kernel_cast(f, acc)) << nm(f.dtype);
    EXPECT_EQ(t.sum({}, false, dtypes::float32).item<float>(), acc) << nm(f.dtype);
    // 0-d and empty
    tg::Tensor s0 = tg::Tensor::from_vector(std::vector<float>{2.5f}, {}).cast(f.dtype);
    EXPECT_EQ(s0.shape(), tg::Shape{});
    EXPECT_EQ(s0.cast(dtypes::float32).item<float>(), float(fp8_spec_decode(f, tg::test::fp8_spec_nearest(f, 2.5))));
    tg::Tensor e = tg::Tensor::from_bytes({}, f.dtype, {0, 3});
    EXPECT_TRUE((e + e).cast(dtypes::float32).to_vector<float>().empty());
    EXPECT_EQ(e.sum().cast(dtypes::float32).item<float>(), 0.0f);
  }
}

TEST(Fp8, Rand) {
  // tinygrad's rand: the top mantissa bits of random bytes under the exponent of 1, minus 1: multiples of 2^-mbits in [0, 1)
  for (const Fp8Spec& f : fp8_specs()) {
    tg::Tensor::manual_seed(3);
    tg::Tensor r = tg::Tensor::rand({64}, f.dtype);
    EXPECT_EQ(r.dtype(), f.dtype);
    std::vector<float> v = r.cast(dtypes::float32).to_vector<float>();
    std::vector<bool> seen(size_t(1) << f.mbits);
    for (float x : v) {
      float k = x * float(1 << f.mbits);
      ASSERT_TRUE(x >= 0 && x < 1 && k == std::floor(k)) << nm(f.dtype) << " " << x;
      seen[size_t(k)] = true;
    }
    EXPECT_EQ(std::count(seen.begin(), seen.end(), true), 1 << f.mbits) << nm(f.dtype);  // 64 draws hit all 4 or 8 values
  }
}
