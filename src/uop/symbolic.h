#pragma once
// tinygrad's symbolic engine as pattern matchers: folding, term collection, canonical order, div/mod folding,
// comparison and WHERE folding, and simplification under a validity condition.
#include "uop/upat.h"

namespace tg {

const PatternMatcher& symbolic_simple();  // the generic folding rules
const PatternMatcher& symbolic();         // + commutative order, term collection, lt/where/max folding, div and mod
const PatternMatcher& sym();              // + simplification under validity conditions and opinionated cleanups
const PatternMatcher& div_and_mod_symbolic();
const PatternMatcher& pm_fold_bitcast();  // part of symbolic_simple

// uop simplified with the knowledge that valid (an AND of comparisons) holds
UOp uop_given_valid(const UOp& valid, const UOp& uop, bool try_simplex = true);
UOp simplify_valid(const UOp& valid);  // empty if nothing changed
UOp fold_divmod_general(const UOp& d);  // empty if no rule applies

}  // namespace tg
