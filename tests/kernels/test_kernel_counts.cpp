// Kernel counts: each graph here is also in tests/tools/gen_kernel_counts.py, which records how many kernels tinygrad
// (a9069c177a) schedules for it in tests/data/kernel_counts.txt. Fusion must make exactly as many.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>

#include "tensor/tensor_impl.h"
#include "tg/context.h"
#include "tg/tensor.h"

using namespace tg;

namespace {

Tensor E(const Shape& s, DType dt = dtypes::float32) { return Tensor::empty(s, dt); }
Tensor I(const Shape& s) { return Tensor::empty(s, dtypes::int32); }

Tensor conv_mops() {
  Tensor xp = E({1, 1, 6, 6}).pad({{0, 0}, {0, 0}, {1, 1}, {1, 1}});
  std::vector<Tensor> cols;
  for (int64_t i = 0; i < 3; i++)
    for (int64_t j = 0; j < 3; j++) cols.push_back(xp.shrink({{0, 1}, {0, 1}, {i, i + 6}, {j, j + 6}}));
  return (Tensor::stack(cols, -1) * E({9}).reshape({1, 1, 1, 1, 9})).sum(-1);
}

// backward graphs: the gradients of a loss, scheduled together
std::vector<Tensor> bw_backward() {
  Tensor x = E({4, 8}), w = E({8, 3});
  x.matmul(w).relu().sum().backward();
  return {*x.grad(), *w.grad()};
}

using Graph = std::function<std::vector<Tensor>()>;
const std::map<std::string, Graph>& graphs() {
  static const std::map<std::string, Graph> g{
      {"add", [] { return std::vector{E({16}) + E({16})}; }},
      {"ew_chain", [] { return std::vector{((E({4, 4}) + 1) * 2 - E({4, 4})).exp().sqrt()}; }},
      {"broadcast_add", [] { return std::vector{E({4, 1}) + E({1, 4})}; }},
      {"scalar_mul", [] { return std::vector{E({10}) * 3}; }},
      {"const_only", [] { return std::vector{Tensor::full({4, 4}, 2.0).contiguous()}; }},
      {"sum_all", [] { return std::vector{E({16}).sum()}; }},
      {"sum_axis", [] { return std::vector{E({4, 8}).sum(1)}; }},
      {"sum_keepdim_sub", [] { Tensor x = E({4, 8}); return std::vector{x - x.sum(1, true)}; }},
      {"mean_var", [] { Tensor x = E({4, 8}); return std::vector{(x - x.mean(1, true)).square().mean(1)}; }},
      {"max_reduce", [] { return std::vector{E({4, 8}).max(0)}; }},
      {"softmax", [] { return std::vector{E({4, 8}).softmax(-1)}; }},
      {"log_softmax", [] { return std::vector{E({4, 8}).log_softmax(-1)}; }},
      {"logsumexp", [] { return std::vector{E({4, 8}).logsumexp(1)}; }},
      {"matmul", [] { return std::vector{E({8, 16}).matmul(E({16, 4}))}; }},
      {"matmul_bias_relu", [] { return std::vector{(E({8, 16}).matmul(E({16, 4})) + E({4})).relu()}; }},
      {"mlp2", [] { return std::vector{E({8, 16}).matmul(E({16, 32})).relu().matmul(E({32, 4})).relu()}; }},
      {"batched_matmul", [] { return std::vector{E({2, 3, 4, 5}).matmul(E({2, 3, 5, 6}))}; }},
      {"pad", [] { return std::vector{E({4, 4}).pad({{1, 1}, {2, 0}})}; }},
      {"pad_add", [] { return std::vector{E({4, 4}).pad({{1, 1}, {2, 0}}, 1.5) + 1}; }},
      {"shrink", [] { return std::vector{E({8, 8}).shrink({{1, 5}, {2, 6}}) + 1}; }},
      {"flip", [] { return std::vector{E({4, 6}).flip(0) * 2}; }},
      {"pad_shrink_flip", [] { return std::vector{E({6, 6}).pad({{1, 1}, {1, 1}}).shrink({{0, 6}, {2, 8}}).flip(1) + 1}; }},
      {"permute_add", [] { return std::vector{E({4, 8}).permute({1, 0}) + E({8, 4})}; }},
      {"cat", [] { return std::vector{E({4, 4}).cat({E({2, 4})}, 0)}; }},
      {"cat3", [] { return std::vector{E({4, 2}).cat({E({4, 3}), E({4, 1})}, 1) * 2}; }},
      {"stack", [] { return std::vector{E({4}).stack({E({4})}, 0)}; }},
      {"two_outputs_shared", [] { Tensor x = E({16}); return std::vector{x + 1, x * 2}; }},
      {"two_outputs_reduce", [] { Tensor x = E({4, 8}); return std::vector{x.sum(1), x.max(1)}; }},
      {"reduce_of_broadcast", [] { return std::vector{E({4, 1}).expand({4, 8}).sum(1)}; }},
      {"reduce_then_expand", [] { return std::vector{E({4, 8}).sum(1, true).expand({4, 8}) * E({4, 8})}; }},
      {"double_reduce", [] { return std::vector{E({4, 8}).sum(1).sum()}; }},
      {"contiguous_mid", [] { return std::vector{(E({8}) + 1).contiguous() * 2}; }},
      {"cast_chain", [] { return std::vector{(E({8}, dtypes::int32).cast(dtypes::float32) / 3).cast(dtypes::float16)}; }},
      {"arange", [] { return std::vector{Tensor::arange(10).contiguous()}; }},
      {"arange_dev", [] { return std::vector{Tensor::arange(10, dtypes::int32).to("CPU").contiguous()}; }},
      {"arange_float_dev", [] { return std::vector{Tensor::arange(2, 20, 3, dtypes::float32).to("CPU") * 2}; }},
      {"arange_add", [] { return std::vector{Tensor::arange(8) + E({8}, dtypes::int32)}; }},
      {"eye", [] { return std::vector{Tensor::eye(4).contiguous()}; }},
      {"eye_dev", [] { return std::vector{Tensor::eye(4).to("CPU").contiguous()}; }},
      {"cumsum", [] { return std::vector{E({8}).cumsum()}; }},
      {"where_cmp", [] { Tensor x = E({8}); return std::vector{(x > 0).where(x, x * 0.1)}; }},
      {"argmax", [] { return std::vector{E({4, 8}).argmax(1)}; }},
      {"conv_mops", [] { return std::vector{conv_mops()}; }},
      {"wino_conv", [] { Context c({{"WINO", 1}}); return std::vector{E({2, 4, 8, 8}).conv2d(E({6, 4, 3, 3}), std::nullopt, 1, 1, 1, 1)}; }},
      {"bw_wino_conv", [] {
         Tensor x = E({2, 4, 8, 8}), w = E({6, 4, 3, 3});
         Context c({{"WINO", 1}});
         return x.conv2d(w, std::nullopt, 1, 1, 1, 1).sum().gradient({x, w});
       }},
      {"repeat", [] { return std::vector{E({2, 3}).repeat({2, 2}) + 1}; }},
      {"slice_contig", [] { return std::vector{E({16})[{Slice{4, 12, {}}}].contiguous()}; }},
      {"slice_step", [] { return std::vector{E({16})[{Slice{{}, {}, 2}}] + 1}; }},
      {"transpose_contig", [] { return std::vector{E({4, 8}).transpose().contiguous()}; }},
      {"fancy_index", [] { return std::vector{E({8, 6})[I({4})]}; }},
      {"fancy_index_consecutive", [] { return std::vector{E({4, 5, 6})[{I({3}), I({3})}]}; }},
      {"fancy_index_separated", [] { return std::vector{E({4, 5, 6})[{I({3}), Slice{}, I({3})}]}; }},
      {"setitem_fancy", [] { Tensor a = E({8, 6}).contiguous().realize(); a.setitem({I({3})}, E({3, 6})); return std::vector{a}; }},
      {"setitem_slice", [] { Tensor a = E({8}).contiguous().realize(); a.setitem({Slice{2, 6}}, E({4})); return std::vector{a}; }},
      {"einsum_matmul", [] { return std::vector{Tensor::einsum("ij,jk->ik", {E({4, 5}), E({5, 3})})}; }},
      {"einsum_batch_diag", [] { return std::vector{Tensor::einsum("bii->bi", {E({2, 4, 4})}).contiguous()}; }},
      {"interpolate_bilinear", [] { return std::vector{E({1, 2, 4, 4}).interpolate({6, 6})}; }},
      {"interpolate_nearest", [] { return std::vector{E({1, 2, 4, 4}).interpolate({8, 8}, "nearest")}; }},
      {"max_unpool2d", [] { auto [v, i] = E({1, 2, 4, 4}).max_pool2d_with_indices(); return std::vector{v.max_unpool2d(i)}; }},
      {"rearrange", [] { return std::vector{E({2, 3, 4}).rearrange("a b c -> c (a b)").contiguous()}; }},
      {"scatter", [] { return std::vector{E({4, 6}).scatter(0, I({2, 6}), E({2, 6}))}; }},
      {"scatter_reduce_sum", [] { return std::vector{E({4, 6}).scatter_reduce(0, I({2, 6}), E({2, 6}), "sum")}; }},
      {"sort", [] { return std::vector{E({8}).sort().first}; }},
      {"topk", [] { return std::vector{E({8}).topk(3).first}; }},
      {"assign_add", [] { Tensor a = E({4, 4}).contiguous().realize(); return std::vector{a.assign(a + 1)}; }},
      {"assign_then_read", [] { Tensor a = E({8}).contiguous().realize(); a.assign(a * 2); return std::vector{a + 1}; }},
      {"bw_relu_linear", [] { Tensor x = E({8, 16}), w = E({16, 4}), b = E({4}); return (x.matmul(w) + b).relu().sum().gradient({x, w, b}); }},
      {"bw_mlp2", [] { Tensor x = E({8, 16}), w1 = E({16, 32}), w2 = E({32, 4}); return x.matmul(w1).relu().matmul(w2).square().mean().gradient({w1, w2}); }},
      {"bw_softmax_ce", [] { Tensor l = E({4, 8}), y = E({4, 8}); return (-(l.log_softmax(-1) * y).sum(1)).mean().gradient({l}); }},
      {"bw_softmax", [] { Tensor x = E({4, 8}), s = E({4, 8}); return (x.softmax(-1) * s).sum().gradient({x}); }},
      {"bw_pad_shrink_flip", [] { Tensor x = E({6, 6}); return x.pad({{1, 1}, {1, 1}}).shrink({{0, 6}, {2, 8}}).flip(1).exp().sum().gradient({x}); }},
      {"bw_max_reduce", [] { Tensor x = E({4, 8}); return x.max(1).sum().gradient({x}); }},
      {"bw_broadcast_mul", [] { Tensor x = E({4, 1}), y = E({1, 8}); return (x * y).exp().sum().gradient({x, y}); }},
      {"bw_layernorm", [] { Tensor x = E({4, 8}), w = E({8}); return (x.layernorm() * w).sum().gradient({x, w}); }},
      {"bw_cat_stack", [] { Tensor x = E({4, 4}), y = E({2, 4}); return x.cat(y, 0).sin().stack(E({6, 4}), 0).sum().gradient({x, y}); }},
      {"bw_seeded", [] { Tensor x = E({4, 8}); return (x * 2).exp().gradient({x}, E({4, 8})); }},
      {"bw_cumsum", [] { Tensor x = E({8}); return x.cumsum().square().sum().gradient({x}); }},
      {"bw_prod", [] { Tensor x = E({4, 8}); return x.prod(1).sum().gradient({x}); }},
      {"bw_backward", bw_backward},
      {"two_assigns", [] {
         Tensor a = E({8}).contiguous().realize(), b = E({8}).contiguous().realize();
         return std::vector{a.assign(b + 1), b.assign(a + 2)};
       }},
  };
  return g;
}

std::map<std::string, size_t> tinygrad_counts() {
  std::ifstream f(std::string(TG_TEST_DATA) + "/kernel_counts.txt");
  std::map<std::string, size_t> out;
  std::string name;
  size_t n;
  while (f >> name >> n) out[name] = n;
  return out;
}

}  // namespace

TEST(KernelCounts, EveryGraphIsInTheTinygradFile) {
  auto counts = tinygrad_counts();
  ASSERT_GE(counts.size(), 30u);
  for (auto& [name, g] : graphs()) EXPECT_TRUE(counts.contains(name)) << name;
  for (auto& [name, n] : counts) EXPECT_TRUE(graphs().contains(name)) << name;
}

TEST(KernelCounts, EqualTinygrads) {
  auto counts = tinygrad_counts();
  size_t same = 0;
  for (auto& [name, g] : graphs()) {
    std::vector<Tensor> outs = g();
    size_t ours = schedule_linear(outs).src().size();
    EXPECT_EQ(ours, counts[name]) << name;
    same += ours == counts[name];
  }
  std::printf("kernel counts: %zu/%zu graphs schedule as many kernels as tinygrad\n", same, graphs().size());
}
