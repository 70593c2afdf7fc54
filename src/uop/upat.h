#pragma once
// UPat / PatternMatcher / graph_rewrite: the compiler is data. A rule is a pattern and a callback returning a
// replacement (or an empty UOp for "no match"); matchers compose with +; graph_rewrite drives them to a fixed point.
//
//   PatternMatcher pm{
//     (UPat::var("x") + 0) >> [](M m) { return m["x"]; },
//     (UPat::var("x") * 1) >> [](M m) { return m["x"]; },
//   };
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "uop/uop.h"

namespace tg {

// a set of dtypes as a bitmask; empty means any
struct DTypeSet {
  uint32_t bits = 0;
  constexpr DTypeSet() = default;
  constexpr DTypeSet(DType d) : bits(1u << unsigned(d.id)) {}
  constexpr DTypeSet(std::initializer_list<DType> ds) { for (DType d : ds) bits |= 1u << unsigned(d.id); }
  constexpr bool any() const { return bits == 0; }
  constexpr bool has(DType d) const { return bits >> unsigned(d.id) & 1; }
  constexpr DTypeSet operator|(DTypeSet o) const { DTypeSet r; r.bits = bits | o.bits; return r; }
  DType first() const { return DType(DTypeId(__builtin_ctz(bits))); }
};
namespace dtypes {
DTypeSet ints();    // the concrete int dtypes (not weakint)
DTypeSet floats();  // the concrete float dtypes
DTypeSet fp8s();
DTypeSet weaks();
}

struct UPatNode;
class Match;

class UPat {
 public:
  enum class SrcKind : uint8_t { None, Tuple, AnyOrder, Repeat };
  UPat();  // matches any node
  // full constructor: ops (empty = any op), dtypes, sources (ordered), arg, capture name
  UPat(OpSet ops, DTypeSet dts = {}, std::vector<UPat> src = {}, std::optional<Arg> arg = {}, std::string name = {},
       bool allow_any_len = false);
  UPat(Ops op, DTypeSet dts = {}, std::vector<UPat> src = {}, std::optional<Arg> arg = {}, std::string name = {}, bool allow_any_len = false)
      : UPat(OpSet(op), dts, std::move(src), std::move(arg), std::move(name), allow_any_len) {}

  static UPat var(std::string name = {}, DTypeSet dts = {});
  static UPat cvar(std::string name = {}, DTypeSet dts = {});
  static UPat cnst(ConstVal v, DTypeSet dts = {});  // a CONST with this exact value
  static UPat any(std::vector<UPat> alternatives);  // matches if one of them matches
  static UPat ops(OpSet ops, std::string name = {});
  // source shapes
  UPat src_any_order(std::vector<UPat> src) const;  // sources in any order (commutative)
  UPat src_repeat(UPat each) const;                 // one pattern for all sources, any count
  UPat allow_any_len() const;
  UPat named(std::string name) const;
  UPat with_arg(Arg a) const;

  // sugar mirroring UOp's
  UPat alu(Ops op, std::vector<UPat> rest = {}) const;
  UPat cast(std::optional<DTypeSet> dts = {}, std::string name = {}) const;
  UPat bitcast(std::optional<DTypeSet> dts = {}) const;
  UPat where(const UPat& a, const UPat& b) const;
  UPat ne(const UPat& x) const;
  UPat eq(const UPat& x) const;
  UPat maximum(const UPat& x) const;
  UPat logical_not() const;
  UPat reciprocal() const { return UPat(Ops::RECIPROCAL, {}, {*this}); }
  UPat trunc() const { return UPat(Ops::TRUNC, {}, {*this}); }
  UPat index(std::vector<UPat> idx) const;
  UPat load(std::vector<UPat> rest = {}) const;
  UPat store(const UPat& v) const;
  UPat reduce(std::optional<Ops> reduce_op = {}, std::string name = {}, bool allow_any_len = false) const;
  UPat broadcast() const;  // a STACK of copies of this
  UPat or_casted(std::string name = {}) const;
  UPat binop(Ops op, const UPat& y, bool reverse = false) const;
  DType dtype() const;  // the first dtype it matches, void if any

  const UPatNode* get() const { return p.get(); }
  std::shared_ptr<const UPatNode> p;
};

struct UPatNode {
  OpSet ops;  // empty = any
  DTypeSet dts;
  std::optional<Arg> arg;
  int name = -1;  // interned capture slot
  UPat::SrcKind kind = UPat::SrcKind::None;
  std::vector<std::vector<UPat>> orders;  // Tuple: one; AnyOrder: every distinct permutation
  std::shared_ptr<const UPatNode> repeat;
  bool strict_len = false;
  uint32_t required_len = 0;
  OpSet early_reject;  // ops that must appear among a node's sources for any match
  std::vector<UPat> alternatives;  // UPat::any
  std::string name_str;
};

// UPat with a literal: the literal becomes a CONST pattern with that value
template <Scalar T> UPat ufix_pat(T v) {
  if constexpr (std::is_same_v<T, bool>) return UPat::cnst(ConstVal(v));
  else if constexpr (std::is_floating_point_v<T>) return UPat::cnst(ConstVal(double(v)));
  else return UPat::cnst(ConstVal(int64_t(v)));
}
#define TG_UPAT_BINOP(sym, OP)                                                                                   \
  inline UPat operator sym(const UPat& a, const UPat& b) { return a.binop(Ops::OP, b); }                       \
  template <Scalar T> UPat operator sym(const UPat& a, T b) { return a.binop(Ops::OP, ufix_pat(b)); }          \
  template <Scalar T> UPat operator sym(T a, const UPat& b) { return b.binop(Ops::OP, ufix_pat(a), true); }
TG_UPAT_BINOP(+, ADD)
TG_UPAT_BINOP(*, MUL)
TG_UPAT_BINOP(/, FLOORDIV)
TG_UPAT_BINOP(%, FLOORMOD)
TG_UPAT_BINOP(<, CMPLT)
TG_UPAT_BINOP(&, AND)
TG_UPAT_BINOP(|, OR)
TG_UPAT_BINOP(^, XOR)
TG_UPAT_BINOP(<<, SHL)
TG_UPAT_BINOP(>>, SHR)
#undef TG_UPAT_BINOP
UPat operator-(const UPat& a);  // x*-1 (or logical_not for bool)
UPat operator-(const UPat& a, const UPat& b);
template <Scalar T> UPat operator-(const UPat& a, T b) { return a - ufix_pat(b); }
template <Scalar T> UPat operator-(T a, const UPat& b) { return ufix_pat(a) - b; }

// the captures of one match, by name; ctx is what graph_rewrite was given
class Match {
 public:
  UOp operator[](std::string_view name) const;  // throws where the capture is not bound
  UOp get(std::string_view name) const;         // an empty UOp where the capture is not bound
  template <size_t N> UOp operator[](const char (&name)[N]) const { return (*this)[std::string_view(name, N - 1)]; }
  const UOp& root() const { return *root_; }
  template <class T> T& ctx() const { return *static_cast<T*>(checked_ctx()); }
  bool has_ctx() const { return ctx_ != nullptr; }
  void* ctx_ = nullptr;
  const UOp* root_ = nullptr;
  const UOpNode* const* slots = nullptr;  // by interned capture name id
  const void* ctx_names = nullptr;        // the rule's capture names
 private:
  void* checked_ctx() const;  // throws where there is none (a pure matcher's rules get none)
};
using M = const Match&;
using RuleFn = std::function<UOp(M)>;

inline constexpr uint8_t NO_COMPONENT = 63;
struct Rule {
  UPat pat;
  RuleFn fn;
  uint8_t component = NO_COMPONENT;  // the pure matcher it came from (PatternMatcher::pure)
};
inline Rule operator>>(UPat p, RuleFn f) { return Rule{std::move(p), std::move(f)}; }

class PatternMatcher {
 public:
  PatternMatcher() = default;
  PatternMatcher(std::vector<Rule> rules);
  PatternMatcher(std::initializer_list<Rule> rules) : PatternMatcher(std::vector<Rule>(rules)) {}
  PatternMatcher operator+(const PatternMatcher& o) const;
  // declares the rules not yet in a pure matcher to be functions of the node alone (no ctx, no state): a node none of
  // them rewrote is remembered (UOpNode::fixed_for) and not matched against them again, in any matcher holding them.
  // Matchers only grow by +, so a matcher has all rules of a pure component or none.
  PatternMatcher pure() const;
  // the first rule whose pattern matches and whose callback returns a new node wins; empty UOp if none
  UOp rewrite(const UOp& u, void* ctx = nullptr) const;
  const std::vector<Rule>& rules() const { return rules_; }
  OpSet ops() const { return ops_; }  // the ops some rule matches at the top

 private:
  struct WholeComponents {};
  PatternMatcher(std::vector<Rule> rules, WholeComponents);
  void index();
  std::vector<Rule> rules_;
  // the rules per op, flat (op o's are cands_[op_start_[o], op_start_[o + 1])), with the checks of their top pattern
  // that need no look at the pattern itself: source count, dtype, ops that must be among the sources, and the ops of
  // the first two sources (empty = any; either way round for a two-source pattern in any order)
  struct Candidate {
    uint32_t rule, min_len, max_len;
    uint8_t component;
    DTypeSet dts;
    bool any_order;
    OpSet early_reject, src01[2];
  };
  OpSet ops_;
  uint64_t pure_mask_ = 0;            // the pure components among the rules
  std::vector<uint64_t> op_need_;     // per op: the components of its candidates, bit 63 where one is not pure
  std::vector<uint32_t> op_start_;
  std::vector<Candidate> cands_;
  std::shared_ptr<std::vector<struct RuleInfo>> infos_;
};

// thrown by a bottom-up rule to stop the rewrite from descending into a node's sources
struct BottomUpGate {
  UOp result;
};
// returned by a bottom-up rule: BottomUpGate{} without the cost of a throw (the node stays as it is)
const UOp& bottom_up_gate();

struct RewriteOpts {
  bool bottom_up = false;
  void* ctx = nullptr;
  const PatternMatcher* bpm = nullptr;  // a bottom-up matcher to run alongside a top-down one
  bool walk = false;         // one pass, results are not rewritten again (tinygrad's walk_rewrite)
  bool enter_calls = false;  // also rewrite the bodies of FUNCTIONs and CALLs of kernels/linears/copies
  bool share_memo = false;   // pm is top-down and ctx-free: results are kept for later rewrites inside the outermost one
  bool ctx_read_only = false;  // the rules only read ctx, so the order they run in does not matter
};
// a CALL/FUNCTION whose src[0] is a body graph_rewrite leaves alone unless enter_calls
bool is_opaque_call(const UOp& u);
UOp graph_rewrite(const UOp& sink, const PatternMatcher& pm, RewriteOpts opts = {});
inline UOp graph_rewrite(const UOp& sink, const PatternMatcher& pm, void* ctx, bool bottom_up = false) {
  return graph_rewrite(sink, pm, RewriteOpts{bottom_up, ctx});
}
// rewrites with share_memo keep their memo until the outermost graph_rewrite returns; a scope held across several
// rewrites (the passes of one kernel) keeps it until the scope ends
struct SharedMemoScope {
  SharedMemoScope();
  ~SharedMemoScope();
  SharedMemoScope(const SharedMemoScope&) = delete;
  SharedMemoScope& operator=(const SharedMemoScope&) = delete;
};

// graph_rewrite bottom up with a rule that looks each node up in dvars (UOp::substitute), at a fraction of the cost
UOp substitute_rewrite(const UOp& sink, const std::unordered_map<UOp, UOp>& dvars, bool enter_calls = false);

int intern_capture_name(std::string_view name);
inline constexpr int MAX_CAPTURES = 256;

}  // namespace tg
