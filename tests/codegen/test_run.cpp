// Kernels from the codegen pipeline, compiled and run on the CPU runtime with known inputs; outputs derived by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <memory>

#include "codegen/pipeline.h"
#include "codegen_cases.h"
#include "runtime/buffer.h"
#include "runtime/device.h"
#include "support/parse.h"
#include "tg/context.h"

using namespace tg;

namespace {

struct Env {
  Env(bool noopt) : ctx{{"NOOPT", noopt}, {"NUM_CPU_THREADS", 8}} {}
  Context ctx;
};

// the program for kernel k of a case, compiled and loaded
struct Loaded {
  std::shared_ptr<const ProgramSpec> spec;
  std::unique_ptr<Program> prg;
};
Loaded load_case(const std::string& name, bool noopt, size_t k = 0) {
  static auto cases = codegen_cases::load();
  for (auto& c : cases)
    if (c.name == name && c.noopt == noopt) {
      Env env(noopt);
      Device& cpu = get_device("CPU");
      auto spec = to_program(parse_uop(c.kernels.at(k).ast), ClangRenderer());
      return {spec, cpu.load_cached(spec->kernel.entry_name, spec->kernel.src)};
    }
  throw Error("no codegen case " + name);
}

// runs with the buffers in param order (output first); returns the output
template <class T, class... In> std::vector<T> run(const Loaded& l, size_t nout, const std::vector<In>&... ins) {
  std::vector<std::unique_ptr<Buffer>> bufs;
  bufs.push_back(std::make_unique<Buffer>("CPU", nout, std::is_floating_point_v<T> ? dtypes::float32 : dtypes::int32));
  (bufs.push_back(std::make_unique<Buffer>("CPU", ins.size(), std::is_floating_point_v<In> ? dtypes::float32 : dtypes::int32)), ...);
  size_t i = 1;
  ((bufs[i++]->copyin(ins.data(), ins.size() * sizeof(In))), ...);
  std::vector<void*> ptrs;
  for (auto& b : bufs) ptrs.push_back(b->ptr());
  LaunchDims dims;
  dims.global = {int(l.spec->global[0]), 1, 1};
  l.prg->launch(ptrs, {}, dims);
  std::vector<T> out(nout);
  bufs[0]->copyout(out.data(), nout * sizeof(T));
  return out;
}
std::vector<float> seq(size_t n, float start, float step) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) v[i] = start + step * float(i);
  return v;
}

}  // namespace

TEST(CodegenRun, SumAxis1Upcast) {
  for (bool noopt : {true, false}) {
    auto l = load_case("sum_axis1", noopt);
    auto in = seq(12, 1.f, 0.5f);
    auto out = run<float>(l, 3, in);
    for (int r = 0; r < 3; r++) EXPECT_FLOAT_EQ(out[r], in[r * 4] + in[r * 4 + 1] + in[r * 4 + 2] + in[r * 4 + 3]) << noopt;
  }
}

TEST(CodegenRun, Matmul) {
  auto l = load_case("matmul", false);
  auto a = seq(12, 1.f, 0.5f), b = seq(20, -2.f, 0.25f);
  auto out = run<float>(l, 15, a, b);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 5; j++) {
      float e = 0;
      for (int k = 0; k < 4; k++) e += a[i * 4 + k] * b[k * 5 + j];
      EXPECT_NEAR(out[i * 5 + j], e, 1e-4) << i << "," << j;
    }
}

TEST(CodegenRun, IntDivModFloors) {
  auto l = load_case("int_divmod", false);
  std::vector<int> a{-7, -6, -5, -1, 0, 1, 5, 8}, b{-8, -4, -3, -1, 0, 2, 4, 7};
  auto out = run<int>(l, 8, a, b);
  auto fdiv = [](int x, int y) { int q = x / y; return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q; };
  auto fmod = [](int x, int y) { int r = x % y; return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r; };
  for (int i = 0; i < 8; i++) EXPECT_EQ(out[i], fdiv(a[i], 3) + fmod(b[i], 3)) << i;
}

TEST(CodegenRun, PadValueMasks) {
  auto l = load_case("pad_value", false);
  auto in = seq(12, 1.f, 1.f);
  auto out = run<float>(l, 20, in);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 5; j++) EXPECT_EQ(out[i * 5 + j], i >= 1 && j < 4 ? in[(i - 1) * 4 + j] : 2.f) << i << "," << j;
}

TEST(CodegenRun, ExpDecomposed) {
  auto l = load_case("exp", true);
  auto in = seq(4, -1.5f, 1.25f);
  auto out = run<float>(l, 4, in);
  for (int i = 0; i < 4; i++) EXPECT_NEAR(out[i], std::exp(in[i]), 1e-5 * std::exp(in[i])) << i;
}

TEST(CodegenRun, ThreadedAdd) {
  auto l = load_case("big_add", false);
  EXPECT_EQ(l.spec->global[0], 8);
  EXPECT_EQ(l.spec->vars, std::vector<std::string>{"core_id"});
  size_t n = 1024 * 1024;
  auto a = seq(n, 0.f, 1.f), b = seq(n, 3.f, -2.f);
  auto out = run<float>(l, n, a, b);
  for (size_t i = 0; i < n; i += 997) EXPECT_EQ(out[i], a[i] + b[i]) << i;
  EXPECT_EQ(out[n - 1], a[n - 1] + b[n - 1]);
}

TEST(CodegenRun, ThreadedSum) {
  auto l = load_case("big_sum", false);
  EXPECT_EQ(l.spec->global[0], 8);
  std::vector<float> in(2048 * 512);
  for (size_t i = 0; i < in.size(); i++) in[i] = float(i % 7) - 3.f;
  auto out = run<float>(l, 2048, in);
  for (int r = 0; r < 2048; r++) {
    float e = 0;
    for (int c = 0; c < 512; c++) e += in[r * 512 + c];
    ASSERT_EQ(out[r], e) << r;
  }
}

TEST(CodegenRun, GatherLoadCollapse) {
  auto l = load_case("gather", false);
  std::vector<int> idx{4, 0, -3, 2};
  auto src = seq(15, 1.f, 0.5f);
  auto out = run<float>(l, 12, idx, src);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 3; j++) EXPECT_EQ(out[i * 3 + j], src[(idx[i] < 0 ? idx[i] + 5 : idx[i]) * 3 + j]) << i << "," << j;
}
