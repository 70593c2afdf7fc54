#include "util/env.h"

#include <cerrno>
#include <cstdlib>

#include "tg/error.h"

namespace tg {

int64_t getenv_int(const char* name, int64_t def) {
  const char* v = std::getenv(name);
  if (!v || !*v) return def;
  char* end = nullptr;
  errno = 0;
  long long r = std::strtoll(v, &end, 10);
  if (errno || *end) throw Error(std::string("environment variable ") + name + "='" + v + "' is not an integer");
  return r;
}

std::string getenv_str(const char* name, const std::string& def) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : def;
}

}  // namespace tg
