#pragma once
// Helpers for the runtime tests: scoped environment variables and compile-and-load of a C kernel.
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "runtime/device.h"
#include "util/settings.h"

namespace tg::test {

// sets (or with nullopt unsets) an environment variable for the scope, restoring the old value after; the settings
// snapshot is read again both times (the library reads the environment once)
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value->c_str(), 1);
    else unsetenv(name);
    refresh_settings();
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
    refresh_settings();
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

inline std::unique_ptr<Program> build(const std::string& name, const std::string& src, const char* device = "CPU") {
  Device& d = get_device(device);
  return d.load(name, d.compile(src));
}

}  // namespace tg::test
