#include "runtime/program_cache.h"

#include "runtime/device.h"
#include "tg/error.h"
#include "util/diskcache.h"
#include "util/sha256.h"

namespace tg {

std::string program_cache_key(const std::string& compiler_key, const std::string& src) {
  Sha256 h;
  h.update(compiler_key);
  h.update(std::string_view("\0", 1));
  h.update(src);
  return to_hex(h.digest());
}

std::string Device::compile_cached(const std::string& src) {
  std::string ck = compiler_key();
  if (ck.empty()) return compile(src);
  std::string key = program_cache_key(ck, src);
  if (auto hit = diskcache_get("compile", key)) return *hit;
  std::string bin = compile(src);
  diskcache_put("compile", key, bin);
  return bin;
}

std::unique_ptr<Program> Device::load_cached(const std::string& entry, const std::string& src) {
  std::string ck = compiler_key();
  if (ck.empty()) return load(entry, compile(src));
  std::string key = program_cache_key(ck, src);
  if (auto hit = diskcache_get("compile", key)) {
    try {
      return load(entry, *hit);
    } catch (const Error&) {}  // a stored binary that does not load: compiled afresh below, and its entry replaced
  }
  std::string bin = compile(src);
  auto prg = load(entry, bin);
  diskcache_put("compile", key, bin);
  return prg;
}

}  // namespace tg
