// Lowering of weak dtypes, a port of tinygrad's uop/weak.py.
#include "uop/weak.h"

#include <unordered_map>

namespace tg {

namespace {
bool is_weak(DType d) { return d.is_weak(); }
// the node rebuilt with new sources (and arg), its dtype derived again as tinygrad's replace(dtype=None) does
UOp rederive(const UOp& u, const std::vector<UOp>& src, const Arg* arg = nullptr) {
  const Arg& a = arg ? *arg : u.arg();
  return UOp::make(u.op(), dtype_from_uop(u.op(), src, a).value_or(dtypes::void_), src, a, u.tag());
}
UOp commit_srcs_at(const UOp& u, DType dt) {
  std::vector<UOp> src;
  for (auto& s : u.src()) src.push_back(is_weak(s.dtype()) ? commit_weak(s, dt) : s);
  return rederive(u, src);
}
UOp commit_weak_srcs(const UOp& u) {
  bool any_weak = false;
  for (auto& s : u.src()) any_weak |= is_weak(s.dtype());
  if (!any_weak) return {};
  DType dt = u.src(0).dtype();
  for (size_t i = 1; i < u.src().size(); i++) dt = least_upper_dtype({dt, u.src(i).dtype()});
  return is_weak(dt) ? UOp() : commit_srcs_at(u, dt);
}
// a concrete CAST over a weak node states the width the value lives at: a floor, never a narrowing
UOp cast_weak_srcs(const UOp& c, const UOp& u) {
  if (is_weak(c.dtype()) || weak_dtype(c.dtype()) != u.dtype()) return {};
  return commit_srcs_at(u, least_upper_dtype({c.dtype(), default_dtype(u)})).cast(c.dtype());
}
bool base_is_invalid(const UOp& u) { return u.op() == Ops::CONST && u.val().is_invalid(); }

UOp lower_weak_node(const UOp& u) {
  std::vector<UOp> src;
  bool changed = false;
  for (auto& s : u.src()) {
    bool strip = s.op() == Ops::CAST && is_weak(s.dtype());
    src.push_back(strip ? s.src(0) : s);
    changed |= strip;
  }
  size_t start = u.op() == Ops::WHERE ? 1 : 0;  // WHERE's condition is bool, never part of the width
  if (!changed) return {};
  for (size_t i = start; i < src.size(); i++) if (is_weak(src[i].dtype())) return {};
  DType dt;
  if (GroupOp::Binary.has(u.op())) {
    dt = default_dtype(u);
    for (auto& s : src) dt = least_upper_dtype({dt, s.dtype()});
    dt = strong_dtype(dt);
  } else {
    auto d = dtype_from_uop(u.op(), src, u.arg());
    if (!d) internal_error("lower_weak_node: no dtype for " + std::string(op_name(u.op())));
    dt = strong_dtype(*d);
  }
  for (size_t i = start; i < src.size(); i++) if (!base_is_invalid(src[i])) src[i] = commit_weak(src[i], dt);
  return rederive(u, src).cast(u.dtype());
}

// lower every weak source of u (memoized in ctx); a comparison is lowered whole so its operands unify
UOp lower_weak_srcs(std::unordered_map<UOp, UOp>* ctx, const UOp& u) {
  std::unordered_map<UOp, UOp> local;
  if (!ctx) ctx = &local;
  auto lower = [&](const UOp& s) -> UOp {
    if (auto it = ctx->find(s); it != ctx->end()) return it->second;
    UOp r = graph_rewrite(s, pm_lower_weak(), RewriteOpts{.share_memo = true});  // its rules are pure: subexpressions shared
    if (r.op() == Ops::CAST && is_weak(r.dtype())) r = r.src(0);  // the consumer absorbs the cast on its own edge
    (*ctx)[s] = r;
    return r;
  };
  UOp ret;
  if (GroupOp::Comparison.has(u.op())) ret = lower(u);
  else {
    std::vector<UOp> src;
    for (auto& s : u.src()) src.push_back(is_weak(s.dtype()) ? lower(s) : s);
    ret = u.replace({.src = src});
  }
  return ret == u ? UOp() : ret;
}

int64_t max_numel(const UOp& buf) {
  int64_t n = 1;
  for (auto d : buf.shape()) n *= d;
  return n;
}
}  // namespace

DType default_dtype(const UOp& u) {
  if (u.dtype() == dtypes::weakfloat) return dtypes::default_float;
  return u.overflows(dtypes::int32) ? dtypes::int64 : dtypes::int32;
}

UOp commit_weak(const UOp& s, DType dt) { return s.op() == Ops::CONST ? UOp::const_(s.val(), dt) : s.cast(dt); }

const PatternMatcher& pm_cast_weak() {
  static const PatternMatcher pm = PatternMatcher{
    UPat(Ops::CAST, {}, {UPat(GroupOp::ALU, dtypes::weaks(), {}, {}, "u")}, {}, "c") >> [](M m) { return cast_weak_srcs(m["c"], m["u"]); },
    UPat(Ops::CAST, {}, {UPat(Ops::CONST, dtypes::weaks(), {}, {}, "u")}, {}, "c") >> [](M m) { return commit_weak(m["u"], m["c"].dtype()); },
  }.pure();
  return pm;
}

const PatternMatcher& pm_commit_weak() {
  static const PatternMatcher pm = PatternMatcher{
    UPat(GroupOp::Broadcastable, {}, {}, {}, "u") >> [](M m) { return commit_weak_srcs(m["u"]); },
    // a STORE's weak value commits at the destination's dtype
    UPat(Ops::STORE, {}, {UPat(), UPat(OpSet{}, dtypes::weaks())}, {}, "u", true) >> [](M m) {
      const UOp& u = m["u"];
      std::vector<UOp> src(u.src().begin(), u.src().end());
      src[1] = commit_weak(src[1], src[0].dtype());
      return u.replace({.src = src});
    },
  }.pure();
  return pm;
}

const PatternMatcher& pm_lower_weak() {
  static const PatternMatcher pm = PatternMatcher{
    UPat(Ops::CONST, dtypes::weaks(), {}, {}, "u") >> [](M m) {
      const UOp& u = m["u"];
      return UOp::const_(u.val(), default_dtype(u)).cast(u.dtype());
    },
    // two stacked weak casts are two kind conversions, each resolved at its own kind's default
    UPat(Ops::CAST, dtypes::weaks(), {UPat(Ops::CAST, dtypes::weaks(), {UPat::var("x")})}, {}, "u") >> [](M m) {
      const UOp &u = m["u"], &x = m["x"];
      if (is_weak(x.dtype())) return UOp();
      return x.cast(default_dtype(u.src(0))).cast(default_dtype(u)).cast(u.dtype());
    },
    UPat(OpSet{Ops::PARAM, Ops::BUFFER}, dtypes::weakint, {}, {}, "u") >> [](M m) {
      const UOp& u = m["u"];
      if (!u.arg().is<std::shared_ptr<const ParamArg>>() || u.arg().param().addrspace != AddrSpace::ALU) return UOp();
      ParamArg pa = u.arg().param();
      pa.dtype = default_dtype(u);
      Arg a(std::move(pa));
      std::vector<UOp> src(u.src().begin(), u.src().end());
      return rederive(u, src, &a).cast(dtypes::weakint);
    },
    UPat(GroupOp::Binary | GroupOp::Unary | OpSet{Ops::WHERE, Ops::RANGE, Ops::STACK, Ops::SPECIAL}, {}, {}, {}, "u") >> [](M m) {
      return lower_weak_node(m["u"]);
    },
  }.pure();
  return pm;
}

const PatternMatcher& pm_lower_index_dtype() {
  static const PatternMatcher pm = pm_commit_weak() + pm_cast_weak() + PatternMatcher{
    UPat::ops(GroupOp::All, "u") >> [](M m) {
      const UOp& u = m["u"];
      if (is_weak(u.dtype())) return UOp();
      bool any_weak = false;
      for (auto& s : u.src()) any_weak |= is_weak(s.dtype());
      if (!any_weak) return UOp();
      return lower_weak_srcs(m.has_ctx() ? &m.ctx<std::unordered_map<UOp, UOp>>() : nullptr, u);
    },
    // a valid index into an n-element buffer lives in [0,n): a gated int64 index narrows when n-1 fits int32
    UPat(OpSet{Ops::INDEX, Ops::SHRINK}, {},
         {UPat::var("buf"), UPat::var("gate").where(UPat::var("idx", dtypes::int64), UPat(Ops::CONST, {}, {}, Arg(ConstVal::invalid())))}, {},
         "u", true) >> [](M m) {
      const UOp& u = m["u"];
      if (max_numel(m["buf"]) - 1 > dtypes::int32.max().i) return UOp();
      std::vector<UOp> src{m["buf"], m["idx"].cast(dtypes::int32).valid(m["gate"])};
      src.insert(src.end(), u.src().begin() + 2, u.src().end());
      return u.replace({.src = src});
    },
  };
  return pm;
}

}  // namespace tg
