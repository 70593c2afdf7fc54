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
const PatternMatcher& pm_simplify_valid();      // simplify an AND of comparisons, and index math under its WHERE (part of sym)
const PatternMatcher& pm_drop_and_clauses();    // drop the clauses of a WHERE's condition on ranges its value does not use
const PatternMatcher& pm_clean_up_group_sink(); // flatten GROUP/SINK/STACK/NOOP into their SINK or GROUP (part of sym)

// the rules of tinygrad's sym and symbolic_simple that only codegen runs (its pipeline adds them)
const PatternMatcher& sym_extra();              // sym's load/store/reciprocal/reduce rules (pow -> xpow is pm_xpow)
const PatternMatcher& pm_fold_invalid_access(); // symbolic_simple's gated LOAD/STORE folding
const PatternMatcher& pm_move_where_on_load();  // a WHERE's conditions move into the valid of the load it selects
const PatternMatcher& pm_remove_invalid();      // INVALID left in a WHERE or STACK becomes 0

// uop simplified with the knowledge that valid (an AND of comparisons) holds
// a value symbolic knows only by its bounds (a PARAM standing in for an expression while simplifying)
UOp opaque_value(const std::string& name, DType dtype, ConstVal lo, ConstVal hi);
UOp uop_given_valid(const UOp& valid, const UOp& uop, bool try_simplex = true);
UOp simplify_valid(const UOp& valid);  // empty if nothing changed
UOp fold_divmod_general(const UOp& d);  // empty if no rule applies

}  // namespace tg
