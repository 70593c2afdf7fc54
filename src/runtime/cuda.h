#pragma once
// What the CUDA device compiles with, usable without a GPU or a driver: NVRTC (loaded at run time) for one arch.
//
//   NvrtcCompiler c("sm_90");
//   std::string cubin = c.compile(CUDARenderer("sm_90").render(uops));   // tg::Error with NVRTC's log on failure
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tg {

class NvrtcCompiler {
 public:
  explicit NvrtcCompiler(std::string arch);  // "sm_90"
  // CUDA C -> a CUBIN for the arch; when this NVRTC does not know the arch, PTX for the newest one it knows (which the
  // driver compiles on load). Throws tg::Error with NVRTC's log when compiling fails, and with werror also when NVRTC
  // warns. The binary of a kernel that compiled without warnings is cached (the program cache, compile_cached)
  std::string compile(const std::string& src, bool werror = false) const;
  std::string compile_cached(const std::string& src, bool werror = false) const;
  // NVRTC's version, the arch and the options: what besides the source decides the binary
  std::string key() const;
  const std::string& arch() const { return arch_; }

 private:
  std::string arch_;
};

// NVRTC_CHECK=<arch> (settings): every kernel the engine lowers is also rendered for CUDA with CUDARenderer's fixed caps
// for that arch and compiled by NVRTC, warnings as errors (the engine calls this; DEV=CUDA's kernels without a GPU).
// Counts the kernels checked; the count is printed at exit
void nvrtc_check_source(const std::string& name, const std::string& src, const std::string& arch);
int64_t nvrtc_checked_kernels();

// per kernel of a CUDARenderer source, its arguments in order: 0 for a buffer, else the bytes of a value (what the CUDA
// device stores ahead of the binary, to pass buffers and variables in their interleaved order)
std::map<std::string, std::vector<size_t>> cuda_kernel_args(const std::string& src);

}  // namespace tg
