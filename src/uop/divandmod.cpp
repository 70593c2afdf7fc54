// Division and modulo folding of index expressions (tinygrad's uop/divandmod.py).
#include <algorithm>
#include <numeric>

#include "uop/nodemap.h"
#include "uop/symbolic.h"

namespace tg {

namespace {
int64_t fdiv(int64_t a, int64_t b) { int64_t q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
int64_t fmod(int64_t a, int64_t b) { return a - fdiv(a, b) * b; }
int64_t iv(const ConstVal& c) { return c.as_int(); }
// Python's sum(): 0 + a + b + ...
UOp pysum(const std::vector<UOp>& l) {
  if (l.empty()) return {};
  UOp r = lit(0) + l[0];
  for (size_t i = 1; i < l.size(); i++) r = r + l[i];
  return r;
}
UOp usum(const std::vector<UOp>& l) { return l[0].usum(std::span<const UOp>(l).subspan(1)); }

// iteration order of a CPython set of small non-negative ints (the rule tries divisors in that order)
std::vector<int64_t> pyset_order(const std::vector<int64_t>& inserted) {
  std::vector<int64_t> uniq;
  for (auto v : inserted) if (std::find(uniq.begin(), uniq.end(), v) == uniq.end()) uniq.push_back(v);
  size_t size = uniq.size() >= 5 ? 32 : 8;
  std::vector<std::optional<int64_t>> table(size);
  for (auto v : uniq) {
    size_t i = size_t(v) & (size - 1);
    while (table[i]) i = (i + 1) & (size - 1);
    table[i] = v;
  }
  std::vector<int64_t> out;
  for (auto& t : table) if (t) out.push_back(*t);
  return out;
}
size_t backward_slice_len(const UOp& u) { return u.topo_nodes().size() - 1; }
}  // namespace

namespace {
UOp fold_divmod_uncached(const UOp& d);
}

// memoized as tinygrad memoizes it; the memo is bounded so a long-running program does not hold nodes forever
UOp fold_divmod_general(const UOp& d) {
  static NodeMap<std::optional<UOp>> memo(4096);
  if (auto* r = memo.find(d); r && *r) return **r;
  UOp r = fold_divmod_uncached(d);
  if (memo.size() > 65536) memo = NodeMap<std::optional<UOp>>(4096);
  memo[d] = r;
  return r;
}

namespace {
UOp fold_divmod_uncached(const UOp& d) {
  const UOp &x = d.src(0), &y = d.src(1);
  bool is_mod = d.op() == Ops::FLOORMOD;
  if (y.vmin() == ConstVal(0) && y.vmax() == ConstVal(0))
    throw Error(std::string(is_mod ? "Mod" : "Division") + " by zero trying to rewrite " + d.render(false));
  UOp xdiv = x / y;
  if (xdiv.vmin() == xdiv.vmax()) return is_mod ? x - xdiv.vmin().as_int() * y : xdiv.const_like(xdiv.vmin());
  if (x.op() == Ops::PARAM && y.op() == Ops::CONST && x.arg().param().multiple_of && *x.arg().param().multiple_of % iv(y.val()) == 0)
    return is_mod ? d.const_like(int64_t(0)) : UOp();

  auto [x_peeled, const_v] = x.pop_const();
  int64_t cst = iv(const_v);
  std::vector<UOp> uops_no_const = x_peeled.split_uop(Ops::ADD);

  if (y.op() == Ops::CONST && iv(y.val()) > 0) {
    int64_t c = iv(y.val());
    // nested div: (x%(k*c))//c -> (x//c)%k
    if (!is_mod && x.op() == Ops::FLOORMOD)
      if (UOp k = x.src(1).divides(c); k && k.op() == Ops::CONST && iv(k.val()) > 0) return (x.src(0) / y) % k;
    // remove nested mod in a sum: (a%4 + b)%2 -> (a+b)%2
    if (is_mod) {
      std::vector<UOp> new_xs;
      bool changed = false;
      for (auto u : uops_no_const) {
        if (u.op() == Ops::FLOORMOD && u.src(1).divides(c)) { u = u.src(0); changed = true; }
        new_xs.push_back(u);
      }
      if (changed) return (usum(new_xs) + cst) % y;
    }
    std::vector<UOp> terms;
    std::vector<int64_t> factors;
    for (auto& u : uops_no_const) {
      int64_t f = u.const_factor();
      terms.push_back(u.divides(f));
      factors.push_back(f);
    }
    // congruence: fold if x is congruent to an expression whose range lies within one period of c
    std::vector<std::vector<int64_t>> rem_choices;
    for (auto f : factors) {
      int64_t r = fmod(f, c);
      if (r * 2 == c || terms.size() == 1) rem_choices.push_back({r, r - c});
      else rem_choices.push_back({std::abs(r) <= std::abs(r - c) ? r : r - c});
    }
    std::vector<size_t> pick(factors.size(), 0);
    for (bool more = true; more;) {
      std::vector<UOp> parts;
      for (size_t i = 0; i < terms.size(); i++) parts.push_back(rem_choices[i][pick[i]] * terms[i]);
      UOp rem = (parts.empty() ? lit(0) : pysum(parts)) + fmod(cst, c);
      if (fdiv(iv(rem.vmin()), c) == fdiv(iv(rem.vmax()), c)) {
        if (is_mod) return rem - fdiv(iv(rem.vmin()), c) * c;
        std::vector<UOp> q;
        for (size_t i = 0; i < terms.size(); i++) q.push_back(fdiv(factors[i] - rem_choices[i][pick[i]], c) * terms[i]);
        return (q.empty() ? lit(0) : pysum(q)) + fdiv(cst, c) + fdiv(iv(rem.vmin()), c);
      }
      // itertools.product order: the last position varies fastest
      more = false;
      for (size_t i = pick.size(); i-- > 0;) {
        if (++pick[i] < rem_choices[i].size()) { more = true; break; }
        pick[i] = 0;
      }
    }
    // gcd with remainder: factor a common gcd out of the numerator
    int64_t g = c;
    for (auto f : factors) g = std::gcd(g, f);
    if (g > 1) {
      UOp new_x = x_peeled.divides(g).simplify() + fmod(fdiv(cst, g), c / g);
      if (!(new_x.vmin() < ConstVal(0))) {
        if (is_mod) return new_x % (c / g) * g + fmod(cst, g);
        return new_x / (c / g) + fdiv(cst, c);
      }
    }
    // nest by factor: x//c -> (x//f)//(c//f), x%c -> (x//f%(c//f))*f + x%f
    std::vector<int64_t> divs;
    for (size_t i = 0; i < uops_no_const.size(); i++) {
      int64_t f = std::abs(factors[i]);
      if (uops_no_const[i].op() != Ops::CONST && 1 < f && f < c && c % factors[i] == 0) divs.push_back(f);
    }
    std::optional<std::pair<size_t, UOp>> best;
    for (int64_t div : pyset_order(divs)) {
      UOp newxs = fold_divmod_general(x / div);
      if (!newxs) continue;
      std::optional<std::pair<size_t, UOp>> cand;
      if (!is_mod) {
        UOp r = newxs / (c / div);
        cand = {backward_slice_len(newxs), r};
      } else if (!(x.vmin() < ConstVal(0)) && !(newxs.vmin() < ConstVal(0))) {
        std::vector<UOp> b_parts;
        for (size_t i = 0; i < factors.size(); i++) if (fmod(factors[i], div)) b_parts.push_back(fmod(factors[i], div) * terms[i]);
        if (fmod(cst, div)) b_parts.push_back(x.const_like(fmod(cst, div)));
        UOp b = b_parts.empty() ? x.const_like(int64_t(0)) : usum(b_parts);
        if (!(b.vmin() < ConstVal(0)) && b.vmax() < ConstVal(div)) {
          UOp r = (newxs % x.ufix(c / div)) * div + b;
          cand = {backward_slice_len(r), r};
        }
      }
      if (cand && (!best || cand->first < best->first)) best = cand;
    }
    if (best) return best->second;
  }

  // variable denominator / fallback rules
  std::vector<UOp> all_uops = x.split_uop(Ops::ADD);
  std::vector<UOp> gsrc = all_uops;
  gsrc.push_back(y);
  UOp gcd = UOp::gcd(gsrc).simplify();
  if (!(gcd.op() == Ops::CONST && gcd.val() == ConstVal(1))) {
    UOp xe = x.divide_exact(gcd), ye = y.divide_exact(gcd);
    if (!xe || !ye) return {};
    UOp ret = xe.alu(d.op(), {ye});
    return is_mod ? ret * gcd : ret;
  }
  // factor remainder: (d*x+y)//d -> x+y//d
  if (y.vmin() < ConstVal(0) || x.vmin() < ConstVal(0)) return {};
  std::vector<UOp> quo, rem;
  for (auto& u : all_uops) {
    if (UOp q = u.divide_exact(y)) { quo.push_back(q); continue; }
    if (y.op() == Ops::CONST) {
      int64_t c = u.const_factor(), yv = iv(y.val());
      if (fmod(c, yv) != c) {
        rem.push_back(u.divides(c) * fmod(c, yv));
        quo.push_back(is_mod ? u.const_like(int64_t(0)) : u.divides(c) * fdiv(c, yv));
        continue;
      }
    }
    rem.push_back(u);
  }
  if (quo.empty()) return {};
  UOp new_x = (rem.empty() ? lit(0) + x.const_like(int64_t(0)) : pysum(rem) + x.const_like(int64_t(0)));
  if (new_x.vmin() < ConstVal(0)) return {};
  return is_mod ? new_x % y : new_x / y + pysum(quo);
}
}  // namespace

const PatternMatcher& div_and_mod_symbolic() {
  static const PatternMatcher pm = PatternMatcher{
    // (x//c+a)//d -> (x+a*c)//(c*d) for d>0
    ((UPat::var("x") / UPat::cvar("c") + UPat::cvar("a")) / UPat::cvar("d")) >> [](M m) {
      return ConstVal(0) < m["d"].vmin() ? (m["x"] + m["a"] * m["c"]) / (m["c"] * m["d"]) : UOp();
    },
    // (x+c)//d -> (x+c%d)//d + c//d ; (x+c)%d -> (x+c%d)%d
    UPat(OpSet{Ops::FLOORDIV, Ops::FLOORMOD}, {}, {UPat::var("x", dtypes::weakint) + UPat::cvar("c"), UPat::cvar("d")}, {}, "n") >> [](M m) {
      int64_t c = iv(m["c"].val()), d = iv(m["d"].val());
      if (d == 0 || fmod(c, d) == c) return UOp();
      if (m["n"].op() == Ops::FLOORDIV) return (m["x"] + fmod(c, d)) / m["d"] + fdiv(c, d);
      return (m["x"] + fmod(c, d)) % m["d"];
    },
    UPat(OpSet{Ops::FLOORDIV, Ops::FLOORMOD}, dtypes::weakint, {}, {}, "d") >> [](M m) { return fold_divmod_general(m["d"]); },
  }.pure();
  return pm;
}

}  // namespace tg
