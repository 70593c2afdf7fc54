// Framework overhead, tinygrad.cpp side (bench/overhead_tinygrad.py is tinygrad's side; bench/run_overhead.sh prints
// both and the ratios). For each graph:
//   cold:   a fresh graph is built, scheduled with the schedule cache off, and every kernel is lowered to source with
//           no program memo (the C compiler is not run): the time from building to having all sources.
//   steady: the same structure on new buffers, realized (timed from the built graph to the kernels having run): realize
//           cache hit, kernels already loaded.
//           Reported per graph and per kernel launch (the kernels are tiny, so this is nearly all overhead).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>

#include "codegen/pipeline.h"
#include "engine/realize.h"
#include "tensor/tensor_impl.h"
#include "tg/jit.h"
#include "tg/tensor.h"
#include "util/settings.h"

using namespace tg;
using Clock = std::chrono::steady_clock;

namespace {

Tensor E(const Shape& s) { return Tensor::empty(s, dtypes::float32); }

std::vector<Tensor> mlp() { return {((E({32, 64}).matmul(E({64, 128})) + E({128})).relu().matmul(E({128, 10}))).softmax(-1)}; }
std::vector<Tensor> softmax() { return {E({64, 100}).softmax(-1)}; }
std::vector<Tensor> conv() {
  Tensor xp = E({2, 4, 16, 16}).pad({{0, 0}, {0, 0}, {1, 1}, {1, 1}});
  std::vector<Tensor> cols;
  for (int64_t i = 0; i < 3; i++)
    for (int64_t j = 0; j < 3; j++) cols.push_back(xp.shrink({{0, 2}, {0, 4}, {i, i + 16}, {j, j + 16}}));
  Tensor x = Tensor::stack(cols, -1).reshape({2, 1, 4, 16, 16, 9});
  return {(x * E({8, 4, 1, 1, 9}).reshape({1, 8, 4, 1, 1, 9})).sum({2, 5}).relu()};
}
std::vector<Tensor> chain() {
  Tensor x = E({256}), y = E({256});
  for (int i = 0; i < 5; i++) x = ((x + y) * 1.5 - y).relu();
  return {x};  // 20 elementwise ops
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// at least `reps` runs and at least half a second of them: a millisecond graph's median over a few dozen runs moves
// with whatever else the machine does in those few milliseconds
std::pair<double, size_t> cold(const std::function<std::vector<Tensor>()>& fn, int reps, double min_seconds = 0.5) {
  static const ClangRenderer ren;
  setenv("SCACHE", "0", 1), refresh_settings();  // the library reads its settings once: tell it they changed
  std::vector<double> ts;
  size_t nk = 0;
  double spent = 0;
  for (int r = 0; r < reps || (spent < min_seconds && r < 4000); r++) {
    auto st = Clock::now();
    std::vector<Tensor> outs = fn();
    UOp linear = schedule_linear(outs);
    for (const UOp& call : linear.src())
      if (call.src(0).op() == Ops::SINK) {
        UOp sink = full_rewrite_to_sink(call.src(0), ren);
        ren.render_kernel(linearize_program(sink), kernel_info(call.src(0))->function_name(), EntryStyle::Runtime);
      }
    ts.push_back(std::chrono::duration<double>(Clock::now() - st).count());
    spent += ts.back();
    nk = linear.src().size();
  }
  setenv("SCACHE", "1", 1), refresh_settings();
  return {median(ts), nk};
}

std::pair<double, size_t> steady(const std::function<std::vector<Tensor>()>& fn, int reps) {
  for (int i = 0; i < 3; i++) Tensor::realize(fn());  // compile and fill the caches
  std::vector<double> ts;
  size_t nk = 0;
  for (int r = 0; r < reps; r++) {
    std::vector<Tensor> outs = fn();  // building the graph is the caller's code: not timed, as on tinygrad's side
    auto st = Clock::now();
    auto [linear, vars] = linear_with_vars(outs);
    run_linear(linear, vars);
    ts.push_back(std::chrono::duration<double>(Clock::now() - st).count());
    nk = linear.src().size();
  }
  return {median(ts), nk};
}

// the kernels' own run time: the same graph captured by TinyJit and replayed (its launch overhead is ~0.1 us)
double kernel_time(const std::function<std::vector<Tensor>()>& fn, int reps) {
  TinyJit jit([&](const std::vector<Tensor>&) {
    std::vector<Tensor> outs = fn();
    Tensor::realize(outs);
    return outs[0];
  });
  for (int i = 0; i < 3; i++) jit(std::vector<Tensor>{});
  std::vector<double> ts;
  for (int r = 0; r < reps; r++) {
    auto st = Clock::now();
    jit(std::vector<Tensor>{});
    ts.push_back(std::chrono::duration<double>(Clock::now() - st).count());
  }
  return median(ts);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::pair<std::string, std::function<std::vector<Tensor>()>>> graphs{
      {"mlp", mlp}, {"softmax", softmax}, {"conv", conv}, {"chain20", chain}};
  // --serve: answers "cold NAME" lines on stdin with the cold milliseconds, so bench/overhead_ab.py can alternate
  // between this and tinygrad on one machine state; "cold NAME RUNS" runs exactly RUNS times and "steady NAME RUNS"
  // answers microseconds (both for callgrind_overhead.sh)
  if (argc > 1 && std::string(argv[1]) == "--serve") {
    char line[256], name[64];
    while (std::fgets(line, sizeof line, stdin)) {
      int runs = 0;
      char what[16];
      auto it = std::sscanf(line, "%15s %63s %d", what, name, &runs) >= 2
                    ? std::find_if(graphs.begin(), graphs.end(), [&](auto& g) { return g.first == name; })
                    : graphs.end();
      bool is_cold = std::string(what) == "cold";
      if (it == graphs.end() || (!is_cold && (std::string(what) != "steady" || runs < 1)))
        std::printf("error: expected 'cold NAME [RUNS]' or 'steady NAME RUNS' with NAME one of mlp softmax conv chain20\n");
      else if (!is_cold) std::printf("%.6f\n", steady(it->second, runs).first * 1e6);
      else std::printf("%.6f\n", (runs > 0 ? cold(it->second, runs, 0) : cold(it->second, 5)).first * 1e3);
      std::fflush(stdout);
    }
    return 0;
  }
  int reps = argc > 1 ? std::atoi(argv[1]) : 200;
  for (auto& [name, fn] : graphs) {
    auto [c, nk] = cold(fn, std::max(reps / 10, 5));
    auto [s, nk2] = steady(fn, reps);
    double k = kernel_time(fn, reps), launches = double(std::max<size_t>(nk2, 1));
    std::printf("tinygrad.cpp %-8s kernels %2zu cold %9.3f ms steady %9.1f us/graph %8.1f us/launch | kernels run %7.1f us, "
                "overhead %6.1f us/graph %5.1f us/launch\n", name.c_str(), nk, c * 1e3, s * 1e6, s * 1e6 / launches, k * 1e6,
                (s - k) * 1e6, (s - k) * 1e6 / launches);
  }
}
