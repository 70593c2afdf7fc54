// libFuzzer harness of torch_load's parser, tg::nn::torchfile::parse (tests/tools/fuzz_torch.sh builds and runs it):
// zip, tar and legacy pickle layouts and the pickle machine. Every input must parse or throw a tg::Error; anything
// else (another exception, a crash, a hang, an ASan/UBSan report) is a finding.
#include <cstdint>

#include "nn/torch_file.h"
#include "tg/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    tg::nn::torchfile::TorchFile f = tg::nn::torchfile::parse({data, size}, "fuzz");
    for (auto& t : f.tensors) (void)t.size.size();
  } catch (const tg::Error&) {
  }
  return 0;
}
