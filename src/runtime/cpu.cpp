// The CPU device: host memory, kernels compiled by clang into shared objects, loaded with dlopen, threaded launches
// on a persistent pool. The calling convention is in runtime/device.h.
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "runtime/clang.h"
#include "runtime/device.h"
#include "runtime/threadpool.h"
#include "tg/error.h"

namespace tg {

namespace {

using KernelFn = void (*)(void* const*, const long long*, int);

class CpuProgram : public Program {
 public:
  CpuProgram(std::string name, void* handle, KernelFn fn, ThreadPool& pool)
      : Program(std::move(name)), handle_(handle), fn_(fn), pool_(pool) {}
  ~CpuProgram() override { dlclose(handle_); }

  double launch(std::span<void* const> bufs, std::span<const int64_t> vars, const LaunchDims& dims, bool timed) override {
    static_assert(sizeof(long long) == sizeof(int64_t));
    auto vp = reinterpret_cast<const long long*>(vars.data());
    auto st = std::chrono::steady_clock::now();
    int n = dims.global[0];
    if (n <= 1) fn_(bufs.data(), vp, 0);
    else pool_.run(n, [&](int core) { fn_(bufs.data(), vp, core); });
    return timed ? std::chrono::duration<double>(std::chrono::steady_clock::now() - st).count() : 0.0;
  }

 private:
  void* handle_;
  KernelFn fn_;
  ThreadPool& pool_;
};

class CpuDevice : public Device {
 public:
  explicit CpuDevice(std::string name) : Device(std::move(name)), pool_(int(std::max(1u, std::thread::hardware_concurrency()))) {}
  ~CpuDevice() override { lru_.free_cache(); }

  void copyin(void* dst, const void* src, size_t n) override { std::memcpy(dst, src, n); }
  void copyout(void* dst, const void* src, size_t n) override { std::memcpy(dst, src, n); }
  void copy_on_device(void* dst, const void* src, size_t n) override { std::memmove(dst, src, n); }
  // clang before 17 has no __bf16 arithmetic type on x86: there bfloat16 is stored as unsigned short, and the
  // renderer's software bfloat16 rules (bit casts through float32) do all the math. Probed once, on first use
  const CStyleLanguage& renderer() override {
    std::call_once(renderer_once_, [&] {
      try {
        compile_cached("__bf16 tg_probe_bf16(__bf16 x) { return x; }\n");
      } catch (const Error&) {
        renderer_.type_map[DTypeId::bfloat16] = "unsigned short";
      }
    });
    return renderer_;
  }
  std::string compile(const std::string& src) override { return clang_compile(src); }
  std::string compiler_key() override {
    std::string key = clang_identity();
    for (auto& f : clang_flags()) key += " " + f;
    return key;
  }

  std::unique_ptr<Program> load(const std::string& name, const std::string& binary) override {
    // glibc hands back an already loaded object when the path or the file's (device, inode) matches one: the pid
    // and a counter keep this process from naming two files alike, mkstemps other processes; the file can go once
    // it is mapped
    std::string path = (std::filesystem::temp_directory_path() / ("tg-" + std::to_string(getpid()) + "-" + std::to_string(so_count_++) + "-XXXXXX.so")).string();
    int fd = mkstemps(path.data(), 3);
    if (fd < 0) throw Error("cannot create a file for a compiled kernel in " + std::filesystem::temp_directory_path().string());
    struct Unlink { const std::string& p; ~Unlink() { ::unlink(p.c_str()); } } unlink_after{path};
    bool written = true;
    for (size_t off = 0; off < binary.size() && written;) {
      ssize_t n = ::write(fd, binary.data() + off, binary.size() - off);
      if (n > 0) off += size_t(n);
      else written = n < 0 && errno == EINTR;
    }
    if (::close(fd) != 0 || !written) throw Error("cannot write a compiled kernel to " + path);
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) throw Error("cannot load the compiled kernel '" + name + "': " + dlerror());
    link_map* lm = nullptr;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm || path != lm->l_name) {
      std::string other = lm && lm->l_name ? lm->l_name : "?";
      dlclose(h);
      throw Error("loading the kernel '" + name + "' returned another loaded library (" + other + ")");
    }
    void* sym = dlsym(h, name.c_str());
    if (!sym) {
      dlclose(h);
      throw Error("the compiled program has no kernel named '" + name + "'" +
                  (binary.find(name) == std::string::npos ? " (the binary does not contain the name)" : ""));
    }
    return std::make_unique<CpuProgram>(name, h, reinterpret_cast<KernelFn>(sym), pool_);
  }

 protected:
  void* raw_alloc(size_t n) override {
    // 64-byte aligned so vector loads of any width are aligned at offset 0; at least one line, even for size 0
    size_t sz = std::max<size_t>(64, (n + 63) / 64 * 64);
    void* p = std::aligned_alloc(64, sz);
    if (!p) throw Error("CPU: out of memory allocating " + std::to_string(n) + " bytes");
    return p;
  }
  void raw_free(void* p, size_t) override { std::free(p); }

 private:
  ThreadPool pool_;
  std::atomic<uint64_t> so_count_{0};
  ClangRenderer renderer_;
  std::once_flag renderer_once_;
};

}  // namespace

std::unique_ptr<Device> make_cpu_device(const std::string& name) { return std::make_unique<CpuDevice>(name); }

}  // namespace tg
