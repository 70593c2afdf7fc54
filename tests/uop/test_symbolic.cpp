// The symbolic suite: every case of tests/data/symbolic_cases.txt (generated from tinygrad by
// tests/tools/gen_symbolic_cases.py) is built with the expression parser, simplified by our port, and checked:
//   (a) the simplified expression has the same value as the original at sampled points of the variables' domains
//       (all points when the domain is small; for mode `valid` only points where VALID holds; Invalid must match),
//   (b) it has no more nodes than tinygrad's result,
//   (c) (summary) how many render exactly as tinygrad's; at least 80% must.
#include <gtest/gtest.h>

#include <cstdint>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "expr_parser.h"
#include "uop/symbolic.h"

namespace tg::exprdsl {
// gtest names a failing parameter by this, not by a byte dump
inline void PrintTo(const Case& c, std::ostream* os) { *os << "line " << c.line << ": " << c.mode << " | " << c.vars << " | " << c.expr; }
}  // namespace tg::exprdsl

namespace {

using namespace tg;
using tg::exprdsl::Case;
using tg::exprdsl::Vars;

const std::string& case_path() {
  static const std::string p = std::string(TG_TEST_DATA) + "/symbolic_cases.txt";
  return p;
}

std::string& load_error() {
  static std::string e;
  return e;
}

const std::vector<Case>& all_cases() {
  static const std::vector<Case> cases = [] {
    try {
      return exprdsl::load_cases(case_path());
    } catch (const std::exception& e) {
      load_error() = e.what();
      return std::vector<Case>{};
    }
  }();
  return cases;
}

uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

bool same_value(const ConstVal& a, const ConstVal& b) {
  if (a.is_invalid() || b.is_invalid()) return a.is_invalid() && b.is_invalid();
  return a == b;
}

struct Outcome {
  bool built = false;         // parsing and simplification went through
  std::string error;          // why not
  std::string render;         // ours, render(false)
  int64_t nodes = 0;          // ours, toposort size
  int64_t points = 0;         // points checked
  std::vector<std::string> value_errors;
};

constexpr int64_t kExhaustiveMax = 1000;  // domains up to this many points are checked completely
constexpr int kRandomPoints = 200;        // else: both corners and this many random points (that satisfy VALID)
constexpr int kMaxTries = 40000;

Outcome run_case(const Case& c) {
  Outcome out;
  UOp valid, orig, res;
  Vars vars;
  try {
    vars = exprdsl::parse_vars(c.vars);
    if (c.mode == "valid") {
      valid = exprdsl::parse_expr(c.valid_text(), vars);
      orig = exprdsl::parse_expr(c.expr_text(), vars);
    } else {
      orig = exprdsl::parse_expr(c.expr, vars);
    }
  } catch (const std::exception& e) {
    out.error = std::string("building the expression threw: ") + e.what();
    return out;
  }
  try {
    if (c.mode == "symbolic") res = orig.simplify();
    else if (c.mode == "sym") res = graph_rewrite(orig, sym());
    else res = uop_given_valid(valid, orig);
    if (!res) throw Error("the result is an empty UOp");
    out.render = res.render(false);
    out.nodes = int64_t(res.toposort().size());
  } catch (const std::exception& e) {
    out.error = std::string("simplification threw: ") + e.what();
    return out;
  }
  out.built = true;

  // (a) values at points of the domain
  const auto& ds = vars.decls;
  std::unordered_map<UOp, ConstVal> env;
  auto point_str = [&]() {
    std::string s = "{";
    for (size_t i = 0; i < ds.size(); i++) s += (i ? ", " : "") + ds[i].name + "=" + env[ds[i].uop].str();
    return s + "}";
  };
  auto check_point = [&]() -> bool {  // false when VALID does not hold there
    try {
      if (valid && !eval_uop(valid, env).truthy()) return false;
      ConstVal a = eval_uop(orig, env), b = eval_uop(res, env);
      out.points++;
      if (!same_value(a, b) && out.value_errors.size() < 3)
        out.value_errors.push_back("at " + point_str() + ": original " + a.str() + ", simplified " + b.str());
    } catch (const std::exception& e) {
      out.points++;
      if (out.value_errors.size() < 3) out.value_errors.push_back("evaluating at " + point_str() + " threw: " + e.what());
    }
    return true;
  };
  double size = 1;
  for (auto& d : ds) size *= double(d.hi - d.lo + 1);
  if (size <= double(kExhaustiveMax)) {
    std::vector<int64_t> cur;
    for (auto& d : ds) cur.push_back(d.lo);
    while (true) {
      for (size_t i = 0; i < ds.size(); i++) env[ds[i].uop] = ConstVal(cur[i]);
      check_point();
      size_t k = 0;
      while (k < ds.size() && cur[k] == ds[k].hi) { cur[k] = ds[k].lo; k++; }
      if (k == ds.size()) break;
      cur[k]++;
    }
  } else {
    for (auto& d : ds) env[d.uop] = ConstVal(d.lo);
    check_point();
    for (auto& d : ds) env[d.uop] = ConstVal(d.hi);
    check_point();
    uint64_t seed = fnv1a(c.mode + "|" + c.vars + "|" + c.expr) ^ 1234;
    int got = 0;
    for (int t = 0; t < kMaxTries && got < kRandomPoints; t++) {
      for (auto& d : ds) env[d.uop] = ConstVal(d.lo + int64_t(splitmix64(seed) % uint64_t(d.hi - d.lo + 1)));
      if (check_point()) got++;
    }
  }
  return out;
}

const Outcome& outcome(const Case& c) {
  static std::map<int, Outcome> memo;
  auto it = memo.find(c.line);
  if (it == memo.end()) it = memo.emplace(c.line, run_case(c)).first;
  return it->second;
}

std::string describe(const Case& c) {
  return "line " + std::to_string(c.line) + ": " + c.mode + " | " + c.vars + " | " + c.expr;
}

// ***** (a) and (b), one test per case *****

class SymbolicCase : public ::testing::TestWithParam<Case> {};

TEST_P(SymbolicCase, ValueAndSize) {
  const Case& c = GetParam();
  const Outcome& o = outcome(c);
  ASSERT_TRUE(o.built) << describe(c) << "\n  " << o.error << "\n  tinygrad: " << c.render;
  EXPECT_GT(o.points, 0) << describe(c) << "\n  no point of the domain was checked";
  if (!o.value_errors.empty()) {
    std::string msg;
    for (auto& e : o.value_errors) msg += "\n  " + e;
    ADD_FAILURE() << describe(c) << "\n  ours:     " << o.render << "\n  tinygrad: " << c.render
                  << "\n  the simplified expression changes the value:" << msg;
  }
  EXPECT_LE(o.nodes, c.nodes) << describe(c) << "\n  ours:     " << o.render << " (" << o.nodes << " nodes)\n  tinygrad: " << c.render
                              << " (" << c.nodes << " nodes)";
}

INSTANTIATE_TEST_SUITE_P(Cases, SymbolicCase, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return "line" + std::to_string(info.param.line); });

// ***** (c) the summary: exact renders *****

TEST(SymbolicSummary, RendersLikeTinygrad) {
  ASSERT_TRUE(load_error().empty()) << load_error();
  const auto& cases = all_cases();
  ASSERT_FALSE(cases.empty()) << "no cases in " << case_path();
  int exact = 0, failed = 0;
  std::map<std::string, std::pair<int, int>> by_mode;  // mode -> (exact, total)
  std::ostringstream mism;
  for (const Case& c : cases) {
    const Outcome& o = outcome(c);
    auto& bm = by_mode[c.mode];
    bm.second++;
    if (!o.built) {
      failed++;
      mism << "  " << describe(c) << "\n      ours:     <" << o.error << ">\n      tinygrad: " << c.render << "\n";
      continue;
    }
    if (o.render == c.render) {
      exact++, bm.first++;
    } else {
      mism << "  " << describe(c) << "\n      ours:     " << o.render << "  (" << o.nodes << " nodes)\n      tinygrad: " << c.render
           << "  (" << c.nodes << " nodes)\n";
    }
  }
  double rate = 100.0 * exact / double(cases.size());
  std::ostringstream summ;
  summ.setf(std::ios::fixed);
  summ.precision(1);
  summ << "symbolic: " << cases.size() << " cases, " << exact << " render exactly as tinygrad (" << rate << "%)";
  if (failed) summ << ", " << failed << " failed to build or simplify";
  summ << "  [";
  bool first = true;
  for (auto& [m, v] : by_mode) { summ << (first ? "" : ", ") << m << " " << v.first << "/" << v.second; first = false; }
  summ << "]";
  if (exact != int(cases.size())) std::cout << "render mismatches (ours vs tinygrad):\n" << mism.str();
  std::cout << summ.str() << std::endl;
  EXPECT_GE(rate, 80.0) << summ.str();
}

// ***** the expression parser itself *****

UOp P(const std::string& expr, const Vars& vs) { return exprdsl::parse_expr(expr, vs); }

TEST(ExprParser, LiteralsFoldAsPython) {
  Vars vs = exprdsl::parse_vars("a=var(0,10)");
  UOp a = vs.find("a")->uop;
  EXPECT_EQ(P("a*0+3*4", vs), a * 0 + 12);
  EXPECT_EQ(P("a+7//-2", vs), a + (-4));
  EXPECT_EQ(P("a+(-7)%3", vs), a + 2);
  EXPECT_EQ(P("-2*a", vs), lit(-2) * a);
  EXPECT_EQ(P("a*-3", vs), a * (-3));
  EXPECT_EQ(P("3+a", vs), lit(3) + a);
  EXPECT_EQ(P("12", vs), UOp::const_(ConstVal(int64_t(12))));
  EXPECT_EQ(P("3<4", vs), UOp::const_(ConstVal(true)));
  EXPECT_EQ(P("True&False", vs), UOp::const_(ConstVal(false)));
  EXPECT_EQ(P("True+1", vs), UOp::const_(ConstVal(int64_t(2))));
  EXPECT_EQ(P("-True", vs), UOp::const_(ConstVal(int64_t(-1))));
  EXPECT_EQ(P("(a<5)&True", vs), (a < 5) & true);
}

TEST(ExprParser, PrecedenceAsPython) {
  Vars vs = exprdsl::parse_vars("a=var(0,10) b=var(0,10) c=var(0,10)");
  UOp a = vs.find("a")->uop, b = vs.find("b")->uop, c = vs.find("c")->uop;
  EXPECT_EQ(P("a+b*c", vs), a + b * c);
  EXPECT_EQ(P("a-b-c", vs), (a - b) - c);
  EXPECT_EQ(P("a//b%c", vs), (a / b) % c);
  EXPECT_EQ(P("a+b<c+1", vs), (a + b) < (c + 1));
  EXPECT_EQ(P("a<b|c", vs), a < (b | c));
  EXPECT_EQ(P("a|b^c&a", vs), a | (b ^ (c & a)));
  EXPECT_EQ(P("-a.maximum(b)", vs), -(a.maximum(b)));
  EXPECT_EQ(P("-a*b", vs), (-a) * b);
  EXPECT_EQ(P("(a<5).where(a,3)", vs), (a < 5).where(a, lit(3)));
  EXPECT_EQ(P("(a<5).where(4,5)", vs), (a < 5).where(lit(4), lit(5)));
  EXPECT_EQ(P("a.valid(a<5)*2", vs), a.valid(a < 5) * 2);
  EXPECT_EQ(P("(a+1).eq(b).logical_not()", vs), (a + 1).eq(b).logical_not());
  EXPECT_EQ(P("5<=a", vs), lit(5) <= a);
  EXPECT_EQ(P("5>=a", vs), lit(5) >= a);
}

// the identities the case file's header states for tinygrad's operators must hold for ours too, else the suite
// would compare different graphs
TEST(ExprParser, OperatorsBuildAsTinygrad) {
  Vars vs = exprdsl::parse_vars("a=var(0,10) b=var(0,10) r0=range(16,0)");
  EXPECT_EQ(P("a-b", vs), P("a+b*-1", vs));
  EXPECT_EQ(P("-a", vs), P("a*-1", vs));
  EXPECT_EQ(P("a>b", vs), P("b<a", vs));
  EXPECT_EQ(P("a>=b", vs), P("(a<b).ne(True)", vs));
  EXPECT_EQ(P("a<=b", vs), P("(b<a).ne(True)", vs));
  EXPECT_EQ(P("a.eq(b)", vs), P("a.ne(b).ne(True)", vs));
  EXPECT_EQ(P("(a<b).logical_not()", vs), P("(a<b).ne(True)", vs));
  EXPECT_EQ(P("a.minimum(b)", vs), P("((a^-1).maximum(b^-1))^-1", vs));
  UOp r0 = vs.find("r0")->uop;
  EXPECT_EQ(r0.op(), Ops::RANGE);
  EXPECT_EQ(P("r0.valid(r0<8)", vs), (r0 < 8).where(r0, r0.const_like(ConstVal::invalid())));
}

TEST(ExprParser, Errors) {
  Vars vs = exprdsl::parse_vars("a=var(0,10)");
  EXPECT_THROW(P("a+", vs), Error);
  EXPECT_THROW(P("a+b", vs), Error);
  EXPECT_THROW(P("(a+1", vs), Error);
  EXPECT_THROW(P("a/2", vs), Error);
  EXPECT_THROW(P("a==2", vs), Error);
  EXPECT_THROW(P("1//0", vs), Error);
  EXPECT_THROW(P("a<1<2", vs), Error);
  EXPECT_THROW(P("(3).maximum(a)", vs), Error);
  EXPECT_THROW(P("a.foo(1)", vs), Error);
  EXPECT_THROW(P("a.where(1)", vs), Error);
  EXPECT_THROW(P("a.valid(True)", vs), Error);
  EXPECT_THROW(exprdsl::parse_vars("a=var(3,1)"), Error);
  EXPECT_THROW(exprdsl::parse_vars("r1=range(4,0)"), Error);
  try {
    P("a + $", vs);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("column 5"), std::string::npos) << e.what();
  }
}

TEST(ExprParser, CaseLines) {
  auto c = exprdsl::parse_case_line("valid | r0=range(16,0) | r0<8 => r0%8 | r0 | 2", 7);
  EXPECT_EQ(c.line, 7);
  EXPECT_EQ(c.mode, "valid");
  EXPECT_EQ(c.valid_text(), "r0<8");
  EXPECT_EQ(c.expr_text(), "r0%8");
  EXPECT_EQ(c.render, "r0");
  EXPECT_EQ(c.nodes, 2);
  EXPECT_THROW(exprdsl::parse_case_line("symbolic | a=var(0,1) | a", 1), Error);
  EXPECT_THROW(exprdsl::parse_case_line("sym | a=var(0,1) | a<1 => a | a | 2", 1), Error);
}

}  // namespace
