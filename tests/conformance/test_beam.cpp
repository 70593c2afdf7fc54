// BEAM (codegen/opt/search.cpp) against libtorch: a round's candidates compiled in batches over the cores compute what
// the ones compiled one clang at a time do, a candidate cut short for timing writes a part of its output with the
// right values, and the kernels BEAM picks compute the ops.
#include <cmath>
#include <map>

#include "codegen/opt/search.h"
#include "codegen/pipeline.h"
#include "runtime/clang.h"
#include "runtime/device.h"
#include "tensor/tensor_impl.h"
#include "tensor_harness.h"
#include "tg/context.h"

using namespace conf;

namespace {

// the only kernel of t's schedule, before opts
tg::UOp only_kernel(const tg::Tensor& t) {
  std::vector<tg::UOp> ks;
  tg::UOp sched = tg::schedule_linear({t});  // kept alive: src() views its node
  for (auto& c : sched.src())
    if (c.src(0).op() == tg::Ops::SINK) ks.push_back(c.src(0));
  if (ks.size() != 1) throw tg::Error("expected one kernel, got " + std::to_string(ks.size()));
  return ks[0];
}

// runs a candidate of the (m x k) @ (k x n) matmul kernel on a and b (its buffers told apart by their sizes), the output
// filled with NaN first: what it writes, NaN where it writes nothing
std::vector<float> run_matmul(const tg::BeamCandidate& c, const std::vector<float>& a, const std::vector<float>& b, size_t out_n) {
  tg::Device& dev = tg::get_device("CPU");
  std::vector<float> out(out_n, std::nanf(""));
  std::vector<std::pair<void*, size_t>> bufs;
  std::vector<void*> ptrs;
  for (const tg::KernelParam& p : c.spec->kernel.params) {
    if (!p.is_buffer()) continue;
    const std::vector<float>& host = size_t(p.numel) == a.size() ? a : size_t(p.numel) == b.size() ? b : out;
    size_t nbytes = host.size() * sizeof(float);
    bufs.push_back({dev.alloc(nbytes), nbytes});
    dev.copyin(bufs.back().first, host.data(), nbytes);
    ptrs.push_back(bufs.back().first);
  }
  tg::LaunchDims dims;
  for (size_t i = 0; i < 3; i++) dims.global[i] = int(c.spec->global[i]), dims.local[i] = int(c.spec->local[i]);
  c.prg->launch(ptrs, {}, dims);
  size_t oi = 0;
  for (const tg::KernelParam& p : c.spec->kernel.params) if (p.is_buffer() && size_t(p.numel) == out_n) break; else if (p.is_buffer()) oi++;
  dev.copyout(out.data(), bufs[oi].first, out_n * sizeof(float));
  for (auto& [p, n] : bufs) dev.free(p, n);
  return out;
}

struct Matmul {
  int64_t m, k, n;
  Pair a, b;
  at::Tensor want;
  std::vector<float> va, vb;
  Matmul(int64_t m_, int64_t k_, int64_t n_) : m(m_), k(k_), n(n_), a(input({m, k}, dtypes::float32, -1, 1, 1)), b(input({k, n}, dtypes::float32, -1, 1, 2)) {
    want = at::matmul(a.a.to(at::kDouble), b.a.to(at::kDouble));
    va = a.t.to_vector<float>(), vb = b.t.to_vector<float>();
  }
  tg::Scheduler scheduler() const { return tg::Scheduler(only_kernel(a.t.matmul(b.t)), tg::caps_of(tg::ClangRenderer())); }
  double want_at(size_t i) const { return want.view({-1})[int64_t(i)].item<double>(); }
  double tol() const { return 1e-6 * double(k) + 1e-5; }
};

}  // namespace

TEST(Beam, BatchCompiledCandidatesMatchSerialOnes) {
  tg::Context ctx({{"NUM_CPU_THREADS", 2}, {"CACHELEVEL", 0}});  // no disk cache: each path compiles for itself
  Matmul mm(24, 20, 36);  // 480, 720 and 864 floats: the buffers' sizes tell them apart
  std::vector<tg::Scheduler> cands;
  for (auto& [i, s] : tg::get_kernel_actions(mm.scheduler(), false)) cands.push_back(s);
  for (size_t j = 0, n = cands.size(); j < std::min<size_t>(n, 3); j++)  // and those two opts away from the first few
    for (auto& [i, s] : tg::get_kernel_actions(cands[j], false)) cands.push_back(s);
  auto compile = [&](int64_t batch, uint64_t& compiles) {
    tg::Context c({{"COMPILE_BATCH", batch}});
    std::set<std::string> seen;
    uint64_t before = tg::clang_invocations();
    auto r = tg::compile_candidates(tg::get_device("CPU"), tg::ClangRenderer(), cands, seen, false);
    compiles = tg::clang_invocations() - before;
    return r;
  };
  uint64_t batched_compiles = 0, serial_compiles = 0;
  auto batched = compile(64, batched_compiles), serial = compile(0, serial_compiles);
  ASSERT_EQ(batched.size(), serial.size());
  ASSERT_GT(batched.size(), 20u);
  EXPECT_EQ(serial_compiles, serial.size());
  EXPECT_LT(batched_compiles, serial_compiles / 4) << "a round's candidates compile in a few clang invocations";
  for (size_t j = 0; j < batched.size(); j++) {
    ASSERT_EQ(batched[j].index, serial[j].index);
    ASSERT_TRUE(batched[j].prg && serial[j].prg) << "candidate " << j;
    auto x = run_matmul(batched[j], mm.va, mm.vb, 24 * 36), y = run_matmul(serial[j], mm.va, mm.vb, 24 * 36);
    EXPECT_EQ(0, std::memcmp(x.data(), y.data(), x.size() * sizeof(float))) << cands[batched[j].index].applied_opts[0].str();
    double err = 0;
    for (size_t i = 0; i < x.size(); i++) err = std::max(err, std::isnan(x[i]) ? INFINITY : std::fabs(x[i] - mm.want_at(i)));
    EXPECT_LE(err, mm.tol()) << cands[batched[j].index].applied_opts[0].str();
  }
}

TEST(Beam, ShrunkCandidateWritesAPartOfItsOutput) {
  tg::Context ctx({{"NUM_CPU_THREADS", 2}});
  Matmul mm(64, 40, 48);
  tg::Scheduler s = mm.scheduler();
  s.apply_opt(tg::Opt{tg::OptOps::UPCAST, 1, tg::Arg(int64_t(4))});
  // index space 64 * 12 * 40 * 4 = 122880: the outer axis halves to 16, then the next one (12) stays as it is (16 at
  // the least), then the reduce is left alone: 16 * 12 * 40 * 4 = 30720
  tg::Scheduler cut = s;
  double factor = tg::shrink_for_timing(cut, 8192);
  EXPECT_EQ(factor, 4.0);
  tg::Scheduler same = s;
  EXPECT_EQ(tg::shrink_for_timing(same, 122880), 1.0);
  std::set<std::string> seen;
  auto c = tg::compile_candidates(tg::get_device("CPU"), tg::ClangRenderer(), {cut, s}, seen, false);
  ASSERT_EQ(c.size(), 2u);
  auto part = run_matmul(c[0], mm.va, mm.vb, 64 * 48), whole = run_matmul(c[1], mm.va, mm.vb, 64 * 48);
  size_t written = 0;
  for (size_t i = 0; i < part.size(); i++) {
    EXPECT_LE(std::fabs(whole[i] - mm.want_at(i)), mm.tol()) << i;
    if (std::isnan(part[i])) continue;
    written++;
    EXPECT_EQ(part[i], whole[i]) << i;
  }
  EXPECT_EQ(double(written), 64.0 * 48.0 / factor);
}

TEST(Beam, ChosenKernelsMatchTorch) {
  // searched afresh, candidates timed cut short (a small BEAM_TEST_SIZE; tests/codegen's searches time them whole)
  // (BEAM_MIN_US=0: kernels this small are otherwise kept as the heuristic makes them, unsearched)
  tg::Context ctx({{"BEAM", 2}, {"IGNORE_BEAM_CACHE", 1}, {"BEAM_TEST_SIZE", 4096}, {"NUM_CPU_THREADS", 2}, {"BEAM_MIN_US", 0}});
  Matmul mm(40, 72, 56);
  at::Tensor got = to_torch(mm.a.t.matmul(mm.b.t)).to(at::kDouble);
  EXPECT_LE((got - mm.want).abs().max().item<double>(), mm.tol());
  // a reduce with an elementwise tail: relu of the row sums, minus the column max
  Pair x = input({48, 96}, dtypes::float32, -2, 2, 3);
  at::Tensor t = to_torch((x.t.sum(1).relu().unsqueeze(1) - x.t.max(0)).contiguous());
  at::Tensor w = x.a.sum(1).relu().unsqueeze(1) - std::get<0>(x.a.max(0));
  EXPECT_LE((t - w).abs().max().item<double>(), 1e-4);
}
