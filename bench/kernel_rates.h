#pragma once
// bench/infer --kernels: every kernel of a JIT-captured workload timed (the engine's DEBUG=2 launch timing, collected
// with set_launch_timer), and each contraction among them (a REDUCE of a product of two loads: a matmul, a batched
// matmul, a convolution) set against the GEMM of the same (batch, M, N, K) in the same process, the faster of OpenBLAS's
// cblas_sgemm (one call per batch) and our plain Tensor::matmul: a fused kernel must reach at least half its rate
// (issue 17: fusion never costs more than it saves).
#include <cblas-openblas.h>  // Debian libopenblas-dev

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "anchor.h"
#include "codegen/opt/postrange.h"
#include "engine/realize.h"
#include "tg/jit.h"
#include "uop/pattern_helpers.h"

namespace bench {

// a contraction's shape: M the output axes only the first operand moves along, N those only the second moves along,
// batch the output axes both (or neither) move along, K the reduce's own axes
struct Contraction {
  int64_t batch = 1, m = 1, n = 1, k = 1;
  double flops() const { return 2.0 * double(batch) * double(m) * double(n) * double(k); }
  bool operator<(const Contraction& o) const { return std::tie(batch, m, n, k) < std::tie(o.batch, o.m, o.n, o.k); }
};

// the contractions of a kernel AST (before opts): each REDUCE whose source reads exactly two buffers along its axes
inline std::vector<Contraction> contractions(const tg::UOp& ast) {
  using tg::Ops;
  tg::Scheduler s(ast, tg::RendererCaps{});
  std::vector<tg::UOp> rs = s.rngs(), stored;
  std::vector<int64_t> fs = s.full_shape();
  for (auto& u : ast.toposort()) if (u.op() == Ops::STORE) stored.push_back(u.src(0));
  std::vector<Contraction> out;
  for (const tg::UOp& red : s.reduceops()) {
    std::vector<tg::UOp> axes(red.src().begin() + 1, red.src().end()), ops;
    auto moves = [](const tg::UOp& b, const tg::UOp& r) { return b.src().size() > 1 && b.src(1).in_backward_slice_with_self(r); };
    for (auto& x : red.src(0).toposort())
      if (x.op() == Ops::INDEX && std::find(stored.begin(), stored.end(), x) == stored.end() &&
          std::any_of(axes.begin(), axes.end(), [&](const tg::UOp& r) { return moves(x, r); }))
        ops.push_back(x);
    if (ops.size() != 2) continue;
    // an output axis that one operand reads only in blocks (r // c: attention's heads x head dims read by the scores per
    // head) is two axes: its blocks for both, c inside a block for the other one alone
    auto block = [](const tg::UOp& b, const tg::UOp& r) -> int64_t {
      int64_t c = 0;
      for (auto& u : b.src(1).toposort())
        for (auto& x : u.src())
          if (x == r) {
            if (!((u.op() == Ops::CDIV || u.op() == Ops::FLOORDIV) && u.src(1).op() == Ops::CONST) || (c && c != u.src(1).val().as_int())) return 0;
            c = u.src(1).val().as_int();
          }
      return c;
    };
    Contraction c;
    for (size_t i = 0; i < rs.size(); i++) {
      if (tg::pat::axis_type(rs[i]) == tg::AxisType::REDUCE) {
        if (std::find(axes.begin(), axes.end(), rs[i]) != axes.end()) c.k *= fs[i];
        continue;
      }
      bool a = moves(ops[0], rs[i]), b = moves(ops[1], rs[i]);
      int64_t ba = a && b ? block(ops[0], rs[i]) : 0, bb = a && b ? block(ops[1], rs[i]) : 0;
      if (ba > 1 && !bb && fs[i] % ba == 0) c.batch *= fs[i] / ba, c.n *= ba;
      else if (bb > 1 && !ba && fs[i] % bb == 0) c.batch *= fs[i] / bb, c.m *= bb;
      else (a && !b ? c.m : b && !a ? c.n : c.batch) *= fs[i];
    }
    out.push_back(c);
  }
  return out;
}

// the kernels `call` launches once the JIT replays it: per launch its spec and best seconds over `reps` replays
inline std::vector<tg::TimedLaunch> time_kernels(const std::function<void()>& call, int reps = 10) {
  call(), call();  // the plain run, then the capture
  std::vector<tg::TimedLaunch> best;
  for (int r = 0; r < reps; r++) {
    std::vector<tg::TimedLaunch> t;
    tg::set_launch_timer(&t);
    try {
      call();
    } catch (...) {
      tg::set_launch_timer(nullptr);
      throw;
    }
    tg::set_launch_timer(nullptr);
    if (best.empty()) best = t;
    else if (t.size() != best.size()) throw tg::Error("time_kernels: a replay launched another number of kernels");
    else for (size_t i = 0; i < t.size(); i++) best[i].seconds = std::min(best[i].seconds, t[i].seconds);
  }
  return best;
}

// best seconds of OpenBLAS's (batch, M, K) @ (batch, K, N), one cblas_sgemm per batch
inline double blas_seconds(const Contraction& c) {
  std::vector<float> a = random_floats(size_t(c.batch * c.m * c.k), 11), b = random_floats(size_t(c.batch * c.k * c.n), 12);
  std::vector<float> out(size_t(c.batch * c.m * c.n));
  double best = 1e30;
  for (int r = 0; r < 5; r++) {
    auto st = Clock::now();
    for (int64_t i = 0; i < c.batch; i++)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(c.m), int(c.n), int(c.k), 1.0f, a.data() + i * c.m * c.k, int(c.k),
                  b.data() + i * c.k * c.n, int(c.n), 0.0f, out.data() + i * c.m * c.n, int(c.n));
    best = std::min(best, std::chrono::duration<double>(Clock::now() - st).count());
  }
  return best;
}

// seconds of a plain matmul (batch, M, K) @ (batch, K, N), all its kernels, under the JIT as the workloads run
inline double matmul_seconds(const Contraction& c) {
  std::vector<int64_t> sa{c.batch, c.m, c.k}, sb{c.batch, c.k, c.n};
  if (c.batch == 1) sa.erase(sa.begin()), sb.erase(sb.begin());
  tg::Tensor a = tg::Tensor::from_vector(random_floats(size_t(c.batch * c.m * c.k), 11), sa).realize();
  tg::Tensor b = tg::Tensor::from_vector(random_floats(size_t(c.batch * c.k * c.n), 12), sb).realize();
  tg::TinyJit<tg::Tensor> mm([](const std::vector<tg::Tensor>& in) { return in[0].matmul(in[1]).realize(); });
  double t = 0;
  for (auto& l : time_kernels([&] { mm(a, b); })) t += l.seconds;
  return t;
}

struct GemmTimes {
  double blas, ours;
};
inline GemmTimes gemm_seconds(const Contraction& c) {
  static std::map<Contraction, GemmTimes> memo;
  if (auto it = memo.find(c); it != memo.end()) return it->second;
  return memo[c] = {blas_seconds(c), matmul_seconds(c)};
}

// prints the workload's kernels, the contractions' rates against the GEMM of their shape; returns how many are below half
inline int check_kernel_rates(const std::string& name, const std::function<void()>& call) {
  std::vector<tg::TimedLaunch> ks = time_kernels(call);
  double total = 0, replay = 1e30;
  for (auto& k : ks) total += k.seconds;
  for (int r = 0; r < 10; r++) replay = std::min(replay, seconds(call));
  std::printf("== %s: %zu kernels, %.2f ms (a replay untimed: %.2f ms)\n", name.c_str(), ks.size(), total * 1e3, replay * 1e3);
  std::printf("  %-40s %8s %5s  %-22s %7s %7s %7s %6s\n", "kernel", "ms", "%time", "contraction b x M x N x K", "GFLOPS", "BLAS", "matmul", "%GEMM");
  int slow = 0;
  for (auto& k : ks) {
    std::vector<Contraction> cs = contractions(k.ast);
    double flops = 0, blas = 0, ours = 0;
    std::string shape;
    for (auto& c : cs) {
      GemmTimes g = gemm_seconds(c);
      flops += c.flops(), blas += g.blas, ours += g.ours;
      char b[64];
      std::snprintf(b, sizeof b, "%s%lldx%lldx%lldx%lld", shape.empty() ? "" : "+", (long long)c.batch, (long long)c.m, (long long)c.n, (long long)c.k);
      shape += b;
    }
    std::printf("  %-40.40s %8.3f %5.1f", k.spec->name.c_str(), k.seconds * 1e3, 100 * k.seconds / total);
    if (cs.empty()) {
      std::printf("\n");
      continue;
    }
    double pct = 100 * std::min(blas, ours) / k.seconds;
    bool bad = pct < 50;
    slow += bad;
    std::printf("  %-22s %7.1f %7.1f %7.1f %5.0f%%%s\n", shape.c_str(), flops / k.seconds * 1e-9, flops / blas * 1e-9, flops / ours * 1e-9, pct,
                bad ? "  SLOW" : "");
  }
  return slow;
}

}  // namespace bench
