// Creation and random ops: linspace and const_like against libtorch, from_blob over caller memory, invalids; the seeded
// random ops (randperm, normal, kaiming_normal, multinomial, random_bits) against values recorded from tinygrad by
// tests/tools/gen_random_values.py, and by their distributions; then the tg::Error each gives for bad arguments.
#include "tensor_harness.h"

#include <algorithm>
#include <numeric>

using namespace conf;

TEST(TensorCreate, LinspaceConstLike) {
  Pair x = input({2, 3}, dtypes::float32), e = input({0, 4}, dtypes::float32);
  std::vector<Row> cs{
      {"linspace 0..10 5", tg::Tensor::linspace(0, 10, 5), at::linspace(0, 10, 5)},
      {"linspace -1..1 7", tg::Tensor::linspace(-1, 1, 7), at::linspace(-1, 1, 7)},
      {"linspace down", tg::Tensor::linspace(3.5, -2.0, 4), at::linspace(3.5, -2.0, 4)},
      {"linspace 1 step", tg::Tensor::linspace(2, 7, 1), at::linspace(2, 7, 1)},
      {"linspace 0 steps", tg::Tensor::linspace(0, 1, 0), at::linspace(0, 1, 0)},
      {"const_like", x.t.const_like(2.5), at::full_like(x.a, 2.5)},
      {"const_like empty", e.t.const_like(1), at::full_like(e.a, 1)},
  };
  expect_rows(cs, "float");
  expect_rows({{"linspace int32", tg::Tensor::linspace(0, 10, 4, dtypes::int32), at::linspace(0, 10, 4, at::kInt)},
               {"const_like int", x.t.const_like(3, dtypes::int32), at::full_like(x.a, 3, at::kInt)}},
              "int");
  expect_rows({{"linspace float64", tg::Tensor::linspace(-1, 2, 9, dtypes::float64), at::linspace(-1, 2, 9, at::kDouble)}}, "double");
  EXPECT_FALSE(x.t.const_like(1).device().has_value());  // device-free: no storage
  expect_error([] { tg::Tensor::linspace(0, 1, -1); }, {"linspace", "non-negative", "-1"});
  expect_error([] { tg::Tensor::linspace(0, 1, 3, dtypes::bool_); }, {"linspace", "bool"});
}

TEST(TensorCreate, FromBlobAndInvalids) {
  std::vector<float> mem{1, 2, 3, 4, 5, 6};
  tg::Tensor t = tg::Tensor::from_blob(mem.data(), {2, 3});
  EXPECT_EQ(t.shape(), (tg::Shape{2, 3}));
  EXPECT_EQ(t.to_vector<float>(), mem);
  mem[4] = 50;  // no copy: the tensor reads the caller's memory
  EXPECT_EQ((t * 2).to_vector<float>(), (std::vector<float>{2, 4, 6, 8, 100, 12}));
  t.assign(t + 1).realize();  // and writes go there
  EXPECT_EQ(mem, (std::vector<float>{2, 3, 4, 5, 51, 7}));
  t.setitem({1, tg::Slice{0, 2}}, 0.0f);
  t.realize();
  EXPECT_EQ(mem, (std::vector<float>{2, 3, 4, 0, 0, 7}));
  std::vector<int32_t> im{7, -8, 9};
  EXPECT_EQ(tg::Tensor::from_blob(im.data(), {3}, dtypes::int32).sum().item<int32_t>(), 8);
  expect_error([] { tg::Tensor::from_blob(nullptr, {2}); }, {"from_blob", "null"});
  expect_error([&] { tg::Tensor::from_blob(mem.data(), {2, -3}); }, {"from_blob", "negative"});
  EXPECT_EQ(tg::Tensor::from_blob(nullptr, {0, 3}).numel(), 0);

  tg::Tensor inv = tg::Tensor::invalids({2, 2}, dtypes::int32);
  EXPECT_EQ(inv.shape(), (tg::Shape{2, 2}));
  EXPECT_EQ(inv.dtype(), dtypes::int32);
  inv.assign(tg::Tensor::from_vector<int32_t>({1, 2, 3, 4}, {2, 2}));
  EXPECT_EQ(inv.to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 3, 4}));
}

TEST(TensorCreate, RandomMatchesTinygrad) {
  // values printed by tests/tools/gen_random_values.py (tinygrad at the reference commit, DEV=PYTHON)
  tg::Tensor::manual_seed(3);
  EXPECT_EQ(tg::Tensor::randperm(8).to_vector<int32_t>(), (std::vector<int32_t>{5, 2, 7, 4, 0, 6, 1, 3}));
  auto near = [](const std::vector<float>& got, const std::vector<float>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
  };
  tg::Tensor::manual_seed(3);
  near(tg::Tensor::normal({4}, 2.0, 0.5).to_vector<float>(), {1.838562250137329f, 2.004509210586548f, 2.51849365234375f, 2.222975492477417f});
  tg::Tensor::manual_seed(3);
  near(tg::Tensor::kaiming_normal({2, 3}, 0.5).to_vector<float>(),
       {-0.7860585451126099f, 1.165639877319336f, 0.19448640942573547f, 0.9503979682922363f, 0.03303541988134384f, -0.5449621081352234f});
  tg::Tensor::manual_seed(5);
  EXPECT_EQ(tg::Tensor::from_vector<float>({1, 2, 3, 4}).multinomial(6, true).to_vector<int32_t>(), (std::vector<int32_t>{0, 2, 2, 2, 2, 2}));
  tg::Tensor::manual_seed(5);
  tg::Tensor m = tg::Tensor::from_vector<float>({1, 2, 3, 4, 4, 0.5, 1, 1}, {2, 4}).multinomial(3);
  EXPECT_EQ(m.shape(), (tg::Shape{2, 3}));
  EXPECT_EQ(m.to_vector<int32_t>(), (std::vector<int32_t>{2, 1, 3, 0, 3, 1}));
  tg::Tensor key = tg::Tensor::from_vector<uint32_t>({7, 9}), counter = tg::Tensor::from_vector<uint32_t>({1, 0});
  EXPECT_EQ(tg::Tensor::random_bits(key, counter, 5).to_vector<uint32_t>(),
            (std::vector<uint32_t>{3924307393u, 1548247170u, 4177097044u, 3158619870u, 1834560887u}));
  EXPECT_EQ(tg::Tensor::random_bits(key, counter, 0).numel(), 0);
}

TEST(TensorCreate, RandomDistributions) {
  tg::Tensor::manual_seed(11);
  auto moments = [](const std::vector<float>& v) {
    double m = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size()), s = 0;
    for (float x : v) s += (x - m) * (x - m);
    return std::pair{m, std::sqrt(s / double(v.size() - 1))};
  };
  auto [nm, ns] = moments(tg::Tensor::normal({20000}, -1.5, 2.0).to_vector<float>());
  EXPECT_NEAR(nm, -1.5, 0.06);
  EXPECT_NEAR(ns, 2.0, 0.05);
  auto [km, ks] = moments(tg::Tensor::kaiming_normal({400, 50}, 0.2).to_vector<float>());
  EXPECT_NEAR(km, 0.0, 0.01);
  EXPECT_NEAR(ks, std::sqrt(2.0 / 1.04 / 50), 0.005);
  // randperm: a permutation, different per draw, the same again after the same seed
  tg::Tensor::manual_seed(4);
  std::vector<int32_t> p1 = tg::Tensor::randperm(50).to_vector<int32_t>(), p2 = tg::Tensor::randperm(50).to_vector<int32_t>(), sorted = p1;
  std::ranges::sort(sorted);
  std::vector<int32_t> iota(50);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_EQ(sorted, iota);
  EXPECT_NE(p1, p2);
  tg::Tensor::manual_seed(4);
  EXPECT_EQ(tg::Tensor::randperm(50).to_vector<int32_t>(), p1);
  EXPECT_EQ(tg::Tensor::randperm(4, dtypes::int64).dtype(), dtypes::int64);
  EXPECT_EQ(tg::Tensor::randperm(0).numel(), 0);
  // multinomial with replacement: frequencies follow the weights; a zero weight is never drawn
  tg::Tensor w = tg::Tensor::from_vector<float>({1, 0, 3, 4, 2, 2, 0, 0}, {2, 4});
  std::vector<int32_t> d = w.multinomial(4000, true).to_vector<int32_t>();
  std::vector<double> f(8, 0);
  for (size_t i = 0; i < d.size(); i++) f[(i / 4000) * 4 + size_t(d[i])] += 1.0 / 4000;
  std::vector<double> want{0.125, 0, 0.375, 0.5, 0.5, 0.5, 0, 0};
  for (size_t k = 0; k < 8; k++) EXPECT_NEAR(f[k], want[k], 0.03) << k;
  // without replacement: distinct classes per row, never a zero weight while others remain
  std::vector<int32_t> nr = tg::Tensor::from_vector<float>({1, 0, 3, 4, 2}).multinomial(4).to_vector<int32_t>();
  std::vector<int32_t> s = nr;
  std::ranges::sort(s);
  EXPECT_EQ(s, (std::vector<int32_t>{0, 2, 3, 4}));
  tg::Tensor ones = tg::Tensor::ones({3});
  expect_error([&] { ones.multinomial(4); }, {"multinomial", "4 samples without replacement", "3 classes"});
  expect_error([&] { ones.multinomial(0); }, {"multinomial", "positive"});
  expect_error([] { tg::Tensor::ones({2, 2, 2}).multinomial(); }, {"multinomial", "1-D or 2-D"});
  expect_error([] { tg::Tensor::normal({2}, 0, -1); }, {"normal", "std >= 0"});
  expect_error([] { tg::Tensor::kaiming_normal(tg::Shape{}); }, {"kaiming_normal", "fan-in"});
  expect_error([] { tg::Tensor::randperm(-2); }, {"randperm", "-2"});
  expect_error([] { tg::Tensor::randperm(3, dtypes::float32); }, {"randperm", "int"});
  expect_error([] { tg::Tensor::random_bits(tg::Tensor::from_vector<int32_t>({1, 2}), tg::Tensor::from_vector<uint32_t>({0, 0}), 3); },
               {"random_bits", "uint32", "int"});
}
