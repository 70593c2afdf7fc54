#pragma once
// Environment variables read as tinygrad reads them, a live tg::Context's value first. The library's own knobs are
// read once into the settings() snapshot (util/settings.h); these read on every call, for the rest (TRAINING, names a
// program invents).
#include <cstdint>
#include <string>

#include "util/settings.h"

namespace tg {

// the integer value of $name (a live tg::Context's value first), or def when unset or empty; throws tg::Error when it is not an integer
int64_t getenv_int(const char* name, int64_t def);
// the value of $name, or def when unset
std::string getenv_str(const char* name, const std::string& def = "");
// DEBUG level (0 when unset)
inline int debug_level() { return int(settings().DEBUG); }
// SIMD (default 1): CPU kernels shaped for vector units where tinygrad.cpp departs from tinygrad (the heuristic's
// simd_upcast, accumulators in vector registers, convolutions' channel-last copies). SIMD=0 gives tinygrad's kernels.
inline bool simd_kernels() { return settings().SIMD != 0; }

}  // namespace tg
