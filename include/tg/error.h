#pragma once
// Every error tinygrad.cpp raises on bad input is a tg::Error; internal invariant failures are too, marked "internal".
#include <stdexcept>
#include <string>

namespace tg {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// throws tg::Error("internal error: ...") when an invariant of the library itself is broken
[[noreturn]] void internal_error(const std::string& what);

}  // namespace tg
