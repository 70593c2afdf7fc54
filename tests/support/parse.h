#pragma once
// Reading tinygrad's printed UOp graphs (what `print(uop)` shows, and UOp::str() writes): the pretty-print form with
// `x4:=UOp(...)` definitions and bare `x4` references. Args: None, ints, floats, ConstFloat(..), bools, strings,
// tuples, Invalid, dtypes.X, Ops.X, AxisType.X, AddrSpace.X, ParamArg(..), KernelInfo(..), BufferizeOpts(..),
// CallInfo(..); tags likewise. Nodes are built with UOp::make as printed (no dtype inference, no helpers).
//
//   UOp ast = parse_uop(text);   // ast.str() == text (up to the printing differences listed in parse.cpp)
#include <string_view>

#include "uop/uop.h"

namespace tg {

// throws tg::Error "parse_uop: <what> at line L col C" on malformed text
UOp parse_uop(std::string_view text);

}  // namespace tg
