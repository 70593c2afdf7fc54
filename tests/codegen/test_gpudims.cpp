// gpudims (tinygrad's codegen/gpudims.py) on an OpenCL renderer: output loops become SPECIAL group ids (gidx0 the
// innermost), merged when there are more than three and split when one is over global_max, local ids from LOCAL opts.
// Each lowered kernel also runs on the CL device and must compute what the loops would (a*2+b checked element by
// element; a is read transposed so that no two output loops can be merged into one before gpudims).
#include <gtest/gtest.h>

#include <functional>
#include <numeric>

#include "codegen/opt/postrange.h"
#include "codegen/pipeline.h"
#include "runtime/buffer.h"
#include "runtime/device.h"
#include "tensor/tensor_impl.h"
#include "tg/context.h"

using namespace tg;

namespace {

// the one kernel of a * 2 + b over `shape`, a stored with its dims reversed (transposed) when `transposed`
UOp ew_ast(const Shape& shape, bool transposed = false) {
  Shape rev(shape.rbegin(), shape.rend());
  std::vector<int64_t> perm(shape.size());
  for (size_t i = 0; i < perm.size(); i++) perm[i] = int64_t(perm.size() - 1 - i);
  Tensor a = transposed ? Tensor::empty(rev).permute(perm) : Tensor::empty(shape);
  UOp linear = schedule_linear({a * 2 + Tensor::empty(shape)});
  for (auto& c : linear.src())
    if (c.src(0).op() == Ops::SINK) return c.src(0);
  throw Error("no kernel");
}

// the element of a (stored as 0, 1, 2 ...) that output element i reads: i itself, or through the transpose of `shape`
using AIndex = std::function<int64_t(int64_t)>;
AIndex transposed_of(const Shape& shape) {
  return [shape](int64_t i) {
    int64_t j = 0;
    for (size_t d = shape.size(); d-- > 0;) {  // output dims innermost first; in a they are outermost first
      int64_t c = i % shape[d];
      i /= shape[d];
      j = j * shape[d] + c;
    }
    return j;
  };
}

// runs the program on CL with a = 0, 1, 2 ... and b = 1000, 1001 ..., and checks out[i] = a[a_index(i)] * 2 + b[i]
void run_and_check(const ProgramSpec& spec, int64_t n, const AIndex& a_index = [](int64_t i) { return i; }) {
  Device& dev = get_device("CL");
  auto prg = dev.load_cached(spec.kernel.entry_name, spec.kernel.src);
  std::vector<std::unique_ptr<Buffer>> bufs;
  std::vector<void*> ptrs;
  for (const KernelParam& p : spec.kernel.params) {
    ASSERT_TRUE(p.is_buffer());
    ASSERT_EQ(p.numel, n);
    std::vector<float> v(static_cast<size_t>(n));
    std::iota(v.begin(), v.end(), p.slot == 2 ? 1000.f : 0.f);
    bufs.push_back(std::make_unique<Buffer>("CL", size_t(n), dtypes::float32));
    bufs.back()->copyin(v.data(), size_t(n) * 4);
    ptrs.push_back(bufs.back()->ptr());
  }
  LaunchDims dims;
  for (size_t i = 0; i < 3; i++) dims.global[i] = int(spec.global[i]), dims.local[i] = int(spec.local[i]);
  prg->launch(ptrs, {}, dims);
  std::vector<float> out(static_cast<size_t>(n));
  bufs[0]->copyout(out.data(), size_t(n) * 4);  // slot 0 is the output
  for (int64_t i = 0; i < n; i++) ASSERT_EQ(out[size_t(i)], float(a_index(i)) * 2 + 1000.f + float(i)) << "element " << i;
}

}  // namespace

// three output loops, no opts: three group ids, the last loop in gidx0, work-groups of one
TEST(GpuDims, LoopsBecomeGroupIds) {
  Context noopt({{"NOOPT", 1}});
  OpenCLRenderer ren;
  auto spec = to_program(ew_ast({4, 6, 10}, true), ren);
  EXPECT_EQ(spec->global, (std::array<int64_t, 3>{10, 6, 4}));
  EXPECT_EQ(spec->local, (std::array<int64_t, 3>{1, 1, 1}));
  for (const char* id : {"get_group_id(0)", "get_group_id(1)", "get_group_id(2)"}) EXPECT_NE(spec->kernel.src.find(id), std::string::npos) << spec->kernel.src;
  run_and_check(*spec, 240, transposed_of({4, 6, 10}));
}

// four loops do not fit three dims: the innermost two merge (5 * 4 <= global_max)
TEST(GpuDims, MoreThanThreeLoopsMerge) {
  Context noopt({{"NOOPT", 1}});
  OpenCLRenderer ren;
  auto spec = to_program(ew_ast({2, 3, 4, 5}, true), ren);
  EXPECT_EQ(spec->global, (std::array<int64_t, 3>{20, 3, 2}));
  run_and_check(*spec, 120, transposed_of({2, 3, 4, 5}));
}

// a loop over global_max is split by its smallest factors into the next dim: 48 -> 24*2 -> 12*4 -> 6*8
TEST(GpuDims, LoopOverTheLimitSplits) {
  Context noopt({{"NOOPT", 1}});
  OpenCLRenderer ren;
  ren.global_max = {8, 8, 8};
  auto spec = to_program(ew_ast({48}), ren);
  EXPECT_EQ(spec->global, (std::array<int64_t, 3>{6, 8, 1}));
  run_and_check(*spec, 48);
  ren.global_max = {7, 7, 7};  // 49 = 7 * 7 fits, 53 (prime) cannot be split
  EXPECT_EQ(to_program(ew_ast({49}), ren)->global, (std::array<int64_t, 3>{7, 7, 1}));
  EXPECT_THROW(to_program(ew_ast({53}), ren), Error);
}

// the heuristic makes work-groups of output axes (LOCAL): local ids in the source, the launch's local size
TEST(GpuDims, LocalOptsBecomeLocalIds) {
  OpenCLRenderer ren;
  auto spec = to_program(ew_ast({16, 32}), ren);
  int64_t local = spec->local[0] * spec->local[1] * spec->local[2];
  EXPECT_GT(local, 1);
  EXPECT_LE(local, 128);
  EXPECT_NE(spec->kernel.src.find("get_local_id(0)"), std::string::npos) << spec->kernel.src;
  run_and_check(*spec, 512);
  // NOLOCALS: global ids, and the device picks the work-group size
  Context nolocals({{"NOLOCALS", 1}});
  auto g = to_program(ew_ast({16, 32}), ren);
  EXPECT_EQ(g->local, (std::array<int64_t, 3>{0, 0, 0}));
  EXPECT_NE(g->kernel.src.find("get_global_id(0)"), std::string::npos) << g->kernel.src;
  run_and_check(*g, 512);
}

// GROUP / GROUPTOP: a reduce split over the work-items of a group, partial results in local memory behind a barrier,
// then reduced again (tinygrad's fix_group_for_reduce and implicit barriers); sums of rows checked on CL
TEST(GpuDims, GroupedReduceThroughLocalMemory) {
  OpenCLRenderer ren;
  UOp linear = schedule_linear({Tensor::empty({4, 64}).sum(1)});
  UOp ast;
  for (auto& c : linear.src()) if (c.src(0).op() == Ops::SINK) ast = c.src(0);
  ASSERT_TRUE(ast.get());
  for (OptOps op : {OptOps::GROUP, OptOps::GROUPTOP}) {
    Scheduler k(ast, caps_of(ren));
    k.convert_loop_to_global();
    k.apply_opt(Opt{op, 0, Arg(int64_t(16))});
    auto spec = to_program(k.get_optimized_ast("test"), ren);
    SCOPED_TRACE(spec->kernel.src);
    EXPECT_EQ(spec->local, (std::array<int64_t, 3>{16, 1, 1}));
    EXPECT_EQ(spec->global, (std::array<int64_t, 3>{4, 1, 1}));
    EXPECT_NE(spec->kernel.src.find("__local"), std::string::npos);
    EXPECT_NE(spec->kernel.src.find("barrier(CLK_LOCAL_MEM_FENCE);"), std::string::npos);
    Device& dev = get_device("CL");
    auto prg = dev.load_cached(spec->kernel.entry_name, spec->kernel.src);
    Buffer out("CL", 4, dtypes::float32), in("CL", 256, dtypes::float32);
    std::vector<float> v(256), r(4);
    std::iota(v.begin(), v.end(), 0.f);
    in.copyin(v.data(), 1024);
    void* bufs[] = {out.ptr(), in.ptr()};
    LaunchDims dims;
    for (size_t i = 0; i < 3; i++) dims.global[i] = int(spec->global[i]), dims.local[i] = int(spec->local[i]);
    prg->launch(bufs, {}, dims);
    out.copyout(r.data(), 16);
    // row i sums 64i .. 64i+63: 64 * 64i + 2016
    EXPECT_EQ(r, (std::vector<float>{2016, 6112, 10208, 14304}));
  }
}

// the heuristic groups a reduce whose output is small (GROUPTOP 16, tinygrad's "are we grouping?"); row sums of
// 0, 1, 2 ... checked on CL: row i of 256 sums to 65536 i + 32640 (exact in float32)
TEST(GpuDims, HeuristicGroupsSmallOutputReduces) {
  OpenCLRenderer ren;
  UOp linear = schedule_linear({Tensor::empty({16, 256}).sum(1)});
  UOp ast;
  for (auto& c : linear.src()) if (c.src(0).op() == Ops::SINK) ast = c.src(0);
  ASSERT_TRUE(ast.get());
  auto spec = to_program(ast, ren);
  SCOPED_TRACE(spec->kernel.src);
  ASSERT_FALSE(spec->applied_opts.empty());
  EXPECT_NE(spec->applied_opts[0].find("GROUPTOP"), std::string::npos) << spec->applied_opts[0];
  EXPECT_EQ(spec->local[0], 16);
  Device& dev = get_device("CL");
  auto prg = dev.load_cached(spec->kernel.entry_name, spec->kernel.src);
  Buffer out("CL", 16, dtypes::float32), in("CL", 4096, dtypes::float32);
  std::vector<float> v(4096), r(16);
  std::iota(v.begin(), v.end(), 0.f);
  in.copyin(v.data(), v.size() * 4);
  void* bufs[] = {out.ptr(), in.ptr()};
  LaunchDims dims;
  for (size_t i = 0; i < 3; i++) dims.global[i] = int(spec->global[i]), dims.local[i] = int(spec->local[i]);
  prg->launch(bufs, {}, dims);
  out.copyout(r.data(), 64);
  for (int i = 0; i < 16; i++) EXPECT_EQ(r[size_t(i)], 65536.f * float(i) + 32640.f) << "row " << i;
  // the CPU has no locals: the same kernel is not grouped there
  for (auto& o : to_program(ast, ClangRenderer())->applied_opts) EXPECT_EQ(o.find("GROUP"), std::string::npos) << o;
}
