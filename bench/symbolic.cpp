// Symbolic-simplification benchmark: UOp::simplify() over a fixed, seeded set of random index expressions.
//
//   build/bench/symbolic [--n 10000] [--seed 1234] [--dump FILE]
//
// The expressions look like the index math rangeify produces: sums of ranges times constant strides plus offsets,
// then // and % by constants (sometimes by a variable), nested, with the odd comparison, .ne, .where and .maximum.
// Each is generated as DSL text (Python syntax, fully parenthesized; see tests/uop/expr_parser.h) over RANGE
// variables r0..r5 (ends 2..64) and a couple of var(lo,hi) variables, and is built by parsing that text, so the
// graph is exactly the one Python's operators build from the same line in bench/symbolic_tinygrad.py.
// Expressions are distinct: duplicates (same unsimplified render) are dropped while generating.
//
// Timing: all expressions are built first (untimed); the rule tables are constructed before the clock starts (as
// importing tinygrad.uop.symbolic does on the Python side); then one simplify() per expression is timed, with no
// warm-up pass on either side. Freeing the results is timed too (Python frees each result as it goes).
// --dump FILE writes `vars | expr` lines for bench/symbolic_tinygrad.py (bench/run_symbolic.sh runs both).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "../tests/uop/expr_parser.h"
#include "uop/symbolic.h"

namespace {

struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  int64_t range(int64_t lo, int64_t hi) { return lo + int64_t(next() % uint64_t(hi - lo + 1)); }  // inclusive
  bool chance(double p) { return double(next() >> 11) * 0x1.0p-53 < p; }
  template <class T> const T& pick(const std::vector<T>& v) { return v[next() % v.size()]; }
};

struct VarInfo {
  std::string name, decl;
  bool is_range;
  int64_t lo, hi;
};

// one expression's generator: a pool of variables, and a recursive builder of DSL text
class ExprGen {
 public:
  explicit ExprGen(Rng& r) : rng(r) {
    static const std::vector<int64_t> ends{2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 24, 32, 48, 64};
    int nr = int(rng.range(1, 6));
    std::vector<int> axes{0, 1, 2, 3, 4, 5};
    for (int i = 0; i < nr; i++) {
      int k = int(rng.range(i, 5));
      std::swap(axes[i], axes[k]);
      int64_t end = rng.pick(ends);
      std::string n = "r";
      n += std::to_string(axes[i]);
      vars.push_back({n, n + "=range(" + std::to_string(end) + "," + std::to_string(axes[i]) + ")", true, 0, end - 1});
    }
    int nv = int(rng.range(0, 2));
    static const char* names[] = {"a", "b"};
    for (int i = 0; i < nv; i++) {
      int64_t lo = rng.chance(0.7) ? 1 : 0, hi = lo + rng.range(1, 31);
      std::string n = names[i];
      vars.push_back({n, n + "=var(" + std::to_string(lo) + "," + std::to_string(hi) + ")", false, lo, hi});
    }
    used.assign(vars.size(), false);
  }

  std::string top(int depth) {
    if (!rng.chance(0.1)) return index(depth);
    std::string x = index(depth - 1), k = cst(1, 64);
    return "(" + x + "<" + k + ")";
  }

  std::string vars_spec() const {
    std::string s;
    for (size_t i = 0; i < vars.size(); i++)
      if (used[i]) s += (s.empty() ? "" : " ") + vars[i].decl;
    return s.empty() ? "-" : s;
  }

 private:
  Rng& rng;
  std::vector<VarInfo> vars;
  std::vector<bool> used;

  std::string var_name(bool want_positive = false) {
    std::vector<size_t> cand;
    for (size_t i = 0; i < vars.size(); i++)
      if (!want_positive || (!vars[i].is_range && vars[i].lo >= 1)) cand.push_back(i);
    if (cand.empty()) return {};
    size_t i = rng.pick(cand);
    used[i] = true;
    return vars[i].name;
  }
  std::string ranged() {  // prefer ranges, as real index math does
    std::vector<size_t> rs;
    for (size_t i = 0; i < vars.size(); i++) if (vars[i].is_range) rs.push_back(i);
    if (rng.chance(0.85) && !rs.empty()) { size_t i = rng.pick(rs); used[i] = true; return vars[i].name; }
    return var_name();
  }
  std::string cst(int64_t lo, int64_t hi) { return std::to_string(rng.range(lo, hi)); }
  std::string stride() {
    static const std::vector<int64_t> s{2, 3, 4, 5, 6, 8, 9, 12, 16, 24, 32, 48, 64, 128, 256, 512, 1024};
    return std::to_string(rng.pick(s));
  }
  std::string divisor() {
    static const std::vector<int64_t> d{2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32, 64, 128};
    return std::to_string(rng.pick(d));
  }

  std::string leaf() {
    if (rng.chance(0.35)) { std::string v = ranged(), m = stride(); return "(" + v + "*" + m + ")"; }
    return ranged();
  }

  // a sum of strided terms and an offset: the shape of a flattened index
  std::string sum(int depth) {
    int k = int(rng.range(2, depth >= 4 ? 3 : 4));
    std::string s = term(depth);
    for (int i = 1; i < k; i++) { std::string t = term(depth); s = "(" + s + "+" + t + ")"; }
    if (rng.chance(0.4)) { const char* op = rng.chance(0.5) ? "+" : "-"; std::string c = cst(1, 20); s = "(" + s + op + c + ")"; }
    return s;
  }
  std::string term(int depth) {
    if (depth <= 1 || rng.chance(0.45)) return leaf();
    std::string x = index(depth - 1);
    if (rng.chance(0.5)) { std::string m = stride(); return "(" + x + "*" + m + ")"; }
    return x;
  }

  // (every random draw is its own statement: the operands of + are not sequenced, the stream must not depend on it)
  std::string index(int depth) {
    if (depth <= 0) return leaf();
    double r = double(rng.next() >> 11) * 0x1.0p-53;
    auto sub = [&] { return index(depth - 1); };
    if (r < 0.30) return sum(depth);
    std::string x = sub();
    if (r < 0.45) { std::string d = divisor(); return "(" + x + "//" + d + ")"; }
    if (r < 0.60) { std::string d = divisor(); return "(" + x + "%" + d + ")"; }
    if (r < 0.72) { std::string d1 = divisor(), d2 = divisor(); return "((" + x + "//" + d1 + ")%" + d2 + ")"; }
    if (r < 0.78) { std::string m = stride(); return "(" + x + "*" + m + ")"; }
    if (r < 0.84) {  // a variable divisor or modulus
      std::string v = var_name(true);
      if (v.empty()) { std::string d = divisor(); return "(" + x + "//" + d + ")"; }
      return "(" + x + (rng.chance(0.5) ? "//" : "%") + v + ")";
    }
    if (r < 0.89) { std::string y = sub(); return "(" + x + "-" + y + ")"; }
    if (r < 0.96) {  // a gate: comparison or .ne, then .where
      std::string c;
      if (rng.chance(0.7)) { std::string k = cst(1, 64); c = "(" + x + "<" + k + ")"; }
      else { std::string k = cst(0, 16); c = "(" + x + ").ne(" + k + ")"; }
      std::string t = sub();
      std::string f = rng.chance(0.5) ? cst(0, 8) : sub();
      return "(" + c + ".where(" + t + "," + f + "))";
    }
    std::string y = rng.chance(0.5) ? cst(0, 16) : sub();
    return "(" + x + ").maximum(" + y + ")";
  }
};

struct Expr {
  std::string vars, text;
  tg::UOp u;
};

[[noreturn]] void usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s [--n N] [--seed S] [--dump FILE]\n", argv0);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t n = 10000;
  uint64_t seed = 1234;
  std::string dump;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if ((a == "--n" || a == "--seed" || a == "--dump") && i + 1 < argc) {
      std::string v = argv[++i];
      if (a == "--dump") dump = v;
      else {
        char* end = nullptr;
        long long x = std::strtoll(v.c_str(), &end, 10);
        if (!end || *end || x < 0) usage(argv[0]);
        if (a == "--n") n = x;
        else seed = uint64_t(x);
      }
    } else usage(argv[0]);
  }

  // ** generate and build (untimed) **
  Rng rng{seed};
  std::vector<Expr> exprs;
  std::unordered_set<std::string> seen;
  int64_t attempts = 0, nodes_before = 0;
  while (int64_t(exprs.size()) < n) {
    if (++attempts > n * 100 + 1000) { std::fprintf(stderr, "could not generate %lld distinct expressions\n", (long long)n); return 1; }
    ExprGen g(rng);
    int depth = int(rng.range(3, 6));
    std::string text = g.top(depth);
    if (text.size() > 400) continue;  // keep them index-sized
    std::string vs = g.vars_spec();
    tg::UOp u;
    try {
      u = tg::exprdsl::parse_expr(text, tg::exprdsl::parse_vars(vs));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "internal: generated an expression that does not parse: %s | %s\n  %s\n", vs.c_str(), text.c_str(), e.what());
      return 1;
    }
    if (u.op() == tg::Ops::CONST) continue;
    if (!seen.insert(u.render(false)).second) continue;  // distinct expressions only
    nodes_before += int64_t(u.toposort().size());
    exprs.push_back({vs, text, u});
  }

  if (!dump.empty()) {
    std::ofstream out(dump);
    if (!out) { std::fprintf(stderr, "cannot write %s\n", dump.c_str()); return 1; }
    out << "# bench/symbolic.cpp --n " << n << " --seed " << seed << ": vars | expr (Python syntax, fully parenthesized)\n";
    for (auto& e : exprs) out << e.vars << " | " << e.text << "\n";
  }

  // ** time one simplify() per expression **
  (void)tg::symbolic();  // construct the rule tables outside the clock (tinygrad builds them at import)
  std::vector<tg::UOp> results;
  results.reserve(exprs.size());
  using clk = std::chrono::steady_clock;
  auto t0 = clk::now();
  for (auto& e : exprs) results.push_back(e.u.simplify());
  auto t1 = clk::now();
  int64_t nodes_after = 0;
  for (auto& r : results) nodes_after += int64_t(r.toposort().size());  // untimed
  auto t2 = clk::now();
  results.clear();  // freeing the results is timed: Python frees each result as it goes
  auto t3 = clk::now();
  double secs = std::chrono::duration<double>((t1 - t0) + (t3 - t2)).count();
  std::printf("tinygrad.cpp: %zu expressions in %.6f s = %.1f expr/s\n", exprs.size(), secs, double(exprs.size()) / secs);
  std::printf("nodes: %lld before, %lld after simplify (sum of toposort sizes)\n", (long long)nodes_before, (long long)nodes_after);
  return 0;
}
