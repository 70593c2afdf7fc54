// nn functionals and layers against libtorch: each case is written once (the tg call and the torch call on the same
// inputs) and checked twice, forward values and the gradients of every float input and parameter (torch autograd).
// Layers keep their own tinygrad-style initial weights; torch gets copies of them.
#include <regex>

#include "tensor_harness.h"
#include "tg/context.h"
#include "tg/nn.h"

using namespace conf;
using TV = std::vector<tg::Tensor>;
using AV = std::vector<at::Tensor>;

namespace {

struct Case {
  std::string name;
  std::vector<Pair> in;
  std::function<tg::Tensor(const TV&)> t;
  std::function<at::Tensor(const AV&)> a;
  bool grad = true;
  bool cast_expected = false;
  oracle::Tol tol{1e-4, 1e-5}, gtol{1e-4, 1e-4};
};

Pair P(const tg::Tensor& t) { return {t, to_torch(t)}; }  // a tg tensor (a layer's weight) and its copy for torch
Pair F(const std::vector<int64_t>& s, uint32_t seed = 1, double lo = -2, double hi = 2) { return input(s, dtypes::float32, lo, hi, seed); }
Pair I(const std::vector<int64_t>& s, int64_t hi, uint32_t seed = 1) { return input(s, dtypes::int32, 0, double(hi), seed); }

int run(const Case& c) {
  SCOPED_TRACE(c.name);
  TV ts;
  AV as;
  for (auto& p : c.in) {
    ts.push_back(p.t);
    as.push_back(p.a.clone());
    if (c.grad && p.a.is_floating_point()) as.back().requires_grad_(true);
  }
  tg::Tensor out;
  try {
    out = c.t(ts);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "tg threw: " << e.what();
    return 1;
  }
  at::Tensor ref = c.a(as);
  auto fwd = same(out, ref.detach(), c.cast_expected, c.tol);
  EXPECT_TRUE(fwd) << "forward";
  if (!c.grad) return fwd ? 0 : 1;
  Pair seed = input(ref.sizes().vec(), dtypes::float32, -1, 1, 99);
  TV targets;
  std::vector<size_t> idx;
  for (size_t i = 0; i < ts.size(); i++)
    if (ts[i].is_floating_point()) targets.push_back(ts[i]), idx.push_back(i);
  TV g;
  try {
    g = out.gradient(targets, seed.t);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "tg gradient threw: " << e.what();
    return 1;
  }
  ref.backward(seed.a);
  int bad = fwd ? 0 : 1;
  for (size_t k = 0; k < g.size(); k++) {
    at::Tensor ag = as[idx[k]].grad();
    if (!ag.defined()) ag = at::zeros_like(as[idx[k]]);
    auto r = same(g[k], ag, false, c.gtol);
    EXPECT_TRUE(r) << "gradient of input " << idx[k];
    bad += r ? 0 : 1;
  }
  return bad;
}

void run_all(const std::vector<Case>& cases, const char* what) {
  int failed = 0;
  for (auto& c : cases) failed += run(c) ? 1 : 0;
  std::printf("%s: %zu cases, %d with a mismatch\n", what, cases.size(), failed);
}

// eval-mode batch norm; torch has no gradient for the statistics, so it is written out (and checked against torch's op)
at::Tensor torch_bn_eval(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, const at::Tensor& m, const at::Tensor& v, double eps) {
  std::vector<int64_t> s(size_t(x.dim()), 1);
  s[1] = -1;
  at::Tensor r = (x - m.view(s)) * at::rsqrt(v.view(s) + eps);
  if (w.defined()) r = r * w.view(s) + b.view(s);
  at::Tensor ref = at::batch_norm(x, w, b, m.detach(), v.detach(), false, 0.1, eps, false);
  TORCH_CHECK(at::allclose(r, ref, 1e-5, 1e-5), "written-out batch norm differs from at::batch_norm");
  return r;
}

// torch padding lists (left, right, top, bottom) as tinygrad's per-side form takes them
at::Tensor tpad(const at::Tensor& x, std::vector<int64_t> p) { return at::constant_pad_nd(x, p, 0); }

}  // namespace

// ***** convolution *****

TEST(ConformanceNN, Conv2d) {
  struct C { std::string name; std::vector<int64_t> xs, ws; int64_t groups; tg::IntList stride, dilation, padding; std::vector<int64_t> ts, td, tp; bool bias; };
  std::vector<C> cfg{
      {"plain", {2, 3, 5, 5}, {4, 3, 3, 3}, 1, 1, 1, 0, {1, 1}, {1, 1}, {0, 0, 0, 0}, true},
      {"stride2_pad1", {1, 2, 6, 5}, {3, 2, 3, 3}, 1, 2, 1, 1, {2, 2}, {1, 1}, {1, 1, 1, 1}, true},
      {"stride_tuple_pad_hw", {1, 2, 6, 6}, {2, 2, 3, 2}, 1, {2, 1}, 1, {1, 2}, {2, 1}, {1, 1}, {2, 2, 1, 1}, false},
      {"pad_per_side", {1, 2, 5, 5}, {2, 2, 3, 3}, 1, 1, 1, {1, 0, 2, 1}, {1, 1}, {1, 1}, {1, 0, 2, 1}, true},
      {"negative_pad", {1, 2, 6, 6}, {2, 2, 2, 2}, 1, 1, 1, {-1, 1, 0, 0}, {1, 1}, {1, 1}, {-1, 1, 0, 0}, false},
      {"dilation2", {1, 2, 7, 7}, {3, 2, 3, 3}, 1, 1, 2, 1, {1, 1}, {2, 2}, {1, 1, 1, 1}, true},
      {"groups2", {2, 4, 5, 5}, {6, 2, 3, 3}, 2, 1, 1, 1, {1, 1}, {1, 1}, {1, 1, 1, 1}, true},
      {"depthwise", {1, 3, 4, 4}, {3, 1, 2, 2}, 3, 2, 1, 0, {2, 2}, {1, 1}, {0, 0, 0, 0}, false},
  };
  std::vector<Case> cases;
  for (auto& k : cfg) {
    std::vector<Pair> in{F(k.xs, 1), F(k.ws, 2, -1, 1)};
    if (k.bias) in.push_back(F({k.ws[0]}, 3));
    cases.push_back({"conv2d " + k.name, in,
                     [k](const TV& v) { return v[0].conv2d(v[1], k.bias ? std::optional<tg::Tensor>(v[2]) : std::nullopt, k.groups, k.stride, k.dilation, k.padding); },
                     [k](const AV& v) { return at::conv2d(tpad(v[0], k.tp), v[1], k.bias ? v[2] : at::Tensor(), k.ts, std::vector<int64_t>{0}, k.td, k.groups); }});
  }
  cases.push_back({"conv1d", {F({2, 2, 7}), F({3, 2, 3}, 2), F({3}, 3)}, [](const TV& v) { return v[0].conv2d(v[1], v[2], 1, 2, 1, 1); },
                   [](const AV& v) { return at::conv1d(v[0], v[1], v[2], 2, 1); }});
  // pixels as the main job feeds them: the product promotes to float (SIMD=1 casts them first, then stores channel-last)
  cases.push_back({"conv2d uint8 input", {input({2, 1, 7, 6}, tg::dtypes::uint8, 0, 255, 4), F({3, 1, 3, 3}, 2, -1, 1), F({3}, 3)},
                   [](const TV& v) { return v[0].conv2d(v[1], v[2]).relu().sum({2, 3}); },
                   [](const AV& v) { return at::conv2d(v[0].to(at::kFloat), v[1], v[2]).relu().sum({2, 3}); }, true, false, {1e-4, 1e-4}, {1e-3, 1e-3}});
  cases.push_back({"conv2d_dtype_sum", {F({1, 2, 4, 4}), F({2, 2, 2, 2}, 2)},
                   [](const TV& v) { return v[0].conv2d(v[1], std::nullopt, 1, 1, 1, 0, tg::dtypes::float32); },
                   [](const AV& v) { return at::conv2d(v[0], v[1]); }});
  run_all(cases, "conv2d");
  // SIMD=1 pinned (rangeify.cpp): the copies around the convolution's function dropped where the value is stored already
  // (a realized input, the input gradient's padded gradient, the output's realize) and kept where they compute (relu(x),
  // an output read twice); and a weight gradient of 8 x 32 x 32 = 8,192 terms per weight, which SIMD CPU kernels split
  tg::Context simd({{"SIMD", 1}, {"SPLIT_REDUCEOP", 1}});
  run_all({{"conv2d simd stored input", {F({2, 3, 9, 9}), F({8, 3, 3, 3}, 2, -1, 1)}, [](const TV& v) { return v[0].conv2d(v[1]); },
            [](const AV& v) { return at::conv2d(v[0], v[1]); }},
           {"conv2d simd relu input, output read twice", {F({2, 3, 9, 9}), F({8, 3, 3, 3}, 2, -1, 1), F({8}, 3)},
            [](const TV& v) { tg::Tensor y = v[0].relu().conv2d(v[1], v[2]); return y * y.relu(); },
            [](const AV& v) { at::Tensor y = at::conv2d(v[0].relu(), v[1], v[2]); return y * y.relu(); }},
           {"conv2d simd stride2 pad1", {F({2, 4, 10, 10}), F({6, 4, 3, 3}, 2, -1, 1)}, [](const TV& v) { return v[0].conv2d(v[1], std::nullopt, 1, 2, 1, 1); },
            [](const AV& v) { return at::conv2d(v[0], v[1], {}, 2, 1); }},
           {"conv2d simd split weight gradient", {F({8, 4, 34, 34}), F({8, 4, 3, 3}, 2, -1, 1)}, [](const TV& v) { return v[0].conv2d(v[1]); },
            [](const AV& v) { return at::conv2d(v[0], v[1]); }, true, false, {1e-4, 1e-5}, {1e-4, 1e-3}}},
          "conv2d SIMD=1");
}

// Windows over a zero padding: with SIMD=1 the kernels' window ranges are clipped to the input (pm_clip_reduce_gates)
// and the input gradient of a stride-1 convolution is a convolution of the unpadded gradient with such windows; SIMD=0
// keeps tinygrad's kernels and the stored padded gradient. Forward and both gradients against torch at both settings:
// the main job's 5x5 and 3x3 windows, a padding wider than the window (windows wholly in the padding: empty ranges),
// per-side pads, a product that is not a plain load (relu before, a scale after), a padding of ones (not zero: nothing
// clipped), dilation (its input gradient keeps the stored padded gradient), groups, and a stride-1 transposed
// convolution.
TEST(ConformanceNN, Conv2dClippedWindows) {
  std::vector<Case> cases{
      {"k5 pad0 (main job c2)", {F({3, 4, 12, 12}), F({6, 4, 5, 5}, 2, -1, 1)}, [](const TV& v) { return v[0].conv2d(v[1]); },
       [](const AV& v) { return at::conv2d(v[0], v[1]); }},
      {"k3 pad0, 8x8 (main job c4)", {F({2, 8, 8, 8}), F({16, 8, 3, 3}, 2, -1, 1)}, [](const TV& v) { return v[0].conv2d(v[1]); },
       [](const AV& v) { return at::conv2d(v[0], v[1]); }},
      {"k3 pad1", {F({2, 3, 7, 6}), F({8, 3, 3, 3}, 2, -1, 1), F({8}, 3)}, [](const TV& v) { return v[0].conv2d(v[1], v[2], 1, 1, 1, 1); },
       [](const AV& v) { return at::conv2d(v[0], v[1], v[2], 1, 1); }},
      {"k2 pad3 (windows in the padding)", {F({1, 2, 4, 5}), F({3, 2, 2, 2}, 2, -1, 1), F({3}, 3)},
       [](const TV& v) { return v[0].conv2d(v[1], v[2], 1, 1, 1, 3); }, [](const AV& v) { return at::conv2d(v[0], v[1], v[2], 1, 3); }},
      {"pad per side", {F({2, 2, 6, 5}), F({4, 2, 3, 2}, 2, -1, 1)}, [](const TV& v) { return v[0].conv2d(v[1], std::nullopt, 1, 1, 1, {2, 0, 1, 3}); },
       [](const AV& v) { return at::conv2d(tpad(v[0], {2, 0, 1, 3}), v[1]); }},
      {"relu in, scaled out", {F({2, 3, 6, 6}), F({8, 3, 3, 3}, 2, -1, 1)}, [](const TV& v) { return v[0].relu().conv2d(v[1], std::nullopt, 1, 1, 1, 2) * 0.5; },
       [](const AV& v) { return at::conv2d(v[0].relu(), v[1], {}, 1, 2) * 0.5; }},
      {"padded with ones", {F({2, 3, 6, 6}), F({4, 3, 3, 3}, 2, -1, 1)},
       [](const TV& v) { return v[0].pad({{0, 0}, {0, 0}, {1, 2}, {2, 1}}, 1.0).conv2d(v[1]); },
       [](const AV& v) { return at::conv2d(at::constant_pad_nd(v[0], {2, 1, 1, 2}, 1), v[1]); }},
      {"dilation2 pad2", {F({1, 2, 7, 7}), F({3, 2, 3, 3}, 2, -1, 1)}, [](const TV& v) { return v[0].conv2d(v[1], std::nullopt, 1, 1, 2, 2); },
       [](const AV& v) { return at::conv2d(v[0], v[1], {}, 1, 2, 2); }},
      {"groups2 pad1", {F({2, 4, 5, 5}), F({6, 2, 3, 3}, 2, -1, 1)}, [](const TV& v) { return v[0].conv2d(v[1], std::nullopt, 2, 1, 1, 1); },
       [](const AV& v) { return at::conv2d(v[0], v[1], {}, 1, 1, 1, 2); }},
      {"conv_transpose2d pad1", {F({2, 3, 5, 5}), F({3, 4, 3, 3}, 2, -1, 1)},
       [](const TV& v) { return v[0].conv_transpose2d(v[1], std::nullopt, 1, 1, 1, 1); }, [](const AV& v) { return at::conv_transpose2d(v[0], v[1], {}, 1, 1); }},
  };
  for (int64_t simd : {0, 1}) {
    tg::Context c({{"SIMD", simd}});
    run_all(cases, simd ? "conv2d clipped windows SIMD=1" : "conv2d clipped windows SIMD=0");
  }
}

// WINO=1: stride-1 undilated 3x3 convolutions as tinygrad's Winograd F(4x4,3x3), 5x5 as F(4x4,5x5) (ours), forward and
// both gradients (autograd through the transforms) against torch's direct convolution: outputs that are and are not whole
// 4x4 tiles, padding (per side too), bias, groups, a 1-d and a 3x3 of uint8 pixels, the main job's c2 (5x5, 32 channels)
// and c3 shapes at a small batch, and a kernel the setting leaves alone (stride 2). Each case's schedule is also built at
// WINO=0: the Winograd one must differ (and the stride-2 one not), or the cases would test the direct convolution.
// The transforms' sums round differently from the window's: the tolerance is the output's scale times a few 1e-6.
TEST(ConformanceNN, Conv2dWinograd) {
  oracle::Tol t{1e-4, 1e-4}, t5{1e-4, 4e-4};
  std::vector<Case> cases{
      {"k3 pad0 8x8", {F({2, 4, 8, 8}), F({5, 4, 3, 3}, 2, -1, 1)}, [](const TV& v) { return v[0].conv2d(v[1]); },
       [](const AV& v) { return at::conv2d(v[0], v[1]); }, true, false, t, t},
      {"k3 pad1 bias 7x6", {F({2, 3, 7, 6}), F({8, 3, 3, 3}, 2, -1, 1), F({8}, 3)}, [](const TV& v) { return v[0].conv2d(v[1], v[2], 1, 1, 1, 1); },
       [](const AV& v) { return at::conv2d(v[0], v[1], v[2], 1, 1); }, true, false, t, t},
      {"k3 pad per side", {F({2, 2, 6, 5}), F({4, 2, 3, 3}, 2, -1, 1)}, [](const TV& v) { return v[0].conv2d(v[1], std::nullopt, 1, 1, 1, {2, 0, 1, 3}); },
       [](const AV& v) { return at::conv2d(tpad(v[0], {2, 0, 1, 3}), v[1]); }, true, false, t, t},
      {"k3 groups2 pad1", {F({2, 4, 5, 5}), F({6, 2, 3, 3}, 2, -1, 1), F({6}, 3)}, [](const TV& v) { return v[0].conv2d(v[1], v[2], 2, 1, 1, 1); },
       [](const AV& v) { return at::conv2d(v[0], v[1], v[2], 1, 1, 1, 2); }, true, false, t, t},
      {"k3 1-d pad1", {F({2, 3, 11}), F({4, 3, 3}, 2, -1, 1)}, [](const TV& v) { return v[0].conv2d(v[1], std::nullopt, 1, 1, 1, 1); },
       [](const AV& v) { return at::conv1d(v[0], v[1], {}, 1, 1); }, true, false, t, t},
      {"k3 c3 shape (32->64, 10x10)", {F({2, 32, 10, 10}), F({64, 32, 3, 3}, 2, -0.2, 0.2)}, [](const TV& v) { return v[0].conv2d(v[1]); },
       [](const AV& v) { return at::conv2d(v[0], v[1]); }, true, false, t, t},
      {"k3 uint8 pixels", {input({2, 1, 7, 6}, tg::dtypes::uint8, 0, 255, 4), F({3, 1, 3, 3}, 2, -1, 1), F({3}, 3)},
       [](const TV& v) { return v[0].conv2d(v[1], v[2]).relu().sum({2, 3}); },
       [](const AV& v) { return at::conv2d(v[0].to(at::kFloat), v[1], v[2]).relu().sum({2, 3}); }, true, false, {1e-4, 1e-2}, {1e-3, 1e-2}},
      {"k5 pad0 12x12", {F({3, 4, 12, 12}), F({6, 4, 5, 5}, 2, -1, 1)}, [](const TV& v) { return v[0].conv2d(v[1]); },
       [](const AV& v) { return at::conv2d(v[0], v[1]); }, true, false, t5, t5},
      {"k5 pad2 bias 9x7", {F({2, 3, 9, 7}), F({5, 3, 5, 5}, 2, -1, 1), F({5}, 3)}, [](const TV& v) { return v[0].conv2d(v[1], v[2], 1, 1, 1, 2); },
       [](const AV& v) { return at::conv2d(v[0], v[1], v[2], 1, 2); }, true, false, t5, t5},
      {"k5 c2 shape (32->32, 24x24)", {F({2, 32, 24, 24}), F({32, 32, 5, 5}, 2, -0.2, 0.2)}, [](const TV& v) { return v[0].conv2d(v[1]); },
       [](const AV& v) { return at::conv2d(v[0], v[1]); }, true, false, t5, t5},
      {"k3 stride2 (direct)", {F({2, 4, 10, 10}), F({6, 4, 3, 3}, 2, -1, 1)}, [](const TV& v) { return v[0].conv2d(v[1], std::nullopt, 1, 2, 1, 1); },
       [](const AV& v) { return at::conv2d(v[0], v[1], {}, 2, 1); }},
  };
  for (int64_t simd : {0, 1}) {
    tg::Context c({{"WINO", 1}, {"SIMD", simd}});
    run_all(cases, simd ? "conv2d WINO=1 SIMD=1" : "conv2d WINO=1 SIMD=0");
  }
  auto schedule = [](int64_t wino, const Case& c) {
    tg::Context ctx({{"WINO", wino}});
    TV ts;
    for (auto& p : c.in) ts.push_back(p.t);
    static const std::regex buffer_id(R"(BUFFER, ([\w.]+), arg=ParamArg\(\d+)");  // a fresh id per schedule
    return std::regex_replace(tg::Tensor::schedule_linear({c.t(ts)}).str(), buffer_id, "BUFFER, $1");
  };
  for (size_t i = 0; i < cases.size(); i++) {
    bool winograd = i + 1 < cases.size();
    EXPECT_EQ(schedule(1, cases[i]) != schedule(0, cases[i]), winograd) << cases[i].name;
  }
}

TEST(ConformanceNN, ConvTranspose2d) {
  struct C { std::string name; std::vector<int64_t> xs, ws; int64_t groups; std::vector<int64_t> stride, dilation, padding, outpad; bool bias; };
  std::vector<C> cfg{
      {"plain", {1, 2, 4, 4}, {2, 3, 3, 3}, 1, {1, 1}, {1, 1}, {0, 0}, {0, 0}, true},
      {"stride2_pad1_outpad1", {2, 2, 3, 3}, {2, 3, 3, 3}, 1, {2, 2}, {1, 1}, {1, 1}, {1, 1}, true},
      {"stride_tuple", {1, 2, 3, 4}, {2, 2, 2, 3}, 1, {2, 1}, {1, 1}, {0, 1}, {1, 0}, false},
      {"groups2_dilation2", {1, 4, 3, 3}, {4, 1, 2, 2}, 2, {1, 1}, {2, 2}, {0, 0}, {0, 0}, true},
  };
  std::vector<Case> cases;
  for (auto& k : cfg) {
    std::vector<Pair> in{F(k.xs, 1), F(k.ws, 2, -1, 1)};
    if (k.bias) in.push_back(F({k.ws[1] * k.groups}, 3));
    cases.push_back({"conv_transpose2d " + k.name, in,
                     [k](const TV& v) {
                       return v[0].conv_transpose2d(v[1], k.bias ? std::optional<tg::Tensor>(v[2]) : std::nullopt, k.groups, k.stride, k.dilation,
                                                    k.padding, k.outpad);
                     },
                     [k](const AV& v) { return at::conv_transpose2d(v[0], v[1], k.bias ? v[2] : at::Tensor(), k.stride, k.padding, k.outpad, k.groups, k.dilation); }});
  }
  cases.push_back({"conv_transpose1d", {F({1, 2, 5}), F({2, 3, 3}, 2)}, [](const TV& v) { return v[0].conv_transpose2d(v[1], std::nullopt, 1, 2, 1, 1, 1); },
                   [](const AV& v) { return at::conv_transpose1d(v[0], v[1], {}, 2, 1, 1); }});
  run_all(cases, "conv_transpose2d");
}

// ***** pooling *****

TEST(ConformanceNN, Pooling) {
  struct C { std::string name; std::vector<int64_t> xs, k, s, p, d; bool ceil; };
  std::vector<C> cfg{
      {"k2", {2, 2, 4, 4}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false},
      {"k3s1", {1, 2, 5, 5}, {3, 3}, {1, 1}, {0, 0}, {1, 1}, false},
      {"k3s2p1", {1, 2, 5, 6}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false},
      {"ceil", {1, 2, 5, 5}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, true},
      {"k2s3", {1, 2, 7, 8}, {2, 2}, {3, 3}, {0, 0}, {1, 1}, false},  // windows apart: rows cut to 6, columns padded to 9
      {"ceil_k3s2p1", {1, 1, 6, 7}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true},
      {"rect", {1, 2, 6, 5}, {3, 2}, {2, 1}, {1, 0}, {1, 1}, false},
      {"dilation2", {1, 2, 6, 6}, {2, 2}, {1, 1}, {0, 0}, {2, 2}, false},
  };
  std::vector<Case> cases;
  for (auto& k : cfg) {
    cases.push_back({"max_pool2d " + k.name, {F(k.xs)}, [k](const TV& v) { return v[0].max_pool2d(k.k, k.s, k.d, k.p, k.ceil); },
                     [k](const AV& v) { return at::max_pool2d(v[0], k.k, k.s, k.p, k.d, k.ceil); }});
    cases.push_back({"max_pool2d_indices " + k.name, {F(k.xs)}, [k](const TV& v) { return v[0].max_pool2d_with_indices(k.k, k.s, k.d, k.p, k.ceil).second; },
                     [k](const AV& v) { return std::get<1>(at::max_pool2d_with_indices(v[0], k.k, k.s, k.p, k.d, k.ceil)); }, false, true});
    if (k.d[0] != 1) continue;  // torch's avg_pool2d has no dilation
    bool padded = k.ceil || k.p[0] || k.p[1];  // without padding count_include_pad changes nothing
    for (bool cip : {true, false})
      if (cip || padded)
        cases.push_back({"avg_pool2d " + k.name + (cip ? "" : " exclude_pad"), {F(k.xs)},
                         [k, cip](const TV& v) { return v[0].avg_pool2d(k.k, k.s, 1, k.p, k.ceil, cip); },
                         [k, cip](const AV& v) { return at::avg_pool2d(v[0], k.k, k.s, k.p, k.ceil, cip); }});
  }
  cases.push_back({"max_pool1d", {F({2, 3, 7})}, [](const TV& v) { return v[0].max_pool2d(tg::IntList(std::vector<int64_t>{3}), tg::IntList(2)); },
                   [](const AV& v) { return at::max_pool1d(v[0], 3, 2); }});
  cases.push_back({"avg_pool1d", {F({2, 3, 7})}, [](const TV& v) { return v[0].avg_pool2d(tg::IntList(std::vector<int64_t>{3}), tg::IntList(2), 1, 1); },
                   [](const AV& v) { return at::avg_pool1d(v[0], 3, 2, 1); }});
  cases.push_back({"max_pool2d_default_stride", {F({1, 2, 6, 6})}, [](const TV& v) { return v[0].max_pool2d(3); },
                   [](const AV& v) { return at::max_pool2d(v[0], {3, 3}); }});
  run_all(cases, "pooling");
}

// ***** indexing-style ops, batchnorm, sequential *****

TEST(ConformanceNN, IndexingAndNorm) {
  std::vector<Case> cases{
      {"one_hot", {I({2, 3}, 5)}, [](const TV& v) { return v[0].one_hot(5); }, [](const AV& v) { return at::one_hot(v[0].to(at::kLong), 5); }, false, true},
      {"one_hot_1d", {I({4}, 3)}, [](const TV& v) { return v[0].one_hot(3); }, [](const AV& v) { return at::one_hot(v[0].to(at::kLong), 3); }, false, true},
      {"gather_dim1", {F({3, 4}), I({3, 2}, 4, 2)}, [](const TV& v) { return v[0].gather(1, v[1]); },
       [](const AV& v) { return at::gather(v[0], 1, v[1].to(at::kLong)); }},
      {"gather_dim0_smaller", {F({4, 3}), I({2, 2}, 4, 3)}, [](const TV& v) { return v[0].gather(0, v[1]); },
       [](const AV& v) { return at::gather(v[0], 0, v[1].to(at::kLong)); }},
      {"gather_neg_dim_3d", {F({2, 3, 4}), I({2, 3, 2}, 4, 4)}, [](const TV& v) { return v[0].gather(-1, v[1]); },
       [](const AV& v) { return at::gather(v[0], -1, v[1].to(at::kLong)); }},
      {"batchnorm", {F({2, 3, 4, 4}), F({3}, 2), F({3}, 3), F({3}, 4), F({3}, 5, 0.5, 2)},
       [](const TV& v) { return v[0].batchnorm(v[1], v[2], v[3], (v[4] + 1e-5).rsqrt()); },
       [](const AV& v) { return torch_bn_eval(v[0], v[1], v[2], v[3], v[4], 1e-5); }},
      {"batchnorm_noaffine_keep_invstd", {F({2, 3, 5}), F({3}, 4), F({3}, 5, 0.5, 2)},
       [](const TV& v) { return v[0].batchnorm(std::nullopt, std::nullopt, v[1], (v[2] + 1e-5).rsqrt().reshape({1, 3, 1})); },
       [](const AV& v) { return torch_bn_eval(v[0], {}, {}, v[1], v[2], 1e-5); }},
      {"sequential", {F({2, 3})}, [](const TV& v) { return v[0].sequential({[](const tg::Tensor& x) { return x * 2; }, [](const tg::Tensor& x) { return x.relu(); }}); },
       [](const AV& v) { return at::relu(v[0] * 2); }},
      {"rms_norm", {F({2, 5})}, [](const TV& v) { return v[0].rms_norm(); }, [](const AV& v) { return v[0] * at::rsqrt(v[0].pow(2).mean(-1, true) + 1e-6); }},
      {"rms_norm_axes", {F({2, 3, 4})}, [](const TV& v) { return v[0].rms_norm({1, 2}, 1e-3); },
       [](const AV& v) { return v[0] * at::rsqrt(v[0].pow(2).mean({1, 2}, true) + 1e-3); }},
  };
  run_all(cases, "indexing and norm");
}

// ***** losses *****

TEST(ConformanceNN, Losses) {
  using R = at::Reduction::Reduction;
  auto red = [](const std::string& r) { return r == "none" ? R::None : r == "sum" ? R::Sum : R::Mean; };
  std::vector<Case> cases;
  // (reduction, label_smoothing, ignore_index): every option alone and together, not the whole product (each is new kernels)
  struct S { std::string r; double ls; int64_t ign; };
  for (auto [r, ls, ign] : std::vector<S>{{"mean", 0, -1}, {"mean", 0.1, -1}, {"mean", 0, 1}, {"mean", 0.1, 1}, {"sum", 0.1, 1}, {"none", 0.1, 1}, {"none", 0, -1}})
    cases.push_back({"sparse_ce " + r + " ls=" + std::to_string(ls) + " ignore=" + std::to_string(ign), {F({4, 3}), I({4}, 3, 7)},
                     [=](const TV& v) { return v[0].sparse_categorical_crossentropy(v[1], ign, ls, r); },
                     [=](const AV& v) { return at::cross_entropy_loss(v[0], v[1].to(at::kLong), {}, red(r), ign == -1 ? -100 : ign, ls); }});
  for (auto [r, ls, probs] : std::vector<std::tuple<std::string, double, bool>>{{"mean", 0, false}, {"sum", 0.1, false}, {"none", 0.1, false},
                                                                              {"mean", 0.1, true}, {"none", 0, true}}) {
    if (!probs) {
      cases.push_back({"cross_entropy idx " + r + " ls=" + std::to_string(ls), {F({4, 3}), I({4}, 3, 7)},
                       [=](const TV& v) { return v[0].cross_entropy(v[1], r, ls); },
                       [=](const AV& v) { return at::cross_entropy_loss(v[0], v[1].to(at::kLong), {}, red(r), -100, ls); }});
    } else {
      cases.push_back({"cross_entropy probs " + r + " ls=" + std::to_string(ls), {F({3, 4}), F({3, 4}, 5, 0, 1)},
                       [=](const TV& v) { return v[0].cross_entropy(v[1].softmax(1), r, ls); },
                       [=](const AV& v) { return at::cross_entropy_loss(v[0], v[1].softmax(1), {}, red(r), -100, ls); }});
    }
  }
  for (std::string r : {"mean", "sum", "none"}) {
    cases.push_back({"bce " + r, {F({3, 4}, 1, 0.05, 0.95), F({3, 4}, 2, 0, 1)}, [=](const TV& v) { return v[0].binary_crossentropy(v[1], r); },
                     [=](const AV& v) { return at::binary_cross_entropy(v[0], v[1], {}, red(r)); }});
    cases.push_back({"bce_logits " + r, {F({3, 4}, 1, -4, 4), F({3, 4}, 2, 0, 1)}, [=](const TV& v) { return v[0].binary_crossentropy_logits(v[1], r); },
                     [=](const AV& v) { return at::binary_cross_entropy_with_logits(v[0], v[1], {}, {}, red(r)); }});
    if (r == "sum") continue;
    cases.push_back({"bce_logits pos_weight " + r, {F({3, 4}, 1, -4, 4), F({3, 4}, 2, 0, 1), F({4}, 3, 0.5, 2)},
                     [=](const TV& v) { return v[0].binary_crossentropy_logits(v[1], r, v[2]); },
                     [=](const AV& v) {
                       // torch has no gradient for pos_weight: the same loss written out, checked against torch's op first
                       at::Tensor l = -(v[2] * v[1] * at::log_sigmoid(v[0]) + (1 - v[1]) * at::log_sigmoid(-v[0]));
                       l = r == "none" ? l : r == "sum" ? l.sum() : l.mean();
                       TORCH_CHECK(at::allclose(l, at::binary_cross_entropy_with_logits(v[0], v[1], {}, v[2].detach(), red(r)), 1e-5, 1e-6));
                       return l;
                     }});
  }
  cases.push_back({"sparse_ce 3d", {F({2, 3, 4}), I({2, 3}, 4, 9)}, [](const TV& v) { return v[0].sparse_categorical_crossentropy(v[1]); },
                   [](const AV& v) { return at::cross_entropy_loss(v[0].permute({0, 2, 1}), v[1].to(at::kLong)); }});
  at::Tensor ign = at::tensor(std::vector<int32_t>{2, 2, 0}, at::kInt);
  cases.push_back({"sparse_ce all ignored but one", {F({3, 4}), Pair{to_tg(ign), ign}},
                   [](const TV& v) { return v[0].sparse_categorical_crossentropy(v[1], 2, 0.2); },
                   [](const AV& v) { return at::cross_entropy_loss(v[0], v[1].to(at::kLong), {}, R::Mean, 2, 0.2); }});
  cases.push_back({"cross_entropy 1d probs", {F({5}), F({5}, 4, 0, 1)}, [](const TV& v) { return v[0].cross_entropy(v[1].softmax(0), "none"); },
                   [](const AV& v) { return at::cross_entropy_loss(v[0], v[1].softmax(0), {}, R::None); }});
  run_all(cases, "losses");
}

// ***** attention *****

TEST(ConformanceNN, Attention) {
  Pair bmask = input({3, 5}, dtypes::bool_, -1, 1, 4);
  std::vector<Case> cases{
      {"sdpa", {F({2, 3, 4}), F({2, 5, 4}, 2), F({2, 5, 6}, 3)}, [](const TV& v) { return v[0].scaled_dot_product_attention(v[1], v[2]); },
       [](const AV& v) { return torch_sdpa(v[0], v[1], v[2], std::nullopt, false, false); }},
      {"sdpa float mask", {F({2, 3, 4}), F({2, 5, 4}, 2), F({2, 5, 6}, 3), F({3, 5}, 4)},
       [](const TV& v) { return v[0].scaled_dot_product_attention(v[1], v[2], v[3]); },
       [](const AV& v) { return torch_sdpa(v[0], v[1], v[2], v[3], false, false); }},
      {"sdpa bool mask", {F({2, 3, 4}), F({2, 5, 4}, 2), F({2, 5, 6}, 3), bmask},
       [](const TV& v) { return v[0].scaled_dot_product_attention(v[1], v[2], v[3]); },
       [](const AV& v) { return torch_sdpa(v[0], v[1], v[2], v[3], false, false); }},
      {"sdpa causal", {F({1, 2, 4, 3}), F({1, 2, 4, 3}, 2), F({1, 2, 4, 3}, 3)},
       [](const TV& v) { return v[0].scaled_dot_product_attention(v[1], v[2], std::nullopt, 0.0, true); },
       [](const AV& v) { return torch_sdpa(v[0], v[1], v[2], std::nullopt, true, false); }},
      {"sdpa causal rect", {F({2, 3, 4}), F({2, 5, 4}, 2), F({2, 5, 2}, 3)},
       [](const TV& v) { return v[0].scaled_dot_product_attention(v[1], v[2], std::nullopt, 0.0, true); },
       [](const AV& v) { return torch_sdpa(v[0], v[1], v[2], std::nullopt, true, false); }},
      {"sdpa gqa", {F({1, 4, 3, 2}), F({1, 2, 3, 2}, 2), F({1, 2, 3, 2}, 3)},
       [](const TV& v) { return v[0].scaled_dot_product_attention(v[1], v[2], std::nullopt, 0.0, false, true); },
       [](const AV& v) { return torch_sdpa(v[0], v[1], v[2], std::nullopt, false, true); }},
  };
  // the bool mask: make sure no row is fully masked (torch and tinygrad would both give NaN there)
  cases[2].in[3] = [&] {
    at::Tensor m = bmask.a.clone();
    m.select(1, 0).fill_(true);
    return Pair{to_tg(m), m};
  }();
  run_all(cases, "attention");
}

// ***** activations *****

TEST(ConformanceNN, Activations) {
  std::vector<Case> cases{
      {"leaky_relu", {F({3, 4}, 1, -3, 3)}, [](const TV& v) { return v[0].leaky_relu(); }, [](const AV& v) { return at::leaky_relu(v[0], 0.01); }},
      {"leaky_relu 0.2", {F({3, 4}, 1, -3, 3)}, [](const TV& v) { return v[0].leaky_relu(0.2); }, [](const AV& v) { return at::leaky_relu(v[0], 0.2); }},
      {"elu", {F({3, 4}, 1, -3, 3)}, [](const TV& v) { return v[0].elu(); }, [](const AV& v) { return at::elu(v[0]); }},
      {"elu 0.5", {F({3, 4}, 1, -3, 3)}, [](const TV& v) { return v[0].elu(0.5); }, [](const AV& v) { return at::elu(v[0], 0.5); }},
      {"softplus", {F({3, 4}, 1, -4, 4)}, [](const TV& v) { return v[0].softplus(); }, [](const AV& v) { return at::softplus(v[0]); }},
      {"softplus beta2", {F({3, 4}, 1, -4, 4)}, [](const TV& v) { return v[0].softplus(2.0); }, [](const AV& v) { return at::softplus(v[0], 2.0); }},
      {"logsigmoid", {F({3, 4}, 1, -5, 5)}, [](const TV& v) { return v[0].logsigmoid(); }, [](const AV& v) { return at::log_sigmoid(v[0]); }},
      {"hardtanh", {F({3, 4}, 1, -3, 3)}, [](const TV& v) { return v[0].hardtanh(); }, [](const AV& v) { return at::hardtanh(v[0]); }},
      {"hardtanh range", {F({3, 4}, 1, -3, 3)}, [](const TV& v) { return v[0].hardtanh(-2.5, 0.5); }, [](const AV& v) { return at::hardtanh(v[0], -2.5, 0.5); }},
      {"hardswish", {F({3, 4}, 1, -5, 5)}, [](const TV& v) { return v[0].hardswish(); }, [](const AV& v) { return at::hardswish(v[0]); }},
      {"hardsigmoid", {F({3, 4}, 1, -5, 5)}, [](const TV& v) { return v[0].hardsigmoid(); }, [](const AV& v) { return at::hardsigmoid(v[0]); }},
      {"mish", {F({3, 4}, 1, -4, 4)}, [](const TV& v) { return v[0].mish(); }, [](const AV& v) { return at::mish(v[0]); }},
      {"swish", {F({3, 4}, 1, -4, 4)}, [](const TV& v) { return v[0].swish(); }, [](const AV& v) { return at::silu(v[0]); }},
  };
  run_all(cases, "activations");
}

// ***** layers: their own initial weights, copied into torch *****

TEST(ConformanceNN, Layers) {
  tg::Tensor::manual_seed(3);
  tg::nn::Linear lin(3, 4), lin_nb(3, 2, false);
  tg::nn::Conv2d conv(2, 3, 3, 2, 1), conv_g(4, 4, {2, 3}, 1, {1, 0}, 1, 2), conv_same(2, 2, 3, 1, "same", 2, 1, false);
  tg::nn::Conv1d conv1(2, 3, 3, 1, 1);
  tg::nn::ConvTranspose2d convt(2, 3, 3, 2, 1, 1);
  tg::nn::ConvTranspose1d convt1(3, 2, 2, 2);
  tg::nn::LayerNorm ln(4), ln2({3, 4}, 1e-3);
  tg::nn::RMSNorm rms(4);
  tg::nn::GroupNorm gn(2, 4), gn_na(2, 4, 1e-5, false);
  tg::nn::Embedding emb(6, 3);
  // non-trivial affine parameters, so a swapped weight/bias would show
  auto perturb = [](std::optional<tg::Tensor>& t, uint32_t seed) { if (t) t = F(t->shape(), seed).t; };
  perturb(ln.weight, 11), perturb(ln.bias, 12), perturb(ln2.weight, 13), perturb(rms.weight, 14), perturb(gn.weight, 15), perturb(gn.bias, 16);
  std::vector<Case> cases{
      {"Linear", {F({2, 3}), P(lin.weight), P(*lin.bias)}, [&](const TV& v) { return lin(v[0]); }, [](const AV& v) { return at::linear(v[0], v[1], v[2]); }},
      {"Linear no bias 3d", {F({2, 2, 3}), P(lin_nb.weight)}, [&](const TV& v) { return lin_nb(v[0]); }, [](const AV& v) { return at::linear(v[0], v[1]); }},
      {"Conv2d", {F({1, 2, 5, 5}), P(conv.weight), P(*conv.bias)}, [&](const TV& v) { return conv(v[0]); },
       [](const AV& v) { return at::conv2d(v[0], v[1], v[2], 2, 1); }},
      {"Conv2d groups rect", {F({1, 4, 4, 5}), P(conv_g.weight), P(*conv_g.bias)}, [&](const TV& v) { return conv_g(v[0]); },
       [](const AV& v) { return at::conv2d(v[0], v[1], v[2], 1, {1, 0}, 1, 2); }},
      {"Conv2d same dilation2", {F({1, 2, 5, 5}), P(conv_same.weight)}, [&](const TV& v) { return conv_same(v[0]); },
       [](const AV& v) { return at::conv2d(v[0], v[1], {}, 1, 2, 2); }},
      {"Conv1d", {F({2, 2, 6}), P(conv1.weight), P(*conv1.bias)}, [&](const TV& v) { return conv1(v[0]); },
       [](const AV& v) { return at::conv1d(v[0], v[1], v[2], 1, 1); }},
      {"ConvTranspose2d", {F({1, 2, 3, 3}), P(convt.weight), P(*convt.bias)}, [&](const TV& v) { return convt(v[0]); },
       [](const AV& v) { return at::conv_transpose2d(v[0], v[1], v[2], 2, 1, 1); }},
      {"ConvTranspose1d", {F({1, 3, 4}), P(convt1.weight), P(*convt1.bias)}, [&](const TV& v) { return convt1(v[0]); },
       [](const AV& v) { return at::conv_transpose1d(v[0], v[1], v[2], 2); }},
      {"LayerNorm", {F({2, 3, 4}), P(*ln.weight), P(*ln.bias)}, [&](const TV& v) { return ln(v[0]); },
       [](const AV& v) { return at::layer_norm(v[0], {4}, v[1], v[2], 1e-5); }},
      {"LayerNorm 2d shape", {F({2, 3, 4}), P(*ln2.weight), P(*ln2.bias)}, [&](const TV& v) { return ln2(v[0]); },
       [](const AV& v) { return at::layer_norm(v[0], {3, 4}, v[1], v[2], 1e-3); }},
      {"RMSNorm", {F({2, 3, 4}), P(*rms.weight)}, [&](const TV& v) { return rms(v[0]); },
       [](const AV& v) { return v[0] * at::rsqrt(v[0].pow(2).mean(-1, true) + 1e-6) * v[1]; }},
      {"GroupNorm", {F({2, 4, 3}), P(*gn.weight), P(*gn.bias)}, [&](const TV& v) { return gn(v[0]); },
       [](const AV& v) { return at::group_norm(v[0], 2, v[1], v[2], 1e-5); }},
      {"GroupNorm 4d no affine", {F({2, 4, 2, 3})}, [&](const TV& v) { return gn_na(v[0]); }, [](const AV& v) { return at::group_norm(v[0], 2); }},
      {"Embedding", {I({2, 4}, 6), P(emb.weight)}, [&](const TV& v) { return emb(v[0]); },
       [](const AV& v) { return at::embedding(v[1], v[0].to(at::kLong)); }},
  };
  run_all(cases, "layers");
}

TEST(ConformanceNN, InstanceNormLayerNorm2dLSTMCell) {
  tg::Tensor::manual_seed(4);
  tg::nn::InstanceNorm in(3), in_na(2, 1e-3, false);
  tg::nn::LayerNorm2d ln2d(3);
  tg::nn::LSTMCell cell(3, 2), cell_nb(2, 3, false);
  auto perturb = [](std::optional<tg::Tensor>& t, uint32_t seed) { if (t) t = F(t->shape(), seed).t; };
  perturb(in.weight, 61), perturb(in.bias, 62), perturb(ln2d.weight, 63), perturb(ln2d.bias, 64), perturb(cell.bias_ih, 65), perturb(cell.bias_hh, 66);
  auto lstm = [](const at::Tensor& x, const at::Tensor& h, const at::Tensor& c, const AV& w) {
    auto [h2, c2] = at::lstm_cell(x, {h, c}, w[0], w[1], w.size() > 2 ? w[2] : at::Tensor(), w.size() > 2 ? w[3] : at::Tensor());
    return at::cat({h2, c2}, 1);
  };
  std::vector<Case> cases{
      {"InstanceNorm 4d", {F({2, 3, 2, 3}), P(*in.weight), P(*in.bias)}, [&](const TV& v) { return in(v[0]); },
       [](const AV& v) { return at::instance_norm(v[0], v[1], v[2], {}, {}, true, 0.1, 1e-5, false); }},
      {"InstanceNorm 3d no affine", {F({3, 2, 5})}, [&](const TV& v) { return in_na(v[0]); },
       [](const AV& v) { return at::instance_norm(v[0], {}, {}, {}, {}, true, 0.1, 1e-3, false); }},
      {"LayerNorm2d", {F({2, 3, 2, 2}), P(*ln2d.weight), P(*ln2d.bias)}, [&](const TV& v) { return ln2d(v[0]); },
       [](const AV& v) { return at::layer_norm(v[0].permute({0, 2, 3, 1}), {3}, v[1], v[2], 1e-5).permute({0, 3, 1, 2}); }},
      {"LSTMCell (h, c)", {F({4, 3}), F({4, 2}, 2), F({4, 2}, 3), P(cell.weight_ih), P(cell.weight_hh), P(*cell.bias_ih), P(*cell.bias_hh)},
       [&](const TV& v) { auto [h, c] = cell(v[0], std::pair{v[1], v[2]}); return h.cat(c, 1); },
       [&](const AV& v) { return lstm(v[0], v[1], v[2], {v[3], v[4], v[5], v[6]}); }},
      {"LSTMCell no bias, zero state", {F({2, 2}), P(cell_nb.weight_ih), P(cell_nb.weight_hh)},
       [&](const TV& v) { auto [h, c] = cell_nb(v[0]); return h.cat(c, 1); },
       [&](const AV& v) { return lstm(v[0], at::zeros({2, 3}), at::zeros({2, 3}), {v[1], v[2]}); }},
  };
  run_all(cases, "instancenorm/layernorm2d/lstmcell");
  tg::nn::LSTMCell c2(3, 2);
  expect_error([&] { c2(tg::Tensor::zeros({2, 4})); }, {"LSTMCell: input (2, 4) needs shape (N, 3)"});
  expect_error([&] { c2(tg::Tensor::zeros({2, 3}), std::pair{tg::Tensor::zeros({2, 2}), tg::Tensor::zeros({1, 2})}); }, {"LSTMCell: h (2, 2) and c (1, 2) must both be"});
  expect_error([&] { in(tg::Tensor::zeros({2, 4, 3})); }, {"InstanceNorm: input (2, 4, 3) needs shape (N, 3, ...)"});
  expect_error([&] { ln2d(tg::Tensor::zeros({2, 3, 4})); }, {"LayerNorm2d: input (2, 3, 4) is not (N, C, H, W)"});
}

// tinygrad's Newton-Schulz written out with ATen ops: normalize by the Frobenius norm of the last two dims, then
// G = sum_i c_i (G G^T)^i G per step; tall matrices go through their transpose
at::Tensor newton_schulz_ref(const at::Tensor& x, int steps, const std::vector<double>& c, double eps = 1e-7) {
  if (x.size(-2) > x.size(-1)) return newton_schulz_ref(x.transpose(-2, -1), steps, c, eps).transpose(-2, -1);
  at::Tensor g = x / (x.square().sum({-2, -1}, true).sqrt() + eps);
  for (int s = 0; s < steps; s++) {
    at::Tensor gg = g.matmul(g.transpose(-2, -1)), term = g, acc = g * c[0];
    for (size_t i = 1; i < c.size(); i++) term = gg.matmul(term), acc = acc + term * c[i];
    g = acc;
  }
  return g;
}

TEST(ConformanceNN, NewtonSchulz) {
  const std::vector<double> muon{3.4445, -4.775, 2.0315}, cubic{2, -1.5, 0.5};
  std::vector<Case> cases{
      {"wide 3x5, Muon's coefficients", {F({3, 5})}, [&](const TV& v) { return v[0].newton_schulz(5, muon); }, [&](const AV& v) { return newton_schulz_ref(v[0], 5, muon); }},
      {"tall 5x3", {F({5, 3}, 2)}, [&](const TV& v) { return v[0].newton_schulz(5, muon); }, [&](const AV& v) { return newton_schulz_ref(v[0], 5, muon); }},
      {"batched 2x3x4, cubic, 3 steps", {F({2, 3, 4}, 3)}, [&](const TV& v) { return v[0].newton_schulz(3, cubic); }, [&](const AV& v) { return newton_schulz_ref(v[0], 3, cubic); }},
      {"square 4x4, 0 steps", {F({4, 4}, 4)}, [&](const TV& v) { return v[0].newton_schulz(0, cubic); }, [&](const AV& v) { return newton_schulz_ref(v[0], 0, cubic); }},
  };
  for (auto& c : cases) c.tol = {1e-4, 1e-4}, c.gtol = {1e-3, 1e-3};
  run_all(cases, "newton_schulz");
  // the cubic polynomial converges to the orthogonal polar factor: rows of a wide matrix become orthonormal
  tg::Tensor q = F({3, 5}, 7).t.newton_schulz(25, cubic);
  EXPECT_TRUE(same(q.matmul(q.T()), at::eye(3), false, oracle::Tol{1e-4, 1e-4}));
  expect_error([] { tg::Tensor::ones({3}).newton_schulz(5, {1}); }, {"newton_schulz", "two or more dims", "(3,)"});
  expect_error([] { tg::Tensor::ones({2, 2}).newton_schulz(5, {}); }, {"newton_schulz", "coefficient"});
  expect_error([] { tg::Tensor::ones({2, 2}).newton_schulz(-1, {1}); }, {"newton_schulz", "steps"});
}

// QR: Q and R equal LAPACK's up to the signs of R's diagonal (QR is unique up to those; tinygrad also reflects the last
// row of a square matrix, where LAPACK stops), Q R rebuilds the input, Q is orthogonal; wide, tall, square, batched
at::Tensor diag_signs(const at::Tensor& r) {  // sign(diag(R)) as (..., k), zeros counted as +1
  at::Tensor d = r.diagonal(0, -2, -1).sign();
  return at::where(d == 0, at::ones_like(d), d);
}
TEST(ConformanceLinalg, QR) {
  constexpr oracle::Tol tol{1e-4, 1e-4};
  for (auto s : std::vector<std::vector<int64_t>>{{3, 3}, {4, 2}, {2, 4}, {2, 3, 2}}) {
    SCOPED_TRACE(::testing::PrintToString(s));
    Pair x = F(s, 71);
    auto [q, r] = x.t.qr();
    auto [tq, tr] = at::linalg_qr(x.a, "complete");
    at::Tensor aq = to_torch(q), ar = to_torch(r);
    int64_t k = std::min(s[s.size() - 2], s.back());
    auto qk = [&](const at::Tensor& t) { return t.narrow(-1, 0, k); };
    auto rk = [&](const at::Tensor& t) { return t.narrow(-2, 0, k); };
    EXPECT_TRUE(oracle::match(oracle::result(qk(aq) * diag_signs(ar).unsqueeze(-2)), oracle::result(qk(tq) * diag_signs(tr).unsqueeze(-2)), tol)) << "Q";
    EXPECT_TRUE(oracle::match(oracle::result(rk(ar) * diag_signs(ar).unsqueeze(-1)), oracle::result(rk(tr) * diag_signs(tr).unsqueeze(-1)), tol)) << "R";
    EXPECT_TRUE(same(r.tril(-1), at::zeros(tr.sizes()), false, tol)) << "R is upper triangular";
    EXPECT_TRUE(same(q.matmul(r), x.a, false, tol)) << "Q R";
    int64_t m = s[s.size() - 2];
    EXPECT_TRUE(same(q.transpose(-2, -1).matmul(q), at::eye(m).expand(tq.sizes()), false, tol)) << "Q^T Q";
  }
  expect_error([] { tg::Tensor::ones({3}).qr(); }, {"qr", "two or more dims", "(3,)"});
}

// SVD: singular values equal LAPACK's, U diag(S) Vh rebuilds the input, U and Vh are orthogonal; without
// full_matrices U keeps min(m, n) columns
TEST(ConformanceLinalg, SVD) {
  constexpr oracle::Tol tol{2e-4, 2e-4};
  for (auto s : std::vector<std::vector<int64_t>>{{3, 3}, {4, 2}, {2, 3}, {2, 2, 3}}) {
    SCOPED_TRACE(::testing::PrintToString(s));
    Pair x = F(s, 72);
    auto [u, sv, vh] = x.t.svd();
    EXPECT_TRUE(same(sv, at::linalg_svdvals(x.a), false, tol)) << "S";
    int64_t m = s[s.size() - 2], n = s.back(), k = std::min(m, n);
    std::vector<std::pair<int64_t, int64_t>> cut;
    for (size_t d = 0; d + 1 < u.shape().size(); d++) cut.push_back({0, u.shape()[d]});
    cut.push_back({0, k});
    std::vector<std::pair<int64_t, int64_t>> rows(cut.begin(), cut.end() - 1);
    rows.back() = {0, k}, rows.push_back({0, n});
    EXPECT_TRUE(same((u.shrink(cut) * sv.unsqueeze(-2)).matmul(vh.shrink(rows)), x.a, false, tol)) << "U S Vh";
    EXPECT_TRUE(same(u.transpose(-2, -1).matmul(u), at::eye(m).expand(u.shape()), false, tol)) << "U^T U";
    EXPECT_TRUE(same(vh.matmul(vh.transpose(-2, -1)), at::eye(n).expand(vh.shape()), false, tol)) << "Vh Vh^T";
    auto [u2, s2, vh2] = x.t.svd(false);
    EXPECT_EQ(u2.shape().back(), k);
  }
  expect_error([] { tg::Tensor::ones({2}).svd(); }, {"svd", "two or more dims"});
}

// the initial values themselves are checked in tests/nn/test_layers.cpp (ranges, shapes, names); here: BatchNorm

TEST(ConformanceNN, BatchNormEval) {
  tg::nn::BatchNorm2d bn(3);
  bn.weight = F({3}, 21).t, bn.bias = F({3}, 22).t, bn.running_mean = F({3}, 23).t, bn.running_var = F({3}, 24, 0.5, 2).t;
  tg::nn::BatchNorm1d bn1(2, 1e-3, false);
  bn1.running_mean = F({2}, 25).t, bn1.running_var = F({2}, 26, 0.5, 2).t;
  std::vector<Case> cases{
      {"BatchNorm2d eval", {F({2, 3, 2, 2}), P(*bn.weight), P(*bn.bias), P(*bn.running_mean), P(*bn.running_var)}, [&](const TV& v) { return bn(v[0]); },
       [](const AV& v) { return torch_bn_eval(v[0], v[1], v[2], v[3], v[4], 1e-5); }},
      {"BatchNorm1d eval no affine 3d", {F({2, 2, 3}), P(*bn1.running_mean), P(*bn1.running_var)}, [&](const TV& v) { return bn1(v[0]); },
       [](const AV& v) { return torch_bn_eval(v[0], {}, {}, v[1], v[2], 1e-3); }},
  };
  run_all(cases, "batchnorm eval");
}

TEST(ConformanceNN, BatchNormTraining) {
  for (auto xs : {std::vector<int64_t>{4, 3}, std::vector<int64_t>{2, 3, 2, 2}}) {
    SCOPED_TRACE("input " + std::to_string(xs.size()) + "d");
    tg::nn::BatchNorm bn(3, 1e-5, true, true, 0.2);
    bn.weight = F({3}, 31).t, bn.bias = F({3}, 32).t;
    at::Tensor rm = to_torch(*bn.running_mean), rv = to_torch(*bn.running_var);
    tg::Context train({{"TRAINING", 1}});
    for (int step = 0; step < 2; step++) {
      Pair x = F(xs, 40 + uint32_t(step), -1, 3);
      Case c{"BatchNorm training step " + std::to_string(step), {x, P(*bn.weight), P(*bn.bias)}, [&](const TV& v) { return bn(v[0]); },
             [&](const AV& v) { return at::batch_norm(v[0], v[1], v[2], rm, rv, true, 0.2, 1e-5, false); }};
      EXPECT_EQ(run(c), 0);
      // the assigns are part of the graph that ran; reading the statistics realizes them
      EXPECT_TRUE(same(*bn.running_mean, rm)) << "running_mean after step " << step;
      EXPECT_TRUE(same(*bn.running_var, rv)) << "running_var after step " << step;
      EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), step + 1);
      EXPECT_EQ(bn.num_batches_tracked.dtype(), tg::dtypes::int64);
    }
  }
  // without running statistics the batch statistics are used in both modes
  tg::nn::BatchNorm bn(2, 1e-5, false, false);
  Pair x = F({3, 2, 2}, 50);
  Case c{"BatchNorm no running stats (eval)", {x}, [&](const TV& v) { return bn(v[0]); },
         [](const AV& v) { return at::batch_norm(v[0], {}, {}, {}, {}, true, 0.1, 1e-5, false); }};
  EXPECT_EQ(run(c), 0);
  EXPECT_FALSE(bn.running_mean.has_value());
}

// ***** backward() fills the layer's parameters, as an optimizer reads them *****

TEST(ConformanceNN, BackwardFillsParameters) {
  tg::Tensor::manual_seed(5);
  tg::nn::Conv2d conv(2, 3, 2);
  tg::nn::Linear lin(12, 2);
  Pair x = F({2, 2, 3, 3});
  Pair y = I({2}, 2, 3);
  tg::Tensor loss = lin(conv(x.t).relu().flatten(1)).sparse_categorical_crossentropy(y.t);
  loss.backward();
  at::Tensor cw = to_torch(conv.weight).requires_grad_(true), cb = to_torch(*conv.bias).requires_grad_(true);
  at::Tensor lw = to_torch(lin.weight).requires_grad_(true), lb = to_torch(*lin.bias).requires_grad_(true);
  at::Tensor ref = at::cross_entropy_loss(at::linear(at::relu(at::conv2d(x.a, cw, cb)).flatten(1), lw, lb), y.a.to(at::kLong));
  ref.backward();
  EXPECT_TRUE(same(loss, ref.detach(), false, oracle::Tol{1e-5, 1e-6}));
  ASSERT_TRUE(conv.weight.grad() && conv.bias->grad() && lin.weight.grad() && lin.bias->grad());
  EXPECT_TRUE(same(*conv.weight.grad(), cw.grad(), false, oracle::Tol{1e-4, 1e-5}));
  EXPECT_TRUE(same(*conv.bias->grad(), cb.grad(), false, oracle::Tol{1e-4, 1e-5}));
  EXPECT_TRUE(same(*lin.weight.grad(), lw.grad(), false, oracle::Tol{1e-4, 1e-5}));
  EXPECT_TRUE(same(*lin.bias->grad(), lb.grad(), false, oracle::Tol{1e-4, 1e-5}));
}

// ***** float16: torch 1.13 lacks some half CPU kernels, so torch_eval computes those in float32 and rounds *****

TEST(ConformanceNN, Half) {
  auto H = [](const std::vector<int64_t>& s, uint32_t seed, double lo = -2, double hi = 2) { return input(s, dtypes::float16, lo, hi, seed); };
  oracle::Tol tol{4e-3, 4e-3};
  std::vector<Case> cases{
      {"conv2d half", {H({1, 2, 5, 5}, 1), H({3, 2, 3, 3}, 2, -1, 1), H({3}, 3)}, [](const TV& v) { return v[0].conv2d(v[1], v[2], 1, 1, 1, 1); },
       [](const AV& v) { return torch_eval([](const auto& x, const auto& w, const auto& b) { return at::conv2d(x, w, b, 1, 1); }, v[0], v[1], v[2]); }, false},
      {"max_pool2d half", {H({1, 2, 5, 5}, 4)}, [](const TV& v) { return v[0].max_pool2d(3, tg::IntList(2), 1, 1); },
       [](const AV& v) { return torch_eval([](const auto& x) { return at::max_pool2d(x, {3, 3}, {2, 2}, {1, 1}); }, v[0]); }, false},
      {"avg_pool2d half", {H({1, 2, 5, 5}, 5)}, [](const TV& v) { return v[0].avg_pool2d(3, tg::IntList(2), 1, 1, true, false); },
       [](const AV& v) { return torch_eval([](const auto& x) { return at::avg_pool2d(x, {3, 3}, {2, 2}, {1, 1}, true, false); }, v[0]); }, false},
      {"sdpa half", {H({2, 3, 4}, 6), H({2, 3, 4}, 7), H({2, 3, 4}, 8)}, [](const TV& v) { return v[0].scaled_dot_product_attention(v[1], v[2]); },
       [](const AV& v) { return torch_sdpa(v[0].to(at::kFloat), v[1].to(at::kFloat), v[2].to(at::kFloat), std::nullopt, false, false).to(at::kHalf); }, false},
      {"leaky_relu half", {H({3, 4}, 9)}, [](const TV& v) { return v[0].leaky_relu(0.2); }, [](const AV& v) { return torch_eval([](const auto& x) { return at::leaky_relu(x, 0.2); }, v[0]); }, false},
  };
  for (auto& c : cases) c.tol = tol;
  run_all(cases, "half");
}

// torch.nn.functional.normalize as torch writes it (ATen has no F.normalize): x / norm_p(x, dim).clamp_min(eps)
at::Tensor torch_normalize(const at::Tensor& x, double p, int64_t dim) { return x / at::norm(x, p, {dim}, true).clamp_min(1e-12); }

TEST(ConformanceNN, NormalizeNllLoss) {
  using R = at::Reduction::Reduction;
  auto red = [](const std::string& r) { return r == "none" ? R::None : r == "sum" ? R::Sum : R::Mean; };
  std::vector<Case> cases;
  for (auto [p, dim] : std::vector<std::pair<double, int64_t>>{{2, 1}, {1, 0}, {3, -1}})
    cases.push_back({"normalize p=" + std::to_string(p) + " dim=" + std::to_string(dim), {F({3, 4})},
                     [=](const TV& v) { return v[0].normalize(p, dim); }, [=](const AV& v) { return torch_normalize(v[0], p, dim); }});
  cases.push_back({"normalize 3-d", {F({2, 3, 2})}, [](const TV& v) { return v[0].normalize(); },
                   [](const AV& v) { return torch_normalize(v[0], 2, 1); }});
  for (std::string r : {"mean", "sum", "none"})
    for (int64_t ign : {-100, 1}) {
      cases.push_back({"nll_loss " + r + " ignore=" + std::to_string(ign), {F({4, 3}), I({4}, 3, 7)},
                       [=](const TV& v) { return v[0].log_softmax().nll_loss(v[1], std::nullopt, ign == -100 ? std::nullopt : std::optional<int64_t>(ign), r); },
                       [=](const AV& v) { return at::nll_loss(v[0].log_softmax(1), v[1].to(at::kLong), {}, red(r), ign); }});
      cases.push_back({"nll_loss weight " + r + " ignore=" + std::to_string(ign), {F({4, 3}), I({4}, 3, 5)},  // torch has no gradient for the weight: a constant
                       [=](const TV& v) { return v[0].log_softmax().nll_loss(v[1], tg::Tensor::from_vector<float>({0.5f, 1.5f, 2.f}),
                                                                             ign == -100 ? std::nullopt : std::optional<int64_t>(ign), r); },
                       [=](const AV& v) { return at::nll_loss(v[0].log_softmax(1), v[1].to(at::kLong), at::tensor({0.5f, 1.5f, 2.f}), red(r), ign); }});
    }
  run_all(cases, "normalize / nll_loss");
  tg::Tensor x = tg::Tensor::zeros({4, 3}), y = tg::Tensor::zeros({4}, dtypes::int32);
  EXPECT_THROW(x.nll_loss(y, std::nullopt, std::nullopt, "avg"), tg::Error);
  EXPECT_THROW(x.nll_loss(tg::Tensor::zeros({3}, dtypes::int32)), tg::Error);
  EXPECT_THROW(x.nll_loss(tg::Tensor::zeros({4})), tg::Error);
  EXPECT_THROW(x.nll_loss(y, tg::Tensor::ones({4})), tg::Error);
}
