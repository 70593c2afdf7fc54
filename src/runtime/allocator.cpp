#include "runtime/allocator.h"

#include "tg/error.h"
#include "util/settings.h"

namespace tg {

void* LRUAllocator::alloc(size_t nbytes) {
  {
    std::lock_guard lk(mu_);
    stats_.allocs++;
    if (auto it = cache_.find(nbytes); it != cache_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      stats_.reused++, stats_.cached--, stats_.cached_bytes -= nbytes;
      return p;
    }
    stats_.raw_allocs++;
  }
  try {
    return raw_alloc_(nbytes);
  } catch (...) {
    free_cache();
    return raw_alloc_(nbytes);
  }
}

void LRUAllocator::free(void* p, size_t nbytes) {
  bool lru = true;
  try {
    lru = settings().LRU != 0;
  } catch (const Error&) {}  // free runs in destructors: a bad value of any setting is reported elsewhere, not here
  if (!caching_ || !lru) return raw_free_(p, nbytes);
  std::lock_guard lk(mu_);
  cache_[nbytes].push_back(p);
  stats_.cached++, stats_.cached_bytes += nbytes;
}

void LRUAllocator::free_cache() {
  std::unordered_map<size_t, std::vector<void*>> old;
  {
    std::lock_guard lk(mu_);
    old.swap(cache_);
    stats_.cached = stats_.cached_bytes = 0;
  }
  for (auto& [sz, ps] : old)
    for (void* p : ps) raw_free_(p, sz);
}

AllocStats LRUAllocator::stats() const {
  std::lock_guard lk(mu_);
  return stats_;
}

}  // namespace tg
