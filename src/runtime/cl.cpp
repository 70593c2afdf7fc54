// The CL device (tinygrad's ops_cl.py): OpenCL through the ICD loader, loaded at run time (runtime/cl_api.h). CL:n is
// the n-th device of all platforms' GPUs (all their devices when there is no GPU: PoCL's CPU device here).
//
// Memory: Device's pointers are plain addresses with byte offsets (Buffer views), so each cl_mem gets a range of
// made-up addresses (never dereferenced); a pointer resolves to its cl_mem and offset, and an offset pointer passed to
// a kernel becomes a sub-buffer (which the device wants aligned to CL_DEVICE_MEM_BASE_ADDR_ALIGN).
// Programs: compile() builds the source and stores each kernel's argument kinds ahead of the device binary (a kernel
// takes buffers and int variables interleaved in slot order); load() rebuilds from that binary. Every command waits.
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>

#include "runtime/cl_api.h"
#include "runtime/device.h"
#include "tg/error.h"
#include "util/settings.h"

namespace tg {

namespace {
using namespace cl;

struct Devices {
  std::vector<cl_device_id> ids;
  std::string why;  // why there are none
};
// every platform's GPUs, else every device they have; enumerated once
const Devices& devices() {
  static const Devices d = [] {
    Devices r;
    const Api& a = api();
    cl_uint np = 0;
    cl_int st = a.GetPlatformIDs(0, nullptr, &np);
    if (st == PLATFORM_NOT_FOUND_KHR || np == 0) return Devices{{}, "no OpenCL platform is installed (Debian: apt-get install pocl-opencl-icd)"};
    check(st, "clGetPlatformIDs");
    std::vector<cl_platform_id> ps(np);
    check(a.GetPlatformIDs(np, ps.data(), nullptr), "clGetPlatformIDs");
    for (cl_bitfield type : {DEVICE_TYPE_GPU, DEVICE_TYPE_ALL}) {
      for (auto p : ps) {
        cl_uint nd = 0;
        if (a.GetDeviceIDs(p, type, 0, nullptr, &nd) != SUCCESS || nd == 0) continue;
        std::vector<cl_device_id> ds(nd);
        if (a.GetDeviceIDs(p, type, nd, ds.data(), nullptr) == SUCCESS) r.ids.insert(r.ids.end(), ds.begin(), ds.end());
      }
      if (!r.ids.empty()) break;
    }
    if (r.ids.empty()) r.why = std::to_string(np) + " OpenCL platform(s) but no device";
    return r;
  }();
  return d;
}

std::string device_string(cl_device_id d, cl_uint what) {
  size_t n = 0;
  check(api().GetDeviceInfo(d, what, 0, nullptr, &n), "clGetDeviceInfo");
  std::string s(n, '\0');
  check(api().GetDeviceInfo(d, what, n, s.data(), nullptr), "clGetDeviceInfo");
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}
template <class T> T device_value(cl_device_id d, cl_uint what) {
  T v{};
  check(api().GetDeviceInfo(d, what, sizeof v, &v, nullptr), "clGetDeviceInfo");
  return v;
}

// bytes of a by-value kernel argument of this OpenCL type
size_t value_size(std::string t) {
  if (t.rfind("const ", 0) == 0) t = t.substr(6);
  static const std::map<std::string, size_t, std::less<>> sizes{{"char", 1}, {"uchar", 1}, {"bool", 1},  {"short", 2},
                                                                {"ushort", 2}, {"half", 2},  {"int", 4},  {"uint", 4},
                                                                {"float", 4}, {"long", 8},  {"ulong", 8}, {"double", 8}};
  auto it = sizes.find(t);
  if (it == sizes.end()) throw Error("CL: a kernel takes an argument of type '" + t + "', which the runtime cannot pass");
  return it->second;
}

// the program blob: "tgcl1\n", one line per kernel "name k,k,..." (p: a buffer, a digit: a value of that many bytes),
// an empty line, then the device binary
constexpr std::string_view blob_magic = "tgcl1\n";

struct Handle {  // releases a CL object when it goes out of scope
  cl_program prg = nullptr;
  cl_kernel krn = nullptr;
  ~Handle() {
    if (krn) api().ReleaseKernel(krn);
    if (prg) api().ReleaseProgram(prg);
  }
};

class ClDevice;

class ClProgram : public Program {
 public:
  ClProgram(std::string name, ClDevice& dev, cl_program prg, cl_kernel k, std::vector<size_t> args)
      : Program(std::move(name)), dev_(dev), prg_(prg), k_(k), args_(std::move(args)) {}
  ~ClProgram() override {
    api().ReleaseKernel(k_);
    api().ReleaseProgram(prg_);
  }
  double launch(std::span<void* const> bufs, std::span<const int64_t> vars, const LaunchDims& dims, bool timed) override;

 private:
  ClDevice& dev_;
  cl_program prg_;
  cl_kernel k_;
  std::vector<size_t> args_;  // 0: a buffer, else the bytes of a value
  std::mutex mu_;             // a kernel object's arguments are shared state
};

class ClDevice : public Device {
 public:
  explicit ClDevice(std::string name) : Device(std::move(name)) {
    const Devices& ds = devices();
    if (ds.ids.empty()) throw Error("cannot open " + name_ + ": " + ds.why);
    size_t idx = 0;
    if (auto c = name_.find(':'); c != std::string::npos) idx = std::stoul(name_.substr(c + 1));
    if (idx >= ds.ids.size())
      throw Error("cannot open " + name_ + ": there are " + std::to_string(ds.ids.size()) + " OpenCL device(s) (CL to CL:" +
                  std::to_string(ds.ids.size() - 1) + ")");
    dev_ = ds.ids[idx];
    const Api& a = api();
    cl_int st = 0;
    ctx_ = a.CreateContext(nullptr, 1, &dev_, nullptr, nullptr, &st);
    check(st, "clCreateContext");
    queue_ = a.CreateCommandQueue(ctx_, dev_, QUEUE_PROFILING_ENABLE, &st);
    if (st != SUCCESS) a.ReleaseContext(ctx_);
    check(st, "clCreateCommandQueue");
    std::string exts = device_string(dev_, DEVICE_EXTENSIONS);
    renderer_ = std::make_unique<OpenCLRenderer>(exts.find("cl_khr_fp16") != std::string::npos);
    key_ = "CL|" + device_string(dev_, DEVICE_NAME) + "|" + device_string(dev_, DEVICE_VERSION) + "|" +
           device_string(dev_, DRIVER_VERSION) + "|" + exts;
    align_ = std::max<size_t>(1, device_value<cl_uint>(dev_, DEVICE_MEM_BASE_ADDR_ALIGN) / 8);
    std::array<size_t, 3> items{};
    check(a.GetDeviceInfo(dev_, DEVICE_MAX_WORK_ITEM_SIZES, sizeof items, items.data(), nullptr), "clGetDeviceInfo");
    for (size_t i = 0; i < 3; i++) renderer_->local_max[i] = int64_t(std::min<size_t>(items[i], 0x8FFFFFFF));
    renderer_->shared_max = int64_t(device_value<cl_ulong>(dev_, DEVICE_LOCAL_MEM_SIZE));
    if (settings().DEBUG >= 1) std::printf("CLDevice: opening %s (%s)\n", device_string(dev_, DEVICE_NAME).c_str(), device_string(dev_, DRIVER_VERSION).c_str());
  }
  ~ClDevice() override {
    lru_.free_cache();
    api().ReleaseCommandQueue(queue_);
    api().ReleaseContext(ctx_);
  }

  void copyin(void* dst, const void* src, size_t n) override {
    auto [m, off] = find(dst, n);
    check(api().EnqueueWriteBuffer(queue_, m, TRUE_, off, n, src, 0, nullptr, nullptr), "clEnqueueWriteBuffer");
  }
  void copyout(void* dst, const void* src, size_t n) override {
    auto [m, off] = find(src, n);
    check(api().EnqueueReadBuffer(queue_, m, TRUE_, off, n, dst, 0, nullptr, nullptr), "clEnqueueReadBuffer");
  }
  void copy_on_device(void* dst, const void* src, size_t n) override {
    auto [dm, doff] = find(dst, n);
    auto [sm, soff] = find(src, n);
    check(api().EnqueueCopyBuffer(queue_, sm, dm, soff, doff, n, 0, nullptr, nullptr), "clEnqueueCopyBuffer");
    synchronize();
  }
  void synchronize() override { check(api().Finish(queue_), "clFinish"); }

  const CStyleLanguage& renderer() override { return *renderer_; }
  std::string compiler_key() override { return key_; }

  std::string compile(const std::string& src) override {
    const Api& a = api();
    Handle h;
    const char* s = src.c_str();
    size_t len = src.size();
    cl_int st = 0;
    h.prg = a.CreateProgramWithSource(ctx_, 1, &s, &len, &st);
    check(st, "clCreateProgramWithSource");
    if (a.BuildProgram(h.prg, 1, &dev_, "-cl-kernel-arg-info", nullptr, nullptr) != SUCCESS) {
      std::string msg = "CL: OpenCL failed to compile a kernel:\n" + build_log(h.prg);
      msg += settings().DEBUG >= 4 ? "\nsource:\n" + src : "\n(set DEBUG=4 to see the source)";
      throw Error(msg);
    }
    size_t n = 0;
    check(a.GetProgramInfo(h.prg, PROGRAM_KERNEL_NAMES, 0, nullptr, &n), "clGetProgramInfo");
    std::string names(n, '\0');
    check(a.GetProgramInfo(h.prg, PROGRAM_KERNEL_NAMES, n, names.data(), nullptr), "clGetProgramInfo");
    std::string blob(blob_magic);
    std::stringstream ss(names.c_str());
    for (std::string kn; std::getline(ss, kn, ';');) {
      Handle k;
      k.krn = a.CreateKernel(h.prg, kn.c_str(), &st);
      check(st, "clCreateKernel");
      cl_uint nargs = 0;
      check(a.GetKernelInfo(k.krn, KERNEL_NUM_ARGS, sizeof nargs, &nargs, nullptr), "clGetKernelInfo");
      blob += kn + " ";
      for (cl_uint i = 0; i < nargs; i++) {
        cl_uint q = 0;
        check(a.GetKernelArgInfo(k.krn, i, KERNEL_ARG_ADDRESS_QUALIFIER, sizeof q, &q, nullptr), "clGetKernelArgInfo");
        size_t tn = 0;
        check(a.GetKernelArgInfo(k.krn, i, KERNEL_ARG_TYPE_NAME, 0, nullptr, &tn), "clGetKernelArgInfo");
        std::string type(tn, '\0');
        check(a.GetKernelArgInfo(k.krn, i, KERNEL_ARG_TYPE_NAME, tn, type.data(), nullptr), "clGetKernelArgInfo");
        type = type.c_str();
        blob += (i ? "," : "") + (q == KERNEL_ARG_ADDRESS_PRIVATE && type.find('*') == std::string::npos ? std::to_string(value_size(type)) : "p");
      }
      blob += "\n";
    }
    blob += "\n";
    size_t bsize = 0;
    check(a.GetProgramInfo(h.prg, PROGRAM_BINARY_SIZES, sizeof bsize, &bsize, nullptr), "clGetProgramInfo");
    std::string bin(bsize, '\0');
    unsigned char* bp = reinterpret_cast<unsigned char*>(bin.data());
    check(a.GetProgramInfo(h.prg, PROGRAM_BINARIES, sizeof bp, &bp, nullptr), "clGetProgramInfo");
    return blob + bin;
  }

  std::unique_ptr<Program> load(const std::string& name, const std::string& blob) override {
    auto [args, at] = parse_kernel_blob(blob, blob_magic, "CL", name);
    const Api& a = api();
    const unsigned char* bp = reinterpret_cast<const unsigned char*>(blob.data() + at);
    size_t bsize = blob.size() - at;
    cl_int bst = 0, st = 0;
    Handle h;
    h.prg = a.CreateProgramWithBinary(ctx_, 1, &dev_, &bsize, &bp, &bst, &st);
    check(st, "clCreateProgramWithBinary");
    check(bst, "clCreateProgramWithBinary (binary status)");
    if (a.BuildProgram(h.prg, 1, &dev_, nullptr, nullptr, nullptr) != SUCCESS)
      throw Error("CL: building a program from its binary failed:\n" + build_log(h.prg));
    h.krn = a.CreateKernel(h.prg, name.c_str(), &st);
    check(st, ("clCreateKernel(" + name + ")").c_str());
    auto p = std::make_unique<ClProgram>(name, *this, h.prg, h.krn, std::move(args));
    h.prg = nullptr, h.krn = nullptr;
    return p;
  }

  // the cl_mem a kernel argument pointer stands for (a sub-buffer when it points into an allocation)
  cl_mem mem_of(void* p) {
    auto [m, off] = find(p, 0);
    if (off == 0) return m;
    std::lock_guard lk(mu_);
    Alloc& al = allocs_.at(uintptr_t(p) - off);
    if (auto it = al.subs.find(off); it != al.subs.end()) return it->second;
    if (off % align_ != 0)
      throw Error("CL: a buffer view at byte offset " + std::to_string(off) + " is not aligned to the device's " + std::to_string(align_) +
                  " bytes, so a kernel cannot take it");
    struct { size_t origin, size; } region{off, std::max<size_t>(1, al.size - off)};
    cl_int st = 0;
    cl_mem sub = api().CreateSubBuffer(m, MEM_READ_WRITE, BUFFER_CREATE_TYPE_REGION, &region, &st);
    check(st, "clCreateSubBuffer");
    return al.subs[off] = sub;
  }
  cl_command_queue queue() const { return queue_; }

 protected:
  void* raw_alloc(size_t n) override {
    cl_int st = 0;
    cl_mem m = api().CreateBuffer(ctx_, MEM_READ_WRITE, std::max<size_t>(n, 1), nullptr, &st);
    if (st != SUCCESS) throw Error(name_ + ": cannot allocate " + std::to_string(n) + " bytes: " + error_name(st));
    std::lock_guard lk(mu_);
    uintptr_t base = next_;
    next_ += (n + 4095) / 4096 * 4096 + 4096;  // a gap: an address one past the end belongs to no other buffer
    allocs_[base] = Alloc{m, n, {}};
    return reinterpret_cast<void*>(base);
  }
  void raw_free(void* p, size_t) override {
    Alloc al;
    {
      std::lock_guard lk(mu_);
      auto it = allocs_.find(uintptr_t(p));
      if (it == allocs_.end()) return;
      al = std::move(it->second);
      allocs_.erase(it);
    }
    for (auto& [_, s] : al.subs) api().ReleaseMemObject(s);
    api().ReleaseMemObject(al.mem);
  }

 private:
  struct Alloc {
    cl_mem mem = nullptr;
    size_t size = 0;
    std::map<size_t, cl_mem> subs;  // sub-buffers by offset, released with the allocation
  };
  std::pair<cl_mem, size_t> find(const void* p, size_t n) {
    std::lock_guard lk(mu_);
    uintptr_t a = uintptr_t(p);
    auto it = allocs_.upper_bound(a);
    if (it == allocs_.begin() || a + n > std::prev(it)->first + std::prev(it)->second.size)
      throw Error(name_ + ": " + std::to_string(n) + " bytes at " + std::to_string(a) + " are not in a buffer of this device");
    --it;
    return {it->second.mem, a - it->first};
  }
  std::string build_log(cl_program prg) {
    size_t n = 0;
    if (api().GetProgramBuildInfo(prg, dev_, PROGRAM_BUILD_LOG, 0, nullptr, &n) != SUCCESS) return "(no build log)";
    std::string log(n, '\0');
    api().GetProgramBuildInfo(prg, dev_, PROGRAM_BUILD_LOG, n, log.data(), nullptr);
    return log.c_str();
  }

  cl_device_id dev_ = nullptr;
  cl_context ctx_ = nullptr;
  cl_command_queue queue_ = nullptr;
  std::string key_;
  size_t align_ = 1;
  std::unique_ptr<OpenCLRenderer> renderer_;
  std::mutex mu_;
  std::map<uintptr_t, Alloc> allocs_;
  uintptr_t next_ = uintptr_t(1) << 44;
};

double ClProgram::launch(std::span<void* const> bufs, std::span<const int64_t> vars, const LaunchDims& dims, bool timed) {
  const Api& a = api();
  std::lock_guard lk(mu_);
  size_t nb = 0, nv = 0;
  for (size_t i = 0; i < args_.size(); i++) {
    if (args_[i] == 0) {
      if (nb >= bufs.size()) throw Error("CL: kernel " + name_ + " takes more than the " + std::to_string(bufs.size()) + " buffers given");
      cl_mem m = dev_.mem_of(bufs[nb++]);
      check(a.SetKernelArg(k_, cl_uint(i), sizeof m, &m), "clSetKernelArg");
    } else {
      if (nv >= vars.size()) throw Error("CL: kernel " + name_ + " takes more than the " + std::to_string(vars.size()) + " variables given");
      int64_t v = vars[nv++];  // little endian: the low bytes are the value in the narrower type
      check(a.SetKernelArg(k_, cl_uint(i), args_[i], &v), "clSetKernelArg");
    }
  }
  if (nb != bufs.size() || nv != vars.size())
    throw Error("CL: kernel " + name_ + " takes " + std::to_string(nb) + " buffers and " + std::to_string(nv) + " variables, given " +
                std::to_string(bufs.size()) + " and " + std::to_string(vars.size()));
  bool local = dims.local[0] > 0;
  std::array<size_t, 3> gs{}, ls{};
  for (size_t i = 0; i < 3; i++) ls[i] = size_t(dims.local[i]), gs[i] = size_t(dims.global[i]) * (local ? ls[i] : 1);
  cl_event ev = nullptr;
  check(a.EnqueueNDRangeKernel(dev_.queue(), k_, 3, nullptr, gs.data(), local ? ls.data() : nullptr, 0, nullptr, &ev), "clEnqueueNDRangeKernel");
  struct Release { cl_event e; ~Release() { api().ReleaseEvent(e); } } release{ev};
  check(a.WaitForEvents(1, &ev), ("running the kernel " + name_).c_str());
  if (!timed) return 0.0;
  cl_ulong st = 0, en = 0;
  check(a.GetEventProfilingInfo(ev, PROFILING_COMMAND_START, sizeof st, &st, nullptr), "clGetEventProfilingInfo");
  check(a.GetEventProfilingInfo(ev, PROFILING_COMMAND_END, sizeof en, &en, nullptr), "clGetEventProfilingInfo");
  return double(en - st) * 1e-9;
}

}  // namespace

bool cl_available(const std::string& name) {
  try {
    size_t c = name.find(':');
    return (c == std::string::npos ? 0 : std::stoul(name.substr(c + 1))) < devices().ids.size();
  } catch (const Error&) {
    return false;
  }
}

std::unique_ptr<Device> make_cl_device(const std::string& name) { return std::make_unique<ClDevice>(name); }

}  // namespace tg
