// UPat construction and matching, PatternMatcher, graph_rewrite.
#include "uop/upat.h"
#include "uop/nodemap.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <unordered_set>

namespace tg {

// ***** 1. UPat construction *****

DTypeSet dtypes::ints() { return {int8, uint8, int16, uint16, int32, uint32, int64, uint64}; }
DTypeSet dtypes::floats() { return fp8s() | DTypeSet{float16, bfloat16, float32, float64}; }
DTypeSet dtypes::fp8s() { return {fp8e4m3, fp8e5m2, fp8e4m3fnuz, fp8e5m2fnuz}; }
DTypeSet dtypes::weaks() { return {weakint, weakfloat}; }

int intern_capture_name(std::string_view name) {
  static std::unordered_map<std::string, int> ids;
  auto it = ids.find(std::string(name));
  if (it != ids.end()) return it->second;
  int id = int(ids.size());
  if (id >= MAX_CAPTURES) throw Error("too many distinct UPat capture names");
  ids.emplace(std::string(name), id);
  return id;
}

namespace {
std::shared_ptr<UPatNode> clone(const UPat& u) { return std::make_shared<UPatNode>(*u.get()); }

void set_early_reject(UPatNode& n) {
  n.early_reject = {};
  std::vector<UPat> first;
  if (n.kind == UPat::SrcKind::Repeat) { UPat r; r.p = n.repeat; first = {r}; }
  else if (!n.orders.empty()) first = n.orders[0];
  for (auto& s : first) if (s.get()->ops.count() == 1) s.get()->ops.each([&](Ops o) { n.early_reject.add(o); });
}

void set_srcs(UPatNode& n, UPat::SrcKind kind, std::vector<UPat> src, bool allow_any_len) {
  n.kind = kind;
  n.orders.clear();
  if (kind == UPat::SrcKind::Tuple) n.orders.push_back(std::move(src));
  if (kind == UPat::SrcKind::AnyOrder) {
    bool all_same = std::all_of(src.begin(), src.end(), [&](const UPat& x) { return x.get() == src[0].get(); });
    if (all_same) n.orders.push_back(src);
    else {
      // itertools.permutations order: permute positions lexicographically
      std::vector<size_t> idx(src.size());
      for (size_t i = 0; i < idx.size(); i++) idx[i] = i;
      do {
        std::vector<UPat> o;
        for (size_t i : idx) o.push_back(src[i]);
        n.orders.push_back(std::move(o));
      } while (std::next_permutation(idx.begin(), idx.end()));
    }
  }
  n.strict_len = kind != UPat::SrcKind::None && kind != UPat::SrcKind::Repeat && !allow_any_len;
  n.required_len = n.orders.empty() ? 0 : uint32_t(n.orders[0].size());
  set_early_reject(n);
}
}  // namespace

UPat::UPat() : p(std::make_shared<UPatNode>()) {}

UPat::UPat(OpSet ops, DTypeSet dts, std::vector<UPat> src, std::optional<Arg> arg, std::string name, bool allow_any_len) {
  auto n = std::make_shared<UPatNode>();
  n->ops = ops, n->dts = dts, n->arg = std::move(arg);
  if (!name.empty()) n->name = intern_capture_name(name), n->name_str = std::move(name);
  // a pattern built with sources matches exactly those (in order); without sources it matches any
  SrcKind kind = src.empty() ? SrcKind::None : SrcKind::Tuple;
  set_srcs(*n, kind, std::move(src), allow_any_len);
  if (allow_any_len) n->strict_len = false;
  p = std::move(n);
}

UPat UPat::var(std::string name, DTypeSet dts) { return UPat(OpSet{}, dts, {}, {}, std::move(name)); }
UPat UPat::cvar(std::string name, DTypeSet dts) { return UPat(Ops::CONST, dts, {}, {}, std::move(name)); }
UPat UPat::cnst(ConstVal v, DTypeSet dts) { return UPat(Ops::CONST, dts, {}, Arg(v)); }
UPat UPat::ops(OpSet ops, std::string name) { return UPat(ops, {}, {}, {}, std::move(name)); }
UPat UPat::any(std::vector<UPat> alternatives) {
  UPat r;
  auto n = std::make_shared<UPatNode>();
  n->alternatives = std::move(alternatives);
  r.p = std::move(n);
  return r;
}
UPat UPat::src_any_order(std::vector<UPat> src) const {
  auto n = clone(*this);
  set_srcs(*n, SrcKind::AnyOrder, std::move(src), !n->strict_len && n->kind != SrcKind::None);
  UPat r; r.p = std::move(n); return r;
}
UPat UPat::src_repeat(UPat each) const {
  auto n = clone(*this);
  n->repeat = std::move(each.p);
  set_srcs(*n, SrcKind::Repeat, {}, true);
  UPat r; r.p = std::move(n); return r;
}
UPat UPat::allow_any_len() const { auto n = clone(*this); n->strict_len = false; UPat r; r.p = std::move(n); return r; }
UPat UPat::named(std::string name) const {
  auto n = clone(*this);
  n->name = intern_capture_name(name), n->name_str = std::move(name);
  UPat r; r.p = std::move(n); return r;
}
UPat UPat::with_arg(Arg a) const { auto n = clone(*this); n->arg = std::move(a); UPat r; r.p = std::move(n); return r; }
DType UPat::dtype() const { return p->dts.any() ? dtypes::void_ : p->dts.first(); }

// as tinygrad: the result dtype constraint is the last source's; commutative ops match sources in any order
UPat UPat::alu(Ops op, std::vector<UPat> rest) const {
  std::vector<UPat> s{*this};
  s.insert(s.end(), rest.begin(), rest.end());
  DTypeSet dts = (op == Ops::CMPLT || op == Ops::CMPNE) ? DTypeSet(dtypes::bool_) : s.back().get()->dts;
  if (GroupOp::Commutative.has(op)) return UPat(op, dts).src_any_order(std::move(s));
  return UPat(op, dts, std::move(s));
}
UPat UPat::binop(Ops op, const UPat& y, bool reverse) const { return reverse ? y.alu(op, {*this}) : alu(op, {y}); }
UPat UPat::cast(std::optional<DTypeSet> dts, std::string name) const {
  if (dts && dts->bits == p->dts.bits && __builtin_popcount(dts->bits) == 1) return *this;
  return UPat(Ops::CAST, dts.value_or(DTypeSet{}), {*this}, {}, std::move(name));
}
UPat UPat::bitcast(std::optional<DTypeSet> dts) const { return UPat(Ops::BITCAST, dts.value_or(DTypeSet{}), {*this}); }
UPat UPat::where(const UPat& a, const UPat& b) const { return UPat(Ops::WHERE, b.get()->dts, {*this, a, b}); }
UPat UPat::ne(const UPat& x) const { return alu(Ops::CMPNE, {x}); }
UPat UPat::eq(const UPat& x) const { return ne(x).logical_not(); }
UPat UPat::maximum(const UPat& x) const { return alu(Ops::MAX, {x}); }
UPat UPat::logical_not() const { return cast(DTypeSet(dtypes::bool_)).ne(UPat::cnst(ConstVal(true))); }
UPat UPat::index(std::vector<UPat> idx) const { idx.insert(idx.begin(), *this); return UPat(Ops::INDEX, {}, std::move(idx)); }
UPat UPat::load(std::vector<UPat> rest) const { rest.insert(rest.begin(), *this); return UPat(Ops::LOAD, {}, std::move(rest)); }
UPat UPat::store(const UPat& v) const { return UPat(Ops::STORE, {}, {*this, v}); }
UPat UPat::reduce(std::optional<Ops> reduce_op, std::string name, bool allow_any_len) const {
  std::optional<Arg> a;
  if (reduce_op) a = Arg(Arg::Ints{int64_t(*reduce_op), 0});
  return UPat(Ops::REDUCE, p->dts, {*this}, a, std::move(name), allow_any_len);
}
UPat UPat::broadcast() const { return UPat(Ops::STACK, p->dts).src_repeat(*this); }
UPat UPat::or_casted(std::string name) const {
  return any({name.empty() ? *this : named(name), UPat(Ops::CAST, {}, {*this}, {}, name)});
}
UPat operator-(const UPat& a) { return a.dtype() == dtypes::bool_ ? a.logical_not() : a * -1; }
UPat operator-(const UPat& a, const UPat& b) { return a.alu(Ops::ADD, {-b}); }

// ***** 2. matching *****

namespace {
struct Pending { const UPatNode* pat; const UOpNode* node; const Pending* next; };

// a match's captures, by interned name id. They are all null between matches (match_one undoes its bindings, a throw
// from a rule is cleaned up by its caller), so nothing is cleared per rule tried; a rewrite nested in a rule's callback
// takes the next array of the thread's stack
class CaptureSlots {
 public:
  CaptureSlots() {
    if (!stack) stack = new Stack();  // per thread, never freed
    if (stack->depth == stack->arrays.size()) stack->arrays.push_back(std::make_unique<const UOpNode*[]>(MAX_CAPTURES));
    p = stack->arrays[stack->depth++].get();
  }
  ~CaptureSlots() { stack->depth--; }
  const UOpNode** p;

 private:
  struct Stack {
    std::vector<std::unique_ptr<const UOpNode*[]>> arrays;
    size_t depth = 0;
  };
  static thread_local Stack* stack;  // a plain pointer: no thread_local init guard on every rewrite
};
thread_local CaptureSlots::Stack* CaptureSlots::stack = nullptr;

struct MatchState {
  const UOpNode** slots;
  const RuleFn* fn = nullptr;
  Match m;
  UOp result;
};

bool match_list(const Pending* todo, MatchState& st);
bool match_bound(const UPatNode* p, const UOpNode* u, const Pending* rest, MatchState& st);

// the checks of one pattern node that need neither its sources nor the captures: inlined where patterns are tried, so
// the many rejections cost no call
[[gnu::always_inline]] inline bool shallow_ok(const UPatNode* p, const UOpNode* u) {
  return !p->alternatives.empty() ||
         !((!p->ops.empty() && !p->ops.has(u->op)) || (!p->dts.any() && !p->dts.has(u->dtype)) || u->nsrc < p->required_len ||
           (p->strict_len && u->nsrc != p->required_len) || (p->arg && !p->arg->matches(u->arg)));
}
[[gnu::always_inline]] inline bool match_one(const UPatNode* p, const UOpNode* u, const Pending* rest, MatchState& st) {
  return shallow_ok(p, u) && match_bound(p, u, rest, st);
}

[[gnu::noinline]] bool match_bound(const UPatNode* p, const UOpNode* u, const Pending* rest, MatchState& st) {
  if (!p->alternatives.empty()) {
    for (auto& alt : p->alternatives) if (match_one(alt.get(), u, rest, st)) return true;
    return false;
  }
  const UOpNode** slot = nullptr;  // bound here, to undo
  if (p->name >= 0) {
    const UOpNode*& s = st.slots[p->name];
    if (s && s != u) return false;
    if (!s) s = u, slot = &s;
  }
  bool ok = false;
  if (p->kind == UPat::SrcKind::None) ok = match_list(rest, st);
  else {
    uint32_t n = p->kind == UPat::SrcKind::Repeat ? u->nsrc : std::min<uint32_t>(u->nsrc, p->required_len);
    Pending inline_buf[8];
    std::vector<Pending> heap;
    Pending* chain = n <= 8 ? inline_buf : (heap.resize(n), heap.data());
    // an order with a source failing the shallow checks is dropped before its chain is built (no rule runs before the
    // whole chain matched, so nothing else changes); match_list then skips those checks
    auto try_order = [&](const std::vector<UPat>* order) {
      if (n == 0) return match_list(rest, st);
      for (uint32_t i = 0; i < n; i++) {
        const UPatNode* sp = order ? (*order)[i].get() : p->repeat.get();
        if (!shallow_ok(sp, u->srcs()[i].get())) return false;
        chain[i] = {sp, u->srcs()[i].get(), i + 1 < n ? &chain[i + 1] : rest};
      }
      return match_list(chain, st);
    };
    if (p->kind == UPat::SrcKind::Repeat) ok = try_order(nullptr);
    else for (auto& order : p->orders) if ((ok = try_order(&order))) break;
  }
  if (slot) *slot = nullptr;
  return ok;
}

bool match_list(const Pending* todo, MatchState& st) {
  if (todo) return match_bound(todo->pat, todo->node, todo->next, st);
  // every pattern node matched: ask the rule
  UOp r = (*st.fn)(st.m);
  if (!r) return false;
  st.result = std::move(r);
  return true;
}

void collect_names(const UPatNode* p, std::vector<int>& ids, std::vector<std::string>& names) {
  if (p->name >= 0 && std::find(ids.begin(), ids.end(), p->name) == ids.end()) ids.push_back(p->name), names.push_back(p->name_str);
  for (auto& a : p->alternatives) collect_names(a.get(), ids, names);
  for (auto& o : p->orders) for (auto& s : o) collect_names(s.get(), ids, names);
  if (p->kind == UPat::SrcKind::Repeat) collect_names(p->repeat.get(), ids, names);
}

}  // namespace

struct RuleInfo {
  std::vector<int> ids;
  std::vector<std::string> names;
};

namespace {
// the slot index of a capture name, or -1; the rule's names are few: a linear scan beats hashing
int capture_slot(const void* ctx_names, std::string_view name) {
  const RuleInfo* ri = static_cast<const RuleInfo*>(ctx_names);
  for (size_t i = 0; i < ri->names.size(); i++)
    if (const std::string& n = ri->names[i]; n.size() == name.size() && n[0] == name[0] && n == name) return int(i);
  return -1;
}
}  // namespace

UOp Match::operator[](std::string_view name) const {
  int i = capture_slot(ctx_names, name);
  if (i < 0) throw Error("UPat has no capture named '" + std::string(name) + "'");
  const UOpNode* n = slots[static_cast<const RuleInfo*>(ctx_names)->ids[size_t(i)]];
  if (!n) throw Error("UPat capture '" + std::string(name) + "' was not bound in this match");
  return UOp(n);
}
UOp Match::get(std::string_view name) const {
  int i = capture_slot(ctx_names, name);
  return i < 0 ? UOp() : UOp(slots[static_cast<const RuleInfo*>(ctx_names)->ids[size_t(i)]]);
}

// ***** 3. PatternMatcher *****

// rules taken from other matchers start outside any pure component: only + and pure() carry whole components over
PatternMatcher::PatternMatcher(std::vector<Rule> rules) : rules_(std::move(rules)) {
  for (auto& r : rules_) r.component = NO_COMPONENT;
  index();
}
PatternMatcher::PatternMatcher(std::vector<Rule> rules, WholeComponents) : rules_(std::move(rules)) { index(); }

void PatternMatcher::index() {
  std::vector<std::vector<Candidate>> by_op(NUM_OPS);
  infos_ = std::make_shared<std::vector<RuleInfo>>();
  for (uint32_t i = 0; i < rules_.size(); i++) {
    const UPatNode* p = rules_[i].pat.get();
    RuleInfo ri;
    collect_names(p, ri.ids, ri.names);
    infos_->push_back(std::move(ri));
    std::vector<const UPatNode*> tops{p};
    if (!p->alternatives.empty()) { tops.clear(); for (auto& a : p->alternatives) tops.push_back(a.get()); }
    OpSet ops;
    for (auto* t : tops) {
      if (t->ops.empty()) throw Error("a PatternMatcher rule must name the op(s) it matches at the top");
      ops = ops | t->ops;
    }
    const uint8_t comp = rules_[i].component;
    Candidate c{i, 0, UINT32_MAX, comp, {}, false, {}, {}};
    if (p->alternatives.empty()) {
      c = {i, p->required_len, p->strict_len ? p->required_len : UINT32_MAX, comp, p->dts, p->kind == UPat::SrcKind::AnyOrder, p->early_reject, {}};
      bool pairs = p->kind == UPat::SrcKind::Tuple || (c.any_order && p->strict_len && p->required_len == 2);
      for (size_t k = 0; pairs && k < 2 && k < p->orders[0].size(); k++)
        if (const UPatNode* sp = p->orders[0][k].get(); sp->alternatives.empty()) c.src01[k] = sp->ops;
    }
    ops.each([&](Ops o) { by_op[size_t(o)].push_back(c); });
    ops_ = ops_ | ops;
    if (comp != NO_COMPONENT) pure_mask_ |= uint64_t(1) << comp;
  }
  op_start_.assign(1, 0);
  cands_.clear();
  op_need_.assign(NUM_OPS, 0);
  for (size_t o = 0; o < NUM_OPS; o++) {
    for (auto& c : by_op[o]) op_need_[o] |= uint64_t(1) << c.component;
    cands_.insert(cands_.end(), by_op[o].begin(), by_op[o].end()), op_start_.push_back(uint32_t(cands_.size()));
  }
}

PatternMatcher PatternMatcher::pure() const {
  static std::atomic<uint8_t> next{0};
  uint8_t id = next.load();
  while (id < NO_COMPONENT && !next.compare_exchange_weak(id, uint8_t(id + 1))) {}
  if (id >= NO_COMPONENT) return *this;  // out of component bits: matched as before, only not remembered
  std::vector<Rule> r = rules_;
  for (auto& rule : r) if (rule.component == NO_COMPONENT) rule.component = id;
  return PatternMatcher(std::move(r), WholeComponents{});
}

void* Match::checked_ctx() const {
  if (!ctx_) throw Error("a rule read the rewrite's ctx, but none was given (or its matcher was declared pure)");
  return ctx_;
}

PatternMatcher PatternMatcher::operator+(const PatternMatcher& o) const {
  std::vector<Rule> r = rules_;
  r.insert(r.end(), o.rules_.begin(), o.rules_.end());
  return PatternMatcher(std::move(r), WholeComponents{});
}

UOp PatternMatcher::rewrite(const UOp& u, void* ctx) const {
  const Candidate *c = cands_.data() + op_start_[size_t(u.op())], *end = cands_.data() + op_start_[size_t(u.op()) + 1];
  const uint64_t known = u.get()->fixed_for;
  if (const uint64_t need = op_need_[size_t(u.op())]; (known & need) == need) return {};
  OpSet src_ops;
  for (auto& s : u.src()) src_ops.add(s.op());
  const uint32_t nsrc = uint32_t(u.src().size());
  const Ops op0 = nsrc > 0 ? u.src(0).op() : Ops::NONE_, op1 = nsrc > 1 ? u.src(1).op() : Ops::NONE_;
  auto srcs_fit = [](const OpSet* want, Ops a, Ops b) { return (want[0].empty() || want[0].has(a)) && (want[1].empty() || want[1].has(b)); };
  auto fits = [&](const Candidate& k) {
    return !(known >> k.component & 1) && nsrc >= k.min_len && nsrc <= k.max_len && k.early_reject.subset_of(src_ops) && (k.dts.any() || k.dts.has(u.dtype())) &&
           (srcs_fit(k.src01, op0, op1) || (k.any_order && srcs_fit(k.src01, op1, op0)));
  };
  while (c != end && !fits(*c)) ++c;
  if (c == end) { u.get()->fixed_for |= pure_mask_; return {}; }  // often: no match state to set up
  CaptureSlots slots;
  MatchState st{slots.p};
  st.m.root_ = &u, st.m.slots = slots.p;
  for (; c != end; ++c) {
    if (!fits(*c)) continue;
    const Rule& rule = rules_[c->rule];
    const RuleInfo& info = (*infos_)[c->rule];
    st.fn = &rule.fn, st.m.ctx_names = &info, st.m.ctx_ = c->component == NO_COMPONENT ? ctx : nullptr;
    try {
      if (match_one(rule.pat.get(), u.get(), nullptr, st) && st.result != u) return std::move(st.result);
    } catch (...) {
      for (int id : info.ids) slots.p[id] = nullptr;  // the bindings the throw skipped undoing
      throw;
    }
  }
  u.get()->fixed_for |= pure_mask_;
  return {};
}

// ***** 4. graph_rewrite *****

const UOp& bottom_up_gate() {
  static const UOp* g = new UOp(UOp::make(Ops::NOOP, dtypes::void_, {}, Arg(), Arg(std::string("bottom_up_gate"))));  // never freed
  return *g;
}

namespace {
struct RewriteContext {
  const PatternMatcher* pm = nullptr;
  const PatternMatcher* bpm = nullptr;
  void* ctx = nullptr;
  bool enter_calls = false;
  // keys are handles, not raw pointers: a node built and dropped during the rewrite must not have its address reused.
  // A node's result once it is done; unified_rewrite marks a node it has queued with an empty UOp
  NodeMap<UOp> replace;
  NodeMap<UOp> bpm_cache;  // empty UOp = no rewrite
  struct Entry { UOp n; int stage; UOp new_n; };
  std::vector<Entry> stack;
  // the entries waiting for a node's result: linked lists through one pooled vector (no allocation per waited-on node)
  struct Waiter { Entry e; int32_t next; };
  std::vector<Waiter> waiters;
  NodeMap<std::pair<int32_t, int32_t>> waitlist;  // node -> (first, last) index into waiters; first is -1 once released
  std::vector<UOp> tmp, fp_seen;
  // the ops a rule of pm or bpm matches: a subgraph with none of them stays as it is and is not visited. Not with a
  // ctx the rules may write to: skipping changes the order of the waits, so of the rules (a ctx may count calls)
  OpSet active;
  bool ctx_read_only = false;
  void set_active() {
    if (ctx && !ctx_read_only) active.w[0] = active.w[1] = ~uint64_t(0);
    else active = (pm ? pm->ops() : OpSet{}) | (bpm ? bpm->ops() : OpSet{});
  }
  void clear() {
    replace.clear(), bpm_cache.clear(), waitlist.clear(), waiters.clear(), stack.clear(), tmp.clear(), fp_seen.clear();
  }
  UOp* result(const UOp& n) {
    UOp* r = replace.find(n);
    return r && *r ? r : nullptr;
  }
  void wait(const UOp& on, Entry e) {
    waiters.push_back({std::move(e), -1});
    int32_t i = int32_t(waiters.size() - 1);
    auto [w, fresh] = waitlist.try_emplace(on);
    if (fresh || w->first < 0) *w = {i, i};
    else waiters[size_t(w->second)].next = i, w->second = i;
  }

  UOp cached_bpm_rewrite(const UOp& x) {
    if (UOp* r = bpm_cache.find(x)) return *r;
    UOp r = bpm->rewrite(x, ctx);
    bpm_cache[x] = r;
    return r;
  }

  // a port of tinygrad's unified_rewrite: stage 0 visits (bottom-up rewrite, push sources), stage 1 rebuilds from
  // rewritten sources and applies the top-down matcher, stage 2 links a node to the result of its replacement
  UOp unified_rewrite(const UOp& root) {
    set_active();
    if (!root.get()->ops_below.intersects(active)) return root;
    stack.push_back({root, 0, {}});
    replace.try_emplace(root);
    auto done = [&](const UOp& n, UOp r) {
      replace[n] = std::move(r);
      if (auto* w = waitlist.find(n); w && w->first >= 0) {
        for (int32_t i = w->first; i >= 0; i = waiters[size_t(i)].next) stack.push_back(std::move(waiters[size_t(i)].e));
        w->first = -1;
      }
    };
    while (!stack.empty()) {
      if (stack.size() > 250000) throw Error("infinite loop in graph_rewrite (stack too big)");
      Entry e = std::move(stack.back());
      stack.pop_back();
      if (result(e.n)) continue;
      if (e.stage == 0) {
        UOp new_n = e.n;
        if (bpm) {
          fp_seen.clear();  // fixed-point chains are short: a reused vector, not a hash set per node
          UOp test_n = e.n;
          std::optional<UOp> gate;
          try {
            while (test_n) {
              if (std::find(fp_seen.begin(), fp_seen.end(), test_n) != fp_seen.end()) throw Error("infinite loop in fixed_point_rewrite");
              fp_seen.push_back(test_n);
              new_n = test_n;
              test_n = cached_bpm_rewrite(test_n);
              if (test_n == bottom_up_gate()) { gate = UOp(); break; }
            }
          } catch (BottomUpGate& g) {
            gate = g.result;
          }
          if (gate) {
            // the gate's result is final: it is not descended into, nor rewritten again when a parent is rebuilt
            UOp r = *gate ? *gate : new_n;
            if (r != e.n && !result(r)) replace[r] = r;
            done(e.n, r);
            continue;
          }
        }
        if (!enter_calls && is_opaque_call(new_n)) replace[new_n.src(0)] = new_n.src(0);
        std::span<const UOp> srcs = new_n.src();  // the node outlives the loop: the stack entry below holds it
        stack.push_back({std::move(e.n), 1, std::move(new_n)});
        for (size_t i = srcs.size(); i-- > 0;) {
          auto [r, fresh] = replace.try_emplace(srcs[i]);
          if (!fresh) continue;  // queued already, or done
          if (!srcs[i].get()->ops_below.intersects(active)) *r = srcs[i];
          else stack.push_back({srcs[i], 0, {}});
        }
      } else if (e.stage == 1) {
        bool changed = false;
        const UOp* missing = nullptr;
        for (auto& x : e.new_n.src()) {
          UOp* r = result(x);
          if (!r) { missing = &x; break; }
          changed |= *r != x;
        }
        if (missing) { wait(*missing, std::move(e)); continue; }
        UOp new_src_n;
        if (!changed) {
          if (!pm || !(new_src_n = pm->rewrite(e.new_n, ctx))) { done(e.n, e.new_n); continue; }
        } else {
          tmp.clear();
          for (auto& x : e.new_n.src()) tmp.push_back(*result(x));
          new_src_n = rebuild(e.new_n, tmp);
        }
        stack.push_back({std::move(e.n), 2, new_src_n});
        // a rebuilt node's sources are all done: without a bottom-up matcher its visit (stage 0) would only queue stage 1
        if (changed && !bpm) stack.push_back({new_src_n, 1, new_src_n});
        else stack.push_back({new_src_n, 0, {}});
      } else {
        if (UOp* r = result(e.new_n)) done(e.n, *r);
        else wait(e.new_n, {e.n, 2, e.new_n});
      }
    }
    UOp* r = result(root);
    if (!r) throw Error("graph_rewrite did not finish: a rule's replacement contains the node it replaces (" + std::string(op_name(root.op())) + " root)");
    return *r;
  }

  // tinygrad's walk_rewrite: each node once, bottom-up results are not descended into, top-down results are final
  UOp walk_rewrite(const UOp& root) {
    set_active();
    std::vector<std::pair<UOp, bool>> work{{root, false}};
    while (!work.empty()) {
      auto [n, processed] = std::move(work.back());
      work.pop_back();
      if (replace.contains(n)) continue;
      if (!n.get()->ops_below.intersects(active)) { replace[n] = n; continue; }
      if (!processed) {
        if (bpm) {
          if (UOp r = cached_bpm_rewrite(n)) { replace[n] = r == bottom_up_gate() ? n : r; continue; }
        }
        work.push_back({n, true});
        if (!enter_calls && is_opaque_call(n)) replace[n.src(0)] = n.src(0);
        for (size_t i = n.src().size(); i-- > 0;)
          if (!replace.contains(n.src(i))) work.push_back({n.src(i), false});
      } else {
        tmp.clear();
        bool changed = false;
        for (auto& x : n.src()) {
          UOp* r = replace.find(x);
          tmp.push_back(r ? *r : x);
          changed |= tmp.back() != x;
        }
        UOp new_n = changed ? rebuild(n, tmp) : n;
        if (pm) { if (UOp r = pm->rewrite(new_n, ctx)) new_n = r; }
        replace[n] = new_n;
      }
    }
    return *replace.find(root);
  }

  // unified_rewrite with a dictionary for its bottom-up matcher, without the matching: a node's replacement is looked up
  // again to a fixed point, and a node rebuilt from replaced sources is visited again
  UOp substitute(const UOp& root, const std::unordered_map<UOp, UOp>& dvars) {
    auto lookup = [&](UOp n) {
      fp_seen.clear();
      for (auto it = dvars.find(n); it != dvars.end() && it->second != n; it = dvars.find(n)) {
        if (std::find(fp_seen.begin(), fp_seen.end(), n) != fp_seen.end()) throw Error("infinite loop in fixed_point_rewrite");
        fp_seen.push_back(n);
        n = it->second;
      }
      return n;
    };
    stack.push_back({root, 0, {}});
    while (!stack.empty()) {
      if (stack.size() > 250000) throw Error("infinite loop in substitute (stack too big)");
      Entry e = std::move(stack.back());
      stack.pop_back();
      if (e.stage == 0) {
        if (replace.find(e.n)) continue;
        UOp m = lookup(e.n);
        if (!enter_calls && is_opaque_call(m)) replace[m.src(0)] = m.src(0);
        stack.push_back({e.n, 1, m});
        for (size_t i = m.src().size(); i-- > 0;)
          if (!replace.find(m.src(i))) stack.push_back({m.src(i), 0, {}});
      } else if (e.stage == 1) {
        tmp.clear();
        bool changed = false;
        for (auto& x : e.new_n.src()) tmp.push_back(*replace.find(x)), changed |= tmp.back() != x;  // sources finish first
        if (!changed) { replace[e.n] = e.new_n; continue; }
        UOp r = rebuild(e.new_n, tmp);
        stack.push_back({e.n, 2, r});
        stack.push_back({r, 0, {}});
      } else {
        UOp r = *replace.find(e.new_n);
        replace[e.n] = std::move(r);
      }
    }
    return *replace.find(root);
  }

  // rebuild with new sources; the dtype is re-derived only when a source dtype changed
  static UOp rebuild(const UOp& n, const std::vector<UOp>& new_src) {
    DType dt = n.dtype();
    bool same = true;
    for (size_t i = 0; i < new_src.size(); i++) same &= new_src[i].dtype() == n.src(i).dtype();
    if (!same) dt = dtype_from_uop(n.op(), new_src, n.arg()).value_or(n.dtype());
    return UOp::make(n.op(), dt, new_src, n.arg(), n.tag());
  }
};

// rewrites nest (a rule may simplify a subexpression): contexts come from a per-thread pool so their tables are reused
template <class F> UOp with_context(F&& f) {
  static thread_local std::vector<std::unique_ptr<RewriteContext>> pool;
  std::unique_ptr<RewriteContext> rc;
  if (pool.empty()) rc = std::make_unique<RewriteContext>();
  else rc = std::move(pool.back()), pool.pop_back();
  struct Return {
    std::unique_ptr<RewriteContext>& rc;
    ~Return() { rc->clear(); pool.push_back(std::move(rc)); }
  } ret{rc};
  return f(*rc);
}

// a ctx-free top-down matcher gives a node the same result in every rewrite, so rewrites with share_memo (simplify) keep
// their memo until the outermost rewrite or SharedMemoScope ends: a subexpression met again is not rewritten again
struct SharedMemo { const PatternMatcher* pm; std::unique_ptr<RewriteContext> rc; bool busy = false; };
thread_local int rewrite_depth = 0;
thread_local std::vector<SharedMemo> shared_memos;
SharedMemo* shared_memo(const PatternMatcher& pm) {
  auto it = std::find_if(shared_memos.begin(), shared_memos.end(), [&](auto& m) { return m.pm == &pm; });
  if (it == shared_memos.end()) it = shared_memos.insert(it, {&pm, std::make_unique<RewriteContext>()}), it->rc->pm = &pm;
  return it->busy ? nullptr : &*it;  // a rule of pm's rewriting with pm again gets a fresh context
}
UOp shared_rewrite(SharedMemo& m, const UOp& sink) {
  m.busy = true;
  try {
    UOp r = m.rc->unified_rewrite(sink);
    m.busy = false, m.rc->waiters.clear(), m.rc->waitlist.clear();  // every wait was released: only the results stay
    if (m.rc->replace.size() > (1u << 14)) m.rc->clear();
    return r;
  } catch (...) {
    m.busy = false, m.rc->clear();
    throw;
  }
}
}  // namespace

SharedMemoScope::SharedMemoScope() { rewrite_depth++; }
SharedMemoScope::~SharedMemoScope() { if (--rewrite_depth == 0) for (auto& m : shared_memos) m.rc->clear(); }

UOp graph_rewrite(const UOp& sink, const PatternMatcher& pm, RewriteOpts opts) {
  SharedMemoScope scope;
  if (opts.share_memo && !opts.bottom_up && !opts.bpm && !opts.ctx && !opts.walk && !opts.enter_calls)
    if (SharedMemo* m = shared_memo(pm)) return shared_rewrite(*m, sink);
  return with_context([&](RewriteContext& rc) {
    rc.pm = opts.bottom_up ? nullptr : &pm, rc.bpm = opts.bottom_up ? &pm : opts.bpm, rc.ctx = opts.ctx, rc.enter_calls = opts.enter_calls;
    rc.ctx_read_only = opts.ctx_read_only;
    return opts.walk ? rc.walk_rewrite(sink) : rc.unified_rewrite(sink);
  });
}

UOp substitute_rewrite(const UOp& sink, const std::unordered_map<UOp, UOp>& dvars, bool enter_calls) {
  if (dvars.empty()) return sink;
  return with_context([&](RewriteContext& rc) {
    rc.pm = rc.bpm = nullptr, rc.ctx = nullptr, rc.enter_calls = enter_calls;
    return rc.substitute(sink, dvars);
  });
}

bool is_opaque_call(const UOp& u) {
  static const OpSet bodies{Ops::SINK, Ops::PROGRAM, Ops::LINEAR, Ops::COPY, Ops::CUSTOM_FUNCTION};
  return u.op() == Ops::FUNCTION || (u.op() == Ops::CALL && u.src().size() && bodies.has(u.src(0).op()));
}

}  // namespace tg
