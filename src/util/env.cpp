#include "util/env.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <utility>
#include <vector>

#include "tg/context.h"
#include "tg/error.h"

namespace tg {

namespace {
std::vector<std::pair<std::string, int64_t>>& overrides() {  // the live Contexts' values, innermost last
  static std::vector<std::pair<std::string, int64_t>> o;
  return o;
}
}  // namespace

// a Context that names a library knob makes settings() read them again, on entry and on exit
Context::Context(std::initializer_list<std::pair<std::string, int64_t>> values) : depth_(overrides().size()) {
  bool knob = false;
  for (const auto& kv : values) overrides().push_back(kv), knob |= is_setting(kv.first);
  if (knob) refresh_settings();
}
Context::~Context() {
  auto& o = overrides();
  bool knob = std::any_of(o.begin() + ptrdiff_t(depth_), o.end(), [](const auto& kv) { return is_setting(kv.first); });
  o.resize(depth_);
  if (knob) refresh_settings();
}

int64_t context_value(const std::string& name, int64_t def) { return getenv_int(name.c_str(), def); }

int64_t getenv_int(const char* name, int64_t def) {
  for (auto it = overrides().rbegin(); it != overrides().rend(); ++it)
    if (it->first == name) return it->second;
  const char* v = std::getenv(name);
  if (!v || !*v) return def;
  char* end = nullptr;
  errno = 0;
  long long r = std::strtoll(v, &end, 10);
  if (errno || *end) throw Error(std::string("environment variable ") + name + "='" + v + "' is not an integer");
  return r;
}

std::string getenv_str(const char* name, const std::string& def) {
  for (auto it = overrides().rbegin(); it != overrides().rend(); ++it)
    if (it->first == name) return std::to_string(it->second);
  const char* v = std::getenv(name);
  return v ? std::string(v) : def;
}

}  // namespace tg
