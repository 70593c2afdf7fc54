// The main job: tinygrad's beautiful_mnist CNN trained with Adam on Fashion-MNIST under TinyJit, then its test accuracy.
//
//   build/beautiful_mnist                         train (default 1500 steps of 128) and report test accuracy
//   build/beautiful_mnist --steps 70 --bs 512 --save model.safetensors
//   build/beautiful_mnist --eval model.safetensors
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <unistd.h>

#include "tg/datasets.h"
#include "tg/jit.h"
#include "tg/nn.h"
#include "tg/optim.h"
#include "tg/state.h"
#include "tg/tg.h"
#include "beautiful_mnist_model.h"
#include "cli_number.h"

using tg::Tensor;
using tg::BeautifulMnist;
namespace nn = tg::nn;

struct Options {
  int64_t steps = 1500, bs = 128, seed = 42, eval_every = 250;
  double lr = 0.001;
  bool cosine = true;
  std::string data = "/usr/share/datasets/fashion-mnist", save, eval;
};

static void usage(const char* argv0) {
  std::printf(
      "usage: %s [--steps N] [--bs N] [--lr X] [--constant-lr] [--seed N] [--eval-every N] [--data DIR] [--save FILE] [--eval FILE]\n"
      "  trains tinygrad's beautiful_mnist CNN with Adam (learning rate X decayed to 0 by a cosine unless --constant-lr)\n"
      "  on Fashion-MNIST (IDX files in DIR, default /usr/share/datasets/fashion-mnist) and prints the test accuracy. --save writes the weights as safetensors;\n"
      "  --eval FILE loads weights and only evaluates them.\n",
      argv0);
}

static Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") usage(argv[0]), std::exit(0);
    if (a == "--constant-lr") { o.cosine = false; continue; }
    if (i + 1 >= argc) throw tg::Error("option " + a + " needs a value (see --help)");
    std::string v = argv[++i];
    auto num = [&](auto& out) { parse_number(a, v, out); };
    if (a == "--steps") num(o.steps);
    else if (a == "--bs") num(o.bs);
    else if (a == "--lr") num(o.lr);
    else if (a == "--seed") num(o.seed);
    else if (a == "--eval-every") num(o.eval_every);
    else if (a == "--data") o.data = v;
    else if (a == "--save") o.save = v;
    else if (a == "--eval") o.eval = v;
    else throw tg::Error("unknown option " + a + " (see --help)");
  }
  if (o.steps < 0 || o.bs <= 0 || o.lr <= 0) throw tg::Error("--steps must be >= 0, --bs and --lr > 0");
  return o;
}

int main(int argc, char** argv) try {
  Options o = parse(argc, argv);
  auto data = tg::nn::datasets::mnist(o.data);
  const int64_t n_train = data.X_train.shape()[0], n_test = data.X_test.shape()[0];
  std::vector<uint8_t> X = data.X_train.data(), Y = data.Y_train.data();
  Tensor::manual_seed(uint64_t(o.seed));
  BeautifulMnist model;
  if (!o.eval.empty()) nn::state::load_state_dict(model, nn::state::safe_load(o.eval));

  // test accuracy in chunks of 1000 images, with the running statistics of BatchNorm (TRAINING off)
  const int64_t chunk = 1000;
  // pixels 0..255 scaled to zero mean and unit variance (Fashion-MNIST's training set: mean 72.94, std 90.02)
  auto net = [&model](const Tensor& x) { return model((x.cast(tg::dtypes::float32) - 72.94) / 90.02); };
  tg::TinyJit<Tensor> test_chunk([&](const std::vector<Tensor>& in) { return (net(in[0]).argmax(1) == in[1]).sum().realize(); });
  auto test_accuracy = [&] {
    int64_t correct = 0;
    for (int64_t s = 0; s + chunk <= n_test; s += chunk)
      correct += test_chunk(data.X_test.shrink({{s, s + chunk}, {0, 1}, {0, 28}, {0, 28}}).contiguous(),
                            data.Y_test.shrink({{s, s + chunk}}).contiguous()).item<int32_t>();
    return 100.0 * double(correct) / double(n_test / chunk * chunk);
  };
  if (!o.eval.empty()) {
    std::printf("%s: test accuracy %.2f%%\n", o.eval.c_str(), test_accuracy());
    return 0;
  }

  auto opt = nn::optim::Adam(nn::state::get_parameters(model), o.lr);
  tg::TinyJit<Tensor> train_step = tg::jit_train_step(net, opt);

  std::mt19937_64 rng(uint64_t(o.seed));
  std::uniform_int_distribution<int64_t> pick(0, n_train - 1);
  std::vector<uint8_t> xb(size_t(o.bs) * 784), yb(size_t(o.bs));
  double test_acc = -1, loss = 0;
  auto t0 = std::chrono::steady_clock::now(), tstep = t0;
  int64_t timed_samples = 0;
  // a terminal gets the bar redrawn every step; a pipe or file a line every few seconds (as tqdm), and the last step's
  const bool tty = isatty(fileno(stdout));
  auto shown = t0;
  for (int64_t step = 0; step < o.steps; step++) {
    // cosine decay of the learning rate to zero over the run (a jitted step reads lr from its buffer). The value comes
    // from the host, as tinygrad's Tensor([lr]): a Tensor::full of it would be a new kernel to compile every step
    if (o.cosine) opt.lr.assign(Tensor::from_vector<float>({float(o.lr * 0.5 * (1 + std::cos(M_PI * double(step) / double(o.steps))))})).realize();
    for (int64_t b = 0; b < o.bs; b++) {
      int64_t i = pick(rng);
      std::memcpy(&xb[size_t(b) * 784], &X[size_t(i) * 784], 784), yb[size_t(b)] = Y[size_t(i)];
    }
    loss = train_step(Tensor::from_vector(xb, {o.bs, 1, 28, 28}), Tensor::from_vector(yb, {o.bs})).item<float>();
    auto now = std::chrono::steady_clock::now();
    if (step == 1) tstep = now, timed_samples = 0;  // samples/s after the two compile steps
    else timed_samples += o.bs;
    if ((step + 1) % o.eval_every == 0 || step + 1 == o.steps) test_acc = test_accuracy();
    double secs = std::chrono::duration<double>(now - tstep).count();
    if (!tty && step + 1 < o.steps && std::chrono::duration<double>(now - shown).count() < 5) continue;
    shown = now;
    int done = int(40 * (step + 1) / o.steps);
    std::printf("%s%5lld/%lld [%s%s] loss %6.3f  %7.0f samples/s  test %s%s", tty ? "\r" : "", (long long)(step + 1), (long long)o.steps,
                std::string(size_t(done), '=').c_str(), std::string(size_t(40 - done), ' ').c_str(), loss,
                secs > 0 && timed_samples > 0 ? double(timed_samples) / secs : 0.0,
                test_acc < 0 ? "  -   " : (std::to_string(test_acc).substr(0, 5) + "%").c_str(), tty ? "" : "\n");
    std::fflush(stdout);
  }
  if (tty) std::printf("\n");
  double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (test_acc < 0) test_acc = test_accuracy();
  std::printf("trained %lld steps of %lld in %.1f s: test accuracy %.2f%%\n", (long long)o.steps, (long long)o.bs, total, test_acc);
  if (!o.save.empty()) {
    nn::state::safe_save(nn::state::get_state_dict(model), o.save);
    std::printf("saved the weights to %s\n", o.save.c_str());
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "beautiful_mnist: %s\n", e.what());
  return 1;
}
