#pragma once
// The CUDA driver API and NVRTC entry points the CUDA device uses (signatures and values from CUDA's cuda.h and
// nvrtc.h), loaded at run time: libcuda.so.1 (the NVIDIA driver) and libnvrtc (the toolkit, or PyPI's
// nvidia-cuda-nvrtc wheel under $CUDA_PATH). The library links against neither and needs no CUDA headers; without them
// the calls throw a tg::Error that says what is missing.
#include <cstddef>
#include <cstdint>
#include <string>

namespace tg::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUevent = struct CUevent_st*;
using CUstream = struct CUstream_st*;
using nvrtcProgram = struct _nvrtcProgram*;

constexpr CUresult SUCCESS = 0, ERROR_NO_DEVICE = 100;
constexpr int ATTR_MAX_THREADS_PER_BLOCK = 1, ATTR_MAX_BLOCK_DIM_X = 2, ATTR_MAX_GRID_DIM_X = 5, ATTR_MAX_SHARED_MEMORY_PER_BLOCK = 8,
              ATTR_CC_MAJOR = 75, ATTR_CC_MINOR = 76;

struct Driver {
  CUresult (*Init)(unsigned);
  CUresult (*DriverGetVersion)(int*);
  CUresult (*DeviceGetCount)(int*);
  CUresult (*DeviceGet)(CUdevice*, int);
  CUresult (*DeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*DeviceGetName)(char*, int, CUdevice);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*DevicePrimaryCtxRelease)(CUdevice);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*CtxSynchronize)();
  CUresult (*MemAlloc)(CUdeviceptr*, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*MemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*ModuleLoadData)(CUmodule*, const void*);
  CUresult (*ModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*ModuleUnload)(CUmodule);
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**, void**);
  CUresult (*EventCreate)(CUevent*, unsigned);
  CUresult (*EventRecord)(CUevent, CUstream);
  CUresult (*EventSynchronize)(CUevent);
  CUresult (*EventElapsedTime)(float*, CUevent, CUevent);
  CUresult (*EventDestroy)(CUevent);
  CUresult (*GetErrorString)(CUresult, const char**);
};
// the driver, loaded once; throws tg::Error when libcuda.so.1 is not there
const Driver& driver();
// throws tg::Error "CUDA: <what> failed: <the driver's message> (<code>)" unless status is SUCCESS
void check(CUresult status, const char* what);

struct Nvrtc {
  const char* (*GetErrorString)(int);
  int (*Version)(int*, int*);
  int (*GetNumSupportedArchs)(int*);
  int (*GetSupportedArchs)(int*);
  int (*CreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*);
  int (*DestroyProgram)(nvrtcProgram*);
  int (*CompileProgram)(nvrtcProgram, int, const char* const*);
  int (*GetProgramLogSize)(nvrtcProgram, size_t*);
  int (*GetProgramLog)(nvrtcProgram, char*);
  int (*GetCUBINSize)(nvrtcProgram, size_t*);
  int (*GetCUBIN)(nvrtcProgram, char*);
  int (*GetPTXSize)(nvrtcProgram, size_t*);
  int (*GetPTX)(nvrtcProgram, char*);
  std::string path;     // the library that was loaded
  std::string include;  // the -I option for cuda_fp16.h, "" when none was found
};
// NVRTC, loaded once; throws tg::Error naming the places searched when there is none
const Nvrtc& nvrtc();

}  // namespace tg::cuda
