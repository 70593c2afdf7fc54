// UPat / PatternMatcher / graph_rewrite feature tests, each with a matching and a failing case. Semantics follow
// tinygrad's test/null/test_pattern_matcher.py and UPat.match / PatternMatcher.rewrite / unified_rewrite; expected
// values of the graph_rewrite cases were checked by running the same rules in tinygrad (a9069c177a).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <string>
#include <vector>

#include "tg/error.h"
#include "uop/upat.h"
#include "uop_test_util.h"

using namespace tg;
using namespace tg::testutil;

namespace {


UOp var(const char* n, int64_t lo = 0, int64_t hi = 10, DType d = dtypes::weakint) { return UOp::variable(n, lo, hi, d); }

// tinygrad's x.rtag(): the same node with a tag, so a match is visible as a changed node
UOp rtag(const UOp& x) { return x.replace({.tag = Arg(int64_t(1))}); }

// does a matcher with just this pattern (callback: tag the root) rewrite u?
bool matches(const UPat& p, const UOp& u) {
  PatternMatcher pm{p >> [](M m) { return rtag(m.root()); }};
  UOp r = pm.rewrite(u);
  if (r) { EXPECT_UOP_EQ(r, rtag(u)); }
  return bool(r);
}

bool bound(M m, const char* name) {
  try {
    (void)m[name];
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

// ***** matching single nodes *****

TEST(UPatMatch, SingleOp) {
  UOp c1 = UOp::const_(1.0);
  UOp add = UOp::make(Ops::ADD, {c1, c1});
  EXPECT_TRUE(matches(UPat(Ops::CONST), c1));
  EXPECT_FALSE(matches(UPat(Ops::CONST), add));
  EXPECT_TRUE(matches(UPat(Ops::ADD), add));
  // tinygrad test_simple_match: a dtype on the pattern
  EXPECT_TRUE(matches(UPat(Ops::CONST, dtypes::weakfloat), UOp::const_(1.0)));
  EXPECT_FALSE(matches(UPat(Ops::CONST, dtypes::weakfloat), UOp::const_(1)));
}

TEST(UPatMatch, OpSet) {
  UOp c1 = UOp::const_(false);
  UOp c2 = c1.cast(dtypes::int32);
  UOp c3 = UOp::const_(1.0);
  UOp c4 = UOp::make(Ops::ADD, {c3, c3});
  UPat p(OpSet{Ops::CONST, Ops::CAST});
  EXPECT_TRUE(matches(p, c1));
  EXPECT_TRUE(matches(p, c2));
  EXPECT_FALSE(matches(p, c4));
  EXPECT_TRUE(matches(UPat::ops(GroupOp::ALU), c4));
  EXPECT_FALSE(matches(UPat::ops(GroupOp::ALU), c3));
}

TEST(UPatMatch, DtypeSet) {
  UPat p(Ops::CAST, DTypeSet{dtypes::float32, dtypes::float64});
  EXPECT_TRUE(matches(p, UOp::const_(1.0).cast(dtypes::float32)));
  EXPECT_TRUE(matches(p, UOp::const_(1.0).cast(dtypes::float64)));
  EXPECT_FALSE(matches(p, UOp::const_(1.0).cast(dtypes::float16)));
  EXPECT_FALSE(matches(p, UOp::const_(1).cast(dtypes::int32)));
  // the named sets
  UPat ints(Ops::CAST, dtypes::ints());
  EXPECT_TRUE(matches(ints, UOp::const_(1).cast(dtypes::uint16)));
  EXPECT_FALSE(matches(ints, UOp::const_(1).cast(dtypes::float16)));
  EXPECT_FALSE(matches(UPat(Ops::CONST, dtypes::ints()), UOp::const_(1)));  // weakint is not a concrete int
  EXPECT_TRUE(matches(UPat(Ops::CONST, dtypes::weaks()), UOp::const_(1)));
  EXPECT_TRUE(matches(UPat(Ops::CAST, dtypes::floats()), UOp::const_(1).cast(dtypes::bfloat16)));
  EXPECT_FALSE(matches(UPat(Ops::CAST, dtypes::floats()), UOp::const_(1).cast(dtypes::weakfloat)));
}

TEST(UPatMatch, ArgPythonEquality) {
  // tinygrad: UPat(Ops.CONST, arg=pv) against UOp.const(v); rows are pv, columns v = 1, 1.0, True, False, 0, 0.0, -0.0, 2, nan
  const std::vector<ConstVal> vals = {ConstVal(1), ConstVal(1.0), ConstVal(true), ConstVal(false), ConstVal(0),
                                      ConstVal(0.0), ConstVal(-0.0), ConstVal(2), ConstVal(NAN)};
  struct Row { ConstVal pv; std::vector<bool> want; };
  const Row rows[] = {
      {ConstVal(1), {true, true, true, false, false, false, false, false, false}},
      {ConstVal(0), {false, false, false, true, true, true, true, false, false}},
      {ConstVal(1.0), {true, true, true, false, false, false, false, false, false}},
      {ConstVal(true), {true, true, true, false, false, false, false, false, false}},
      {ConstVal(NAN), {false, false, false, false, false, false, false, false, true}},
  };
  for (auto& r : rows)
    for (size_t i = 0; i < vals.size(); i++)
      EXPECT_EQ(matches(UPat::cnst(r.pv), UOp::const_(vals[i])), bool(r.want[i])) << "pattern " << r.pv << " const " << vals[i];
  // an arg on a non-CONST pattern is compared too
  UPat r0(Ops::RANGE, {}, {}, Arg(Arg::Ints{0, int64_t(AxisType::WEAK)}));
  EXPECT_TRUE(matches(r0, UOp::range(16, 0)));
  EXPECT_FALSE(matches(r0, UOp::range(16, 1)));
}

TEST(UPatMatch, NamedCaptures) {
  UOp a = var("a");
  UPat p = UPat::var("x") * UPat::cvar("c");
  UOp seen_x, seen_c;
  PatternMatcher pm{p >> [&](M m) {
    seen_x = m["x"], seen_c = m["c"];
    return m["x"];
  }};
  EXPECT_UOP_EQ(pm.rewrite(a * 3), a);
  EXPECT_UOP_EQ(seen_x, a);
  EXPECT_UOP_EQ(seen_c, UOp::const_(3));
  EXPECT_FALSE(pm.rewrite(a * a));  // c must be a CONST
  // asking for a name the rule does not have is an error
  PatternMatcher bad{p >> [](M m) { return m["nope"]; }};
  EXPECT_THROW(bad.rewrite(a * 3), Error);
}

TEST(UPatMatch, NameUsedTwiceBindsSameNode) {
  UOp a = var("a"), b = var("b");
  UPat p = UPat::var("x") + UPat::var("x");
  EXPECT_TRUE(matches(p, a + a));
  EXPECT_FALSE(matches(p, a + b));
  // tinygrad test_dup_name: equal consts are one node, so they bind the same name
  UPat q(GroupOp::ALU, {}, {UPat(Ops::CONST, {}, {}, {}, "y"), UPat(Ops::CONST, {}, {}, {}, "y")});
  EXPECT_TRUE(matches(q, UOp::make(Ops::ADD, {UOp::const_(1.0), UOp::const_(1.0)})));
  EXPECT_FALSE(matches(q, UOp::make(Ops::ADD, {UOp::const_(1.0), UOp::const_(2.0)})));
  // across levels: (x*c) + x
  UPat r = UPat::var("x") * UPat::cvar("c") + UPat::var("x");
  EXPECT_TRUE(matches(r, a * 3 + a));
  EXPECT_FALSE(matches(r, a * 3 + b));
}

TEST(UPatMatch, OrderedSourcesForNonCommutativeOps) {
  UOp a = var("a");
  UPat p = UPat::var("x") / UPat::cvar("c");  // FLOORDIV: ordered
  EXPECT_TRUE(matches(p, a / 3));
  EXPECT_FALSE(matches(p, UOp::make(Ops::FLOORDIV, {lit(3), a})));
  UPat lt = UPat::var("x") < UPat::cvar("c");
  EXPECT_TRUE(matches(lt, a < 3));
  EXPECT_FALSE(matches(lt, 3 < a));
  // an explicit source tuple is ordered even for a commutative op
  UPat tup(Ops::ADD, {}, {UPat::var("x"), UPat::cvar("c")});
  EXPECT_TRUE(matches(tup, a + 3));
  EXPECT_FALSE(matches(tup, 3 + a));
}

TEST(UPatMatch, CommutativeAnyOrder) {
  UOp a = var("a");
  PatternMatcher pm{(UPat::var("x") + 0) >> [](M m) { return m["x"]; }};
  EXPECT_UOP_EQ(pm.rewrite(a + 0), a);
  EXPECT_UOP_EQ(pm.rewrite(0 + a), a);
  EXPECT_FALSE(pm.rewrite(a + 1));
  EXPECT_FALSE(pm.rewrite(UOp::make(Ops::FLOORDIV, {a, lit(0)})));
  // tinygrad test_src_permutations: src given as a list
  UPat p = UPat(GroupOp::ALU).src_any_order({UPat(Ops::CONST), UPat::ops(GroupOp::ALU)});
  UOp c1 = UOp::const_(1.0), c2 = UOp::const_(2.0);
  UOp c3 = UOp::make(Ops::ADD, {c1, c2}), c4 = UOp::make(Ops::ADD, {c3, c2}), c5 = UOp::make(Ops::ADD, {c2, c3});
  UOp c6 = UOp::make(Ops::ADD, {c3, c4});
  EXPECT_FALSE(matches(p, c3));
  EXPECT_TRUE(matches(p, c4));
  EXPECT_TRUE(matches(p, c5));
  EXPECT_FALSE(matches(p, c6));
}

TEST(UPatMatch, DeepSourcePermutations) {
  // tinygrad test_deep_src_permutations: a name bound inside a permuted sub-pattern must agree with the outer one
  UOp c1 = UOp::const_(1.0), c2 = UOp::const_(2.0);
  UOp u1 = UOp::make(Ops::ADD, {UOp::make(Ops::ADD, {c1, c2}), c1});
  UOp u2 = UOp::make(Ops::ADD, {UOp::make(Ops::ADD, {c2, c1}), c1});
  UOp u3 = UOp::make(Ops::ADD, {UOp::make(Ops::ADD, {c2, c2}), c1});
  UPat inner = UPat(GroupOp::ALU).src_any_order({UPat::var("a"), UPat::var("b")});
  UPat p = UPat(GroupOp::ALU).src_any_order({inner, UPat::var("b")});
  EXPECT_TRUE(matches(p, u1));
  EXPECT_TRUE(matches(p, u2));
  EXPECT_FALSE(matches(p, u3));
}

TEST(UPatMatch, SrcRepeat) {
  UOp c1 = UOp::const_(1), c2 = UOp::const_(2), c3 = UOp::const_(3), a = var("a");
  UPat p = UPat(Ops::SINK).src_repeat(UPat(Ops::CONST));
  EXPECT_TRUE(matches(p, UOp::sink({c1, c2, c3})));
  EXPECT_TRUE(matches(p, UOp::sink({c1})));
  EXPECT_FALSE(matches(p, UOp::sink({c1, a})));
  EXPECT_FALSE(matches(p, UOp::sink({a, c1})));
  // as tinygrad: the early-reject set of a repeat is its pattern's op, so an empty SINK is not matched
  EXPECT_FALSE(matches(p, UOp::sink({})));
  // tinygrad test_src_repeat
  UPat q = UPat(GroupOp::ALU).src_repeat(UPat(Ops::CONST));
  UOp f1 = UOp::const_(1.0), f2 = UOp::const_(2.0);
  UOp add = UOp::make(Ops::ADD, {f1, f2});
  EXPECT_TRUE(matches(q, add));
  EXPECT_FALSE(matches(q, UOp::make(Ops::ADD, {f2, add})));
  // broadcast(): a STACK of copies of one pattern
  EXPECT_TRUE(matches(UPat(Ops::CONST).broadcast(), UOp::stack({c1, c2})));
  EXPECT_FALSE(matches(UPat(Ops::CONST).broadcast(), UOp::stack({c1, a})));
}

TEST(UPatMatch, AllowAnyLen) {
  // tinygrad test_minimum_len
  UPat p(Ops::NOOP, {}, {UPat(Ops::NOOP), UPat(Ops::NOOP)}, {}, "", true);
  UOp n = UOp::make(Ops::NOOP, dtypes::void_, {});
  EXPECT_TRUE(matches(p, UOp::make(Ops::NOOP, dtypes::void_, {n, n, n})));
  EXPECT_TRUE(matches(p, UOp::make(Ops::NOOP, dtypes::void_, {n, n})));
  EXPECT_FALSE(matches(p, UOp::make(Ops::NOOP, dtypes::void_, {n})));
  // without allow_any_len the length is exact
  UPat strict(Ops::NOOP, {}, {UPat(Ops::NOOP), UPat(Ops::NOOP)});
  EXPECT_FALSE(matches(strict, UOp::make(Ops::NOOP, dtypes::void_, {n, n, n})));
  EXPECT_TRUE(matches(strict.allow_any_len(), UOp::make(Ops::NOOP, dtypes::void_, {n, n, n})));
  // tinygrad test_allow_len
  UPat q(Ops::MULACC, {}, {UPat(Ops::CONST)}, {}, "", true);
  UOp c1 = UOp::const_(1.0), c2 = UOp::const_(2.0), c3 = UOp::const_(3.0);
  EXPECT_FALSE(matches(q, UOp::make(Ops::EXP2, {c1})));
  EXPECT_FALSE(matches(q, UOp::make(Ops::ADD, {c1, c2})));
  EXPECT_TRUE(matches(q, UOp::make(Ops::MULACC, {c1, c2, c3})));
}

TEST(UPatMatch, AnyAlternatives) {
  UOp a = var("a"), b = var("b"), r = UOp::range(4, 0);
  UPat p = UPat::var("x") * UPat::any({UPat::cvar("c"), UPat(Ops::RANGE, {}, {}, {}, "c")});
  EXPECT_TRUE(matches(p, a * 3));
  EXPECT_TRUE(matches(p, a * r));
  EXPECT_TRUE(matches(p, r * a));  // MUL is commutative
  EXPECT_FALSE(matches(p, a * b));
  // at the top
  UPat top = UPat::any({UPat(Ops::CONST), UPat(Ops::RANGE)});
  EXPECT_TRUE(matches(top, UOp::const_(2)));
  EXPECT_TRUE(matches(top, r));
  EXPECT_FALSE(matches(top, a + b));
}

TEST(UPatMatch, AnyTriesEachAlternativeUntilTheCallbackAccepts) {
  // tinygrad test_upat_any: every way the pattern matches is offered to the callback until one returns a node
  UOp a = var("a"), b = var("b");
  UPat p(Ops::FLOORDIV, {}, {UPat::var("a"), UPat::any({UPat::var("x"), UPat::var("y"), UPat::var("z")})});
  int calls = 0;
  std::vector<std::string> names;
  PatternMatcher pm{p >> [&](M m) {
    calls++;
    for (const char* n : {"x", "y", "z"})
      if (bound(m, n)) names.push_back(n);
    return bound(m, "y") ? rtag(m.root()) : UOp();
  }};
  UOp d = a / b;
  EXPECT_UOP_EQ(pm.rewrite(d), rtag(d));
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(names, (std::vector<std::string>{"x", "y"}));
}

TEST(UPatMatch, OrCasted) {
  UOp xi = var("xi", 0, 10, dtypes::int32), xf = var("xf", 0, 10, dtypes::float32);
  UOp c3 = UOp::const_(3, dtypes::int32);
  UOp cast3 = UOp::const_(3).cast(dtypes::int32);
  ASSERT_EQ(cast3.op(), Ops::CAST);
  UOp got;
  PatternMatcher pm{UPat(Ops::MUL, {}, {UPat::var("y"), UPat::cvar("c").or_casted("cc")}) >> [&](M m) {
    got = m["cc"];
    return rtag(m.root());
  }};
  EXPECT_TRUE(pm.rewrite(UOp::make(Ops::MUL, {xi, c3})));
  EXPECT_UOP_EQ(got, c3);
  EXPECT_TRUE(pm.rewrite(UOp::make(Ops::MUL, {xi, cast3})));
  EXPECT_UOP_EQ(got, cast3);  // the name goes to the CAST
  EXPECT_FALSE(pm.rewrite(UOp::make(Ops::MUL, {xi, xi})));
  EXPECT_FALSE(pm.rewrite(UOp::make(Ops::MUL, {xf, xf.cast(dtypes::float32).sqrt()})));
}

TEST(UPatMatch, SugarMirrorsUOp) {
  UOp a = var("a"), b = var("b");
  EXPECT_TRUE(matches(UPat::var("x").where(UPat::var("y"), UPat::var("z")), (a < b).where(a, b)));
  EXPECT_FALSE(matches(UPat::var("x").where(UPat::var("y"), UPat::var("z")), a + b));
  EXPECT_TRUE(matches(UPat::var("x").ne(UPat::var("y")), a.ne(b)));
  EXPECT_TRUE(matches(UPat::var("x").maximum(UPat::cvar("c")), a.maximum(lit(3))));
  // logical_not of a bool-typed pattern skips the CAST (UPat.cast returns self when the dtype already matches)
  EXPECT_TRUE(matches(UPat::var("x", dtypes::bool_).logical_not(), (a < b).logical_not()));
  EXPECT_FALSE(matches(UPat::var("x", dtypes::bool_).logical_not(), (a < b).ne(lit(false))));
  // on an untyped pattern it asks for a CAST to bool, as tinygrad's
  EXPECT_FALSE(matches(UPat::var("x").logical_not(), (a < b).logical_not()));
  EXPECT_TRUE(matches(UPat::var("x").logical_not(), a.cast(dtypes::bool_).logical_not()));
  EXPECT_TRUE(matches(UPat::var("x") - UPat::var("y"), a - b));  // ADD(x, MUL(y, -1))
  EXPECT_FALSE(matches(UPat::var("x") - UPat::var("y"), a + b));
  EXPECT_TRUE(matches(UPat::var("x").cast(DTypeSet(dtypes::int32)), a.cast(dtypes::int32)));
  EXPECT_FALSE(matches(UPat::var("x").cast(DTypeSet(dtypes::int32)), a.cast(dtypes::int64)));
}

// ***** PatternMatcher *****

TEST(PatternMatcher, EarlyRejectSkipsCallback) {
  UOp a = var("a"), b = var("b");
  int calls = 0;
  PatternMatcher pm{(UPat::var("x") + UPat::cvar("c")) >> [&](M) {
    calls++;
    return UOp();
  }};
  EXPECT_FALSE(pm.rewrite(a + b));
  EXPECT_EQ(calls, 0);
  EXPECT_FALSE(pm.rewrite(a * 3));  // indexed by op: an ADD rule never sees a MUL
  EXPECT_EQ(calls, 0);
  EXPECT_FALSE(pm.rewrite(a + 3));
  EXPECT_EQ(calls, 1);
}

TEST(PatternMatcher, FirstRuleReturningANodeWins) {
  UOp a = var("a");
  UOp r1 = UOp::const_(111), r2 = UOp::const_(222);
  bool first_declines = true;
  PatternMatcher pm{
      UPat(Ops::ADD) >> [&](M) { return first_declines ? UOp() : r1; },
      UPat(Ops::ADD) >> [&](M) { return r2; },
  };
  EXPECT_UOP_EQ(pm.rewrite(a + 1), r2);
  first_declines = false;
  EXPECT_UOP_EQ(pm.rewrite(a + 1), r1);
  EXPECT_FALSE(pm.rewrite(a * 2));
}

TEST(PatternMatcher, ReturningTheSameNodeIsNoRewrite) {
  UOp a = var("a");
  int second = 0;
  PatternMatcher only_same{UPat(Ops::ADD) >> [](M m) { return m.root(); }};
  EXPECT_FALSE(only_same.rewrite(a + 1));
  // as tinygrad: a rule returning its input does not stop the search, the next rule gets its turn
  PatternMatcher pm{
      UPat(Ops::ADD) >> [](M m) { return m.root(); },
      UPat(Ops::ADD) >> [&](M m) { second++; return rtag(m.root()); },
  };
  EXPECT_UOP_EQ(pm.rewrite(a + 1), rtag(a + 1));
  EXPECT_EQ(second, 1);
  // graph_rewrite with only that rule leaves the graph alone (no infinite loop)
  EXPECT_UOP_EQ(graph_rewrite(a + 1, only_same), a + 1);
}

TEST(PatternMatcher, CompositionOrder) {
  UOp a = var("a");
  UOp r1 = UOp::const_(111), r2 = UOp::const_(222);
  PatternMatcher p1{UPat(Ops::ADD) >> [&](M) { return r1; }};
  PatternMatcher p2{UPat(Ops::ADD) >> [&](M) { return r2; }, UPat(Ops::MUL) >> [&](M) { return r2; }};
  EXPECT_UOP_EQ((p1 + p2).rewrite(a + 1), r1);
  EXPECT_UOP_EQ((p2 + p1).rewrite(a + 1), r2);
  EXPECT_UOP_EQ((p1 + p2).rewrite(a * 2), r2);  // rules of both are there
  EXPECT_EQ((p1 + p2).rules().size(), 3u);
  EXPECT_FALSE(p1.rewrite(a * 2));
}

TEST(PatternMatcher, RuleWithoutTopOpThrows) {
  std::string msg = error_of([] { PatternMatcher pm{UPat::var("x") >> [](M m) { return m["x"]; }}; });
  EXPECT_NE(msg, "<no throw>");
  EXPECT_EQ(msg.find("<not a tg::Error"), std::string::npos) << msg;
  // an any() whose alternatives all name ops is fine, one without is not
  EXPECT_NO_THROW((PatternMatcher{UPat::any({UPat(Ops::CONST), UPat(Ops::RANGE)}) >> [](M) { return UOp(); }}));
  EXPECT_THROW((PatternMatcher{UPat::any({UPat(Ops::CONST), UPat::var("y")}) >> [](M) { return UOp(); }}), Error);
}

TEST(PatternMatcher, RewriteCtx) {
  UOp a = var("a");
  int hits = 0;
  PatternMatcher pm{UPat(Ops::CONST) >> [](M m) {
    EXPECT_TRUE(m.has_ctx());
    m.ctx<int>()++;
    return UOp();
  }};
  pm.rewrite(UOp::const_(5), &hits);
  EXPECT_EQ(hits, 1);
  graph_rewrite((a + 1) * 2 + 3, pm, RewriteOpts{.ctx = &hits});
  EXPECT_EQ(hits, 4);  // CONSTs 1, 2, 3 each once
  graph_rewrite(a + 7, pm, &hits, true);
  EXPECT_EQ(hits, 5);
}

// ***** graph_rewrite *****

TEST(GraphRewrite, TopDownVsBottomUp) {
  // CONST 1 -> 2 and x+1 -> x*100. Default: sources first, so a+1 becomes a+2 before its ADD is tried;
  // bottom_up: the ADD is tried before its sources. tinygrad: td (a+2), bu (a*100)
  UOp a = var("a");
  PatternMatcher pm{
      UPat::cnst(1) >> [](M) { return UOp::const_(2); },
      (UPat::var("x") + 1) >> [](M m) { return m["x"] * 100; },
  };
  EXPECT_UOP_EQ(graph_rewrite(a + 1, pm), a + 2);
  EXPECT_UOP_EQ(graph_rewrite(a + 1, pm, RewriteOpts{.bottom_up = true}), a * 100);
}

TEST(GraphRewrite, ReplacementRewrittenToFixedPoint) {
  UOp a = var("a");
  PatternMatcher pm{(UPat::var("x") + 0) >> [](M m) { return m["x"]; }};
  UOp g = ((a + 0) + 0) + 0;
  EXPECT_UOP_EQ(graph_rewrite(g, pm), a);
  EXPECT_UOP_EQ(graph_rewrite(g, pm, nullptr, true), a);
  EXPECT_UOP_EQ(graph_rewrite(UOp::sink({g, g * 2}), pm), UOp::sink({a, a * 2}));
  // a replacement that another rule matches is rewritten again: 1 -> 2 -> 3
  PatternMatcher chain{
      UPat::cnst(1) >> [](M) { return UOp::const_(2); },
      UPat::cnst(2) >> [](M) { return UOp::const_(3); },
  };
  EXPECT_UOP_EQ(graph_rewrite(a + 1, chain), a + 3);
  EXPECT_UOP_EQ(graph_rewrite(a + 1, chain, nullptr, true), a + 3);
  EXPECT_UOP_EQ(graph_rewrite(UOp::const_(1), chain), UOp::const_(3));
}

TEST(GraphRewrite, RebuildRederivesDtype) {
  // a source whose dtype changes makes the parent re-derive its own (tinygrad _rebuild_dtype)
  UOp a = var("a");
  UOp af = var("af", 0, 10, dtypes::float32);
  PatternMatcher pm{UPat(Ops::BUFFER, dtypes::weakint) >> [&](M) { return af; }};
  UOp r = graph_rewrite(a + a, pm);
  EXPECT_EQ(r.dtype(), dtypes::float32);
  EXPECT_UOP_EQ(r, UOp::make(Ops::ADD, {af, af}));
  UOp lt = graph_rewrite(a < 3, pm);  // a comparison stays bool; its weakint literal is not re-promoted by a rebuild
  EXPECT_EQ(lt.dtype(), dtypes::bool_);
  EXPECT_UOP_EQ(lt, UOp::make(Ops::CMPLT, {af, lit(3)}));
}

// a rule whose replacement contains the node it replaces (x -> cast(x)) can never finish: tinygrad ends with a KeyError;
// here it must be a tg::Error, not a std::out_of_range escaping from unordered_map::at
// (run in a child process: a crash there fails this test without taking the whole suite down)
TEST(GraphRewrite, SelfReferencingRuleIsTgError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        UOp a = var("a");
        PatternMatcher pm{UPat(Ops::BUFFER) >> [](M m) { return m.root().cast(dtypes::float32); }};
        std::string msg = error_of([&] { graph_rewrite(a + a, pm); });
        bool ok = msg != "<no throw>" && msg.find("<not a tg::Error") == std::string::npos;
        if (!ok) fprintf(stderr, "got: %s\n", msg.c_str());
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(GraphRewrite, MemoSharedSubexpressionOnce) {
  UOp a = var("a"), b = var("b");
  UOp s = a + b;
  int seen_add = 0;
  PatternMatcher count{UPat(Ops::ADD) >> [&](M) { seen_add++; return UOp(); }};
  EXPECT_UOP_EQ(graph_rewrite(UOp::sink({s * 2, s * 3, s}), count), UOp::sink({s * 2, s * 3, s}));
  EXPECT_EQ(seen_add, 1);
  int rewrites = 0;
  PatternMatcher swap{(UPat::var("x") + UPat::var("y")) >> [&](M m) {
    rewrites++;
    return UOp::make(Ops::MUL, {m["x"], m["y"]});
  }};
  EXPECT_UOP_EQ(graph_rewrite(UOp::sink({s * 2, s * 3}), swap), UOp::sink({(a * b) * 2, (a * b) * 3}));
  EXPECT_EQ(rewrites, 1);
  seen_add = 0;
  graph_rewrite(UOp::sink({s * 2, s * 3, s}), count, nullptr, true);
  EXPECT_EQ(seen_add, 1);
}

TEST(GraphRewrite, BottomUpGateStopsDescent) {
  // tinygrad: sink(a*1, a+1) with CONST 1 -> 2 and a gate on MUL gives [(a*1), (a+2)]; without the gate [(a*2), (a+2)]
  UOp a = var("a");
  UPat one = UPat::cnst(1);
  PatternMatcher gated{
      one >> [](M) { return UOp::const_(2); },
      UPat(Ops::MUL) >> [](M) -> UOp { throw BottomUpGate{}; },
  };
  PatternMatcher plain{one >> [](M) { return UOp::const_(2); }};
  UOp s = UOp::sink({a * 1, a + 1});
  EXPECT_UOP_EQ(graph_rewrite(s, gated, nullptr, true), UOp::sink({a * 1, a + 2}));
  EXPECT_UOP_EQ(graph_rewrite(s, plain, nullptr, true), UOp::sink({a * 2, a + 2}));
}

// BottomUpGate{result} (a C++ extension: tinygrad's gate carries nothing) replaces the node with result, and, as the
// gate stops the descent, the result is final: its CONST 1 is not rewritten to 2
TEST(GraphRewrite, BottomUpGateResultIsFinal) {
  UOp a = var("a");
  PatternMatcher gate_with{
      UPat::cnst(1) >> [](M) { return UOp::const_(2); },
      UPat(Ops::MUL) >> [](M m) -> UOp { throw BottomUpGate{m.root().src(0) + 1}; },
  };
  EXPECT_UOP_EQ(graph_rewrite(a * 5, gate_with, nullptr, true), a + 1);
  // a - 7 is ADD(a, MUL(7, -1)): its MUL is gated to 7+1, whose CONST 1 stays (the gate's result is final)
  EXPECT_UOP_EQ(graph_rewrite(UOp::sink({a * 5, a - 7}), gate_with, nullptr, true), UOp::sink({a + 1, a + (lit(7) + 1)}));
}

TEST(GraphRewrite, BottomUpMatcherAlongsideTopDown) {
  UOp a = var("a");
  PatternMatcher bpm{UPat::cnst(1) >> [](M) { return UOp::const_(2); }};
  PatternMatcher pm{UPat::cnst(2) >> [](M) { return UOp::const_(3); }};
  EXPECT_UOP_EQ(graph_rewrite(a + 1, pm, RewriteOpts{.bpm = &bpm}), a + 3);
  EXPECT_UOP_EQ(graph_rewrite(a + 1, pm), a + 1);
}

TEST(GraphRewrite, InfiniteLoopThrows) {
  UOp a = var("a");
  PatternMatcher loop{
      UPat::cnst(1) >> [](M) { return UOp::const_(2); },
      UPat::cnst(2) >> [](M) { return UOp::const_(1); },
  };
  std::string td = error_of([&] { graph_rewrite(a + 1, loop); });
  EXPECT_NE(td.find("infinite loop"), std::string::npos) << td;
  std::string bu = error_of([&] { graph_rewrite(a + 1, loop, nullptr, true); });
  EXPECT_NE(bu.find("infinite loop"), std::string::npos) << bu;
  // the library is still usable afterwards
  PatternMatcher ok{UPat::cnst(1) >> [](M) { return UOp::const_(2); }};
  EXPECT_UOP_EQ(graph_rewrite(a + 1, ok), a + 2);
}

TEST(GraphRewrite, DeepChainNoRecursion) {
  UOp x = var("a");
  for (int i = 0; i < 100000; i++) x = x + 1;
  PatternMatcher pm{UPat::cnst(1) >> [](M) { return UOp::const_(2); }};
  UOp r = graph_rewrite(x, pm);
  EXPECT_EQ(r.op(), Ops::ADD);
  EXPECT_UOP_EQ(r.src(1), UOp::const_(2));
  EXPECT_EQ(r.vmax().str(), "200010");
  UOp rb = graph_rewrite(x, pm, nullptr, true);
  EXPECT_UOP_EQ(rb, r);
}

TEST(GraphRewrite, NoMatchReturnsSameGraph) {
  UOp a = var("a"), b = var("b");
  UOp g = UOp::sink({(a + b) * 3, a < b});
  PatternMatcher pm{UPat(Ops::WHERE) >> [](M m) { return m.root().src(1); }};
  EXPECT_UOP_EQ(graph_rewrite(g, pm), g);
  EXPECT_UOP_EQ(graph_rewrite(g, pm, nullptr, true), g);
}

// substitute is graph_rewrite bottom up with a dictionary lookup for its rule: a replacement is looked up again (to a
// fixed point), a node rebuilt from replaced sources is looked up too, a cycle throws, and a deep chain does not recurse
TEST(Substitute, SameAsBottomUpRewriteWithLookup) {
  UOp a = var("a"), b = var("b"), c = var("c"), x = var("x");
  auto reference = [](const UOp& u, const std::unordered_map<UOp, UOp>& d) {
    PatternMatcher lookup{UPat::ops(GroupOp::All, "x") >> [](M m) {
      auto& dv = m.ctx<const std::unordered_map<UOp, UOp>>();
      auto it = dv.find(m["x"]);
      return it == dv.end() ? UOp() : it->second;
    }};
    return graph_rewrite(u, lookup, RewriteOpts{.bottom_up = true, .ctx = const_cast<std::unordered_map<UOp, UOp>*>(&d)});
  };
  std::vector<std::pair<UOp, std::unordered_map<UOp, UOp>>> cases{
      {(a + b) * 2, {{a, x}}},
      {(a + b) * 2, {{a, b}, {b, c}}},                 // b's replacement c is looked up again: both become c
      {(a + b) * 2, {{a, x}, {x + b, c}}},             // the rebuilt x + b is in the dictionary
      {UOp::sink({a * b, a + 1, (a * b) + 1}), {{a * b, c}, {a, a}}},
      {a + 1, {}},
  };
  for (auto& [u, d] : cases) EXPECT_UOP_EQ(u.substitute(d), reference(u, d));
  std::string err = error_of([&] { (a + 1).substitute({{a, b}, {b, a}}); });
  EXPECT_NE(err.find("infinite loop"), std::string::npos) << err;
  UOp chain = a;
  for (int i = 0; i < 100000; i++) chain = chain + 1;
  EXPECT_EQ(chain.substitute({{a, b}}).vmax().str(), "100010");
}

// rewrites with share_memo inside one outer rewrite (or SharedMemoScope) reuse each other's results: the same answers
// as fresh rewrites, and the memo is dropped when the outermost one ends (its nodes are freed)
TEST(GraphRewrite, SharedMemoGivesTheSameResults) {
  UOp a = var("a"), b = var("b");
  PatternMatcher fold{
      (UPat::var("x") + 0) >> [](M m) { return m["x"]; },
      (UPat::var("x") * 1) >> [](M m) { return m["x"]; },
  };
  std::vector<UOp> exprs{((a + 0) * 1 + b) * 1, (a + 0) * 1, b + 0, ((a + 0) * 1 + b) * 1};
  std::vector<UOp> fresh, shared;
  for (auto& e : exprs) fresh.push_back(graph_rewrite(e, fold));
  {
    SharedMemoScope scope;
    for (auto& e : exprs) shared.push_back(graph_rewrite(e, fold, RewriteOpts{.share_memo = true}));
  }
  for (size_t i = 0; i < exprs.size(); i++) EXPECT_UOP_EQ(shared[i], fresh[i]);
  size_t before = live_uops();
  {
    SharedMemoScope scope;
    graph_rewrite(var("t") * 1 + 0, fold, RewriteOpts{.share_memo = true});
    EXPECT_GT(live_uops(), before);  // the memo holds the nodes it met
  }
  EXPECT_EQ(live_uops(), before);
}

// ***** pure matchers: a node none of their rules rewrote is not matched against them again *****

TEST(PatternMatcher, PureMatcherRemembersNodesItLeftAlone) {
  // the counting callbacks break the purity contract on purpose: they show which rules were asked
  int pure_calls = 0, other_calls = 0;
  PatternMatcher pure = PatternMatcher{UPat(Ops::ADD, {}, {}, {}, "x") >> [&](M) { pure_calls++; return UOp(); }}.pure();
  PatternMatcher other{UPat(Ops::ADD, {}, {}, {}, "x") >> [&](M) { other_calls++; return UOp(); }};
  UOp a = var("pure_a"), b = var("pure_b");
  UOp sum = UOp::make(Ops::ADD, {a, b});
  EXPECT_FALSE(pure.rewrite(sum));
  EXPECT_FALSE(pure.rewrite(sum));
  EXPECT_EQ(pure_calls, 1);
  // the pure rules are skipped in a matcher holding them, the others still run, every time
  PatternMatcher both = other + pure;
  EXPECT_FALSE(both.rewrite(sum));
  EXPECT_FALSE(both.rewrite(sum));
  EXPECT_EQ(pure_calls, 1);
  EXPECT_EQ(other_calls, 2);
  // a new node (another source) is matched again; graph_rewrite goes through the same memo
  UOp sum2 = UOp::make(Ops::ADD, {b, a});
  EXPECT_UOP_EQ(graph_rewrite(sum2, pure), sum2);
  EXPECT_EQ(pure_calls, 2);
  EXPECT_UOP_EQ(graph_rewrite(UOp::sink({sum, sum2}), both), UOp::sink({sum, sum2}));
  EXPECT_EQ(pure_calls, 2);
  EXPECT_EQ(other_calls, 4);
}

TEST(PatternMatcher, PureMatcherStillRewritesWhatItMatches) {
  // a node a rule rewrote is not remembered: the rule is asked again (and answers the same)
  int calls = 0;
  PatternMatcher pure = PatternMatcher{UPat(Ops::ADD, {}, {}, {}, "x") >> [&](M m) { calls++; return rtag(m.root()); }}.pure();
  UOp sum = UOp::make(Ops::ADD, {var("pure_c"), var("pure_d")});
  EXPECT_UOP_EQ(pure.rewrite(sum), rtag(sum));
  EXPECT_UOP_EQ(pure.rewrite(sum), rtag(sum));
  EXPECT_EQ(calls, 2);
}

TEST(PatternMatcher, PureRuleGetsNoCtx) {
  int ctx = 0;
  PatternMatcher pure = PatternMatcher{UPat(Ops::ADD, {}, {}, {}, "x") >> [](M m) { m.ctx<int>()++; return UOp(); }}.pure();
  PatternMatcher plain{UPat(Ops::ADD, {}, {}, {}, "x") >> [](M m) { m.ctx<int>()++; return UOp(); }};
  UOp sum = UOp::make(Ops::ADD, {var("pure_e"), var("pure_f")});
  EXPECT_FALSE(plain.rewrite(sum, &ctx));
  EXPECT_EQ(ctx, 1);
  try {
    pure.rewrite(sum, &ctx);
    FAIL() << "a pure rule reading ctx should throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ctx"), std::string::npos) << e.what();
  }
  EXPECT_EQ(ctx, 1);
}

TEST(PatternMatcher, RulesTakenOutOfAPureMatcherAreNotRemembered) {
  // a matcher built from some of a pure matcher's rules must not mark nodes for the rules it lacks
  int first = 0, second = 0;
  PatternMatcher pure = PatternMatcher{
      UPat(Ops::ADD, {}, {}, {}, "x") >> [&](M) { first++; return UOp(); },
      UPat(Ops::ADD, {}, {}, {}, "x") >> [&](M m) { second++; return rtag(m.root()); },
  }.pure();
  PatternMatcher part(std::vector<Rule>{pure.rules()[0]});
  UOp sum = UOp::make(Ops::ADD, {var("pure_i"), var("pure_j")});
  EXPECT_FALSE(part.rewrite(sum));
  EXPECT_UOP_EQ(pure.rewrite(sum), rtag(sum));
  EXPECT_EQ(first, 2);
  EXPECT_EQ(second, 1);
}

// last: it uses up the component bits of this process
TEST(PatternMatcher, PureMatchersBeyondTheMemoBitsStillMatch) {
  // the memo has 63 component bits per node; matchers declared pure after they ran out are matched every time
  UOp sum = UOp::make(Ops::ADD, {var("pure_g"), var("pure_h")});
  int calls = 0;
  for (int i = 0; i < 80; i++) {
    PatternMatcher pm = PatternMatcher{UPat(Ops::ADD, {}, {}, {}, "x") >> [&](M m) { calls++; return i % 2 ? rtag(m.root()) : UOp(); }}.pure();
    if (i % 2) EXPECT_UOP_EQ(pm.rewrite(sum), rtag(sum));
    else EXPECT_FALSE(pm.rewrite(sum));
  }
  EXPECT_EQ(calls, 80);
}
