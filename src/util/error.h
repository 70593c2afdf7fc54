#pragma once
// Broken invariants of the library itself: a tg::Error marked "internal error", never UB or abort().
#include <string>

#include "tg/error.h"

namespace tg {

[[noreturn]] void internal_error(const std::string& what);

}  // namespace tg
