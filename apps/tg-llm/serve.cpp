// tg-llm serve: requests (OpenAI's JSON) -> jobs on one worker thread -> replies, whole or as server-sent events.
#include "serve.h"

#include <httplib.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <deque>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <thread>

#include "chat_page.h"
#include "llm/unicode.h"
#include "tg/error.h"

namespace llm = tg::llm;
using nlohmann::json;

namespace {

// ** 1. requests **

struct BadRequest {
  int status;
  std::string message, param, code;
};

struct Job {
  // what to generate
  bool chat = false, stream = false;
  std::vector<int32_t> prompt;
  int64_t max_tokens = 0;
  llm::SamplerParams sp;
  std::vector<std::string> stop;
  int64_t logprobs = -1;    // the alternatives per token (0-20) when log-probabilities are asked for, else -1
  bool echo = false;        // completions: the prompt's text (and with logprobs its tokens') before the reply's
  bool stream_usage = false;  // stream_options.include_usage: a last chunk with the usage
  std::string prompt_text;
  int64_t n = 1;            // choices, generated one after another (the prompt's cache reused), seeds seed, seed + 1, ...
  // the replies, written by the worker under mu
  struct Choice {
    std::string text;  // valid UTF-8, without what may still turn out to begin a stop string
    bool done = false;
    std::string finish_reason;
    int64_t completion_tokens = 0;
    std::vector<llm::TokenLogprob> lp;  // the reply's tokens' as they come (with logprobs)
    std::vector<size_t> lp_end;         // where each of them ends in the text so far (what streams with which text)
  };
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Choice> choices;  // filled as they are generated: the last one is being generated unless `done`
  bool done = false;
  std::string error;
  int64_t cached_tokens = 0;
  std::vector<llm::TokenLogprob> prompt_lp;  // the echoed prompt's tokens after the first
  std::atomic<bool> cancelled = false;  // the client went away
};

// a field of the request of type T, absent when missing or null; another type is a BadRequest naming it
template <class T>
std::optional<T> field(const json& r, const char* key) {
  auto it = r.find(key);
  if (it == r.end() || it->is_null()) return std::nullopt;
  bool ok = std::is_same_v<T, bool> ? it->is_boolean() : std::is_integral_v<T> ? it->is_number_integer() : std::is_floating_point_v<T> ? it->is_number() : it->is_string();
  const char* kind = std::is_same_v<T, bool> ? "a boolean" : std::is_integral_v<T> ? "an integer" : std::is_floating_point_v<T> ? "a number" : "a string";
  if (!ok) throw BadRequest{400, std::string("'") + key + "' must be " + kind, key};
  return it->get<T>();
}

// a message's content: a string, or OpenAI's array of {"type": "text", "text": ...} parts
std::string content_text(const json& c) {
  if (c.is_string()) return c.get<std::string>();
  std::string out;
  if (c.is_array())
    for (const json& part : c) {
      if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string())
        throw BadRequest{400, "only text content parts ({\"type\": \"text\", \"text\": ...}) are supported", "messages"};
      out += part["text"].get<std::string>();
    }
  else throw BadRequest{400, "a message's 'content' must be a string or an array of text parts", "messages"};
  return out;
}

std::shared_ptr<Job> parse_request(const std::string& body, bool chat, const llm::Model& m, const std::string& model_id) {
  json r;
  try {
    r = json::parse(body);
  } catch (const json::exception& e) { throw BadRequest{400, std::string("the body is not valid JSON: ") + e.what()}; }
  if (!r.is_object()) throw BadRequest{400, "the body must be a JSON object"};
  if (auto name = field<std::string>(r, "model"); name && *name != model_id)
    throw BadRequest{404, "the model '" + *name + "' does not exist; this server has '" + model_id + "'", "model", "model_not_found"};
  auto job = std::make_shared<Job>();
  job->chat = chat;
  std::string text, what = chat ? "messages" : "prompt";
  if (chat) {
    if (!r.contains("messages") || !r["messages"].is_array() || r["messages"].empty())
      throw BadRequest{400, "'messages' (a non-empty array of {\"role\", \"content\"}) is required", "messages"};
    std::vector<llm::Message> msgs;
    for (const json& msg : r["messages"]) {
      if (!msg.is_object() || !msg.contains("role") || !msg["role"].is_string() || !msg.contains("content"))
        throw BadRequest{400, "each message needs a string 'role' and a 'content'", "messages"};
      msgs.push_back({msg["role"].get<std::string>(), content_text(msg["content"])});
    }
    try {
      text = llm::apply_chat_template(llm::chat_template_name(m.gguf()), msgs);
    } catch (const tg::Error& e) { throw BadRequest{400, e.what(), "messages"}; }
  } else {
    json p = r.value("prompt", json());
    if (p.is_array() && p.size() == 1) p = p[0];
    if (!p.is_string()) throw BadRequest{400, "'prompt' (a string) is required", "prompt"};
    job->prompt_text = text = p.get<std::string>();
  }
  job->prompt = m.tokenizer().encode(text);
  int64_t ctx = m.config().max_context, n = int64_t(job->prompt.size());
  if (n == 0) throw BadRequest{400, "the " + what + " has no tokens", what};
  if (n > ctx)
    throw BadRequest{400, "the " + what + " has " + std::to_string(n) + " tokens, more than the context of " + std::to_string(ctx), what, "context_length_exceeded"};
  job->n = field<int64_t>(r, "n").value_or(1);
  if (job->n < 1 || job->n > 16) throw BadRequest{400, "'n' must be between 1 and 16", "n"};
  job->stream = field<bool>(r, "stream").value_or(false);
  if (json so = r.value("stream_options", json()); !so.is_null()) {
    if (!so.is_object()) throw BadRequest{400, "'stream_options' must be an object", "stream_options"};
    job->stream_usage = field<bool>(so, "include_usage").value_or(false);
  }
  // log-probabilities: completions' "logprobs": N alternatives and "echo"; chat's "logprobs": true and "top_logprobs": N
  const char* lp_key = chat ? "top_logprobs" : "logprobs";
  auto alternatives = field<int64_t>(r, lp_key);
  if (alternatives && (*alternatives < 0 || *alternatives > 20)) throw BadRequest{400, std::string("'") + lp_key + "' must be between 0 and 20", lp_key};
  bool wanted = chat ? field<bool>(r, "logprobs").value_or(false) : bool(alternatives);
  if (chat && alternatives && !wanted) throw BadRequest{400, "'top_logprobs' needs 'logprobs': true", "top_logprobs"};
  if (wanted) job->logprobs = alternatives.value_or(0);
  if (!chat) job->echo = field<bool>(r, "echo").value_or(false);
  auto max_tokens = field<int64_t>(r, "max_tokens");
  if (!max_tokens) max_tokens = field<int64_t>(r, "max_completion_tokens");
  job->max_tokens = max_tokens.value_or(ctx - n + 1);  // by default until the context is full (or a stop)
  if (job->max_tokens < 0) throw BadRequest{400, "'max_tokens' must be >= 0", "max_tokens"};
  llm::SamplerParams& sp = job->sp;
  sp.temperature = field<double>(r, "temperature").value_or(sp.temperature);
  sp.top_p = field<double>(r, "top_p").value_or(sp.top_p);
  sp.top_k = field<int64_t>(r, "top_k").value_or(sp.top_k);
  sp.min_p = field<double>(r, "min_p").value_or(sp.min_p);
  sp.repeat_penalty = field<double>(r, "repeat_penalty").value_or(field<double>(r, "repetition_penalty").value_or(sp.repeat_penalty));
  sp.repeat_last_n = field<int64_t>(r, "repeat_last_n").value_or(sp.repeat_last_n);
  auto seed = field<int64_t>(r, "seed");
  sp.seed = seed ? uint64_t(*seed) : std::random_device{}();
  if (sp.temperature < 0) throw BadRequest{400, "'temperature' must be >= 0", "temperature"};
  if (sp.repeat_penalty <= 0) throw BadRequest{400, "'repeat_penalty' must be > 0", "repeat_penalty"};
  try {
    llm::Sampler check(sp);
  } catch (const tg::Error& e) { throw BadRequest{400, e.what()}; }
  json stop = r.value("stop", json());
  if (stop.is_string()) stop = json::array({stop});
  if (!stop.is_null() && !stop.is_array()) throw BadRequest{400, "'stop' must be a string or an array of strings", "stop"};
  for (const json& s : stop) {
    if (!s.is_string() || s.get<std::string>().empty()) throw BadRequest{400, "'stop' must hold non-empty strings", "stop"};
    job->stop.push_back(s.get<std::string>());
  }
  return job;
}

// ** 2. the reply's text as tokens arrive **

// the tokens' bytes repaired to UTF-8 and cut before the first stop string; `ready` ends what cannot be the start of one
struct ReplyText {
  const std::vector<std::string>& stop;
  std::string bytes, text;
  size_t ready = 0;
  bool stopped = false;
  // false once a stop string appeared. `final`: no more bytes come, a cut-off sequence is replaced
  bool add(const std::string& piece, bool final = false) {
    bytes += piece;
    bytes.erase(0, llm::unicode::utf8_repair(bytes, text, final));
    size_t at = std::string::npos;
    for (const std::string& s : stop) at = std::min(at, text.find(s, ready));
    if (at != std::string::npos) return text.resize(at), ready = at, stopped = true, false;
    ready = text.size();
    for (const std::string& s : stop)
      for (size_t k = std::min(s.size() - 1, text.size()); k > 0 && !final; k--)
        if (text.compare(text.size() - k, k, s, 0, k) == 0) { ready = std::min(ready, text.size() - k); break; }
    return true;
  }
};

// ** 3. the worker: one generation at a time, in the order they came **

class Worker {
 public:
  Worker(llm::Model& m, int64_t chunk, size_t slots) : m_(m), session_(m, slots), chunk_(chunk), thread_([this] { loop(); }) {}
  ~Worker() {
    { std::lock_guard l(mu_); quit_ = true; }
    cv_.notify_one();
    thread_.join();
  }
  void submit(std::shared_ptr<Job> j) {
    { std::lock_guard l(mu_); queue_.push_back(std::move(j)); }
    cv_.notify_one();
  }

 private:
  void loop() {
    for (;;) {
      std::shared_ptr<Job> j;
      {
        std::unique_lock l(mu_);
        cv_.wait(l, [&] { return quit_ || !queue_.empty(); });
        if (quit_) return;
        j = std::move(queue_.front());
        queue_.pop_front();
      }
      run(*j);
    }
  }

  void run(Job& j) {
    std::string error;
    try {
      if (j.cancelled) throw tg::Error("the client went away");
      if (j.echo && j.logprobs >= 0) {
        auto lp = session_.prompt_logprobs(j.prompt, j.logprobs, chunk_);
        std::lock_guard l(j.mu);
        j.prompt_lp = std::move(lp);
      }
      for (int64_t i = 0; i < j.n && !j.cancelled; i++) generate_choice(j, uint64_t(i));
    } catch (const std::exception& e) { error = e.what(); }
    std::lock_guard l(j.mu);
    j.error = error, j.done = true;
    j.cv.notify_all();
  }

  // choice i: the sampler's seed + i
  void generate_choice(Job& j, uint64_t i) {
    ReplyText rt{j.stop};
    bool stop_token = false;
    size_t c;
    {
      std::lock_guard l(j.mu);
      c = j.choices.size();
      j.choices.emplace_back();
    }
    llm::Logprobs lp{.top = std::max<int64_t>(j.logprobs, 0), .tokens = {}};
    auto publish = [&](bool token) {
      std::lock_guard l(j.mu);
      Job::Choice& ch = j.choices[c];
      ch.text.append(rt.text, ch.text.size(), rt.ready - ch.text.size());
      if (token && j.logprobs >= 0) ch.lp.push_back(lp.tokens.back()), ch.lp_end.push_back(rt.text.size() + rt.bytes.size());
      j.cv.notify_all();
    };
    llm::GenerateStats st;
    llm::SamplerParams sp = j.sp;
    sp.seed += i;
    llm::Sampler s(sp);
    const std::vector<int32_t>& stops = m_.stop_tokens();
    session_.generate(j.prompt, j.max_tokens, s, [&](int32_t t) {
      if (j.cancelled) return false;
      if (std::find(stops.begin(), stops.end(), t) != stops.end()) return stop_token = true;  // not part of the text
      bool more = rt.add(m_.tokenizer().piece(t, false));
      publish(true);
      return more;
    }, &st, chunk_, j.logprobs >= 0 ? &lp : nullptr);
    rt.add("", true);
    publish(false);
    std::lock_guard l(j.mu);
    Job::Choice& ch = j.choices[c];
    ch.finish_reason = stop_token || rt.stopped ? "stop" : "length";
    ch.completion_tokens = st.generated, ch.done = true;
    if (i == 0) j.cached_tokens = st.cached_tokens;
    j.cv.notify_all();
  }

  llm::Model& m_;
  llm::Session session_;  // requests that share a beginning (a chat's turns, also of a few conversations) feed only what follows it
  int64_t chunk_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool quit_ = false;
  std::thread thread_;  // last: starts once the rest is built
};

// ** 4. the HTTP endpoints **

json error_body(const std::string& message, const std::string& type, const std::string& param = "", const std::string& code = "") {
  return {{"error", {{"message", message}, {"type", type}, {"param", param.empty() ? json() : json(param)}, {"code", code.empty() ? json() : json(code)}}}};
}

void reply_json(httplib::Response& res, const json& body, int status = 200) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

// OpenAI's legacy completions form: parallel arrays of token texts, log-probabilities, {text: log-probability} of the
// alternatives and byte offsets into the choice's text (with echo the prompt's tokens first, the first without one);
// rows [from, to) of them (a streamed chunk's)
size_t echo_rows(const Job& j, const llm::Model& m) { return j.echo ? j.prompt_lp.size() + (j.prompt.front() != m.tokenizer().bos()) : 0; }
json completion_logprobs(const Job& j, const Job::Choice& c, const llm::Model& m, size_t from = 0, size_t to = SIZE_MAX) {
  json tokens = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
  size_t offset = 0, row = 0;
  auto add = [&](int32_t token, const json& lp, const llm::TokenLogprob* t) {
    std::string p = m.tokenizer().piece(token, false);
    if (row >= from && row < to) {
      json top = t ? json::object() : json();
      if (t)
        for (auto [id, l] : t->top) top.emplace(m.tokenizer().piece(id, false), l);  // of tokens with the same text, the likeliest
      tokens.push_back(p), lps.push_back(lp), tops.push_back(top), offsets.push_back(offset);
    }
    offset += p.size(), row++;
  };
  if (j.echo) {
    if (j.prompt.front() != m.tokenizer().bos()) add(j.prompt.front(), nullptr, nullptr);  // BOS has no text
    for (const auto& t : j.prompt_lp) add(t.token, t.logprob, &t);
  }
  for (const auto& t : c.lp) add(t.token, t.logprob, &t);
  return {{"tokens", tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

// the chat form: {"content": [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]}, of tokens [from, to)
json chat_logprobs(const Job::Choice& c, const llm::Model& m, size_t from = 0, size_t to = SIZE_MAX) {
  auto entry = [&](int32_t token, double lp) {
    std::string p = m.tokenizer().piece(token, false);
    json bytes = json::array();
    for (unsigned char c : p) bytes.push_back(int(c));
    return json{{"token", p}, {"logprob", lp}, {"bytes", bytes}};
  };
  json content = json::array();
  for (size_t i = from; i < std::min(to, c.lp.size()); i++) {
    const llm::TokenLogprob& t = c.lp[i];
    json e = entry(t.token, t.logprob), top = json::array();
    for (auto [id, lp] : t.top) top.push_back(entry(id, lp));
    e["top_logprobs"] = top;
    content.push_back(e);
  }
  return {{"content", content}};
}

json usage(const Job& j) {
  int64_t p = int64_t(j.prompt.size()), c = 0;
  for (const Job::Choice& ch : j.choices) c += ch.completion_tokens;
  return {{"prompt_tokens", p}, {"completion_tokens", c}, {"total_tokens", p + c}, {"prompt_tokens_details", {{"cached_tokens", j.cached_tokens}}}};
}

std::string sse(const json& chunk) { return "data: " + chunk.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n"; }

}  // namespace

int serve(llm::Model& m, const ServeOptions& o) {
  signal(SIGPIPE, SIG_IGN);  // a client that closed its socket is a failed write, not the end of the server
  std::string model_id = std::filesystem::path(o.model_path).filename().string();
  Worker worker(m, o.chunk, size_t(o.cache_slots));
  std::atomic<int64_t> next_id = 0;
  httplib::Server srv;

  auto completions = [&](bool chat) {
    return [&, chat](const httplib::Request& req, httplib::Response& res) {
      std::shared_ptr<Job> job;
      try {
        job = parse_request(req.body, chat, m, model_id);
      } catch (const BadRequest& e) { return reply_json(res, error_body(e.message, "invalid_request_error", e.param, e.code), e.status); }
      json head = {{"id", (chat ? "chatcmpl-" : "cmpl-") + std::to_string(next_id++)}, {"created", int64_t(std::time(nullptr))}, {"model", model_id}};
      worker.submit(job);
      if (!job->stream) {
        std::unique_lock l(job->mu);
        job->cv.wait(l, [&] { return job->done; });
        if (!job->error.empty()) return reply_json(res, error_body(job->error, "server_error"), 500);
        json choices = json::array();
        for (size_t i = 0; i < job->choices.size(); i++) {
          const Job::Choice& c = job->choices[i];
          json choice = {{"index", i}, {"finish_reason", c.finish_reason}};
          if (chat) choice["message"] = {{"role", "assistant"}, {"content", c.text}};
          else choice["text"] = (job->echo ? job->prompt_text : "") + c.text;
          choice["logprobs"] = job->logprobs < 0 ? json() : chat ? chat_logprobs(c, m) : completion_logprobs(*job, c, m);
          choices.push_back(choice);
        }
        json body = head;
        body["object"] = chat ? "chat.completion" : "text_completion";
        body["choices"] = choices;
        body["usage"] = usage(*job);
        return reply_json(res, body);
      }
      // one event per piece of new text: {"choices": [{"delta": {"content": ...}}]} (chat) or {"choices": [{"text": ...}]},
      // with the log-probabilities of the tokens whose text it completes (completions' echo: the prompt's first)
      head["object"] = chat ? "chat.completion.chunk" : "text_completion";
      auto chunk = [head, chat](size_t index, const std::string& text, const json& finish, const json& lp, bool first = false) {
        json c = head, choice = {{"index", index}, {"finish_reason", finish}, {"logprobs", lp}};
        if (chat) choice["delta"] = first ? json{{"role", "assistant"}, {"content", text}} : finish.is_null() ? json{{"content", text}} : json::object();
        else choice["text"] = text;
        c["choices"] = json::array({choice});
        return sse(c);
      };
      res.set_header("Cache-Control", "no-cache");
      res.set_chunked_content_provider(
          "text/event-stream",
          // the choices one after another: each one's text as it comes, then its finish reason
          [job, chunk, chat, head, &m, c = size_t(0), sent = size_t(0), lp_sent = size_t(0), rows_sent = size_t(0), started = false](size_t, httplib::DataSink& sink) mutable {
            std::string out;
            bool done = false;
            {
              std::unique_lock l(job->mu);
              auto news = [&] { return job->done || (c < job->choices.size() && (job->choices[c].text.size() > sent || job->choices[c].done)); };
              job->cv.wait_for(l, std::chrono::milliseconds(100), news);
              while (c < job->choices.size()) {
                const Job::Choice& ch = job->choices[c];
                // the tokens whose text has been sent (all of them once the choice is done)
                auto lp_upto = [&](size_t text_end) {
                  if (job->logprobs < 0) return json();
                  size_t n = 0;
                  while (n < ch.lp_end.size() && (ch.done || ch.lp_end[n] <= text_end)) n++;
                  size_t e = echo_rows(*job, m);
                  json r = chat ? chat_logprobs(ch, m, lp_sent, n) : completion_logprobs(*job, ch, m, rows_sent, e + n);
                  lp_sent = n, rows_sent = e + n;
                  return r;
                };
                if (!started && (chat || job->echo)) out += chunk(c, chat ? "" : job->prompt_text, nullptr, lp_upto(0), true);
                started = true;
                if (ch.text.size() > sent || (ch.done && lp_sent < ch.lp.size()))
                  out += chunk(c, ch.text.substr(sent), nullptr, lp_upto(ch.text.size())), sent = ch.text.size();
                if (!ch.done) break;
                out += chunk(c, "", ch.finish_reason, nullptr);
                c++, sent = 0, lp_sent = 0, rows_sent = 0, started = false;
              }
              if ((done = job->done && (c == job->choices.size() || !job->error.empty()))) {  // (an error: a choice never done)
                if (!job->error.empty()) out += sse(error_body(job->error, "server_error"));
                if (job->error.empty() && job->stream_usage) {
                  json u = head;
                  u["choices"] = json::array(), u["usage"] = usage(*job);
                  out += sse(u);
                }
                out += "data: [DONE]\n\n";
              }
            }
            if (!sink.is_writable() || (!out.empty() && !sink.write(out.data(), out.size()))) return job->cancelled = true, false;
            if (done) sink.done();
            return true;
          },
          [job](bool success) { if (!success) job->cancelled = true; });
    };
  };
  srv.Post("/v1/chat/completions", completions(true));
  srv.Post("/v1/completions", completions(false));
  srv.Get("/v1/models", [&](const httplib::Request&, httplib::Response& res) {
    json model = {{"id", model_id}, {"object", "model"}, {"created", 0}, {"owned_by", "tinygrad.cpp"},
                  {"meta", {{"n_ctx", m.config().max_context}, {"n_vocab", m.config().vocab_size}, {"arch", m.config().arch}}}};
    reply_json(res, {{"object", "list"}, {"data", json::array({model})}});
  });
  srv.Get("/health", [](const httplib::Request&, httplib::Response& res) { reply_json(res, {{"status", "ok"}}); });
  srv.Get("/", [&](const httplib::Request&, httplib::Response& res) { res.set_content(CHAT_PAGE, "text/html; charset=utf-8"); });
  // an unknown path or method: OpenAI's error object too (our own errors already have a body)
  srv.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    reply_json(res, error_body("no endpoint " + req.method + " " + req.path, "invalid_request_error", "", "not_found"), res.status);
    return httplib::Server::HandlerResponse::Handled;
  }));

  int port = o.port == 0 ? srv.bind_to_any_port(o.host) : srv.bind_to_port(o.host, o.port) ? o.port : -1;
  if (port < 0) throw tg::Error("serve: cannot listen on " + o.host + ":" + std::to_string(o.port));
  std::printf("tg-llm: serving %s at http://%s:%d\n", model_id.c_str(), o.host.c_str(), port);
  std::fflush(stdout);
  return srv.listen_after_bind() ? 0 : 1;
}
