#pragma once
// tg::nn::state: tinygrad's nn/state.py. State dicts of Modules (tg/nn.h) and safetensors files.
//
//   auto sd = tg::nn::state::safe_load("model.safetensors");   // lazy tensors on DISK:model.safetensors, nothing read
//   tg::nn::state::load_state_dict(net, sd);                    // copies each into the model's tensors, on their devices
//   tg::nn::state::safe_save(tg::nn::state::get_state_dict(net), "out.safetensors");
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tg/nn.h"
#include "tg/tensor.h"

namespace tg::nn::state {

// ** state dicts **

// every tensor the module visits, by its dotted name
std::map<std::string, Tensor> get_state_dict(Module& m);
// the same tensors in visit order
std::vector<Tensor> get_parameters(Module& m);
// replaces each model tensor with the state dict's value moved to the model tensor's device (tinygrad's v.replace);
// returns the loaded tensors in visit order. strict: a model key missing from the dict, or a dict key the model does
// not have, is an error naming them; without strict, missing keys are skipped and extra keys ignored. A shape or dtype
// mismatch is always an error naming the key (shapes () and (1,) are interchangeable, as in tinygrad). realize: copy
// the data now, in one schedule.
std::vector<Tensor> load_state_dict(Module& m, const std::map<std::string, Tensor>& state_dict, bool strict = true,
                                     bool realize = true);

// ** files on DISK **

// tinygrad's Tensor(pathlib.Path(path)): the file's bytes as a lazy uint8 tensor on DISK:<path>; throws tg::Error when
// the file is missing or not a regular file
Tensor file_tensor(const std::string& path);

// ** safetensors (https://huggingface.co/docs/safetensors: u64 little-endian header size N, N bytes of JSON, data) **

struct SafeTensorInfo {
  DType dtype;
  Shape shape;
  int64_t begin = 0, end = 0;  // byte offsets into the data section
};
struct SafeMetadata {
  Tensor file;                                 // the whole file (uint8, on DISK)
  int64_t data_start = 0;                      // 8 + N
  std::map<std::string, SafeTensorInfo> tensors;
  std::map<std::string, std::string> metadata;  // __metadata__ (a non-string value is kept as its JSON text)
};
// reads and validates the header (only 8 + N bytes of the file are read). Throws tg::Error naming the file and what is
// wrong: short file, header size past the end, header not a JSON object, unknown dtype, bad shape, offsets out of
// range or not matching dtype x shape, overlapping tensors
SafeMetadata safe_load_metadata(const std::string& path);
// name -> tensor, each a bitcast view of the file on DISK (nothing read until realized or moved with .to())
std::map<std::string, Tensor> safe_load(const std::string& path);
// writes the tensors (realizing them) with their names, and metadata as __metadata__. The header is padded with spaces
// to a multiple of 8 bytes and tensors are laid out by decreasing element size, so every tensor's data is aligned to
// its element size. Weak dtypes are refused. The file is written next to `path` and renamed over it
void safe_save(const std::map<std::string, Tensor>& tensors, const std::string& path,
               const std::map<std::string, std::string>& metadata = {});

// ** archives (tinygrad's zip_extract / tar_extract) **

// member name -> its bytes as a uint8 tensor: stored members are lazy views of the file on DISK, deflated ones are
// inflated into memory. Throws tg::Error naming the file on a corrupt, truncated or unsupported archive
std::map<std::string, Tensor> zip_extract(const std::string& path);
// regular files only (ustar, GNU and pax long names)
std::map<std::string, Tensor> tar_extract(const std::string& path);

// ** PyTorch checkpoints (torch.save) **

// the tensors of a .pt/.pth file in any of torch's layouts: zip (torch >= 1.6), the legacy pickle stream
// (_use_new_zipfile_serialization=False) and the old tar layout. The pickle runs on a restricted machine that only
// records calls (nothing is executed). Nested dicts flatten to dotted names ({"model": sd} -> "model.fc.weight"),
// list items by index, a bare tensor under ""; non-tensor values are left out. Contiguous tensors are lazy views of the
// file on DISK; strided ones (transposes, slices, broadcasts) are lazy views on the default device (overlapping strides
// are refused). Throws tg::Error naming the file and the problem on a corrupt, truncated or unsupported file
std::map<std::string, Tensor> torch_load(const std::string& path);

// ** tinyfs: tinygrad's content-addressed tensor store (fs_store / fs_load) **
// tinygrad keeps the chunks on a TinyFS server; here the store is a local directory: `store` when given, else
// $TINYFS_DIR, else ~/.cache/tinygrad.cpp/tinyfs ($XDG_CACHE_HOME for ~/.cache). A chunk is 1 MiB, kept in a file named
// by the hex of its 16-byte hash (tinygrad's _hash_1mb, the chunk hash of Tensor::hash).

// stores t's bytes (zero-padded to whole chunks) and, level by level, the chunks of their hashes until one chunk is
// left; returns its hash, the key: 16 uint8 on t's device, equal to t.hash() of the padded bytes. Equal bytes give
// equal keys (and share the chunks on disk)
Tensor fs_store(const Tensor& t, const std::string& store = "");
// the `size` bytes stored under key (16 uint8), as uint8 on the key's device; the caller bitcasts and reshapes. size
// must be the size stored: it fixes the depth of the tree (as in tinygrad, a smaller one may read a chunk of hashes).
// Every chunk read is checked against its hash: a missing or corrupt chunk is a tg::Error naming it and the store
Tensor fs_load(const Tensor& key, int64_t size, const std::string& store = "");

// safetensors dtype names ("F32", "BF16", "BOOL" ...); throw tg::Error for a dtype or name without a mapping
std::string safe_dtype_name(DType dt);
DType safe_dtype(const std::string& name);

}  // namespace tg::nn::state
