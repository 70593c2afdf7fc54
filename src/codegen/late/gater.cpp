// tinygrad's codegen/late/gater.py: pm_move_gates_from_index.
#include "codegen/late/gater.h"

#include "renderer/cstyle.h"
#include "uop/pattern_helpers.h"

namespace tg {

namespace {
using enum Ops;
using namespace pat;

// tinygrad's vconst_like: the constant as wide as the load (a STACK of it for a vector load: `make_float4(0.0f,...)`)
UOp vconst_like(const UOp& l, ConstVal v) {
  UOp c = UOp::const_(v, l.dtype());
  int64_t n = lin_max_numel(l);
  return n == 1 ? c : UOp::stack(std::vector<UOp>(size_t(n), c));
}

UOp move_where_load(const UOp& l, const UOp& a, const UOp& w) {
  UOp alt = a.is_invalid() ? vconst_like(l, 0) : a.op() == CONST ? l.const_like(a.val())
            : a.op() == CAST && a.src(0).dtype() == l.dtype() ? a.src(0) : a.cast(l.dtype());
  return l.replace({.src = std::vector{l.src(0), alt, l.src(2)}}).cast(w.dtype());
}
}  // namespace

const PatternMatcher& pm_move_gates_from_index() {
  static const PatternMatcher pm = PatternMatcher{
      U(OpSet{INDEX, SHRINK}, {}, {U(), V("gate").where(V("idx"), invalid_pat())}, {}, "mop", true).load().named("l") >> [](M m) {
        const UOp& mop = m["mop"];
        UOp nm = mop.replace({.src = cat({mop.src(0), m["idx"]}, tail(mop.src(), 2))});
        return UOp::make(LOAD, m["l"].dtype(), {nm, vconst_like(m["l"], 0), m["gate"]});
      },
      U(OpSet{INDEX, SHRINK}, {}, {U(), V("gate").where(V("idx"), invalid_pat())}, {}, "mop", true).store(V("data")) >> [](M m) {
        const UOp& mop = m["mop"];
        UOp nm = mop.replace({.src = cat({mop.src(0), m["idx"]}, tail(mop.src(), 2))});
        return UOp::make(STORE, dtypes::void_, {nm, m["data"], m["gate"]});
      },
      V("gate").where(U(LOAD, {}, {U(), U(), V("gate", dtypes::bool_)}, {}, "l").or_casted(), V("a")).named("w") >> [](M m) {
        return move_where_load(m["l"], m["a"], m["w"]);
      },
      V("gate").where(V("a"), U(LOAD, {}, {U(), U(), V("gate", dtypes::bool_).logical_not()}, {}, "l").or_casted()).named("w") >> [](M m) {
        return move_where_load(m["l"], m["a"], m["w"]);
      },
  }.pure();
  return pm;
}

}  // namespace tg
