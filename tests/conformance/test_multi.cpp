// Multi-device tensors (tinygrad's shard and test_multitensor.py) on CPU devices, against libtorch on one device: the
// values must be the same whether the tensor is replicated, split along an axis or on one device, and the kernels
// must run on each device (counted with the launch recorder TinyJit uses).
#include <map>

#include "engine/realize.h"
#include "tg/optim.h"
#include "tg/context.h"
#include "tensor_harness.h"

using namespace conf;

namespace {

const std::vector<std::string> D2{"CPU:0", "CPU:1"};
const std::vector<std::string> D3{"CPU:0", "CPU:1", "CPU:2"};

// what realize() launched, per device: kernels (by their output buffer's device) and copies (by destination)
struct Launches {
  std::map<std::string, int> kernels, copies;
};
Launches launches_of(const std::function<void()>& f) {
  std::vector<tg::RecordedLaunch> rec;
  tg::set_launch_recorder(&rec);
  try {
    f();
  } catch (...) {
    tg::set_launch_recorder(nullptr);
    throw;
  }
  tg::set_launch_recorder(nullptr);
  Launches l;
  for (auto& r : rec) (r.prg ? l.kernels : l.copies)[r.bufs.at(0)->device()]++;
  return l;
}

}  // namespace

// ***** (a) replicated: axis nullopt *****

TEST(Multi, ReplicatedElementwise) {
  Pair x = input({4, 6}, dtypes::float32), y = input({4, 6}, dtypes::float32, -3, 3, 2);
  tg::Tensor xs = x.t.shard(D2), ys = y.t.shard(D2);
  EXPECT_EQ(xs.devices(), (std::vector<std::string>{"CPU", "CPU:1"}));
  EXPECT_EQ(*xs.device(), "(CPU, CPU:1)");
  EXPECT_FALSE(xs.shard_axis());
  EXPECT_EQ(xs.shape(), (tg::Shape{4, 6}));
  tg::Tensor out = (xs * ys + xs.exp()).relu();
  Launches l = launches_of([&] { out.realize(); });
  // one fused kernel on each device, after the inputs are copied to each device
  EXPECT_EQ(l.kernels, (std::map<std::string, int>{{"CPU", 1}, {"CPU:1", 1}}));
  EXPECT_EQ(out.devices(), xs.devices());
  at::Tensor want = (x.a * y.a + x.a.exp()).relu();
  EXPECT_TRUE(same(out.to("CPU"), want));
  EXPECT_TRUE(same(out.to("CPU:1"), want));
  EXPECT_TRUE(same(out, want)) << "data() of a multi-device tensor gathers it";
  // every replica holds the whole value: shard 1 read alone through a shrink of the replicated value
  EXPECT_TRUE(same(out.to({"CPU:1", "CPU:0"}).to("CPU:1"), want));
}

TEST(Multi, ReplicatedWithConstantsAndCasts) {
  Pair x = input({3, 5}, dtypes::float32);
  tg::Tensor xs = x.t.shard(D3);
  EXPECT_TRUE(same(((xs + 1.5f) * 2).cast(dtypes::int32), ((x.a + 1.5) * 2).to(at::kInt)));
  EXPECT_TRUE(same(xs < 0.5f, x.a < 0.5));
  EXPECT_TRUE(same((xs > 0).where(xs, tg::Tensor(0.0f)), x.a.clamp_min(0)));
}

// ***** (b) split along an axis *****

TEST(Multi, ShardedElementwise) {
  for (int64_t axis : {0, 1, -1}) {
    Pair x = input({4, 6}, dtypes::float32), y = input({4, 6}, dtypes::float32, -3, 3, 2);
    tg::Tensor xs = x.t.shard(D2, axis), ys = y.t.shard(D2, axis);
    EXPECT_EQ(xs.shard_axis(), axis < 0 ? axis + 2 : axis);
    tg::Tensor::realize({xs, ys});
    tg::Tensor out = xs * ys - ys.sigmoid();
    EXPECT_EQ(out.shard_axis(), xs.shard_axis());
    Launches l = launches_of([&] { out.realize(); });
    EXPECT_EQ(l.kernels, (std::map<std::string, int>{{"CPU", 1}, {"CPU:1", 1}})) << "axis " << axis;
    EXPECT_TRUE(same(out, x.a * y.a - y.a.sigmoid())) << "axis " << axis;
  }
}

TEST(Multi, ShardedShardsAreSlices) {
  Pair x = input({6, 4}, dtypes::float32);
  tg::Tensor xs = (x.t.shard(D3, 0) * 3).realize();
  // each device holds its slice only: one third of the elements, read back through shrink + gather
  for (int64_t i = 0; i < 3; i++) EXPECT_TRUE(same(xs.shrink({{2 * i, 2 * i + 2}, {0, 4}}), x.a.slice(0, 2 * i, 2 * i + 2) * 3));
}

TEST(Multi, ShardedWithReplicatedAndBroadcast) {
  Pair x = input({4, 6}, dtypes::float32), w = input({6}, dtypes::float32, -1, 1, 3), b = input({4, 6}, dtypes::float32, -1, 1, 4);
  for (int64_t axis : {0, 1}) {
    tg::Tensor xs = x.t.shard(D2, axis);
    EXPECT_TRUE(same(xs * w.t.shard(D2) + b.t.shard(D2), x.a * w.a + b.a)) << "axis " << axis;
    EXPECT_TRUE(same(xs + tg::Tensor(1.0f).expand({4, 6}), x.a + 1)) << "axis " << axis;  // device-free: sliced per shard
  }
  // split on different axes: the first is gathered and split again as the second
  EXPECT_TRUE(same(x.t.shard(D2, 0) + b.t.shard(D2, 1), x.a + b.a));
}

TEST(Multi, ShardedMovement) {
  Pair x = input({4, 6}, dtypes::float32);
  tg::Tensor xs = x.t.shard(D2, 0);
  EXPECT_TRUE(same(xs.reshape({2, 2, 6}), x.a.reshape({2, 2, 6})));
  EXPECT_EQ(xs.reshape({2, 2, 6}).shard_axis(), 0);
  EXPECT_TRUE(same(xs.reshape({8, 3}), x.a.reshape({8, 3})));
  EXPECT_TRUE(same(x.t.shard(D2, 1).reshape({4, 2, 3}), x.a.reshape({4, 2, 3})));
  EXPECT_EQ(x.t.shard(D2, 1).reshape({4, 2, 3}).shard_axis(), 1);
  EXPECT_TRUE(same(xs.permute({1, 0}), x.a.permute({1, 0})));
  EXPECT_EQ(xs.permute({1, 0}).shard_axis(), 1);
  EXPECT_TRUE(same(xs.unsqueeze(0).expand({3, 4, 6}), x.a.unsqueeze(0).expand({3, 4, 6})));
  EXPECT_EQ(xs.unsqueeze(0).expand({3, 4, 6}).shard_axis(), 1);
  EXPECT_TRUE(same(xs.reshape({4, 6, 1}).expand({4, 6, 2}), x.a.reshape({4, 6, 1}).expand({4, 6, 2})));
  EXPECT_TRUE(same(xs.pad({{0, 0}, {1, 2}}), at::constant_pad_nd(x.a, {1, 2, 0, 0})));
  EXPECT_TRUE(same(xs.shrink({{0, 4}, {1, 5}}), x.a.slice(1, 1, 5)));
  EXPECT_TRUE(same(xs.flip(1), x.a.flip({1})));
  EXPECT_TRUE(same((xs.permute({1, 0}) * 2).contiguous().exp(), (x.a.permute({1, 0}) * 2).exp()));
  // one whole shard selected along the split axis: replicated on every device
  tg::Tensor second = xs.shrink({{2, 4}, {0, 6}});
  EXPECT_FALSE(second.shard_axis());
  EXPECT_TRUE(same(second, x.a.slice(0, 2, 4)));
}

TEST(Multi, ShardedGatherOnEveryDevice) {
  Pair x = input({6, 2}, dtypes::int32, -10, 10);
  tg::Tensor xs = x.t.shard(D3, 0) + 1;
  for (auto d : {"CPU", "CPU:1", "CPU:2"}) EXPECT_TRUE(same(xs.to(d), x.a + 1)) << d;
  EXPECT_EQ(xs.to(D3).shard_axis(), 0) << "already on these devices: itself, as tinygrad's to";
  tg::Tensor rep = xs.to({"CPU:2", "CPU:1", "CPU:0"});  // other devices: gathered on each, replicated
  EXPECT_FALSE(rep.shard_axis());
  EXPECT_TRUE(same(rep * 2, (x.a + 1) * 2));
  Pair m = input({4, 2}, dtypes::bool_);
  EXPECT_TRUE(same(m.t.shard(D2, 0).logical_not(), m.a.logical_not()));
}

// ***** (c) reductions, all-reduce, data-parallel matmul and its gradient *****

TEST(Multi, ReduceOverOtherAxisStaysSplit) {
  Pair x = input({4, 6}, dtypes::float32);
  tg::Tensor xs = x.t.shard(D2, 0).realize();
  tg::Tensor r = xs.sum(1);
  EXPECT_EQ(r.shard_axis(), 0);
  Launches l = launches_of([&] { r.realize(); });
  EXPECT_EQ(l.kernels, (std::map<std::string, int>{{"CPU", 1}, {"CPU:1", 1}}));
  EXPECT_EQ(l.copies.size(), 0u) << "a per-device reduce copies nothing";
  EXPECT_TRUE(same(r, x.a.sum(1)));
  EXPECT_TRUE(same(x.t.shard(D2, 1).max(0, true), std::get<0>(x.a.max(0, true))));
  EXPECT_TRUE(same(x.t.shard(D2).sum(0), x.a.sum(0))) << "replicated";
}

TEST(Multi, AllReduce) {
  for (auto& devs : {D2, D3}) {
    Pair x = input({6, 6}, dtypes::float32);
    tg::Tensor xs = x.t.shard(devs, 0).realize();
    tg::Tensor s = xs.sum(0);
    EXPECT_FALSE(s.shard_axis()) << "a reduce over the split axis is replicated";
    size_t n = devs.size();
    Launches l = launches_of([&] { s.realize(); });
    // each device reduces its slice, sends it to every other device, and adds what it gets
    std::map<std::string, int> each;
    for (auto& d : s.devices()) each[d] = int(n - 1);
    EXPECT_EQ(l.copies, each);
    EXPECT_TRUE(same(s, x.a.sum(0)));
    for (auto& d : s.devices()) EXPECT_TRUE(same(s.to(d), x.a.sum(0))) << d;
    EXPECT_TRUE(same(xs.max(0), std::get<0>(x.a.max(0))));
    EXPECT_TRUE(same(xs.sum(), x.a.sum()));
    EXPECT_TRUE(same(xs.mean(), x.a.mean()));
    EXPECT_TRUE(same(x.t.shard(devs, 1).max(), x.a.max()));
    EXPECT_TRUE(same((xs * xs).sum(0, true) / 6, (x.a * x.a).sum(0, true) / 6));
  }
  Pair i = input({4, 3}, dtypes::int32, -50, 50);
  EXPECT_TRUE(same(i.t.shard(D2, 0).sum(0), i.a.sum(0).to(at::kInt)));
}

TEST(Multi, RingAllReduce) {
  // RING=2 forces the ring (reduce-scatter then all-gather around the devices); RING=0 the naive all-reduce
  Pair x = input({6, 9}, dtypes::float32);
  for (int64_t ring : {0, 2}) {
    tg::Context ctx({{"RING", ring}});
    tg::Tensor xs = x.t.shard(D3, 0).realize();
    tg::Tensor s = xs.sum(0);
    Launches l = launches_of([&] { s.realize(); });
    // naive: each device gets the other two partial sums; ring: each gets two chunks while reducing, two while gathering
    int per_device = ring ? 4 : 2;
    EXPECT_EQ(l.copies, (std::map<std::string, int>{{"CPU", per_device}, {"CPU:1", per_device}, {"CPU:2", per_device}})) << "RING=" << ring;
    for (auto d : {"CPU", "CPU:1", "CPU:2"}) EXPECT_TRUE(same(s.to(d), x.a.sum(0))) << "RING=" << ring << " " << d;
    EXPECT_TRUE(same(x.t.shard(D3, 1).max(1), std::get<0>(x.a.max(1)))) << "RING=" << ring;
    Pair odd = input({3, 7}, dtypes::float32, -3, 3, 5);  // 7 elements: uneven chunks
    EXPECT_TRUE(same(odd.t.shard(D3, 0).sum(0), odd.a.sum(0))) << "RING=" << ring;
  }
}

TEST(Multi, DataParallelMatmul) {
  Pair x = input({8, 5}, dtypes::float32), w = input({5, 3}, dtypes::float32, -1, 1, 2);
  tg::Tensor ws = w.t.shard(D2).realize();
  tg::Tensor xs = x.t.shard(D2, 0);
  tg::Tensor y = xs.matmul(ws);
  EXPECT_EQ(y.shard_axis(), 0);
  EXPECT_TRUE(same(y, at::matmul(x.a, w.a)));
  // the weight's gradient sums over the split batch: all-reduced, replicated on both devices
  tg::Tensor loss = (y.relu() * y).sum();
  loss.backward();
  ASSERT_TRUE(ws.grad());
  tg::Tensor g = *ws.grad();
  EXPECT_EQ(g.devices(), ws.devices());
  EXPECT_FALSE(g.shard_axis());
  at::Tensor xa = x.a.clone().requires_grad_(true), wa = w.a.clone().requires_grad_(true);
  at::Tensor ya = at::matmul(xa, wa);
  (ya.relu() * ya).sum().backward();
  EXPECT_TRUE(same(loss, (ya.relu() * ya).sum().detach()));
  EXPECT_TRUE(same(g, wa.grad()));
  for (auto d : {"CPU", "CPU:1"}) EXPECT_TRUE(same(g.to(d), wa.grad())) << d;
}

// ***** (d) in place, like another tensor, and what tinygrad refuses *****

TEST(Multi, ShardInPlaceAndLike) {
  Pair x = input({4, 6}, dtypes::float32), y = input({4, 6}, dtypes::float32, -1, 1, 2);
  tg::Tensor t = to_tg(x.a);  // its own tensor: x.t shares its graph with every copy of it
  tg::Tensor& r = t.shard_(D2, 1);
  EXPECT_EQ(&r, &t);
  EXPECT_EQ(t.shard_axis(), 1);
  EXPECT_EQ(t.devices(), (std::vector<std::string>{"CPU", "CPU:1"}));
  tg::Tensor yl = y.t.shard_like(t);
  EXPECT_EQ(yl.shard_axis(), 1);
  EXPECT_EQ(yl.devices(), t.devices());
  EXPECT_TRUE(same(t + yl, x.a + y.a));
  EXPECT_EQ(t.shard_like(t).graph(), t.graph()) << "already sharded so: itself";
  EXPECT_EQ(*y.t.shard_like(x.t.to("CPU:1")).device(), "CPU:1") << "like a one-device tensor: moved there";
  EXPECT_FALSE(tg::Tensor(2.0f).shard(D2).device()) << "a device-free constant stays one";
  EXPECT_EQ(*x.t.shard({"CPU:1"}).device(), "CPU:1") << "one device: a move";
}

TEST(Multi, Refused) {
  Pair x = input({5, 4}, dtypes::float32);
  expect_error([&] { x.t.shard(D2, 0); }, {"shard", "uneven", "(5, 4)", "2 devices"});
  expect_error([&] { x.t.shard(D2, 2); }, {"shard", "dim 2"});
  expect_error([&] { x.t.shard(D2).shard(D2); }, {"can't shard a multi-device tensor"});
  expect_error([&] { x.t.shard({}); }, {"shard", "no devices"});
  tg::Tensor xs = x.t.shard(D2, 1);
  expect_error([&] { (xs + x.t.to("CPU:1")).realize(); }, {"ADD", "CPU:1", "(CPU, CPU:1)"});
  expect_error([&] { (xs + x.t.shard({"CPU:1", "CPU:2"}, 1)).realize(); }, {"ADD", "different devices", "(CPU, CPU:1)", "(CPU:1, CPU:2)"});
  expect_error([&] { xs.reshape({20}).realize(); }, {"reshape", "moves items between shards"});
  expect_error([&] { xs.shrink({{0, 5}, {1, 3}}).realize(); }, {"SHRINK", "sharded axis"});
  expect_error([&] { xs.pad({{0, 0}, {1, 0}}).realize(); }, {"PAD", "sharded axis"});
  expect_error([&] { xs.flip(1).realize(); }, {"flip", "sharded axis"});
}

TEST(Multi, AssignAndCreateOnDevices) {
  Pair a = input({4, 6}, dtypes::float32), b = input({4, 6}, dtypes::float32, -1, 1, 2);
  for (int64_t axis : {0, 1}) {
    tg::Tensor t = to_tg(a.a).shard(D2, axis).realize();
    t.assign(t * 2 + to_tg(b.a).shard(D2, axis)).realize();
    EXPECT_EQ(t.shard_axis(), axis);
    EXPECT_TRUE(same(t, a.a * 2 + b.a)) << "axis " << axis;
    t.assign(tg::Tensor(0.5f).expand({4, 6}) * 3).realize();  // a device-free value: each shard stores its slice
    EXPECT_TRUE(same(t, at::full({4, 6}, 1.5f))) << "axis " << axis;
    expect_error([&] { t.assign(to_tg(b.a).shard(D2)); }, {"assign", "multi axis mismatch", std::to_string(axis) + " != None"});
    t.assign(2.5f).realize();
    EXPECT_TRUE(same(t, at::full({4, 6}, 2.5f))) << "axis " << axis;
  }
  tg::Tensor t = to_tg(a.a).shard(D2, 0);
  expect_error([&] { t.assign(to_tg(b.a).shard(D2, 1)); }, {"assign", "multi axis mismatch", "0 != 1"});
  expect_error([&] { t.assign(to_tg(b.a)); }, {"assign", "device mismatch"});
  // a device tuple where a device name goes: one tensor per device, replicated
  tg::Tensor z = tg::Tensor::full({2, 3}, 2.5, dtypes::float32, *t.device());
  EXPECT_EQ(z.devices(), t.devices());
  EXPECT_FALSE(z.shard_axis());
  EXPECT_TRUE(same(z + tg::Tensor::zeros({2, 3}, dtypes::float32, "(CPU, CPU:1)"), at::full({2, 3}, 2.5f)));
  EXPECT_TRUE(same(to_tg(b.a).to("(CPU, CPU:1)").to("CPU:1"), b.a));
}

TEST(Multi, DataParallelSGD) {
  // tinygrad's data-parallel training: the batch split over the devices, the weight replicated; its gradient is
  // all-reduced, so every replica takes the same step
  Pair x = input({8, 5}, dtypes::float32), w = input({5, 3}, dtypes::float32, -1, 1, 2);
  for (bool fused : {false, true}) {
    tg::Tensor ws = to_tg(w.a).shard(D2).realize();
    auto opt = tg::nn::optim::SGD({ws}, 0.1, 0.0, 0.0, false, false, std::nullopt, fused);
    tg::Context train({{"TRAINING", 1}});
    at::Tensor ref = w.a.clone().requires_grad_(true);
    for (int step = 0; step < 2; step++) {
      opt.zero_grad();
      tg::Tensor y = x.t.shard(D2, 0).matmul(ws);
      (y.relu() * y).sum().backward();
      opt.step();
      at::Tensor ya = at::matmul(x.a, ref);
      (ya.relu() * ya).sum().backward();
      {
        at::NoGradGuard ng;
        ref -= 0.1 * ref.grad();
        ref.grad().zero_();
      }
    }
    EXPECT_EQ(ws.devices(), (std::vector<std::string>{"CPU", "CPU:1"}));
    EXPECT_FALSE(ws.shard_axis());
    for (auto d : {"CPU", "CPU:1"}) EXPECT_TRUE(same(ws.to(d), ref.detach())) << d << (fused ? " fused" : "");
  }
}
