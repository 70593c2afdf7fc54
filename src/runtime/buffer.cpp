#include "runtime/buffer.h"

#include <sstream>
#include <vector>

#include "tg/error.h"

namespace tg {

Buffer::Buffer(std::string_view device, size_t size, DType dtype) : dev_(&get_device(device)), size_(size), dtype_(dtype) {
  if (dtype.itemsize() <= 0 || dtype.is_weak()) {
    std::ostringstream os;
    os << "Buffer: dtype " << dtype << " cannot be stored in memory";
    throw Error(os.str());
  }
}

Buffer::~Buffer() {
  if (!base_ && ptr_ && !external_) dev_->free(ptr_, nbytes());
}

std::shared_ptr<Buffer> Buffer::view(const std::shared_ptr<Buffer>& base, size_t size, DType dtype, size_t byte_offset) {
  const std::shared_ptr<Buffer>& root = base->base_ ? base->base_ : base;
  size_t off = base->offset_ + byte_offset;
  auto v = std::make_shared<Buffer>(root->device(), size, dtype);
  if (off + v->nbytes() > root->nbytes()) {
    std::ostringstream os;
    os << "Buffer::view: " << size << " x " << dtype << " at byte " << off << " does not fit in a buffer of " << root->nbytes()
       << " bytes";
    throw Error(os.str());
  }
  v->base_ = root;
  v->offset_ = off;
  return v;
}

Buffer& Buffer::ensure_allocated() {
  if (base_) base_->ensure_allocated();
  else if (!ptr_) ptr_ = dev_->alloc(nbytes());
  return *this;
}

void Buffer::deallocate() {
  if (external_) return;
  if (!base_ && ptr_) dev_->free(ptr_, nbytes());
  ptr_ = nullptr;
}

void Buffer::use_external(void* ptr, std::shared_ptr<const void> owner) {
  if (base_) throw Error("Buffer::use_external: a view cannot own external memory");
  if (ptr_ && !external_) dev_->free(ptr_, nbytes());
  ptr_ = ptr, external_ = true, owner_ = std::move(owner);
}

void* Buffer::ptr() {
  ensure_allocated();
  return base_ ? static_cast<char*>(base_->ptr_) + offset_ : ptr_;
}

static void check_size(const char* what, size_t want, size_t got) {
  if (want != got)
    throw Error(std::string("Buffer::") + what + ": size mismatch, buffer has " + std::to_string(want) + " bytes, got " +
                std::to_string(got));
}

void Buffer::copyin(const void* host, size_t n) {
  check_size("copyin", nbytes(), n);
  if (n) dev_->copyin(ptr(), host, n);
  touch();
}

void Buffer::copyout(void* host, size_t n) {
  check_size("copyout", nbytes(), n);
  if (n) dev_->copyout(host, ptr(), n);
}

void Buffer::copy_from(Buffer& src) {
  check_size("copy_from", nbytes(), src.nbytes());
  touch();
  if (&src.dev() == dev_) return nbytes() ? dev_->copy_on_device(ptr(), src.ptr(), nbytes()) : void();
  std::vector<char> tmp(nbytes());
  src.copyout(tmp.data(), tmp.size());
  copyin(tmp.data(), tmp.size());
}

}  // namespace tg
