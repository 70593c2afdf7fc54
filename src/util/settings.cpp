#include "util/settings.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "util/env.h"

namespace tg {

namespace {

struct Knob {
  const char* name;
  int64_t Settings::*field;
  bool kernel;  // changes kernels, schedules or programs: part of key()
};
constexpr Knob knobs[] = {
    {"BEAM", &Settings::BEAM, true},
    {"NOOPT", &Settings::NOOPT, true},
    {"SIMD", &Settings::SIMD, true},
    {"THREADS", &Settings::THREADS, true},
    {"NUM_CPU_THREADS", &Settings::NUM_CPU_THREADS, true},
    {"TRANSCENDENTAL", &Settings::TRANSCENDENTAL, true},
    {"DISABLE_FAST_IDIV", &Settings::DISABLE_FAST_IDIV, true},
    {"NOLOCALS", &Settings::NOLOCALS, true},
    {"BEAM_PADTO", &Settings::BEAM_PADTO, true},
    {"BEAM_UPCAST_MAX", &Settings::BEAM_UPCAST_MAX, true},
    {"BEAM_LOCAL_MAX", &Settings::BEAM_LOCAL_MAX, true},
    {"BEAM_UOPS_MAX", &Settings::BEAM_UOPS_MAX, true},
    {"BEAM_TEST_SIZE", &Settings::BEAM_TEST_SIZE, true},
    {"BEAM_MIN_PROGRESS_NS", &Settings::BEAM_MIN_PROGRESS_NS, true},
    {"BEAM_MIN_US", &Settings::BEAM_MIN_US, true},
    {"MAX_KERNEL_BUFFERS", &Settings::MAX_KERNEL_BUFFERS, true},
    {"SPLIT_REDUCEOP", &Settings::SPLIT_REDUCEOP, true},
    {"REDUCEOP_SPLIT_THRESHOLD", &Settings::REDUCEOP_SPLIT_THRESHOLD, true},
    {"REDUCEOP_SPLIT_SIZE", &Settings::REDUCEOP_SPLIT_SIZE, true},
    {"NO_MEMORY_PLANNER", &Settings::NO_MEMORY_PLANNER, true},
    {"CPU_VECTOR_WIDTH", &Settings::CPU_VECTOR_WIDTH, true},
    {"PREFETCH", &Settings::PREFETCH, true},
    {"GEMM_BLOCK_BYTES", &Settings::GEMM_BLOCK_BYTES, true},
    {"GEMM_CHUNK_BYTES", &Settings::GEMM_CHUNK_BYTES, true},
    {"TC", &Settings::TC, true},
    {"TC_SELECT", &Settings::TC_SELECT, true},
    {"TC_OPT", &Settings::TC_OPT, true},
    {"ALLOW_TF32", &Settings::ALLOW_TF32, true},
    {"DEBUG", &Settings::DEBUG, false},
    {"DEBUG_RANGEIFY", &Settings::DEBUG_RANGEIFY, false},
    {"BEAM_DEBUG", &Settings::BEAM_DEBUG, false},
    {"TRACK_REWRITES", &Settings::TRACK_REWRITES, false},
    {"CACHELEVEL", &Settings::CACHELEVEL, false},
    {"COMPILE_BATCH", &Settings::COMPILE_BATCH, false},
    {"TIERED_COMPILE", &Settings::TIERED_COMPILE, false},
    {"IGNORE_BEAM_CACHE", &Settings::IGNORE_BEAM_CACHE, false},
    {"JIT", &Settings::JIT, false},
    {"SCACHE", &Settings::SCACHE, false},
    {"LRU", &Settings::LRU, false},
    {"CONST_LR", &Settings::CONST_LR, false},
    {"FUSE_OPTIM", &Settings::FUSE_OPTIM, false},
    {"WINO", &Settings::WINO, false},
    {"QUANT_DOT", &Settings::QUANT_DOT, false},
};
constexpr const char* string_knobs[] = {"DEV", "CACHEDB", "TG_CLANG", "OPTIM_DTYPE", "NVRTC_CHECK"};

// constant-initialized, so settings() works from any translation unit's static initializers
std::atomic<uint64_t> generation{1};
std::atomic<uint64_t> built{0};
std::atomic<const Settings*> current{nullptr};
constinit thread_local const Settings* pinned = nullptr;

int64_t host_threads() {
  static const int64_t n = std::max<int64_t>(1, std::thread::hardware_concurrency());
  return n;
}

}  // namespace

struct SettingsStore {
  std::mutex mu;
  std::deque<Settings> snapshots;          // never freed: settings() hands out references
  std::vector<std::vector<int64_t>> keys;  // the kernel knobs behind each key id
  static SettingsStore& get() {
    static SettingsStore& s = *new SettingsStore;  // never destroyed: destructors of other statics may still read settings
    return s;
  }
  const Settings& rebuild(uint64_t gen) {
    Settings s;
    s.NUM_CPU_THREADS = host_threads();
    for (const Knob& k : knobs) s.*k.field = getenv_int(k.name, s.*k.field);
    s.DEV = getenv_str("DEV");
    s.TG_CLANG = getenv_str("TG_CLANG");
    s.OPTIM_DTYPE = getenv_str("OPTIM_DTYPE", "float32");
    s.NVRTC_CHECK = getenv_str("NVRTC_CHECK");
    s.CACHEDB = getenv_str("CACHEDB");
    if (s.CACHEDB.empty()) {
      std::string base = getenv_str("XDG_CACHE_HOME");
      s.CACHEDB = (base.empty() ? getenv_str("HOME", "/tmp") + "/.cache" : base) + "/tinygrad.cpp/cache.db";
    }
    std::vector<int64_t> kv;
    for (const Knob& k : knobs)
      if (k.kernel) kv.push_back(s.*k.field);
    std::lock_guard lk(mu);
    auto kit = std::find(keys.begin(), keys.end(), kv);
    s.key_ = uint32_t(kit - keys.begin());
    if (kit == keys.end()) keys.push_back(std::move(kv));
    auto sit = std::find(snapshots.begin(), snapshots.end(), s);
    const Settings& out = sit == snapshots.end() ? snapshots.emplace_back(std::move(s)) : *sit;
    current.store(&out, std::memory_order_release);
    built.store(gen, std::memory_order_release);
    return out;
  }
};

std::string Settings::key_text() const {
  std::string s;
  for (const Knob& k : knobs)
    if (k.kernel) s += std::string(s.empty() ? "" : ",") + k.name + "=" + std::to_string(this->*k.field);
  return s;
}

const Settings& settings() {
  if (pinned) return *pinned;
  uint64_t gen = generation.load(std::memory_order_acquire);
  if (built.load(std::memory_order_acquire) == gen) return *current.load(std::memory_order_acquire);
  return SettingsStore::get().rebuild(gen);
}

PinSettings::PinSettings(const Settings& s) : before_(pinned) { pinned = &s; }
PinSettings::~PinSettings() { pinned = before_; }

void refresh_settings() { generation.fetch_add(1, std::memory_order_acq_rel); }

bool is_setting(std::string_view name) {
  return std::any_of(std::begin(knobs), std::end(knobs), [&](const Knob& k) { return name == k.name; }) ||
         std::find(std::begin(string_knobs), std::end(string_knobs), name) != std::end(string_knobs);
}

}  // namespace tg
