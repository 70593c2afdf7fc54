#pragma once
// Device (tinygrad's Compiled): the small table every backend fills in (raw alloc / free, copyin / copyout, renderer,
// compile, load) and what the base class builds on it (the LRU allocator, the program cache), and Program, a loaded
// kernel that can be launched. Devices are opened once per name by get_device() and live until exit. Adding a backend
// is one file with its Device subclass and make_<kind>_device, a renderer dialect, and a row in the table of
// runtime/device.cpp; docs/runtime.md has the contract.
//
// CPU kernel calling convention (what the C renderer emits and CpuDevice calls):
//
//   void <name>(void* const* bufs, const long long* vars, int core_id);
//
// bufs[i] is the i-th buffer argument (cast it to its element type), vars[j] the j-th integer variable, and core_id
// the thread index 0..global[0]-1 of a threaded launch (always 0 otherwise). The symbol must be exported (not static);
// load() looks up the symbol it is given, so the renderer may emit this as an entry wrapper around tinygrad's typed kernel.
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "renderer/cstyle.h"
#include "runtime/allocator.h"
#include "tg/device.h"

namespace tg {

// launch geometry; on the CPU global[0] is the number of threads (core_id runs 0..global[0]-1), the rest is unused
struct LaunchDims {
  std::array<int, 3> global{1, 1, 1}, local{1, 1, 1};
};

class Program {
 public:
  virtual ~Program() = default;
  // runs the kernel and waits for it; returns the seconds it took when timed, else 0
  virtual double launch(std::span<void* const> bufs, std::span<const int64_t> vars, const LaunchDims& dims = {},
                        bool timed = false) = 0;
  const std::string& name() const { return name_; }
  // TIERED_COMPILE: a function that, called later (from any thread, after this program may be gone), makes this
  // program's launches run the code of `better` (the same kernel compiled with optimization); nullptr where the
  // device cannot swap code under a loaded program (the default)
  using Upgrade = std::function<void(std::unique_ptr<Program> better)>;
  virtual Upgrade upgrader() { return nullptr; }

 protected:
  explicit Program(std::string name) : name_(std::move(name)) {}
  std::string name_;
};

// a kernel's source for compile_batch: its entry point and the global names it defines (renamed in a batch)
struct KernelSource {
  std::string entry, src;
  std::vector<std::string> globals;
  double ops = -1, mem = 0;  // its FLOPs and bytes moved where known (the engine's estimates; TIERED_COMPILE)
};
// the name `name` of the i-th kernel of a batch gets in the batch's binary
inline std::string batch_symbol(size_t i, const std::string& name) { return "tgb" + std::to_string(i) + "_" + name; }

class Device {
 public:
  virtual ~Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  const std::string& name() const { return name_; }

  // memory: opaque device pointers; byte offsets into an allocation are plain pointer arithmetic
  void* alloc(size_t nbytes) { return lru_.alloc(nbytes); }
  void free(void* p, size_t nbytes) { lru_.free(p, nbytes); }
  LRUAllocator& allocator() { return lru_; }
  virtual void copyin(void* dst, const void* host_src, size_t nbytes) = 0;
  virtual void copyout(void* host_dst, const void* src, size_t nbytes) = 0;
  // between two pointers of this device (the default stages through host memory)
  virtual void copy_on_device(void* dst, const void* src, size_t nbytes);
  virtual void synchronize() {}
  // whether this device's pointers are host memory that CPU kernels may read, and write without changing what the
  // device holds (DISK: a private copy-on-write mapping of its file); Tensor::to_mapped makes CPU buffers of them
  virtual bool host_mapped() const { return false; }

  // the dialect kernels for this device are rendered in, with its caps (threads, locals, shared memory, tensor cores,
  // vector width); throws tg::Error on a device that runs no kernels
  virtual const CStyleLanguage& renderer();
  // renderer().simd_width(), for graph building (tensor/gemm.cpp): without waiting for what renderer() may still be
  // finding out on another thread (the CPU's bfloat16 probe), which only rendering needs
  virtual int64_t simd_width() { return renderer().simd_width(); }
  // source -> binary (throws tg::Error with the compiler's message)
  virtual std::string compile(const std::string& src) = 0;
  // what besides the source decides the binary (compiler, version, flags, host CPU); "" means do not cache
  virtual std::string compiler_key() { return ""; }
  // binary -> launchable kernel `name`; throws tg::Error when the binary has no such kernel
  virtual std::unique_ptr<Program> load(const std::string& name, const std::string& binary) = 0;

  // ** batch compile (COMPILE_BATCH): several kernels from one compiler invocation **
  // the sources as one binary, every name in ks[i].globals exported as batch_symbol(i, name); std::nullopt when this
  // device compiles one source at a time (the default). Throws tg::Error when any source fails to compile.
  // quick: unoptimized, built fast (TIERED_COMPILE), even for one source; std::nullopt where the device has no such
  // build or its programs have no upgrader()
  virtual std::optional<std::string> compile_batch(const std::vector<KernelSource>& ks, bool quick = false);
  // binary -> one program per name (the CPU device loads the binary once for all of them)
  virtual std::vector<std::unique_ptr<Program>> load_many(const std::vector<std::string>& names, const std::string& binary);
  // whether compile() and compile_batch() may run on several threads at once
  virtual bool compiles_in_parallel() const { return false; }

  // ** the program cache (runtime/program_cache.cpp): compiled binaries on disk under sha256(compiler_key, source) **
  // compile(src), read back from the disk cache when compiled before (never cached when compiler_key() is "")
  std::string compile_cached(const std::string& src);
  // load(entry, compile_cached(src)); a cached binary that does not load is compiled afresh and replaced
  std::unique_ptr<Program> load_cached(const std::string& entry, const std::string& src);
  // load_cached for many kernels at once: disk cache hits are loaded, the misses compiled in batches of at most
  // COMPILE_BATCH kernels, the batches in parallel where the device allows. A batch that fails is compiled again one
  // kernel at a time, so one bad kernel loses only itself: its slot is nullptr (load_cached on it gives the error).
  // TIERED_COMPILE: the misses that are light (tiered_light) are compiled quick (compile_batch(.., true)), loaded
  // and returned at once, and queued for an optimized compile in the background that upgrades them in place and
  // stores its binaries in the disk cache (the quick ones never are): runtime/program_cache.h
  std::vector<std::unique_ptr<Program>> load_cached_batch(const std::vector<KernelSource>& ks);
  // load_cached_batch of n kernels that next(i) makes one at a time (std::nullopt: slot i stays nullptr). Where the
  // device compiles in parallel, the optimized misses made so far are compiled on another thread as soon as they
  // reach overlap_batch_bytes of source and a compile thread is free: compiling overlaps making the rest
  std::vector<std::unique_ptr<Program>> load_cached_batch(size_t n, const std::function<std::optional<KernelSource>(size_t)>& next);

 protected:
  explicit Device(std::string name)
      : name_(std::move(name)),
        lru_([this](size_t n) { return raw_alloc(n); }, [this](void* p, size_t n) { raw_free(p, n); }) {}
  virtual void* raw_alloc(size_t nbytes) = 0;  // throws tg::Error when out of memory
  virtual void raw_free(void* p, size_t nbytes) = 0;
  // derived destructors must call lru_.free_cache() while raw_free still works
  std::string name_;
  LRUAllocator lru_;
};

// the device of this name (canonicalized), opened on first use; throws tg::Error for unknown or unavailable ones
Device& get_device(std::string_view name = "");

// factories, one per backend file, registered in runtime/device.cpp's table
std::unique_ptr<Device> make_cpu_device(const std::string& name);
std::unique_ptr<Device> make_null_device(const std::string& name);
std::unique_ptr<Device> make_disk_device(const std::string& name);
std::unique_ptr<Device> make_cl_device(const std::string& name);
bool cl_available(const std::string& name);  // the OpenCL loader loads and has the device CL:n
std::unique_ptr<Device> make_cuda_device(const std::string& name);
bool cuda_available(const std::string& name);  // the NVIDIA driver loads and has the GPU CUDA:n

// A GPU device's compiled program as its program cache stores it: MAGIC, one line per kernel "name a,b,..." (each
// argument's byte size, "p" for a pointer), a blank line, then the binary. Reads the line of kernel `name`
// (pointers as 0) and where the binary starts; a blob of another device or a missing kernel is an Error naming `dev`.
struct KernelBlob { std::vector<size_t> args; size_t binary_at; };
KernelBlob parse_kernel_blob(const std::string& blob, std::string_view magic, const std::string& dev, const std::string& name);

}  // namespace tg
