#pragma once
// The library's settings (tinygrad's ContextVars) as one immutable snapshot: every knob read once from the environment
// and the live tg::Contexts, and read again only after a Context that names a knob is entered or left (or after
// refresh_settings()). settings() on the hot path is two atomic loads; a snapshot stays valid for the whole process.
//
//   if (settings().DEBUG >= 2) ...;
//   cache[settings().key()][ast]   // every cache of kernels, schedules or programs keys the knobs that change them
//
// A bad value throws tg::Error naming the variable (from settings(), the first time the bad snapshot is read).
// User names that are not library knobs (TRAINING, or any name a program invents) go through tg::context_value.
#include <cstdint>
#include <string>
#include <string_view>

namespace tg {

struct Settings {
  // ** knobs that change kernels, schedules or programs: all in key() **
  int64_t BEAM = 0;                          // BEAM search width for kernel opts (0: the heuristic)
  int64_t NOOPT = 0;                         // 1: no kernel optimizations
  int64_t SIMD = 1;                          // ours: CPU kernels shaped for vector units (0: tinygrad's kernels)
  int64_t THREADS = 1;                       // 0: no THREAD axes on the CPU
  int64_t NUM_CPU_THREADS = 0;               // threads of a CPU kernel (unset: the host's hardware threads)
  int64_t TRANSCENDENTAL = 1;                // 2: decompose exp2/log2/sin even where the renderer has them
  int64_t DISABLE_FAST_IDIV = 1;             // 0: integer division by constants as multiply-shift
  int64_t NOLOCALS = 0;                      // BEAM may try NOLOCALS
  int64_t BEAM_PADTO = 0;                    // BEAM may try PADTO
  int64_t BEAM_UPCAST_MAX = 256;             // BEAM's largest upcast
  int64_t BEAM_LOCAL_MAX = 1024;             // BEAM's largest work-group (local and group-reduce axes)
  int64_t BEAM_UOPS_MAX = 3000;              // BEAM skips candidates of this many uops or more (0: no limit)
  int64_t BEAM_TEST_SIZE = 1 << 27;          // ours: BEAM times kernels cut to about this index space (0: whole)
  int64_t BEAM_MIN_PROGRESS_NS = 10;         // BEAM stops when a round gains less
  int64_t BEAM_MIN_US = 20;                  // ours: BEAM keeps a kernel the heuristic runs in under this (0: searches all)
  int64_t MAX_KERNEL_BUFFERS = 0;            // split kernels reading more buffers (0: no limit)
  int64_t SPLIT_REDUCEOP = 1;                // split big reduces in two kernels
  int64_t REDUCEOP_SPLIT_THRESHOLD = 32768;  // ... when the reduce is this much larger than its output
  int64_t REDUCEOP_SPLIT_SIZE = 22;          // ... into pieces of at most 2**this elements
  int64_t NO_MEMORY_PLANNER = 0;             // 1: every intermediate buffer its own allocation
  int64_t CPU_VECTOR_WIDTH = 0;              // ours: floats per vector register of SIMD CPU kernels, 8 (AVX2) or 16 (AVX-512); 0: the host's
  int64_t PREFETCH = 1;                      // ours: SIMD CPU kernels streaming a matrix prefetch the next block (0: off)
  int64_t GEMM_BLOCK_BYTES = 8 << 20;        // ours: a CPU matmul of few rows packs a bigger B in blocks of K this size (0: whole)
  int64_t GEMM_CHUNK_BYTES = 0;              // ours: ... and a B of more rows than A's in chunks of columns this size (0: whole)
  int64_t TC = 1;                            // tensor cores: 0 off, 1 on, 2 their kernel shape without the WMMA op
  int64_t TC_SELECT = -1;                    // the renderer's tensor core to use (-1: the first that fits)
  int64_t TC_OPT = -1;                       // 1: tensor cores on several reduce axes and casted inputs, 2: also padded; unset (-1): 0 for the heuristic, 2 for BEAM (tinygrad's search reads getenv("TC_OPT", 2))
  int64_t ALLOW_TF32 = 0;                    // CUDA: float matmuls may use the tf32 tensor cores

  // ** knobs that change no kernel **
  int64_t DEBUG = 0;              // 1 schedule, 2 kernel timings, 3 opts, 4 source, 5 ASTs
  int64_t DEBUG_RANGEIFY = 0;     // rangeify's steps
  int64_t BEAM_DEBUG = 0;         // BEAM's candidates
  int64_t TRACK_REWRITES = 0;     // each codegen pass's time, printed at exit
  int64_t CACHELEVEL = 2;         // 0: no on-disk cache (programs, BEAM results)
  int64_t COMPILE_BATCH = 64;     // kernels per compiler invocation when a schedule's kernels compile (0: one at a time)
  int64_t TIERED_COMPILE = 1;     // ours: a schedule's light kernels start unoptimized, upgraded in the background (0: off)
  int64_t IGNORE_BEAM_CACHE = 0;  // 1: search again instead of reading BEAM results from disk
  int64_t JIT = 1;                // 0: TinyJit runs its function every call
  int64_t SCACHE = 1;             // 0: no schedule cache
  int64_t LRU = 1;                // 0: freed buffers go back to the device at once
  int64_t CONST_LR = 0;           // optimizers: the learning rate as a constant instead of a buffer
  int64_t FUSE_OPTIM = 0;         // optimizers: one flat update over all parameters by default
  int64_t WINO = 0;               // Tensor::conv2d of a stride-1 undilated 3x3 (tinygrad's) or 5x5 (ours) float kernel as a
                                  // Winograd F(4x4,r x r): a different graph, so different ASTs; no AST lowers differently
  int64_t QUANT_DOT = 1;          // tg::llm: decode's linears as ggml's integer dot products: 1 Q4_K (faster), 2 Q4_K and Q8_0, 0 none
  std::string DEV;                // the default device's name, as given ("" : CPU)
  std::string CACHEDB;            // the disk cache file: $CACHEDB, else $XDG_CACHE_HOME or ~/.cache, /tinygrad.cpp/cache.db
  std::string TG_CLANG;           // the CPU device's C compiler ("" : set_clang_path(), else clang)
  std::string OPTIM_DTYPE = "float32";  // optimizers' state dtype
  std::string NVRTC_CHECK;        // an arch (sm_90): every kernel lowered is also compiled for CUDA by NVRTC (runtime/cuda.h)

  // a small id of the kernel-affecting knobs above: equal for two snapshots exactly when those are equal. Valid in
  // this process only (never store it on disk)
  uint32_t key() const { return key_; }
  // the same knobs as "BEAM=0,NOOPT=0,...": stable across processes, for keys on disk
  std::string key_text() const;
  bool operator==(const Settings&) const = default;

 private:
  friend struct SettingsStore;
  uint32_t key_ = 0;
};

// the current snapshot; the reference stays valid (and unchanged) for the life of the process
const Settings& settings();
// the next settings() reads the environment and the live Contexts again: for tg::Context, and for code that changed
// the environment (setenv) after the library read it
void refresh_settings();
// while alive, settings() on this thread is `s` whatever the Contexts and the environment say (a background job keeps
// the settings it was started under)
class PinSettings {
 public:
  explicit PinSettings(const Settings& s);
  ~PinSettings();
  PinSettings(const PinSettings&) = delete;
  PinSettings& operator=(const PinSettings&) = delete;

 private:
  const Settings* before_;
};
// true when `name` is one of the knobs above (a Context naming it makes a new snapshot)
bool is_setting(std::string_view name);

}  // namespace tg
