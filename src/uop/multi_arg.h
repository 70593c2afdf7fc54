#pragma once
// The arg of a multi-device MSTACK (schedule/multi.h), here so uop/ can read its devices and shape.
#include <optional>
#include <string>

#include "uop/uop.h"

namespace tg {

// the arg of an MSTACK that is a multi-device value (schedule/multi.h): the device tuple "(CPU, CPU:1)" and the axis the
// shards split (nullopt: every shard is the whole value)
struct MultiArg : ArgObject {
  std::string devices;
  std::optional<int64_t> axis;
  MultiArg(std::string d, std::optional<int64_t> a) : devices(std::move(d)), axis(a) {}
  size_t hash() const override;
  bool equals(const ArgObject& o) const override;
  std::string str() const override;
};
const MultiArg* multi_arg(const Arg& a);  // nullptr where a is no MultiArg

}  // namespace tg
