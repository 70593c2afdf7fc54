#pragma once
// A map that keeps only its most recently used entries. The caches of schedules and programs are keyed by graphs, and
// a graph with a new constant is a new key: a loop that makes a new value every step (a learning-rate schedule) would
// add an entry per step forever. Bounded, such a loop holds at most cache_capacity() entries in each cache; a program
// whose working set fits never evicts anything.
#include <atomic>
#include <cstddef>
#include <functional>
#include <list>
#include <unordered_map>
#include <utility>

namespace tg {

// the entries each such cache keeps (tests lower it to reach the bound in a few steps)
inline constinit std::atomic<size_t> lru_capacity{1024};
inline size_t cache_capacity() { return lru_capacity.load(std::memory_order_relaxed); }
inline void set_cache_capacity(size_t n) { lru_capacity.store(n < 1 ? 1 : n, std::memory_order_relaxed); }

template <class K, class V, class Hash = std::hash<K>> class LruMap {
 public:
  // keeps cache_capacity() * scale entries (a cache of small entries may keep more)
  explicit LruMap(size_t scale = 1) : scale_(scale) {}
  // the value of k, now the most recently used; nullptr when absent
  V* find(const K& k) {
    auto it = index_.find(k);
    if (it == index_.end()) return nullptr;
    if (it->second != order_.begin()) order_.splice(order_.begin(), order_, it->second);
    return &it->second->second;
  }
  // k -> v (replacing a value of k), the most recently used; on_evict(key, value) sees each entry dropped beyond the capacity
  template <class OnEvict> V& insert(const K& k, V v, OnEvict&& on_evict) {
    if (auto it = index_.find(k); it != index_.end()) order_.erase(it->second), index_.erase(it);
    order_.emplace_front(k, std::move(v));
    index_.emplace(k, order_.begin());
    while (order_.size() > cache_capacity() * scale_) {
      auto& [ok, ov] = order_.back();
      on_evict(ok, ov);
      index_.erase(ok);
      order_.pop_back();
    }
    return order_.front().second;
  }
  V& insert(const K& k, V v) { return insert(k, std::move(v), [](const K&, V&) {}); }
  void erase(const K& k) {
    if (auto it = index_.find(k); it != index_.end()) order_.erase(it->second), index_.erase(it);
  }
  size_t size() const { return order_.size(); }

 private:
  size_t scale_;
  std::list<std::pair<K, V>> order_;  // most recently used first; list nodes never move, so values keep their address
  std::unordered_map<K, typename std::list<std::pair<K, V>>::iterator, Hash> index_;
};

}  // namespace tg
