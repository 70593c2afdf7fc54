// The tensor-level UOp helpers (src/uop/tensor_uop.cpp): each graph printed as tinygrad prints the same call.
#include <gtest/gtest.h>

#include "tensor_test_util.h"
#include "uop/uop.h"

using namespace tg;
using tg::testutil::error_of;
using tg::testutil::normalize_slots;

namespace {
const char* kEmpty23 = R"(UOp(Ops.RESHAPE, dtypes.float, arg=None, src=(
  UOp(Ops.BUFFER, dtypes.float, arg=ParamArg(0, dtypes.float, device='CPU'), src=(
    UOp(Ops.CONST, dtypes.weakint, arg=6, src=()),)),
  UOp(Ops.STACK, dtypes.weakint, arg=None, src=(
    UOp(Ops.CONST, dtypes.weakint, arg=2, src=()),
    UOp(Ops.CONST, dtypes.weakint, arg=3, src=()),)),)))";
}

TEST(TensorUOp, EmptyAndBufferProps) {
  UOp e = UOp::empty({2, 3}, dtypes::float32, "CPU");
  EXPECT_EQ(normalize_slots(e.str()), kEmpty23);
  EXPECT_EQ(e.device(), "CPU");
  EXPECT_FALSE(e.is_virtual());
  EXPECT_EQ(e.addrspace(), AddrSpace::GLOBAL);
  EXPECT_TRUE(e.has_buffer_identity());
  EXPECT_EQ(e.buf_uop(), e.src(0));
  EXPECT_EQ(e.max_numel(), 6);
  EXPECT_EQ(e.element_size(), 4);
  // slots come from one counter
  int64_t n = UOp::next_unique_num();
  EXPECT_EQ(UOp::new_buffer("CPU", 4, dtypes::int32).arg().param().slot, n);
  EXPECT_EQ(UOp::new_buffer("CPU", 4, dtypes::int32).arg().param().slot, n + 1);
  // a const has no device; ALU on a buffer takes its device
  UOp c = UOp::const_(ConstVal(1.0), dtypes::float32);
  EXPECT_EQ(c.device(), std::nullopt);
  EXPECT_TRUE(c.is_virtual());
  EXPECT_EQ((e + 1).device(), "CPU");
  EXPECT_EQ(e.empty_like(dtypes::int32).device(), "CPU");
  EXPECT_EQ(e.empty_like(dtypes::int32).dtype(), dtypes::int32);
  EXPECT_EQ(UOp::empty({4}, dtypes::float32, "NULL").device(), "NULL");
  EXPECT_EQ(normalize_slots(e.rtag().str()).find("tag=True"), std::string(kEmpty23).find("src=("));
}

TEST(TensorUOp, Params) {
  EXPECT_EQ(UOp::param(3, dtypes::int32, Shape{4, 5}, "CPU").str(), R"(UOp(Ops.PARAM, dtypes.int, arg=ParamArg(3, dtypes.int, device='CPU'), src=(
  UOp(Ops.STACK, dtypes.weakint, arg=None, src=(
    UOp(Ops.CONST, dtypes.weakint, arg=4, src=()),
    UOp(Ops.CONST, dtypes.weakint, arg=5, src=()),)),)))");
  EXPECT_EQ(UOp::param(1, dtypes::float32).str(), R"(UOp(Ops.PARAM, dtypes.float, arg=ParamArg(1, dtypes.float), src=(
  UOp(Ops.NOOP, dtypes.void, arg=None, src=()),)))");
  UOp e = UOp::empty({2, 3}, dtypes::float32, "CPU");
  EXPECT_EQ(e.param_like(7), UOp::param(7, dtypes::float32, Shape{2, 3}, "CPU"));
  UOp v = UOp::variable("i", 1, 10);
  UOp bound = v.after({v.store(UOp::const_(ConstVal(int64_t(3))))});
  EXPECT_TRUE(v.is_variable());
  EXPECT_TRUE(bound.is_bound_var());
  EXPECT_FALSE(e.is_variable());
  EXPECT_EQ(v.device(), std::nullopt);
  EXPECT_EQ(v.addrspace(), AddrSpace::ALU);
  EXPECT_EQ(bound.param_like(2).str(),
            "UOp(Ops.PARAM, dtypes.weakint, arg=ParamArg(2, dtypes.weakint, vmin_vmax=(1, 10), multiple_of=1, name='p2', "
            "addrspace=AddrSpace.ALU), src=(\n  UOp(Ops.STACK, dtypes.void, arg=None, src=()),))");
  EXPECT_NE(error_of([] { UOp::param(0, dtypes::weakfloat); }).find("weakfloat"), std::string::npos);
  EXPECT_NE(error_of([] { UOp::new_buffer("CPU", 2, dtypes::weakint); }).find("weak dtype weakint"), std::string::npos);
}

TEST(TensorUOp, RopCopyContiguous) {
  UOp e = UOp::empty({2, 3}, dtypes::float32, "CPU");
  EXPECT_EQ(normalize_slots(e.rop(Ops::ADD, {1}).str()), R"(UOp(Ops.REDUCE, dtypes.float, arg=(Ops.ADD, 1), src=(
  UOp(Ops.PERMUTE, dtypes.float, arg=(1, 0), src=(
    UOp(Ops.RESHAPE, dtypes.float, arg=None, src=(
      UOp(Ops.BUFFER, dtypes.float, arg=ParamArg(0, dtypes.float, device='CPU'), src=(
        UOp(Ops.CONST, dtypes.weakint, arg=6, src=()),)),
      UOp(Ops.STACK, dtypes.weakint, arg=None, src=(
        UOp(Ops.CONST, dtypes.weakint, arg=2, src=()),
        UOp(Ops.CONST, dtypes.weakint, arg=3, src=()),)),)),)),)))");
  UOp e3 = e.reshape({2, 1, 3});
  // a reduced 1-axis is reshaped away, not reduced
  EXPECT_EQ(e3.rop(Ops::ADD, {1}), e3.reshape({2, 3}));
  UOp m = e3.rop(Ops::MAX, {0, 1});
  EXPECT_EQ(m.op(), Ops::RESHAPE);
  EXPECT_EQ(m.src(0).op(), Ops::REDUCE);
  EXPECT_EQ(m.src(0).src(0), e3);
  EXPECT_EQ(m.shape(), Shape{3});
  UOp cp = e.copy_to_device("NULL");
  EXPECT_EQ(cp.op(), Ops::COPY);
  EXPECT_EQ(cp.src(0), e);
  EXPECT_EQ(cp.device(), "NULL");
  EXPECT_EQ(e.contiguous(), e);
  UOp c = UOp::const_(ConstVal(1.0), dtypes::float32);
  EXPECT_EQ(c.contiguous(), c);
  EXPECT_EQ((e + 1).contiguous().op(), Ops::CONTIGUOUS);
  EXPECT_EQ((e + 1).contiguous().contiguous(), (e + 1).contiguous());
  EXPECT_NE(error_of([] { UOp::const_(ConstVal(1.0)).element_size(); }).find("weakfloat"), std::string::npos);
}
