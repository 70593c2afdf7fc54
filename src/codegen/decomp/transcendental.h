#pragma once
// tinygrad's codegen/decomp/transcendental.py: EXP2, LOG2, SIN (and SQRT through POW) as graphs of basic ALU ops, for
// backends without these ops (or TRANSCENDENTAL>=2). The builders accept float16/float32/float64 and build exactly
// tinygrad's graphs (node for node).
#include <vector>

#include "uop/upat.h"

namespace tg {

bool is_transcendental_dtype(DType d);  // float16, float32, float64

// ** helpers (exposed for tests) **
UOp poly_n(const UOp& x, const std::vector<double>& coeffs);  // helpers.polyN: Horner from the highest coefficient
UOp rintk(const UOp& d);                                       // round to int, half away from zero (int16/32/64)
UOp pow2if(const UOp& q, DType float_dtype);                  // 2^q as a float, q an int in the normal exponent range
UOp ilogb2k(const UOp& d);                                     // integer part of log2(d), d normalized
UOp ldexp3k(const UOp& d, const UOp& e);                       // d*2^e, e a float holding an int
UOp ldexp2k(const UOp& d, const UOp& e);                       // d*2^e, e an int; d > 0 and normal
std::pair<UOp, UOp> frexp(const UOp& v);                       // (mantissa in [0.5, 1), exponent), v != 0
std::pair<UOp, UOp> payne_hanek_reduction(const UOp& d);       // (r, q): d mod pi/2 for d >= 39800
std::pair<UOp, UOp> cody_waite_reduction(const UOp& d);        // (r, q): d mod pi/2 for |d| <= 39800

// ** the decompositions **
UOp xsin(const UOp& d, bool fast = false, double switch_over = 30.0);
UOp xexp2(const UOp& d);
UOp xlog2(const UOp& d);
UOp xpow(const UOp& base, const UOp& exponent);  // built from LOG2/EXP2 nodes (decomposed by a later rewrite)

// tinygrad's get_transcendental_patterns: EXP2/LOG2/SIN not in supported_ops (or all, when force) are decomposed
// (other float dtypes go through float32), and SQRT becomes xpow(d, 0.5) when SQRT is not supported
// commit_literals: the expansions' literals are built at the dtype the final pass would commit them to
PatternMatcher get_transcendental_patterns(OpSet supported_ops, bool force_transcendental, bool commit_literals = false);
// sym's POW rule (tinygrad's uop/symbolic.py): POW becomes xpow; here, since uop is below codegen
const PatternMatcher& pm_xpow();

// the decomposed graphs fold their constant BITCASTs with symbolic_simple() (pm_fold_bitcast)

}  // namespace tg
