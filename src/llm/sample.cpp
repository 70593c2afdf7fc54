// Token sampling on the host (llama.cpp's default chain): repetition penalty, top-k, top-p, min-p, temperature, a seeded
// draw. The logits are read back once per token; at a vocabulary of 32k-150k floats that is well under the decode's cost.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "tg/error.h"
#include "tg/llm.h"

namespace tg::llm {

namespace {
// splitmix64: a small generator whose sequence is fixed by the seed on every platform (std::mt19937 is too, but its
// distributions are not)
uint64_t next(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
}  // namespace

Sampler::Sampler(SamplerParams p) : p_(p), state_(p.seed) {
  if (!(p.top_p > 0) || p.min_p > 1 || p.repeat_penalty <= 0 || std::isnan(p.temperature) || p.repeat_last_n < 0)
    throw Error("sampler: need top_p > 0, min_p <= 1, repeat_penalty > 0, repeat_last_n >= 0 and a temperature that is a number");
}

std::vector<double> log_softmax(std::span<const float> logits) {
  if (logits.empty()) throw Error("log_softmax: no logits");
  double mx = -INFINITY, sum = 0;
  for (size_t i = 0; i < logits.size(); i++) {
    if (!std::isfinite(logits[i])) throw Error("log_softmax: logit " + std::to_string(i) + " is not finite");
    mx = std::max(mx, double(logits[i]));
  }
  for (float x : logits) sum += std::exp(double(x) - mx);
  std::vector<double> out(logits.size());
  double lse = mx + std::log(sum);
  for (size_t i = 0; i < logits.size(); i++) out[i] = double(logits[i]) - lse;
  return out;
}

TokenLogprob token_logprob(std::span<const float> logits, int32_t token, int64_t top) {
  if (token < 0 || size_t(token) >= logits.size())
    throw Error("token_logprob: token " + std::to_string(token) + " is not in the vocabulary of " + std::to_string(logits.size()));
  std::vector<double> lp = log_softmax(logits);
  TokenLogprob r{token, lp[size_t(token)], {}};
  std::vector<int32_t> idx(lp.size());
  std::iota(idx.begin(), idx.end(), 0);
  size_t k = std::min(size_t(std::max<int64_t>(top, 0)), idx.size());
  std::partial_sort(idx.begin(), idx.begin() + ptrdiff_t(k), idx.end(), [&](int32_t a, int32_t b) {
    return lp[size_t(a)] > lp[size_t(b)] || (lp[size_t(a)] == lp[size_t(b)] && a < b);
  });
  for (size_t i = 0; i < k; i++) r.top.emplace_back(idx[i], lp[size_t(idx[i])]);
  return r;
}

void Sampler::accept(int32_t token) { history_.push_back(token); }
void Sampler::reset() { history_.clear(), state_ = p_.seed; }

std::vector<std::pair<int32_t, double>> Sampler::distribution(std::span<const float> logits_in) const {
  size_t n = logits_in.size();
  if (n == 0) throw Error("sampler: no logits");
  std::vector<double> l(logits_in.begin(), logits_in.end());
  for (size_t i = 0; i < n; i++)
    if (!std::isfinite(l[i])) throw Error("sampler: logit " + std::to_string(i) + " is not finite");
  if (p_.repeat_penalty != 1.0) {
    std::vector<bool> seen(n);
    size_t from = history_.size() > size_t(p_.repeat_last_n) ? history_.size() - size_t(p_.repeat_last_n) : 0;
    for (size_t i = from; i < history_.size(); i++)
      if (history_[i] >= 0 && size_t(history_[i]) < n) seen[size_t(history_[i])] = true;
    for (size_t i = 0; i < n; i++)
      if (seen[i]) l[i] = l[i] > 0 ? l[i] / p_.repeat_penalty : l[i] * p_.repeat_penalty;
  }
  std::vector<int32_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) { return l[size_t(a)] > l[size_t(b)]; });
  if (p_.temperature <= 0) return {{idx[0], 1.0}};
  size_t keep = n;
  if (p_.top_k > 0) keep = std::min(keep, size_t(p_.top_k));
  auto probs = [&](double temp) {  // softmax of the kept candidates at temperature temp
    std::vector<double> pr(keep);
    double mx = l[size_t(idx[0])], sum = 0;
    for (size_t i = 0; i < keep; i++) sum += pr[i] = std::exp((l[size_t(idx[i])] - mx) / temp);
    for (double& x : pr) x /= sum;
    return pr;
  };
  if (p_.top_p < 1.0) {  // the shortest head whose probability reaches top_p
    std::vector<double> pr = probs(1.0);
    double cum = 0;
    for (size_t i = 0; i < keep; i++)
      if ((cum += pr[i]) >= p_.top_p) { keep = i + 1; break; }
  }
  if (p_.min_p > 0) {  // tokens at least min_p times as likely as the best one
    double floor = l[size_t(idx[0])] + std::log(p_.min_p);
    size_t k = 1;
    while (k < keep && l[size_t(idx[k])] >= floor) k++;
    keep = k;
  }
  std::vector<double> pr = probs(p_.temperature);
  std::vector<std::pair<int32_t, double>> out;
  for (size_t i = 0; i < keep; i++) out.emplace_back(idx[i], pr[i]);
  return out;
}

int32_t Sampler::sample(std::span<const float> logits) {
  std::vector<std::pair<int32_t, double>> d = distribution(logits);
  if (d.size() == 1) return d[0].first;
  double u = double(next(state_) >> 11) * 0x1.0p-53, cum = 0;
  for (auto& [id, p] : d)
    if (u < (cum += p)) return id;
  return d.back().first;
}

}  // namespace tg::llm
