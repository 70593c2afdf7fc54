#pragma once
// Multi-device values (tinygrad's schedule/multi.py with its DEVICE range unrolled). A value on n devices is
// MSTACK(v0 .. vn-1) with a MultiArg: the device tuple "(CPU, CPU:1)" and an axis. Every vi is the whole value on device
// i (axis nullopt: replicated) or the i-th equal slice along axis. Tensor ops build ordinary nodes over such values;
// lower_multi pushes every op into the MSTACK, one graph per device, before the graph is scheduled.
#include <optional>
#include <string>
#include <vector>

#include "uop/uop.h"

namespace tg {

struct Multi {
  std::vector<UOp> shards;
  std::optional<int64_t> axis;  // nullopt: replicated
  std::vector<std::string> devices;
};
std::optional<Multi> as_multi(const UOp& u);  // the shards of a multi-device MSTACK; nullopt for anything else
UOp make_multi(std::vector<UOp> shards, std::optional<int64_t> axis, const std::vector<std::string>& devices);

std::string device_tuple(const std::vector<std::string>& devices);  // "(CPU, CPU:1)", the device() of a multi value
bool is_device_tuple(const std::string& device);
std::vector<std::string> parse_device_tuple(const std::string& device);  // one device for a plain name

// x (on one device) copied to every device, whole (axis nullopt) or split in equal slices along axis (UOp.shard)
UOp shard_uop(const UOp& x, const std::vector<std::string>& devices, std::optional<int64_t> axis);
// every shard copied to one device and put back together (copy_multi to one device)
UOp gather(const Multi& m, const std::string& device);

// the gradients of an MSTACK's shards from the gradient of the whole value: each slice to its shard, or for replicas
// all of it to the first (tinygrad's copy to one device takes shard 0); an empty UOp for a shard that gets none
std::vector<UOp> mstack_gradient(const UOp& mstack, const UOp& grad);

bool has_multi(const UOp& u);   // whether the graph holds a multi value
UOp lower_multi(const UOp& u);  // the graph with every op on multi values done per device (multi_pm)

}  // namespace tg
