// The DISK device (DISK:/path, tinygrad's ops_disk.py): a buffer is a private (copy-on-write) mapping of the first
// nbytes of the file, made when the buffer is first used (so building a DISK tensor reads nothing). Views are byte
// offsets into it (Buffer::view). copyout reads and copyin writes through the file descriptor; the mapping shows
// the file's pages as they are, and a page written through it (a CPU tensor of Tensor::to_mapped, assigned to)
// becomes this process's own copy, never written back. DISK runs no kernels: the scheduler only ever moves bytes in
// and out of it with COPY.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "runtime/device.h"
#include "util/error.h"

namespace tg {

namespace {

class DiskDevice : public Device {
 public:
  explicit DiskDevice(std::string name) : Device(std::move(name)), path_(name_.substr(name_.find(':') + 1)) {
    lru_.set_caching(false);  // a cached mapping would keep showing a file that was replaced since
  }
  ~DiskDevice() override { lru_.free_cache(); }

  // read with pread, not from the mapping: a mapped page read once stays in this process's RSS as long as the mapping
  // lives (a model's weights counted twice), and a file truncated under the mapping would fault (SIGBUS) instead of failing
  void copyout(void* dst, const void* src, size_t n) override {
    auto [base, m] = find(src, n, "read");
    off_t off = off_t(static_cast<const char*>(src) - base);
    for (size_t done = 0; done < n;) {
      ssize_t r = ::pread(m.fd, static_cast<char*>(dst) + done, n - done, off + off_t(done));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) throw Error("DISK: reading " + std::to_string(n) + " bytes from " + path_ + " failed: " + std::strerror(errno));
      if (r == 0) throw Error("DISK: " + path_ + " is shorter than when it was mapped (was it truncated or rewritten?)");
      done += size_t(r);
    }
  }
  void copyin(void* dst, const void* src, size_t n) override {
    auto [base, m] = find(dst, n, "write");
    if (!m.writable) throw Error("DISK: " + path_ + " is not writable");
    off_t off = off_t(static_cast<const char*>(dst) - base);
    for (size_t done = 0; done < n;) {
      ssize_t w = ::pwrite(m.fd, static_cast<const char*>(src) + done, n - done, off + off_t(done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) throw Error("DISK: writing " + std::to_string(n) + " bytes to " + path_ + " failed: " + std::strerror(errno));
      done += size_t(w);
    }
  }
  bool host_mapped() const override { return true; }
  const CStyleLanguage& renderer() override { throw no_kernels(); }
  std::string compile(const std::string&) override { throw no_kernels(); }
  std::unique_ptr<Program> load(const std::string& name, const std::string&) override {
    throw Error("DISK (" + path_ + ") cannot load kernel " + name);
  }

 protected:
  void* raw_alloc(size_t n) override {
    int fd = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
    bool writable = fd >= 0;
    if (fd < 0 && (errno == EACCES || errno == EROFS || errno == EPERM)) fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error("DISK: cannot open " + path_ + ": " + std::strerror(errno));
    struct stat st{};
    if (::fstat(fd, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))) {
      ::close(fd);
      throw Error("DISK: " + path_ + " is not a regular file");
    }
    if (S_ISREG(st.st_mode) && size_t(st.st_size) < n) {
      ::close(fd);
      throw Error("DISK: " + path_ + " has " + std::to_string(st.st_size) + " bytes, a buffer of " + std::to_string(n) + " bytes does not fit");
    }
    void* p;
    if (n == 0) p = new char[1];  // nothing to map; a distinct address so the table below stays a function of it
    else if ((p = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0)) == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      throw Error("DISK: cannot map " + std::to_string(n) + " bytes of " + path_ + ": " + std::strerror(e));
    }
    std::lock_guard lk(mu_);
    maps_[static_cast<const char*>(p)] = {n, fd, writable};
    return p;
  }
  void raw_free(void* p, size_t n) override {
    Mapping m;
    {
      std::lock_guard lk(mu_);
      auto it = maps_.find(static_cast<const char*>(p));
      if (it == maps_.end()) return;
      m = it->second;
      maps_.erase(it);
    }
    if (n == 0) delete[] static_cast<char*>(p);
    else ::munmap(p, n);
    ::close(m.fd);
  }

 private:
  Error no_kernels() const {
    return Error("DISK (" + path_ + ") cannot run kernels: only a contiguous byte range of the file (shrink of the flat tensor, "
                 "reshape, bitcast) can be copied out; copy that to a compute device (.to(\"CPU\")) and compute there");
  }
  struct Mapping {
    size_t len = 0;
    int fd = -1;
    bool writable = false;
  };
  // the mapping holding [p, p+n)
  std::pair<const char*, Mapping> find(const void* p, size_t n, const char* what) {
    auto c = static_cast<const char*>(p);
    std::lock_guard lk(mu_);
    auto it = maps_.upper_bound(c);
    if (it == maps_.begin() || (--it, c + n > it->first + it->second.len))
      internal_error("DISK: " + std::string(what) + " of " + std::to_string(n) + " bytes outside any mapping of " + path_);
    return *it;
  }
  std::string path_;
  std::mutex mu_;
  std::map<const char*, Mapping> maps_;
};

}  // namespace

std::unique_ptr<Device> make_disk_device(const std::string& name) { return std::make_unique<DiskDevice>(name); }

}  // namespace tg
