// Movement ops on UOp: every case of tests/data/movement_cases.txt (generated from tinygrad by
// tests/tools/gen_movement_cases.py) is built with our reshape/expand/permute/pad/shrink/flip and must give tinygrad's
// shape, the same printed graph, and the same graph after mop_cleanup (and after symbolic_simple, which includes it);
// the cases where tinygrad raises must throw a tg::Error naming the op and the shape. Then the INDEX/STACK cleanups,
// marg/base and the raw mop().
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "uop/movement.h"
#include "uop/symbolic.h"
#include "uop_test_util.h"

using namespace tg;
using tg::testutil::error_of;

namespace {

struct MovementCase {
  std::string start, chain, error, shape, str, cleanup;
};

std::vector<MovementCase> load_cases() {
  std::ifstream f(std::string(TG_TEST_DATA) + "/movement_cases.txt");
  std::vector<MovementCase> out;
  std::string line, *section = nullptr;
  while (std::getline(f, line)) {
    if (line.rfind("case ", 0) == 0) {
      MovementCase c;
      auto bar = line.find(" | ");
      c.start = line.substr(5, bar - 5), c.chain = line.substr(bar + 3);
      out.push_back(c);
      section = nullptr;
    } else if (out.empty() || line.empty() || line[0] == '#') {
      continue;
    } else if (line.rfind("error ", 0) == 0) { out.back().error = line.substr(6);
    } else if (line.rfind("shape ", 0) == 0) { out.back().shape = line.substr(6);
    } else if (line == "str") { section = &out.back().str;
    } else if (line == "cleanup") { section = &out.back().cleanup;
    } else if (line == "end") { section = nullptr;
    } else if (section) { *section += (section->empty() ? "" : "\n") + line; }
  }
  return out;
}

std::vector<int64_t> ints(const std::string& s) {
  std::vector<int64_t> r;
  if (s == "_") return r;
  std::stringstream ss(s);
  for (std::string t; std::getline(ss, t, ',');) r.push_back(std::stoll(t));
  return r;
}
std::vector<std::pair<int64_t, int64_t>> pairs(const std::string& s) {
  std::vector<std::pair<int64_t, int64_t>> r;
  if (s == "_") return r;
  std::stringstream ss(s);
  for (std::string t; std::getline(ss, t, ',');) {
    auto c = t.find(':');
    r.push_back({std::stoll(t.substr(0, c)), std::stoll(t.substr(c + 1))});
  }
  return r;
}
std::string shape_field(const Shape& s) {
  if (s.empty()) return "_";
  std::string r;
  for (size_t i = 0; i < s.size(); i++) r += (i ? "," : "") + std::to_string(s[i]);
  return r;
}

UOp buffer(int64_t n, DType dt = dtypes::float32, int64_t slot = 0) {
  ParamArg a;
  a.slot = slot, a.dtype = dt, a.device = "CPU";
  return UOp::make(Ops::BUFFER, dt, {UOp::const_(ConstVal(n))}, Arg(a));
}

UOp apply_step(const UOp& x, const std::string& step) {
  std::string op = step.substr(0, step.find(' ')), arg = step.substr(step.find(' ') + 1);
  if (op == "reshape") return x.reshape(ints(arg));
  if (op == "expand") return x.expand(ints(arg));
  if (op == "permute") return x.permute(ints(arg));
  if (op == "flip") return x.flip(ints(arg));
  if (op == "pad") return x.pad(pairs(arg));
  if (op == "shrink") return x.shrink(pairs(arg));
  if (op == "shrink_to") return x.shrink_to(ints(arg));
  if (op == "pad_to") return x.pad_to(ints(arg));
  if (op == "squeeze") return arg == "_" ? x.squeeze() : x.squeeze(std::stoll(arg));
  if (op == "unsqueeze") return x.unsqueeze(std::stoll(arg));
  if (op == "flatten") return x.flatten(ints(arg).at(0), ints(arg).at(1));
  if (op == "unflatten") { auto a = ints(arg); return x.unflatten(a.at(0), Shape(a.begin() + 1, a.end())); }
  if (op == "transpose") return x.transpose(ints(arg).at(0), ints(arg).at(1));
  throw std::runtime_error("bad step " + step);
}
std::vector<std::string> steps(const std::string& chain) {
  std::vector<std::string> r;
  size_t p = 0;
  for (size_t q; (q = chain.find(" ; ", p)) != std::string::npos; p = q + 3) r.push_back(chain.substr(p, q - p));
  r.push_back(chain.substr(p));
  return r;
}

class MovementCaseTest : public ::testing::TestWithParam<MovementCase> {};

TEST_P(MovementCaseTest, MatchesTinygrad) {
  const MovementCase& c = GetParam();
  Shape start = ints(c.start);
  int64_t n = 1;
  for (auto s : start) n *= s;
  size_t before = live_uops();
  {
    UOp x = buffer(n).reshape(start);
    auto ss = steps(c.chain);
    for (size_t i = 0; i < ss.size(); i++) {
      if (!c.error.empty() && i + 1 == ss.size()) {
        // the last step is the one tinygrad refuses: ours throws a tg::Error naming the op and the shape it was given
        // (a derived op names the movement op that refused, or itself where it checks the arguments first)
        std::string msg = error_of([&] { apply_step(x, ss[i]); });
        std::string opname = ss[i].substr(0, ss[i].find(' '));
        for (auto& ch : opname) ch = char(std::toupper(ch));
        std::string prefix = msg.substr(0, msg.find(':'));
        std::vector<std::string> ok{opname, opname.substr(0, opname.find('_'))};
        if (opname == "SQUEEZE" || opname == "UNSQUEEZE" || opname == "FLATTEN" || opname == "UNFLATTEN") ok.push_back("RESHAPE");
        if (opname == "TRANSPOSE") ok.push_back("PERMUTE");
        EXPECT_NE(std::find(ok.begin(), ok.end(), prefix), ok.end()) << c.start << " | " << c.chain << ": " << msg;
        EXPECT_NE(msg.find(shape_str(x.shape())), std::string::npos) << c.start << " | " << c.chain << ": " << msg;
        break;
      }
      x = apply_step(x, ss[i]);
    }
    if (c.error.empty()) {
      ASSERT_FALSE(c.str.empty() || c.cleanup.empty() || c.shape.empty());
      EXPECT_EQ(shape_field(x.shape()), c.shape) << c.start << " | " << c.chain;
      EXPECT_EQ(x.str(), c.str) << c.start << " | " << c.chain;
      UOp cl = graph_rewrite(x, mop_cleanup());
      EXPECT_EQ(cl.str(), c.cleanup) << c.start << " | " << c.chain;
      EXPECT_UOP_EQ(graph_rewrite(x, symbolic_simple()), cl);
      EXPECT_EQ(cl.shape(), x.shape());
    }
  }
  EXPECT_EQ(live_uops(), before);
}

std::string case_name(const ::testing::TestParamInfo<MovementCase>& info) { return "c" + std::to_string(info.index); }
INSTANTIATE_TEST_SUITE_P(Cases, MovementCaseTest, ::testing::ValuesIn(load_cases()), case_name);

TEST(Movement, CaseFileLoaded) {
  auto cases = load_cases();
  EXPECT_EQ(cases.size(), 110u);
  size_t errors = 0;
  for (auto& c : cases) errors += !c.error.empty();
  EXPECT_EQ(errors, 32u);
}

// ***** error messages *****

TEST(Movement, ErrorMessages) {
  UOp x = buffer(6).reshape({2, 3});
  EXPECT_EQ(error_of([&] { x.reshape({4, 2}); }), "RESHAPE: cannot reshape (2, 3) to (4, 2)");
  EXPECT_EQ(error_of([&] { x.reshape({-1, -1}); }), "RESHAPE: only one dimension can be inferred using -1, got (-1, -1) for shape (2, 3)");
  EXPECT_EQ(error_of([&] { x.reshape({-2, -3}); }), "RESHAPE: shape can't contain negative numbers, cannot reshape (2, 3) to (-2, -3)");
  EXPECT_EQ(error_of([&] { x.expand({4, 3}); }), "EXPAND: cannot broadcast (2, 3) to (4, 3)");
  EXPECT_EQ(error_of([&] { x.permute({0, 0}); }), "PERMUTE: (0, 0) is not a valid permutation of shape (2, 3)");
  EXPECT_EQ(error_of([&] { x.permute({0, 2}); }), "PERMUTE: dim 2 out of range [-2, 1] for shape (2, 3)");
  EXPECT_EQ(error_of([&] { x.pad({{1, 1}}); }), "PAD: got 1 (before, after) pairs for shape (2, 3)");
  EXPECT_EQ(error_of([&] { x.pad({{-1, 0}, {0, 0}}); }), "PAD: invalid pad ((-1, 0), (0, 0)) for shape (2, 3)");
  EXPECT_EQ(error_of([&] { x.shrink({{0, 3}, {0, 3}}); }), "SHRINK: invalid shrink ((0, 3), (0, 3)) for shape (2, 3)");
  EXPECT_EQ(error_of([&] { x.flip({0, 0}); }), "FLIP: dim can appear at most once, got (0, 0) for shape (2, 3)");
  EXPECT_EQ(error_of([&] { x.flip({2}); }), "FLIP: dim 2 out of range [-2, 1] for shape (2, 3)");
  // the raw node is checked where it is built, by the shape code
  EXPECT_EQ(error_of([&] { x.mop(Ops::RESHAPE, {5}); }), "RESHAPE: cannot reshape (2, 3) to (5,)");
  EXPECT_EQ(error_of([&] { x.mop(Ops::PERMUTE, {1, 1}); }), "PERMUTE: invalid permutation (1, 1) of shape (2, 3)");
  EXPECT_EQ(error_of([&] { x.mop_pairs(Ops::SHRINK, {{0, 2}, {1, 3}}); }), "SHRINK: invalid shrink ((0, 2), (1, 3)) for shape (2, 3)");
  EXPECT_EQ(error_of([&] { x.mop_pairs(Ops::PAD, {{0, 2}, {1, 3}}); }), "PAD: invalid pad ((0, 2), (1, 3)) for shape (2, 3)");
  EXPECT_EQ(error_of([&] { x.mop(Ops::FLIP, {1}); }), "FLIP: bad flip (1,) on shape (2, 3)");
  EXPECT_EQ(error_of([&] { x.mop(Ops::PAD, {1}); }), "PAD is not a movement op taking a tuple");
  EXPECT_EQ(error_of([&] { x.mop_pairs(Ops::RESHAPE, {{0, 1}}); }),
            "RESHAPE is not a movement op taking pairs");
  EXPECT_EQ(error_of([&] { x.marg_pairs(); }), "RESHAPE is not PAD or SHRINK");
  EXPECT_EQ(error_of([&] { buffer(6).marg(); }), "BUFFER is not a movement op");
  EXPECT_EQ(error_of([&] { UOp::sink({x}).reshape({6}); }), "shape requested, but SINK doesn't have a shape");
}

// ***** marg, base, raw mop *****

TEST(Movement, MargAndBase) {
  UOp b = buffer(24), x = b.reshape({2, 3, 4});
  EXPECT_EQ(x.marg(), (Shape{2, 3, 4}));
  EXPECT_EQ(b.reshape({24}), b);
  UOp p = x.permute({2, 0, 1});
  EXPECT_EQ(p.marg(), (Shape{2, 0, 1}));
  EXPECT_EQ(p.shape(), (Shape{4, 2, 3}));
  UOp pd = p.pad({{1, 0}, {0, 2}, {0, 0}});
  EXPECT_EQ(pd.marg_pairs(), (std::vector<std::pair<int64_t, int64_t>>{{1, 5}, {0, 4}, {0, 3}}));
  UOp sh = pd.shrink({{1, 5}, {0, 2}, {1, 3}});
  EXPECT_EQ(sh.marg_pairs(), (std::vector<std::pair<int64_t, int64_t>>{{1, 4}, {0, 2}, {1, 2}}));
  UOp fl = sh.flip({-1});
  EXPECT_EQ(fl.marg(), (Shape{0, 0, 1}));
  UOp e = fl.reshape({1, 4, 2, 2}).expand({3, -1, -1, -1});
  EXPECT_EQ(e.marg(), (Shape{3}));
  EXPECT_EQ(e.shape(), (Shape{3, 4, 2, 2}));
  EXPECT_EQ(e.base(), b);
  EXPECT_EQ(UOp::make(Ops::DETACH, {e}).base(), b);
  EXPECT_EQ(b.base(), b);
  // raw mop is _mop: no front-end no-op folding, one CONST for a 1-d shape arg
  UOp same = x.mop(Ops::RESHAPE, {2, 3, 4});
  EXPECT_NE(same, x);
  EXPECT_EQ(same.src(1).op(), Ops::STACK);
  EXPECT_EQ(x.mop(Ops::RESHAPE, {24}).src(1).op(), Ops::CONST);
  EXPECT_EQ(x.mop(Ops::EXPAND, {}), x);
  EXPECT_EQ(error_of([&] { b.reshape({}); }), "RESHAPE: cannot reshape (24,) to ()");
  EXPECT_EQ(buffer(1).reshape({}).shape(), Shape{});
}

// ***** the INDEX/STACK cleanups (expectations from tinygrad) *****

TEST(Movement, IndexStackCleanup) {
  UOp b = buffer(3);
  auto at = [](const UOp& x, UOp i) { return UOp::make(Ops::INDEX, {x, i}); };
  UOp stk = UOp::stack({at(b, lit(0)), at(b, lit(1)), at(b, lit(2))});
  EXPECT_EQ(stk.dtype(), dtypes::float32);
  EXPECT_UOP_EQ(graph_rewrite(stk, mop_cleanup()), b);
  UOp stk2 = UOp::stack({at(b, lit(1)), at(b, lit(0)), at(b, lit(2))});
  EXPECT_UOP_EQ(graph_rewrite(stk2, mop_cleanup()), stk2);
  UOp c7 = lit(7), c8 = lit(8), c9 = lit(9);
  UOp i = at(UOp::stack({c7, c8, c9}), lit(1));
  EXPECT_EQ(i.dtype(), dtypes::weakint);
  EXPECT_UOP_EQ(graph_rewrite(i, mop_cleanup()), c8);
  EXPECT_UOP_EQ(graph_rewrite(at(UOp::stack({c7, c8, c9}), lit(-1)), mop_cleanup()), c9);

  UOp b20 = buffer(20).reshape({4, 5});
  UOp r0 = UOp::range(4, 0), r1 = UOp::range(5, 1);
  UOp inner = at(b20, r0), outer = at(inner, r1);
  EXPECT_EQ(inner.shape(), Shape{5});
  EXPECT_EQ(outer.shape(), Shape{});
  EXPECT_EQ(graph_rewrite(outer, mop_cleanup()).str(),
            "UOp(Ops.INDEX, dtypes.float, arg=None, src=(\n"
            "  UOp(Ops.RESHAPE, dtypes.float, arg=None, src=(\n"
            "    UOp(Ops.BUFFER, dtypes.float, arg=ParamArg(0, dtypes.float, device='CPU'), src=(\n"
            "      UOp(Ops.CONST, dtypes.weakint, arg=20, src=()),)),\n"
            "    UOp(Ops.STACK, dtypes.weakint, arg=None, src=(\n"
            "      x4:=UOp(Ops.CONST, dtypes.weakint, arg=4, src=()),\n"
            "      x5:=UOp(Ops.CONST, dtypes.weakint, arg=5, src=()),)),)),\n"
            "  UOp(Ops.RANGE, dtypes.weakint, arg=(0, AxisType.WEAK), src=(\n"
            "    x4,)),\n"
            "  UOp(Ops.RANGE, dtypes.weakint, arg=(1, AxisType.WEAK), src=(\n"
            "    x5,)),))");

  UOp ib = buffer(3, dtypes::int32, 1), b1 = buffer(20), r2 = UOp::range(3, 2);
  UOp outer2 = at(at(b1, ib), r2);
  EXPECT_EQ(at(b1, ib).shape(), Shape{3});
  UOp got = graph_rewrite(outer2, mop_cleanup());
  EXPECT_EQ(got.str(),
            "UOp(Ops.INDEX, dtypes.float, arg=None, src=(\n"
            "  UOp(Ops.BUFFER, dtypes.float, arg=ParamArg(0, dtypes.float, device='CPU'), src=(\n"
            "    UOp(Ops.CONST, dtypes.weakint, arg=20, src=()),)),\n"
            "  UOp(Ops.INDEX, dtypes.int, arg=None, src=(\n"
            "    UOp(Ops.BUFFER, dtypes.int, arg=ParamArg(1, dtypes.int, device='CPU'), src=(\n"
            "      x4:=UOp(Ops.CONST, dtypes.weakint, arg=3, src=()),)),\n"
            "    UOp(Ops.RANGE, dtypes.weakint, arg=(2, AxisType.WEAK), src=(\n"
            "      x4,)),)),))");
  EXPECT_UOP_EQ(graph_rewrite(outer2, symbolic_simple()), got);
}

}  // namespace
