#include "schedule/memory.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "util/settings.h"

namespace tg {

namespace {

constexpr int64_t block_size = 256;
int64_t round_up(int64_t n, int64_t a) { return (n + a - 1) / a * a; }

// best-fit over free ranges of one arena (tinygrad uses a TLSF allocator; any allocator with reuse plans the same way)
struct ArenaAllocator {
  std::map<int64_t, int64_t> free_ranges{{0, int64_t(1) << 62}};  // offset -> size
  int64_t alloc(int64_t n) {
    auto best = free_ranges.end();
    for (auto it = free_ranges.begin(); it != free_ranges.end(); ++it)
      if (it->second >= n && (best == free_ranges.end() || it->second < best->second)) best = it;
    auto [off, size] = *best;
    free_ranges.erase(best);
    if (size > n) free_ranges[off + n] = size - n;
    return off;
  }
  void free(int64_t off, int64_t n) {
    auto it = free_ranges.emplace(off, n).first;
    if (auto nx = std::next(it); nx != free_ranges.end() && off + n == nx->first) it->second += nx->second, free_ranges.erase(nx);
    if (it != free_ranges.begin())
      if (auto pv = std::prev(it); pv->first + pv->second == it->first) pv->second += it->second, free_ranges.erase(it);
  }
};

void collect_bufs(const UOp& u, std::vector<UOp>& out) {
  if (u.op() == Ops::BUFFER) out.push_back(u);
  else if (u.op() == Ops::MSELECT || u.op() == Ops::MSTACK)
    for (auto& s : u.src()) collect_bufs(s, out);
}

}  // namespace

UOp memory_plan_rewrite(const UOp& linear, const std::unordered_set<UOp>& held) {
  if (settings().NO_MEMORY_PLANNER) return linear;
  std::vector<UOp> order;
  std::unordered_map<UOp, size_t> first, last;
  std::unordered_set<UOp> copy_bufs;
  for (size_t i = 0; i < linear.src().size(); i++) {
    const UOp& si = linear.src(i);
    std::vector<UOp> bufs;
    for (size_t j = 1; j < si.src().size(); j++) collect_bufs(si.src(j), bufs);
    for (auto& b : bufs) {
      auto d = b.device();
      if (held.contains(b) || !d || d->starts_with("DISK")) continue;
      if (first.try_emplace(b, i).second) order.push_back(b);
      last[b] = i;
      if (si.src(0).op() == Ops::COPY) copy_bufs.insert(b);
    }
  }
  if (order.empty()) return linear;
  // copy and compute buffers live in separate lanes so a copy never waits on an unrelated kernel
  using Lane = std::pair<std::string, int>;
  auto lane = [&](const UOp& b) { return Lane{*b.device(), copy_bufs.contains(b) ? 1 : 0}; };
  auto nbytes = [](const UOp& b) { return round_up(b.max_numel() * b.dtype().itemsize(), block_size); };
  struct Event { size_t t; bool open; size_t idx; };
  std::vector<Event> events;
  for (size_t i = 0; i < order.size(); i++) {
    const UOp& b = order[i];
    size_t hold = copy_bufs.contains(b) ? last[b] - first[b] + 1 : 0;
    events.push_back({first[b], true, i}), events.push_back({last[b] + 1 + hold, false, i});
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.t != b.t ? a.t < b.t : a.open < b.open; });
  std::map<Lane, std::pair<int64_t, ArenaAllocator>> lanes;
  std::vector<int64_t> offsets(order.size());
  for (auto& e : events) {
    const UOp& b = order[e.idx];
    auto& [peak, alloc] = lanes[lane(b)];
    if (e.open) offsets[e.idx] = alloc.alloc(nbytes(b));
    else alloc.free(offsets[e.idx], nbytes(b));
    peak = std::max(peak, offsets[e.idx] + b.max_numel() * b.dtype().itemsize());
  }
  std::map<Lane, UOp> arenas;
  int64_t before = 0, after = 0;
  for (auto& [l, pa] : lanes) {
    arenas[l] = UOp::new_buffer(l.first, round_up(pa.first, block_size), dtypes::int8);
    after += round_up(pa.first, block_size);
  }
  std::unordered_map<UOp, UOp> replace;
  for (size_t i = 0; i < order.size(); i++) {
    const UOp& b = order[i];
    int64_t n = b.max_numel() * b.dtype().itemsize();
    before += nbytes(b);
    replace[b] = arenas[lane(b)].shrink({{offsets[i], offsets[i] + n}}).bitcast(b.dtype());
  }
  if (settings().DEBUG >= 1 && before != after)
    std::printf("memory reduced from %.2f MB -> %.2f MB, %zu -> %zu bufs\n", before / 1e6, after / 1e6, order.size(), arenas.size());
  return linear.substitute(replace, nullptr, true);
}

}  // namespace tg
