#pragma once
// Buffer: `size` elements of `dtype` on a device, allocated on first use and returned to the device's LRU cache when
// the last owner lets go. A view shares its base's memory at a byte offset (the base is kept alive by the view).
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "runtime/device.h"
#include "tg/dtype.h"

namespace tg {

class Buffer {
 public:
  // throws tg::Error for an unknown device or a dtype without a size
  Buffer(std::string_view device, size_t size, DType dtype);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  // `size` elements of `dtype` starting `byte_offset` bytes into base (a view of a view is a view of the base)
  static std::shared_ptr<Buffer> view(const std::shared_ptr<Buffer>& base, size_t size, DType dtype, size_t byte_offset);

  const std::string& device() const { return dev_->name(); }
  Device& dev() const { return *dev_; }
  size_t size() const { return size_; }
  DType dtype() const { return dtype_; }
  size_t nbytes() const { return size_ * size_t(dtype_.itemsize()); }
  size_t offset() const { return offset_; }  // bytes into the base; 0 for a base
  bool is_view() const { return base_ != nullptr; }
  const std::shared_ptr<Buffer>& base() const { return base_; }
  Buffer& root() { return base_ ? *base_ : *this; }  // the buffer that owns the memory: a view's base, else this one

  bool is_allocated() const { return base_ ? base_->is_allocated() : ptr_ != nullptr; }
  Buffer& ensure_allocated();
  void deallocate();  // back to the LRU cache; a view only forgets its pointer
  void* ptr();        // the device pointer, allocating first
  // use memory the caller owns (Tensor::from_blob): never allocated, freed or given back here; the caller keeps it valid.
  // With an owner (Tensor::to_mapped: the DISK buffer whose mapping it is), the memory is the owner's, kept alive with
  // this buffer, and changes only through tg: its writes are counted as for allocated memory
  void use_external(void* ptr, std::shared_ptr<const void> owner = nullptr);

  void copyin(const void* host, size_t nbytes);   // nbytes must equal nbytes()
  void copyout(void* host, size_t nbytes);        // nbytes must equal nbytes()
  void copy_from(Buffer& src);                    // same nbytes; on one device by the device, across devices through host memory

  // a count of the writes through the runtime (copyin, copy_from, the kernels and copies run_linear and TinyJit launch
  // into it), kept by the base: a TinyJit replay skips a launch whose buffers' counts did not change since it ran.
  // Memory of the caller's (from_blob) changes unseen: it has none
  std::optional<uint64_t> version() const { return base_ ? base_->version() : external_ && !owner_ ? std::nullopt : std::optional(version_); }
  void touch() { base_ ? base_->touch() : void(++version_); }

 private:
  Device* dev_;
  size_t size_;
  DType dtype_;
  std::shared_ptr<Buffer> base_;
  size_t offset_ = 0;
  void* ptr_ = nullptr;
  bool external_ = false;
  std::shared_ptr<const void> owner_;
  uint64_t version_ = 0;
};

}  // namespace tg
