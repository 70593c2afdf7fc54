// The NULL device: renders (clang's C, as for the CPU) but runs nothing. Allocations are fake addresses, compile returns nothing, launches return
// at once, copyout throws (there is no data).
#include <atomic>
#include <cstdint>

#include "runtime/device.h"
#include "tg/error.h"

namespace tg {

namespace {

class NullProgram : public Program {
 public:
  explicit NullProgram(std::string name) : Program(std::move(name)) {}
  double launch(std::span<void* const>, std::span<const int64_t>, const LaunchDims&, bool) override { return 0.0; }
};

class NullDevice : public Device {
 public:
  explicit NullDevice(std::string name) : Device(std::move(name)) {}
  ~NullDevice() override { lru_.free_cache(); }
  void copyin(void*, const void*, size_t) override {}
  void copyout(void*, const void*, size_t) override { throw Error("no copyout on " + name_ + ": the NULL device holds no data"); }
  const CStyleLanguage& renderer() override { return renderer_; }  // the CPU's C, compiled by nothing
  std::string compile(const std::string&) override { return ""; }
  std::unique_ptr<Program> load(const std::string& name, const std::string&) override {
    return std::make_unique<NullProgram>(name);
  }

 protected:
  void* raw_alloc(size_t n) override {
    // distinct, never dereferenced addresses
    uintptr_t a = next_.fetch_add((n + 4095) / 4096 * 4096 + 4096);
    return reinterpret_cast<void*>(a);
  }
  void raw_free(void*, size_t) override {}

 private:
  std::atomic<uintptr_t> next_{uintptr_t(1) << 40};
  ClangRenderer renderer_;
};

}  // namespace

std::unique_ptr<Device> make_null_device(const std::string& name) { return std::make_unique<NullDevice>(name); }

}  // namespace tg
