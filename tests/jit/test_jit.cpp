// TinyJit: replays must equal the same function run eagerly (no JIT, a separate path through schedule and realize)
// and hand-computed values; replays must schedule and compile nothing; bad inputs must name the input.
#include <gtest/gtest.h>

#include <cmath>

#include "../../apps/beautiful_mnist_model.h"
#include "support/random.h"
#include "support/error_of.h"
#include "runtime/device.h"
#include "util/stats.h"
#include "tg/context.h"
#include "tg/jit.h"
#include "tg/optim.h"
#include "tg/state.h"

using namespace tg;

namespace {

using Vec = std::vector<float>;
Tensor T(const Vec& v, const Shape& s, const std::string& dev = "") { return Tensor::from_vector(v, s, std::nullopt, dev); }
Vec V(const Tensor& t) { return t.to_vector<float>(); }
Vec rnd(size_t n, unsigned seed) { return tg::test::randv(n, seed, -2.f, 2.f); }
void expect_near(const Vec& got, const Vec& want, float tol = 1e-4f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], want[i], tol * std::max(1.f, std::fabs(want[i]))) << "at " << i;
}
using tg::test::error_of;

// runs fn through a fresh TinyJit and eagerly on the same inputs for `calls` calls; every output must be bit-equal
void check_against_eager(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                         const std::function<std::vector<Tensor>(int)>& make_inputs, int calls = 5) {
  TinyJit jit(fn);
  for (int c = 0; c < calls; c++) {
    std::vector<Tensor> in = make_inputs(c);
    std::vector<Tensor> got = jit(in);
    std::vector<Tensor> want = fn(make_inputs(c));  // new buffers with the same data, run without the JIT
    ASSERT_EQ(got.size(), want.size());
    for (size_t j = 0; j < got.size(); j++) EXPECT_EQ(V(got[j]), V(want[j])) << "call " << c << " output " << j;
  }
  EXPECT_TRUE(jit.is_captured());
}

}  // namespace

TEST(TinyJit, ElementwiseReplayEqualsEagerAndHand) {
  TinyJit f([](const std::vector<Tensor>& in) { return (in[0] * 2 + in[1]).relu(); });
  for (int c = 0; c < 6; c++) {
    Vec a = rnd(12, 10 + c), b = rnd(12, 100 + c), want(12);
    for (size_t i = 0; i < 12; i++) want[i] = std::max(0.f, a[i] * 2 + b[i]);
    Tensor out = f(T(a, {3, 4}), T(b, {3, 4}));
    EXPECT_EQ(out.shape(), (Shape{3, 4}));
    expect_near(V(out), want);
    EXPECT_EQ(f.calls(), c + 1);
    EXPECT_EQ(f.is_captured(), c >= 1);
  }
  check_against_eager([](const std::vector<Tensor>& in) { return std::vector<Tensor>{(in[0] * 2 + in[1]).relu()}; },
                      [](int c) { return std::vector<Tensor>{T(rnd(12, c), {3, 4}), T(rnd(12, 50 + c), {3, 4})}; });
}

TEST(TinyJit, ReduceReplay) {
  TinyJit f([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0].sum(1), in[0].max(0), in[0].exp().sum()}; });
  for (int c = 0; c < 5; c++) {
    Vec a = rnd(32, 7 * c + 1), rows(4, 0.f), cols(8, -1e30f);
    float es = 0;
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 8; j++) rows[i] += a[i * 8 + j], cols[j] = std::max(cols[j], a[i * 8 + j]), es += std::exp(a[i * 8 + j]);
    auto out = f(T(a, {4, 8}));
    ASSERT_EQ(out.size(), 3u);
    expect_near(V(out[0]), rows);
    expect_near(V(out[1]), cols);
    expect_near(V(out[2]), {es});
  }
  check_against_eager([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0].softmax(-1), in[0].mean(0)}; },
                      [](int c) { return std::vector<Tensor>{T(rnd(40, 3 * c), {5, 8})}; });
}

TEST(TinyJit, MatmulReplay) {
  TinyJit f([](const std::vector<Tensor>& in) { return in[0].matmul(in[1]); });
  for (int c = 0; c < 5; c++) {
    Vec a = rnd(4 * 8, c), b = rnd(8 * 3, 20 + c), want(4 * 3, 0.f);
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 3; j++)
        for (int k = 0; k < 8; k++) want[i * 3 + j] += a[i * 8 + k] * b[k * 3 + j];
    expect_near(V(f(T(a, {4, 8}), T(b, {8, 3}))), want);
  }
  // an MLP layer: several kernels per call
  check_against_eager(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0].matmul(in[1]).add(in[2]).relu().matmul(in[1].T()).log_softmax()}; },
      [](int c) { return std::vector<Tensor>{T(rnd(6 * 5, c), {6, 5}), T(rnd(5 * 7, 9 + c), {5, 7}), T(rnd(7, 99 + c), {7})}; });
}

// a "parameter" updated in place every call, in a second schedule inside the call (forward, then the update)
TEST(TinyJit, InPlaceAssignParameter) {
  Vec w0 = {1, 2, 3, 4};
  auto step_fn = [](Tensor& w) {
    return [&w](const std::vector<Tensor>& in) {
      Tensor loss = (w * in[0]).sum();
      loss.realize();
      w.assign(w - in[0] * 0.25f);
      w.realize();
      return loss;
    };
  };
  Tensor w_jit = T(w0, {4}), w_eager = T(w0, {4});
  TinyJit step(step_fn(w_jit));
  auto eager = step_fn(w_eager);
  Vec w_host = w0;
  int64_t launches_before = 0;
  for (int c = 0; c < 6; c++) {
    Vec x = rnd(4, 300 + c);
    float loss_host = 0;
    for (int i = 0; i < 4; i++) loss_host += w_host[size_t(i)] * x[size_t(i)];
    for (int i = 0; i < 4; i++) w_host[size_t(i)] -= x[size_t(i)] * 0.25f;
    if (c == 2) launches_before = engine_stats().kernels_launched;
    Tensor l = step(T(x, {4}));
    if (c == 2) {
      EXPECT_EQ(engine_stats().kernels_launched - launches_before, int64_t(step.captured_launches()));
    }
    Tensor le = eager({T(x, {4})});
    EXPECT_EQ(V(l), V(le)) << "call " << c;
    EXPECT_EQ(V(w_jit), V(w_eager)) << "call " << c;
    expect_near(V(l), {loss_host});
    expect_near(V(w_jit), w_host);
  }
  EXPECT_GE(step.captured_launches(), 2u);
}

TEST(TinyJit, MultipleOutputsAndAnInputReturned) {
  TinyJit f([](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{in[0] + 1, (in[0] * in[1]).sum(), in[1], in[0].maximum(in[1]).cast(dtypes::int32)};
  });
  for (int c = 0; c < 5; c++) {
    Vec a = rnd(6, c), b = rnd(6, 40 + c), p1(6), mx(6);
    float dot = 0;
    for (int i = 0; i < 6; i++) p1[i] = a[i] + 1, dot += a[i] * b[i], mx[i] = float(int(std::max(a[i], b[i])));
    Tensor ta = T(a, {2, 3}), tb = T(b, {2, 3});
    auto out = f(ta, tb);
    ASSERT_EQ(out.size(), 4u);
    expect_near(V(out[0]), p1);
    expect_near(V(out[1]), {dot});
    EXPECT_EQ(V(out[2]), b);  // the input itself, this call's
    expect_near(V(out[3]), mx);
    EXPECT_EQ(out[3].dtype(), dtypes::int32);
  }
}

TEST(TinyJit, RandKeepsAdvancing) {
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + Tensor::rand({2, 5}), Tensor::rand({3})}; };
  Tensor::manual_seed(1234);
  std::vector<std::vector<Vec>> eager;
  for (int c = 0; c < 5; c++) {
    auto o = fn({Tensor::zeros({2, 5}).contiguous()});
    eager.push_back({V(o[0]), V(o[1])});
  }
  Tensor::manual_seed(1234);
  TinyJit f(fn);
  for (int c = 0; c < 5; c++) {
    auto o = f(Tensor::zeros({2, 5}).contiguous());
    EXPECT_EQ(V(o[0]), eager[size_t(c)][0]) << "call " << c;
    EXPECT_EQ(V(o[1]), eager[size_t(c)][1]) << "call " << c;
    for (float v : V(o[0])) EXPECT_TRUE(v >= 0.f && v < 1.f);
  }
  EXPECT_NE(eager[3][0], eager[4][0]);  // the stream moves on
}

TEST(TinyJit, ReplaySchedulesAndCompilesNothing) {
  int fn_calls = 0;
  TinyJit f([&](const std::vector<Tensor>& in) {
    fn_calls++;
    Tensor h = (in[0] * 3).exp().contiguous();
    h.realize();  // two schedules per call
    return (h.sum(0) + in[1]).sqrt();
  });
  auto& st = engine_stats();
  auto inputs = [](int c) { return std::vector<Tensor>{T(rnd(12, c), {3, 4}), T(Vec{1, 2, 3, 4}, {4})}; };
  int64_t s0 = st.schedules, k0 = st.kernels_launched;
  f(inputs(0));
  EXPECT_EQ(fn_calls, 1);
  EXPECT_FALSE(f.is_captured());
  EXPECT_EQ(st.schedules - s0, 2);
  int64_t first_launches = st.kernels_launched - k0;
  EXPECT_GE(first_launches, 2);
  int64_t s1 = st.schedules, k1 = st.kernels_launched;
  f(inputs(1));  // captures: runs the function once more
  EXPECT_EQ(fn_calls, 2);
  EXPECT_TRUE(f.is_captured());
  EXPECT_EQ(st.schedules - s1, 2);
  EXPECT_EQ(st.kernels_launched - k1, first_launches);
  EXPECT_EQ(int64_t(f.captured_launches()), first_launches);
  for (int c = 2; c < 8; c++) {
    auto in = inputs(c);  // from_vector writes buffers directly: no schedule
    int64_t s = st.schedules, m = st.schedule_cache_misses, pl = st.program_lookups, pb = st.programs_built, k = st.kernels_launched;
    Tensor out = f(in);
    EXPECT_EQ(st.schedules - s, 0);
    EXPECT_EQ(st.schedule_cache_misses - m, 0);
    EXPECT_EQ(st.program_lookups - pl, 0);
    EXPECT_EQ(st.programs_built - pb, 0);
    EXPECT_EQ(st.kernels_launched - k, first_launches);
    Vec x = rnd(12, unsigned(c)), want(4);
    for (int j = 0; j < 4; j++) want[j] = std::sqrt(std::exp(x[j] * 3) + std::exp(x[4 + j] * 3) + std::exp(x[8 + j] * 3) + float(j + 1));
    expect_near(V(out), want, 1e-3f);
  }
  EXPECT_EQ(fn_calls, 2);
}

TEST(TinyJit, LazyInputsAreRealizedFirst) {
  TinyJit f([](const std::vector<Tensor>& in) { return in[0] * in[0]; });
  for (int c = 0; c < 4; c++) {
    Vec a = rnd(5, c), want(5);
    for (int i = 0; i < 5; i++) want[i] = (a[i] + 1) * (a[i] + 1);
    expect_near(V(f(T(a, {5}) + 1)), want);
  }
}

// the last call's output passed back in: it is also what the replay writes, so the JIT reads a copy of it
TEST(TinyJit, OutputFedBackIn) {
  TinyJit f([](const std::vector<Tensor>& in) { return in[0].flip(0) * 2 + 1; });
  Vec host = {1, 2, 3, 4, 5};
  Tensor x = T(host, {5});
  for (int c = 0; c < 6; c++) {
    x = f(x);
    Vec next(5);
    for (int i = 0; i < 5; i++) next[size_t(i)] = host[size_t(4 - i)] * 2 + 1;
    host = next;
    expect_near(V(x), host);
  }
}

TEST(TinyJit, WrongInputsNameTheInput) {
  TinyJit f([](const std::vector<Tensor>& in) { return in[0] + in[1]; });
  auto a = [] { return T(Vec(4, 1.f), {4}); };
  f(a(), a());
  f(a(), a());
  ASSERT_TRUE(f.is_captured());
  std::string e = error_of([&] { f(a(), T(Vec(5, 1.f), {5})); });
  EXPECT_NE(e.find("input 1"), std::string::npos) << e;
  EXPECT_NE(e.find("shape (4,) -> (5,)"), std::string::npos) << e;
  e = error_of([&] { f(Tensor::from_vector<int32_t>({1, 2, 3, 4}, {4}), a()); });
  EXPECT_NE(e.find("input 0"), std::string::npos) << e;
  EXPECT_NE(e.find("dtype float -> int"), std::string::npos) << e;
  e = error_of([&] { f(a(), T(Vec(4, 1.f), {4}, "CPU:1")); });
  EXPECT_NE(e.find("input 1"), std::string::npos) << e;
  EXPECT_NE(e.find("device CPU -> CPU:1"), std::string::npos) << e;
  e = error_of([&] { f(a(), T(Vec(4, 1.f), {2, 2})); });
  EXPECT_NE(e.find("input 1"), std::string::npos) << e;
  EXPECT_NE(e.find("shape (4,) -> (2, 2)"), std::string::npos) << e;
  e = error_of([&] { f(a()); });
  EXPECT_NE(e.find("captured with 2 inputs, called with 1"), std::string::npos) << e;
  e = error_of([&] { f(a(), a(), a()); });
  EXPECT_NE(e.find("called with 3"), std::string::npos) << e;
  // the same shape seen through a strided view: the captured kernels read a plain buffer
  e = error_of([&] { f(a(), T(Vec(8, 1.f), {4, 2})[{Slice{}, int64_t(0)}]); });
  EXPECT_NE(e.find("input 1"), std::string::npos) << e;
  EXPECT_NE(e.find("contiguous -> a strided view"), std::string::npos) << e;
  Tensor same = a();
  e = error_of([&] { f(same, same); });
  EXPECT_NE(e.find("inputs 0 and 1 share one buffer"), std::string::npos) << e;
  e = error_of([&] { f(Tensor(1.5f), a()); });
  EXPECT_NE(e.find("input 0 is not backed by a buffer"), std::string::npos) << e;
  // after all that, a good call still replays right
  expect_near(V(f(T({1, 2, 3, 4}, {4}), T({10, 20, 30, 40}, {4}))), {11, 22, 33, 44});
}

TEST(TinyJit, JitZeroRunsTheFunctionEveryCall) {
  int fn_calls = 0;
  TinyJit f([&](const std::vector<Tensor>& in) {
    fn_calls++;
    return in[0] * 2;
  });
  {
    Context ctx({{"JIT", 0}});
    for (int c = 0; c < 4; c++) expect_near(V(f(T({float(c)}, {1}))), {2.f * float(c)});
  }
  EXPECT_EQ(fn_calls, 4);
  EXPECT_FALSE(f.is_captured());
  f(T({5}, {1}));  // JIT back on: capture now
  EXPECT_TRUE(f.is_captured());
  EXPECT_EQ(fn_calls, 5);
  expect_near(V(f(T({7}, {1}))), {14});
  EXPECT_EQ(fn_calls, 5);
}

TEST(TinyJit, CaptureErrors) {
  TinyJit reads([](const std::vector<Tensor>& in) {
    float s = (in[0] * 2).sum().item<float>();  // baked in: refused while capturing
    return in[0] + s;
  });
  expect_near(V(reads(T({1, 2}, {2}))), {7, 8});
  std::string e = error_of([&] { reads(T({1, 2}, {2})); });
  EXPECT_NE(e.find("while TinyJit captures"), std::string::npos) << e;
  EXPECT_FALSE(reads.is_captured());

  TinyJit nothing([](const std::vector<Tensor>& in) { return in[0]; });
  nothing(T({1}, {1}));
  e = error_of([&] { nothing(T({1}, {1})); });
  EXPECT_NE(e.find("launched no kernels"), std::string::npos) << e;

  TinyJit inner([](const std::vector<Tensor>& in) { return in[0] + 1; });
  TinyJit outer([&](const std::vector<Tensor>& in) { return inner(in[0]) * 2; });
  outer(T({1}, {1}));
  e = error_of([&] { outer(T({1}, {1})); });
  EXPECT_NE(e.find("another TinyJit captures"), std::string::npos) << e;
}

TEST(TinyJit, ResetCapturesAgain) {
  float k = 2;
  TinyJit f([&](const std::vector<Tensor>& in) { return in[0] * k; });
  f(T({1}, {1}));
  f(T({1}, {1}));
  k = 3;  // a host value: baked in until reset
  expect_near(V(f(T({2}, {1}))), {4});
  f.reset();
  EXPECT_FALSE(f.is_captured());
  EXPECT_EQ(f.calls(), 0);
  expect_near(V(f(T({2}, {1}))), {6});
  expect_near(V(f(T({3}, {1}))), {9});
  EXPECT_TRUE(f.is_captured());
  expect_near(V(f(T({4}, {1}))), {12});
}

// a small training loop: forward, a hand-written gradient, an SGD update with assign, rand noise, several schedules
TEST(TinyJit, TrainStepLikeLoop) {
  auto make = [](Tensor& w, Tensor& b) {
    return [&w, &b](const std::vector<Tensor>& in) {
      Tensor x = in[0], y = in[1];
      Tensor pred = x.matmul(w) + b;
      Tensor err = pred - y;
      Tensor loss = (err * err).mean();
      Tensor gw = x.T().matmul(err) * (2.f / float(err.numel())), gb = err.sum(0) * (2.f / float(err.numel()));
      Tensor noise = Tensor::rand({w.shape()[0], w.shape()[1]}) * 1e-3f;
      w.assign(w - gw * 0.1f + noise);
      b.assign(b - gb * 0.1f);
      Tensor::realize({loss, w, b});
      return std::vector<Tensor>{loss, pred};
    };
  };
  Vec w0 = rnd(3 * 2, 1), b0 = {0.5f, -0.5f};
  Tensor wj = T(w0, {3, 2}), bj = T(b0, {2}), we = T(w0, {3, 2}), be = T(b0, {2});
  Tensor::manual_seed(7);
  std::vector<Vec> eager_losses;
  auto eager = make(we, be);
  for (int c = 0; c < 6; c++) eager_losses.push_back(V(eager({T(rnd(8 * 3, 500 + c), {8, 3}), T(rnd(8 * 2, 600 + c), {8, 2})})[0]));
  Vec we_final = V(we), be_final = V(be);
  Tensor::manual_seed(7);
  TinyJit step(make(wj, bj));
  for (int c = 0; c < 6; c++) {
    auto out = step(T(rnd(8 * 3, 500 + c), {8, 3}), T(rnd(8 * 2, 600 + c), {8, 2}));
    EXPECT_EQ(V(out[0]), eager_losses[size_t(c)]) << "call " << c;
  }
  EXPECT_EQ(V(wj), we_final);
  EXPECT_EQ(V(bj), be_final);
}

// The main job's training step: the first call reads the layers' initial values and the optimizer's state as buffers,
// as every later call does (they start contiguous, not as lazy constants folded into the first step's kernels), so the
// capture call builds no program of its own (with BEAM each new program is a search)
TEST(TinyJit, TrainStepCaptureBuildsNoNewProgram) {
  Tensor::manual_seed(3);
  BeautifulMnist model;
  auto opt = nn::optim::Adam(nn::state::get_parameters(model), 1e-3);
  TinyJit<Tensor> step = jit_train_step(model, opt);
  const int64_t bs = 2;
  std::vector<uint8_t> x(bs * 784), y{3, 7};
  for (size_t i = 0; i < x.size(); i++) x[i] = uint8_t(i * 37 % 256);
  auto& st = engine_stats();
  int64_t b0 = st.programs_built;
  float first = step(Tensor::from_vector(x, {bs, 1, 28, 28}), Tensor::from_vector(y, {bs})).item<float>();
  int64_t b1 = st.programs_built;
  float second = step(Tensor::from_vector(x, {bs, 1, 28, 28}), Tensor::from_vector(y, {bs})).item<float>();
  EXPECT_TRUE(step.is_captured());
  EXPECT_GT(b1 - b0, 20);
  EXPECT_EQ(st.programs_built - b1, 0) << "the capture step's kernels are the first step's";
  EXPECT_TRUE(std::isfinite(first) && std::isfinite(second));
  EXPECT_LT(second, first) << "Adam's first step on the same batch lowers its loss";
}

// slices of one big buffer (a data set): contiguous ones are read in place at any offset, with or without .contiguous()
TEST(TinyJit, SlicesOfABigBufferAsInputs) {
  Vec data(40);
  for (size_t i = 0; i < data.size(); i++) data[i] = float(i) * 0.5f - 3;
  Tensor X = T(data, {10, 4}), Y = Tensor::from_vector<int32_t>({0, 1, 2, 3, 0, 1, 2, 3, 0, 1}, {10});
  TinyJit f([](const std::vector<Tensor>& in) { return std::vector<Tensor>{(in[0] * 2).sum(1) + in[1], in[0].flip(0)}; });
  auto& st = engine_stats();
  for (int c = 0; c < 8; c++) {
    int64_t s = (c * 3) % 9;  // rows s, s+1
    Tensor xs = X.shrink({{s, s + 2}, {0, 4}}), ys = Y.shrink({{s, s + 2}});
    if (c % 2) xs = xs.contiguous(), ys = ys.contiguous();
    int64_t s0 = st.schedules;
    auto out = f(xs, ys);
    if (c >= 2) { EXPECT_EQ(st.schedules - s0, 0) << "call " << c; }
    Vec sums(2), flipped(8);
    for (int r = 0; r < 2; r++) {
      for (int k = 0; k < 4; k++) sums[size_t(r)] += 2 * data[size_t((s + r) * 4 + k)], flipped[size_t((1 - r) * 4 + k)] = data[size_t((s + r) * 4 + k)];
      sums[size_t(r)] += float((s + r) % 4);
    }
    expect_near(V(out[0]), sums);
    EXPECT_EQ(V(out[1]), flipped) << "call " << c;
  }
  // whole buffers after a slice capture work too
  auto out = f(T(Vec{1, 1, 1, 1, 2, 2, 2, 2}, {2, 4}), Tensor::from_vector<int32_t>({5, 6}, {2}));
  expect_near(V(out[0]), {13, 22});
}

// a strided view input (a transpose): the view is part of the kernels, so it must stay the same view
TEST(TinyJit, StridedViewInput) {
  TinyJit f([](const std::vector<Tensor>& in) { return in[0] + 0; });
  for (int c = 0; c < 4; c++) {
    Vec a = rnd(6, c), want(6);
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 3; j++) want[size_t(j * 2 + i)] = a[size_t(i * 3 + j)];
    expect_near(V(f(T(a, {2, 3}).T())), want);
  }
  std::string e = error_of([&] { f(T(rnd(6, 9), {3, 2}).reshape({2, 3}).T()); });  // the same shape, another view
  EXPECT_NE(e.find("input 0 changed since capture"), std::string::npos) << e;
  EXPECT_NE(e.find("strided view"), std::string::npos) << e;
  e = error_of([&] { f(T(rnd(6, 9), {3, 2})); });
  EXPECT_NE(e.find("a strided view of a buffer -> contiguous"), std::string::npos) << e;
}

// A kernel whose inputs no launch of the capture writes (a weight's packed panels in x @ W) is skipped by a replay
// while its buffers are as it left them; a write to the weight outside the replay (an assign, another TinyJit's
// replay) runs it again, and memory of the caller's (from_blob), which changes unseen, always does
TEST(TinyJit, UnchangedWeightsAreNotPackedAgain) {
  Context simd({{"SIMD", 1}});  // B is packed by SIMD kernels only (a SIMD=0 run of the suite would not pack it)
  constexpr int64_t M = 64, K = 256, N = 1024;  // B of 1 MiB: packed (tensor/gemm.cpp)
  auto host_mm = [&](const Vec& x, const Vec& w) {
    Vec out(size_t(M * N), 0.f);
    for (int64_t i = 0; i < M; i++)
      for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++) out[size_t(i * N + j)] += x[size_t(i * K + k)] * w[size_t(k * N + j)];
    return out;
  };
  Vec w_host = rnd(size_t(K * N), 1);
  Tensor w = T(w_host, {K, N});
  TinyJit f([&](const std::vector<Tensor>& in) { return in[0].matmul(w); });
  TinyJit halve([&](const std::vector<Tensor>& in) { return w.assign(w * in[0]).realize(); });
  Tensor half = T({0.5f}, {1});
  for (int c = 0; c < 7; c++) {
    if (c == 4) {  // written outside any replay
      w_host = rnd(size_t(K * N), 2);
      w.assign(T(w_host, {K, N})).realize();
    }
    if (c >= 5) {  // by another TinyJit: its first, capture and replays
      for (int r = 0; r < 3; r++) halve(half);
      for (float& v : w_host) v *= 0.125f;
    }
    if (c == 3) {  // the same graph run without the JIT in between: its schedule has intermediates of its own
      Vec x2 = rnd(size_t(M * K), 40);
      expect_near(V(T(x2, {M, K}).matmul(w)), host_mm(x2, w_host), 1e-3f);
    }
    Vec x = rnd(size_t(M * K), 10 + c);
    int64_t skipped = engine_stats().kernels_unchanged;
    Tensor out = f(T(x, {M, K}));
    // calls 2 and 3 replay with the weight as the capture left it; 4-6 after a write
    if (c >= 2) EXPECT_EQ(engine_stats().kernels_unchanged - skipped, c == 2 || c == 3 ? 1 : 0) << "call " << c;
    expect_near(V(out), host_mm(x, w_host), 1e-3f);
  }
  // a kernel that reads only an unchanged buffer, but as far as a Variable says (a KV cache's first pos rows), runs
  Vec cache_host = rnd(16 * 8, 5);
  Tensor cache = T(cache_host, {16, 8});
  sint pos = Variable("pos", 1, 16);
  TinyJit<Tensor> rows([&](const std::vector<Tensor>&, const std::vector<sint>& vars) { return cache.shrink({{0, vars[0]}, {0, 8}}).sum(0).realize(); });
  for (int64_t n : {3, 5, 9, 2, 16, 7}) {
    Vec want(8, 0.f);
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < 8; j++) want[size_t(j)] += cache_host[size_t(i * 8 + j)];
    expect_near(V(rows({}, {pos.bind(n)})), want);
  }
  Vec mem = rnd(size_t(K * N), 3);
  Tensor wb = Tensor::from_blob(mem.data(), {K, N});
  TinyJit g([&](const std::vector<Tensor>& in) { return in[0].matmul(wb); });
  Vec x = rnd(size_t(M * K), 4);
  for (int c = 0; c < 4; c++) {
    for (float& v : mem) v += 1.f;
    int64_t skipped = engine_stats().kernels_unchanged;
    expect_near(V(g(T(x, {M, K}))), host_mm(x, mem), 1e-3f);
    EXPECT_EQ(engine_stats().kernels_unchanged, skipped) << "call " << c;
  }
}
