// Trains a small llama on Debian's fortune cookies: a byte-level BPE tokenizer learned from the training split, then the
// model (tg::llm::TrainModel) with AdamW under TinyJit on random windows; prints train and held-out loss, writes an F32
// GGUF that build/tg-llm runs.
//
//   build/train_llm                                   300 steps of the default model (d 256, 4 layers) -> train_llm.gguf
//   build/train_llm --steps 20 --dim 64 --layers 2 --out small.gguf
//   build/tg-llm --model train_llm.gguf --prompt "The " -n 32 --temp 0
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>

#include "llm/unicode.h"
#include "tg/context.h"
#include "tg/jit.h"
#include "tg/llm_train.h"
#include "tg/lr_scheduler.h"
#include "tg/optim.h"
#include "tg/state.h"
#include "tg/tg.h"
#include "cli_number.h"

using tg::Tensor;
namespace fs = std::filesystem;

struct Options {
  int64_t steps = 300, batch = 16, seed = 1, vocab = 1024, eval_every = 50, warmup = 0;
  tg::llm::TrainConfig model;
  double lr = 1e-3;
  std::string out = "train_llm.gguf", data = "/usr/share/games/fortunes";
};

static Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::printf("usage: %s [--steps N] [--batch N] [--lr X] [--warmup N] [--seed N] [--dim N] [--layers N] [--heads N] [--kv-heads N]\n"
                  "          [--tied] [--ffn N] [--context N] [--vocab N] [--eval-every N] [--data DIR] [--out FILE]\n"
                  "  trains a llama (default d 256, 4 layers, 4 heads, ffn 768, context 128, BPE vocab 1024) with AdamW on the\n"
                  "  fortune files in DIR (default /usr/share/games/fortunes; 5%% of the fortunes held out) and writes FILE (GGUF).\n"
                  "  --kv-heads: grouped-query attention; --tied: the output projection is the embedding; --warmup N: the lr\n"
                  "  rises linearly from lr/10 over N steps, then falls linearly to lr/100 at the last step (one-cycle)\n", argv[0]);
      std::exit(0);
    }
    if (a == "--tied") {
      o.model.tied_embeddings = true;
      continue;
    }
    if (i + 1 >= argc) throw tg::Error("option " + a + " needs a value (see --help)");
    std::string v = argv[++i];
    auto num = [&](auto& out) { parse_number(a, v, out); };
    if (a == "--steps") num(o.steps);
    else if (a == "--batch") num(o.batch);
    else if (a == "--lr") num(o.lr);
    else if (a == "--seed") num(o.seed);
    else if (a == "--dim") num(o.model.dim);
    else if (a == "--layers") num(o.model.n_layers);
    else if (a == "--heads") num(o.model.n_heads);
    else if (a == "--kv-heads") num(o.model.n_kv_heads);
    else if (a == "--warmup") num(o.warmup);
    else if (a == "--ffn") num(o.model.hidden_dim);
    else if (a == "--context") num(o.model.context);
    else if (a == "--vocab") num(o.vocab);
    else if (a == "--eval-every") num(o.eval_every);
    else if (a == "--data") o.data = v;
    else if (a == "--out") o.out = v;
    else throw tg::Error("unknown option " + a + " (see --help)");
  }
  if (o.steps < 0 || o.batch <= 0 || !(o.lr > 0) || o.eval_every <= 0 || o.vocab > INT32_MAX || o.warmup < 0 || o.warmup >= std::max<int64_t>(o.steps, 1))
    throw tg::Error("--steps must be >= 0, --batch, --lr and --eval-every > 0, --warmup in [0, steps)");
  return o;
}

// the fortunes of every fortune file in `dir` (not the .dat indexes or .u8 links), split at lines of "%"
static std::vector<std::string> fortunes(const std::string& dir) {
  if (!fs::is_directory(dir)) throw tg::Error("train_llm: " + dir + " is not a directory (Debian's fortunes package installs /usr/share/games/fortunes)");
  std::vector<fs::path> files;
  for (auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && !e.is_symlink() && e.path().extension() != ".dat" && e.path().extension() != ".u8") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<std::string> docs;
  for (auto& f : files) {
    std::stringstream ss;
    ss << std::ifstream(f, std::ios::binary).rdbuf();
    std::string text;
    tg::llm::unicode::utf8_repair(ss.str(), text);
    for (size_t s = 0; s < text.size();) {
      size_t e = text.find("\n%\n", s);
      if (e == std::string::npos) e = text.size();
      if (text.find_first_not_of(" \t\r\n%", s) < e) docs.push_back(text.substr(s, e - s));
      s = e + 3;
    }
  }
  if (docs.size() < 2) throw tg::Error("train_llm: found " + std::to_string(docs.size()) + " fortunes in " + dir + ", need at least 2");
  return docs;
}

int main(int argc, char** argv) try {
  Options o = parse(argc, argv);
  std::vector<std::string> docs = fortunes(o.data);
  std::mt19937_64 rng(uint64_t(o.seed));
  std::shuffle(docs.begin(), docs.end(), rng);
  size_t n_held = std::max<size_t>(1, docs.size() / 20);
  std::vector<std::string> train(docs.begin(), docs.end() - int64_t(n_held)), held(docs.end() - int64_t(n_held), docs.end());

  auto t0 = std::chrono::steady_clock::now();
  tg::llm::Vocab vocab = tg::llm::train_bpe(train, int32_t(o.vocab));
  tg::llm::Tokenizer tok(vocab);
  auto stream = [&](const std::vector<std::string>& ds) {  // each fortune after an end-of-text token
    std::vector<int32_t> s;
    for (const std::string& d : ds) {
      s.push_back(*vocab.eos);
      for (int32_t t : tok.encode(d, false)) s.push_back(t);
    }
    return s;
  };
  std::vector<int32_t> train_ids = stream(train), held_ids = stream(held);
  const int64_t B = o.batch, T = o.model.context;
  std::printf("%zu fortunes (%zu held out), BPE vocab %d in %.1f s: %zu train tokens, %zu held-out tokens\n", docs.size(), n_held,
              tok.n_vocab(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), train_ids.size(), held_ids.size());
  if (int64_t(train_ids.size()) <= T + 1 || int64_t(held_ids.size()) <= T + 1)
    throw tg::Error("train_llm: the corpus is too small for a context of " + std::to_string(T));

  Tensor::manual_seed(uint64_t(o.seed));
  o.model.vocab_size = tok.n_vocab();
  tg::llm::TrainModel model(o.model);
  auto opt = tg::nn::optim::AdamW(tg::nn::state::get_parameters(model), o.lr);
  // the schedule's lr is computed on the device from its step counter, so the captured step replays it
  std::optional<tg::nn::optim::OneCycleLR> sched;
  if (o.warmup > 0) sched.emplace(opt, o.lr, 10.0, 10.0, o.steps, double(o.warmup) / double(o.steps));
  tg::TinyJit<Tensor> train_step([&](const std::vector<Tensor>& in) {
    tg::Context training({{"TRAINING", 1}});
    opt.zero_grad();
    Tensor loss = model.loss(in[0], in[1]);
    loss.backward();
    std::vector<Tensor> todo = opt.schedule_step();
    if (sched)
      for (Tensor& t : sched->schedule_step()) todo.push_back(t);
    todo.push_back(loss);
    Tensor::realize(todo);
    return loss;
  });
  tg::TinyJit<Tensor> eval_step([&](const std::vector<Tensor>& in) { return model.loss(in[0], in[1]).realize(); });

  // a batch of B windows of T + 1 tokens starting at `starts`: inputs and next tokens
  auto batch = [&](const std::vector<int32_t>& s, const std::vector<int64_t>& starts) {
    std::vector<int32_t> x, y;
    for (int64_t st : starts) x.insert(x.end(), s.begin() + st, s.begin() + st + T), y.insert(y.end(), s.begin() + st + 1, s.begin() + st + T + 1);
    return std::pair{Tensor::from_vector(x, {B, T}), Tensor::from_vector(y, {B, T})};
  };
  // held-out loss: the mean over up to 4 batches of consecutive windows
  std::vector<std::vector<int64_t>> held_batches;
  for (int64_t st = 0, k = 0; k < 4 && st + B * T + 1 <= int64_t(held_ids.size()); k++, st += B * T) {
    std::vector<int64_t> starts;
    for (int64_t b = 0; b < B; b++) starts.push_back(st + b * T);
    held_batches.push_back(starts);
  }
  if (held_batches.empty()) held_batches.push_back(std::vector<int64_t>(size_t(B), 0));  // a short held-out split: its first window
  auto held_loss = [&] {
    double sum = 0;
    for (auto& starts : held_batches) {
      auto [x, y] = batch(held_ids, starts);
      sum += eval_step(x, y).item<float>();
    }
    return sum / double(held_batches.size());
  };

  std::uniform_int_distribution<int64_t> pick(0, int64_t(train_ids.size()) - T - 1);
  double train_s = 0;
  int64_t timed_tokens = 0;
  auto start = std::chrono::steady_clock::now();
  for (int64_t step = 1; step <= o.steps; step++) {
    std::vector<int64_t> starts;
    for (int64_t b = 0; b < B; b++) starts.push_back(pick(rng));
    auto [x, y] = batch(train_ids, starts);
    auto ts = std::chrono::steady_clock::now();
    float loss = train_step(x, y).item<float>();
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - ts).count();
    if (step > 2) train_s += dt, timed_tokens += B * T;  // the first two steps compile and capture
    bool eval = step % o.eval_every == 0 || step == o.steps;
    if (eval || step % 10 == 0 || step == 1) {
      std::printf("step %4lld  train loss %.4f", (long long)step, loss);
      if (eval) std::printf("  held-out loss %.4f", held_loss());
      if (timed_tokens) std::printf("  %.0f tok/s", double(timed_tokens) / train_s);
      std::printf("  (%.1f s)\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      std::fflush(stdout);
    }
  }
  model.save(o.out, vocab);
  std::printf("wrote %s (%lld parameters)\n", o.out.c_str(), [&] {
    long long n = 0;
    for (Tensor& p : tg::nn::state::get_parameters(model)) n += (long long)p.numel();
    return n;
  }());
  return 0;
} catch (const tg::Error& e) {
  std::fprintf(stderr, "train_llm: %s\n", e.what());
  return 1;
}
