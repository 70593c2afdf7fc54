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
#include <future>
#include <map>
#include <mutex>

#include "runtime/clang.h"
#include "runtime/device.h"
#include "runtime/program_cache.h"
#include "runtime/threadpool.h"
#include "tg/error.h"
#include "util/diskcache.h"
#include "util/settings.h"

namespace tg {

namespace {

// whether no two sources give one typedef name different definitions (C11 allows the same typedef twice, no more)
bool typedefs_agree(const std::vector<KernelSource>& ks) {
  std::map<std::string, std::string, std::less<>> seen;  // name -> its typedef line
  for (const KernelSource& k : ks) {
    for (size_t at = 0; at < k.src.size();) {
      size_t end = std::min(k.src.find('\n', at), k.src.size());
      std::string_view line(k.src.data() + at, end - at);
      at = end + 1;
      if (!line.starts_with("typedef ")) continue;
      // the name: the last word before the attributes, or before the ';'
      std::string_view decl = line.substr(0, std::min(line.find(" __attribute__"), line.rfind(';')));
      std::string name(decl.substr(decl.rfind(' ') + 1));
      if (auto [it, added] = seen.try_emplace(name, line); !added && it->second != line) return false;
    }
  }
  return true;
}

using KernelFn = void (*)(void* const*, const long long*, int);

// the code a program runs: swapped by a TIERED_COMPILE upgrade, every library it ever ran from kept loaded (a launch
// may still be inside the old code when the new pointer is stored)
struct CpuCode {
  std::atomic<KernelFn> fn;
  std::mutex mu;
  std::vector<std::shared_ptr<void>> libs;  // the loaded libraries, shared by the kernels of one batch
};

class CpuProgram : public Program {
 public:
  CpuProgram(std::string name, std::shared_ptr<void> handle, KernelFn fn, ThreadPool& pool)
      : Program(std::move(name)), code_(std::make_shared<CpuCode>()), pool_(pool) {
    code_->fn.store(fn);
    code_->libs.push_back(std::move(handle));
  }

  double launch(std::span<void* const> bufs, std::span<const int64_t> vars, const LaunchDims& dims, bool timed) override {
    static_assert(sizeof(long long) == sizeof(int64_t));
    auto vp = reinterpret_cast<const long long*>(vars.data());
    KernelFn fn = code_->fn.load(std::memory_order_acquire);
    auto st = std::chrono::steady_clock::now();
    int n = dims.global[0];
    if (n <= 1) fn(bufs.data(), vp, 0);
    else pool_.run(n, [&](int core) { fn(bufs.data(), vp, core); });
    return timed ? std::chrono::duration<double>(std::chrono::steady_clock::now() - st).count() : 0.0;
  }

  Upgrade upgrader() override {
    return [code = code_](std::unique_ptr<Program> better) {
      auto* b = dynamic_cast<CpuProgram*>(better.get());
      if (!b) throw Error("a CPU program can only be upgraded to another CPU program");
      std::scoped_lock lk(code->mu, b->code_->mu);
      code->libs.insert(code->libs.end(), b->code_->libs.begin(), b->code_->libs.end());
      code->fn.store(b->code_->fn.load(), std::memory_order_release);
    };
  }

 private:
  std::shared_ptr<CpuCode> code_;
  ThreadPool& pool_;
};

class CpuDevice : public Device {
 public:
  explicit CpuDevice(std::string name) : Device(std::move(name)), pool_(int(std::max(1u, std::thread::hardware_concurrency())), 2000) {
    early_pid_ = getpid();
    early_bf16_ = std::async(std::launch::async, [this, &set = settings()]() -> std::optional<Bf16> {
      PinSettings pin(set);
      mark_background_compile_thread();
      try {
        return bf16_answer(compiler_key());
      } catch (...) {
        return std::nullopt;  // no compiler: renderer() reports it
      }
    }).share();
  }
  ~CpuDevice() override { lru_.free_cache(); }

  void copyin(void* dst, const void* src, size_t n) override { std::memcpy(dst, src, n); }
  void copyout(void* dst, const void* src, size_t n) override { std::memcpy(dst, src, n); }
  void copy_on_device(void* dst, const void* src, size_t n) override { std::memmove(dst, src, n); }
  // clang before 17 has no __bf16 arithmetic type on x86: there bfloat16 is stored as unsigned short, and the
  // renderer's software bfloat16 rules (bit casts through float32) do all the math. Probed on first use, the answer
  // kept in the disk cache per compiler (a failed compile is not cached as a program: each process would rerun clang).
  // With an empty cache that is ~0.2 s of clang (`--version` for the key, then the probe) before the first kernel can
  // be rendered, so the device starts both on a thread when it opens: they overlap building and scheduling the first
  // graph. renderer() takes that answer where it was found under the compiler key it has now, else asks again itself
  const CStyleLanguage& renderer() override {
    std::call_once(renderer_once_, [&] {
      std::optional<Bf16> early;
      // a forked child has no probing thread: its answer counts only if it came before the fork
      if (getpid() == early_pid_ || early_bf16_.wait_for(std::chrono::seconds(0)) == std::future_status::ready) early = early_bf16_.get();
      std::string key = compiler_key();
      Bf16 a = early && early->key == key ? *early : bf16_answer(key);
      if (a.probed) diskcache_put("cpu_bf16", key, a.native ? "1" : "0");
      if (!a.native) renderer_.type_map[DTypeId::bfloat16] = "unsigned short";
    });
    return renderer_;
  }
  int64_t simd_width() override { return renderer_.simd_width(); }  // its caps are the host's, set when it is built
  std::string compile(const std::string& src) override { return clang_compile(src); }
  std::string compiler_key() override {
    std::string key = clang_identity();
    for (auto& f : clang_flags()) key += " " + f;
    return key;
  }

  // each source's global names renamed by #defines around it; all sources in one translation unit, as clang spends
  // about as long setting up a unit as compiling a small kernel. Sources whose typedefs disagree (one name, two types)
  // cannot share one: then each is a unit of its own, still in one clang invocation
  std::optional<std::string> compile_batch(const std::vector<KernelSource>& ks, bool quick) override {
    std::vector<std::string> srcs;
    for (size_t i = 0; i < ks.size(); i++) {
      std::string defs, undefs;
      for (const std::string& g : ks[i].globals) defs += "#define " + g + " " + batch_symbol(i, g) + "\n", undefs += "#undef " + g + "\n";
      srcs.push_back(defs + ks[i].src + (ks[i].src.ends_with('\n') ? "" : "\n") + undefs);
    }
    if (!typedefs_agree(ks)) return clang_compile(srcs, quick);
    std::string unit;
    for (const std::string& s : srcs) unit += s;
    return clang_compile(std::vector<std::string>{unit}, quick);
  }
  bool compiles_in_parallel() const override { return true; }

  std::unique_ptr<Program> load(const std::string& name, const std::string& binary) override {
    return std::move(load_many({name}, binary)[0]);
  }
  std::vector<std::unique_ptr<Program>> load_many(const std::vector<std::string>& names, const std::string& binary) override {
    std::shared_ptr<void> h = open_library(names.size() == 1 ? "the compiled kernel '" + names[0] + "'" : "a batch of kernels", binary);
    std::vector<std::unique_ptr<Program>> out;
    for (const std::string& name : names) {
      void* sym = dlsym(h.get(), name.c_str());
      if (!sym)
        throw Error("the compiled program has no kernel named '" + name + "'" +
                    (binary.find(name) == std::string::npos ? " (the binary does not contain the name)" : ""));
      out.push_back(std::make_unique<CpuProgram>(name, h, reinterpret_cast<KernelFn>(sym), pool_));
    }
    return out;
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
  // the shared object in `binary`, loaded (closed when the last program using it goes)
  std::shared_ptr<void> open_library(const std::string& what, const std::string& binary) {
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
    if (!h) throw Error("cannot load " + what + ": " + dlerror());
    link_map* lm = nullptr;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm || path != lm->l_name) {
      std::string other = lm && lm->l_name ? lm->l_name : "?";
      dlclose(h);
      throw Error("loading " + what + " returned another loaded library (" + other + ")");
    }
    return std::shared_ptr<void>(h, [](void* p) { dlclose(p); });
  }

  // whether clang (compiler_key `key`) has an arithmetic __bf16: from the disk cache, else compiling a probe (probed:
  // the answer is not stored yet)
  struct Bf16 { std::string key; bool native, probed; };
  Bf16 bf16_answer(const std::string& key) {
    if (std::optional<std::string> has = diskcache_get("cpu_bf16", key)) return {key, *has == "1", false};
    try {
      compile("__bf16 tg_probe_bf16(__bf16 x) { return x; }\n");
      return {key, true, true};
    } catch (const Error&) {
      return {key, false, true};
    }
  }

  ThreadPool pool_;
  std::atomic<uint64_t> so_count_{0};
  ClangRenderer renderer_;
  std::once_flag renderer_once_;
  std::shared_future<std::optional<Bf16>> early_bf16_;  // the answer looked up when the device opened
  pid_t early_pid_ = 0;
};

}  // namespace

std::unique_ptr<Device> make_cpu_device(const std::string& name) { return std::make_unique<CpuDevice>(name); }

}  // namespace tg
