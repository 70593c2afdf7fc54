// tinygrad's CUDARenderer (renderer/cstyle.py): the CUDA C dialect of the C-style renderer.
#include <algorithm>

#include "renderer/cstyle.h"
#include "uop/args.h"
#include "uop/pattern_helpers.h"

namespace tg {

namespace {
using enum Ops;
RenderCtx& cx(M m) { return m.ctx<RenderCtx>(); }
const CStyleLanguage& rn(M m) { return *m.ctx<RenderCtx>().ren; }

PatternMatcher cuda_rewrite() {
  return PatternMatcher{
      // a value bitcast goes through a union (tg_bitcast, in the prefix); pointer bitcasts fall through to the C cast
      UPat(BITCAST, {}, {}, {}, "x", true) >> [](M m) -> UOp {
        const UOp& x = m.root();
        auto as = x.addrspace();
        if (as == AddrSpace::GLOBAL || as == AddrSpace::LOCAL) return {};
        const CStyleLanguage& r = rn(m);
        return emit(m, "tg_bitcast<" + r.render_dtype(x.dtype(), 1, AddrSpace::REG) + ">((" + r.render_dtype(x.src(0).dtype(), 1, AddrSpace::REG) +
                           ")(" + cx(m)[x.src(0)] + "))");
      },
  };
}

constexpr const char* lane_names[] = {"x", "y", "z", "w", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"};
}  // namespace

CUDARenderer::CUDARenderer(std::string arch_) : arch(std::move(arch_)) {
  device = "CUDA";
  has_local = true, has_shared = true, has_threads = false;
  global_max = {2147483647, 65535, 65535};
  local_max = {1024, 1024, 64};
  shared_max = 49152;
  tensor_cores = cuda_tensor_cores(arch);
  kernel_typedef = "extern \"C\" __global__ void __launch_bounds__({launch_bounds})";
  smem_prefix = "__shared__ __align__(16) ";
  smem_prefix_for_cast = false;
  barrier = "__syncthreads();";
  float4_fmt = "make_float4";
  gep_arr_threshold = 8;
  auto axis = [](const std::string& x) { return std::string(1, char('x' + std::stoi(x))); };
  code_for_workitem = {{'g', [axis](const std::string& x) { return "blockIdx." + axis(x); }},
                       {'l', [axis](const std::string& x) { return "threadIdx." + axis(x); }},
                       {'i', [axis](const std::string& x) {
                          std::string a = axis(x);
                          return "(blockIdx." + a + "*blockDim." + a + "+threadIdx." + a + ")";
                        }}};
  // half and bfloat16 math has its own intrinsics
  auto H = [](std::string h, std::string f, std::string post = ")") -> OpFn {
    return [h, f, post](const std::vector<std::string>& a, DType dt) {
      return (dt == dtypes::float16 || dt == dtypes::bfloat16 ? h : f) + a[0] + post;
    };
  };
  code_for_op[TRUNC] = H("htrunc(", "trunc(");
  code_for_op[SIN] = H("hsin(", "sin(");
  code_for_op[LOG2] = H("hlog2(", "log2(");
  code_for_op[EXP2] = H("hexp2(", "exp2(");
  code_for_op[SQRT] = H("hsqrt(", "sqrt(");
  code_for_op[RECIPROCAL] = H("hrcp(", "(1/");
  type_map = {{DTypeId::uint32, "uint"},           {DTypeId::bfloat16, "nv_bfloat16"},       {DTypeId::fp8e4m3, "__nv_fp8_e4m3"},
              {DTypeId::fp8e5m2, "__nv_fp8_e5m2"}, {DTypeId::fp8e4m3fnuz, "unsigned char"}, {DTypeId::fp8e5m2fnuz, "unsigned char"}};
  extra_matcher = &cuda_extra_matcher();
  string_rewrite = cuda_rewrite() + string_rewrite;
  entry_style = EntryStyle::None;
}

std::string CUDARenderer::identity() const { return CStyleLanguage::identity() + "|" + arch; }

std::string CUDARenderer::render_vector_prefix(DType dt, int64_t count) const {
  std::string vec = render_dtype(dt, count, AddrSpace::REG), scal = render_dtype(dt, 1, AddrSpace::REG), elems, header;
  for (int64_t i = 0; i < count; i++) {
    elems += (i ? ", " : "") + std::string(lane_names[i]);
    header += (i ? ", " : "") + scal + " " + lane_names[i];
  }
  return "struct __align__(" + std::to_string(dt.itemsize() * count) + ") " + vec + " { " + scal + " " + elems + "; }; __device__ " + vec +
         " make_" + vec + "(" + header + ") { " + vec + " r={" + elems + "}; return r; }";
}

std::string CUDARenderer::assemble(const Parts& p, const std::vector<UOp>& uops) const {
  std::vector<std::string> prefix{"typedef unsigned int uint;", "#define INFINITY (__int_as_float(0x7f800000))",
                                  "#define NAN (__int_as_float(0x7fffffff))",
                                  "template <class T, class F> __device__ __forceinline__ T tg_bitcast(F v) { union U { F f; T t; }; U u; u.f = v; return u.t; }"};
  // the (dtype, lanes) of the values (tinygrad's uops_to_dtypes), in order of first use
  std::vector<std::pair<DType, int64_t>> used;
  for (auto& u : uops) {
    auto as = u.addrspace();
    if ((as && *as != AddrSpace::ALU) || u.dtype() == dtypes::void_ || !lin_max_shape(u)) continue;
    std::pair<DType, int64_t> k{u.dtype(), lin_max_numel(u)};
    if (std::find(used.begin(), used.end(), k) == used.end()) used.push_back(k);
  }
  auto uses = [&](DType d) { return std::any_of(used.begin(), used.end(), [&](auto& k) { return k.first == d; }); };
  auto native_fp8 = [](DType d) { return d == dtypes::fp8e4m3 || d == dtypes::fp8e5m2; };
  if (uses(dtypes::fp8e4m3) || uses(dtypes::fp8e5m2)) prefix.push_back("#include <cuda_fp8.h>");
  if (uses(dtypes::float16)) prefix.push_back("#include <cuda_fp16.h>");
  if (uses(dtypes::bfloat16)) prefix.push_back("#include <cuda_bf16.h>");
  for (auto& [dt, n] : used)
    if (((n == 4 || n == 8) && (dt == dtypes::float16 || dt == dtypes::bfloat16)) || ((n == 2 || n == 4 || n == 8 || n == 16) && native_fp8(dt)))
      prefix.push_back(render_vector_prefix(dt, n));
  // a function per tensor core op used: its operands packed in 32-bit registers for the mma.sync PTX
  std::vector<std::string> seen;
  for (auto& u : uops) {
    if (u.op() != WMMA) continue;
    const WmmaArg* w = wmma_arg(u);
    std::string name = wmma_name(u);
    std::array<DType, 3> dts{w->dtype_in, w->dtype_in, u.dtype()};
    std::array<int64_t, 3> sizes;
    for (size_t i = 0; i < 3; i++) sizes[i] = lin_max_shape(u.src(i))->back();
    std::string key = name + "|" + std::to_string(sizes[0]) + "," + std::to_string(sizes[1]) + "," + std::to_string(sizes[2]);
    if (has(seen, key)) continue;
    seen.push_back(key);
    std::array<std::string, 3> t;
    std::array<int64_t, 3> n;  // 32-bit registers per operand
    for (size_t i = 0; i < 3; i++) t[i] = render_dtype(dts[i], sizes[i], AddrSpace::REG), n[i] = sizes[i] * dts[i].itemsize() / 4;
    auto regs = [](int64_t from, int64_t count) {
      std::string r;
      for (int64_t i = 0; i < count; i++) r += (i ? ", %" : "%") + std::to_string(from + i);
      return "{" + r + "}";
    };
    auto pk = [](const char* c, const char* p, int64_t count) {
      std::string r;
      for (int64_t i = 0; i < count; i++) r += std::string(i ? ", " : "") + c + "(" + p + "_pk[" + std::to_string(i) + "])";
      return r;
    };
    auto in = [](DType d) -> std::string {
      return d == dtypes::float_ ? "tf32" : d == dtypes::half ? "f16" : d == dtypes::bfloat16 ? "bf16" : d == dtypes::fp8e4m3 ? "e4m3" : "e5m2";
    };
    std::string out = u.dtype() == dtypes::half ? "f16" : "f32", di = in(w->dtype_in);
    prefix.push_back("__device__ " + t[2] + " __" + name + "(" + t[0] + " a, " + t[1] + " b, " + t[2] + " c){\n" +
                     "  int *a_pk = (int *)(&a), *b_pk = (int *)(&b), *c_pk = (int *)(&c);\n" +
                     "  asm(\"mma.sync.aligned.m" + std::to_string(w->dims[1]) + "n" + std::to_string(w->dims[0]) + "k" + std::to_string(w->dims[2]) +
                     ".row.col." + out + "." + di + "." + di + "." + out + "\"\n" +
                     "      \"" + regs(0, n[2]) + ", " + regs(n[2], n[0]) + ",\"\n" +
                     "      \"" + regs(n[2] + n[0], n[1]) + ", " + regs(0, n[2]) + ";\"\n" +
                     "    : " + pk("\"+r\"", "c", n[2]) + "\n" +
                     "    : " + pk("\"r\"", "a", n[0]) + ", " + pk("\"r\"", "b", n[1]) + ");\n" +
                     "  return c;\n}");
  }
  return render_body(p, uops, &prefix);
}

}  // namespace tg
