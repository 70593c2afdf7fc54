#pragma once
// Compiling through the disk cache: a program already compiled (same source, same compiler identity and flags) is
// read back instead of compiled, so a second run of anything compiles nothing.
#include <memory>
#include <string>

#include "runtime/device.h"

namespace tg {

// sha256 hex of (compiler key, source): the cache key of a program
std::string program_cache_key(const std::string& compiler_key, const std::string& src);
// dev.compile(src), through the disk cache when the device has a compiler_key()
std::string compile_cached(Device& dev, const std::string& src);
// dev.load(entry, compile_cached(dev, src)); a cached binary that does not load is compiled afresh and replaced
std::unique_ptr<Program> load_cached(Device& dev, const std::string& entry, const std::string& src);

}  // namespace tg
