#include "util/error.h"

namespace tg {

void internal_error(const std::string& what) { throw Error("internal error: " + what); }

}  // namespace tg
