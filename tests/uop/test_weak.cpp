// Lowering weak dtypes before rendering: the result graphs must equal tinygrad's (tests/tools/gen_weak_cases.py).
#include <gtest/gtest.h>

#include <string>
#include <unordered_map>

#include "uop/weak.h"

using namespace tg;

namespace {
std::string lowered(const UOp& e) {
  std::unordered_map<UOp, UOp> memo;
  std::string s = graph_rewrite(e, pm_lower_index_dtype(), &memo).str();
  // a trailing newline keeps the expected strings uniform
  return s + "\n";
}
}  // namespace

TEST(WeakLowering, MatchesTinygrad) {
  UOp r0 = UOp::range(16, 0), r1 = UOp::range(8, 1);
  UOp a = UOp::variable("a", 0, int64_t(1) << 40), b = UOp::variable("b", 0, 10);
  EXPECT_EQ(lowered((r0 * 4 + r1).cast(dtypes::int32)),
      "UOp(Ops.ADD, dtypes.int, arg=None, src=(\n"
      "  UOp(Ops.MUL, dtypes.int, arg=None, src=(\n"
      "    UOp(Ops.CAST, dtypes.int, arg=dtypes.int, src=(\n"
      "      UOp(Ops.RANGE, dtypes.int, arg=(0, AxisType.WEAK), src=(\n"
      "        UOp(Ops.CONST, dtypes.int, arg=16, src=()),)),)),\n"
      "    UOp(Ops.CONST, dtypes.int, arg=4, src=()),)),\n"
      "  UOp(Ops.CAST, dtypes.int, arg=dtypes.int, src=(\n"
      "    UOp(Ops.RANGE, dtypes.int, arg=(1, AxisType.WEAK), src=(\n"
      "      UOp(Ops.CONST, dtypes.int, arg=8, src=()),)),)),))\n") << "range_sum";
  EXPECT_EQ(lowered((r0 * 4 + r1 < 10)),
      "UOp(Ops.CMPLT, dtypes.bool, arg=None, src=(\n"
      "  UOp(Ops.ADD, dtypes.int, arg=None, src=(\n"
      "    UOp(Ops.MUL, dtypes.int, arg=None, src=(\n"
      "      UOp(Ops.RANGE, dtypes.int, arg=(0, AxisType.WEAK), src=(\n"
      "        UOp(Ops.CONST, dtypes.int, arg=16, src=()),)),\n"
      "      UOp(Ops.CONST, dtypes.int, arg=4, src=()),)),\n"
      "    UOp(Ops.RANGE, dtypes.int, arg=(1, AxisType.WEAK), src=(\n"
      "      UOp(Ops.CONST, dtypes.int, arg=8, src=()),)),)),\n"
      "  UOp(Ops.CONST, dtypes.int, arg=10, src=()),))\n") << "cmp";
  EXPECT_EQ(lowered((r0 < 3).where(r0, lit(5)).cast(dtypes::int32)),
      "UOp(Ops.WHERE, dtypes.int, arg=None, src=(\n"
      "  UOp(Ops.CMPLT, dtypes.bool, arg=None, src=(\n"
      "    x1:=UOp(Ops.RANGE, dtypes.int, arg=(0, AxisType.WEAK), src=(\n"
      "      UOp(Ops.CONST, dtypes.int, arg=16, src=()),)),\n"
      "    UOp(Ops.CONST, dtypes.int, arg=3, src=()),)),\n"
      "  UOp(Ops.CAST, dtypes.int, arg=dtypes.int, src=(\n"
      "    x1,)),\n"
      "  UOp(Ops.CONST, dtypes.int, arg=5, src=()),))\n") << "where";
  EXPECT_EQ(lowered((a * 2 + 1).cast(dtypes::int64)),
      "UOp(Ops.ADD, dtypes.long, arg=None, src=(\n"
      "  UOp(Ops.MUL, dtypes.long, arg=None, src=(\n"
      "    UOp(Ops.CAST, dtypes.long, arg=dtypes.long, src=(\n"
      "      UOp(Ops.BUFFER, dtypes.long, arg=ParamArg(-1, dtypes.long, vmin_vmax=(0, 1099511627776), multiple_of=1, name='a', addrspace=AddrSpace.ALU), src=(\n"
      "        UOp(Ops.STACK, dtypes.void, arg=None, src=()),)),)),\n"
      "    UOp(Ops.CONST, dtypes.long, arg=2, src=()),)),\n"
      "  UOp(Ops.CONST, dtypes.long, arg=1, src=()),))\n") << "big";
  EXPECT_EQ(lowered((b * 3).cast(dtypes::float32)),
      "UOp(Ops.CAST, dtypes.float, arg=dtypes.float, src=(\n"
      "  UOp(Ops.MUL, dtypes.int, arg=None, src=(\n"
      "    UOp(Ops.BUFFER, dtypes.int, arg=ParamArg(-1, dtypes.int, vmin_vmax=(0, 10), multiple_of=1, name='b', addrspace=AddrSpace.ALU), src=(\n"
      "      UOp(Ops.STACK, dtypes.void, arg=None, src=()),)),\n"
      "    UOp(Ops.CONST, dtypes.int, arg=3, src=()),)),))\n") << "cast_float";
  EXPECT_EQ(lowered(UOp::sink({(r0 + 1).cast(dtypes::int32), b < 5})),
      "UOp(Ops.SINK, dtypes.void, arg=None, src=(\n"
      "  UOp(Ops.ADD, dtypes.int, arg=None, src=(\n"
      "    UOp(Ops.CAST, dtypes.int, arg=dtypes.int, src=(\n"
      "      UOp(Ops.RANGE, dtypes.int, arg=(0, AxisType.WEAK), src=(\n"
      "        UOp(Ops.CONST, dtypes.int, arg=16, src=()),)),)),\n"
      "    UOp(Ops.CONST, dtypes.int, arg=1, src=()),)),\n"
      "  UOp(Ops.CMPLT, dtypes.bool, arg=None, src=(\n"
      "    UOp(Ops.BUFFER, dtypes.int, arg=ParamArg(-1, dtypes.int, vmin_vmax=(0, 10), multiple_of=1, name='b', addrspace=AddrSpace.ALU), src=(\n"
      "      UOp(Ops.STACK, dtypes.void, arg=None, src=()),)),\n"
      "    UOp(Ops.CONST, dtypes.int, arg=5, src=()),)),))\n") << "sink";
}

TEST(WeakLowering, DefaultDtypeFollowsBounds) {
  EXPECT_EQ(default_dtype(UOp::variable("s", 0, 10)), dtypes::int32);
  EXPECT_EQ(default_dtype(UOp::variable("l", 0, int64_t(1) << 40)), dtypes::int64);
  EXPECT_EQ(default_dtype(lit(2.5)), dtypes::float32);
  EXPECT_EQ(commit_weak(lit(3), dtypes::int8).dtype(), dtypes::int8);
  EXPECT_EQ(commit_weak(UOp::variable("c", 0, 3), dtypes::int16).op(), Ops::CAST);
}
