#include "runtime/clang.h"

#include <algorithm>
#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "runtime/program_cache.h"
#include "tg/error.h"
#include "util/settings.h"
#include "util/process.h"

namespace tg {

// constant-initialized or never destroyed: kernels may be compiled from other files' static initializers and destructors
constinit static std::mutex mu;
constinit static std::atomic<uint64_t> invocations{0};
static std::string& override_path() { static auto* p = new std::string(); return *p; }

void set_clang_path(const std::string& path) {
  std::lock_guard lk(mu);
  override_path() = path;
}

std::string clang_path() {
  if (const std::string& env = settings().TG_CLANG; !env.empty()) return env;
  std::lock_guard lk(mu);
  return override_path().empty() ? "clang" : override_path();
}

const std::vector<std::string>& clang_flags(bool quick) {
  // -ffreestanding/-nostdlib: kernels use only builtins; -fno-math-errno lets __builtin_sqrtf become one instruction;
  // -fno-unroll-loops: the kernels come unrolled as far as their opts ask, clang's unroller only made compiles ~15%
  // slower (docs/benchmarks.md, the cold first step), the steady step and GEMM no faster; -fno-inline: a kernel's only
  // call is its entry wrapper's, and inlined there the kernel (exported too) was optimized and emitted twice: 8-12% of
  // the -O2 compile (docs/benchmarks.md, where a cold step's time goes)
  static const std::vector<std::string> flags{"-shared", "-O2", "-march=native", "-fPIC", "-ffreestanding", "-fno-math-errno",
                                              "-fno-unroll-loops", "-fno-inline", "-nostdlib", "-fno-ident", "-x", "c"};
  static const std::vector<std::string> quick_flags = [] {
    std::vector<std::string> f = flags;
    *std::find(f.begin(), f.end(), "-O2") = "-O0";
    return f;
  }();
  return quick ? quick_flags : flags;
}

static Error not_found(const std::string& cc) {
  return Error("the C compiler '" + cc + "' was not found: the CPU device needs clang to compile kernels. Install it "
               "(Debian/Ubuntu: apt-get install clang; macOS: xcode-select --install) or point TG_CLANG at it");
}

static std::string host_cpu() {
  std::ifstream f("/proc/cpuinfo");
  std::string line, model, flags;
  while (std::getline(f, line) && (model.empty() || flags.empty())) {
    if (model.empty() && line.rfind("model name", 0) == 0) model = line;
    if (flags.empty() && (line.rfind("flags", 0) == 0 || line.rfind("Features", 0) == 0)) flags = line;
  }
  return model + "\n" + flags;
}

std::string clang_identity() {
  static auto& cache = *new std::map<std::string, std::string>();
  std::string cc = clang_path();
  {
    std::lock_guard lk(mu);
    if (auto it = cache.find(cc); it != cache.end()) return it->second;
  }
  ProcessResult r = run_process({cc, "--version"});
  if (!r.started || r.exit_code != 0) throw not_found(cc);
  static const std::string& cpu = *new std::string(host_cpu());
  std::string id = r.out + "\n" + cpu;
  std::lock_guard lk(mu);
  return cache[cc] = id;
}

static std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

std::string clang_compile(const std::string& src) { return clang_compile(std::vector<std::string>{src}); }

std::string clang_compile(const std::vector<std::string>& srcs, bool quick) {
  std::string cc = clang_path();
  TempDir dir;
  auto out_path = dir.path() / "kernel.so";
  std::vector<std::string> argv{cc};
  argv.insert(argv.end(), clang_flags(quick).begin(), clang_flags(quick).end());
  for (size_t i = 0; i < srcs.size(); i++) {
    auto src_path = dir.path() / ("kernel" + std::to_string(i) + ".c");
    std::ofstream f(src_path, std::ios::binary);
    f << srcs[i];
    if (!f) throw Error("cannot write the kernel source to " + src_path.string());
    argv.push_back(src_path.string());
  }
  argv.insert(argv.end(), {"-o", out_path.string()});
  if (!on_background_compile_thread()) invocations++;
  ProcessResult r = run_process(argv);
  if (!r.started) throw not_found(cc);
  std::string what = srcs.size() == 1 ? "a kernel" : "a batch of " + std::to_string(srcs.size()) + " kernels";
  if (r.exit_code != 0) {
    std::string msg = "clang failed to compile " + what + " (exit code " + std::to_string(r.exit_code) + "):\n" + r.err;
    if (settings().DEBUG >= 4) for (auto& src : srcs) msg += "\nsource:\n" + src;
    else msg += "\n(set DEBUG=4 to see the source)";
    throw Error(msg);
  }
  std::string so = read_file(out_path);
  if (so.empty()) throw Error("clang produced no output for " + what + ":\n" + r.err);
  return so;
}

uint64_t clang_invocations() { return invocations.load(); }

}  // namespace tg
