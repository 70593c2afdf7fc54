#pragma once
// A flat open-addressing map keyed by UOp (holding a reference, so a key's address is never reused while it is in
// the map). The rewrite engine's memo tables live here: no per-entry allocation, one probe sequence per lookup.
#include <algorithm>
#include <vector>

#include "uop/uop.h"

namespace tg {

inline size_t node_ptr_hash(const UOpNode* n) {
  uint64_t h = uint64_t(reinterpret_cast<uintptr_t>(n)) * 0x9E3779B97F4A7C15ull;
  return size_t(h ^ (h >> 29));
}

template <class V> class NodeMap {
 public:
  NodeMap(size_t cap = 16) { reset(cap); }
  V* find(const UOp& k) {
    if (!count_) return nullptr;
    for (size_t i = node_ptr_hash(k.get()) & mask_;; i = (i + 1) & mask_) {
      if (!slots_[i].k) return nullptr;
      if (slots_[i].k == k) return &slots_[i].v;
    }
  }
  bool contains(const UOp& k) { return find(k) != nullptr; }
  // returns the value slot for k, default-constructing it when absent; second is true when it was inserted
  std::pair<V*, bool> try_emplace(const UOp& k) {
    if ((count_ + 1) * 2 > slots_.size()) grow();
    for (size_t i = node_ptr_hash(k.get()) & mask_;; i = (i + 1) & mask_) {
      if (!slots_[i].k) { slots_[i].k = k; count_++; used_.push_back(uint32_t(i)); return {&slots_[i].v, true}; }
      if (slots_[i].k == k) return {&slots_[i].v, false};
    }
  }
  V& operator[](const UOp& k) { return *try_emplace(k).first; }
  size_t size() const { return count_; }
  // empty the map; a map that grew big shrinks back so clearing stays cheap
  void clear() {
    if (slots_.size() > 4096) { reset(16); return; }
    for (uint32_t i : used_) slots_[i] = Slot{};
    used_.clear();
    count_ = 0;
  }

 private:
  struct Slot { UOp k; V v; };
  void reset(size_t cap) {
    size_t c = 16;
    while (c < cap) c <<= 1;
    slots_.clear();
    slots_.resize(c);
    used_.clear();
    mask_ = c - 1, count_ = 0;
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    reset(old.size() * 2);
    for (auto& s : old) if (s.k) { auto [v, _] = try_emplace(s.k); *v = std::move(s.v); }
  }
  std::vector<Slot> slots_;
  std::vector<uint32_t> used_;  // occupied slots, so clearing costs what was inserted
  size_t mask_ = 0, count_ = 0;
};

// tuplize_compare's results by pair of nodes; the keys are raw pointers: the caller keeps the nodes alive
class TuplizeMemo {
 public:
  int8_t* find(const UOpNode* a, const UOpNode* b) {
    if (!count_) return nullptr;
    for (size_t i = slot(a, b);; i = (i + 1) & mask_) {
      if (!slots_[i].a) return nullptr;
      if (slots_[i].a == a && slots_[i].b == b) return &slots_[i].v;
    }
  }
  void set(const UOpNode* a, const UOpNode* b, int8_t v) {
    if ((count_ + 1) * 2 > slots_.size()) {
      std::vector<Slot> old(std::max<size_t>(64, 2 * slots_.size()));
      old.swap(slots_), mask_ = slots_.size() - 1, count_ = 0;
      for (auto& s : old) if (s.a) set(s.a, s.b, s.v);
    }
    size_t i = slot(a, b);
    while (slots_[i].a) i = (i + 1) & mask_;
    slots_[i] = {a, b, v}, count_++;
  }

 private:
  struct Slot { const UOpNode *a = nullptr, *b = nullptr; int8_t v = 0; };
  size_t slot(const UOpNode* a, const UOpNode* b) const { return (node_ptr_hash(a) ^ (node_ptr_hash(b) >> 7)) & mask_; }
  std::vector<Slot> slots_;  // allocated on the first result
  size_t mask_ = 0, count_ = 0;
};

}  // namespace tg
