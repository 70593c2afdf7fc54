// pm_clip_reduce_gates (codegen/simplify.cpp): a sum over a window whose load is gated on the window position (a
// padded convolution at the borders) runs its range only where the gate holds, and the gate goes. On hand-built
// kernels (the clipped ends evaluated at each output position against the gate counted by hand, the cases it must
// leave alone), and through the pipeline on SIMD=1 convolutions (the rendered inner loops have no gated loads and loop
// bounds that are not literals). Values: tests/conformance/test_nn.cpp, Conv2dClippedWindows.
#include <gtest/gtest.h>

#include <cctype>

#include "codegen/opt/postrange.h"
#include "codegen/pipeline.h"
#include "codegen/simplify.h"
#include "tensor/tensor_impl.h"
#include "tg/context.h"

using namespace tg;

namespace {

constexpr int64_t O = 8, K = 3, P = 1;  // 8 outputs, a window of 3 over an input of 8 padded by 1 on each side

struct Window {
  UOp o = UOp::range(O, 0), r = UOp::range(K, 1, AxisType::REDUCE);
  UOp x = UOp::param(0, dtypes::float32, Shape{O}, "CPU"), w = UOp::param(1, dtypes::float32, Shape{K}, "CPU");
  UOp out = UOp::param(2, dtypes::float32, Shape{O}, "CPU");
  UOp pos = o + r;  // the padded input's index
  UOp gate = (pos < P).logical_not() & (pos < O + P);
  UOp load = x.index({(pos - P).valid(gate)});
  UOp sink(const UOp& v, Ops op = Ops::ADD) const { return UOp::sink({out.index({o}).store((v * w.index({r})).reduce({r}, op)).end({o})}); }
};

UOp only_reduce(const UOp& sink) {
  UOp red;
  for (auto& u : sink.toposort()) if (u.op() == Ops::REDUCE) { EXPECT_FALSE(red.get()) << "one reduce"; red = u; }
  return red;
}

int64_t at(const UOp& e, const UOp& o, int64_t v) {
  UOp c = e.substitute({{o, UOp::const_(v)}}).simplify();
  EXPECT_EQ(c.op(), Ops::CONST) << c.render();
  return c.op() == Ops::CONST ? c.val().as_int() : -1;
}

}  // namespace

TEST(ClipReduceGates, WindowRunsInsideTheInput) {
  Window k;
  UOp got = graph_rewrite(k.sink(k.load), pm_clip_reduce_gates());
  UOp red = only_reduce(got);
  ASSERT_EQ(red.src().size(), 2u);
  const UOp& nr = red.src(1);
  ASSERT_EQ(nr.op(), Ops::RANGE);
  EXPECT_NE(nr.src(0).op(), Ops::CONST) << "the window's length depends on the output position";
  for (int64_t o = 0; o < O; o++) {
    int64_t valid = 0;  // window positions inside the unpadded input, counted
    for (int64_t r = 0; r < K; r++) valid += o + r >= P && o + r < O + P;
    EXPECT_EQ(at(nr.src(0), k.o, o), valid) << "output " << o;
  }
  // the gate is gone: x is read at an index whose valid is true (folded away by the next symbolic pass)
  for (auto& u : got.toposort())
    if (u.op() == Ops::INDEX && u.src(0) == k.x) {
      UOp v = u.src(1).get_valid().simplify();
      EXPECT_TRUE(v.op() == Ops::CONST && v.val().truthy()) << v.render();
    }
  // the window's first position: r runs from 1 at the first output (0 + r >= 1), from 0 inside
  UOp idx;
  for (auto& u : got.toposort()) if (u.op() == Ops::INDEX && u.src(0) == k.x) idx = u.src(1);
  ASSERT_TRUE(idx.get());
  EXPECT_EQ(at(idx.substitute({{nr, UOp::const_(int64_t(0))}}), k.o, 0), 0);
  EXPECT_EQ(at(idx.substitute({{nr, UOp::const_(int64_t(0))}}), k.o, 4), 3);
}

TEST(ClipReduceGates, EveryFormOfTheGate) {
  // the same window gate written four ways: r on either side of `<`, plain or negated
  Window k;
  UOp lo_left = (k.pos < P).logical_not(), lo_right = lit(P - 1) < k.pos;                            // pos >= P
  UOp hi_left = k.pos < O + P, hi_right = (lit(O + P - 1) < k.pos).logical_not();                      // pos < O + P
  for (auto& [lo, hi] : {std::pair{lo_left, hi_left}, {lo_right, hi_right}, {lo_left, hi_right}, {lo_right, hi_left}}) {
    UOp red = only_reduce(graph_rewrite(k.sink(k.x.index({(k.pos - P).valid(lo & hi)})), pm_clip_reduce_gates()));
    ASSERT_NE(red.src(1).src(0).op(), Ops::CONST) << lo.render() << " & " << hi.render();
    for (int64_t o = 0; o < O; o++) {
      int64_t valid = 0;
      for (int64_t r = 0; r < K; r++) valid += o + r >= P && o + r < O + P;
      EXPECT_EQ(at(red.src(1).src(0), k.o, o), valid) << lo.render() << " & " << hi.render() << " at output " << o;
    }
  }
}

TEST(ClipReduceGates, WindowWhollyInThePaddingIsEmpty) {
  // padded by 3 before, a window of 3: the first output's window is all padding
  UOp o = UOp::range(4, 0), r = UOp::range(3, 1, AxisType::REDUCE), pos = o + r;
  UOp x = UOp::param(0, dtypes::float32, Shape{4}, "CPU"), out = UOp::param(1, dtypes::float32, Shape{4}, "CPU");
  UOp red = x.index({(pos - 3).valid((pos < 3).logical_not())}).reduce({r}, Ops::ADD);
  UOp got = only_reduce(graph_rewrite(UOp::sink({out.index({o}).store(red).end({o})}), pm_clip_reduce_gates()));
  for (int64_t v = 0; v < 4; v++) EXPECT_EQ(at(got.src(1).src(0), o, v), std::max<int64_t>(0, v)) << "output " << v;
}

TEST(ClipReduceGates, LeavesOtherReducesAlone) {
  Window k;
  // not zero outside the gate (a padding of ones), a max (the padding is no identity), an upcast output axis (one end
  // per lane), a gate on the output alone
  UOp ones = k.gate.where(k.x.index({k.pos - P}), UOp::const_(1.0f));
  UOp same[] = {k.sink(ones), k.sink(k.load, Ops::MAX)};
  for (auto& s : same) EXPECT_EQ(graph_rewrite(s, pm_clip_reduce_gates()), s) << s.str();
  UOp up = UOp::range(O, 0, AxisType::UPCAST);
  UOp s_up = k.sink(k.load).substitute({{k.o, up}});
  EXPECT_EQ(graph_rewrite(s_up, pm_clip_reduce_gates()), s_up);
  UOp s_out = k.sink(k.x.index({k.o.valid(k.o < 4)}));
  EXPECT_EQ(graph_rewrite(s_out, pm_clip_reduce_gates()), s_out);
}

TEST(ClipReduceGates, ConvolutionKernelsHaveNoGatedLoads) {
  // SIMD=1: a padded forward convolution and a stride-1 input gradient (the unpadded gradient read through the
  // transposed convolution's padding). Each reduce kernel: no `cond ? *(load) : 0` and a window loop whose bound is
  // computed, not a literal
  Context simd({{"SIMD", 1}});
  Tensor x = Tensor::empty({16, 8, 10, 10}), w = Tensor::empty({16, 8, 3, 3});
  Tensor fwd = x.conv2d(w, std::nullopt, 1, 1, 1, 1), dx = x.conv2d(w).gradient({x}, Tensor::empty({16, 16, 8, 8}))[0];
  for (const Tensor& t : {fwd, dx}) {
    UOp sched = schedule_linear({t});  // kept alive: src() views its node
    int reducing = 0;
    for (auto& c : sched.src()) {
      if (c.src(0).op() != Ops::SINK) continue;
      bool red = false;
      for (auto& u : c.src(0).toposort()) red |= u.op() == Ops::REDUCE;
      if (!red) continue;
      reducing++;
      std::string src = to_program(c.src(0), ClangRenderer())->kernel.src;
      EXPECT_EQ(src.find("?*("), std::string::npos) << src;
      size_t at = src.find("Ridx1 < ");
      ASSERT_NE(at, std::string::npos) << src;
      EXPECT_FALSE(std::isdigit(static_cast<unsigned char>(src[at + 8]))) << "a computed bound\n" << src;
    }
    EXPECT_EQ(reducing, 1);
  }
}
