#include "runtime/device.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>

#include "tg/error.h"
#include "util/env.h"

namespace tg {

const std::vector<std::string>& device_kinds() {
  static const std::vector<std::string> kinds{"CPU", "CUDA", "NULL", "DISK"};
  return kinds;
}

std::string canonicalize_device(std::string_view name) {
  if (name.empty()) return default_device();
  size_t colon = name.find(':');
  std::string kind(name.substr(0, colon));
  std::transform(kind.begin(), kind.end(), kind.begin(), [](unsigned char c) { return char(std::toupper(c)); });
  std::string rest = colon == std::string_view::npos ? "" : std::string(name.substr(colon + 1));
  auto bad = [&](const std::string& why) {
    return Error("unknown device '" + std::string(name) + "': " + why + " (devices: CPU, CPU:n, CUDA, CUDA:n, NULL, DISK:/path)");
  };
  if (std::find(device_kinds().begin(), device_kinds().end(), kind) == device_kinds().end()) throw bad("no such device kind");
  if (kind == "DISK") {
    if (rest.empty()) throw bad("DISK needs a path");
    return kind + ":" + rest;
  }
  if (colon == std::string_view::npos) return kind;
  if (rest.empty() || !std::all_of(rest.begin(), rest.end(), [](unsigned char c) { return std::isdigit(c); }))
    throw bad("the device index must be a number");
  return rest.find_first_not_of('0') == std::string::npos ? kind : kind + ":" + rest;
}

std::string default_device() {
  std::string dev = getenv_str("DEV");
  return dev.empty() ? "CPU" : canonicalize_device(dev);
}

static std::unique_ptr<Device> open_device(const std::string& name) {
  std::string kind = name.substr(0, name.find(':'));
  if (kind == "CPU") return make_cpu_device(name);
  if (kind == "NULL") return make_null_device(name);
  if (kind == "DISK") return make_disk_device(name);
  throw Error("device " + name + " is not available in this build of tinygrad.cpp");
}

bool device_available(std::string_view name) {
  std::string kind = canonicalize_device(name);
  kind = kind.substr(0, kind.find(':'));
  return kind == "CPU" || kind == "NULL" || kind == "DISK";
}

Device& get_device(std::string_view name) {
  static std::mutex mu;
  // never destroyed: buffers in static objects may still free into their device at exit
  static auto& devices = *new std::map<std::string, std::unique_ptr<Device>, std::less<>>();
  std::string canon = canonicalize_device(name);
  std::lock_guard lk(mu);
  auto it = devices.find(canon);
  if (it == devices.end()) it = devices.emplace(canon, open_device(canon)).first;
  return *it->second;
}

}  // namespace tg
