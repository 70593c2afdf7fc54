#include "runtime/device.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>

#include "tg/error.h"
#include "util/settings.h"

namespace tg {

namespace {

// every backend this build can open: a device name's kind (before ':') -> its factory
struct Backend {
  const char* kind;
  const char* names;  // how its devices are named, for error messages
  std::unique_ptr<Device> (*open)(const std::string& name);
  bool (*available)(const std::string& name) = nullptr;  // whether this machine can open it (nullptr: always)
};
constexpr Backend backends[] = {
    {"CPU", "CPU, CPU:n", make_cpu_device},
    {"NULL", "NULL", make_null_device},
    {"DISK", "DISK:/path", make_disk_device},
    {"CL", "CL, CL:n", make_cl_device, cl_available},
    {"CUDA", "CUDA, CUDA:n", make_cuda_device, cuda_available},
};

const Backend* backend_of(std::string_view kind) {
  for (const Backend& b : backends)
    if (kind == b.kind) return &b;
  return nullptr;
}

}  // namespace

const CStyleLanguage& Device::renderer() { throw Error("device " + name_ + " runs no kernels: it has no renderer"); }

void Device::copy_on_device(void* dst, const void* src, size_t nbytes) {
  std::vector<char> tmp(nbytes);
  copyout(tmp.data(), src, nbytes);
  copyin(dst, tmp.data(), nbytes);
}

const std::vector<std::string>& device_kinds() {
  static const std::vector<std::string> kinds = [] {
    std::vector<std::string> k;
    for (const Backend& b : backends) k.emplace_back(b.kind);
    return k;
  }();
  return kinds;
}

std::string canonicalize_device(std::string_view name) {
  if (name.empty()) return default_device();
  size_t colon = name.find(':');
  std::string kind(name.substr(0, colon));
  std::transform(kind.begin(), kind.end(), kind.begin(), [](unsigned char c) { return char(std::toupper(c)); });
  std::string rest = colon == std::string_view::npos ? "" : std::string(name.substr(colon + 1));
  auto bad = [&](const std::string& why) {
    std::string names;
    for (const Backend& b : backends) names += (names.empty() ? "" : ", ") + std::string(b.names);
    return Error("unknown device '" + std::string(name) + "': " + why + " (devices here: " + names + ")");
  };
  if (!backend_of(kind)) throw bad("no such device kind in this build");
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
  const std::string& dev = settings().DEV;
  return dev.empty() ? "CPU" : canonicalize_device(dev);
}

bool device_available(std::string_view name) {
  try {
    std::string canon = canonicalize_device(name);
    const Backend* b = backend_of(canon.substr(0, canon.find(':')));
    return !b->available || b->available(canon);
  } catch (const Error&) {
    return false;
  }
}

void free_device_cache(std::string_view name) { get_device(name).allocator().free_cache(); }

Device& get_device(std::string_view name) {
  static std::mutex mu;
  // never destroyed: buffers in static objects may still free into their device at exit
  static auto& devices = *new std::map<std::string, std::unique_ptr<Device>, std::less<>>();
  std::string canon = canonicalize_device(name);
  std::lock_guard lk(mu);
  auto it = devices.find(canon);
  if (it == devices.end()) it = devices.emplace(canon, backend_of(canon.substr(0, canon.find(':')))->open(canon)).first;
  return *it->second;
}

KernelBlob parse_kernel_blob(const std::string& blob, std::string_view magic, const std::string& dev, const std::string& name) {
  if (!blob.starts_with(magic)) throw Error(dev + ": not a compiled " + dev + " program (no " + std::string(magic.substr(0, magic.size() - 1)) + " header)");
  size_t end = blob.find("\n\n", magic.size() - 1);
  if (end == std::string::npos) throw Error(dev + ": a compiled " + dev + " program with a truncated header");
  std::stringstream lines(blob.substr(magic.size(), end - magic.size()));
  for (std::string line; std::getline(lines, line);) {
    size_t sp = line.find(' ');
    if (line.substr(0, sp) != name) continue;
    KernelBlob kb{{}, end + 2};
    std::stringstream ks(sp == std::string::npos ? "" : line.substr(sp + 1));
    for (std::string k; std::getline(ks, k, ',');) kb.args.push_back(k == "p" ? 0 : std::stoul(k));
    return kb;
  }
  throw Error("the compiled program has no kernel named '" + name + "'");
}

}  // namespace tg
