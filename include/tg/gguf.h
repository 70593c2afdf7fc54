#pragma once
// tg::gguf: GGUF model files (ggml's docs/gguf.md, versions 2 and 3, little-endian), tinygrad's llm/gguf.py.
// Written by tg::gguf::write (version 3).
//
//   tg::gguf::GGUF g = tg::gguf::gguf_load("model.gguf");  // reads the header only; the file stays on DISK
//   int64_t ctx = g.kv.at("llama.context_length").as_int();
//   tg::Tensor w = g.tensor("blk.0.attn_q.weight");          // lazy: realized, its bytes go to the device and decode there
//   auto sd = g.state_dict();                                // every tensor, by name
//
// Multi-part models (NAME-00001-of-0000N.gguf ...) load from their first part.
// Tensors keep tinygrad's order of dims (ggml's ne reversed: a ggml [ne0=4096, ne1=32000] matrix is (32000, 4096)).
// Native ggml types (F32, F16, BF16, F64, I8..I64) come out in their own dtype; quantized blocks come out as float32,
// dequantized by a Tensor graph of bit ops, shifts and casts on the raw bytes (tinygrad's ggml_data_to_tensor).
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "tg/tensor.h"

namespace tg::gguf {

// ** metadata values **

enum class ValueType : uint32_t { UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 };
std::string value_type_name(ValueType t);  // "UINT8" ... "FLOAT64"

struct Value {
  struct Array {
    ValueType type = ValueType::UINT8;  // the element type (kept for empty arrays too)
    std::vector<Value> items;
    bool operator==(const Array&) const = default;
  };
  // the alternatives are in ValueType's order: v.index() is the type's number
  std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool, std::string, Array, uint64_t, int64_t, double> v;

  ValueType type() const { return ValueType(v.index()); }
  bool is_int() const;     // one of the 8 integer types
  bool is_float() const;   // FLOAT32 or FLOAT64
  // typed access; each throws tg::Error naming the wanted and the actual type
  int64_t as_int() const;  // any integer type (a UINT64 past INT64_MAX is an error)
  double as_float() const; // any integer or float type
  bool as_bool() const;
  const std::string& str() const;
  const Array& arr() const;
  bool operator==(const Value&) const = default;
};

// ** ggml tensor types **

// ggml's type numbers (ggml.h); the reader knows the block size of each, ggml_data_to_tensor decodes the supported ones
enum class GGMLType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9, Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13,
  Q6_K = 14, Q8_K = 15, IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22, IQ4_XS = 23,
  I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30, TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39,
};
bool ggml_type_known(uint32_t type);         // one of the numbers above
std::string ggml_type_name(uint32_t type);   // "Q4_K", or "unknown type 99"
bool ggml_type_supported(GGMLType type);     // ggml_data_to_tensor decodes it
// elements per block and bytes per block (1 and the itemsize for native types); throws for an unknown type
std::pair<int64_t, int64_t> ggml_block(GGMLType type);

// the n elements held by raw ggml data `t` (a 1-D uint8 tensor of exactly n / block * block bytes, on a device that runs
// kernels) as a 1-D tensor: the native dtype for F32/F16/BF16/F64/I8..I64, float32 for the quantized types.
// Throws tg::Error for an unsupported type, n not a multiple of the block size, or a size that does not match.
// A native type's data may also come already typed (what ggml_data_to_device gives): it is returned as it is
Tensor ggml_data_to_tensor(const Tensor& t, int64_t n, GGMLType type);
// raw ggml data `t` (as above, e.g. a view of a DISK file) moved to `device` in the form its readers want: a native type
// reinterpreted where it lies, so the copy is typed and the kernels read float16s (not bytes assembled into them on every
// use); quantized blocks as their bytes. ggml_data_to_tensor of the result decodes it. On the CPU no copy: the file's
// pages where they lie (Tensor::to_mapped), so a model costs its page cache, not a copy of it
Tensor ggml_data_to_device(const Tensor& t, int64_t n, GGMLType type, const std::string& device);

// ** ggml's integer dot products (ggml_vec_dot_q8_0_q8_0, ggml_vec_dot_q4_K_q8_K) **
// x @ W^T for W of a type with an integer dot (Q8_0, Q4_K): x's rows quantized to int8 per block as ggml-cpu quantizes
// activations (Q8_0 blocks of 32 for Q8_0, Q8_K blocks of 256 for Q4_K), multiplied with W's integers, summed in int32
// per block of 32, then the blocks' float scales; a Tensor graph on W's raw bytes that fuses into one kernel with its read
bool ggml_dot_supported(GGMLType type);
struct Q8Rows {
  Tensor q;  // int8 (rows, K)
  Tensor d;  // float32 (rows, K / block): a block's value is q * d
};
// x (rows, K) float32 as the activations ggml multiplies with `type`'s blocks: Q8_0 (d = amax / 127 rounded to float16,
// q = round(x * 127 / amax)) or Q8_K (d = max / -127 of the element of the largest magnitude, q = round(x / d))
Q8Rows ggml_quantize_rows(const Tensor& x, GGMLType type);
// the int32 sums of products of each block of 32 of W (`raw`, n rows of K) with xq's: (rows, n, K / 32)
Tensor ggml_block_dots(const Q8Rows& xq, const Tensor& raw, int64_t n, GGMLType type);
// x (rows, K) float32 @ W^T, W (n, K) as raw ggml bytes of `type`: (rows, n) float32
// what ggml_dot reads of a Q4_K W, made once where W is realized (a model's weight; without it ggml_dot makes it in
// each call, which the scheduler pays for in every graph): its bytes as 32-bit words and as float16 (views of a realized
// buffer, no copies) and its 6-bit scales and mins decoded to bytes, (n, K / 256, 16), 8 scales then 8 mins a super-block
struct DotWeight {
  Tensor words, halves, scales;
};
DotWeight ggml_dot_weight(const Tensor& raw, int64_t n, int64_t K, GGMLType type);
Tensor ggml_dot(const Tensor& x, const Tensor& raw, int64_t n, GGMLType type, const std::optional<DotWeight>& w = std::nullopt);
// Q4_K's W (n, K) as float32 from its DotWeight, equal bit for bit to ggml_data_to_tensor's: the graph a prompt's GEMM
// packs into panels (W^T's columns as vector lanes), read as 32-bit words of 8 nibbles and with each sub-block's
// d * scale and dmin * min precomputed along the rows
Tensor ggml_dequant_rows(const DotWeight& w, int64_t n, int64_t K);

// ** files **

struct TensorInfo {
  std::string name;
  Shape shape;            // tinygrad order: ggml's ne reversed
  GGMLType type;
  uint64_t offset = 0;    // from the start of the data section (a multiple of the alignment)
  int64_t nbytes = 0;     // numel / block * block bytes
  uint32_t split = 0;     // which part of a split model holds it (GGUF::parts)
  int64_t numel() const;
};

struct Header {
  uint32_t version = 3;
  std::map<std::string, Value> kv;    // metadata, by key
  std::vector<std::string> kv_order;  // the keys in file order
  std::vector<TensorInfo> tensors;    // in file order
  uint64_t alignment = 32;            // general.alignment, or 32
  uint64_t data_start = 0;            // where the data section begins in the file (the header's end rounded up)
};

// parses the header of a GGUF file whose first bytes are `bytes` and whose whole size is `file_size` (>= bytes.size()).
// Every count, length and tensor range is checked against the file size before anything is allocated; anything wrong
// (bad magic or version, truncation, absurd counts: more than the rest of the file holds, over 2^25 metadata values in
// all, arrays nested over 16 deep, over 2^54 elements in a tensor; unknown value or tensor type, bad alignment, a duplicate key or
// tensor name, tensor data out of range or misaligned, ...) is a tg::Error that starts with `what` and names the key or
// tensor at fault. Reading past bytes.size() (but not past file_size) throws NeedMore: call again with more bytes
struct NeedMore {
  uint64_t bytes;  // at least this many bytes are needed
};
Header parse_header(std::span<const uint8_t> bytes, uint64_t file_size, const std::string& what = "gguf");

struct GGUF : Header {  // the header of the (first) file, and the tensors of every part
  struct Part {
    Tensor file;  // the whole file as a uint8 tensor on DISK:<path>
    uint64_t data_start = 0;
  };
  std::vector<Part> parts;  // the file, or each file of a split model in order
  // the tensor `name`, decoded on `device` ("" = the default device); nothing is read until it is realized
  Tensor tensor(const std::string& name, const std::string& device = "") const;
  const TensorInfo& info(const std::string& name) const;  // throws tg::Error for a name the file does not hold
  std::map<std::string, Tensor> state_dict(const std::string& device = "") const;
};

// reads and checks the header of the GGUF file at `path` through the DISK device (only the header's bytes are read).
// A model split over files (split.count > 1) is loaded from its first part, NAME-00001-of-0000N.gguf, which names the
// others; each part must say which it is (split.no, split.count), and a tensor name may appear in one part only
GGUF gguf_load(const std::string& path);

// ** writing **

using KV = std::vector<std::pair<std::string, Value>>;
// a GGUF v3 file: the metadata in the order given, then the tensors' infos, then their data, each at a multiple of the
// alignment (general.alignment if kv sets it, an unsigned integer power of two, else 32). A tensor's dtype picks its
// ggml type (float32 F32, float16 F16, bfloat16 BF16, float64 F64, int8..int64 I8..I64); its shape is written as ggml's
// ne (reversed), at most 4 dims. Its data is realized and read to the host. A duplicate key or tensor name, an array
// whose items are not all of its element type, arrays nested over 16 deep, another dtype or a bad alignment: tg::Error
std::vector<uint8_t> serialize(const KV& kv, const std::vector<std::pair<std::string, Tensor>>& tensors);
void write(const std::string& path, const KV& kv, const std::vector<std::pair<std::string, Tensor>>& tensors);

}  // namespace tg::gguf
