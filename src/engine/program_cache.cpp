#include "engine/program_cache.h"

#include "engine/diskcache.h"
#include "tg/error.h"
#include "util/sha256.h"

namespace tg {

std::string program_cache_key(const std::string& compiler_key, const std::string& src) {
  Sha256 h;
  h.update(compiler_key);
  h.update(std::string_view("\0", 1));
  h.update(src);
  return to_hex(h.digest());
}

std::string compile_cached(Device& dev, const std::string& src) {
  std::string ck = dev.compiler_key();
  if (ck.empty()) return dev.compile(src);
  std::string key = program_cache_key(ck, src);
  if (auto hit = diskcache_get("compile", key)) return *hit;
  std::string bin = dev.compile(src);
  diskcache_put("compile", key, bin);
  return bin;
}

std::unique_ptr<Program> load_cached(Device& dev, const std::string& entry, const std::string& src) {
  std::string ck = dev.compiler_key();
  if (ck.empty()) return dev.load(entry, dev.compile(src));
  std::string key = program_cache_key(ck, src);
  if (auto hit = diskcache_get("compile", key)) {
    try {
      return dev.load(entry, *hit);
    } catch (const Error&) {}  // a stored binary that does not load: compiled afresh below, and its entry replaced
  }
  std::string bin = dev.compile(src);
  auto prg = dev.load(entry, bin);
  diskcache_put("compile", key, bin);
  return prg;
}

}  // namespace tg
