#pragma once
// C-style renderers: a linearized kernel (the list of UOps tinygrad's renderer receives) to C source text.
//
// The text of each node comes from a PatternMatcher over that node (`string_rewrite`): a rule matches a node and
// writes its C spelling into the RenderCtx (see `emit`), looking up the names of its sources with ctx[src]. The
// driver (CStyleLanguage::render_parts) walks the list once, names the nodes as tinygrad does (data0_16, Lidx0,
// alu0, val0, cast0, bidx0, buf0), inlines single-use expressions and emits the rest as lines.
//
//   ClangRenderer ren;
//   std::string src = ren.render(uops, "E_16");          // tinygrad's text: vector typedefs, then `void E_16(...) {...}`
//   RenderedKernel k = ren.render_kernel(uops, "E_16");  // the same text plus the parameter list (for a runtime)
//
// Calling convention: the kernel is tinygrad's `void name(float* restrict data0_16, ..., const int data2_)`: one
// argument per PARAM in the order the PARAMs appear in the list (the linearizer puts them first, by slot), a buffer
// as a pointer, an int variable (an ALU param such as core_id) by value. A runtime that
// wants another entry point (one pointer to an argument array, say) asks for an entry wrapper: see EntryStyle and
// render_entry below; that part is isolated so the runtime can pick or replace it without touching the renderer.
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "renderer/renderer.h"
#include "uop/nodemap.h"
#include "uop/upat.h"

namespace tg {

// one kernel argument, in call order
struct KernelParam {
  std::string name;                // the C name: data0_16, data2_
  int64_t slot = 0;                // the PARAM's slot
  DType dtype;                     // element dtype (a buffer) or value dtype (a variable)
  AddrSpace addrspace = AddrSpace::GLOBAL;  // GLOBAL: a pointer; ALU: an int variable passed by value
  bool writable = false;           // the kernel stores into it
  bool is_volatile = false;
  std::optional<std::string> var_name;  // a variable's name ("core_id", "n")
  int64_t numel = 0;               // elements of a buffer (max over symbolic sizes); 1 for a variable
  std::string c_type;              // the C type as written in the signature: "float* restrict", "const int"
  bool is_buffer() const { return addrspace != AddrSpace::ALU; }
};

// how a runtime calls into the kernel
enum class EntryStyle {
  None,      // no wrapper: call `name(...)` with tinygrad's signature (tinygrad's own ClangRenderer emits nothing here)
  ArgArray,  // `void name_entry(const unsigned long long* args)`: one 64-bit word per param in call order; a buffer word
             // holds its address, a variable word its value (what tinygrad's CPU runtime passes, as c_uint64s)
  Runtime,   // `void name_entry(void* const* bufs, const long long* vars, int core_id)`: our CPU runtime's convention
             // (src/runtime/device.h): buffers and variables in call order, the variable named core_id from the launch
};

struct RenderedKernel {
  std::string name;    // the C function name
  std::string src;     // the full translation unit
  std::vector<KernelParam> params;
  std::string entry_name;  // the function a runtime calls: name, or name + "_entry" with EntryStyle::ArgArray
};

class CStyleLanguage;

// what a string rule sees: the renderer, the names of the nodes rendered so far, and the slot for its output
struct RenderCtx {
  const CStyleLanguage* ren = nullptr;
  NodeMap<std::string>* r = nullptr;
  std::string out;
  bool simd = false;  // ren->simd_vectors(), read once per kernel
  const std::string& operator[](const UOp& u) const;  // the name (or inlined text) of an already-rendered node
};
// a string rule's result: store `s` as the node's text and report a match
UOp emit(M m, std::string s);

// a C dialect: the options tinygrad's CStyleLanguage has, and its string rules
class CStyleLanguage : public Renderer {
 public:
  std::string kernel_typedef = "void";
  std::string buffer_prefix, buffer_suffix, smem_align, smem_prefix;
  bool smem_prefix_for_cast = true;
  std::string var_prefix = "const ", var_suffix;
  std::string barrier;
  std::string float4_fmt = "";  // how a vector literal starts, with "float4" standing for the type; empty: none
  std::pair<std::string, std::string> float4_style{"(", ")"};
  int64_t gep_arr_threshold = 4;
  // kernels shaped for vector units (SIMD=1, and a renderer that can): folded accumulators, vector-wide float accesses,
  // register arrays aligned to the vector
  bool simd_vectors() const;
  // floats per vector register of those kernels: the renderer's vector_width, or CPU_VECTOR_WIDTH where set; 0 when not
  // simd_vectors()
  int64_t simd_width() const;
  std::unordered_map<DTypeId, std::string> type_map;
  std::string infinity = "INFINITY", nan = "NAN";
  std::string abi;
  // SPECIAL (GPU thread ids) by the first letter of its name: 'g' group, 'l' local, 'i' global; given the axis digit.
  // Empty for clang (CPU threads are the core_id variable, an ALU PARAM)
  std::unordered_map<char, std::function<std::string(const std::string&)>> code_for_workitem;
  // the C text of an ALU op given its operands' text; ops missing here cannot be rendered
  using OpFn = std::function<std::string(const std::vector<std::string>&, DType)>;
  std::unordered_map<Ops, OpFn> code_for_op;
  PatternMatcher string_rewrite;
  // tinygrad's Renderer.extra_matcher: the dialect's own rewrites in the last decomposition pass (nullptr: none)
  const PatternMatcher* extra_matcher = nullptr;
  // how the runtime calls the kernel (Runtime: the CPU's wrapper; None: by its own name and signature, as OpenCL does)
  EntryStyle entry_style = EntryStyle::Runtime;

  CStyleLanguage();
  std::string identity() const override;  // adds the type names
  // the whole translation unit for a linearized kernel; `name` overrides the SINK's name (tinygrad takes
  // KernelInfo.function_name); with no name and no string arg on the SINK the kernel is called "test"
  virtual std::string render(const std::vector<UOp>& uops, const std::string& name = "") const;
  RenderedKernel render_kernel(const std::vector<UOp>& uops, const std::string& name = "", EntryStyle entry = EntryStyle::None) const;

  // ** pieces, as tinygrad names them **
  struct Parts {
    std::string name;
    std::vector<std::string> kernel;  // indented body lines
    std::vector<std::pair<std::string, std::pair<UOp, bool>>> bufs;  // (name, (PARAM, writable)) in order of appearance
  };
  Parts render_parts(const std::vector<UOp>& uops, const std::string& name) const;
  virtual std::string assemble(const Parts& p, const std::vector<UOp>& uops) const;  // tinygrad's render_kernel
  std::string render_body(const Parts& p, const std::vector<UOp>& uops, const std::vector<std::string>* prefix = nullptr) const;
  std::string render_dtype(DType dt, int64_t sz = 1, AddrSpace addrspace = AddrSpace::ALU, bool override_ptr = false) const;
  std::string render_type(const UOp& u) const;  // dtype, lanes and pointer-ness of a node
  std::string render_access(const RenderCtx& ctx, const UOp& bidx) const;
  std::string render_cast(const UOp& u, const std::string& val) const { return "(" + render_type(u) + ")(" + val + ")"; }
  std::string render_index(const RenderCtx& ctx, const UOp& buf, const UOp& idx) const;
  std::string render_buffer(const RenderCtx& ctx, const UOp& x) const;
  std::vector<KernelParam> params_of(const Parts& p) const;
};

// tinygrad's ClangRenderer: C for clang, vectors as ext_vector_type typedefs, __builtin math. Its caps are the host's:
// threads up to the hardware's, no locals or shared memory, no tensor cores, vector_width from the CPU
class ClangRenderer : public CStyleLanguage {
 public:
  ClangRenderer();
  std::string assemble(const Parts& p, const std::vector<UOp>& uops) const override;
  std::vector<std::string> render_defines(const std::vector<UOp>& uops) const;
  std::string render_vector_prefix(DType dt, int64_t count) const;
};
const PatternMatcher& clang_extra_matcher();  // ClangRenderer.extra_matcher: float casts through float32, bfloat16 in software

// tinygrad's OpenCLRenderer: OpenCL C (__kernel, __global / __local, get_group_id / get_local_id, barriers, as_T
// bitcasts, (float4)(...) vectors, half through cl_khr_fp16, bfloat16 as ushort in software). Its caps are set by the
// device that owns it (runtime/cl.cpp): locals and shared memory with the device's limits, no threads, no tensor cores.
// A device without cl_khr_fp16 (PoCL's CPU device) gets native_half=false: half is stored as ushort and computed in
// float32 like bfloat16 (ours; tinygrad drops half from such a device's dtypes)
class OpenCLRenderer : public CStyleLanguage {
 public:
  explicit OpenCLRenderer(bool native_half = true);
  std::string assemble(const Parts& p, const std::vector<UOp>& uops) const override;
  bool native_half() const { return native_half_; }

 private:
  bool native_half_;
};
// bfloat16 (and without native half, float16) ALU through float32, their casts as bit operations
const PatternMatcher& opencl_extra_matcher(bool native_half);
// fp8 ALU through float32; the fnuz formats' casts in software (CUDA has types for the OCP formats only)
const PatternMatcher& cuda_extra_matcher();

// tinygrad's CUDARenderer: CUDA C for NVRTC (extern "C" __global__ kernels with __launch_bounds__, __shared__,
// __syncthreads, blockIdx/threadIdx, half and bfloat16 from cuda_fp16.h / cuda_bf16.h with their vector structs,
// tg_bitcast). Built with tinygrad's fixed caps, which are an sm_90 GPU's (1024 threads per block, 48 KiB static shared
// memory): what the renderer gives without a GPU; the CUDA device narrows them to what its GPU reports. No tensor cores
class CUDARenderer : public CStyleLanguage {
 public:
  explicit CUDARenderer(std::string arch = "sm_90");
  std::string assemble(const Parts& p, const std::vector<UOp>& uops) const override;
  std::string identity() const override;
  std::string render_vector_prefix(DType dt, int64_t count) const;
  std::string arch;  // sm_XY: the compile target
};

// an entry wrapper that calls `kernel` with the words of an argument array (EntryStyle::ArgArray); "" for None
std::string render_entry(const std::string& kernel, const std::vector<KernelParam>& params, EntryStyle style,
                         const CStyleLanguage& ren);

// the name of a WMMA's prelude function without its "__": WMMA_8_16_16_half_float (tinygrad's _wmma_name)
std::string wmma_name(const UOp& u);

// ** properties of linearized nodes the renderer needs (UOp::shape() wants plain CONST shape args; these accept the
//    casted consts and symbolic SHRINK offsets of lowered programs, and size symbolic dims by their max) **
const std::optional<Shape>& lin_max_shape(const UOp& u);  // cached on the node
int64_t lin_max_numel(const UOp& u);  // 1 for a node without shape

}  // namespace tg
