#pragma once
// Movement ops: the UOp methods are declared in uop.h (section "movement ops") and defined in movement.cpp; this header
// adds tinygrad's uop/movement.py: mop_cleanup (part of symbolic_simple), and pm_mops with the index math it applies.
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "uop/upat.h"

namespace tg {

// merge RESHAPE of RESHAPE and PERMUTE of PERMUTE, drop no-op RESHAPE/PERMUTE, fold constant INDEX/STACK pairs
const PatternMatcher& mop_cleanup();

// a movement op's argument: RESHAPE/EXPAND shape, PERMUTE order, FLIP 0/1 per axis (ints); PAD/SHRINK (begin, size)
struct MovementArg {
  std::vector<int64_t> ints;
  std::vector<std::pair<int64_t, int64_t>> pairs;
  static MovementArg of(const UOp& mop);
};
// the ranges of a movement op's source, given the ranges of its output (tinygrad's schedule/indexing.py)
std::vector<UOp> apply_movement_op(Ops op, const Shape& in_shape, const MovementArg& arg, std::span<const UOp> rngs);
// the same for a movement op with a symbolic shape or argument (is_symbolic_mop): the dims are UOps
bool is_symbolic_mop(const UOp& mop);
std::vector<UOp> apply_movement_op_sym(const UOp& mop, std::span<const UOp> rngs);
// movement ops on INDEX become index math; movement ops and INDEX move past AFTER/END
const PatternMatcher& pm_mops();

// a shape tuple as a source: one weakint CONST for one dim, else a STACK of them (tinygrad's shape_to_shape_arg)
UOp shape_to_shape_arg(const std::vector<int64_t>& arg);

std::string shape_str(const std::vector<int64_t>& s);  // Python tuple form: (), (5,), (2, 3)
// the number of elements of a shape; tg::Error when it does not fit in int64 (shapes are user input)
int64_t prod(const std::vector<int64_t>& s);
int64_t mul_checked(int64_t a, int64_t b, const char* what);  // a * b, or tg::Error naming `what` on overflow
// tinygrad's _broadcast_shape: the shapes aligned right, each dim the largest (0 where one is 0); no compatibility check
Shape broadcast_shape(const std::vector<Shape>& shapes);

}  // namespace tg
