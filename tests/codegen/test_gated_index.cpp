// Loads whose index is computed from another load (gathers: x[i]) keep that inner load's own gate. indexing_simplify
// simplifies an index under its load's gate; where the outer gate implies the inner one, rewriting the inner load's gate
// away too would make it unconditional, and the C renderer evaluates it before the outer gate is tested: a read before
// the start of the index buffer (a cat of gathers, tinygrad's TensorFancy cases, SEGV'd under ASan). The check is the
// invariant itself: in the linearized kernels, every ungated load of a global buffer has an index within the buffer.
#include <gtest/gtest.h>

#include "codegen/pipeline.h"
#include "renderer/cstyle.h"
#include "tensor/tensor_impl.h"
#include "tg/context.h"

using namespace tg;

namespace {

// the ungated loads of global buffers whose index range [vmin, vmax] leaves the buffer, as text
std::vector<std::string> unsafe_loads(const Tensor& t) {
  std::vector<std::string> bad;
  UOp sched = schedule_linear({t});  // kept alive: src() views its node
  int kernels = 0;
  for (auto& c : sched.src()) {
    if (c.src(0).op() != Ops::SINK) continue;
    kernels++;
    for (auto& u : linearize_program(full_rewrite_to_sink(c.src(0), ClangRenderer()))) {
      if (u.op() != Ops::LOAD || u.src().size() != 1) continue;
      UOp idx = u.src(0).op() == Ops::CAST ? u.src(0).src(0) : u.src(0);
      if (idx.op() != Ops::INDEX || idx.src(0).op() != Ops::PARAM || idx.src(0).addrspace() != AddrSpace::GLOBAL) continue;
      const auto& shape = lin_max_shape(idx.src(0));
      EXPECT_TRUE(shape.has_value()) << "a global buffer without a size";
      int64_t n = 1;
      for (int64_t d : shape.value_or(Shape{})) n *= d;
      int64_t lanes = 1;  // a vector load (CAST of its INDEX) reads lanes elements from its index on
      for (int64_t d : lin_max_shape(u).value_or(Shape{})) lanes *= d;
      int64_t lo = idx.src(1).vmin().as_int(), hi = idx.src(1).vmax().as_int() + lanes - 1;
      if (lo < 0 || hi >= n)
        bad.push_back("data" + std::to_string(idx.src(0).arg().param().slot) + "[" + std::to_string(lo) + ".." + std::to_string(hi) +
                      "] of " + std::to_string(n));
    }
  }
  EXPECT_GT(kernels, 0);
  return bad;
}

}  // namespace

TEST(GatedIndex, GatherInACatKeepsItsIndexLoadGated) {
  for (int simd : {0, 1}) {
    Context ctx({{"SIMD", simd}});
    std::vector<float> xs(120);
    for (size_t e = 0; e < xs.size(); e++) xs[e] = float(e);
    Tensor x = Tensor::from_vector<float>(xs, {4, 5, 6}).realize();
    Tensor i = Tensor::from_vector<int32_t>({2, 0, 3, -1}, {4}).realize(), j = Tensor::from_vector<int32_t>({4, -5, 1}, {3}).realize();
    // each gather reads i (or j) only inside its piece of the cat: outside, i's index runs far below 0
    auto cat = [&] { return Tensor::cat({x.flatten(), x[i].flatten(), x[{Slice{}, j}].flatten(), x[{i, Slice{}, Slice{1, 3}}].flatten(),
                          x.permute({2, 0, 1})[{j, i.shrink({{0, 3}})}].flatten()}); };
    auto bad = unsafe_loads(cat());  // scheduling swaps the tensor to its (unwritten) buffer: the values come from a new one
    EXPECT_TRUE(bad.empty()) << "SIMD=" << simd << ": " << bad.size() << " ungated loads out of bounds, first " << (bad.empty() ? "" : bad[0]);
    // and the values: the pieces back, by hand from arange
    std::vector<float> got = cat().to_vector<float>();
    ASSERT_EQ(got.size(), size_t(120 + 120 + 72 + 40 + 15));
    auto xv = [](int64_t a, int64_t b, int64_t c) { return float(a * 30 + b * 6 + c); };
    int64_t at = 0, iv[4] = {2, 0, 3, 3}, jv[3] = {4, 0, 1};
    for (int64_t a = 0; a < 4; a++) for (int64_t b = 0; b < 5; b++) for (int64_t c = 0; c < 6; c++) EXPECT_EQ(got[at++], xv(a, b, c));
    for (int64_t r : iv) for (int64_t b = 0; b < 5; b++) for (int64_t c = 0; c < 6; c++) EXPECT_EQ(got[at++], xv(r, b, c));
    for (int64_t a = 0; a < 4; a++) for (int64_t r : jv) for (int64_t c = 0; c < 6; c++) EXPECT_EQ(got[at++], xv(a, r, c));
    for (int64_t r : iv) for (int64_t b = 0; b < 5; b++) for (int64_t c = 1; c < 3; c++) EXPECT_EQ(got[at++], xv(r, b, c));
    for (int64_t r = 0; r < 3; r++) for (int64_t b = 0; b < 5; b++) EXPECT_EQ(got[at++], xv(iv[r], b, r ? 1 : 4));  // j: 4, -5 -> 1, 1
  }
}
