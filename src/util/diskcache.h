#pragma once
// A small key -> bytes store in sqlite, shared by every cache on disk (compiled programs, later BEAM results).
// The file is $CACHEDB, else ~/.cache/tinygrad.cpp/cache.db; CACHELEVEL=0 turns it off. It never throws: a missing,
// corrupt or locked database just misses (and warns once at DEBUG>=1), so callers fall back to doing the work.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tg {

// settings().CACHEDB: $CACHEDB, else $XDG_CACHE_HOME (or ~/.cache) + /tinygrad.cpp/cache.db
const std::string& cachedb_path();
// the stored value, or nullopt when absent, disabled or unreadable
std::optional<std::string> diskcache_get(std::string_view table, std::string_view key);
// stores (replaces) the value; silently does nothing when disabled or unwritable
void diskcache_put(std::string_view table, std::string_view key, std::string_view val);

struct DiskCacheStats {
  uint64_t hits = 0, misses = 0, puts = 0, errors = 0;
};
DiskCacheStats diskcache_stats();

}  // namespace tg
