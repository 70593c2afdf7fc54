// Buffer lifetimes of a schedule: kernels run depth first, each producer right before its first consumer
// (schedule.cpp), and run_linear hands a buffer no tensor holds back to the allocator's cache after its last kernel
// (engine/realize.cpp). Three chained products, each with a contiguous copy of its weights (as tensor/gemm.cpp packs
// them), then need one copy's memory instead of three; a copy that a live tensor holds keeps its buffer and its value.
// Values against double-precision loops.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/device.h"
#include "support/random.h"
#include "tensor/tensor_impl.h"
#include "tg/context.h"

using namespace tg;

namespace {

constexpr int64_t M = 5, D = 72;  // D x D float32: 20,736 bytes, a size nothing else in these graphs has

struct Chain {
  Tensor x, out;
  std::vector<Tensor> w, packed;  // packed: the copies 2 * w, kept alive only when asked
};

// out = x @ (2 w0) @ (2 w1) @ (2 w2), each 2 wi made contiguous (its own kernel and buffer)
Chain chain(bool keep) {
  Chain c;
  c.x = Tensor::from_vector(test::randv(size_t(M * D), 1), {M, D}).realize();
  Tensor h = c.x;
  for (uint32_t i = 0; i < 3; i++) {
    c.w.push_back(Tensor::from_vector(test::randv(size_t(D * D), 10 + i), {D, D}).realize());
    Tensor p = (c.w.back() * 2.0f).contiguous();
    if (keep) c.packed.push_back(p);
    h = h.matmul(p);
  }
  c.out = h;
  return c;
}

std::vector<double> reference() {
  std::vector<float> x = test::randv(size_t(M * D), 1);
  std::vector<double> h(x.begin(), x.end());
  for (uint32_t i = 0; i < 3; i++) {
    std::vector<float> w = test::randv(size_t(D * D), 10 + i);
    std::vector<double> n(size_t(M * D), 0.0);
    for (int64_t r = 0; r < M; r++)
      for (int64_t k = 0; k < D; k++)
        for (int64_t j = 0; j < D; j++) n[size_t(r * D + j)] += h[size_t(r * D + k)] * 2.0 * double(w[size_t(k * D + j)]);
    h = n;
  }
  return h;
}

}  // namespace

TEST(Lifetimes, ProducersRunRightBeforeTheirFirstConsumer) {
  Chain c = chain(false);
  UOp sched = schedule_linear({c.out});  // kept alive: src() views its node
  // every D x D buffer: a weight (read by its copy's kernel only) or a copy (written, then read by the next kernel);
  // breadth first, all three copies would run before the first product
  std::unordered_map<UOp, std::pair<size_t, size_t>> seen;
  for (size_t i = 0; i < sched.src().size(); i++)
    for (size_t j = 1; j < sched.src(i).src().size(); j++) {
      const UOp& b = sched.src(i).src(j);
      if (b.op() != Ops::BUFFER || b.max_numel() != D * D) continue;
      auto [it, added] = seen.try_emplace(b, i, i);
      it->second.second = i;
    }
  ASSERT_EQ(seen.size(), 6u);  // three weights, three copies
  int copies = 0;
  for (auto& [b, fl] : seen) {
    EXPECT_LE(fl.second - fl.first, 1u) << "a D x D buffer lives from call " << fl.first << " to " << fl.second;
    copies += fl.second == fl.first + 1;
  }
  EXPECT_EQ(copies, 3);
}

TEST(Lifetimes, DeadCopiesShareMemoryHeldOnesKeepTheirs) {
  Context pinned{{{"LRU", 1}}};
  std::vector<double> ref = reference();
  double scale = 0;
  for (double v : ref) scale = std::max(scale, std::abs(v));
  int64_t raw[2] = {0, 0};
  for (bool keep : {false, true}) {
    SCOPED_TRACE(keep ? "copies held" : "copies dead");
    Chain c = chain(keep);
    LRUAllocator& a = get_device("CPU").allocator();
    a.free_cache();
    uint64_t before = a.stats().raw_allocs;
    c.out.realize();
    raw[keep] = int64_t(a.stats().raw_allocs - before);
    std::vector<float> out = c.out.to_vector<float>();
    ASSERT_EQ(out.size(), ref.size());
    for (size_t i = 0; i < ref.size(); i++) EXPECT_NEAR(out[i], ref[i], 1e-5 * scale) << i;
    for (size_t i = 0; keep && i < 3; i++) {
      std::vector<float> w = c.w[i].to_vector<float>(), p = c.packed[i].to_vector<float>();
      for (size_t k = 0; k < w.size(); k++) ASSERT_EQ(p[k], 2.0f * w[k]) << "copy " << i << " at " << k;
    }
  }
  // dead, the second and third copies reuse the first one's memory from the cache
  EXPECT_EQ(raw[0], raw[1] - 2);
}
