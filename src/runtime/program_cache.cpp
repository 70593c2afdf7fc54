#include "runtime/program_cache.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
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

// a batch's binary stored once, and a row per kernel pointing into it
void store_batch(const std::vector<std::string>& keys, const std::vector<size_t>& members, const std::vector<std::string>& names,
                 const std::string& bin) {
  Sha256 h;
  for (size_t i : members) h.update(keys[i]);
  std::string bkey = to_hex(h.digest());
  diskcache_put("compile_batch", bkey, bin);
  for (size_t j = 0; j < members.size(); j++) diskcache_put("compile", keys[members[j]], std::string(batch_magic) + bkey + "\n" + names[j]);
}

// ** TIERED_COMPILE's background upgrades **

// quick-compiled kernels of one load_cached_batch, to compile again with optimization under the settings they came with
struct UpgradeJob {
  Device* dev;
  const Settings* settings;
  std::string ck;
  std::vector<KernelSource> ks;
  std::vector<std::string> keys;
  std::vector<Program::Upgrade> upgrades;
};

constinit thread_local bool background_compile_thread = false;

// one background thread at a lower priority (its compiler processes inherit it), jobs (of at most COMPILE_BATCH kernels)
// in order; at exit the queue is compiled to its end first, so a short program still leaves every optimized binary in
// the disk cache
class Upgrader {
 public:
  static Upgrader& get() {
    static auto* u = new Upgrader();  // never destroyed: the exit handler joins its thread
    return *u;
  }
  void push(UpgradeJob job) {
    std::unique_lock lk(mu_);
    if (stop_) {  // queued while the process exits (from a static destructor): done here and now
      lk.unlock();
      return run_safely(job);
    }
    if (!thread_.joinable()) {
      pid_ = getpid();
      thread_ = std::thread([this] { loop(); });
      std::atexit([] { get().finish(); });
    }
    jobs_.push_back(std::move(job));
    pending_++;
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock lk(mu_);
    idle_.wait(lk, [&] { return pending_ == 0; });
  }
  std::atomic<uint64_t> upgraded{0};

 private:
  void finish() {
    if (getpid() != pid_) return;  // a forked child has no such thread
    std::deque<UpgradeJob> left;
    {
      std::lock_guard lk(mu_);
      stop_ = true;
      left.swap(jobs_);
    }
    cv_.notify_all();
    // the jobs not started yet run here, at this thread's priority: a busy machine may starve the background one
    for (UpgradeJob& job : left) run_safely(job);
    thread_.join();
    std::lock_guard lk(mu_);
    pending_ -= left.size();
    idle_.notify_all();
  }
  void loop() {
    background_compile_thread = true;
#ifdef __linux__
    setpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)), 10);  // per thread on Linux, and inherited by its children
#endif
    std::unique_lock lk(mu_);
    for (;;) {
      cv_.wait(lk, [&] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      UpgradeJob job = std::move(jobs_.front());
      jobs_.pop_front();
      lk.unlock();
      run_safely(job);
      lk.lock();
      pending_--;
      idle_.notify_all();
    }
  }
  void run_safely(UpgradeJob& job) {
    try {
      run(job);
    } catch (...) {}  // whatever went wrong, the programs keep their quick code
  }
  void run(UpgradeJob& job) {
    PinSettings pin(*job.settings);
    Device& dev = *job.dev;
    // a cache whose folder is gone (a test's temporary one) is not created again
    std::error_code ec;
    bool store = !job.ck.empty() && std::filesystem::exists(std::filesystem::path(cachedb_path()).parent_path(), ec);
    std::vector<size_t> members;
    std::vector<std::string> names;
    for (size_t i = 0; i < job.ks.size(); i++) members.push_back(i), names.push_back(batch_symbol(i, job.ks[i].entry));
    try {
      std::optional<std::string> bin = dev.compile_batch(job.ks);
      if (!bin) throw Error("not compiled as a batch");
      auto progs = dev.load_many(names, *bin);
      for (size_t i : members) job.upgrades[i](std::move(progs[i])), upgraded++;
      if (store) store_batch(job.keys, members, names, *bin);
    } catch (const Error&) {
      for (size_t i : members) {  // one kernel at a time; one that fails keeps its quick code
        try {
          std::string bin = dev.compile(job.ks[i].src);
          job.upgrades[i](dev.load(job.ks[i].entry, bin));
          upgraded++;
          if (store) diskcache_put("compile", job.keys[i], bin);
        } catch (const Error&) {}
      }
    }
  }

  std::mutex mu_;
  std::condition_variable cv_, idle_;
  std::deque<UpgradeJob> jobs_;
  size_t pending_ = 0;  // queued or running
  bool stop_ = false;
  pid_t pid_ = 0;
  std::thread thread_;
};

void queue_upgrades(Device& dev, const std::vector<KernelSource>& ks, const std::vector<std::string>& keys,
                    const std::vector<size_t>& quick, const std::vector<std::unique_ptr<Program>>& out) {
  size_t per = size_t(std::max<int64_t>(1, settings().COMPILE_BATCH));
  for (size_t at = 0; at < quick.size(); at += per) {
    UpgradeJob job{&dev, &settings(), dev.compiler_key(), {}, {}, {}};
    for (size_t j = at; j < std::min(quick.size(), at + per); j++) {
      size_t i = quick[j];
      job.ks.push_back(ks[i]), job.keys.push_back(keys[i]), job.upgrades.push_back(out[i]->upgrader());
    }
    Upgrader::get().push(std::move(job));
  }
}

}  // namespace

void wait_tiered_compiles() { Upgrader::get().wait(); }
uint64_t tiered_upgrades() { return Upgrader::get().upgraded.load(); }
bool on_background_compile_thread() { return background_compile_thread; }
void mark_background_compile_thread() { background_compile_thread = true; }
bool tiered_light(const KernelSource& k) {
  return settings().TIERED_COMPILE && k.ops >= 0 && k.ops + 2 * k.mem < tiered_work_per_byte * double(k.src.size());
}

std::optional<std::string> Device::compile_batch(const std::vector<KernelSource>&, bool) { return std::nullopt; }

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

namespace {
// heavy misses compiled on a thread of their own while load_cached_batch(n, next) makes the later kernels
struct Early {
  std::vector<size_t> members;
  std::future<std::optional<std::string>> bin;
};
// the misses of load_cached_batch compiled and loaded into out (a kernel that fails stays nullptr), with the early
// batches' binaries; quick ones are not stored but returned in `quick` for their upgrade
void compile_misses(Device& dev, const std::vector<KernelSource>& ks, const std::vector<std::string>& keys, const std::string& ck,
                    const std::vector<size_t>& miss, const std::vector<size_t>& light, std::vector<Early>& early,
                    std::vector<std::unique_ptr<Program>>& out, std::vector<size_t>& quick);
}  // namespace

std::vector<std::unique_ptr<Program>> Device::load_cached_batch(const std::vector<KernelSource>& ks) {
  return load_cached_batch(ks.size(), [&](size_t i) { return std::optional<KernelSource>(ks[i]); });
}

std::vector<std::unique_ptr<Program>> Device::load_cached_batch(size_t n, const std::function<std::optional<KernelSource>(size_t)>& next) {
  std::vector<std::unique_ptr<Program>> out(n);
  std::vector<KernelSource> ks(n);
  std::string ck = compiler_key();
  std::vector<std::string> keys(n);
  std::vector<size_t> miss, pending;  // pending: heavy misses in no early batch yet
  size_t pending_bytes = 0, per = size_t(std::max<int64_t>(1, settings().COMPILE_BATCH));
  size_t spare = compiles_in_parallel() ? size_t(compile_pool().threads() - 1) : 0;  // threads beside the caller's
  std::vector<Early> early;
  auto start_early = [&] {
    size_t busy = size_t(std::count_if(early.begin(), early.end(), [](Early& e) { return e.bin.wait_for(std::chrono::seconds(0)) != std::future_status::ready; }));
    if (busy >= spare || (pending_bytes < overlap_batch_bytes && pending.size() < per)) return;
    // at most twice the threshold: a thread that was busy finds more waiting, and one big batch would leave the rest
    // of the schedule to a single thread once lowering ends
    std::vector<size_t> members;
    for (size_t bytes = 0; members.size() < std::min(per, pending.size()) && (members.empty() || bytes < 2 * overlap_batch_bytes);)
      bytes += ks[pending[members.size()]].src.size(), members.push_back(pending[members.size()]);
    pending.erase(pending.begin(), pending.begin() + ptrdiff_t(members.size()));
    pending_bytes = 0;
    for (size_t i : pending) pending_bytes += ks[i].src.size();
    std::vector<KernelSource> part;
    for (size_t i : members) part.push_back(ks[i]);
    early.push_back({std::move(members), std::async(std::launch::async, [this, part = std::move(part), &set = settings()]() -> std::optional<std::string> {
      PinSettings pin(set);
      try {
        return compile_batch(part);
      } catch (const Error&) {
        return std::nullopt;  // compiled again one kernel at a time
      }
    })});
  };
  std::map<std::string, std::vector<std::pair<size_t, std::string>>> stored_batches;  // batch key -> (kernel, symbol)
  for (size_t i = 0; i < n; i++) {
    std::optional<KernelSource> k = next(i);
    if (!k) continue;
    ks[i] = std::move(*k);
    auto missed = [&] {
      if (tiered_light(ks[i])) return miss.push_back(i);
      pending.push_back(i), pending_bytes += ks[i].src.size();
      start_early();
    };
    if (ck.empty()) { missed(); continue; }
    keys[i] = program_cache_key(ck, ks[i].src);
    auto hit = diskcache_get("compile", keys[i]);
    if (!hit) { missed(); continue; }
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
  miss.insert(miss.end(), pending.begin(), pending.end());
  std::sort(miss.begin(), miss.end());
  std::vector<size_t> heavy, light, quick;
  for (size_t i : miss) (tiered_light(ks[i]) ? light : heavy).push_back(i);
  compile_misses(*this, ks, keys, ck, heavy, light, early, out, quick);
  if (!quick.empty()) queue_upgrades(*this, ks, keys, quick, out);
  return out;
}

namespace {
void compile_misses(Device& dev, const std::vector<KernelSource>& ks, const std::vector<std::string>& keys, const std::string& ck,
                    const std::vector<size_t>& heavy, const std::vector<size_t>& light, std::vector<Early>& early,
                    std::vector<std::unique_ptr<Program>>& out, std::vector<size_t>& quick) {
  // each kind in batches of at most COMPILE_BATCH kernels, at least one batch per compile thread; the heavy (slower)
  // batches first. A heavy batch of one kernel is compiled as itself (compile), a light one is still a quick batch
  size_t per = size_t(std::max<int64_t>(1, settings().COMPILE_BATCH)), threads = size_t(dev.compiles_in_parallel() ? compile_pool().threads() : 1);
  std::vector<std::vector<size_t>> batches;
  size_t n_heavy = 0;
  for (const std::vector<size_t>* kind : {&heavy, &light}) {
    // a whole number of rounds of the compile threads (3 batches on 2 threads would take two rounds of 1/3 each)
    size_t nb = kind->empty() ? 0 : std::min(kind->size(), ((kind->size() + per - 1) / per + threads - 1) / threads * threads);
    for (auto& b : split_batches(ks, *kind, nb, per)) batches.push_back(std::move(b));
    if (kind == &heavy) n_heavy = batches.size();
  }
  size_t nb = batches.size();
  std::vector<std::optional<std::string>> bins(nb);
  auto each = [&](size_t n, const std::function<void(int)>& fn) {
    if (dev.compiles_in_parallel() && n > 1) compile_pool().run(int(n), fn);
    else for (size_t i = 0; i < n; i++) fn(int(i));
  };
  each(nb, [&](int b) {
    bool is_quick = size_t(b) >= n_heavy;
    if (!is_quick && batches[size_t(b)].size() < 2) return;
    std::vector<KernelSource> part;
    for (size_t i : batches[size_t(b)]) part.push_back(ks[i]);
    try {
      bins[size_t(b)] = dev.compile_batch(part, is_quick);
    } catch (const Error&) {}  // compiled again one kernel at a time below
  });
  // the early batches (heavy, compiled meanwhile) join the heavy ones
  for (Early& e : early) batches.insert(batches.begin(), std::move(e.members)), bins.insert(bins.begin(), e.bin.get()), n_heavy++;
  nb = batches.size();
  std::vector<size_t> single;
  for (size_t b = 0; b < nb; b++) {
    const std::vector<size_t>& members = batches[b];
    std::vector<std::string> names;
    for (size_t j = 0; j < members.size(); j++) names.push_back(batch_symbol(j, ks[members[j]].entry));
    try {
      if (!bins[b]) throw Error("not compiled as a batch");
      auto progs = dev.load_many(names, *bins[b]);
      if (b >= n_heavy && !std::all_of(progs.begin(), progs.end(), [](auto& p) { return bool(p->upgrader()); }))
        throw Error("programs that cannot be upgraded");
      for (size_t j = 0; j < members.size(); j++) out[members[j]] = std::move(progs[j]);
    } catch (const Error&) {
      single.insert(single.end(), members.begin(), members.end());
      continue;
    }
    if (b >= n_heavy) quick.insert(quick.end(), members.begin(), members.end());
    else if (!ck.empty()) store_batch(keys, members, names, *bins[b]);
  }

  std::vector<std::optional<std::string>> one(single.size());
  each(single.size(), [&](int j) {
    try {
      one[size_t(j)] = dev.compile(ks[single[size_t(j)]].src);
    } catch (const Error&) {}  // this kernel stays nullptr: load_cached on it reports the error
  });
  for (size_t j = 0; j < single.size(); j++) {
    size_t i = single[j];
    if (!one[j]) continue;
    try {
      out[i] = dev.load(ks[i].entry, *one[j]);
      if (!ck.empty()) diskcache_put("compile", keys[i], *one[j]);
    } catch (const Error&) {}
  }
}

}  // namespace

}  // namespace tg
