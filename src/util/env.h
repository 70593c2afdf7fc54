#pragma once
// Environment variables read as tinygrad reads them (DEBUG, DEV, CACHELEVEL, ...). Read on every call.
#include <cstdint>
#include <string>

namespace tg {

// the integer value of $name (a live tg::Context's value first), or def when unset or empty; throws tg::Error when it is not an integer
int64_t getenv_int(const char* name, int64_t def);
// the value of $name, or def when unset
std::string getenv_str(const char* name, const std::string& def = "");
// DEBUG level (0 when unset)
inline int debug_level() { return int(getenv_int("DEBUG", 0)); }
// SIMD (default 1): CPU kernels shaped for vector units where tinygrad.cpp departs from tinygrad (the heuristic's
// simd_upcast, accumulators in vector registers, convolutions' channel-last copies). SIMD=0 gives tinygrad's kernels.
inline bool simd_kernels() { return getenv_int("SIMD", 1) != 0; }

}  // namespace tg
