// The CUDA device (tinygrad's ops_cuda.py): the driver API and NVRTC, both loaded at run time (runtime/cuda_api.h).
// CUDA:n is the n-th GPU, in its primary context. Pointers are device addresses (CUdeviceptr), so Buffer views are plain
// pointer arithmetic. Programs: compile() prefixes NVRTC's CUBIN with each kernel's argument sizes, read off the
// signature the renderer wrote (buffers and variables interleave in slot order); load() loads the module. Copies and
// launches wait (no stream overlap, no CUDA graphs).
#include "runtime/cuda.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

#include "runtime/cuda_api.h"
#include "runtime/device.h"
#include "runtime/program_cache.h"
#include "tg/error.h"
#include "util/diskcache.h"
#include "util/settings.h"

namespace tg {

using namespace cuda;

// ***** NVRTC *****

NvrtcCompiler::NvrtcCompiler(std::string arch) : arch_(std::move(arch)) {
  if (arch_.size() < 5 || arch_.rfind("sm_", 0) != 0 || arch_.find_first_not_of("0123456789", 3) != std::string::npos)
    throw Error("CUDA: '" + arch_ + "' is not a GPU arch (sm_90, sm_89, ...)");
}

std::string NvrtcCompiler::key() const {
  const Nvrtc& n = nvrtc();
  int major = 0, minor = 0;
  n.Version(&major, &minor);
  return "NVRTC " + std::to_string(major) + "." + std::to_string(minor) + "|" + arch_ + "|" + n.include;
}

std::string NvrtcCompiler::compile(const std::string& src, bool werror) const {
  const Nvrtc& n = nvrtc();
  // the arch when this NVRTC knows it, else PTX for the newest one below it that it knows
  int count = 0, want = std::stoi(arch_.substr(3)), best = 0;
  n.GetNumSupportedArchs(&count);
  std::vector<int> archs(size_t(std::max(count, 0)));
  if (count > 0) n.GetSupportedArchs(archs.data());
  bool known = false;
  for (int a : archs) known |= a == want, best = a <= want ? std::max(best, a) : best;
  if (!known && best == 0) throw Error("CUDA: NVRTC (" + n.path + ") cannot compile for " + arch_ + " or any older arch");
  std::string target = known ? "--gpu-architecture=" + arch_ : "--gpu-architecture=compute_" + std::to_string(best);
  std::vector<const char*> opts{target.c_str()};
  if (!n.include.empty()) opts.push_back(n.include.c_str());

  nvrtcProgram prg = nullptr;
  if (int st = n.CreateProgram(&prg, src.c_str(), "kernel.cu", 0, nullptr, nullptr); st != 0)
    throw Error(std::string("CUDA: nvrtcCreateProgram failed: ") + n.GetErrorString(st));
  struct Destroy { const Nvrtc& n; nvrtcProgram* p; ~Destroy() { n.DestroyProgram(p); } } destroy{n, &prg};
  int st = n.CompileProgram(prg, int(opts.size()), opts.data());
  size_t logn = 0;
  n.GetProgramLogSize(prg, &logn);
  std::string log(logn, '\0');
  if (logn) n.GetProgramLog(prg, log.data());
  log = log.c_str();
  if (st != 0 || (werror && log.find_first_not_of(" \n") != std::string::npos)) {
    std::string msg = "CUDA: NVRTC " + std::string(st != 0 ? "failed to compile" : "warned on") + " a kernel for " + arch_ + " (" +
                      n.GetErrorString(st) + "):\n" + log;
    msg += settings().DEBUG >= 4 ? "\nsource:\n" + src : "\n(set DEBUG=4 to see the source)";
    throw Error(msg);
  }
  size_t size = 0;
  std::string bin;
  if (known) {
    n.GetCUBINSize(prg, &size);
    bin.resize(size);
    n.GetCUBIN(prg, bin.data());
  } else {
    n.GetPTXSize(prg, &size);  // includes the terminating NUL, which cuModuleLoadData wants
    bin.resize(size);
    n.GetPTX(prg, bin.data());
  }
  return bin;
}

std::string NvrtcCompiler::compile_cached(const std::string& src, bool werror) const {
  std::string key = program_cache_key(this->key() + (werror ? "|werror" : ""), src);
  if (auto hit = diskcache_get("compile", key)) return *hit;
  std::string bin = compile(src, werror);
  diskcache_put("compile", key, bin);
  return bin;
}

namespace {
std::atomic<int64_t> checked{0};
}

void nvrtc_check_source(const std::string& name, const std::string& src, const std::string& arch) {
  static std::mutex mu;
  static std::map<std::string, NvrtcCompiler> compilers;
  static const bool report = [] {
    std::atexit([] { std::fprintf(stderr, "NVRTC_CHECK: %lld kernels compiled for CUDA without warnings\n", (long long)checked.load()); });
    return true;
  }();
  (void)report;
  const NvrtcCompiler* c;
  {
    std::lock_guard lk(mu);
    c = &compilers.try_emplace(arch, arch).first->second;
  }
  try {
    c->compile_cached(src, true);  // only binaries without warnings are cached
  } catch (const Error& e) {
    throw Error("NVRTC_CHECK: kernel " + name + ": " + e.what());
  }
  checked++;
}
int64_t nvrtc_checked_kernels() { return checked.load(); }

// ***** the device *****

// from the signatures CUDARenderer writes: extern "C" __global__ void __launch_bounds__(N) name(float* data0_16, const int data1_)
std::map<std::string, std::vector<size_t>> cuda_kernel_args(const std::string& src) {
  static const std::map<std::string, size_t, std::less<>> sizes{
      {"bool", 1}, {"char", 1}, {"signed char", 1}, {"unsigned char", 1}, {"short", 2}, {"unsigned short", 2}, {"half", 2},
      {"nv_bfloat16", 2}, {"int", 4}, {"uint", 4}, {"unsigned int", 4}, {"float", 4}, {"long", 8}, {"unsigned long", 8}, {"double", 8}};
  std::map<std::string, std::vector<size_t>> out;
  const std::string head = "__global__ void ";
  for (size_t at = src.find(head); at != std::string::npos; at = src.find(head, at + 1)) {
    size_t p = at + head.size();
    if (src.compare(p, 18, "__launch_bounds__(") == 0) p = src.find(')', p) + 2;
    size_t open = src.find('(', p), close = src.find(')', open);
    if (open == std::string::npos || close == std::string::npos) break;
    std::string name = src.substr(p, open - p);
    std::vector<size_t>& args = out[name];
    std::stringstream ps(src.substr(open + 1, close - open - 1));
    for (std::string a; std::getline(ps, a, ',');) {
      if (a.find('*') != std::string::npos) { args.push_back(0); continue; }
      // "const int data1_": the words before the name, without qualifiers
      std::stringstream ws(a);
      std::vector<std::string> words;
      for (std::string w; ws >> w;)
        if (w != "const" && w != "volatile") words.push_back(w);
      std::string type;
      for (size_t i = 0; i + 1 < words.size(); i++) type += (i ? " " : "") + words[i];
      auto it = sizes.find(type);
      if (it == sizes.end()) throw Error("CUDA: kernel " + name + " takes an argument of type '" + type + "', which the runtime cannot pass");
      args.push_back(it->second);
    }
  }
  return out;
}

namespace {

// the program blob: "tgcu1\n", one line per kernel "name p,p,4" (p: a buffer, a digit: a value of that many bytes),
// an empty line, then NVRTC's CUBIN (or PTX)
constexpr std::string_view blob_magic = "tgcu1\n";

class CudaDevice;

class CudaProgram : public Program {
 public:
  CudaProgram(std::string name, CudaDevice& dev, CUmodule mod, CUfunction fn, std::vector<size_t> args)
      : Program(std::move(name)), dev_(dev), mod_(mod), fn_(fn), args_(std::move(args)) {}
  ~CudaProgram() override;
  double launch(std::span<void* const> bufs, std::span<const int64_t> vars, const LaunchDims& dims, bool timed) override;

 private:
  CudaDevice& dev_;
  CUmodule mod_;
  CUfunction fn_;
  std::vector<size_t> args_;  // 0: a buffer, else the bytes of a value
};

class CudaDevice : public Device {
 public:
  explicit CudaDevice(std::string name) : Device(std::move(name)) {
    const Driver& d = driver();
    int count = 0;
    check(d.DeviceGetCount(&count), "cuDeviceGetCount");
    int idx = 0;
    if (auto c = name_.find(':'); c != std::string::npos) idx = std::stoi(name_.substr(c + 1));
    if (idx >= count)
      throw Error("cannot open " + name_ + ": there are " + std::to_string(count) + " CUDA GPU(s)" +
                  (count ? " (CUDA to CUDA:" + std::to_string(count - 1) + ")" : ""));
    check(d.DeviceGet(&dev_, idx), "cuDeviceGet");
    check(d.DevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain");
    auto attr = [&](int a) {
      int v = 0;
      check(d.DeviceGetAttribute(&v, a, dev_), "cuDeviceGetAttribute");
      return int64_t(v);
    };
    std::string arch = "sm_" + std::to_string(attr(ATTR_CC_MAJOR)) + std::to_string(attr(ATTR_CC_MINOR));
    compiler_ = std::make_unique<NvrtcCompiler>(arch);
    renderer_ = std::make_unique<CUDARenderer>(arch);
    // the GPU's limits, within tinygrad's (the sm_90 profile the renderer starts with)
    int64_t threads = attr(ATTR_MAX_THREADS_PER_BLOCK);
    for (int i = 0; i < 3; i++) {
      renderer_->local_max[size_t(i)] = std::min({renderer_->local_max[size_t(i)], attr(ATTR_MAX_BLOCK_DIM_X + i), threads});
      renderer_->global_max[size_t(i)] = std::min(renderer_->global_max[size_t(i)], attr(ATTR_MAX_GRID_DIM_X + i));
    }
    renderer_->shared_max = std::min(renderer_->shared_max, attr(ATTR_MAX_SHARED_MEMORY_PER_BLOCK));
    char nm[256] = {};
    check(d.DeviceGetName(nm, sizeof nm - 1, dev_), "cuDeviceGetName");
    gpu_name_ = nm;
    if (settings().DEBUG >= 1) std::printf("CUDADevice: opening %s (%s, %s)\n", name_.c_str(), gpu_name_.c_str(), arch.c_str());
  }
  ~CudaDevice() override {
    try {
      lru_.free_cache();
      driver().DevicePrimaryCtxRelease(dev_);
    } catch (...) {}
  }

  void set_current() { check(driver().CtxSetCurrent(ctx_), "cuCtxSetCurrent"); }

  void copyin(void* dst, const void* src, size_t n) override {
    set_current();
    check(driver().MemcpyHtoD(CUdeviceptr(dst), src, n), "cuMemcpyHtoD");
  }
  void copyout(void* dst, const void* src, size_t n) override {
    set_current();
    check(driver().MemcpyDtoH(dst, CUdeviceptr(src), n), "cuMemcpyDtoH");
  }
  void copy_on_device(void* dst, const void* src, size_t n) override {
    set_current();
    check(driver().MemcpyDtoD(CUdeviceptr(dst), CUdeviceptr(src), n), "cuMemcpyDtoD");
    synchronize();
  }
  void synchronize() override {
    set_current();
    check(driver().CtxSynchronize(), "cuCtxSynchronize");
  }

  const CStyleLanguage& renderer() override { return *renderer_; }
  std::string compiler_key() override { return "CUDA|" + compiler_->key() + "|" + gpu_name_; }

  std::string compile(const std::string& src) override {
    std::string blob(blob_magic);
    for (auto& [name, args] : cuda_kernel_args(src)) {
      blob += name + " ";
      for (size_t i = 0; i < args.size(); i++) blob += (i ? "," : "") + (args[i] ? std::to_string(args[i]) : "p");
      blob += "\n";
    }
    return blob + "\n" + compiler_->compile(src);
  }

  std::unique_ptr<Program> load(const std::string& name, const std::string& blob) override {
    auto [args, at] = parse_kernel_blob(blob, blob_magic, "CUDA", name);
    set_current();
    const Driver& d = driver();
    CUmodule mod = nullptr;
    check(d.ModuleLoadData(&mod, blob.data() + at), "cuModuleLoadData");
    CUfunction fn = nullptr;
    if (CUresult st = d.ModuleGetFunction(&fn, mod, name.c_str()); st != SUCCESS) {
      d.ModuleUnload(mod);
      check(st, ("cuModuleGetFunction(" + name + ")").c_str());
    }
    return std::make_unique<CudaProgram>(name, *this, mod, fn, std::move(args));
  }

 protected:
  void* raw_alloc(size_t n) override {
    set_current();
    CUdeviceptr p = 0;
    if (CUresult st = driver().MemAlloc(&p, std::max<size_t>(n, 1)); st != SUCCESS) {
      const char* msg = nullptr;
      driver().GetErrorString(st, &msg);
      throw Error(name_ + ": cannot allocate " + std::to_string(n) + " bytes: " + (msg ? msg : "error " + std::to_string(st)));
    }
    return reinterpret_cast<void*>(p);
  }
  void raw_free(void* p, size_t) override {
    set_current();
    driver().MemFree(CUdeviceptr(p));
  }

 private:
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  std::string gpu_name_;
  std::unique_ptr<NvrtcCompiler> compiler_;
  std::unique_ptr<CUDARenderer> renderer_;
};

CudaProgram::~CudaProgram() {
  try {
    dev_.set_current();
    driver().ModuleUnload(mod_);
  } catch (...) {}
}

double CudaProgram::launch(std::span<void* const> bufs, std::span<const int64_t> vars, const LaunchDims& dims, bool timed) {
  // each argument's value in 8 bytes of its own (little endian: a narrower type reads the low bytes), and a pointer to it
  std::vector<uint64_t> vals(args_.size());
  std::vector<void*> ptrs(args_.size());
  size_t nb = 0, nv = 0;
  for (size_t i = 0; i < args_.size(); i++) {
    ptrs[i] = &vals[i];
    if (args_[i] == 0) {
      if (nb >= bufs.size()) throw Error("CUDA: kernel " + name_ + " takes more than the " + std::to_string(bufs.size()) + " buffers given");
      vals[i] = uint64_t(reinterpret_cast<uintptr_t>(bufs[nb++]));
    } else {
      if (nv >= vars.size()) throw Error("CUDA: kernel " + name_ + " takes more than the " + std::to_string(vars.size()) + " variables given");
      vals[i] = uint64_t(vars[nv++]);
    }
  }
  if (nb != bufs.size() || nv != vars.size())
    throw Error("CUDA: kernel " + name_ + " takes " + std::to_string(nb) + " buffers and " + std::to_string(nv) + " variables, given " +
                std::to_string(bufs.size()) + " and " + std::to_string(vars.size()));
  const Driver& d = driver();
  dev_.set_current();
  std::array<unsigned, 3> grid{}, block{};
  for (size_t i = 0; i < 3; i++) grid[i] = unsigned(std::max(dims.global[i], 1)), block[i] = unsigned(std::max(dims.local[i], 1));
  CUevent ev[2] = {nullptr, nullptr};
  if (timed)
    for (auto& e : ev) check(d.EventCreate(&e, 0), "cuEventCreate");
  struct Destroy { CUevent* e; ~Destroy() { for (int i = 0; i < 2; i++) if (e[i]) driver().EventDestroy(e[i]); } } destroy{ev};
  if (timed) check(d.EventRecord(ev[0], nullptr), "cuEventRecord");
  check(d.LaunchKernel(fn_, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0, nullptr, ptrs.data(), nullptr),
        ("launching the kernel " + name_).c_str());
  if (!timed) {
    check(d.CtxSynchronize(), ("running the kernel " + name_).c_str());
    return 0.0;
  }
  check(d.EventRecord(ev[1], nullptr), "cuEventRecord");
  check(d.EventSynchronize(ev[1]), ("running the kernel " + name_).c_str());
  float ms = 0;
  check(d.EventElapsedTime(&ms, ev[0], ev[1]), "cuEventElapsedTime");
  return double(ms) * 1e-3;
}

}  // namespace

bool cuda_available(const std::string& name) {
  try {
    int count = 0;
    check(driver().DeviceGetCount(&count), "cuDeviceGetCount");
    size_t c = name.find(':');
    return (c == std::string::npos ? 0 : std::stoi(name.substr(c + 1))) < count;
  } catch (const Error&) {
    return false;
  }
}

std::unique_ptr<Device> make_cuda_device(const std::string& name) { return std::make_unique<CudaDevice>(name); }

}  // namespace tg
