#pragma once
// The C compiler of the CPU device: clang turns C source into a shared object.
// The compiler is $TG_CLANG, else set_clang_path(), else "clang" from PATH.
#include <cstdint>
#include <string>
#include <vector>

namespace tg {

// overrides the compiler for this process ("" goes back to $TG_CLANG / "clang")
void set_clang_path(const std::string& path);
std::string clang_path();
// the flags every kernel is compiled with (-O2 -march=native -ffreestanding ...); quick: -O0 instead of -O2, the
// first build of a light kernel under TIERED_COMPILE (about a quarter of the compile time)
const std::vector<std::string>& clang_flags(bool quick = false);
// `clang --version` of the current compiler plus the host CPU; part of the program cache key. Throws when missing.
std::string clang_identity();
// C source -> bytes of a shared object. Throws tg::Error when clang is missing or the compile fails (with clang's
// stderr, and the source when DEBUG>=4).
std::string clang_compile(const std::string& src);
// C sources -> one shared object: each source its own translation unit, all in one clang invocation
std::string clang_compile(const std::vector<std::string>& srcs, bool quick = false);
// how many times clang was run to compile kernels in this process, background compiles (TIERED_COMPILE's upgrades,
// the CPU device's bfloat16 probe on opening) left out
uint64_t clang_invocations();

}  // namespace tg
