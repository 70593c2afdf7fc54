#pragma once
// Running a LINEAR (tinygrad's engine/realize.py): compile every kernel CALL (cached), allocate the BUFFERs it names,
// launch in order. BUFFER UOps own runtime Buffers through the registry below, allocated on first use and released
// when the BUFFER node dies.
#include <memory>
#include <string>
#include <vector>

#include "codegen/pipeline.h"
#include "runtime/buffer.h"
#include "schedule/schedule.h"

namespace tg {

void run_linear(const UOp& linear, const VarVals& vars = {});
// the runtime buffer behind a BUFFER UOp (allocated now if it has none yet)
Buffer& buffer_of(const UOp& buf);
// the same, shared: to keep it alive past its BUFFER node (a CPU buffer of Tensor::to_mapped keeps its DISK buffer)
std::shared_ptr<Buffer> shared_buffer_of(const UOp& buf);

// one launch run_linear made, as TinyJit records it while capturing: a kernel, or a copy (prg null, bufs {dest, src})
struct RecordedLaunch {
  std::shared_ptr<Program> prg;
  std::string name;
  std::vector<std::shared_ptr<Buffer>> bufs;  // the kernel's buffer arguments in the program's order
  std::vector<int64_t> vals;                  // its variable values
  LaunchDims dims;
  std::shared_ptr<const ProgramSpec> spec;    // what prg was built from (source, opts); null for a copy
  UOp ast;                                    // the kernel's AST (before opts); null for a copy
};
// while set (TinyJit capture), run_linear also appends every launch it makes to *rec; nullptr stops recording
void set_launch_recorder(std::vector<RecordedLaunch>* rec);
std::vector<RecordedLaunch>* launch_recorder();

// one kernel launch timed as DEBUG=2 times it (the launch waits for the kernel), by run_linear or a TinyJit replay
struct TimedLaunch {
  std::shared_ptr<const ProgramSpec> spec;
  UOp ast;  // the kernel's AST before opts
  double seconds;
};
// while set, every kernel launch is timed and appended to *t (bench/infer's kernel rates); nullptr stops it
void set_launch_timer(std::vector<TimedLaunch>* t);
std::vector<TimedLaunch>* launch_timer();

}  // namespace tg
