// The four convolutions of the main job's model (apps/beautiful_mnist_model.h, no bias: the bias is a separate add) at
// its training batch, forward, input gradient and weight gradient: tinygrad.cpp's realize() of a fresh graph over the
// same input buffers (schedule and kernel caches warm: steady state) against libtorch (Debian's libtorch-dev, linked
// into this bench only) in the same process on the same threads: at::conv2d, and at::convolution_backward (what
// libtorch's autograd calls) for each gradient on its own. Each side's best run, alternating (bench/anchor.h); values
// compared, the run fails past 1e-4 relative (max |diff| / max |libtorch|). c1's input gradient is not part of training
// (the images need none) and is listed for completeness. "fbr" is the forward with the model's epilogue, + bias and relu.
//   build/bench/conv [batch=512] [case filter, e.g. c2]; BENCH_CPU_TIME=1 NUM_CPU_THREADS=1: CPU time (bench/anchor.h)
#include <string>

#include "anchor.h"

using namespace bench;

namespace {

struct Conv {
  std::string name;
  int64_t cin, cout, k, hw;  // hw: the input's height = width
};

bool run(const Conv& c, int64_t bs, const std::string& pass) {
  int64_t ho = c.hw - c.k + 1;
  auto hx = random_floats(size_t(bs * c.cin * c.hw * c.hw), 1), hw = random_floats(size_t(c.cout * c.cin * c.k * c.k), 2, -0.2f, 0.2f);
  auto hg = random_floats(size_t(bs * c.cout * ho * ho), 3);
  tg::Tensor x = tg::Tensor::from_vector(hx, {bs, c.cin, c.hw, c.hw}).realize(), w = tg::Tensor::from_vector(hw, {c.cout, c.cin, c.k, c.k}).realize();
  tg::Tensor g = tg::Tensor::from_vector(hg, {bs, c.cout, ho, ho}).realize();
  auto hb = random_floats(size_t(c.cout), 4, -0.2f, 0.2f);
  tg::Tensor b = tg::Tensor::from_vector(hb).realize();
  torch::Tensor tb = torch::from_blob(hb.data(), {c.cout}).clone();
  torch::Tensor tx = torch::from_blob(hx.data(), {bs, c.cin, c.hw, c.hw}).clone(), tw = torch::from_blob(hw.data(), {c.cout, c.cin, c.k, c.k}).clone();
  torch::Tensor tg_ = torch::from_blob(hg.data(), {bs, c.cout, ho, ho}).clone();

  tg::Tensor out;
  torch::Tensor want;
  std::function<void()> ours, theirs;
  std::array<bool, 3> mask{pass == "fwd", pass == "dx", pass == "dw"};
  if (pass == "fbr") {  // with the layers' epilogue: bias and relu fused into the convolution's kernel
    ours = [&] { out = x.conv2d(w, b).relu().realize(); };
    theirs = [&] { want = at::relu(at::conv2d(tx, tw, tb)); };
  } else if (pass == "fwd") {
    ours = [&] { out = x.conv2d(w).realize(); };
    theirs = [&] { want = at::conv2d(tx, tw); };
  } else {
    ours = [&] { out = x.conv2d(w).gradient({pass == "dx" ? x : w}, g)[0].realize(); };
    theirs = [&] {
      auto r = at::convolution_backward(tg_, tx, tw, c10::nullopt, {1, 1}, {0, 0}, {1, 1}, false, {0, 0}, 1, {mask[1], mask[2], false});
      want = pass == "dx" ? std::get<0>(r) : std::get<1>(r);
    };
  }
  torch::NoGradGuard ng;
  Times t = alternate(ours, theirs);
  double rel = rel_error(out, want), gflop = 2.0 * double(bs * c.cout * ho * ho * c.cin * c.k * c.k) * 1e-9;
  std::printf("%-3s %-3s %3lldx%-3lld %lldx%lld on %3lldx%-3lld %8.2f ms %7.1f GFLOP/s  libtorch %8.2f ms %7.1f GFLOP/s  ratio %5.2fx  rel.err %.1e%s\n",
              c.name.c_str(), pass.c_str(), (long long)c.cin, (long long)c.cout, (long long)c.k, (long long)c.k, (long long)c.hw,
              (long long)c.hw, t.ours * 1e3, gflop / t.ours, t.theirs * 1e3, gflop / t.theirs, t.theirs / t.ours, rel, rel > 1e-4 ? "  MISMATCH" : "");
  std::fflush(stdout);
  return rel <= 1e-4;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t bs = argc > 1 ? std::atoll(argv[1]) : 512;
  std::string filter = argc > 2 ? argv[2] : "";
  if (bs < 1) return std::fprintf(stderr, "usage: conv [batch>=1] [case filter]\n"), 2;
  std::vector<Conv> convs{{"c1", 1, 32, 5, 28}, {"c2", 32, 32, 5, 24}, {"c3", 32, 64, 3, 10}, {"c4", 64, 64, 3, 8}};
  std::printf("beautiful_mnist's convolutions, batch %lld, %d threads (tinygrad.cpp NUM_CPU_THREADS and libtorch), %s; ratio = libtorch time / ours\n",
              (long long)bs, threads(), std::getenv("BENCH_CPU_TIME") ? "BENCH_CPU_TIME: process CPU time" : "wall clock");
  bool ok = true;
  for (auto& c : convs)
    for (std::string pass : {"fwd", "fbr", "dx", "dw"})
      if ((c.name + " " + pass).find(filter) != std::string::npos) ok &= run(c, bs, pass);
  return ok ? 0 : 1;
}
