#pragma once
// The program cache's key. Device::compile_cached / load_cached (runtime/device.h) compile through the disk cache: a
// program already compiled (same source, same compiler identity and flags) is read back instead of compiled, so a
// second run of anything compiles nothing.
#include <cstdint>
#include <string>

#include "runtime/device.h"

namespace tg {

// TIERED_COMPILE (Device::load_cached_batch): a kernel is first compiled unoptimized when its estimated work, FLOPs plus
// twice the bytes it moves, is under this many times its source's length: -O2 costs about 3 us of compile per byte of
// C more than -O0, while an -O0 launch is 3-50x slower than an -O2 one, and a kernel runs a few times before its
// upgrade. Set on beautiful_mnist's step (docs/benchmarks.md): at 1024, small reduces ran 20x slower for 2-5 ms saved
constexpr double tiered_work_per_byte = 256;
// load_cached_batch(n, next): the heavy misses made so far start compiling once they are this much C (clang's fixed
// cost, ~25 ms a run, is ~6 KB of -O2 work: an early batch of at least 32 KB spends under a fifth of it on that)
constexpr size_t overlap_batch_bytes = 32768;
// whether load_cached_batch would compile ks quick first
bool tiered_light(const KernelSource& k);
// blocks until every queued background upgrade is compiled, loaded, swapped in and stored (also done at exit)
void wait_tiered_compiles();
// how many programs the background upgrades have swapped to their optimized code in this process
uint64_t tiered_upgrades();
// true on a thread that compiles in the background (the one of the upgrades, a CPU device's probe when it opens):
// clang_invocations() leaves its compiles out, they run whenever they are ready
bool on_background_compile_thread();
void mark_background_compile_thread();  // the calling thread is one

// sha256 hex of (compiler key, source): the cache key of a program
std::string program_cache_key(const std::string& compiler_key, const std::string& src);

}  // namespace tg
