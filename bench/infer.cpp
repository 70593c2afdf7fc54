// Inference (no gradient, eval mode) against libtorch (Debian's libtorch-dev, linked into this bench only) in the same
// process on the same threads, both sides with the same weights:
// - mnist: the main job's model (apps/beautiful_mnist_model.h, BatchNorm on running statistics, set to random values)
//   over the Fashion-MNIST test images, normalized as build/beautiful_mnist --eval does, at batch 1000 and batch 1; ours
//   under TinyJit (as the app's test pass), libtorch's module under NoGradGuard in eval mode
// - mlp: 784-1024-1024-10 with relu, batch 1000
// - block: a pre-LayerNorm transformer block (causal attention of 8 heads of 48, gelu MLP of 4x) on 8 x 128 tokens of 384,
//   built from nn::Linear/LayerNorm and scaled_dot_product_attention; libtorch's side written out with the same ops
// - ours under TinyJit in every case (an unchanged weight's packed panels are not packed again by a replay)
// Each side's best pass, alternating (bench/anchor.h); outputs compared, the run fails past 1e-4 relative.
//   build/bench/infer [images=10000] [case: mnist, mnist-1000, mnist-1, mlp, block] [--kernels]
// --kernels: no libtorch; each case's kernels under the JIT with the contractions' rates against a plain matmul of the
// same shape (bench/kernel_rates.h); exits 1 when one is below half of it.
#include <string>

#include "../apps/beautiful_mnist_model.h"
#include "../apps/beautiful_mnist_torch.h"
#include "anchor.h"
#include "kernel_rates.h"
#include "tg/datasets.h"
#include "tg/jit.h"

using namespace bench;
using tg::Tensor;

namespace {

bool kernel_mode = false;
int slow_kernels = 0;
bool check(const std::string& name, const std::function<void()>& call) { return slow_kernels += check_kernel_rates(name, call), true; }

bool report(const std::string& name, double work, const char* unit, Times t, double rel) {
  std::printf("%-18s %9.2f ms %8.1f %s  libtorch %9.2f ms %8.1f %s  ratio %5.2fx  rel.err %.1e%s\n", name.c_str(), t.ours * 1e3, work / t.ours,
              unit, t.theirs * 1e3, work / t.theirs, unit, t.theirs / t.ours, rel, rel > 1e-4 ? "  MISMATCH" : "");
  std::fflush(stdout);
  return rel <= 1e-4;
}

bool mnist(int64_t images, int64_t bs) {
  auto data = tg::nn::datasets::mnist();
  images = std::min(images, data.X_test.shape()[0]) / bs * bs;
  if (images == 0) return std::printf("mnist eval bs %lld: fewer images than one batch, skipped\n", (long long)bs), true;
  tg::Tensor::manual_seed(1);
  tg::BeautifulMnist model;
  for (tg::nn::BatchNorm* bn : {&model.bn1, &model.bn2}) {
    int64_t c = bn->running_mean->shape()[0];
    *bn->running_mean = Tensor::from_vector(random_floats(size_t(c), uint32_t(c), -0.5f, 0.5f)).realize();
    *bn->running_var = Tensor::from_vector(random_floats(size_t(c), uint32_t(c) + 1, 0.5f, 2.0f)).realize();
  }
  tg::BeautifulMnistTorch net;
  copy_weights(model, net);
  net.eval();

  std::vector<Tensor> xs;
  std::vector<torch::Tensor> txs;
  std::vector<uint8_t> all = data.X_test.shrink({{0, images}, {0, 1}, {0, 28}, {0, 28}}).contiguous().to_vector<uint8_t>();
  for (int64_t s = 0; s < images; s += bs) {
    std::vector<uint8_t> chunk(all.begin() + s * 784, all.begin() + (s + bs) * 784);
    xs.push_back(Tensor::from_vector(chunk, {bs, 1, 28, 28}).realize());
    txs.push_back(torch::from_blob(chunk.data(), {bs, 1, 28, 28}, torch::kUInt8).clone());
  }
  tg::TinyJit<Tensor> fwd([&](const std::vector<Tensor>& in) { return model((in[0].cast(tg::dtypes::float32) - 72.94) / 90.02).realize(); });
  if (kernel_mode) return check("mnist eval bs " + std::to_string(bs), [&] { fwd(xs[0]); });
  auto tfwd = [&](const torch::Tensor& x) { return net.forward((x.to(torch::kFloat) - 72.94) / 90.02); };
  torch::NoGradGuard ng;
  std::vector<Tensor> outs;
  std::vector<torch::Tensor> touts;
  for (size_t i = 0; i < xs.size(); i++) outs.push_back(fwd(xs[i]).clone().realize()), touts.push_back(tfwd(txs[i]));
  Times t = alternate([&] { for (auto& x : xs) fwd(x); }, [&] { for (auto& x : txs) tfwd(x); }, 2, 0);
  // cat in groups: one cat of 10,000 pieces is a chain of 10,000 adds, deeper than the graph walks' stack allows
  std::vector<Tensor> groups;
  for (size_t i = 0; i < outs.size(); i += 100)
    groups.push_back(Tensor::cat(std::vector<Tensor>(outs.begin() + i, outs.begin() + std::min(outs.size(), i + 100)), 0).realize());
  double rel = rel_error(Tensor::cat(groups, 0), torch::cat(touts, 0));
  return report("mnist eval bs " + std::to_string(bs), double(images), "img/s", t, rel);
}

struct Mlp : tg::nn::Module {
  tg::nn::Linear l1{784, 1024}, l2{1024, 1024}, l3{1024, 10};
  void visit_state(tg::nn::StateVisitor& v) override { v("l1", l1), v("l2", l2), v("l3", l3); }
  Tensor operator()(const Tensor& x) { return l3(l2(l1(x).relu()).relu()); }
};
struct TorchMlp : torch::nn::Module {
  torch::nn::Linear l1{784, 1024}, l2{1024, 1024}, l3{1024, 10};
  TorchMlp() { register_module("l1", l1), register_module("l2", l2), register_module("l3", l3); }
  torch::Tensor forward(const torch::Tensor& x) { return l3(torch::relu(l2(torch::relu(l1(x))))); }
};

bool mlp() {
  int64_t bs = 1000;
  Mlp m;
  TorchMlp tm;
  copy_weights(m, tm);
  auto hx = random_floats(size_t(bs * 784), 7);
  Tensor x = Tensor::from_vector(hx, {bs, 784}).realize(), out;
  torch::Tensor tx = torch::from_blob(hx.data(), {bs, 784}).clone(), want;
  tg::TinyJit<Tensor> fwd([&](const std::vector<Tensor>& in) { return m(in[0]).realize(); });
  if (kernel_mode) return check("mlp 784-1024-1024-10 bs 1000", [&] { fwd(x); });
  torch::NoGradGuard ng;
  fwd(x);  // the capture is the second call: alternate's warm-up is the first replay
  Times t = alternate([&] { out = fwd(x); }, [&] { want = tm.forward(tx); });
  double gflop = 2.0 * double(bs) * (784 * 1024 + 1024 * 1024 + 1024 * 10) * 1e-9;
  return report("mlp 784-1024-1024-10 bs 1000", gflop, "GFLOP/s", t, rel_error(out, want));
}

constexpr int64_t D = 384, H = 8, B = 8, T = 128;
struct Block : tg::nn::Module {
  tg::nn::LayerNorm ln1{D}, ln2{D};
  tg::nn::Linear qkv{D, 3 * D}, proj{D, D}, fc1{D, 4 * D}, fc2{4 * D, D};
  void visit_state(tg::nn::StateVisitor& v) override { v("ln1", ln1), v("ln2", ln2), v("qkv", qkv), v("proj", proj), v("fc1", fc1), v("fc2", fc2); }
  Tensor operator()(const Tensor& x) {
    auto heads = [](const Tensor& t) { return t.reshape({B, T, H, D / H}).transpose(1, 2); };
    Tensor q = qkv(ln1(x)), a = heads(q.shrink({{0, B}, {0, T}, {0, D}}))
                                   .scaled_dot_product_attention(heads(q.shrink({{0, B}, {0, T}, {D, 2 * D}})), heads(q.shrink({{0, B}, {0, T}, {2 * D, 3 * D}})),
                                                                 std::nullopt, 0.0, true);
    Tensor h = x + proj(a.transpose(1, 2).reshape({B, T, D}));
    return h + fc2(fc1(ln2(h)).gelu());
  }
};
struct TorchBlock : torch::nn::Module {
  torch::nn::LayerNorm ln1{torch::nn::LayerNormOptions({D})}, ln2{torch::nn::LayerNormOptions({D})};
  torch::nn::Linear qkv{D, 3 * D}, proj{D, D}, fc1{D, 4 * D}, fc2{4 * D, D};
  TorchBlock() {
    register_module("ln1", ln1), register_module("ln2", ln2), register_module("qkv", qkv), register_module("proj", proj);
    register_module("fc1", fc1), register_module("fc2", fc2);
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto qs = qkv(ln1(x)).view({B, T, 3, H, D / H}).permute({2, 0, 3, 1, 4});  // (3, B, H, T, D/H)
    torch::Tensor s = qs[0].matmul(qs[1].transpose(-2, -1)) / std::sqrt(double(D / H));
    s = s.masked_fill(torch::ones({T, T}, torch::kBool).triu(1), -INFINITY);
    torch::Tensor a = torch::softmax(s, -1).matmul(qs[2]).transpose(1, 2).reshape({B, T, D});
    torch::Tensor h = x + proj(a);
    return h + fc2(torch::gelu(fc1(ln2(h)), "tanh"));
  }
};

bool block() {
  tg::Tensor::manual_seed(2);
  Block m;
  TorchBlock tm;
  copy_weights(m, tm);
  auto hx = random_floats(size_t(B * T * D), 8);
  Tensor x = Tensor::from_vector(hx, {B, T, D}).realize(), out;
  torch::Tensor tx = torch::from_blob(hx.data(), {B, T, D}).clone(), want;
  tg::TinyJit<Tensor> fwd([&](const std::vector<Tensor>& in) { return m(in[0]).realize(); });
  if (kernel_mode) return check("transformer block", [&] { fwd(x); });
  torch::NoGradGuard ng;
  fwd(x);  // the capture is the second call: alternate's warm-up is the first replay
  Times t = alternate([&] { out = fwd(x); }, [&] { want = tm.forward(tx); });
  double gflop = (2.0 * double(B * T) * 12 * D * D + 4.0 * double(B * H * T * T * (D / H))) * 1e-9;
  return report("transformer block", gflop, "GFLOP/s", t, rel_error(out, want));
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (auto it = std::find(args.begin(), args.end(), "--kernels"); it != args.end()) kernel_mode = true, args.erase(it);
  int64_t images = args.size() > 0 ? std::atoll(args[0].c_str()) : 10000;
  std::string filter = args.size() > 1 ? args[1] : "";
  if (images < 1) return std::fprintf(stderr, "usage: infer [images>=1] [case] [--kernels]\n"), 2;
  if (kernel_mode) std::printf("kernels under the JIT, %d threads; %%GEMM = a plain matmul's time of the shape / the kernel's\n", threads());
  else std::printf("inference, %d threads (tinygrad.cpp NUM_CPU_THREADS and libtorch); ratio = libtorch time / ours\n", threads());
  // a case runs when the filter is empty, its name, or its name's part before the '-' ("mnist": both batches)
  auto want = [&](const std::string& name) { return filter.empty() || name == filter || name.rfind(filter + "-", 0) == 0; };
  bool ok = true;
  if (want("mnist-1000")) ok &= mnist(images, 1000);
  if (want("mnist-1")) ok &= mnist(images, 1);
  if (want("mlp")) ok &= mlp();
  if (want("block")) ok &= block();
  if (kernel_mode) std::printf("%d contraction kernels below 50%% of the GEMM rate of their shape\n", slow_kernels);
  return ok && slow_kernels == 0 ? 0 : 1;
}
