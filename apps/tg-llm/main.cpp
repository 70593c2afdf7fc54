// tg-llm: run a llama-family GGUF model (tinygrad's llm/cli.py).
//
//   tg-llm --model m.gguf --prompt "Once upon" -n 64 --temp 0.7 --seed 1   complete a prompt, streaming the tokens
//   tg-llm --model m.gguf                                                  chat: one user message per stdin line, EOF ends
//   tg-llm logprobs --model m.gguf --tokens 1,5,17 [--chunk N]             log-softmax of every position as JSON
//   tg-llm serve --model m.gguf --port 8080 [--host 127.0.0.1]              an OpenAI-style HTTP server and a chat page
//   tg-llm bench --model m.gguf -p 128 -n 128 [--reps R]                   prompt and decode tok/s (llama-bench's pp / tg)
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "llm/unicode.h"
#include "serve.h"
#include "tg/error.h"
#include "tg/llm.h"
#include "../cli_number.h"

namespace llm = tg::llm;

namespace {

struct Options {
  std::string cmd = "run", model, prompt, tokens, device, host = "127.0.0.1";
  bool has_prompt = false;
  int64_t n = 256, max_context = 4096, chunk = 32, port = 8080, pp = 128, reps = 3, cache_slots = 4;
  llm::SamplerParams sp;
};

void usage() {
  std::printf(
      "usage: tg-llm --model FILE [--prompt TEXT] [-n N] [--temp T] [--seed S] [--top-k K] [--top-p P] [--min-p P]\n"
      "              [--repeat-penalty R] [--repeat-last-n N] [--ctx N] [--chunk N] [--device DEV]\n"
      "       tg-llm logprobs --model FILE --tokens ID,ID,... [--ctx N] [--chunk N] [--device DEV]\n"
      "       tg-llm serve --model FILE [--port P] [--host H] [--ctx N] [--chunk N] [--cache-slots N] [--device DEV]\n"
      "       tg-llm bench --model FILE [-p N] [-n N] [--reps R] [--device DEV]\n"
      "  With --prompt, completes TEXT (raw, BOS as the tokenizer adds it) and prints the prompt and decode speeds.\n"
      "  Without it, chats: each line of stdin is a user message (the model's chat template), EOF ends.\n"
      "  Sampling defaults as llama.cpp's: --temp 0.8 --top-k 40 --top-p 0.95 --min-p 0.05 --repeat-penalty 1; --temp 0 is greedy.\n"
      "  --ctx caps the context (the KV cache's length) at N, default 4096 (0: the model's context_length).\n"
      "  serve answers POST /v1/chat/completions, /v1/completions (OpenAI's API, stream: true as server-sent events),\n"
      "  GET /v1/models, /health and / (a chat page) at http://H:P (default 127.0.0.1:8080; --port 0 picks a free port);\n"
      "  a request continues from the cache of the last one or of --cache-slots N earlier conversations (default 4).\n"
      "  logprobs prints {\"tokens\": [...], \"logprobs\": [[vocab floats] per position]}, the prompt fed in chunks of N (default 32).\n"
      "  bench times, as llama-bench does, a prompt of -p random tokens (default 128, one chunk) and -n decoded tokens (default\n"
      "  128, greedy, from an empty cache), after a warm-up run that compiles the kernels, averaged over R runs (default 3).\n"
      "  Its last line: prompt tok/s, decode tok/s, first-token ms (the warm prompt), peak RSS MiB, weight bytes per token,\n"
      "  KV cache bytes.\n");
}

Options parse(int argc, char** argv) {
  Options o;
  int i = 1;
  if (argc > 1 && (std::string(argv[1]) == "logprobs" || std::string(argv[1]) == "serve" || std::string(argv[1]) == "bench")) o.cmd = argv[1], i = 2;
  for (; i < argc; i++) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") usage(), std::exit(0);
    if (i + 1 >= argc) throw tg::Error("option " + a + " needs a value (see --help)");
    std::string v = argv[++i];
    auto num = [&](auto& out) { parse_number(a, v, out); };
    if (a == "--model" || a == "-m") o.model = v;
    else if (o.cmd == "bench" && a == "-p") num(o.pp);
    else if (a == "--reps") num(o.reps);
    else if (a == "--prompt" || a == "-p") o.prompt = v, o.has_prompt = true;
    else if (a == "--tokens") o.tokens = v;
    else if (a == "--device") o.device = v;
    else if (a == "--host") o.host = v;
    else if (a == "--port") num(o.port);
    else if (a == "-n" || a == "--n-predict") num(o.n);
    else if (a == "--ctx") num(o.max_context);
    else if (a == "--chunk") num(o.chunk);
    else if (a == "--cache-slots") num(o.cache_slots);
    else if (a == "--temp") num(o.sp.temperature);
    else if (a == "--seed") num(o.sp.seed);
    else if (a == "--top-k") num(o.sp.top_k);
    else if (a == "--top-p") num(o.sp.top_p);
    else if (a == "--min-p") num(o.sp.min_p);
    else if (a == "--repeat-penalty") num(o.sp.repeat_penalty);
    else if (a == "--repeat-last-n") num(o.sp.repeat_last_n);
    else throw tg::Error("unknown option " + a + " (see --help)");
  }
  if (o.model.empty()) throw tg::Error("--model FILE is required (see --help)");
  if (o.cmd == "logprobs" && o.tokens.empty()) throw tg::Error("logprobs needs --tokens ID,ID,...");
  if (o.n < 0 || o.chunk < 1 || o.max_context < 0) throw tg::Error("-n and --ctx must be >= 0 and --chunk >= 1");
  if (o.port < 0 || o.port > 65535) throw tg::Error("--port must be in 0..65535");
  if (o.cache_slots < 0 || o.cache_slots > 64) throw tg::Error("--cache-slots must be in 0..64");
  if (o.cmd == "bench" && (o.pp < 1 || o.n < 1 || o.reps < 1)) throw tg::Error("bench needs -p, -n and --reps >= 1");
  return o;
}

std::vector<int32_t> parse_ids(const std::string& s) {
  std::vector<int32_t> ids;
  size_t p = 0;
  while (p <= s.size()) {
    size_t q = s.find(',', p);
    std::string x = s.substr(p, q == std::string::npos ? std::string::npos : q - p);
    size_t used = 0;
    long long v = 0;
    try { v = std::stoll(x, &used); } catch (const std::exception&) { used = 0; }
    if (x.empty() || used != x.size() || v < 0 || v > INT32_MAX) throw tg::Error("--tokens: '" + x + "' is not a token id");
    ids.push_back(int32_t(v));
    if (q == std::string::npos) break;
    p = q + 1;
  }
  return ids;
}

int logprobs(llm::Model& m, const Options& o) {
  std::vector<int32_t> ids = parse_ids(o.tokens);
  std::vector<float> l = m.logits(ids, 0, true, o.chunk);
  size_t V = size_t(m.config().vocab_size);
  std::string out = "{\"tokens\": [";
  for (size_t i = 0; i < ids.size(); i++) out += (i ? ", " : "") + std::to_string(ids[i]);
  out += "], \"logprobs\": [";
  char buf[32];
  for (size_t t = 0; t < ids.size(); t++) {
    std::vector<double> lp = llm::log_softmax(std::span(l).subspan(t * V, V));
    out += t ? ", [" : "[";
    for (size_t i = 0; i < V; i++) std::snprintf(buf, sizeof buf, "%s%.9g", i ? ", " : "", lp[i]), out += buf;
    out += "]";
  }
  std::printf("%s]}\n", out.c_str());
  return 0;
}

int bench(llm::Model& m, const Options& o) {
  using clock = std::chrono::steady_clock;
  const llm::Config& c = m.config();
  if (o.pp + o.n > c.max_context) throw tg::Error("bench: -p + -n exceed the context of " + std::to_string(c.max_context) + " (--ctx)");
  std::vector<int32_t> prompt;
  for (int64_t i = 0; i < o.pp; i++) prompt.push_back(int32_t(3 + (i * 7919) % (c.vocab_size - 3)));
  auto secs = [](clock::time_point a) { return std::chrono::duration<double>(clock::now() - a).count(); };
  auto run_pp = [&] { m.logits(prompt, 0, false, o.pp); };
  auto run_tg = [&](int64_t n) {
    int32_t t = 1;
    for (int64_t p = 0; p < n; p++) {
      std::vector<float> l = m.logits(std::span<const int32_t>(&t, 1), p);
      t = int32_t(std::max_element(l.begin(), l.end()) - l.begin());
    }
  };
  auto t0 = clock::now();
  run_pp();
  double cold = secs(t0);
  run_tg(2);
  double pp_s = 0, tg_s = 0;
  for (int64_t r = 0; r < o.reps; r++) {
    auto a = clock::now();
    run_pp();
    pp_s += secs(a), a = clock::now();
    run_tg(o.n);
    tg_s += secs(a);
  }
  pp_s /= double(o.reps), tg_s /= double(o.reps);
  // the bytes decode reads per token: every weight but the embedding table, of which it needs one row (a tied table is
  // read whole as the output)
  int64_t wbytes = 0;
  for (auto& t : m.gguf().tensors) wbytes += t.nbytes;
  if (!c.tied_embeddings) wbytes -= m.gguf().info("token_embd.weight").nbytes;
  // the KV cache's bytes (float32 keys and values of every layer for --ctx positions): RSS is held to file + this + 15 %
  int64_t kvbytes = c.n_layers * 2 * c.n_kv_heads * c.max_context * c.head_dim * 4;
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::fprintf(stderr, "pp%lld: %.2f tok/s (first token %.1f ms warm, %.1f ms cold) | tg%lld: %.2f tok/s (%.2f ms/token, %.1f MB weights) | peak RSS %.1f MiB\n",
               (long long)o.pp, double(o.pp) / pp_s, pp_s * 1e3, cold * 1e3, (long long)o.n, double(o.n) / tg_s, tg_s / double(o.n) * 1e3,
               double(wbytes) / 1e6, double(ru.ru_maxrss) / 1024);
  std::printf("%.3f %.3f %.3f %.1f %lld %lld\n", double(o.pp) / pp_s, double(o.n) / tg_s, pp_s * 1e3, double(ru.ru_maxrss) / 1024, (long long)wbytes,
              (long long)kvbytes);
  return 0;
}

void report(const llm::GenerateStats& s) {
  std::string cached = s.cached_tokens ? " (+" + std::to_string(s.cached_tokens) + " cached)" : "";
  std::fprintf(stderr, "\nprompt: %lld tokens%s, %.2f tok/s | decode: %lld tokens, %.2f tok/s\n", (long long)s.prompt_tokens, cached.c_str(),
               s.prompt_s > 0 ? double(s.prompt_tokens) / s.prompt_s : 0.0, (long long)s.generated,
               s.generated > 1 && s.decode_s > 0 ? double(s.generated - 1) / s.decode_s : 0.0);
}

int run(llm::Model& m, const Options& o) {
  llm::Sampler s(o.sp);
  auto stream = [&](int32_t t) {
    std::fputs(m.tokenizer().piece(t, false).c_str(), stdout), std::fflush(stdout);
    return true;
  };
  llm::GenerateStats st;
  if (o.has_prompt) {
    std::vector<int32_t> ids = m.tokenizer().encode(o.prompt);
    if (ids.empty()) throw tg::Error("the prompt has no tokens");
    std::fputs(m.tokenizer().decode(ids, false).c_str(), stdout);
    llm::generate(m, ids, o.n, s, stream, 0, &st, o.chunk);
    std::printf("\n");
    report(st);
    return 0;
  }
  // chat: the whole conversation is re-encoded each turn; the cache is reused for the prefix that did not change
  std::string tmpl = llm::chat_template_name(m.gguf());
  std::vector<llm::Message> msgs;
  llm::Session session(m);
  std::string line;
  std::fprintf(stderr, "chat template %s; one message per line, EOF ends\n", tmpl.c_str());
  while (std::fprintf(stderr, "> "), std::getline(std::cin, line)) {
    msgs.push_back({"user", line});
    std::vector<int32_t> ids = m.tokenizer().encode(llm::apply_chat_template(tmpl, msgs));
    if (int64_t(ids.size()) >= m.config().max_context) throw tg::Error("the conversation exceeds the context of " + std::to_string(m.config().max_context));
    std::vector<int32_t> out = session.generate(ids, o.n, s, stream, &st, o.chunk);
    std::string reply;
    for (int32_t t : out)
      if (std::find(m.stop_tokens().begin(), m.stop_tokens().end(), t) == m.stop_tokens().end()) reply += m.tokenizer().piece(t, false);
    std::string text;
    llm::unicode::utf8_repair(reply, text);
    msgs.push_back({"assistant", text});
    report(st);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Options o = parse(argc, argv);
    llm::Model m = llm::Model::load(o.model, o.max_context, o.device);
    if (o.cmd == "serve") return serve(m, {.model_path = o.model, .host = o.host, .port = int(o.port), .chunk = o.chunk, .cache_slots = o.cache_slots});
    return o.cmd == "logprobs" ? logprobs(m, o) : o.cmd == "bench" ? bench(m, o) : run(m, o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tg-llm: %s\n", e.what());
    return 1;
  }
}
