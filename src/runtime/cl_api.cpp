#include "runtime/cl_api.h"

#include <dlfcn.h>

#include <map>

#include "tg/error.h"

namespace tg::cl {

const Api& api() {
  // loaded once; a failure is remembered and thrown again on every call. Never unloaded: devices live until exit
  static const auto* loaded = [] {
    auto* r = new std::pair<Api, std::string>{};
    void* h = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) h = dlopen("libOpenCL.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      r->second = std::string("CL: cannot load the OpenCL ICD loader libOpenCL.so.1 (") + dlerror() +
                  "); install one and a driver (Debian: apt-get install ocl-icd-libopencl1 pocl-opencl-icd)";
      return r;
    }
    Api& a = r->first;
    auto sym = [&](auto& fn, const char* name) {
      if (!r->second.empty()) return;
      void* p = dlsym(h, name);
      if (!p) r->second = std::string("CL: libOpenCL.so.1 has no ") + name + " (an OpenCL 1.2 loader is needed)";
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    };
#define TG_CL_SYM(n) sym(a.n, "cl" #n)
    TG_CL_SYM(GetPlatformIDs), TG_CL_SYM(GetPlatformInfo), TG_CL_SYM(GetDeviceIDs), TG_CL_SYM(GetDeviceInfo);
    TG_CL_SYM(CreateContext), TG_CL_SYM(ReleaseContext), TG_CL_SYM(CreateCommandQueue), TG_CL_SYM(ReleaseCommandQueue);
    TG_CL_SYM(CreateBuffer), TG_CL_SYM(CreateSubBuffer), TG_CL_SYM(ReleaseMemObject);
    TG_CL_SYM(EnqueueWriteBuffer), TG_CL_SYM(EnqueueReadBuffer), TG_CL_SYM(EnqueueCopyBuffer), TG_CL_SYM(Finish);
    TG_CL_SYM(CreateProgramWithSource), TG_CL_SYM(CreateProgramWithBinary), TG_CL_SYM(BuildProgram);
    TG_CL_SYM(GetProgramBuildInfo), TG_CL_SYM(GetProgramInfo), TG_CL_SYM(ReleaseProgram);
    TG_CL_SYM(CreateKernel), TG_CL_SYM(GetKernelInfo), TG_CL_SYM(GetKernelArgInfo), TG_CL_SYM(ReleaseKernel);
    TG_CL_SYM(SetKernelArg), TG_CL_SYM(EnqueueNDRangeKernel), TG_CL_SYM(WaitForEvents), TG_CL_SYM(GetEventProfilingInfo);
    TG_CL_SYM(ReleaseEvent);
#undef TG_CL_SYM
    return r;
  }();
  if (!loaded->second.empty()) throw Error(loaded->second);
  return loaded->first;
}

std::string error_name(cl_int status) {
  static const std::map<cl_int, const char*> names{
      {-1, "CL_DEVICE_NOT_FOUND"}, {-2, "CL_DEVICE_NOT_AVAILABLE"}, {-3, "CL_COMPILER_NOT_AVAILABLE"},
      {-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE"}, {-5, "CL_OUT_OF_RESOURCES"}, {-6, "CL_OUT_OF_HOST_MEMORY"},
      {-7, "CL_PROFILING_INFO_NOT_AVAILABLE"}, {-8, "CL_MEM_COPY_OVERLAP"}, {-11, "CL_BUILD_PROGRAM_FAILURE"},
      {-12, "CL_MAP_FAILURE"}, {-13, "CL_MISALIGNED_SUB_BUFFER_OFFSET"}, {-19, "CL_KERNEL_ARG_INFO_NOT_AVAILABLE"},
      {-30, "CL_INVALID_VALUE"}, {-31, "CL_INVALID_DEVICE_TYPE"}, {-32, "CL_INVALID_PLATFORM"}, {-33, "CL_INVALID_DEVICE"},
      {-34, "CL_INVALID_CONTEXT"}, {-35, "CL_INVALID_QUEUE_PROPERTIES"}, {-36, "CL_INVALID_COMMAND_QUEUE"},
      {-37, "CL_INVALID_HOST_PTR"}, {-38, "CL_INVALID_MEM_OBJECT"}, {-42, "CL_INVALID_BINARY"},
      {-43, "CL_INVALID_BUILD_OPTIONS"}, {-44, "CL_INVALID_PROGRAM"}, {-45, "CL_INVALID_PROGRAM_EXECUTABLE"},
      {-46, "CL_INVALID_KERNEL_NAME"}, {-47, "CL_INVALID_KERNEL_DEFINITION"}, {-48, "CL_INVALID_KERNEL"},
      {-49, "CL_INVALID_ARG_INDEX"}, {-50, "CL_INVALID_ARG_VALUE"}, {-51, "CL_INVALID_ARG_SIZE"},
      {-52, "CL_INVALID_KERNEL_ARGS"}, {-53, "CL_INVALID_WORK_DIMENSION"}, {-54, "CL_INVALID_WORK_GROUP_SIZE"},
      {-55, "CL_INVALID_WORK_ITEM_SIZE"}, {-56, "CL_INVALID_GLOBAL_OFFSET"}, {-57, "CL_INVALID_EVENT_WAIT_LIST"},
      {-58, "CL_INVALID_EVENT"}, {-59, "CL_INVALID_OPERATION"}, {-61, "CL_INVALID_BUFFER_SIZE"},
      {-63, "CL_INVALID_GLOBAL_WORK_SIZE"}, {-64, "CL_INVALID_PROPERTY"}, {-1001, "CL_PLATFORM_NOT_FOUND_KHR"}};
  auto it = names.find(status);
  return it == names.end() ? "unknown OpenCL error" : it->second;
}

void check(cl_int status, const char* what) {
  if (status != SUCCESS) throw Error(std::string("CL: ") + what + " failed: " + error_name(status) + " (" + std::to_string(status) + ")");
}

}  // namespace tg::cl
