// libFuzzer harness of tg::gguf::parse_header (tests/tools/fuzz_gguf.sh builds and runs it): every input must parse or
// throw a tg::Error; anything else (another exception, a crash, an ASan/UBSan report) is a finding.
#include <cstdint>

#include "tg/gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    tg::gguf::Header h = tg::gguf::parse_header({data, size}, size);
    for (auto& t : h.tensors) (void)t.numel();
  } catch (const tg::Error&) {
  }
  return 0;
}
