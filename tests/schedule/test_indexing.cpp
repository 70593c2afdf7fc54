// Movement ops as index math (apply_movement_op) and the range bookkeeping rangeify relies on; the expected strings
// are what tinygrad's apply_movement_op gives (render(simplify=False)).
#include <gtest/gtest.h>

#include "schedule/indexing.h"
#include "uop/args.h"
#include "uop/movement.h"

using namespace tg;

namespace {
std::vector<std::string> rendered(const std::vector<UOp>& v) {
  std::vector<std::string> r;
  for (auto& x : v) r.push_back(x.render(false));
  return r;
}
MovementArg ints(std::vector<int64_t> v) { MovementArg a; a.ints = std::move(v); return a; }
MovementArg pairs(std::vector<std::pair<int64_t, int64_t>> v) { MovementArg a; a.pairs = std::move(v); return a; }
using S = std::vector<std::string>;
}  // namespace

TEST(Indexing, ApplyMovementOp) {
  UOp r0 = UOp::range(6, 0), r1 = UOp::range(6, 1), r2 = UOp::range(4, 2);
  std::vector<UOp> r01{r0, r1};
  EXPECT_EQ(rendered(apply_movement_op(Ops::PAD, {4, 4}, pairs({{1, 6}, {0, 6}}), r01)),
            (S{"((r0+1*-1) if (((r0<1)!=True)&(r0<5)) else Invalid)", "((r1+0*-1) if (r1<4) else Invalid)"}));
  EXPECT_EQ(rendered(apply_movement_op(Ops::SHRINK, {8, 8}, pairs({{2, 6}, {0, 6}}), r01)), (S{"(r0+2)", "r1"}));
  EXPECT_EQ(rendered(apply_movement_op(Ops::FLIP, {6, 6}, ints({1, 0}), r01)), (S{"(5+r0*-1)", "r1"}));
  EXPECT_EQ(rendered(apply_movement_op(Ops::PERMUTE, {6, 6, 4}, ints({2, 0, 1}), std::vector<UOp>{r2, r0, r1})), (S{"r0", "r1", "r2"}));
  EXPECT_EQ(rendered(apply_movement_op(Ops::EXPAND, {6}, ints({4}), std::vector<UOp>{r2, r0})), (S{"r0"}));
  EXPECT_EQ(rendered(apply_movement_op(Ops::RESHAPE, {36}, ints({6, 6}), r01)), (S{"(r0*6+r1)"}));
  EXPECT_EQ(rendered(apply_movement_op(Ops::RESHAPE, {3, 2, 6}, ints({6, 6}), r01)), (S{"(r0//2)", "(r0%2)", "r1"}));
  EXPECT_EQ(rendered(apply_movement_op(Ops::RESHAPE, {6, 24}, ints({6, 6, 4}), std::vector<UOp>{r0, r1, r2})), (S{"r0", "(r1*4+r2)"}));
  // a padded view flattened: the valids merge, in tinygrad's clause order
  auto padded = apply_movement_op(Ops::PAD, {4, 4}, pairs({{1, 6}, {0, 6}}), r01);
  EXPECT_EQ(rendered(apply_movement_op(Ops::RESHAPE, {16}, ints({4, 4}), padded)),
            (S{"((r0*4+r1+-4) if ((r1<4)&(((r0<1)!=True)&(r0<5))) else Invalid)"}));
}

TEST(Indexing, RangesAndEndedRanges) {
  UOp r0 = UOp::range(4, 0), r1 = UOp::range(8, 1, AxisType::REDUCE);
  UOp buf = UOp::param(0, dtypes::float32, Shape{32}, "CPU");
  UOp ld = buf.index({r0 * 8 + r1});
  EXPECT_EQ(ld.ranges(), (std::vector<UOp>{r0, r1}));  // first-seen order
  UOp red = ld.reduce({r1}, Ops::ADD);
  EXPECT_EQ(red.ended_ranges(), (std::vector<UOp>{r1}));
  EXPECT_EQ(red.ranges(), (std::vector<UOp>{r0}));  // a REDUCE closes its range
  UOp st = buf.index({r0}).store(red).end({r0});
  EXPECT_TRUE(st.ranges().empty());
  EXPECT_EQ(r1.ranges(), (std::vector<UOp>{r1}));
  EXPECT_EQ(broadcast_axes({4, 1}, {3, 4, 5}), (std::vector<int64_t>{0, 2}));
}
