#pragma once
// the message of the tg::Error f() throws, or "(no error)": tests assert what the message names
#include <string>

#include "tg/error.h"

namespace tg::test {
template <class F> std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace tg::test
