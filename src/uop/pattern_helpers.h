#pragma once
// Shorthands the rule files share, for what tinygrad writes inline: UPat.var / UPat.cvar, the Invalid patterns, and
// tuple slicing and concatenation of sources. A rule file says `using namespace tg::pat;` in its anonymous namespace.
#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "uop/upat.h"

namespace tg::pat {

using U = UPat;
inline UPat V(std::string name = {}, DTypeSet d = {}) { return UPat::var(std::move(name), d); }   // UPat.var
inline UPat C(std::string name = {}, DTypeSet d = {}) { return UPat::cvar(std::move(name), d); }  // UPat.cvar
// inner.f(op, name=..., allow_any_len=..., arg=...): UPat(op, src=(inner,))
inline UPat F(const UPat& inner, OpSet op, std::string name = {}, bool any_len = false, std::optional<Arg> arg = {}) {
  return UPat(op, {}, {inner}, std::move(arg), std::move(name), any_len);
}
// UPat(Ops.CONST, arg=Invalid, name="i") and cond.where(x, Invalid) (captures cond, x, i); built on first use
inline const UPat& invalid_pat() {
  static const UPat p(Ops::CONST, {}, {}, Arg(ConstVal::invalid()), "i");
  return p;
}
inline const UPat& invalid_gate() {
  static const UPat p = V("cond").where(V("x"), invalid_pat());
  return p;
}

inline UOp cint(int64_t v) { return UOp::const_(v); }  // a weakint literal
inline std::vector<UOp> cat(std::vector<UOp> a, std::span<const UOp> b) { a.insert(a.end(), b.begin(), b.end()); return a; }
inline std::vector<UOp> tail(std::span<const UOp> s, size_t from) { return {s.begin() + std::min(from, s.size()), s.end()}; }
inline AxisType axis_type(const UOp& rng) { return AxisType(rng.arg().ints().back()); }  // a RANGE's arg[-1]
inline Ops reduce_op(const UOp& red) { return Ops(red.arg().ints()[0]); }                // a REDUCE's arg[0]

}  // namespace tg::pat
