#pragma once
// Device names as tinygrad spells them: "CPU", "CPU:1", "NULL", "DISK:/path", "CL", "CL:1", "CUDA", "CUDA:1".
#include <string>
#include <string_view>
#include <vector>

namespace tg {

// "cpu" -> "CPU", "cpu:0" -> "CPU", "disk:/tmp/x" -> "DISK:/tmp/x"; "" -> default_device().
// Throws tg::Error naming the device when its kind is not one of device_kinds() or its suffix is malformed.
std::string canonicalize_device(std::string_view name);

// the device new tensors go to: $DEV canonicalized, else "CPU"
std::string default_device();

// the device kinds this build has: {"CPU", "NULL", "DISK", "CL", "CUDA"} (CL opens only where OpenCL has a device,
// CUDA only where the NVIDIA driver has a GPU)
const std::vector<std::string>& device_kinds();

// true when `name` names a device of one of device_kinds() that this machine can open: CL needs the OpenCL loader
// and a platform with a device, CUDA the driver (libcuda.so.1) and a GPU (false, not an exception, for any other name)
bool device_available(std::string_view name);

// gives the memory that the device's allocator keeps of freed buffers (its LRU cache, for the next buffer of the same
// size) back to the system: after a phase whose buffers will not come again soon (a prompt's, before decode)
void free_device_cache(std::string_view name = "");

}  // namespace tg
