#pragma once
// Engine counters (tinygrad's GlobalCounters, the part tests and benches read): how many schedules were created, how
// many programs were looked up and built, how many kernels and copies were launched. Only ever incremented; read a
// counter before and after the code under test.
#include <chrono>
#include <cstdint>

namespace tg {

// the stats' timings: wall seconds from a steady_clock point
using Clock = std::chrono::steady_clock;
inline double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct EngineStats {
  int64_t schedules = 0;               // create_linear_with_vars calls (one per realize that had work)
  int64_t realize_cache_hits = 0;      // realizes whose graph structure was scheduled before (structure_cache.cpp)
  int64_t schedule_cache_misses = 0;   // kernel graphs built from scratch (lower_sink_to_linear misses)
  int64_t program_lookups = 0;         // kernel ASTs looked up in the runtime cache by run_linear
  int64_t programs_built = 0;          // ... of which missed: lowered, compiled (or read from the disk cache), loaded
  int64_t kernels_launched = 0;        // kernel launches, run_linear and JIT replays
  int64_t kernels_unchanged = 0;       // JIT replays' launches skipped: every buffer they touch as they left it
  int64_t copies = 0;                  // COPY calls, run_linear and JIT replays
  // where a cold step's time goes (wall seconds on the calling thread)
  double lower_s = 0;                  // to_program: codegen and rendering of the programs built
  double compile_s = 0;                // compiling and loading them (disk cache reads included)
  double schedule_s = 0;               // linear_with_vars: rangeify, kernel split, memory plan
  double run_s = 0;                    // run_linear's kernel launches and copies (first touch of new buffers included)
};

inline EngineStats& engine_stats() {
  static EngineStats s;
  return s;
}

}  // namespace tg
