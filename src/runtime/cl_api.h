#pragma once
// The few OpenCL 1.2 entry points and constants the CL device uses (values from Khronos' CL/cl.h), loaded at run time
// from the ICD loader (libOpenCL.so.1): the library has no link-time OpenCL dependency and no OpenCL headers.
#include <cstddef>
#include <cstdint>
#include <string>

namespace tg::cl {

using cl_int = int32_t;
using cl_uint = uint32_t;
using cl_ulong = uint64_t;
using cl_bitfield = cl_ulong;
using cl_platform_id = struct _cl_platform_id*;
using cl_device_id = struct _cl_device_id*;
using cl_context = struct _cl_context*;
using cl_command_queue = struct _cl_command_queue*;
using cl_mem = struct _cl_mem*;
using cl_program = struct _cl_program*;
using cl_kernel = struct _cl_kernel*;
using cl_event = struct _cl_event*;

constexpr cl_int SUCCESS = 0, DEVICE_NOT_FOUND = -1, PLATFORM_NOT_FOUND_KHR = -1001;
constexpr cl_bitfield DEVICE_TYPE_GPU = 1 << 2, DEVICE_TYPE_ALL = 0xFFFFFFFF;
constexpr cl_uint PLATFORM_NAME = 0x0902, DEVICE_MAX_WORK_GROUP_SIZE = 0x1004, DEVICE_MAX_WORK_ITEM_SIZES = 0x1005,
                  DEVICE_MEM_BASE_ADDR_ALIGN = 0x1019, DEVICE_LOCAL_MEM_SIZE = 0x1023, DEVICE_NAME = 0x102B,
                  DRIVER_VERSION = 0x102D, DEVICE_VERSION = 0x102F, DEVICE_EXTENSIONS = 0x1030,
                  PROGRAM_BINARY_SIZES = 0x1165, PROGRAM_BINARIES = 0x1166, PROGRAM_KERNEL_NAMES = 0x1168, PROGRAM_BUILD_LOG = 0x1183,
                  KERNEL_NUM_ARGS = 0x1191, KERNEL_ARG_ADDRESS_QUALIFIER = 0x1196, KERNEL_ARG_TYPE_NAME = 0x1198,
                  KERNEL_ARG_ADDRESS_PRIVATE = 0x119E, BUFFER_CREATE_TYPE_REGION = 0x1220,
                  PROFILING_COMMAND_START = 0x1282, PROFILING_COMMAND_END = 0x1283;
constexpr cl_bitfield QUEUE_PROFILING_ENABLE = 1 << 1, MEM_READ_WRITE = 1 << 0;
constexpr cl_uint TRUE_ = 1;

struct Api {
  cl_int (*GetPlatformIDs)(cl_uint, cl_platform_id*, cl_uint*);
  cl_int (*GetPlatformInfo)(cl_platform_id, cl_uint, size_t, void*, size_t*);
  cl_int (*GetDeviceIDs)(cl_platform_id, cl_bitfield, cl_uint, cl_device_id*, cl_uint*);
  cl_int (*GetDeviceInfo)(cl_device_id, cl_uint, size_t, void*, size_t*);
  cl_context (*CreateContext)(const intptr_t*, cl_uint, const cl_device_id*, void*, void*, cl_int*);
  cl_int (*ReleaseContext)(cl_context);
  cl_command_queue (*CreateCommandQueue)(cl_context, cl_device_id, cl_bitfield, cl_int*);
  cl_int (*ReleaseCommandQueue)(cl_command_queue);
  cl_mem (*CreateBuffer)(cl_context, cl_bitfield, size_t, void*, cl_int*);
  cl_mem (*CreateSubBuffer)(cl_mem, cl_bitfield, cl_uint, const void*, cl_int*);
  cl_int (*ReleaseMemObject)(cl_mem);
  cl_int (*EnqueueWriteBuffer)(cl_command_queue, cl_mem, cl_uint, size_t, size_t, const void*, cl_uint, const cl_event*, cl_event*);
  cl_int (*EnqueueReadBuffer)(cl_command_queue, cl_mem, cl_uint, size_t, size_t, void*, cl_uint, const cl_event*, cl_event*);
  cl_int (*EnqueueCopyBuffer)(cl_command_queue, cl_mem, cl_mem, size_t, size_t, size_t, cl_uint, const cl_event*, cl_event*);
  cl_int (*Finish)(cl_command_queue);
  cl_program (*CreateProgramWithSource)(cl_context, cl_uint, const char**, const size_t*, cl_int*);
  cl_program (*CreateProgramWithBinary)(cl_context, cl_uint, const cl_device_id*, const size_t*, const unsigned char**, cl_int*, cl_int*);
  cl_int (*BuildProgram)(cl_program, cl_uint, const cl_device_id*, const char*, void*, void*);
  cl_int (*GetProgramBuildInfo)(cl_program, cl_device_id, cl_uint, size_t, void*, size_t*);
  cl_int (*GetProgramInfo)(cl_program, cl_uint, size_t, void*, size_t*);
  cl_int (*ReleaseProgram)(cl_program);
  cl_kernel (*CreateKernel)(cl_program, const char*, cl_int*);
  cl_int (*GetKernelInfo)(cl_kernel, cl_uint, size_t, void*, size_t*);
  cl_int (*GetKernelArgInfo)(cl_kernel, cl_uint, cl_uint, size_t, void*, size_t*);
  cl_int (*ReleaseKernel)(cl_kernel);
  cl_int (*SetKernelArg)(cl_kernel, cl_uint, size_t, const void*);
  cl_int (*EnqueueNDRangeKernel)(cl_command_queue, cl_kernel, cl_uint, const size_t*, const size_t*, const size_t*, cl_uint,
                                 const cl_event*, cl_event*);
  cl_int (*WaitForEvents)(cl_uint, const cl_event*);
  cl_int (*GetEventProfilingInfo)(cl_event, cl_uint, size_t, void*, size_t*);
  cl_int (*ReleaseEvent)(cl_event);
};

// the loaded entry points; throws tg::Error saying why when libOpenCL.so.1 or one of them is missing
const Api& api();
// tinygrad's cl_errors: "CL_INVALID_VALUE" for -30 ...
std::string error_name(cl_int status);
// throws tg::Error "CL: <what> failed: <error name> (<status>)" unless status is SUCCESS
void check(cl_int status, const char* what);

}  // namespace tg::cl
