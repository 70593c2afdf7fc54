#pragma once
// The devectorizer of tinygrad's codegen/__init__.py (once its own file, codegen/late/devectorizer.py, whose rest went
// to late/coalesce.py): broadcasts are unpacked, loads added, and shaped values split into one scalar op per element.
#include "uop/upat.h"

namespace tg {

const PatternMatcher& pm_expand_broadcast();
const PatternMatcher& pm_add_loads();
const PatternMatcher& devectorizer2();
const PatternMatcher& ew_devectorizer();
const PatternMatcher& pm_cast_float_alu();
const PatternMatcher& pm_int_dot4();     // SIMD x86 kernels: int32 lanes' dot of 4 u8 x s8 bytes as one vpdpbusd
const PatternMatcher& pm_int_madd();     // SIMD x86 kernels: a*x + b*y of 8/16-bit integers in int32 lanes as one pmaddwd
const PatternMatcher& pm_vector_lanes();  // SIMD kernels: a STACK of lanes computed alike as one op on vectors  // float ALUs (SIN, LOG2, ...) get a float operand before the decompositions
const PatternMatcher& pm_exp2_normal();  // SIMD kernels: float32 exp2 is 0 below 2^-125 (no denormal products, x86 assists)

}  // namespace tg
