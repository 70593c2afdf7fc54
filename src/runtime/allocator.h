#pragma once
// LRUAllocator: keeps freed allocations in a cache keyed by byte size and hands them back to the next alloc of that
// size, so a training loop does not hit the system allocator each step. LRU=0 in the environment disables caching.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace tg {

struct AllocStats {
  uint64_t allocs = 0;        // calls to alloc
  uint64_t reused = 0;        // allocs served from the cache
  uint64_t raw_allocs = 0;    // allocs that went to the device
  uint64_t cached = 0;        // allocations now sitting in the cache
  uint64_t cached_bytes = 0;  // their total size
};

class LRUAllocator {
 public:
  using RawAlloc = std::function<void*(size_t)>;  // may throw on out-of-memory; the cache is then freed and it is retried
  using RawFree = std::function<void(void*, size_t)>;
  LRUAllocator(RawAlloc alloc, RawFree free) : raw_alloc_(std::move(alloc)), raw_free_(std::move(free)) {}
  ~LRUAllocator() { free_cache(); }
  LRUAllocator(const LRUAllocator&) = delete;
  LRUAllocator& operator=(const LRUAllocator&) = delete;

  void* alloc(size_t nbytes);
  void free(void* p, size_t nbytes);  // into the cache (or straight to the device with LRU=0)
  void free_cache();                  // returns every cached allocation to the device
  AllocStats stats() const;
  // off: every free goes straight to the device (DISK: a mapping must not outlive its buffer, the file may change)
  void set_caching(bool on) { caching_ = on; }

 private:
  RawAlloc raw_alloc_;
  RawFree raw_free_;
  mutable std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> cache_;
  AllocStats stats_;
  bool caching_ = true;
};

}  // namespace tg
