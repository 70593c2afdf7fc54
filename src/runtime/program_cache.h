#pragma once
// The program cache's key. Device::compile_cached / load_cached (runtime/device.h) compile through the disk cache: a
// program already compiled (same source, same compiler identity and flags) is read back instead of compiled, so a
// second run of anything compiles nothing.
#include <string>

namespace tg {

// sha256 hex of (compiler key, source): the cache key of a program
std::string program_cache_key(const std::string& compiler_key, const std::string& src);

}  // namespace tg
