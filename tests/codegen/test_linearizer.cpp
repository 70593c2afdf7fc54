// The linearizer against tinygrad's codegen/late/linearizer.py: the SINKs of the hand-linearized kernels of
// tests/renderer/test_cstyle.cpp (builders in tests/kernel_programs.h) are linearized, and the order must be the one
// tinygrad's linearize gives for the same graphs (tests/tools/gen_linearizer_cases.py --cpp prints the table below:
// the order as positions in the hand-built list, and the C tinygrad renders from it where that differs from the hand
// list's C). Most hand lists are already in tinygrad's order; where_var holds an unused const, consts/misc/special
// were ordered by hand differently.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "codegen/late/linearizer.h"
#include "renderer/cstyle.h"
#include "../kernel_programs.h"
#include "tg/context.h"

using namespace tg;
using namespace tg::testprogs;

namespace {

struct Case {
  const char* name;
  std::pair<std::string, L> (*build)();
  std::vector<size_t> order;  // tinygrad's linearized order, as positions in the hand-built list
  const char* lin_c;          // tinygrad's C for the linearized list; nullptr: the same as the hand-built list's
};

// ***** printed by tests/tools/gen_linearizer_cases.py --cpp at the reference commit *****
const Case kCases[] = {
    {"add", prog_add, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}, nullptr},
    {"reduce", prog_reduce, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36}, nullptr},
    {"idiv_half", prog_idiv_half, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}, nullptr},
    {"gated", prog_gated, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24}, nullptr},
    {"where_var", prog_where_var, {0, 1, 2, 3, 4, 5, 6, 7, 8, 18, 11, 12, 14, 13, 15, 16, 17, 23, 21, 20, 19, 22, 24, 25, 26}, nullptr},
    {"vec4", prog_vec4, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38}, nullptr},
    {"consts", prog_consts, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 37, 38, 43, 44, 46, 47, 52, 53, 62, 65, 67, 73, 60, 69, 20, 21, 22, 23, 24, 25, 34, 35, 36, 14, 15, 16, 17, 18, 19, 26, 27, 28, 29, 32, 33, 30, 31, 50, 54, 48, 55, 45, 39, 40, 41, 56, 51, 63, 49, 42, 57, 64, 66, 68, 74, 58, 59, 61, 70, 71, 72, 75}, R"TG(
void consts(unsigned int* restrict data0_1, long* restrict data1_1, unsigned long* restrict data2_1, _Bool* restrict data3_1, signed char* restrict data4_1, unsigned char* restrict data5_1, __fp16* restrict data6_1, float* restrict data7_1, volatile double* restrict data8_1, short* restrict data9_1) {
  unsigned int val0 = (*(data0_1+0));
  long val1 = (*(data1_1+0));
  float val2 = (*(data7_1+0));
  double val3 = (*(data8_1+0));
  double alu0 = (__builtin_sqrt(val3)+0.25);
  unsigned int alu1 = ((val0^7u)>>1u);
  unsigned int alu2 = ((alu1<7u)?7u:alu1);
  double alu3 = ((alu0!=alu0)?((double)(__builtin_nanf(""))):alu0);
  *(data3_1+0) = ((__builtin_bit_cast(unsigned int, (float)(val2))==7u)&1);
  *(data4_1+0) = ((signed char)(-3));
  *(data5_1+0) = ((unsigned char)(200u));
  *(data9_1+0) = ((short)(-7));
  *(data0_1+0) = alu2;
  *(data1_1+0) = (val1*-5l);
  *(data2_1+0) = 9223372036854775808ul;
  *(data6_1+0) = ((__fp16)(1.5f));
  *(data7_1+0) = (__builtin_truncf(val2)/((float)(__builtin_inff())));
  *(data8_1+0) = alu3;
}
)TG"},
    {"misc", prog_misc, {0, 1, 2, 8, 9, 21, 25, 26, 23, 31, 32, 27, 28, 29, 33, 30, 24, 34, 6, 7, 4, 5, 10, 11, 15, 16, 17, 19, 20, 22, 35}, R"TG(
void misc(float* restrict data0_16) {
  unsigned int val0 = (*(((unsigned int*)(data0_16))+7));
  unsigned int alu0 = (val0^1u);
  *(((unsigned int*)(data0_16))+7) = alu0;
  for (;;) {
    if (!((alu0!=0u))) { break; }
  }
  for (int Lidx0 = 0; Lidx0 < 4; Lidx0++) {
    if ((Lidx0<2)) {
    }
  }
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
)TG"},
    {"special", prog_special, {0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13, 15, 6, 7, 14, 16, 17}, nullptr},
};

// ***** kernels before split ends / add control flow: sibling and nested loops (gen_linearizer_cases.py's cfg_*) *****
// they go through pm_split_ends, add_control_flow and linearize, as full_rewrite_to_sink's last passes and do_linearize

UOp F(double v) { return cc(v, dtypes::float32); }
UOp Ic(int64_t v) { return cc(v, I32); }
UOp madd(const UOp& r0, const UOp& r) { return alu(Ops::ADD, {alu(Ops::MUL, {r0, Ic(8)}), r}); }

UOp cfg_siblings() {
  UOp d0 = param(0, dtypes::float32, 16), d1 = param(1, dtypes::float32, 16), d2 = param(2, dtypes::float32, 16);
  UOp d3 = param(3, dtypes::float32, 16);
  UOp r0 = rng(Ic(16), 0), r1 = rng(Ic(8), 1), r2 = rng(Ic(4), 2);
  UOp e0 = end(store(idx(d0, r0), alu(Ops::MUL, {load(idx(d3, r0)), F(2.0)})), r0);
  UOp e1 = end(store(idx(d1, r1), alu(Ops::ADD, {load(idx(d3, r1)), F(1.0)})), r1);
  UOp e2 = end(store(idx(d2, r2), F(0.0)), r2);
  return sink("cfg_siblings", {e0, e1, e2});
}

UOp cfg_nested_split() {
  UOp d0 = param(0, dtypes::float32, 32), d1 = param(1, dtypes::float32, 32);
  UOp r0 = rng(Ic(4), 0), r1 = rng(Ic(8), 1), i = madd(r0, r1);
  return sink("cfg_nested_split", {UOp::make(Ops::END, dtypes::void_, {store(idx(d0, i), load(idx(d1, i))), r0, r1})});
}

UOp cfg_inner_siblings() {
  UOp d0 = param(0, dtypes::float32, 32), d1 = param(1, dtypes::float32, 32), d2 = param(2, dtypes::float32, 32);
  UOp r0 = rng(Ic(4), 0), r1 = rng(Ic(8), 1), r2 = rng(Ic(8), 2), i1 = madd(r0, r1), i2 = madd(r0, r2);
  UOp e1 = end(store(idx(d0, i1), load(idx(d2, i1))), r1);
  UOp e2 = end(store(idx(d1, i2), alu(Ops::MUL, {load(idx(d2, i2)), F(3.0)})), r2);
  return sink("cfg_inner_siblings", {end(UOp::make(Ops::GROUP, dtypes::void_, {e1, e2}), r0)});
}

UOp cfg_dependent() {
  UOp d0 = param(0, dtypes::float32, 32), d1 = param(1, dtypes::float32, 32);
  UOp acc = UOp::make(Ops::BUFFER, dtypes::float32, {Ic(1)}, Arg(ParamArg{0, dtypes::float32, {}, {}, {}, AddrSpace::REG}));
  UOp r0 = rng(Ic(4), 0), r1 = rng(Ic(8), 1, AxisType::REDUCE), r2 = rng(Ic(8), 2);
  UOp st0 = store(idx(after(acc, {r0}), Ic(0)), F(0.0));
  UOp a1 = idx(after(acc, {st0, r1}), Ic(0));
  UOp e1 = end(store(a1, alu(Ops::ADD, {load(a1), load(idx(d1, madd(r0, r1)))})), r1);
  UOp tot = load(idx(after(acc, {e1}), Ic(0)));
  UOp i2 = madd(r0, r2);
  UOp e2 = end(store(idx(d0, i2), alu(Ops::MUL, {load(idx(d1, i2)), tot})), r2);
  return sink("cfg_dependent", {end(e2, r0)});
}

struct CfgCase {
  const char* name;
  UOp (*build)();
  const char* expected;  // one line per uop: op, sources as positions in the list, RANGE axis / PARAM slot / CONST value
  const char* c;         // what tinygrad's ClangRenderer makes of the linearized list
};

// ***** printed by tests/tools/gen_linearizer_cases.py --cpp at the reference commit *****
const CfgCase kCfgCases[] = {
    {"cfg_siblings", cfg_siblings, R"TG(
CONST  16
CAST 0
PARAM 1 0
PARAM 1 1
PARAM 1 2
PARAM 1 3
CONST  2.0
CAST 6
RANGE 1 0
INDEX 5,8
LOAD 9
INDEX 2,8
MUL 10,7
STORE 11,12
END 13,8
CONST  8
CAST 15
CONST  1.0
CAST 17
RANGE 16,14 1
INDEX 5,19
LOAD 20
INDEX 3,19
ADD 21,18
STORE 22,23
END 24,19
CONST  4
CAST 26
CONST  0.0
CAST 28
RANGE 27,25 2
INDEX 4,30
STORE 31,29
END 32,30
SINK 14,25,33
)TG",
     R"TG(
void cfg_siblings(float* restrict data0_16, float* restrict data1_16, float* restrict data2_16, float* restrict data3_16) {
  for (int Lidx0 = 0; Lidx0 < 16; Lidx0++) {
    float val0 = (*(data3_16+Lidx0));
    *(data0_16+Lidx0) = (val0*2.0f);
  }
  for (int Lidx1 = 0; Lidx1 < 8; Lidx1++) {
    float val1 = (*(data3_16+Lidx1));
    *(data1_16+Lidx1) = (val1+1.0f);
  }
  for (int Lidx2 = 0; Lidx2 < 4; Lidx2++) {
    *(data2_16+Lidx2) = 0.0f;
  }
}
)TG"},
    {"cfg_nested_split", cfg_nested_split, R"TG(
CONST  32
CAST 0
PARAM 1 0
PARAM 1 1
CONST  4
CAST 4
CONST  8
CAST 6
RANGE 5 0
MUL 8,7
RANGE 7,8 1
ADD 9,10
INDEX 3,11
LOAD 12
INDEX 2,11
STORE 14,13
END 15,10
END 16,8
SINK 17
)TG",
     R"TG(
void cfg_nested_split(float* restrict data0_32, float* restrict data1_32) {
  for (int Lidx0 = 0; Lidx0 < 4; Lidx0++) {
    for (int Lidx1 = 0; Lidx1 < 8; Lidx1++) {
      int alu0 = ((Lidx0*8)+Lidx1);
      float val0 = (*(data1_32+alu0));
      *(data0_32+alu0) = val0;
    }
  }
}
)TG"},
    {"cfg_inner_siblings", cfg_inner_siblings, R"TG(
CONST  32
CAST 0
PARAM 1 0
PARAM 1 1
PARAM 1 2
CONST  4
CAST 5
CONST  8
CAST 7
CONST  3.0
CAST 9
RANGE 6 0
MUL 11,8
RANGE 8,11 1
ADD 12,13
INDEX 4,14
LOAD 15
INDEX 2,14
STORE 17,16
END 18,13
RANGE 8,19 2
ADD 12,20
INDEX 4,21
LOAD 22
INDEX 3,21
MUL 23,10
STORE 24,25
END 26,20
GROUP 19,27
END 28,11
SINK 29
)TG",
     R"TG(
void cfg_inner_siblings(float* restrict data0_32, float* restrict data1_32, float* restrict data2_32) {
  for (int Lidx0 = 0; Lidx0 < 4; Lidx0++) {
    int alu0 = (Lidx0*8);
    for (int Lidx1 = 0; Lidx1 < 8; Lidx1++) {
      int alu1 = (alu0+Lidx1);
      float val0 = (*(data2_32+alu1));
      *(data0_32+alu1) = val0;
    }
    for (int Lidx2 = 0; Lidx2 < 8; Lidx2++) {
      int alu4 = (alu0+Lidx2);
      float val1 = (*(data2_32+alu4));
      *(data1_32+alu4) = (val1*3.0f);
    }
  }
}
)TG"},
    {"cfg_dependent", cfg_dependent, R"TG(
CONST  32
CAST 0
PARAM 1 0
PARAM 1 1
CONST  1
CAST 4
BUFFER 5
CONST  0
CAST 7
CONST  4
CAST 9
CONST  8
CAST 11
CONST  0.0
CAST 13
RANGE 10 0
AFTER 6,15
INDEX 16,8
MUL 15,12
STORE 17,14
RANGE 12,15 1
ADD 18,20
INDEX 3,21
LOAD 22
AFTER 6,19,20
INDEX 24,8
LOAD 25
ADD 26,23
STORE 25,27
END 28,20
AFTER 6,29
INDEX 30,8
LOAD 31
RANGE 12,29 2
ADD 18,33
INDEX 3,34
LOAD 35
INDEX 2,34
MUL 36,32
STORE 37,38
END 39,33
END 40,15
SINK 41
)TG",
     R"TG(
void cfg_dependent(float* restrict data0_32, float* restrict data1_32) {
  float buf0[1];
  for (int Lidx0 = 0; Lidx0 < 4; Lidx0++) {
    int alu0 = (Lidx0*8);
    *(buf0+0) = 0.0f;
    for (int Ridx1 = 0; Ridx1 < 8; Ridx1++) {
      float val0 = (*(data1_32+(alu0+Ridx1)));
      *(buf0+0) = ((*(buf0+0))+val0);
    }
    for (int Lidx2 = 0; Lidx2 < 8; Lidx2++) {
      int alu4 = (alu0+Lidx2);
      float val1 = (*(data1_32+alu4));
      *(data0_32+alu4) = (val1*(*(buf0+0)));
    }
  }
}
)TG"},
};

// the line format of gen_linearizer_cases.py
std::string lines(const L& lin) {
  std::string out = "\n";
  for (const UOp& u : lin) {
    std::string srcs;
    for (const UOp& s : u.src()) {
      if (!srcs.empty()) srcs += ",";
      srcs += std::to_string(std::find(lin.begin(), lin.end(), s) - lin.begin());
    }
    std::string extra = u.op() == Ops::RANGE   ? std::to_string(u.arg().ints()[0])
                        : u.op() == Ops::PARAM ? std::to_string(u.arg().param().slot)
                        : u.op() == Ops::CONST ? u.val().str()
                                               : "";
    std::string l = std::string(op_name(u.op())) + " " + srcs + " " + extra;
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  }
  return out;
}

std::string describe(const L& lst) {
  std::string s;
  for (const UOp& u : lst) s += std::string(op_name(u.op())) + " ";
  return s;
}

}  // namespace

TEST(Linearizer, MatchesTinygradOrder) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    auto [name, lst] = c.build();
    L expected;
    for (size_t i : c.order) expected.push_back(lst.at(i));
    L got = linearize(lst.back());
    EXPECT_EQ(got, expected) << "got:      " << describe(got) << "\nexpected: " << describe(expected);
    EXPECT_EQ(got.back(), lst.back());
  }
}

TEST(Linearizer, HandOrderedListsAreTinygradsOrder) {
  // the kernels whose hand-built list is exactly what the linearizer produces
  for (const Case& c : kCases) {
    std::string n = c.name;
    if (n == "where_var" || n == "consts" || n == "misc" || n == "special") continue;
    SCOPED_TRACE(c.name);
    auto [name, lst] = c.build();
    EXPECT_EQ(linearize(lst.back()), lst);
  }
}

TEST(Linearizer, RendersAsTinygrad) {
  ClangRenderer ren;
  for (const Case& c : kCases) {
    if (std::string(c.name) == "special") continue;  // thread ids: clang renders no SPECIAL
    SCOPED_TRACE(c.name);
    auto [name, lst] = c.build();
    std::string got = ren.render(linearize(lst.back()));
    if (c.lin_c) {
      EXPECT_EQ(got, c.lin_c);
      EXPECT_NE(got, ren.render(lst));
    } else {
      EXPECT_EQ(got, ren.render(lst));
    }
  }
}

TEST(Linearizer, Ranges) {
  auto [name, lst] = prog_reduce();
  // r_4_4: r1 (index 15) is the outer loop, r0 (index 20) the reduce loop inside it; END e0 (29) closes r0
  const UOp &r1 = lst[15], &r0 = lst[20], &add = lst[21], &e0 = lst[29], &e1 = lst[35];
  EXPECT_EQ(uop_ranges(r1), L{r1});
  EXPECT_EQ(uop_ranges(r0), (L{r0, r1}));
  EXPECT_EQ(uop_ranges(add), (L{r1, r0}));
  EXPECT_EQ(uop_ranges(e0), L{r1});
  EXPECT_TRUE(uop_ranges(e1).empty());
}

TEST(Linearizer, ParamsBySlotAndRangesEarly) {
  // independent nodes: PARAMs go first in slot order whatever the graph order, a load before the ALU that doesn't need it
  UOp c0 = cc(0, I32);
  UOp d2 = param(2, dtypes::float32, 16), d0 = param(0, dtypes::float32, 16), d1 = param(1, dtypes::float32, 16);
  UOp st = store(idx(d0, c0), load(idx(d2, c0))), st2 = store(idx(d1, c0), cc(1.0, dtypes::float32));
  UOp k = sink("k", {st, st2});
  L got = linearize(k);
  L params;
  for (const UOp& u : got) if (u.op() == Ops::PARAM) params.push_back(u);
  EXPECT_EQ(params, (L{d0, d1, d2}));
  EXPECT_EQ(got.size(), k.toposort().size());
  EXPECT_EQ(got.back(), k);
}

TEST(Linearizer, ControlFlowMatchesTinygrad) {
  Context tinygrad_kernels({{"SIMD", 0}});  // our CPU SIMD shaping departs from tinygrad on purpose
  for (const CfgCase& c : kCfgCases) {
    SCOPED_TRACE(c.name);
    UOp s = graph_rewrite(c.build(), pm_split_ends());
    s = add_control_flow(s);
    L lin = linearize(s);
    EXPECT_EQ(lines(lin), c.expected);
    EXPECT_EQ(ClangRenderer().render(lin), c.c);
  }
}

TEST(Linearizer, SplitEnds) {
  UOp s = cfg_nested_split();
  UOp e = s.src(0), r0 = e.src(1), r1 = e.src(2);
  UOp split = graph_rewrite(s, pm_split_ends()).src(0);
  // innermost (highest axis) first: END(END(store, r1), r0)
  ASSERT_EQ(split.op(), Ops::END);
  EXPECT_EQ(split.src(1), r0);
  EXPECT_EQ(split.src(0).op(), Ops::END);
  EXPECT_EQ(split.src(0).src(1), r1);
  EXPECT_EQ(split.src(0).src(0), e.src(0));
}

TEST(Linearizer, SiblingLoopsAreChained) {
  // the CFG edges: each later sibling's RANGE comes after the previous sibling's END
  UOp s = cfg_siblings();
  CFGContext ctx(s);
  ASSERT_EQ(ctx.edges.size(), 2u);
  UOp e0 = s.src(0), e1 = s.src(1), e2 = s.src(2);
  EXPECT_EQ(ctx.edges.at(e1.src(1)), e0);
  EXPECT_EQ(ctx.edges.at(e2.src(1)), e1);
}
