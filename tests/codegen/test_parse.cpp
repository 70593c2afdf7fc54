// parse_uop (tests/support/parse.h) and the arg objects (src/uop/args.h) against tinygrad's printed graphs: every Tensor graph
// and kernel AST of tests/data/codegen_cases.txt parses and prints back to the same text.
#include <gtest/gtest.h>

#include <regex>

#include "codegen_cases.h"
#include "uop/args.h"
#include "support/parse.h"

using namespace tg;

namespace {

// the two places UOp::str() prints differently from tinygrad (see src/uop/parse.cpp)
std::string as_we_print(const std::string& s) {
  static const std::regex cf(R"(ConstFloat\(([^()]*)\))"), flip(R"(Ops\.FLIP, (dtypes\.\w+), arg=\(([^()]*)\))");
  std::string out = std::regex_replace(s, cf, "$1"), res;
  std::smatch m;
  while (std::regex_search(out, m, flip)) {
    std::string a = m[2].str();
    a = std::regex_replace(std::regex_replace(a, std::regex("True"), "1"), std::regex("False"), "0");
    res += m.prefix().str() + "Ops.FLIP, " + m[1].str() + ", arg=(" + a + ")";
    out = m.suffix().str();
  }
  return res + out;
}

std::string error_of(std::string_view text) {
  try { parse_uop(text); } catch (const Error& e) { return e.what(); }
  return "";
}

}  // namespace

TEST(Parse, RoundTripsTinygradGraphsAndAsts) {
  auto cases = codegen_cases::load();
  ASSERT_GE(cases.size(), 50u);
  size_t n = 0;
  for (auto& c : cases) {
    std::vector<std::string> texts{c.graph};
    for (auto& k : c.kernels) texts.push_back(k.ast);
    for (auto& t : texts) {
      UOp u;
      ASSERT_NO_THROW(u = parse_uop(t)) << c.name;
      EXPECT_EQ(u.str(), as_we_print(t)) << c.name;
      n++;
    }
  }
  EXPECT_GE(n, 130u);
}

TEST(Parse, Args) {
  UOp s = parse_uop("UOp(Ops.SINK, dtypes.void, arg=KernelInfo(name='r_3_4', axis_types=(AxisType.LOOP, AxisType.REDUCE), "
                    "dont_use_locals=True, applied_opts=(Opt(op=OptOps.UPCAST, axis=0, arg=4),), opts_to_apply=(), "
                    "estimates=Estimates(ops=12, lds=60, mem=60), beam=2), src=())");
  const KernelInfo* ki = kernel_info(s);
  ASSERT_TRUE(ki);
  EXPECT_EQ(ki->function_name(), "r_3_4");
  EXPECT_EQ(ki->axis_types, (std::vector<AxisType>{AxisType::LOOP, AxisType::REDUCE}));
  EXPECT_EQ(ki->applied_opts.at(0).str(), "Opt(op=OptOps.UPCAST, axis=0, arg=4)");
  EXPECT_EQ(ki->estimates->mem, 60);
  EXPECT_EQ(s.str(), "UOp(Ops.SINK, dtypes.void, arg=KernelInfo(name='r_3_4', axis_types=(AxisType.LOOP, AxisType.REDUCE), "
                     "dont_use_locals=True, applied_opts=(Opt(op=OptOps.UPCAST, axis=0, arg=4),), opts_to_apply=(), "
                     "estimates=Estimates(ops=12, lds=60, mem=60), beam=2), src=())");
  EXPECT_EQ(KernelInfo().str(), "KernelInfo(name='test', axis_types=(), dont_use_locals=False, applied_opts=(), opts_to_apply=None, "
                                "estimates=None, beam=0)");
  KernelInfo colored;
  colored.name = "\x1b[90mr\x1b[0m_3 4";
  EXPECT_EQ(colored.function_name(), "r_3204");
  // keyword and positional forms, a tag, and the printer's x<n>:= naming
  const char* t = "UOp(Ops.STAGE, dtypes.float, arg=BufferizeOpts(device=('CPU', 'CPU:1'), addrspace=AddrSpace.LOCAL, removable=False), tag='t', src=(\n"
                  "  x0:=UOp(Ops.BUFFER, dtypes.weakint, arg=ParamArg(-1, dtypes.weakint, vmin_vmax=(1, 10), multiple_of=1, name='n', addrspace=AddrSpace.ALU), src=(\n"
                  "    UOp(Ops.STACK, dtypes.void, arg=None, src=()),)),\n"
                  "  x0,\n"
                  "  UOp(Ops.CALL, dtypes.void, arg=CallInfo(None, 'k', True, False), src=()),))";
  UOp st = parse_uop(t);
  EXPECT_EQ(st.str(), t);
  EXPECT_EQ(st.src(0), st.src(1));
  EXPECT_EQ(std::get<std::vector<std::string>>(bufferize_opts(st)->device).size(), 2u);
  EXPECT_EQ(call_info(st.src(2))->name, "k");
  BufferizeOpts local;
  local.device = int64_t(3);
  EXPECT_EQ(local.str(), "BufferizeOpts(device=3, addrspace=AddrSpace.GLOBAL, removable=True)");
  EXPECT_EQ(py_repr("it's"), "\"it's\"");
  // consts: float spellings, Invalid, bools; RANGE and REDUCE tuples
  EXPECT_EQ(parse_uop("UOp(Ops.CONST, dtypes.float, arg=ConstFloat(-inf), src=())").val().str(), "-inf");
  EXPECT_EQ(parse_uop("UOp(Ops.CONST, dtypes.float, arg=1e-05, src=())").val().f, 1e-05);
  EXPECT_TRUE(parse_uop("UOp(Ops.CONST, dtypes.bool, arg=Invalid, src=())").is_invalid());
  EXPECT_EQ(parse_uop("UOp(Ops.CONST, dtypes.int, arg=-7, src=())").val(), ConstVal(-7));
  UOp r = parse_uop("UOp(Ops.RANGE, dtypes.weakint, arg=(0, 2, AxisType.REDUCE), src=(UOp(Ops.CONST, dtypes.weakint, arg=4, src=()),))");
  EXPECT_EQ(r.arg().ints(), (Arg::Ints{0, 2, int64_t(AxisType::REDUCE)}));
}

TEST(Parse, ErrorsNameWhatAndWhere) {
  EXPECT_EQ(error_of("UOp(Ops.FOO, dtypes.void, arg=None, src=())"), "parse_uop: unknown op 'Ops.FOO' at line 1 col 5 near 'Ops.FOO, dtypes.void'");
  EXPECT_EQ(error_of("UOp(Ops.SINK, dtypes.void, arg=None, src=(\n  x3,))"), "parse_uop: reference to undefined 'x3' at line 2 col 3 near 'x3,))'");
  EXPECT_EQ(error_of("UOp(Ops.SINK, dtypes.void, arg=None, src=()"), "parse_uop: expected ')' at line 1 col 44 (end of text)");
  EXPECT_EQ(error_of("UOp(Ops.SINK, dtypes.flt, arg=None, src=())"), "parse_uop: unknown dtype 'dtypes.flt' at line 1 col 15 near 'dtypes.flt, arg=None'");
  EXPECT_EQ(error_of("UOp(Ops.SINK, dtypes.void, arg=Foo(1), src=())"), "parse_uop: unknown arg type 'Foo' at line 1 col 32 near 'Foo(1), src=())'");
  EXPECT_EQ(error_of("UOp(Ops.SINK, dtypes.void, arg=None, src=()) x"), "parse_uop: trailing text after the graph at line 1 col 46 near 'x'");
  EXPECT_NE(error_of("UOp(Ops.CONST, dtypes.int, arg=None, src=())").find("bad node"), std::string::npos);
}
