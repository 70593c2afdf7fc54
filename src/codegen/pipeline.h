#pragma once
// tinygrad's codegen/__init__.py: a kernel AST (SINK with KernelInfo) to a rendered program.
//
//   UOp sink = full_rewrite_to_sink(ast, ClangRenderer());   // the pass list (opts, expander, devectorize, decomps ...)
//   auto prg = to_program(ast, ren);                          // linearize, render (EntryStyle::Runtime), estimates; memoized
//   // dev.load_cached(prg->kernel.entry_name, prg->kernel.src); launch with prg->global[0] threads
//
// Env: NOOPT=1 skips the hand-coded opts; DEBUG>=5 prints the AST, DEBUG>=4 the source (printed here, once per program);
// TRACK_REWRITES=1 prints each pass's total time and result size over all kernels at exit.
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "renderer/cstyle.h"
#include "uop/args.h"

namespace tg {

UOp full_rewrite_to_sink(const UOp& ast, const CStyleLanguage& ren, bool optimize = true);

struct ProgramSpec {
  std::string name;  // the C function name (KernelInfo.function_name)
  RenderedKernel kernel;
  // launch size: CPU threads in global[0]; on a GPU the number of work-groups and their size (all 0: the device picks)
  std::array<int64_t, 3> global{1, 1, 1}, local{1, 1, 1};
  std::vector<int> outs, ins;       // PARAM slots stored to / loaded from
  std::vector<std::string> vars;    // ALU PARAMs (variables, core_id) by slot
  double ops = 0, mem = 0;          // tinygrad's Estimates (ops, mem)
  double lds = 0;
  size_t uops = 0;                  // the linearized program's length (BEAM_UOPS_MAX)
  std::vector<std::string> applied_opts;
};

// memoized by the ast's key, settings().key() (the knobs that change programs: NOOPT, BEAM, SIMD, THREADS,
// NUM_CPU_THREADS, TRANSCENDENTAL, DISABLE_FAST_IDIV ...) and ren.identity(). The cache is locked, but like all UOp graph
// work this runs on one thread at a time
// Also kept on disk (table "program", CACHELEVEL >= 1) by the same key made stable across processes, and the build-id of
// the binary (util/build_id.h): a later process with the same build skips the codegen of kernels it has seen
std::shared_ptr<const ProgramSpec> to_program(const UOp& ast, const CStyleLanguage& ren);
// to_program's key in the disk cache, "" where it keeps nothing on disk (CACHELEVEL=0, a binary without a build-id)
std::string program_disk_key(const UOp& ast, const CStyleLanguage& ren);
// the disk cache's record of a program, and back (nullopt for a truncated or foreign record)
std::string encode_program(const ProgramSpec& p);
std::optional<ProgramSpec> decode_program(std::string_view bytes);

// the linearized program tinygrad renders: linearize(sink), then gated STOREs become IF/STORE/ENDIF
std::vector<UOp> linearize_program(const UOp& sink);
Estimates estimates_from_uops(const std::vector<UOp>& uops, bool ignore_indexing = true);

}  // namespace tg
