// tg::custom_kernel (tinygrad's Tensor.custom_kernel, test/backend/test_custom_kernel.py): kernels written as UOp
// graphs, checked against libtorch; their place in the schedule (one kernel each, inputs realized before), TinyJit
// replay, gradients through grad_fxn, and the errors of a badly built kernel.
#include <gtest/gtest.h>

#include "support/error_of.h"
#include "tensor_harness.h"
#include "tg/jit.h"
#include "tg/kernel.h"

using namespace conf;
using tg::KernelArgs;
using tg::KernelUOp;
using TV = std::vector<tg::Tensor>;
using tg::test::error_of;

namespace {
// ** the kernels (tinygrad's test kernels, written with KernelUOp) **

KernelUOp add_kernel(const KernelArgs& b) {  // C = A + B over the flat elements
  auto [c0, a0, b0] = b.take<3>();
  KernelUOp c = c0.flatten(), a = a0.flatten(), y = b0.flatten();
  KernelUOp i = KernelUOp::range(c.numel(), 0);
  return c[{i}].store(a[{i}] + y[{i}]).end({i}).sink("custom_add");
}
KernelUOp addmul_kernel(const KernelArgs& b) {  // two outputs from one kernel: C = A + B, D = A * B
  auto [c0, d0, a0, b0] = b.take<4>();
  KernelUOp c = c0.flatten(), d = d0.flatten(), a = a0.flatten(), y = b0.flatten();
  KernelUOp i = KernelUOp::range(c.numel(), 0);
  return KernelUOp::group({c[{i}].store(a[{i}] + y[{i}]), d[{i}].store(a[{i}] * y[{i}])}).end({i}).sink("custom_addmul");
}
KernelUOp add_one_kernel(const KernelArgs& b) {
  auto [o0, a0] = b.take<2>();
  KernelUOp o = o0.flatten(), a = a0.flatten();
  KernelUOp i = KernelUOp::range(o.numel(), 0);
  return o[{i}].store(a[{i}] + 1).end({i}).sink("add_one");
}
KernelUOp arange_kernel(const KernelArgs& b) {
  KernelUOp c = b.take<1>()[0];
  KernelUOp i = KernelUOp::range(c.shape()[0], 0);
  return c[{i}].store(i.cast(c.dtype())).end({i}).sink("custom_arange");
}
// the whole input summed into out[0], accumulated in the output buffer itself
KernelUOp sum_kernel(const KernelArgs& b) {
  auto [out, a] = b.take<2>();
  KernelUOp r = KernelUOp::range(a.shape()[0], 0, true);
  KernelUOp acc = out[{0}].set(0);
  acc = acc[{0}].set(acc.after({r})[{0}] + a[{r}], {r});
  return acc.sink("custom_sum", false);
}
// per-row sums with a register accumulator: a REDUCE range inside a loop range
KernelUOp row_sum_kernel(const KernelArgs& b) {
  auto [out, a] = b.take<2>();
  KernelUOp g = KernelUOp::range(a.shape()[0], 0);
  KernelUOp acc = KernelUOp::reg(1, out.dtype(), 0);
  acc = acc.after({g})[{0}].set(0);
  KernelUOp r = KernelUOp::range(a.shape()[1], 1, true);
  acc = acc[{0}].set(acc.after({r})[{0}] + a[{g, r}], {r});
  return out[{g}].set(acc[{0}], {g}).sink("row_sum", false);
}
// C = A @ B, accumulated in C
KernelUOp gemm_kernel(const KernelArgs& bufs) {
  auto [c, a, b] = bufs.take<3>();
  KernelUOp i = KernelUOp::range(c.shape()[0], 0), j = KernelUOp::range(c.shape()[1], 1);
  KernelUOp k = KernelUOp::range(a.shape()[1], 2, true);
  KernelUOp acc = c[{i, j}].set(0.0);
  acc = acc[{i, j}].set(acc.after({k})[{i, j}] + a[{i, k}] * b[{k, j}], {k});
  return acc.end({i, j}).sink("custom_gemm", false);
}

tg::Tensor gemm(const tg::Tensor& a, const tg::Tensor& b, tg::Tensor::CallGradFxn grad = {}) {
  return tg::custom_kernel({tg::Tensor::empty({a.shape()[0], b.shape()[1]}), a, b}, gemm_kernel, std::move(grad))[0];
}
// the launches realizing t (run, so t can be read after)
size_t kernels(const tg::Tensor& t) {
  tg::Schedule s = tg::Tensor::schedule_linear({t});
  s.run();
  return s.size();
}
}  // namespace

TEST(CustomKernel, Elementwise) {
  Pair a = input({16, 16}, dtypes::float32), b = input({16, 16}, dtypes::float32, -3, 3, 2);
  tg::Tensor c = tg::custom_kernel({tg::Tensor::empty({16, 16}), a.t, b.t}, add_kernel)[0];
  EXPECT_TRUE(same(c, a.a + b.a));
  auto outs = tg::custom_kernel({tg::Tensor::empty({16, 16}), tg::Tensor::empty({16, 16}), a.t, b.t}, addmul_kernel);
  ASSERT_EQ(outs.size(), 4u);  // every buffer comes back: the outputs and the inputs after the kernel
  tg::Tensor::realize({outs[0], outs[1]});
  EXPECT_TRUE(same(outs[0], a.a + b.a));
  EXPECT_TRUE(same(outs[1], a.a * b.a));
  EXPECT_TRUE(same(outs[2], a.a)) << "an input is unchanged by the kernel";
  // int buffers, and a kernel that writes its loop index
  Pair ia = input({37}, dtypes::int32, -50, 50), ib = input({37}, dtypes::int32, -50, 50, 3);
  EXPECT_TRUE(same(tg::custom_kernel({tg::Tensor::empty({37}, dtypes::int32), ia.t, ib.t}, add_kernel)[0], ia.a + ib.a));
  EXPECT_TRUE(same(tg::custom_kernel({tg::Tensor::empty({100}, dtypes::int32)}, arange_kernel)[0], at::arange(100, at::kInt)));
  // the same buffer twice: read and written in place (tinygrad's test_duplicate_call_arg)
  tg::Tensor x = tg::Tensor::from_vector<int32_t>({0, 1, 2, 3}).clone().realize();
  EXPECT_EQ(tg::custom_kernel({x, x}, add_one_kernel)[0].to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 3, 4}));
}

TEST(CustomKernel, Reduction) {
  Pair a = input({1000}, dtypes::float32);
  EXPECT_TRUE(same(tg::custom_kernel({tg::Tensor::empty({1}), a.t}, sum_kernel)[0], a.a.sum().reshape({1})));
  Pair ia = input({50}, dtypes::int32, -100, 100);
  EXPECT_TRUE(same(tg::custom_kernel({tg::Tensor::empty({1}, dtypes::int32), ia.t}, sum_kernel)[0], ia.a.sum().reshape({1}).to(at::kInt)));
  Pair m = input({16, 33}, dtypes::float32);
  EXPECT_TRUE(same(tg::custom_kernel({tg::Tensor::empty({16}), m.t}, row_sum_kernel)[0], m.a.sum(1)));
  // a computed input (not a buffer yet) is realized before the kernel reads it
  EXPECT_TRUE(same(tg::custom_kernel({tg::Tensor::empty({1}), a.t * 2 + 1}, sum_kernel)[0], (a.a * 2 + 1).sum().reshape({1})));
}

TEST(CustomKernel, Matmul) {
  for (auto [M, K, N] : {std::tuple{16, 16, 16}, {5, 7, 3}, {1, 33, 9}}) {
    Pair a = input({M, K}, dtypes::float32), b = input({K, N}, dtypes::float32, -3, 3, 2);
    EXPECT_TRUE(same(gemm(a.t, b.t), at::matmul(a.a, b.a))) << M << "x" << K << "x" << N;
  }
  // views as inputs: the transposes are realized contiguous first
  Pair a = input({6, 4}, dtypes::float32), b = input({5, 6}, dtypes::float32, -3, 3, 2);
  EXPECT_TRUE(same(gemm(a.t.transpose(), b.t.transpose()), at::matmul(a.a.t(), b.a.t())));
}

TEST(CustomKernel, FusionBoundaries) {
  // one kernel for the custom one, one per realized input: ones().contiguous() is one kernel, a + 1 is another
  Pair a = input({16, 16}, dtypes::float32);
  tg::Tensor src = a.t + 1;
  tg::Tensor out = tg::custom_kernel({tg::Tensor::empty({16, 16}), src}, add_one_kernel)[0];
  EXPECT_EQ(kernels(out), 2u) << "a + 1, then the custom kernel";
  EXPECT_TRUE(same(out, a.a + 2));
  // a custom kernel's output read by ordinary ops, and fed to a second custom kernel through a reshape (tinygrad's
  // test_simple_reshape: exactly two kernels)
  tg::Tensor ones = tg::Tensor::ones({2, 3, 4}).contiguous().realize();
  tg::Tensor b = tg::custom_kernel({tg::Tensor::empty({2, 3, 4}), ones}, add_one_kernel)[0];
  tg::Tensor b2 = b.reshape({2, 12});
  tg::Tensor c = tg::custom_kernel({tg::Tensor::empty({2, 12}), b2}, add_one_kernel)[0];
  EXPECT_EQ(kernels(c), 2u);
  EXPECT_TRUE(same(c, at::full({2, 12}, 3.0f)));
  // ordinary ops on both sides: (relu(x) -> custom add -> * 2).sum(); the elementwise ops fuse with neither
  Pair x = input({8, 8}, dtypes::float32), y = input({8, 8}, dtypes::float32, -3, 3, 2);
  tg::Tensor s = (tg::custom_kernel({tg::Tensor::empty({8, 8}), x.t.relu(), y.t}, add_kernel)[0] * 2).sum();
  EXPECT_EQ(kernels(s), 3u) << "relu, the custom kernel, the reduce";
  EXPECT_TRUE(same(s, ((at::relu(x.a) + y.a) * 2).sum()));
}

TEST(CustomKernel, UnderTinyJit) {
  tg::TinyJit<tg::Tensor> step([](const TV& in) { return (gemm(in[0], in[1]) + 1).realize(); });
  for (int it = 0; it < 4; it++) {
    Pair a = input({4, 6}, dtypes::float32, -3, 3, 10 + it), b = input({6, 5}, dtypes::float32, -3, 3, 20 + it);
    EXPECT_TRUE(same(step(a.t, b.t), at::matmul(a.a, b.a) + 1)) << "call " << it;
  }
  EXPECT_TRUE(step.is_captured());
  EXPECT_EQ(step.captured_launches(), 2u) << "the custom kernel and the + 1";
}

TEST(CustomKernel, Gradient) {
  // grad_fxn with ordinary ops (tinygrad's backward_gemm), and with custom kernels in the backward (backward_gemm_custom)
  tg::Tensor::CallGradFxn by_ops = [](const tg::Tensor& g, const TV& args) {
    return std::vector<std::optional<tg::Tensor>>{std::nullopt, g.matmul(args[2].transpose()), args[1].transpose().matmul(g)};
  };
  tg::Tensor::CallGradFxn by_kernels = [](const tg::Tensor& g, const TV& args) {
    return std::vector<std::optional<tg::Tensor>>{std::nullopt, gemm(g, args[2].transpose()), gemm(args[1].transpose(), g)};
  };
  Pair a0 = input({4, 8}, dtypes::float32), b0 = input({8, 4}, dtypes::float32, -3, 3, 2), s = input({4, 4}, dtypes::float32, -1, 1, 3);
  at::Tensor aa0 = a0.a.clone().requires_grad_(true), ba0 = b0.a.clone().requires_grad_(true);
  (at::matmul(aa0, ba0) * s.a).sum().backward();
  for (auto* grad : {&by_ops, &by_kernels}) {
    const char* how = grad == &by_ops ? "grad_fxn by ops" : "grad_fxn by custom kernels";
    tg::Tensor x = to_tg(a0.a), w = to_tg(b0.a);  // fresh leaves: no gradient left from the last round
    tg::Tensor out = gemm(x, w, *grad);
    (out * to_tg(s.a)).sum().backward();
    ASSERT_TRUE(x.grad() && w.grad()) << how;
    EXPECT_TRUE(same(out, at::matmul(a0.a, b0.a))) << how;
    EXPECT_TRUE(same(*x.grad(), aa0.grad())) << how;
    EXPECT_TRUE(same(*w.grad(), ba0.grad())) << how;
  }
  // a gradient through two outputs of one kernel: d(sum(c * s1 + d * s2)) with c = a + b, d = a * b
  Pair a = input({3, 4}, dtypes::float32), b = input({3, 4}, dtypes::float32, -3, 3, 2);
  tg::Tensor::CallGradFxn addmul_grad = [](const tg::Tensor& g, const TV& args) {
    return std::vector<std::optional<tg::Tensor>>{std::nullopt, std::nullopt, g * args[3], g * args[2]};
  };
  tg::Tensor at_ = a.t.clone(), bt = b.t.clone();
  auto outs = tg::custom_kernel({tg::Tensor::empty({3, 4}), tg::Tensor::empty({3, 4}), at_, bt}, addmul_kernel, addmul_grad);
  (outs[1] * 3).sum().backward();  // one output with a gradient: grad_fxn gets it
  at::Tensor aa = a.a.clone().requires_grad_(true), ba = b.a.clone().requires_grad_(true);
  (aa * ba * 3).sum().backward();
  ASSERT_TRUE(at_.grad() && bt.grad());
  EXPECT_TRUE(same(*at_.grad(), aa.grad()));
  EXPECT_TRUE(same(*bt.grad(), ba.grad()));
  // without grad_fxn a kernel is not differentiable
  tg::Tensor x = a.t.clone();
  tg::Tensor y = tg::custom_kernel({tg::Tensor::empty({3, 4}), x}, add_one_kernel)[0].sum();
  EXPECT_NE(error_of([&] { y.backward(); }).find("custom kernel add_one has no gradient function"), std::string::npos);
  // a gradient function must give one gradient per buffer
  tg::Tensor::CallGradFxn short_grad = [](const tg::Tensor& g, const TV&) { return std::vector<std::optional<tg::Tensor>>{std::nullopt, g}; };
  tg::Tensor z = tg::custom_kernel({tg::Tensor::empty({3, 4}), x.clone(), x.clone()}, add_kernel, short_grad)[0].sum();
  std::string e = error_of([&] { z.backward(); });
  EXPECT_NE(e.find("gradient: a CALL's gradient function returned 2 gradients for 3 arguments"), std::string::npos) << e;
}

TEST(CustomKernel, Errors) {
  tg::Tensor a = tg::Tensor::ones({16}), b = tg::Tensor::ones({8}), out = tg::Tensor::empty({16});
  auto err = [](auto f) { return error_of(f); };
  auto has = [](const std::string& msg, const std::string& part) { return msg.find(part) != std::string::npos; };
  // arity: the kernel takes three buffers
  std::string e = err([&] { tg::custom_kernel({out, a}, add_kernel); });
  EXPECT_TRUE(has(e, "the kernel takes 3 buffers, 2 were passed")) << e;
  e = err([&] { tg::custom_kernel({out, a}, [](const KernelArgs& k) { return k[2].sink("x"); }); });
  EXPECT_TRUE(has(e, "the kernel reads buffer 2 but 2 buffer(s) were passed")) << e;
  // shapes: 16 output elements read from an 8-element input
  e = err([&] { tg::custom_kernel({out, a, b}, add_kernel); });
  EXPECT_TRUE(has(e, "index 0 takes values 0..15, out of range for dim 0 of a buffer of shape (8,)")) << e;
  e = err([&] { tg::custom_kernel({tg::Tensor::empty({4, 4}), tg::Tensor::ones({4, 4})}, [](const KernelArgs& k) {
    KernelUOp i = KernelUOp::range(16, 0);
    return k[0][{i}].store(1.0).end({i}).sink("x");
  }); });
  EXPECT_TRUE(has(e, "1 indices for a buffer of shape (4, 4)")) << e;
  e = err([&] { gemm(tg::Tensor::ones({4, 5}), tg::Tensor::ones({4, 5})); });
  EXPECT_TRUE(has(e, "out of range for dim 0 of a buffer of shape (4, 5)")) << e;
  // dtypes, and what the kernel must return
  e = err([&] { tg::custom_kernel({tg::Tensor::empty({16}, dtypes::int32), a, a}, add_kernel); });
  EXPECT_TRUE(has(e, "storing a float value into a int buffer")) << e;
  e = err([&] { tg::custom_kernel({out}, [](const KernelArgs& k) { return k[0][{0}].store(1.0); }); });
  EXPECT_TRUE(has(e, "must return a SINK")) << e;
  e = err([&] { tg::custom_kernel({out}, [](const KernelArgs& k) {
    KernelUOp i = KernelUOp::range(16, 0);
    return k[0][{i}].store(1.0).sink("open");
  }); });
  EXPECT_TRUE(has(e, "leaves 1 range(s) open")) << e;
  e = err([&] { tg::custom_kernel({}, add_kernel); });
  EXPECT_TRUE(has(e, "needs at least one buffer")) << e;
  e = err([&] { tg::custom_kernel({out, a}, [](const KernelArgs& k) {
    KernelUOp i = KernelUOp::range(16, 0);
    return k[0][{i}].store((k[1][{i}] + 1)[{i}]).end({i}).sink("x");
  }); });
  EXPECT_TRUE(has(e, "only a buffer (a kernel argument or a reg) can be indexed, not a ADD float")) << e;
  e = err([&] { tg::custom_kernel({out, tg::Tensor::empty({16}, dtypes::int32, "CPU:1")}, add_one_kernel); });
  EXPECT_TRUE(has(e, "the buffers are on different devices: CPU and CPU:1")) << e;
}
