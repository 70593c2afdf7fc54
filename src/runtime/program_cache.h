#pragma once
// The program cache's key. Device::compile_cached / load_cached (runtime/device.h) compile through the disk cache: a
// program already compiled (same source, same compiler identity and flags) is read back instead of compiled, so a
// second run of anything compiles nothing.
#include <cstdint>
#include <string>

namespace tg {

// TIERED_COMPILE (Device::load_cached_batch): kernels of fewer FLOPs than this are first compiled unoptimized
constexpr double tiered_ops = double(1 << 23);
// blocks until every queued background upgrade is compiled, loaded, swapped in and stored (also done at exit)
void wait_tiered_compiles();
// how many programs the background upgrades have swapped to their optimized code in this process
uint64_t tiered_upgrades();
// true on the thread that compiles the upgrades (clang_invocations() leaves its compiles out: they run whenever they
// are ready)
bool on_upgrade_thread();

// sha256 hex of (compiler key, source): the cache key of a program
std::string program_cache_key(const std::string& compiler_key, const std::string& src);

}  // namespace tg
