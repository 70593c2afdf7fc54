#pragma once
// PyTorch checkpoints (torch.save) read from a byte span, as tinygrad's torch_load reads them: the zip format (torch
// >= 1.6: ARCHIVE/data.pkl and ARCHIVE/data/KEY), the legacy pickle stream (_use_new_zipfile_serialization=False) and
// the oldest tar format ('storages', 'tensors', 'pickle'). The result says where each tensor's storage bytes are and
// how the tensor views them; Tensors are made from it in torch_load.cpp. Nothing here touches Tensors, so
// tests/tools/fuzz drives it directly.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tg/dtype.h"

namespace tg::nn::torchfile {

struct Storage {
  uint64_t offset = 0, size = 0;  // byte range in the file, unless `inflated`
  std::vector<uint8_t> inflated;  // the bytes of a deflated zip member
  bool is_inflated = false;
};
struct TensorView {
  std::string name;  // nested dict keys joined with '.', list items by index ("" for a bare tensor)
  DType dtype;
  size_t storage = 0;  // index into TorchFile::storages
  int64_t offset = 0;  // in elements
  std::vector<int64_t> size, stride;
};
struct TorchFile {
  std::vector<Storage> storages;
  std::vector<TensorView> tensors;
};

// throws tg::Error naming `what` and the problem on a corrupt, truncated or unsupported file. Strides and offsets are
// checked against the storage size; non-tensor values (ints, strings, optimizer hyperparameters) are left out
TorchFile parse(std::span<const uint8_t> file, const std::string& what);

// "FloatStorage" -> float32 ...; throws for a storage type tinygrad.cpp has no dtype for
DType storage_dtype(const std::string& name, const std::string& what);

}  // namespace tg::nn::torchfile
