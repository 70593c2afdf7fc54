// tinygrad's OpenCLRenderer (renderer/cstyle.py): the OpenCL C dialect of the C-style renderer.
#include <cmath>
#include <cstring>

#include "renderer/cstyle.h"
#include "uop/pattern_helpers.h"

namespace tg {

namespace {
using enum Ops;
RenderCtx& cx(M m) { return m.ctx<RenderCtx>(); }
const CStyleLanguage& rn(M m) { return *m.ctx<RenderCtx>().ren; }

// the bits of a float rounded to bfloat16 (round to nearest even; NaN stays a quiet NaN)
uint32_t bf16_bits(double v) {
  float f = float(v);
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return std::isnan(f) ? 0x7fc0u : (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
}
// the bits of a value rounded to float16 (to nearest even: _Float16 does the rounding)
uint32_t f16_bits(double v) {
  _Float16 h = _Float16(v);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}

PatternMatcher opencl_rewrite() {
  return PatternMatcher{
      // a value bitcast is as_<type>(), a pointer bitcast falls through to the C cast
      UPat(BITCAST, {}, {}, {}, "x", true) >> [](M m) -> UOp {
        const UOp& x = m.root();
        auto as = x.addrspace();
        if (as == AddrSpace::GLOBAL || as == AddrSpace::LOCAL) return {};
        return emit(m, "as_" + rn(m).render_type(x) + "((" + rn(m).render_type(x.src(0)) + ")(" + cx(m)[x.src(0)] + "))");
      },
      // OpenCL C has no casts between vector types: convert_<type>() (ours; tinygrad writes a C cast here)
      UPat(CAST, {}, {}, {}, "x", true) >> [](M m) -> UOp {
        const UOp& x = m.root();
        auto as = x.addrspace();
        if (lin_max_numel(x) <= 1 || as == AddrSpace::GLOBAL || as == AddrSpace::LOCAL) return {};
        return emit(m, "convert_" + rn(m).render_type(x) + "(" + cx(m)[x.src(0)] + ")");
      },
      // bfloat16 is stored as ushort: a literal is its bit pattern
      UPat(CAST, dtypes::bfloat16, {UPat::cvar("c")}) >> [](M m) { return emit(m, std::to_string(bf16_bits(m["c"].val().as_double())) + "u"); },
      // so is half on a device without cl_khr_fp16
      UPat(CAST, dtypes::float16, {UPat::cvar("c")}) >> [](M m) -> UOp {
        if (static_cast<const OpenCLRenderer&>(rn(m)).native_half()) return {};
        return emit(m, "((ushort)" + std::to_string(f16_bits(m["c"].val().as_double())) + "u)");
      },
  };
}
}  // namespace

OpenCLRenderer::OpenCLRenderer(bool native_half) : native_half_(native_half) {
  device = "CL";
  has_local = true, has_shared = true, has_threads = false;
  kernel_typedef = "__kernel void";
  buffer_prefix = "__global ";
  smem_align = "__attribute__ ((aligned (16))) ";
  smem_prefix = "__local ";
  barrier = "barrier(CLK_LOCAL_MEM_FENCE);";
  float4_fmt = "(float4)";
  code_for_workitem = {{'g', [](const std::string& x) { return "get_group_id(" + x + ")"; }},
                       {'l', [](const std::string& x) { return "get_local_id(" + x + ")"; }},
                       {'i', [](const std::string& x) { return "get_global_id(" + x + ")"; }}};
  type_map = {{DTypeId::int8, "char"},   {DTypeId::uint8, "uchar"},   {DTypeId::uint32, "uint"},
              {DTypeId::uint16, "ushort"}, {DTypeId::uint64, "ulong"}, {DTypeId::bfloat16, "ushort"}};
  string_rewrite = opencl_rewrite() + string_rewrite;
  if (!native_half) type_map[DTypeId::float16] = "ushort";
  for (DTypeId d : {DTypeId::fp8e4m3, DTypeId::fp8e5m2, DTypeId::fp8e4m3fnuz, DTypeId::fp8e5m2fnuz}) type_map[d] = "uchar";
  extra_matcher = &opencl_extra_matcher(native_half);
  entry_style = EntryStyle::None;
}

std::string OpenCLRenderer::assemble(const Parts& p, const std::vector<UOp>& uops) const {
  for (auto& u : uops)
    if (native_half_ && u.dtype() == dtypes::float16) {
      std::vector<std::string> prefix{"#pragma OPENCL EXTENSION cl_khr_fp16 : enable"};
      return render_body(p, uops, &prefix);
    }
  return render_body(p, uops);
}

}  // namespace tg
