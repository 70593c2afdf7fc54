#pragma once
// The GNU build-id (hex) of the binary this library is linked into, "" where it has none. Disk caches of what this
// build's code computes from an input (lowered programs) key on it: a rebuilt codegen never reads an older build's results.
#include <string>

namespace tg {

const std::string& build_id();

}  // namespace tg
