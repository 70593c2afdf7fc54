// float32 GEMM: tinygrad.cpp's generated CPU matmul vs OpenBLAS's cblas_sgemm (the anchor), in the same run with the
// same thread count (NUM_CPU_THREADS, default the host's). Each case is C = A @ B with A MxK, B KxN (A^T: A stored KxM
// and read transposed, B^T likewise; batched: one product per batch). tinygrad.cpp's figure is `realize()` of a fresh
// a@b graph over the same input buffers (schedule cache and kernel cache warm after the first call: steady state),
// OpenBLAS's one cblas_sgemm call per batch; each side's best of `reps` runs (at least 0.3 s of runs). The results are
// compared (max |diff| / max |C|) and the run fails if they differ by more than 1e-4.
//
// OpenBLAS picks its kernels from the CPU model (printed as "openblas core"); on a VM whose model it does not know it
// falls back to Prescott's SSE3 ones, a third of an AVX-512 host's speed: OPENBLAS_CORETYPE=SkylakeX picks them by hand.
//
//   build/bench/gemm            every case
//   build/bench/gemm 512 1024   these square sizes, then the other cases
//   build/bench/gemm 64x4096x4096 'A^T 1024'   only the cases of these names (an argument that is not a number)
//   OPENBLAS_CORETYPE=SkylakeX build/bench/gemm   against OpenBLAS's AVX-512 kernels
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <cblas-openblas.h>  // Debian libopenblas-dev: OpenBLAS's cblas.h under this name whatever BLAS is the default

#include "tg/tensor.h"
#include "util/settings.h"

using namespace tg;
using Clock = std::chrono::steady_clock;

namespace {

struct Case {
  std::string name;
  int64_t batch, m, n, k;
  bool ta = false, tb = false;
};

double best_seconds(const std::function<void()>& fn) {
  fn();  // warm: compile, caches, page faults
  double best = 1e30, total = 0;
  for (int r = 0; r < 3 || total < 0.3; r++) {
    auto st = Clock::now();
    fn();
    double t = std::chrono::duration<double>(Clock::now() - st).count();
    best = std::min(best, t), total += t;
  }
  return best;
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

bool run(const Case& c) {
  // stored shapes: A is (batch, m, k), or (batch, k, m) read transposed; B likewise
  Shape sa = c.ta ? Shape{c.batch, c.k, c.m} : Shape{c.batch, c.m, c.k}, sb = c.tb ? Shape{c.batch, c.n, c.k} : Shape{c.batch, c.k, c.n};
  auto ha = random_floats(size_t(c.batch * c.m * c.k), 1), hb = random_floats(size_t(c.batch * c.k * c.n), 2);
  Tensor a = Tensor::from_vector(ha, sa).realize(), b = Tensor::from_vector(hb, sb).realize();
  auto product = [&] {
    Tensor x = c.ta ? a.transpose(-1, -2) : a, y = c.tb ? b.transpose(-1, -2) : b;
    return c.batch == 1 ? x.reshape({c.m, c.k}).matmul(y.reshape({c.k, c.n})) : x.matmul(y);
  };
  Tensor out;
  double ours = best_seconds([&] { out = product().realize(); });
  std::vector<float> got = out.to_vector<float>();

  std::vector<float> want(size_t(c.batch * c.m * c.n));
  double blas = best_seconds([&] {
    for (int64_t i = 0; i < c.batch; i++)
      cblas_sgemm(CblasRowMajor, c.ta ? CblasTrans : CblasNoTrans, c.tb ? CblasTrans : CblasNoTrans, int(c.m), int(c.n), int(c.k), 1.0f,
                  ha.data() + i * c.m * c.k, int(c.ta ? c.m : c.k), hb.data() + i * c.k * c.n, int(c.tb ? c.k : c.n), 0.0f,
                  want.data() + i * c.m * c.n, int(c.n));
  });
  double maxdiff = 0, maxval = 0;
  for (size_t i = 0; i < want.size(); i++) maxdiff = std::max(maxdiff, double(std::fabs(got[i] - want[i]))), maxval = std::max(maxval, double(std::fabs(want[i])));
  double rel = maxdiff / std::max(maxval, 1e-30), gflop = 2.0 * double(c.batch * c.m * c.n * c.k) * 1e-9;
  std::printf("%-22s %9.1f GFLOP/s  openblas %9.1f GFLOP/s  ratio %5.2fx  rel.err %.1e%s\n", c.name.c_str(), gflop / ours, gflop / blas,
              blas / ours, rel, rel > 1e-4 ? "  MISMATCH" : "");
  std::fflush(stdout);
  return rel <= 1e-4;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = int(settings().NUM_CPU_THREADS);
  openblas_set_num_threads(threads);
  std::vector<Case> cases;
  std::vector<int64_t> sizes;
  std::vector<std::string> names;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (!a.empty() && a.find_first_not_of("0123456789") == std::string::npos) sizes.push_back(std::atoll(argv[i]));
    else names.push_back(a);
  }
  if (sizes.empty() && names.empty()) sizes = {256, 512, 1024, 2048, 4096};
  for (int64_t n : sizes) cases.push_back({"sgemm " + std::to_string(n), 1, n, n, n});
  cases.push_back({"4096x4096x64", 1, 4096, 4096, 64});
  cases.push_back({"64x4096x4096", 1, 64, 4096, 4096});
  cases.push_back({"A^T 1024", 1, 1024, 1024, 1024, true, false});
  cases.push_back({"B^T 1024", 1, 1024, 1024, 1024, false, true});
  cases.push_back({"batched 16x256", 16, 256, 256, 256});
  if (!names.empty())
    std::erase_if(cases, [&](const Case& c) { return c.name.starts_with("sgemm ") ? false : std::ranges::find(names, c.name) == names.end(); });
  std::printf("threads %d (tinygrad.cpp NUM_CPU_THREADS and openblas), openblas core %s, shapes MxNxK\n", threads, openblas_get_corename());
  bool ok = true;
  for (auto& c : cases) ok &= run(c);
  return ok ? 0 : 1;
}
