#include "runtime/cuda_api.h"

#include <dlfcn.h>

#include <filesystem>
#include <vector>

#include "tg/error.h"
#include "util/env.h"

namespace tg::cuda {

namespace {
// fills fn from the first of the names the library has; records what is missing in *err
template <class F> void sym(void* h, F& fn, std::initializer_list<const char*> names, const std::string& lib, std::string* err) {
  for (const char* n : names)
    if (void* p = dlsym(h, n)) {
      fn = reinterpret_cast<F>(p);
      return;
    }
  if (err->empty()) *err = "CUDA: " + lib + " has no " + *names.begin();
}
}  // namespace

const Driver& driver() {
  // loaded once; a failure is remembered and thrown again on every call. Never unloaded: devices live until exit
  static const auto* loaded = [] {
    auto* r = new std::pair<Driver, std::string>{};
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      r->second = std::string("CUDA: cannot load the NVIDIA driver library libcuda.so.1 (") + dlerror() +
                  "): DEV=CUDA needs an NVIDIA GPU and its driver; without one, NVRTC_CHECK=sm_90 compiles the kernels only";
      return r;
    }
    Driver& d = r->first;
    std::string* e = &r->second;
    const std::string lib = "libcuda.so.1";
    sym(h, d.Init, {"cuInit"}, lib, e), sym(h, d.DriverGetVersion, {"cuDriverGetVersion"}, lib, e);
    sym(h, d.DeviceGetCount, {"cuDeviceGetCount"}, lib, e), sym(h, d.DeviceGet, {"cuDeviceGet"}, lib, e);
    sym(h, d.DeviceGetAttribute, {"cuDeviceGetAttribute"}, lib, e), sym(h, d.DeviceGetName, {"cuDeviceGetName"}, lib, e);
    sym(h, d.DevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"}, lib, e);
    sym(h, d.DevicePrimaryCtxRelease, {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}, lib, e);
    sym(h, d.CtxSetCurrent, {"cuCtxSetCurrent"}, lib, e), sym(h, d.CtxSynchronize, {"cuCtxSynchronize"}, lib, e);
    sym(h, d.MemAlloc, {"cuMemAlloc_v2"}, lib, e), sym(h, d.MemFree, {"cuMemFree_v2"}, lib, e);
    sym(h, d.MemcpyHtoD, {"cuMemcpyHtoD_v2"}, lib, e), sym(h, d.MemcpyDtoH, {"cuMemcpyDtoH_v2"}, lib, e);
    sym(h, d.MemcpyDtoD, {"cuMemcpyDtoD_v2"}, lib, e);
    sym(h, d.ModuleLoadData, {"cuModuleLoadData"}, lib, e), sym(h, d.ModuleGetFunction, {"cuModuleGetFunction"}, lib, e);
    sym(h, d.ModuleUnload, {"cuModuleUnload"}, lib, e), sym(h, d.LaunchKernel, {"cuLaunchKernel"}, lib, e);
    sym(h, d.EventCreate, {"cuEventCreate"}, lib, e), sym(h, d.EventRecord, {"cuEventRecord"}, lib, e);
    sym(h, d.EventSynchronize, {"cuEventSynchronize"}, lib, e);
    sym(h, d.EventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, lib, e);
    sym(h, d.EventDestroy, {"cuEventDestroy_v2"}, lib, e), sym(h, d.GetErrorString, {"cuGetErrorString"}, lib, e);
    if (e->empty()) {
      CUresult st = d.Init(0);
      if (st == ERROR_NO_DEVICE) *e = "CUDA: the NVIDIA driver is installed but sees no GPU (cuInit: CUDA_ERROR_NO_DEVICE)";
      else if (st != SUCCESS) *e = "CUDA: cuInit failed with error " + std::to_string(st) + " (is the driver loaded and the GPU visible?)";
    }
    return r;
  }();
  if (!loaded->second.empty()) throw Error(loaded->second);
  return loaded->first;
}

void check(CUresult status, const char* what) {
  if (status == SUCCESS) return;
  const char* msg = nullptr;
  if (driver().GetErrorString(status, &msg) != SUCCESS || !msg) msg = "unknown error";
  throw Error(std::string("CUDA: ") + what + " failed: " + msg + " (" + std::to_string(status) + ")");
}

const Nvrtc& nvrtc() {
  static const auto* loaded = [] {
    auto* r = new std::pair<Nvrtc, std::string>{};
    namespace fs = std::filesystem;
    // $CUDA_PATH (a toolkit, or the nvidia/cu13 folder of PyPI's wheels, which setup.sh installs into .venv), the
    // loader's path, then the usual toolkit folders
    std::vector<std::string> roots;
    if (std::string cp = getenv_str("CUDA_PATH"); !cp.empty()) roots.push_back(cp);
    roots.insert(roots.end(), {"", "/usr/local/cuda", "/opt/cuda"});
    void* h = nullptr;
    std::string tried;
    for (const std::string& root : roots) {
      for (const char* dir : {"/lib64/", "/lib/"}) {
        for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", "libnvrtc.so.11.2"}) {
          std::string path = root.empty() ? name : root + dir + name;
          if ((h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL))) {
            r->first.path = path;
            // NVRTC opens its builtins library by name when it compiles: a folder off the loader's path (a wheel's)
            // must have it loaded already
            std::error_code ec;
            if (!root.empty())
              for (auto& f : fs::directory_iterator(root + dir, ec))
                if (f.path().filename().string().starts_with("libnvrtc-builtins.so")) dlopen(f.path().c_str(), RTLD_NOW | RTLD_GLOBAL);
            break;
          }
        }
        if (h || root.empty()) break;
      }
      tried += (tried.empty() ? "" : ", ") + (root.empty() ? std::string("the loader's path") : root);
      if (h) break;
    }
    if (!h) {
      r->second = "CUDA: cannot load NVRTC (libnvrtc.so) from " + tried +
                  ": install the CUDA toolkit, or run ./setup.sh (PyPI's nvidia-cuda-nvrtc in .venv) and set CUDA_PATH";
      return r;
    }
    Nvrtc& n = r->first;
    std::string* e = &r->second;
    const std::string lib = n.path;
    sym(h, n.GetErrorString, {"nvrtcGetErrorString"}, lib, e), sym(h, n.Version, {"nvrtcVersion"}, lib, e);
    sym(h, n.GetNumSupportedArchs, {"nvrtcGetNumSupportedArchs"}, lib, e), sym(h, n.GetSupportedArchs, {"nvrtcGetSupportedArchs"}, lib, e);
    sym(h, n.CreateProgram, {"nvrtcCreateProgram"}, lib, e), sym(h, n.DestroyProgram, {"nvrtcDestroyProgram"}, lib, e);
    sym(h, n.CompileProgram, {"nvrtcCompileProgram"}, lib, e);
    sym(h, n.GetProgramLogSize, {"nvrtcGetProgramLogSize"}, lib, e), sym(h, n.GetProgramLog, {"nvrtcGetProgramLog"}, lib, e);
    sym(h, n.GetCUBINSize, {"nvrtcGetCUBINSize"}, lib, e), sym(h, n.GetCUBIN, {"nvrtcGetCUBIN"}, lib, e);
    sym(h, n.GetPTXSize, {"nvrtcGetPTXSize"}, lib, e), sym(h, n.GetPTX, {"nvrtcGetPTX"}, lib, e);
    // cuda_fp16.h / cuda_bf16.h (and vector_types.h): NVRTC has none built in
    for (const std::string& root : roots)
      if (!root.empty() && fs::exists(root + "/include/cuda_fp16.h")) {
        n.include = "-I" + root + "/include";
        break;
      }
    if (n.include.empty() && fs::exists("/usr/include/cuda_fp16.h")) n.include = "-I/usr/include";
    return r;
  }();
  if (!loaded->second.empty()) throw Error(loaded->second);
  return loaded->first;
}

}  // namespace tg::cuda
