#pragma once
// tinygrad's codegen/opt/search.py: BEAM search over kernel opts. Every candidate one opt away from the current beam
// is rendered (repeats of a source dropped), the round's candidates compiled together in batches over the cores
// (Device::load_cached_batch, COMPILE_BATCH=0: one at a time) and timed on scratch buffers; the `amt` fastest form the
// next beam, until a round gains nothing. The winning opts are kept in the disk cache (table "beam_search") under the
// kernel AST's content key, the thread count, BEAM_TEST_SIZE, the renderer and the device.
//
//   Scheduler k(ast, caps_of(ren));
//   k = beam_search(k, ren, 2);   // apply_opts does this for BEAM=2
//
// Each candidate runs once to warm up (its time kept when that already exceeds the early stop: 3x the best so far of
// the beam or, ours, of the round), then up to 3 timed runs, the least kept. Ours: candidates are timed on their outer
// loops cut short to about BEAM_TEST_SIZE (2^27) points of index space, the time scaled back up (shrink_for_timing).
// Env: BEAM_UPCAST_MAX (256), BEAM_LOCAL_MAX (1024), BEAM_UOPS_MAX (3000), BEAM_MIN_PROGRESS_NS (10), BEAM_TEST_SIZE,
// BEAM_DEBUG=1/2 (the winner / every candidate), IGNORE_BEAM_CACHE=1 searches again; DEBUG>=2 prints each round.
#include <map>
#include <memory>
#include <set>

#include "codegen/opt/postrange.h"
#include "codegen/pipeline.h"
#include "runtime/device.h"

namespace tg {

// the schedulers one opt (of tinygrad's action list) away from s, keyed by the action's index + 1 (0: s itself)
std::map<int, Scheduler> get_kernel_actions(const Scheduler& s, bool include_0 = true, int64_t max_up = -1);
// a candidate rendered and compiled for timing: which of the schedulers it is, its program (nullptr: it did not
// compile) and what its time is multiplied by (shrink_for_timing)
struct BeamCandidate {
  size_t index;
  std::shared_ptr<const ProgramSpec> spec;
  std::unique_ptr<Program> prg;
  double factor = 1;
};
// the candidates rendered (those that fail to render, have BEAM_UOPS_MAX uops or more, or repeat a source in `seen`
// left out) and compiled for dev, in batches over the cores unless COMPILE_BATCH=0 (those rendered so far compiling while
// the rest render). shrink: as timed (shrink_for_timing); render_s, where given, gains the seconds spent rendering
std::vector<BeamCandidate> compile_candidates(Device& dev, const CStyleLanguage& ren, const std::vector<Scheduler>& cands,
                                              std::set<std::string>& seen, bool shrink = true, double* render_s = nullptr);
// tinygrad's get_test_global_size for loops as well as launch dims: s's output axes cut short (outermost first, none
// below 16 iterations) until its index space is at most `max_size`; the time of the whole kernel is that of the cut one
// times the factor returned. Reads and writes stay within the kernel's own. (Cutting the reduce axes as well, tried for
// a convolution's weight gradient whose first-round candidates ran for seconds, picked kernels that made the training
// step 15-20 % slower: docs/benchmarks.md)
double shrink_for_timing(Scheduler& s, int64_t max_size);

// the best opts found for s's kernel, timed on the CPU device; s unchanged when the kernel cannot be run here
Scheduler beam_search(const Scheduler& s, const CStyleLanguage& ren, int amt);
// the search's entry in the disk cache ("beam_search" table): the applied opts, or kBeamHandCoded where the heuristic's
// kernel (hand_coded_optimizations, timed after the search) was faster than the search's pick
std::string beam_cache_key(const Scheduler& s, const CStyleLanguage& ren, int amt, const std::string& device);
inline constexpr const char* kBeamHandCoded = "hand_coded";

}  // namespace tg
