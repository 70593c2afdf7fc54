// Generation: the prompt through the model in chunks, then one token at a time, sampled on the host.
#include <algorithm>
#include <chrono>

#include "tg/error.h"
#include "tg/llm.h"

namespace tg::llm {

std::vector<int32_t> generate(Model& m, std::span<const int32_t> prompt, int64_t n, Sampler& s, const std::function<bool(int32_t)>& on_token,
                              int64_t start_pos, GenerateStats* stats, int64_t chunk, Logprobs* logprobs) {
  using clock = std::chrono::steady_clock;
  if (prompt.empty()) throw Error("generate: the prompt has no tokens");
  int64_t ctx = m.config().max_context, pos = start_pos + int64_t(prompt.size());
  if (start_pos < 0 || pos > ctx)
    throw Error("generate: " + std::to_string(prompt.size()) + " prompt tokens from position " + std::to_string(start_pos) +
                " do not fit the context of " + std::to_string(ctx));
  GenerateStats st;
  st.prompt_tokens = int64_t(prompt.size());
  auto t0 = clock::now();
  std::vector<float> logits = m.logits(prompt, start_pos, false, chunk);
  for (int32_t t : prompt) s.accept(t);
  std::vector<int32_t> out;
  auto t1 = clock::now();
  st.prompt_s = std::chrono::duration<double>(t1 - t0).count();
  while (int64_t(out.size()) < n) {
    int32_t t = s.sample(logits);
    if (logprobs) logprobs->tokens.push_back(token_logprob(logits, t, logprobs->top));
    s.accept(t), out.push_back(t);
    bool stop = std::find(m.stop_tokens().begin(), m.stop_tokens().end(), t) != m.stop_tokens().end();
    if ((on_token && !on_token(t)) || stop || int64_t(out.size()) == n || pos >= ctx) break;
    logits = m.logits(std::span<const int32_t>(&t, 1), pos++);
  }
  st.generated = int64_t(out.size());
  st.decode_s = std::chrono::duration<double>(clock::now() - t1).count();
  if (stats) *stats = st;
  return out;
}

std::vector<int32_t> Session::generate(std::span<const int32_t> prompt, int64_t n, Sampler& s, const std::function<bool(int32_t)>& on_token,
                                       GenerateStats* stats, int64_t chunk, Logprobs* logprobs) {
  size_t keep = reusable(cached_, prompt), best = saved_.size();
  for (size_t i = 0; i < saved_.size(); i++)
    if (size_t k = reusable(saved_[i].tokens, prompt); k > keep) keep = k, best = i;
  std::optional<Saved> from;
  if (best < saved_.size()) from = std::move(saved_[best]), saved_.erase(saved_.begin() + int64_t(best));
  // what the cache holds is about to be overwritten: kept as a snapshot (the least recently used one makes room)
  if (slots_ > 0 && (from || keep < cached_.size()) && !cached_.empty() &&
      std::none_of(saved_.begin(), saved_.end(), [&](const Saved& x) { return x.tokens == cached_; })) {
    saved_.push_back({cached_, m_.save_cache(int64_t(cached_.size()))});
    while (saved_.size() + (from ? 1 : 0) > slots_) saved_.erase(saved_.begin());
  }
  cached_.clear();  // until it is known what the cache holds (an exception may leave a chunk half written)
  if (from) m_.restore_cache(from->cache), saved_.push_back(std::move(*from));  // (most recently used last)
  for (size_t i = 0; i < keep; i++) s.accept(prompt[i]);
  GenerateStats st;
  std::vector<int32_t> out = tg::llm::generate(m_, prompt.subspan(keep), n, s, on_token, int64_t(keep), &st, chunk, logprobs);
  st.cached_tokens = int64_t(keep);
  cached_.assign(prompt.begin(), prompt.end());
  if (!out.empty()) cached_.insert(cached_.end(), out.begin(), out.end() - 1);  // the last one was sampled, not fed
  if (stats) *stats = st;
  return out;
}

// the prompt's first tokens that the cache of `have` already holds (not the last one: its logits are needed); a
// recurrent state only as a whole
size_t Session::reusable(const std::vector<int32_t>& have, std::span<const int32_t> prompt) const {
  size_t k = 0;
  while (k < have.size() && k + 1 < prompt.size() && have[k] == prompt[k]) k++;
  return m_.recurrent() && k < have.size() ? 0 : k;
}

std::vector<TokenLogprob> Session::prompt_logprobs(std::span<const int32_t> prompt, int64_t top, int64_t chunk) {
  if (prompt.empty()) throw Error("prompt_logprobs: the prompt has no tokens");
  cached_.clear();
  std::vector<float> l = m_.logits(prompt, 0, true, chunk);
  cached_.assign(prompt.begin(), prompt.end());
  size_t V = size_t(m_.config().vocab_size);
  std::vector<TokenLogprob> out;
  for (size_t i = 1; i < prompt.size(); i++) out.push_back(token_logprob(std::span(l).subspan((i - 1) * V, V), prompt[i], top));
  return out;
}

}  // namespace tg::llm
