#pragma once
// Running a LINEAR (tinygrad's engine/realize.py): compile every kernel CALL (cached), allocate the BUFFERs it names,
// launch in order. BUFFER UOps own runtime Buffers through the registry below, allocated on first use and released
// when the BUFFER node dies.
#include "runtime/buffer.h"
#include "schedule/schedule.h"

namespace tg {

void run_linear(const UOp& linear, const VarVals& vars = {});
// the runtime buffer behind a BUFFER UOp (allocated now if it has none yet)
Buffer& buffer_of(const UOp& buf);

}  // namespace tg
