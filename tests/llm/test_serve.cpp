// `tg-llm serve` as a client sees it: the server binary on a free 127.0.0.1 port as a subprocess, real HTTP with
// httplib::Client (or a raw socket). Replies against the command line's greedy output for the same prompt (its bytes
// made UTF-8 by Python's errors="replace"), streams against the whole replies, OpenAI's error objects, concurrent
// clients against each alone, and the chat page in headless Chromium (tests/llm/chat_page.py).
#include <functional>
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "llm/unicode.h"
#include "tg/llm.h"
#include "llm_models.h"

using nlohmann::json;
using tg::test::shell_quote;

namespace {

const tg::test::LlmModels& models() { return tg::test::llm_models(); }
#define NEED_MODELS() ASSERT_TRUE(models().error.empty()) << models().error

// `tg-llm serve --port 0 ...` until the test program ends; the port is what its first line of stdout says
struct Server {
  pid_t pid = -1;
  int port = 0;
  explicit Server(const std::string& model) {
    std::string cmd = "exec " + shell_quote(TG_LLM_CLI) + " serve --model " + shell_quote(model) + " --port 0";
    int fd[2];
    if (pipe(fd) != 0) return;
    if ((pid = fork()) == 0) {
      dup2(fd[1], 1), close(fd[0]), close(fd[1]);
      execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
      _exit(127);
    }
    close(fd[1]);
    std::string line;
    char c;
    while (read(fd[0], &c, 1) == 1 && c != '\n') line += c;
    close(fd[0]);
    std::smatch m;
    if (std::regex_search(line, m, std::regex("^tg-llm: serving .* at http://127\\.0\\.0\\.1:([0-9]+)$"))) port = std::stoi(m[1]);
  }
  ~Server() {
    if (pid > 0) kill(pid, SIGTERM), waitpid(pid, nullptr, 0);
  }
  std::unique_ptr<httplib::Client> client() const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", port);
    c->set_read_timeout(60);
    return c;
  }
};
const Server& server(const std::string& name) {  // one per model, started on first use
  static std::map<std::string, std::unique_ptr<Server>> all;
  static std::mutex mu;
  std::lock_guard l(mu);
  auto& s = all[name];
  if (!s) s = std::make_unique<Server>(models().model(name));
  return *s;
}
#define NEED_SERVER(name) \
  NEED_MODELS();          \
  const Server& srv = server(name); \
  ASSERT_GT(srv.port, 0) << "tg-llm serve did not start"

struct Reply {
  int status = 0;
  std::string body;
  json j() const { return json::parse(body); }
};
Reply post(const Server& s, const std::string& path, const std::string& body) {
  auto r = s.client()->Post(path, body, "application/json");
  return r ? Reply{r->status, r->body} : Reply{-1, httplib::to_string(r.error())};
}
Reply post(const Server& s, const std::string& path, const json& body) { return post(s, path, body.dump()); }

// the `data:` payloads of a server-sent event stream, in order
std::vector<std::string> events(const std::string& body) {
  std::vector<std::string> out;
  for (size_t p = 0, e; (e = body.find("\n\n", p)) != std::string::npos; p = e + 2) {
    std::string ev = body.substr(p, e - p);
    EXPECT_EQ(ev.rfind("data: ", 0), 0u) << ev;
    out.push_back(ev.substr(6));
  }
  return out;
}
struct Streamed {
  std::string text, finish_reason;
  size_t chunks = 0;
  json logprobs;  // the chunks' log-probabilities joined: chat's content entries, completions' four arrays
};
// concatenates choices[0].text (completions) or choices[0].delta.content (chat) and checks the stream's frame
Streamed read_stream(const Reply& r, bool chat) {
  Streamed s;
  EXPECT_EQ(r.status, 200) << r.body;
  std::vector<std::string> ev = events(r.body);
  EXPECT_FALSE(ev.empty());
  if (ev.empty()) return s;
  EXPECT_EQ(ev.back(), "[DONE]");
  for (size_t i = 0; i + 1 < ev.size(); i++) {
    json c = json::parse(ev[i]);
    EXPECT_EQ(c["object"], chat ? "chat.completion.chunk" : "text_completion");
    const json& ch = c["choices"][0];
    if (chat && i == 0) { EXPECT_EQ(ch["delta"]["role"], "assistant"); }
    s.text += chat ? ch["delta"].value("content", "") : ch["text"].get<std::string>();
    if (const json& lp = ch["logprobs"]; !lp.is_null())
      for (auto& [k, v] : lp.items())
        for (const json& e : v) s.logprobs[k].push_back(e);
    if (!ch["finish_reason"].is_null()) {
      EXPECT_EQ(i + 2, ev.size()) << "finish_reason before the last chunk";
      s.finish_reason = ch["finish_reason"];
    }
    s.chunks++;
  }
  return s;
}
std::string reply_text(const json& r) { return r["choices"][0].contains("message") ? r["choices"][0]["message"]["content"] : r["choices"][0]["text"]; }

// build/tg-llm's stdout for `args` (and `input` on stdin), its bytes made UTF-8 by Python (errors="replace")
std::string cli_text(const std::string& args, const std::string& input = "") {
  tg::test::Shell r = tg::test::run_shell("printf %s " + shell_quote(input) + " | " + shell_quote(TG_LLM_CLI) + args + " 2>/dev/null | " + shell_quote(TG_PYTHON) +
                                          " -c 'import sys, json; print(json.dumps(sys.stdin.buffer.read().decode(\"utf-8\", \"replace\")))'");
  EXPECT_EQ(r.rc, 0) << r.out;
  return r.rc == 0 ? json::parse(r.out).get<std::string>() : "";
}

}  // namespace

// greedy completions and chat replies equal what `tg-llm --prompt` / `tg-llm` (chat on stdin) print for the same text
TEST(LlmServe, RepliesEqualTheGreedyCli) {
  NEED_MODELS();
  for (const char* name : {"llama", "qwen3"}) {
    SCOPED_TRACE(name);
    const Server& srv = server(name);
    ASSERT_GT(srv.port, 0);
    std::string m = " --model " + shell_quote(models().model(name)) + " -n 10 --temp 0";
    std::string cli = cli_text(m + " --prompt 'the heat'");
    ASSERT_EQ(cli.rfind("the heat", 0), 0u) << cli;  // the CLI echoes the prompt, ends with a newline
    Reply r = post(srv, "/v1/completions", json{{"prompt", "the heat"}, {"max_tokens", 10}, {"temperature", 0}});
    ASSERT_EQ(r.status, 200) << r.body;
    json j = r.j();
    EXPECT_EQ(j["object"], "text_completion");
    EXPECT_EQ(j["model"], std::string(name) + ".gguf");
    EXPECT_EQ("the heat" + reply_text(j) + "\n", cli);
    std::string finish = j["choices"][0]["finish_reason"];
    EXPECT_TRUE(finish == "length" || finish == "stop") << finish;
    EXPECT_EQ(j["usage"]["completion_tokens"].get<int>() == 10, finish == "length");
    EXPECT_EQ(j["usage"]["total_tokens"], j["usage"]["prompt_tokens"].get<int>() + j["usage"]["completion_tokens"].get<int>());

    std::string chat = cli_text(m, "hello there\n");
    Reply c = post(srv, "/v1/chat/completions", json{{"messages", {{{"role", "user"}, {"content", "hello there"}}}}, {"max_tokens", 10}, {"temperature", 0}});
    ASSERT_EQ(c.status, 200) << c.body;
    EXPECT_EQ(c.j()["object"], "chat.completion");
    EXPECT_EQ(c.j()["choices"][0]["message"]["role"], "assistant");
    EXPECT_EQ(reply_text(c.j()), chat);
  }
}

// stream: true sends the same text in pieces (the same seed: the same draws), the finish reason last, then [DONE]; seeds
// are tried until a reply streams in several events (a random model may end at once, and bytes that are not yet whole
// UTF-8 are held back), and every seed's stream must match its whole reply
TEST(LlmServe, StreamConcatenatesToTheWholeReply) {
  NEED_SERVER("llama");
  for (bool chat : {false, true}) {
    SCOPED_TRACE(chat ? "chat" : "completions");
    bool several = false;
    for (int seed = 7; seed < 40 && !several; seed++) {
      json req = {{"max_tokens", 12}, {"temperature", 0.9}, {"top_k", 0}, {"seed", seed}};
      if (chat) req["messages"] = {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "a story"}}};
      else req["prompt"] = "Once upon";
      std::string path = chat ? "/v1/chat/completions" : "/v1/completions";
      Reply whole = post(srv, path, req);
      ASSERT_EQ(whole.status, 200) << whole.body;
      req["stream"] = true;
      Streamed s = read_stream(post(srv, path, req), chat);
      EXPECT_EQ(s.text, reply_text(whole.j())) << "seed " << seed;
      EXPECT_EQ(s.finish_reason, whole.j()["choices"][0]["finish_reason"]) << "seed " << seed;
      several = s.chunks > 2;  // a role/first piece, more pieces, the finish
    }
    EXPECT_TRUE(several) << "no seed's reply streamed in more than two events";
  }
}

// a stop string ends the reply before it (also when it arrives split over tokens), whole or streamed
TEST(LlmServe, StopStringsCutTheReply) {
  NEED_SERVER("llama");
  json req = {{"prompt", "the heat"}, {"max_tokens", 12}, {"temperature", 0}};
  std::string full = reply_text(post(srv, "/v1/completions", req).j());
  size_t at = 1;  // two ASCII characters after the first: a stop string that is not at the start
  while (at + 2 < full.size() && (uint8_t(full[at]) >= 0x80 || uint8_t(full[at + 1]) >= 0x80)) at++;
  ASSERT_LT(at + 2, full.size()) << full;
  std::string stop = full.substr(at, 2), want = full.substr(0, full.find(stop));
  req["stop"] = {"never in it", stop};
  json j = post(srv, "/v1/completions", req).j();
  EXPECT_EQ(reply_text(j), want);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  req["stream"] = true;
  Streamed s = read_stream(post(srv, "/v1/completions", req), false);
  EXPECT_EQ(s.text, want);
  EXPECT_EQ(s.finish_reason, "stop");
  req["stop"] = "never in it", req["stream"] = false;
  EXPECT_EQ(reply_text(post(srv, "/v1/completions", req).j()), full);
}

TEST(LlmServe, ModelsAndHealth) {
  NEED_SERVER("llama");
  auto c = srv.client();
  auto h = c->Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_EQ(json::parse(h->body)["status"], "ok");
  auto m = c->Get("/v1/models");
  ASSERT_TRUE(m);
  json j = json::parse(m->body);
  EXPECT_EQ(j["object"], "list");
  ASSERT_EQ(j["data"].size(), 1u);
  EXPECT_EQ(j["data"][0]["id"], "llama.gguf");
  EXPECT_EQ(j["data"][0]["object"], "model");
  EXPECT_EQ(j["data"][0]["meta"]["n_ctx"], 64);  // the model's context_length
  // the model's id is accepted in requests
  EXPECT_EQ(post(srv, "/v1/completions", json{{"model", "llama.gguf"}, {"prompt", "a"}, {"max_tokens", 1}}).status, 200);
}

// every bad request is a 4xx with OpenAI's error object whose message names what was wrong
TEST(LlmServe, BadRequestsAre4xxErrors) {
  NEED_SERVER("llama");
  std::string the100;
  for (int i = 0; i < 100; i++) the100 += "the ";
  json user = {{{"role", "user"}, {"content", "hi"}}};
  struct Case {
    std::string path, body;
    int status;
    std::string in_message, param;
  };
  std::vector<Case> cases = {
      {"/v1/completions", "{\"prompt\": ", 400, "not valid JSON", ""},
      {"/v1/completions", "[1, 2]", 400, "JSON object", ""},
      {"/v1/completions", json{{"max_tokens", 2}}.dump(), 400, "'prompt'", "prompt"},
      {"/v1/completions", json{{"prompt", 5}}.dump(), 400, "'prompt'", "prompt"},
      {"/v1/chat/completions", json{{"prompt", "hi"}}.dump(), 400, "'messages'", "messages"},
      {"/v1/chat/completions", json{{"messages", {{{"role", "user"}}}}}.dump(), 400, "content", "messages"},
      {"/v1/chat/completions", json{{"messages", {{{"role", "tool"}, {"content", "x"}}}}}.dump(), 400, "tool", "messages"},
      {"/v1/chat/completions", json{{"model", "gpt-4"}, {"messages", user}}.dump(), 404, "gpt-4", "model"},
      {"/v1/completions", json{{"prompt", the100}}.dump(), 400, "context of 64", "prompt"},
      {"/v1/completions", json{{"prompt", "a"}, {"max_tokens", -1}}.dump(), 400, "max_tokens", "max_tokens"},
      {"/v1/completions", json{{"prompt", "a"}, {"temperature", "hot"}}.dump(), 400, "'temperature' must be a number", "temperature"},
      {"/v1/completions", json{{"prompt", "a"}, {"top_p", 0}}.dump(), 400, "top_p", ""},
      {"/v1/completions", json{{"prompt", "a"}, {"stop", {""}}}.dump(), 400, "stop", "stop"},
      {"/v1/completions", json{{"prompt", "a"}, {"n", 0}}.dump(), 400, "'n' must be between 1 and 16", "n"},
      {"/v1/embeddings", json{{"input", "a"}}.dump(), 404, "/v1/embeddings", ""},
      {"/v1/completions", json{{"prompt", "a"}, {"logprobs", 21}}.dump(), 400, "between 0 and 20", "logprobs"},
      {"/v1/chat/completions", json{{"messages", user}, {"top_logprobs", 2}}.dump(), 400, "'logprobs': true", "top_logprobs"},
      {"/v1/chat/completions", json{{"messages", user}, {"logprobs", true}, {"top_logprobs", -1}}.dump(), 400, "between 0 and 20", "top_logprobs"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path + " " + c.body.substr(0, 80));
    Reply r = post(srv, c.path, c.body);
    EXPECT_EQ(r.status, c.status) << r.body;
    json e = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(e.is_object() && e.contains("error")) << r.body;
    EXPECT_EQ(e["error"]["type"], "invalid_request_error");
    EXPECT_NE(e["error"]["message"].get<std::string>().find(c.in_message), std::string::npos) << e["error"]["message"];
    if (!c.param.empty()) { EXPECT_EQ(e["error"]["param"], c.param); }
  }
  EXPECT_EQ(post(srv, "/v1/completions", json{{"prompt", the100}}).j()["error"]["code"], "context_length_exceeded");
  EXPECT_EQ(post(srv, "/v1/chat/completions", json{{"model", "x"}, {"messages", user}}).j()["error"]["code"], "model_not_found");
}

// requests from two clients at once are queued: each gets exactly what it gets alone (its own KV cache positions)
TEST(LlmServe, ConcurrentClientsGetWhatTheyGetAlone) {
  NEED_SERVER("llama");
  json a = {{"prompt", "the heat of"}, {"max_tokens", 16}, {"temperature", 0.8}, {"seed", 1}};
  json b = {{"prompt", "in a war"}, {"max_tokens", 16}, {"temperature", 0.8}, {"seed", 2}, {"stream", true}};
  std::string alone_a = reply_text(post(srv, "/v1/completions", a).j()), alone_b = read_stream(post(srv, "/v1/completions", b), false).text;
  ASSERT_NE(alone_a, alone_b);
  std::vector<std::string> got_a(3), got_b(3);
  std::thread ta([&] { for (auto& g : got_a) g = reply_text(post(srv, "/v1/completions", a).j()); });
  std::thread tb([&] { for (auto& g : got_b) g = read_stream(post(srv, "/v1/completions", b), false).text; });
  ta.join(), tb.join();
  for (auto& g : got_a) EXPECT_EQ(g, alone_a);
  for (auto& g : got_b) EXPECT_EQ(g, alone_b);
}

// a request that begins as the one before did (the same prompt and its reply, then more: a chat's next turn) feeds only
// what follows that beginning (usage.prompt_tokens_details.cached_tokens), and its reply is what a fresh process prints
TEST(LlmServe, ASharedBeginningComesFromTheCache) {
  NEED_SERVER("llama");
  std::string first = "the heat of the day";
  Reply r1 = post(srv, "/v1/completions", json{{"prompt", first}, {"max_tokens", 6}, {"temperature", 0}});
  ASSERT_EQ(r1.status, 200) << r1.body;
  int64_t p1 = r1.j()["usage"]["prompt_tokens"];
  std::string longer = first + reply_text(r1.j()) + " and the";
  Reply r2 = post(srv, "/v1/completions", json{{"prompt", longer}, {"max_tokens", 8}, {"temperature", 0}});
  ASSERT_EQ(r2.status, 200) << r2.body;
  int64_t cached = r2.j()["usage"]["prompt_tokens_details"]["cached_tokens"], p2 = r2.j()["usage"]["prompt_tokens"];
  EXPECT_GE(cached, p1 - 1);  // the first prompt's tokens (its last may merge with the text after it)
  EXPECT_LT(cached, p2);
  std::string cli = cli_text(" --model " + shell_quote(models().model("llama")) + " -n 8 --temp 0 --prompt " + shell_quote(longer));
  EXPECT_EQ(longer + reply_text(r2.j()) + "\n", cli);
  // a prompt that shares nothing past its first tokens is fed whole again
  Reply r3 = post(srv, "/v1/completions", json{{"prompt", "~zebra~"}, {"max_tokens", 2}, {"temperature", 0}});  // (no earlier request began so)
  ASSERT_EQ(r3.status, 200) << r3.body;
  EXPECT_LE(r3.j()["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>(), 2);  // (BOS, SentencePiece's leading space)
  // the first conversation's next turn continues from its snapshot (a cache slot), and replies as a fresh process does
  std::string third = longer + reply_text(r2.j()) + " so";
  Reply r4 = post(srv, "/v1/completions", json{{"prompt", third}, {"max_tokens", 4}, {"temperature", 0}});
  ASSERT_EQ(r4.status, 200) << r4.body;
  EXPECT_GE(r4.j()["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>(), p2 - 1);
  EXPECT_EQ(third + reply_text(r4.j()) + "\n", cli_text(" --model " + shell_quote(models().model("llama")) + " -n 4 --temp 0 --prompt " + shell_quote(third)));
}

// log-probabilities: a completion with echo gives each prompt token after BOS its log-probability given the tokens
// before it, then each reply token's: the log-softmax (computed here) of Model::logits over prompt + reply in this
// process; a greedy reply's tokens are the likeliest of their `logprobs` alternatives. Chat's form carries the same
TEST(LlmServe, LogprobsAreTheModelsLogSoftmax) {
  NEED_SERVER("llama");
  tg::llm::Model m = tg::llm::Model::load(models().model("llama"));
  std::vector<int32_t> ids = m.tokenizer().encode("the heat of");
  ASSERT_EQ(ids[0], m.tokenizer().bos());
  tg::llm::Sampler greedy({.temperature = 0});
  std::vector<int32_t> reply = tg::llm::generate(m, ids, 4, greedy);
  ASSERT_EQ(reply.size(), 4u);  // (a stop token would end it early: the test model has none in its first steps)
  std::vector<int32_t> all = ids;
  all.insert(all.end(), reply.begin(), reply.end());
  size_t V = size_t(m.config().vocab_size);
  std::vector<float> l = m.logits(all, 0, true);
  auto expected = [&](size_t i) {  // log P(all[i] | all[:i])
    const float* row = l.data() + (i - 1) * V;
    double mx = *std::max_element(row, row + V), sum = 0;
    for (size_t v = 0; v < V; v++) sum += std::exp(double(row[v]) - mx);
    return double(row[all[i]]) - mx - std::log(sum);
  };

  Reply r = post(srv, "/v1/completions", json{{"prompt", "the heat of"}, {"max_tokens", 4}, {"temperature", 0}, {"logprobs", 3}, {"echo", true}});
  ASSERT_EQ(r.status, 200) << r.body;
  json c = r.j()["choices"][0];
  EXPECT_EQ(c["text"].get<std::string>().rfind("the heat of", 0), 0u) << c["text"];
  json lp = c["logprobs"];
  ASSERT_EQ(lp["token_logprobs"].size(), all.size() - 1) << lp;  // every token but BOS
  size_t offset = 0;
  for (size_t k = 0; k + 1 < all.size(); k++) {
    SCOPED_TRACE(k);
    double got = lp["token_logprobs"][k];
    EXPECT_NEAR(got, expected(k + 1), 1e-3);
    EXPECT_EQ(lp["text_offset"][k], offset);
    offset += m.tokenizer().piece(all[k + 1], false).size();
    json top = lp["top_logprobs"][k];
    ASSERT_TRUE(top.is_object() && !top.empty() && top.size() <= 3) << top;
    double best = -1e30;
    for (auto& [text, v] : top.items()) best = std::max(best, v.get<double>());
    EXPECT_GE(best + 1e-9, got);
    if (k + 1 >= ids.size()) { EXPECT_NEAR(best, got, 1e-9); }  // greedy: the reply's token is the likeliest
  }

  Reply ch = post(srv, "/v1/chat/completions", json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 3}, {"temperature", 0}, {"logprobs", true}, {"top_logprobs", 2}});
  ASSERT_EQ(ch.status, 200) << ch.body;
  json content = ch.j()["choices"][0]["logprobs"]["content"];
  int64_t n = ch.j()["usage"]["completion_tokens"];
  std::string finish = ch.j()["choices"][0]["finish_reason"];
  EXPECT_EQ(int64_t(content.size()), finish == "stop" ? n - 1 : n) << content;  // a stop token is not part of the reply
  for (const json& e : content) {
    ASSERT_EQ(e["top_logprobs"].size(), 2u) << e;
    EXPECT_NEAR(e["top_logprobs"][0]["logprob"].get<double>(), e["logprob"].get<double>(), 1e-9);
    EXPECT_GE(e["top_logprobs"][0]["logprob"].get<double>(), e["top_logprobs"][1]["logprob"].get<double>());
    std::string bytes;
    for (const json& b : e["bytes"]) bytes += char(b.get<int>());
    std::string repaired;
    tg::llm::unicode::utf8_repair(bytes, repaired);
    if (repaired == bytes) { EXPECT_EQ(e["token"], bytes); }  // (the token's text is JSON's: invalid bytes replaced)
  }
  EXPECT_TRUE(ch.j()["choices"][0]["logprobs"].is_object());
  EXPECT_TRUE(post(srv, "/v1/chat/completions", json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 1}}).j()["choices"][0]["logprobs"].is_null());
}

// streamed log-probabilities: each chunk carries its tokens' (completions with echo: the prompt's in the first chunk,
// with the prompt's text); joined, they equal the whole reply's
TEST(LlmServe, LogprobsStreamWithTheirText) {
  NEED_SERVER("llama");
  for (bool chat : {false, true}) {
    SCOPED_TRACE(chat ? "chat" : "completions");
    json req = chat ? json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"logprobs", true}, {"top_logprobs", 2}}
                    : json{{"prompt", "the heat of"}, {"logprobs", 3}, {"echo", true}};
    req["max_tokens"] = 6, req["temperature"] = 0.9, req["seed"] = 5;
    const char* path = chat ? "/v1/chat/completions" : "/v1/completions";
    Reply whole = post(srv, path, req);
    ASSERT_EQ(whole.status, 200) << whole.body;
    req["stream"] = true;
    Streamed s = read_stream(post(srv, path, req), chat);
    EXPECT_EQ(s.text, reply_text(whole.j()));
    json lp = whole.j()["choices"][0]["logprobs"];
    // (the same tokens; the values to float rounding: a second request computes from the cached prompt's keys)
    std::function<void(const json&, const json&)> same = [&](const json& a, const json& b) {
      ASSERT_EQ(a.type(), b.type()) << a << " vs " << b;
      if (a.is_number_float()) { EXPECT_NEAR(a.get<double>(), b.get<double>(), 1e-5); }
      else if (a.is_structured()) {
        ASSERT_EQ(a.size(), b.size()) << a << " vs " << b;
        for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
          if (a.is_object()) { EXPECT_EQ(ia.key(), ib.key()); }
          same(*ia, *ib);
        }
      } else { EXPECT_EQ(a, b); }
    };
    same(s.logprobs, chat ? json{{"content", lp["content"]}} : lp);
    EXPECT_FALSE((chat ? lp["content"] : lp["tokens"]).empty());
  }
}

// stream_options.include_usage: one more event before [DONE], with no choices and the usage the whole reply reports
TEST(LlmServe, StreamIncludesUsageWhenAsked) {
  NEED_SERVER("llama");
  json req = {{"prompt", "the heat"}, {"max_tokens", 5}, {"temperature", 0}};
  json whole = post(srv, "/v1/completions", req).j();
  req["stream"] = true, req["stream_options"] = {{"include_usage", true}};
  Reply r = post(srv, "/v1/completions", req);
  ASSERT_EQ(r.status, 200) << r.body;
  std::vector<std::string> ev = events(r.body);
  ASSERT_GE(ev.size(), 3u) << r.body;
  EXPECT_EQ(ev.back(), "[DONE]");
  json u = json::parse(ev[ev.size() - 2]);
  EXPECT_TRUE(u["choices"].is_array() && u["choices"].empty()) << u;
  EXPECT_EQ(u["usage"]["completion_tokens"], whole["usage"]["completion_tokens"]);
  EXPECT_EQ(u["usage"]["prompt_tokens"], whole["usage"]["prompt_tokens"]);
  std::string text;
  for (size_t i = 0; i + 2 < ev.size(); i++) text += json::parse(ev[i])["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(text, reply_text(whole));
  EXPECT_EQ(post(srv, "/v1/completions", json{{"prompt", "a"}, {"stream", true}, {"stream_options", 3}}).status, 400);
}

// n choices: choice i is what a request alone with seed + i gets (whole and streamed, each stream event naming its
// choice); usage counts every choice's tokens
TEST(LlmServe, SeveralChoicesAreSeveralSeeds) {
  NEED_SERVER("llama");
  for (bool chat : {false, true}) {
    SCOPED_TRACE(chat ? "chat" : "completions");
    std::string path = chat ? "/v1/chat/completions" : "/v1/completions";
    json req = {{"max_tokens", 6}, {"temperature", 1.0}, {"seed", 11}};
    if (chat) req["messages"] = {{{"role", "user"}, {"content", "the heat"}}};
    else req["prompt"] = "the heat";
    std::vector<std::string> alone;
    int64_t tokens = 0;
    for (int i = 0; i < 3; i++) {
      json r = req;
      r["seed"] = 11 + i;
      json j = post(srv, path, r).j();
      alone.push_back(reply_text(j));
      tokens += j["usage"]["completion_tokens"].get<int64_t>();
    }
    req["n"] = 3;
    Reply whole = post(srv, path, req);
    ASSERT_EQ(whole.status, 200) << whole.body;
    json w = whole.j();
    ASSERT_EQ(w["choices"].size(), 3u) << w;
    for (int i = 0; i < 3; i++) {
      EXPECT_EQ(w["choices"][i]["index"], i);
      std::string text = chat ? w["choices"][i]["message"]["content"] : w["choices"][i]["text"];
      EXPECT_EQ(text, alone[size_t(i)]) << i;
    }
    EXPECT_EQ(w["usage"]["completion_tokens"], tokens);
    req["stream"] = true;
    Reply st = post(srv, path, req);
    ASSERT_EQ(st.status, 200) << st.body;
    std::vector<std::string> ev = events(st.body);
    ASSERT_FALSE(ev.empty());
    EXPECT_EQ(ev.back(), "[DONE]");
    std::vector<std::string> streamed(3);
    std::vector<int> finishes(3);
    for (size_t e = 0; e + 1 < ev.size(); e++) {
      json c = json::parse(ev[e]);
      const json& ch = c["choices"][0];
      size_t i = ch["index"];
      ASSERT_LT(i, 3u);
      streamed[i] += chat ? ch["delta"].value("content", "") : ch["text"].get<std::string>();
      finishes[i] += !ch["finish_reason"].is_null();
    }
    for (size_t i = 0; i < 3; i++) {
      EXPECT_EQ(streamed[i], alone[i]) << i;
      EXPECT_EQ(finishes[i], 1) << i;
    }
  }
}

// a client that goes away mid-stream stops its generation; the next request is served as if nothing happened
TEST(LlmServe, ClientClosingMidStreamThenANewRequest) {
  NEED_SERVER("llama");
  json req = {{"prompt", "the"}, {"max_tokens", 8}, {"temperature", 0}};
  std::string alone = reply_text(post(srv, "/v1/completions", req).j());
  for (int i = 0; i < 2; i++) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET, addr.sin_port = htons(uint16_t(srv.port)), addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    std::string body = json{{"prompt", "a long story"}, {"max_tokens", 1000}, {"temperature", 1}, {"stream", true}}.dump();
    std::string http = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    ASSERT_EQ(write(fd, http.data(), http.size()), ssize_t(http.size()));
    std::string got;
    char buf[256];
    while (got.find("data: ") == std::string::npos) {  // the first event has come
      ssize_t n = read(fd, buf, sizeof buf);
      ASSERT_GT(n, 0) << got;
      got.append(buf, size_t(n));
    }
    EXPECT_NE(got.find("text/event-stream"), std::string::npos) << got;
    close(fd);
  }
  EXPECT_EQ(reply_text(post(srv, "/v1/completions", req).j()), alone);
  auto h = srv.client()->Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
}

// GET / in headless Chromium: a message typed into the page, Enter, the reply streamed into the DOM equals the API's
TEST(LlmServe, ChatPageStreamsTheReplyInChromium) {
  NEED_SERVER("llama");
  auto page = srv.client()->Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->get_header_value("Content-Type").find("text/html"), std::string::npos);
  // a random model's greedy reply may end at once: the first message whose reply has several tokens is typed into the page
  std::string msg, want;
  for (const char* m : {"tell me a story", "hello there", "what is the heat", "once upon a time", "a b c d e f"}) {
    json j = post(srv, "/v1/chat/completions", json{{"messages", {{{"role", "user"}, {"content", m}}}}, {"max_tokens", 12}, {"temperature", 0}}).j();
    if (j["usage"]["completion_tokens"].get<int>() >= 4) { msg = m, want = reply_text(j); break; }
  }
  ASSERT_FALSE(msg.empty()) << "no message got a reply of 4 or more tokens";
  tg::test::Shell r = tg::test::run_shell(shell_quote(TG_PYTHON) + " " + shell_quote(TG_CHAT_PAGE_SCRIPT) + " http://127.0.0.1:" + std::to_string(srv.port) +
                                          "/ " + shell_quote(msg) + " 0 12 2>&1");
  ASSERT_EQ(r.rc, 0) << r.out << "\n(chat_page.py needs chromium: setup.sh installs it)";
  json dom = json::parse(r.out);
  EXPECT_EQ(dom["user"], msg);
  EXPECT_FALSE(dom["error"].get<bool>());
  EXPECT_EQ(dom["reply"], want);
  // the page appends each event's text as it is read; on loopback a fast model's events often arrive in one read, so only
  // "the DOM changed while the reply streamed" is asserted here (LlmServe.StreamConcatenatesToTheWholeReply checks the pieces)
  EXPECT_GE(dom["updates"].get<int>(), 2) << "the reply never reached the DOM";
}

// the replies' bytes as UTF-8: The Unicode Standard's example of maximal subparts (ch. 3, table 3-8), one U+FFFD each
TEST(LlmServe, Utf8RepairReplacesMaximalSubparts) {
  std::string out;
  EXPECT_EQ(tg::llm::unicode::utf8_repair("a\xF1\x80\x80\xE1\x80\xC2" "b\x80" "c\x80\xBF" "d", out), 13u);
  const std::string R = "\xEF\xBF\xBD";
  EXPECT_EQ(out, "a" + R + R + R + "b" + R + "c" + R + R + "d");
  out.clear();  // not final: a sequence cut off by the end waits for its next bytes
  EXPECT_EQ(tg::llm::unicode::utf8_repair("x\xE2\x82", out, false), 1u);
  EXPECT_EQ(out, "x");
  EXPECT_EQ(tg::llm::unicode::utf8_repair("\xE2\x82\xAC\xED\xA0\x80", out, false), 6u);  // the euro sign; a surrogate is 3 subparts
  EXPECT_EQ(out, "x\xE2\x82\xAC" + R + R + R);
}
