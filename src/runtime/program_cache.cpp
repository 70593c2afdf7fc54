#include "runtime/program_cache.h"

#include <algorithm>
#include <map>
#include <thread>

#include "runtime/device.h"
#include "runtime/threadpool.h"
#include "tg/error.h"
#include "util/diskcache.h"
#include "util/settings.h"
#include "util/sha256.h"

namespace tg {

namespace {

// A kernel compiled in a batch is stored as a pointer to the batch's binary (table "compile_batch"): "TGBATCH1\n",
// the batch's key, "\n", the kernel's symbol in it. One binary on disk per batch, one small row per kernel
constexpr std::string_view batch_magic = "TGBATCH1\n";
struct BatchRef { std::string key, symbol; };
std::optional<BatchRef> batch_ref(const std::string& stored) {
  if (!stored.starts_with(batch_magic)) return std::nullopt;
  size_t nl = stored.find('\n', batch_magic.size());
  if (nl == std::string::npos) return std::nullopt;
  return BatchRef{stored.substr(batch_magic.size(), nl - batch_magic.size()), stored.substr(nl + 1)};
}

// the compiler processes of a schedule's batches run on these threads (never destroyed: used from static destructors)
ThreadPool& compile_pool() {
  static auto* p = new ThreadPool(int(std::max(1u, std::thread::hardware_concurrency())));
  return *p;
}

// `miss` in nb runs, in order, of about equal source size (the batches compile in parallel, and a kernel's compile
// time grows with its source), none longer than `per`; runs of equal count where sizes would break that
std::vector<std::vector<size_t>> split_batches(const std::vector<KernelSource>& ks, const std::vector<size_t>& miss, size_t nb, size_t per) {
  std::vector<std::vector<size_t>> batches(nb);
  size_t total = 0, done = 0, b = 0;
  for (size_t i : miss) total += ks[i].src.size() + 1;
  for (size_t j = 0; j < miss.size(); j++) {
    bool past = done * nb >= (b + 1) * total, only_enough_left = miss.size() - j <= nb - 1 - b;
    if (b + 1 < nb && !batches[b].empty() && (past || batches[b].size() >= per || only_enough_left)) b++;
    batches[b].push_back(miss[j]);
    done += ks[miss[j]].src.size() + 1;
  }
  if (std::all_of(batches.begin(), batches.end(), [&](auto& v) { return v.size() <= per; })) return batches;
  for (auto& v : batches) v.clear();
  for (size_t j = 0; j < miss.size(); j++) batches[j * nb / miss.size()].push_back(miss[j]);
  return batches;
}

}  // namespace

std::optional<std::string> Device::compile_batch(const std::vector<KernelSource>&) { return std::nullopt; }

std::vector<std::unique_ptr<Program>> Device::load_many(const std::vector<std::string>& names, const std::string& binary) {
  std::vector<std::unique_ptr<Program>> out;
  for (const std::string& n : names) out.push_back(load(n, binary));
  return out;
}

std::string program_cache_key(const std::string& compiler_key, const std::string& src) {
  Sha256 h;
  h.update(compiler_key);
  h.update(std::string_view("\0", 1));
  h.update(src);
  return to_hex(h.digest());
}

std::string Device::compile_cached(const std::string& src) {
  std::string ck = compiler_key();
  if (ck.empty()) return compile(src);
  std::string key = program_cache_key(ck, src);
  if (auto hit = diskcache_get("compile", key); hit && !batch_ref(*hit)) return *hit;
  std::string bin = compile(src);
  diskcache_put("compile", key, bin);
  return bin;
}

std::unique_ptr<Program> Device::load_cached(const std::string& entry, const std::string& src) {
  std::string ck = compiler_key();
  if (ck.empty()) return load(entry, compile(src));
  std::string key = program_cache_key(ck, src);
  if (auto hit = diskcache_get("compile", key)) {
    try {
      auto ref = batch_ref(*hit);
      if (!ref) return load(entry, *hit);
      if (auto batch = diskcache_get("compile_batch", ref->key)) return load(ref->symbol, *batch);
    } catch (const Error&) {}  // a stored binary that does not load: compiled afresh below, and its entry replaced
  }
  std::string bin = compile(src);
  auto prg = load(entry, bin);
  diskcache_put("compile", key, bin);
  return prg;
}

std::vector<std::unique_ptr<Program>> Device::load_cached_batch(const std::vector<KernelSource>& ks) {
  std::vector<std::unique_ptr<Program>> out(ks.size());
  std::string ck = compiler_key();
  std::vector<std::string> keys(ks.size());
  std::vector<size_t> miss;
  std::map<std::string, std::vector<std::pair<size_t, std::string>>> stored_batches;  // batch key -> (kernel, symbol)
  for (size_t i = 0; i < ks.size(); i++) {
    if (ck.empty()) { miss.push_back(i); continue; }
    keys[i] = program_cache_key(ck, ks[i].src);
    auto hit = diskcache_get("compile", keys[i]);
    if (!hit) { miss.push_back(i); continue; }
    if (auto ref = batch_ref(*hit)) { stored_batches[ref->key].emplace_back(i, ref->symbol); continue; }
    try {
      out[i] = load(ks[i].entry, *hit);
    } catch (const Error&) {
      miss.push_back(i);
    }
  }
  for (auto& [bkey, members] : stored_batches) {
    std::vector<std::string> names;
    for (auto& m : members) names.push_back(m.second);
    try {
      auto blob = diskcache_get("compile_batch", bkey);
      if (!blob) throw Error("the batch binary is gone");
      auto progs = load_many(names, *blob);
      for (size_t j = 0; j < members.size(); j++) out[members[j].first] = std::move(progs[j]);
    } catch (const Error&) {
      for (auto& m : members) miss.push_back(m.first);
    }
  }
  std::sort(miss.begin(), miss.end());

  // the misses in batches of at most COMPILE_BATCH kernels, at least one batch per compile thread
  size_t per = size_t(std::max<int64_t>(1, settings().COMPILE_BATCH)), threads = size_t(compiles_in_parallel() ? compile_pool().threads() : 1);
  size_t nb = miss.empty() ? 0 : std::max(std::min(threads, miss.size()), (miss.size() + per - 1) / per);
  std::vector<std::vector<size_t>> batches = split_batches(ks, miss, nb, per);
  std::vector<std::optional<std::string>> bins(nb);
  auto each = [&](size_t n, const std::function<void(int)>& fn) {
    if (compiles_in_parallel() && n > 1) compile_pool().run(int(n), fn);
    else for (size_t i = 0; i < n; i++) fn(int(i));
  };
  each(nb, [&](int b) {
    if (batches[size_t(b)].size() < 2) return;
    std::vector<KernelSource> part;
    for (size_t i : batches[size_t(b)]) part.push_back(ks[i]);
    try {
      bins[size_t(b)] = compile_batch(part);
    } catch (const Error&) {}  // compiled again one kernel at a time below
  });
  std::vector<size_t> single;
  for (size_t b = 0; b < nb; b++) {
    const std::vector<size_t>& members = batches[b];
    std::vector<std::string> names;
    for (size_t j = 0; j < members.size(); j++) names.push_back(batch_symbol(j, ks[members[j]].entry));
    try {
      if (!bins[b]) throw Error("not compiled as a batch");
      auto progs = load_many(names, *bins[b]);
      for (size_t j = 0; j < members.size(); j++) out[members[j]] = std::move(progs[j]);
    } catch (const Error&) {
      single.insert(single.end(), members.begin(), members.end());
      continue;
    }
    if (ck.empty()) continue;
    Sha256 h;
    for (size_t i : members) h.update(keys[i]);
    std::string bkey = to_hex(h.digest());
    diskcache_put("compile_batch", bkey, *bins[b]);
    for (size_t j = 0; j < members.size(); j++) diskcache_put("compile", keys[members[j]], std::string(batch_magic) + bkey + "\n" + names[j]);
  }

  std::vector<std::optional<std::string>> one(single.size());
  each(single.size(), [&](int j) {
    try {
      one[size_t(j)] = compile(ks[single[size_t(j)]].src);
    } catch (const Error&) {}  // this kernel stays nullptr: load_cached on it reports the error
  });
  for (size_t j = 0; j < single.size(); j++) {
    size_t i = single[j];
    if (!one[j]) continue;
    try {
      out[i] = load(ks[i].entry, *one[j]);
      if (!ck.empty()) diskcache_put("compile", keys[i], *one[j]);
    } catch (const Error&) {}
  }
  return out;
}

}  // namespace tg
