// tg::Tensor: properties, laziness, handle semantics, the live-tensor registry, every error path (the message names
// the op, the shapes and the dtypes), and realize/read-back once the engine runs.
#include <gtest/gtest.h>

#include <sstream>

#include "util/stats.h"
#include "tensor/tensor_impl.h"
#include "tg/context.h"
#include "tensor_test_util.h"

using namespace tg;
using tg::testutil::error_of;

namespace {
void expect_error(const std::string& msg, std::initializer_list<const char*> parts) {
  for (const char* p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
}
}  // namespace

TEST(Tensor, Properties) {
  Tensor a = Tensor::empty({2, 3});
  EXPECT_EQ(a.shape(), (Shape{2, 3}));
  EXPECT_EQ(a.dtype(), dtypes::float32);
  EXPECT_EQ(a.device(), "CPU");
  EXPECT_EQ(a.ndim(), 2);
  EXPECT_EQ(a.numel(), 6);
  EXPECT_EQ(a.element_size(), 4);
  EXPECT_EQ(Tensor::empty({4}, dtypes::int8, "NULL").device(), "NULL");
  Tensor s = Tensor(3);  // a weak, device-free literal
  EXPECT_EQ(s.dtype(), dtypes::weakint);
  EXPECT_EQ(s.device(), std::nullopt);
  EXPECT_EQ(s.ndim(), 0);
  EXPECT_EQ(Tensor(true).dtype(), dtypes::bool_);
  EXPECT_EQ(Tensor(2.5, dtypes::half).dtype(), dtypes::half);
  EXPECT_EQ(Tensor().dtype(), dtypes::weakfloat);
  std::ostringstream os;
  os << a;
  EXPECT_EQ(os.str(), "<Tensor CPU (2, 3) float>");
  EXPECT_EQ(Tensor::arange(4).device(), std::nullopt);
  EXPECT_EQ((Tensor::arange(6).reshape({2, 3}) + a).device(), "CPU");
}

TEST(Tensor, Promotion) {
  Tensor f = Tensor::empty({3}), i = Tensor::empty({3}, dtypes::int32), h = Tensor::empty({3}, dtypes::half);
  EXPECT_EQ((f + 1).dtype(), dtypes::float32);
  EXPECT_EQ((i + 1).dtype(), dtypes::int32);
  EXPECT_EQ((i + 1.5).dtype(), dtypes::weakfloat);  // int + float literal: weak until stored
  EXPECT_EQ((h * f).dtype(), dtypes::float32);
  EXPECT_EQ((h * 2.0).dtype(), dtypes::half);
  EXPECT_EQ((i / i).dtype(), dtypes::float32);  // true division
  EXPECT_EQ(i.idiv(2).dtype(), dtypes::int32);
  EXPECT_EQ((i < 2).dtype(), dtypes::bool_);
  EXPECT_EQ(((i > 0) + (i > 1)).dtype(), dtypes::bool_);
  EXPECT_EQ((i + (i > 0)).dtype(), dtypes::int32);
  EXPECT_EQ(f.sum().dtype(), dtypes::float32);
  EXPECT_EQ(h.sum().dtype(), dtypes::half);
  EXPECT_EQ(i.mean().dtype(), dtypes::float32);
  EXPECT_EQ(f.argmax().dtype(), dtypes::int32);
  EXPECT_EQ(Tensor::eye(3).dtype(), dtypes::float32);
  EXPECT_EQ(Tensor::arange(3).dtype(), dtypes::int32);
  EXPECT_EQ(Tensor::arange(0, 3, 0.5).dtype(), dtypes::float32);
  EXPECT_EQ(Tensor::arange(int64_t(1) << 40, (int64_t(1) << 40) + 3).dtype(), dtypes::int64);
  // 2^40 elements: the cumulative-sum graph's pooled shape has more elements than int64 counts (Python's ints do not
  // overflow, ours would): an error, not undefined behaviour
  EXPECT_THROW(Tensor::arange(int64_t(1) << 40), Error);
}

TEST(Tensor, LazyAndHandles) {
  size_t live = live_tensors();
  {
    Tensor a = Tensor::empty({4});
    Tensor b = a;  // one tensor, two handles: an assign through one is seen through the other
    Tensor c = Tensor::empty({4});
    b.assign(c);
    EXPECT_EQ(uop_of(a), uop_of(b));
    EXPECT_EQ(uop_of(a).op(), Ops::AFTER);
    EXPECT_EQ(live_tensors(), live + 2);
    // a view assign (through a permute; a reshape chain still has buffer identity) rewrites every tensor on the buffer
    Tensor d = Tensor::empty({2, 2});
    Tensor e = d.permute({1, 0});
    e.assign(Tensor::empty({2, 2}));
    EXPECT_EQ(uop_of(d).op(), Ops::AFTER);
    EXPECT_EQ(uop_of(e).src(0).op(), Ops::AFTER);
    // self assign is a no-op
    Tensor g = Tensor::empty({3});
    UOp before = uop_of(g);
    g.assign(g);
    EXPECT_EQ(uop_of(g), before);
  }
  EXPECT_EQ(live_tensors(), live);
}

TEST(Tensor, GraphsAreFreedWithTheirTensors) {
  size_t uops = live_uops(), tensors = live_tensors();
  {
    Tensor a = Tensor::empty({4, 4});
    Tensor x = a;
    for (int k = 0; k < 50; k++) x = (x * 2 + 1).relu().softmax(1);
    Tensor y = x.matmul(a).sum();
    EXPECT_GT(live_uops(), uops);
  }
  EXPECT_EQ(live_tensors(), tensors);
  EXPECT_EQ(live_uops(), uops);
}

TEST(Tensor, ApplyMapToTensors) {
  Tensor a = Tensor::empty({3}), b = a + 1, c = b * 2, other = Tensor::empty({3}) - 1;
  UOp other_before = uop_of(other);
  UOp repl = UOp::empty({3}, dtypes::float32, "CPU");
  apply_map_to_tensors({{uop_of(b), repl}});
  EXPECT_EQ(uop_of(b), repl);
  EXPECT_EQ(uop_of(c).src(0), repl);
  EXPECT_EQ(uop_of(other), other_before);
}

TEST(Tensor, Errors) {
  Tensor a = Tensor::empty({2, 3}), i = Tensor::empty({4}, dtypes::int32);
  expect_error(error_of([&] { a + Tensor::empty({4}); }), {"ADD", "(2, 3)", "(4,)", "float"});
  expect_error(error_of([&] { (a > 0).where(a, Tensor::empty({3, 2})); }), {"WHERE", "(3, 2)"});
  expect_error(error_of([&] { a.reshape({4, 2}); }), {"RESHAPE", "(2, 3)", "(4, 2)"});
  expect_error(error_of([&] { a.reshape({-1, -1}); }), {"RESHAPE", "-1"});
  expect_error(error_of([&] { a.sum(2); }), {"sum", "dim 2", "(2, 3)"});
  expect_error(error_of([&] { a.max(-3); }), {"max", "-3", "(2, 3)"});
  expect_error(error_of([&] { a.argmax(2); }), {"argmax", "(2, 3)"});
  expect_error(error_of([&] { a.mean({0, 5}); }), {"dim 5", "(2, 3)"});
  expect_error(error_of([&] { a.permute({0, 0}); }), {"PERMUTE", "(0, 0)", "(2, 3)"});
  expect_error(error_of([&] { a.unsqueeze(4); }), {"UNSQUEEZE", "(2, 3)"});
  expect_error(error_of([&] { a.transpose(0, 5); }), {"TRANSPOSE", "(2, 3)"});
  expect_error(error_of([&] { a.pad({{1, 1}}); }), {"PAD", "(2, 3)"});
  expect_error(error_of([&] { a.shrink({{0, 3}, {0, 3}}); }), {"SHRINK", "((0, 3), (0, 3))", "(2, 3)"});
  expect_error(error_of([&] { a.flip(3); }), {"FLIP", "(2, 3)"});
  expect_error(error_of([&] { a.expand({4, 3}); }), {"EXPAND", "(2, 3)", "(4, 3)"});
  expect_error(error_of([&] { a.repeat({2}); }), {"repeat", "(2, 3)"});
  expect_error(error_of([&] { a.cat(Tensor::empty({2, 4})); }), {"cat", "(2, 3)", "(2, 4)"});
  expect_error(error_of([&] { a.stack(Tensor::empty({3, 2})); }), {"stack", "(2, 3)", "(3, 2)"});
  expect_error(error_of([&] { a.matmul(Tensor::empty({2, 3}, dtypes::half)); }), {"dot", "(2, 3):float", "(2, 3):half"});
  expect_error(error_of([&] { Tensor(1.0).dot(a); }), {"dot", "()", "(2, 3)"});
  expect_error(error_of([&] { a[5]; }), {"index", "5", "size 2"});
  expect_error(error_of([&] { a[{int64_t(0), int64_t(0), int64_t(0)}]; }), {"too many indices", "(2, 3)"});
  expect_error(error_of([&] { a[{Slice{{}, {}, 0}}]; }), {"step", "0"});
  // dtypes not allowed
  expect_error(error_of([&] { a & a; }), {"AND", "float"});
  expect_error(error_of([&] { a << 1; }), {"SHL", "float"});
  expect_error(error_of([&] { ~a; }), {"bitwise_not", "float"});
  expect_error(error_of([&] { a.where(a, a); }), {"WHERE", "bool", "float"});
  expect_error(error_of([&] { i.pow(-1); }), {"pow", "int"});
  expect_error(error_of([&] { a.cast(dtypes::void_); }), {"cast", "void"});
  expect_error(error_of([&] { Tensor(1.5).bitcast(dtypes::int32); }), {"bitcast", "weakfloat"});
  expect_error(error_of([&] { Tensor::empty({2}, dtypes::weakint); }), {"weak dtype weakint"});
  expect_error(error_of([&] { Tensor::rand({2}, dtypes::int32); }), {"rand", "int"});
  expect_error(error_of([&] { Tensor::randint({2}, 0, 5, dtypes::float32); }), {"randint", "float"});
  expect_error(error_of([&] { Tensor::randint({2}, 5, 5); }), {"randint", "low < high"});
  expect_error(error_of([&] { Tensor::arange(0, 300, 1, dtypes::int8); }), {"arange", "300", "char"});
  expect_error(error_of([&] { Tensor::from_vector<float>({1, 2, 3}, {2, 2}); }), {"from_vector", "3", "(2, 2)"});
  expect_error(error_of([&] { Tensor::from_vector<float>({1, 2}, {2}, dtypes::weakfloat); }), {"from_vector", "weakfloat"});
  expect_error(error_of([&] { a.assign(Tensor::empty({2, 3}, dtypes::int32)); }), {"assign", "float", "int"});
  expect_error(error_of([&] { a.assign(Tensor::empty({3, 3})); }), {"assign", "(3, 3)", "(2, 3)"});
  expect_error(error_of([&] { a.assign(Tensor::empty({2, 3}, std::nullopt, "NULL")); }), {"assign", "CPU", "NULL"});
  expect_error(error_of([&] { a.item<float>(); }), {"item", "(2, 3)"});
  expect_error(error_of([&] { a.clamp(); }), {"clamp"});
  expect_error(error_of([&] { a.div(a, "round"); }), {"div", "round"});
  expect_error(error_of([&] { Tensor::eye(-1); }), {"eye", "-1"});
  expect_error(error_of([&] { Tensor::empty({2}, std::nullopt, "FOO"); }), {"FOO"});
  expect_error(error_of([&] { Tensor::full({-1}, 0); }), {"full", "(-1,)"});
  expect_error(error_of([&] { schedule_linear({i + 1.5}); }), {"realize", "weak"});
}

TEST(Tensor, RealizePredicate) {
  // buffer-backed and device-free tensors have nothing to compute: realize runs no schedule
  Tensor e = Tensor::empty({3});
  UOp before = uop_of(e);
  EXPECT_NO_THROW(e.realize());
  EXPECT_EQ(uop_of(e), before);
  EXPECT_NO_THROW(Tensor(3).realize());
  EXPECT_NO_THROW(Tensor::arange(4).realize());
  EXPECT_NO_THROW(Tensor::realize({e, Tensor(1.5), e.reshape({3, 1})}));
  EXPECT_NO_THROW((Tensor::empty({4}, dtypes::int32) + 1.5).realize());  // weak: virtual, nothing stored
}

TEST(Tensor, ScheduleLinearSwapsTensorsToBuffers) {
  Tensor a = Tensor::empty({2, 3}), b = Tensor::empty({2, 3});
  Tensor c = (a + b).sum(1), d = c * 2;
  UOp a_before = uop_of(a);
  UOp linear;
  linear = schedule_linear({c});
  EXPECT_EQ(linear.op(), Ops::LINEAR);
  EXPECT_EQ(uop_of(c).base().op(), Ops::BUFFER);  // c is now its buffer
  EXPECT_EQ(uop_of(d).src(0), uop_of(c));         // and so is d's source
  EXPECT_EQ(uop_of(a), a_before);                  // inputs are untouched
  EXPECT_EQ(c.shape(), (Shape{2}));
}

// the public form: a Schedule to inspect and run later
TEST(TensorRealize, PublicScheduleLinearRunsLater) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}), b = Tensor::from_vector<float>({1, 1, 1, 2, 2, 2}, {2, 3});
  Tensor c = (a * b).sum(1), d = (a + b).contiguous();
  Schedule s = Tensor::schedule_linear({c, d});
  ASSERT_EQ(s.size(), 2u);  // one reduce kernel, one elementwise kernel
  EXPECT_NE(s.str().find("Ops.LINEAR"), std::string::npos) << s.str();
  EXPECT_EQ(uop_of(c).base().op(), Ops::BUFFER);  // already pointed at the buffer the schedule fills
  s.run();
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{6, 30}));  // 1+2+3, 2*(4+5+6)
  EXPECT_EQ(d.to_vector<float>(), (std::vector<float>{2, 3, 4, 6, 7, 8}));
  EXPECT_EQ(Tensor::schedule_linear({c, d}).size(), 0u);  // realized: nothing left to run
  Schedule empty;
  EXPECT_EQ(empty.size(), 0u);
  empty.run();
}

// ***** values *****

TEST(TensorRealize, FromVectorAddToVector) {
  {
    Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
    Tensor b = Tensor::from_vector<float>({10, 20, 30, 40}, {2, 2});
    EXPECT_EQ((a + b).to_vector<float>(), (std::vector<float>{11, 22, 33, 44}));
  }
}

TEST(TensorRealize, ReduceAndItem) {
  {
    Tensor a = Tensor::from_vector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3});
    EXPECT_EQ(a.sum(1).to_vector<int32_t>(), (std::vector<int32_t>{6, 15}));
    EXPECT_EQ(a.sum().item<int32_t>(), 21);
    EXPECT_EQ(a.max().item<int32_t>(), 6);
    EXPECT_EQ(a.argmax(1).to_vector<int32_t>(), (std::vector<int32_t>{2, 2}));
  }
}

TEST(TensorRealize, RealizeSwapsToBuffer) {
  {
    Tensor a = Tensor::from_vector<float>({1, 2, 3});
    Tensor b = (a * 2).contiguous();
    Tensor c = b + 1;
    b.realize();
    EXPECT_TRUE(uop_of(b).has_buffer_identity() || uop_of(b).base().op() == Ops::BUFFER);
    EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{3, 5, 7}));
  }
}

TEST(TensorRealize, RealizeReachesTensorsMadeBeforeAndAfter) {
  // realize rewrites every live tensor whose graph reaches what it realized, and does not walk graphs made before that
  // (apply_map_to_tensors, by the nodes' creation order): a tensor made first that is the same node (hash-consed), one
  // made on top of it afterwards, and one of older nodes only, which keeps its kernel
  Tensor a = Tensor::from_vector<float>({1, 2, 3});
  Tensor first = (a * 2).contiguous(), other = (a + 5).contiguous(), same = (a * 2).contiguous(), above = same + 1;
  same.realize();
  EXPECT_EQ(Tensor::schedule_linear({first}).size(), 0u) << "the same node as the realized one: now its buffer";
  EXPECT_EQ(above.to_vector<float>(), (std::vector<float>{3, 5, 7}));
  EXPECT_EQ(other.to_vector<float>(), (std::vector<float>{6, 7, 8}));
  EXPECT_EQ(first.to_vector<float>(), (std::vector<float>{2, 4, 6}));
}

TEST(TensorRealize, CreationAndAssign) {
  {
    EXPECT_EQ(Tensor::arange(5).to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2, 3, 4}));
    EXPECT_EQ(Tensor::eye(2).to_vector<float>(), (std::vector<float>{1, 0, 0, 1}));
    EXPECT_EQ(Tensor::full({3}, 7).to_vector<int32_t>(), (std::vector<int32_t>{7, 7, 7}));
    Tensor z = Tensor::zeros({3});
    z.assign(Tensor::from_vector<float>({1, 2, 3})).realize();
    EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{1, 2, 3}));
    EXPECT_EQ(Tensor(2.5).item<float>(), 2.5f);
  }
}

TEST(TensorRealize, Rand) {
  // tinygrad's values for the same seeds (DEV=PYTHON tinygrad at the reference commit): the same bits
  {
    Tensor::manual_seed(42);
    std::vector<float> r = Tensor::rand({6}).to_vector<float>();
    EXPECT_EQ(r, (std::vector<float>{0.38104248046875f, 0.009775400161743164f, 0.1128007173538208f, 0.1176995038986206f,
                                     0.505361795425415f, 0.3721102476119995f}));
    EXPECT_EQ(Tensor::rand({3}).to_vector<float>(), (std::vector<float>{0.099753737449646f, 0.2964744567871094f, 0.48371803760528564f}));
    Tensor::manual_seed(7);
    EXPECT_EQ(Tensor::randint({5}, 0, 100).to_vector<int32_t>(), (std::vector<int32_t>{7, 3, 21, 32, 1}));
    std::vector<float> n = Tensor::randn({4}).to_vector<float>(), want{-0.016469500958919525f, -0.43317022919654846f, 0.43753618001937866f,
                                                                     0.3493734300136566f};
    for (size_t k = 0; k < 4; k++) EXPECT_NEAR(n[k], want[k], 1e-5);
    Tensor::manual_seed(42);
    EXPECT_EQ(Tensor::rand({6}).to_vector<float>(), r);
  }
}

// Tensor::call: the FUNCTION is inlined when scheduled, so it fuses with what surrounds it like the graph it stands for
TEST(TensorRealize, CallIsInlinedAndFused) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}), b = Tensor::from_vector<float>({10, 20, 30, 40}, {2, 2});
  Tensor::realize({a, b});
  Tensor gemm = a.call({b}, a.as_param(0).matmul(b.as_param(1)));
  EXPECT_EQ(gemm.shape(), (Shape{2, 2}));
  EXPECT_EQ(gemm.to_vector<float>(), (std::vector<float>{70, 100, 150, 220}));
  Tensor plus = a.call({b}, a.as_param(0) + b.as_param(1) * 2);
  EXPECT_EQ(plus.sum(1).to_vector<float>(), (std::vector<float>{63, 147}));
  EXPECT_EQ(schedule_linear({(a.call({b}, a.as_param(0) + b.as_param(1)) * 3).sum()}).src().size(),
            schedule_linear({((a + b) * 3).sum()}).src().size());
  // the same function body on other buffers: the realize cache applies as to any graph
  Tensor c = Tensor::from_vector<float>({1, 1, 1, 1}, {2, 2});
  EXPECT_EQ(c.call({a}, a.as_param(0) + b.as_param(1) * 2).to_vector<float>(), (std::vector<float>{3, 5, 7, 9}));
}

// the realize cache (structure_cache.cpp): the same graph structure on new buffers reuses its schedule, with the right
// buffers; a structure differing only in which inputs alias, or a scheduler setting, is scheduled anew
TEST(TensorRealize, RealizeCacheReusesScheduleOnNewBuffers) {
  auto& st = engine_stats();
  auto run = [](const std::vector<float>& a, const std::vector<float>& b) {
    Tensor x = Tensor::from_vector(a, {2, 2}), y = Tensor::from_vector(b, {2, 2});
    return ((x * 2 + y).relu().sum(1) + x.max()).to_vector<float>();
  };
  EXPECT_EQ(run({1, 2, 3, 4}, {0, 0, 0, 0}), (std::vector<float>{10, 18}));
  int64_t hits = st.realize_cache_hits, misses = st.schedule_cache_misses;
  EXPECT_EQ(run({-1, 5, 0, 2}, {1, -20, 3, 1}), (std::vector<float>{5, 13}));
  EXPECT_EQ(run({0, 0, 0, 1}, {7, 8, 9, 9}), (std::vector<float>{16, 21}));
  EXPECT_EQ(st.realize_cache_hits - hits, 2);
  EXPECT_EQ(st.schedule_cache_misses - misses, 0);
  // x op x reads one buffer twice: another structure than x op y, and the values say which buffer was read
  Tensor x = Tensor::from_vector<float>({1, 2}, {2}), y = Tensor::from_vector<float>({10, 20}, {2});
  EXPECT_EQ((x - y).to_vector<float>(), (std::vector<float>{-9, -18}));
  EXPECT_EQ((x - x).to_vector<float>(), (std::vector<float>{0, 0}));
  EXPECT_EQ((y - x).to_vector<float>(), (std::vector<float>{9, 18}));
  // in-place assign through a cached schedule writes the new target, and only it
  for (float v : {3.f, 4.f}) {
    Tensor t = Tensor::from_vector<float>({v, v}, {2}), other = Tensor::from_vector<float>({0, 0}, {2});
    t.assign(t * t + 1).realize();
    EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{v * v + 1, v * v + 1}));
    EXPECT_EQ(other.to_vector<float>(), (std::vector<float>{0, 0}));
  }
  // two outputs of one realize get distinct fresh buffers each time
  for (int i = 0; i < 2; i++) {
    Tensor a = Tensor::from_vector<float>({1, 2, 3}, {3}) * float(i + 1);
    Tensor b = a + 1, c = a * 10;
    Tensor::realize({b, c});
    EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{float(i + 2), float(2 * i + 3), float(3 * i + 4)}));
    EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{10.f * float(i + 1), 20.f * float(i + 1), 30.f * float(i + 1)}));
  }
  // a scheduler setting is part of the key: the same structure under it is scheduled again
  Tensor big = Tensor::from_vector(std::vector<float>(40000, 1.f), {40000});
  EXPECT_EQ(big.sum().item<float>(), 40000.f);
  misses = st.schedule_cache_misses;
  {
    Context ctx({{"SPLIT_REDUCEOP", 0}});
    Tensor big2 = Tensor::from_vector(std::vector<float>(40000, 2.f), {40000});
    EXPECT_EQ(schedule_linear({big2.sum()}).src().size(), 1u);
  }
  EXPECT_GT(st.schedule_cache_misses, misses);
  Tensor big3 = Tensor::from_vector(std::vector<float>(40000, 3.f), {40000});
  EXPECT_EQ(schedule_linear({big3.sum()}).src().size(), 2u);
}

// a realize finds its template by walking its graph in step with the template's: graphs that differ from a cached one
// only deep down, in a constant, a shape, a dtype, a device or in which inputs alias, are other structures
TEST(TensorRealize, RealizeCacheNearMisses) {
  auto& st = engine_stats();
  auto vec = [](float v, int64_t n = 4, const std::string& dev = "CPU") { return Tensor::from_vector(std::vector<float>(size_t(n), v), {n}, std::nullopt, dev); };
  // a chain whose bottom constant differs: the top of the graph (what picks the candidates) is the same
  auto chain = [](const Tensor& x, const Tensor& y, float c) {
    Tensor r = x * c;
    for (int i = 0; i < 12; i++) r = ((r + y) * 0.5f).relu();
    return r.to_vector<float>()[0];
  };
  float c1 = chain(vec(1), vec(2), 1), c2 = chain(vec(1), vec(2), 3);
  EXPECT_EQ(c1, 2.f - 1.f / 4096.f);
  EXPECT_EQ(c2, 2.f + 1.f / 4096.f);
  int64_t hits = st.realize_cache_hits;
  EXPECT_EQ(chain(vec(1), vec(2), 1), c1);
  EXPECT_EQ(chain(vec(1), vec(2), 3), c2);
  EXPECT_EQ(st.realize_cache_hits - hits, 2);
  // the same buffer at both inputs, deep in the graph, against two buffers of equal values
  Tensor a = vec(1), b = vec(2);
  EXPECT_EQ(chain(a, a, 1), chain(vec(1), vec(1), 1));
  EXPECT_NE(chain(a, b, 1), chain(b, b, 1));
  EXPECT_EQ(chain(b, a, 1), chain(vec(2), vec(1), 1));
  // an assign reading its own target reversed needs the old values: the walk pairs the same nodes as for a source
  // buffer of its own, but the two inputs alias
  std::vector<float> up(256), down(256);
  for (size_t i = 0; i < 256; i++) up[i] = float(i), down[i] = float(2 * (255 - i));
  for (int same : {0, 0, 1, 1}) {
    Tensor t = Tensor::from_vector(up, {256}), u = same ? t : Tensor::from_vector(up, {256});
    t.assign(u.flip(0) * 2).realize();
    EXPECT_EQ(t.to_vector<float>(), down) << same;
  }
  // shape, dtype and device of the inputs
  EXPECT_EQ((vec(1, 4) + vec(2, 4)).to_vector<float>().size(), 4u);
  EXPECT_EQ((vec(1, 6) + vec(2, 6)).to_vector<float>().size(), 6u);
  Tensor i1 = Tensor::from_vector<int32_t>({7, 9}, {2}), i2 = Tensor::from_vector<int32_t>({1, 2}, {2});
  EXPECT_EQ((i1 / i2).to_vector<int32_t>(), (std::vector<int32_t>{7, 4}));
  Tensor f1 = Tensor::from_vector<float>({7, 9}, {2}), f2 = Tensor::from_vector<float>({1, 2}, {2});
  EXPECT_EQ((f1 / f2).to_vector<float>(), (std::vector<float>{7, 4.5f}));
  Tensor d = vec(1, 4, "CPU:1") + vec(2, 4, "CPU:1");
  EXPECT_EQ(d.to_vector<float>(), (std::vector<float>{3, 3, 3, 3}));
  EXPECT_EQ(uop_of(d).device(), "CPU:1");
  // more structures under one fingerprint than a bucket holds: each still realizes its own, and again after
  for (int round = 0; round < 2; round++)
    for (int k = 0; k < 7; k++) EXPECT_EQ(chain(vec(1), vec(2), float(k + 2)), 2.f + float(k) / 4096.f) << k;
}

TEST(Tensor, NbytesMaxShapeToInPlaceLinearWithVars) {
  EXPECT_EQ(Tensor::empty({2, 3}).nbytes(), 24);             // tinygrad: numel * element_size
  EXPECT_EQ(Tensor::empty({5}, dtypes::half).nbytes(), 10);
  EXPECT_EQ(Tensor::empty({0, 3}).nbytes(), 0);
  tg::sint i = tg::Variable("i", 1, 10).bind(4);
  Tensor s = Tensor::empty(tg::SymShape{std::vector<tg::sint>{i, 3}});
  EXPECT_EQ(s.max_shape(), (Shape{10, 3}));
  EXPECT_EQ(s.max_numel(), 30);
  EXPECT_EQ(Tensor::empty({2, 3}).max_shape(), (Shape{2, 3}));
  auto [sched, vars] = Tensor::linear_with_vars({(s + 1).contiguous()});
  EXPECT_EQ(sched.size(), 1u);
  EXPECT_EQ(vars, (std::map<std::string, int64_t>{{"i", 4}}));
  auto [sched2, vars2] = Tensor::linear_with_vars({Tensor::empty({4}) + 1});
  EXPECT_EQ(sched2.size(), 1u);
  EXPECT_TRUE(vars2.empty());
  Tensor a = Tensor::from_vector<float>({1, 2, 3});
  a.set_grad(Tensor::ones({3}));
  Tensor alias = a;  // a handle: to_ moves the one tensor both names share
  alias.to_("CPU:1");
  EXPECT_EQ(a.device(), "CPU:1");
  EXPECT_EQ(a.grad()->device(), "CPU:1");
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{1, 2, 3}));
}

TEST(Tensor, SmallApiNames) {  // hand-derived values for names no conformance case reaches
  EXPECT_EQ(Tensor::from_vector<int32_t>({0, 5, -1}).bitwise_not().to_vector<int32_t>(), (std::vector<int32_t>{-1, -6, 0}));
  EXPECT_EQ(Tensor::from_vector<int32_t>({0, 2}).bool_().to_vector<bool>(), (std::vector<bool>{false, true}));
  Tensor h = Tensor::from_vector<float>({1.5f, -2.25f}).half();
  EXPECT_EQ(h.dtype(), dtypes::half);
  EXPECT_EQ(h.to_vector<float>(), (std::vector<float>{1.5f, -2.25f}));
  EXPECT_EQ(Tensor::from_vector<float>({1, 2}).pad_to({4}).to_vector<float>(), (std::vector<float>{1, 2, 0, 0}));
  EXPECT_EQ(Tensor::empty({2, 6}).unflatten(1, {2, 3}).shape(), (Shape{2, 2, 3}));
  Tensor r = Tensor::empty({64}, dtypes::half).rand_like();
  EXPECT_EQ(r.shape(), (Shape{64}));
  EXPECT_EQ(r.dtype(), dtypes::half);
  for (float v : r.to_vector<float>()) EXPECT_TRUE(v >= 0 && v < 1) << v;
  Tensor n = Tensor::empty({2, 3}).randn_like();
  EXPECT_EQ(n.shape(), (Shape{2, 3}));
  Tensor a = Tensor::from_vector<float>({1, 2}), b = Tensor::from_vector<float>({7, 8});
  a.replace(b);
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{7, 8}));
  EXPECT_THROW(a.replace(Tensor::empty({3})), tg::Error);
}
