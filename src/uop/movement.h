#pragma once
// Movement ops: the UOp methods are declared in uop.h (section "movement ops") and defined in movement.cpp; this header
// adds mop_cleanup, tinygrad's rules that fold adjacent movement ops (part of symbolic_simple).
#include <string>
#include <vector>

#include "uop/upat.h"

namespace tg {

// merge RESHAPE of RESHAPE and PERMUTE of PERMUTE, drop no-op RESHAPE/PERMUTE, fold constant INDEX/STACK pairs
const PatternMatcher& mop_cleanup();

std::string shape_str(const std::vector<int64_t>& s);  // Python tuple form: (), (5,), (2, 3)
// the number of elements of a shape; tg::Error when it does not fit in int64 (shapes are user input)
int64_t prod(const std::vector<int64_t>& s);
int64_t mul_checked(int64_t a, int64_t b, const char* what);  // a * b, or tg::Error naming `what` on overflow

}  // namespace tg
