// tg::sint over the UOp IR: an int, or a weakint UOp (tinygrad's sint = int | UOp). Variables are tinygrad's: a 0-d
// ALU BUFFER with a value range; a bound one is AFTER(var, STORE(var, CONST)) (uop/tensor_uop.cpp).
#include "tg/sint.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "tensor/sint_impl.h"
#include "uop/movement.h"

namespace tg {

UOp to_uop(const sint& s) { return s.is_int() ? UOp::const_(s.as_int()) : UOp(s.node()); }
sint to_sint(const UOp& u) {
  if (u.op() == Ops::CONST && u.val().is_int()) return sint(u.val().i);
  if (!u.dtype().is_int() && u.dtype() != dtypes::bool_) throw Error("sint: a " + std::string(u.dtype().name()) + " value is not an int");
  return sint(u.get());
}
SShape to_sshape(const SymShape& s) {
  SShape r;
  for (auto& d : s) r.push_back(to_uop(d));
  return r;
}
SymShape to_symshape(const SShape& s) {
  SymShape r;
  for (auto& d : s) r.push_back(to_sint(d));
  return r;
}
std::vector<std::pair<UOp, UOp>> to_upairs(const SymPairs& p) {
  std::vector<std::pair<UOp, UOp>> r;
  for (auto& [a, b] : p) r.push_back({to_uop(a), to_uop(b)});
  return r;
}

sint::sint(const UOpNode* node) {
  UOp u(node);
  if (u.op() == Ops::CONST && u.val().is_int()) v_ = u.val().i;
  else n_ = node, node->rc++;
}
sint::sint(const sint& o) : v_(o.v_), n_(o.n_) { if (n_) n_->rc++; }
sint::~sint() { if (n_ && --n_->rc == 0) release_uop(n_); }

int64_t sint::as_int() const {
  if (n_) throw Error("sint: " + render() + " is symbolic, not an int");
  return v_;
}
int64_t sint::vmin() const { return n_ ? to_uop(*this).vmin().i : v_; }
int64_t sint::vmax() const { return n_ ? to_uop(*this).vmax().i : v_; }
std::string sint::render() const { return n_ ? strip_parens(to_uop(*this).render(false)) : std::to_string(v_); }
bool sint::is_variable() const { return n_ && to_uop(*this).is_variable(); }
bool sint::is_bound() const { return n_ && to_uop(*this).is_bound_var(); }
std::string sint::name() const {
  if (!is_variable() && !is_bound()) throw Error("sint: " + render() + " is not a Variable");
  UOp u = to_uop(*this);
  return (u.op() == Ops::AFTER ? u.src(0) : u).arg().param().name.value_or("");
}
sint sint::bind(int64_t val) const {
  if (!is_variable()) throw Error("bind: " + render() + " is not an unbound Variable");
  return sint(to_uop(*this).bind(val).get());
}
std::pair<sint, int64_t> sint::unbind() const {
  if (!is_bound()) throw Error("unbind: " + render() + " is not a bound Variable");
  auto [v, i] = to_uop(*this).unbind();
  return {sint(v.get()), i};
}

sint Variable(const std::string& name, int64_t min_val, int64_t max_val) {
  if (name.empty()) throw Error("Variable: a Variable needs a name");
  return sint(UOp::variable(name, min_val, max_val).get());
}

namespace {
// ints stay ints (Python's int math); anything symbolic is simplified
sint sym(const UOp& u) { return to_sint(u.simplify()); }
}  // namespace

sint operator+(const sint& a, const sint& b) { return a.is_int() && b.is_int() ? sint(a.as_int() + b.as_int()) : sym(to_uop(a) + to_uop(b)); }
sint operator-(const sint& a, const sint& b) { return a.is_int() && b.is_int() ? sint(a.as_int() - b.as_int()) : sym(to_uop(a) - to_uop(b)); }
sint operator*(const sint& a, const sint& b) { return a.is_int() && b.is_int() ? sint(a.as_int() * b.as_int()) : sym(to_uop(a) * to_uop(b)); }
sint operator/(const sint& a, const sint& b) {
  if (b.is_int() && b.as_int() == 0) throw Error("sint: division by zero");
  return sym(to_uop(a) / to_uop(b));
}
sint operator%(const sint& a, const sint& b) {
  if (b.is_int() && b.as_int() == 0) throw Error("sint: modulo by zero");
  return sym(to_uop(a) % to_uop(b));
}
sint operator-(const sint& a) { return sint(0) - a; }
sint smax(const sint& a, const sint& b) { return sym(to_uop(a).maximum(to_uop(b))); }
sint smin(const sint& a, const sint& b) { return sym(to_uop(a).minimum(to_uop(b))); }
sint operator<(const sint& a, const sint& b) { return sym(to_uop(a) < to_uop(b)); }
sint operator>(const sint& a, const sint& b) { return sym(to_uop(a) > to_uop(b)); }
sint operator<=(const sint& a, const sint& b) { return sym(to_uop(a) <= to_uop(b)); }
sint operator>=(const sint& a, const sint& b) { return sym(to_uop(a) >= to_uop(b)); }
sint sym_eq(const sint& a, const sint& b) { return sym(to_uop(a).eq(to_uop(b))); }
sint sym_ne(const sint& a, const sint& b) { return sym(to_uop(a).ne(to_uop(b))); }

bool resolve(const sint& x, bool otherwise) {
  if (x.is_int()) return x.as_int() != 0;
  UOp u = to_uop(x);
  ConstVal lo = u.vmin(), hi = u.vmax();
  if (lo.same(hi)) return lo.truthy();
  if (u.dtype() == dtypes::bool_) return otherwise;
  return (lo.i > 0 || hi.i < 0) ? true : otherwise;
}

bool operator==(const sint& a, const sint& b) { return a.is_int() && b.is_int() ? a.as_int() == b.as_int() : a.node() == b.node(); }

int64_t sym_infer(const sint& x, const std::vector<std::pair<std::string, int64_t>>& vals) {
  if (x.is_int()) return x.as_int();
  UOp u = to_uop(x);
  std::unordered_map<UOp, ConstVal> env;
  std::vector<UOp> topo = u.toposort();
  std::unordered_set<UOp> bound;  // Variables seen through their bind: its value is used
  for (auto& n : topo) if (n.is_bound_var()) bound.insert(n.src(0));
  for (auto& n : topo) {
    if (n.is_bound_var()) env[n] = ConstVal(n.unbind().second);
    else if (n.is_variable() && !bound.contains(n)) {
      const std::string& nm = n.arg().param().name.value_or("");
      auto it = std::find_if(vals.begin(), vals.end(), [&](auto& kv) { return kv.first == nm; });
      if (it == vals.end()) throw Error("sym_infer: no value for Variable '" + nm + "' in " + x.render());
      env[n] = ConstVal(it->second);
    }
  }
  // binds are leaves here: their STORE and CONST are not evaluated
  std::unordered_map<UOp, UOp> sub;
  for (auto& [k, v] : env) sub[k] = UOp::const_(v.i);
  UOp folded = u.substitute(sub).simplify();
  if (folded.op() != Ops::CONST) throw Error("sym_infer: " + x.render() + " does not fold to an int");
  return folded.val().i;
}

std::optional<std::vector<int64_t>> SymShape::ints() const {
  std::vector<int64_t> r;
  for (auto& d : *this) {
    if (!d.is_int()) return std::nullopt;
    r.push_back(d.as_int());
  }
  return r;
}
std::string SymShape::str() const { return sym_shape_str(to_sshape(*this)); }

std::optional<std::vector<std::pair<int64_t, int64_t>>> SymPairs::ints() const {
  std::vector<std::pair<int64_t, int64_t>> r;
  for (auto& [a, b] : *this) {
    if (!a.is_int() || !b.is_int()) return std::nullopt;
    r.push_back({a.as_int(), b.as_int()});
  }
  return r;
}

}  // namespace tg
