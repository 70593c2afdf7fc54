// Multi-device tensors (tensor.py's shard, shard_, shard_like, to a tuple of devices). The graph they build is run per
// device by lower_multi (schedule/multi.cpp) when it is realized.
#include "schedule/multi.h"
#include "tensor/tensor_impl.h"
#include "tg/device.h"

namespace tg {

std::vector<std::string> Tensor::devices() const {
  auto d = device();
  return d ? parse_device_tuple(*d) : std::vector<std::string>{};
}

namespace {
// the shards of a multi-device tensor: its graph run per device, not yet realized
std::optional<Multi> multi_of(const Tensor& t) {
  auto d = t.device();
  return d && is_device_tuple(*d) ? as_multi(lower_multi(uop_of(t))) : std::nullopt;
}

std::vector<std::string> canonical(const std::vector<std::string>& devices, const char* op) {
  if (devices.empty()) throw Error(std::string(op) + ": no devices given");
  std::vector<std::string> r;
  for (auto& d : devices) r.push_back(canonicalize_device(d));
  return r;
}
}  // namespace

std::optional<int64_t> Tensor::shard_axis() const {
  auto m = multi_of(*this);
  return m ? m->axis : std::nullopt;
}

Tensor Tensor::shard(const std::vector<std::string>& devices, std::optional<int64_t> axis) const {
  auto devs = canonical(devices, "shard");
  if (!device()) return *this;
  if (is_device_tuple(*device())) throw Error("shard: can't shard a multi-device tensor (on " + *device() + ")");
  if (devs.size() == 1) return to(devs[0]);
  std::optional<int64_t> ax;
  if (axis) ax = resolve_dim(*this, *axis, false, "shard");
  return wrap(shard_uop(uop_of(*this), devs, ax)).is_param_(is_param());
}

Tensor& Tensor::shard_(const std::vector<std::string>& devices, std::optional<int64_t> axis) { return replace(shard(devices, axis)); }

Tensor Tensor::shard_like(const Tensor& y) const {
  if (!y.device()) return *this;
  if (!is_device_tuple(*y.device())) return to(*y.device());
  if (device() == y.device() && shard_axis() == y.shard_axis()) return *this;
  return shard(y.devices(), y.shard_axis());
}

Tensor Tensor::to(const std::vector<std::string>& devices) const {
  auto devs = canonical(devices, "to");
  if (devs.size() == 1) return to(devs[0]);
  if (device() == device_tuple(devs)) return *this;  // already there, split or not (tinygrad compares devices only)
  auto m = multi_of(*this);
  if (!m) return shard(devs);
  std::vector<UOp> whole;
  for (auto& d : devs) whole.push_back(tg::gather(*m, d));
  return wrap(make_multi(whole, std::nullopt, devs)).is_param_(is_param());
}

}  // namespace tg
