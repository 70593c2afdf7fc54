#pragma once
// Device names as tinygrad spells them: "CPU", "CPU:1", "NULL", "CUDA", "DISK:/path".
#include <string>
#include <string_view>
#include <vector>

namespace tg {

// "cpu" -> "CPU", "cuda:0" -> "CUDA", "disk:/tmp/x" -> "DISK:/tmp/x"; "" -> default_device().
// Throws tg::Error naming the device when its kind is unknown or its suffix is malformed.
std::string canonicalize_device(std::string_view name);

// the device new tensors go to: $DEV canonicalized, else "CPU"
std::string default_device();

// the device kinds this build knows: {"CPU", "CUDA", "NULL", "DISK"}
const std::vector<std::string>& device_kinds();

// true when a device of this name can be opened here (CPU and NULL always; others once built)
bool device_available(std::string_view name);

}  // namespace tg
