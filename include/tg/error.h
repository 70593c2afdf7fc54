#pragma once
// Every error tinygrad.cpp raises is a tg::Error: bad input, and broken invariants of the library (marked "internal").
#include <stdexcept>
#include <string>

namespace tg {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace tg
