#pragma once
// tinygrad's codegen/opt/search.py: BEAM search over kernel opts. Every candidate one opt away from the current beam
// is rendered, compiled and timed on scratch buffers; the `amt` fastest form the next beam, until a round gains
// nothing. The winning opts are kept in the disk cache (table "beam_search") under the kernel AST's content key.
//
//   Scheduler k(ast, caps_of(ren));
//   k = beam_search(k, ren, 2);   // apply_opts does this for BEAM=2
//
// Env: BEAM_UPCAST_MAX (256), BEAM_MIN_PROGRESS (0.01 us), BEAM_DEBUG=1/2 (the winner / every candidate),
// IGNORE_BEAM_CACHE=1 searches again; DEBUG>=2 prints each round.
#include <map>

#include "codegen/opt/postrange.h"

namespace tg {

// the schedulers one opt (of tinygrad's action list) away from s, keyed by the action's index + 1 (0: s itself)
std::map<int, Scheduler> get_kernel_actions(const Scheduler& s, bool include_0 = true, int64_t max_up = -1);
// the best opts found for s's kernel, timed on the CPU device; s unchanged when the kernel cannot be run here
Scheduler beam_search(const Scheduler& s, const CStyleLanguage& ren, int amt);

}  // namespace tg
