#pragma once
// Weak (literal) dtypes get a real width before rendering (tinygrad's uop/weak.py): a weak CONST commits to the dtype
// it meets, index math in weakint is lowered to int32 (or int64 where its bounds need it).
#include "uop/upat.h"

namespace tg {

DType default_dtype(const UOp& u);  // weakfloat -> float32; weakint -> int32, or int64 when u's bounds overflow int32
UOp commit_weak(const UOp& s, DType dt);  // a weak CONST becomes a CONST of dt, anything else a CAST to dt

const PatternMatcher& pm_cast_weak();
const PatternMatcher& pm_commit_weak();
const PatternMatcher& pm_lower_weak();
// run with a std::unordered_map<UOp, UOp> as ctx (memo of lowered sources), or none
const PatternMatcher& pm_lower_index_dtype();

}  // namespace tg
