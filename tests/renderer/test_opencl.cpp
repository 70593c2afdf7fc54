// The OpenCL C renderer against tinygrad's OpenCLRenderer: the hand-linearized programs of tests/kernel_programs.h
// rendered here must give the text tinygrad renders for the same UOp lists (tests/tools/gen_opencl_cases.py prints the
// expected strings below), and the rendered kernels must build on the CL device (PoCL here).
#include <gtest/gtest.h>

#include <cmath>

#include "renderer/cstyle.h"
#include "../kernel_programs.h"
#include "runtime/device.h"
#include "tg/error.h"

using namespace tg;
using namespace tg::testprogs;

namespace {

// ***** expected text, printed by tests/tools/gen_opencl_cases.py at the reference commit *****

const char* k_add = R"TG(
__kernel void E_16(__global float* data0_16, __global float* data1_16, __global float* data2_16) {
  for (int Lidx0 = 0; Lidx0 < 16; Lidx0++) {
    float val0 = (*(data1_16+Lidx0));
    float val1 = (*(data2_16+Lidx0));
    *(data0_16+Lidx0) = (val0+val1);
  }
}
)TG";
const char* k_reduce = R"TG(
__kernel void r_4_4(__global float* data0_4, __global float* data1_16) {
  float buf0[1];
  for (int Lidx1 = 0; Lidx1 < 4; Lidx1++) {
    *(buf0+0) = 0.0f;
    for (int Ridx0 = 0; Ridx0 < 4; Ridx0++) {
      float val0 = (*(data1_16+((Lidx1<<2)+Ridx0)));
      *(buf0+0) = ((*(buf0+0))+val0);
    }
    *(data0_4+Lidx1) = (*(buf0+0));
  }
}
)TG";
const char* k_idiv_half = R"TG(
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
__kernel void E_8(__global half* data0_8, __global int* data1_8) {
  for (int Lidx0 = 0; Lidx0 < 8; Lidx0++) {
    int val0 = (*(data1_8+Lidx0));
    *(data0_8+Lidx0) = sqrt(((half)(((val0/3)-((int)((((val0%3)!=0)&(val0<0))))))));
  }
}
)TG";
const char* k_gated = R"TG(
__kernel void E_24(__global float* data0_24, __global float* data1_16) {
  for (int Lidx0 = 0; Lidx0 < 24; Lidx0++) {
    float val0 = (((3<Lidx0)&(Lidx0<20))?*(data1_16+(Lidx0+-4)):0.0f);
    *(data0_24+Lidx0) = val0;
  }
}
)TG";
const char* k_where_var = R"TG(
__kernel void E_4_8(__global float* data0_32, __global float* data1_32, const int data2_, const int data3_) {
  for (int Lidx0 = 0; Lidx0 < 8; Lidx0++) {
    int alu0 = ((data3_*8)+Lidx0);
    float val0 = (*(data1_32+alu0));
    float alu1 = ((val0<((float)(data2_)))?(val0*2.5f):-val0);
    *(data0_32+alu0) = alu1;
  }
}
)TG";
const char* k_vec4 = R"TG(
__kernel void E_4_4(__global float* data0_16, __global float* data1_16, __global float* data2_16) {
  for (int Lidx0 = 0; Lidx0 < 4; Lidx0++) {
    int alu0 = (Lidx0<<2);
    float4 val0 = (*((__global float4*)((data1_16+alu0))));
    float4 val1 = (*((__global float4*)((data2_16+alu0))));
    *((__global float4*)((data0_16+alu0))) = (float4)((val0.x+val1.x),(val0.y+val1.y),(val0.z+val1.z),(val0.w+val1.w));
  }
}
)TG";
const char* k_misc = R"TG(
__kernel void misc(__global float* data0_16, __global uint* data1_16) {
  for (int Lidx0 = 0; Lidx0 < 4; Lidx0++) {
    int alu0 = (Lidx0<<2);
    uint4 val0 = (*((__global uint4*)((data1_16+alu0))));
    float4 cast0 = ((float4)(val0));
    if ((Lidx0<2)) {
      *((__global float4*)((data0_16+alu0))) = cast0;
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (;;) {
    uint val1 = (*(((__global uint*)(data0_16))+7));
    uint alu6 = (val1^1u);
    *(((__global uint*)(data0_16))+7) = alu6;
    if (!((alu6!=0u))) { break; }
  }
}
)TG";
const char* k_special = R"TG(
__kernel void E_4_4n1(__global float* data0_16, __global float* data1_16) {
  int gidx0 = get_group_id(0); /* 4 */
  int lidx1 = get_local_id(1); /* 4 */
  int alu0 = ((gidx0*4)+lidx1);
  float val0 = (*(data1_16+alu0));
  *(data0_16+alu0) = (val0*2.0f);
}
)TG";

struct Case {
  const char* name;
  std::pair<std::string, L> (*build)();
  const char* expected;
};
const Case kCases[] = {
    {"add", prog_add, k_add},       {"reduce", prog_reduce, k_reduce}, {"idiv_half", prog_idiv_half, k_idiv_half},
    {"gated", prog_gated, k_gated}, {"where_var", prog_where_var, k_where_var}, {"vec4", prog_vec4, k_vec4},
    {"misc", prog_misc, k_misc},    {"special", prog_special, k_special},
};

std::string trimmed(const char* s) { return std::string(s).substr(1, std::string(s).size() - 2); }  // the raw strings' newlines

}  // namespace

TEST(OpenCL, MatchesTinygrad) {
  OpenCLRenderer ren;
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    auto [name, uops] = c.build();
    std::string want = trimmed(c.expected);
    // ours: OpenCL C has no casts between vector types, so a vector CAST is convert_<type>() (tinygrad writes a C cast,
    // which an OpenCL compiler rejects)
    if (std::string(c.name) == "misc") {
      size_t at = want.find("((float4)(val0))");
      ASSERT_NE(at, std::string::npos);
      want.replace(at, 16, "convert_float4(val0)");
    }
    EXPECT_EQ(ren.render(uops), want);
  }
  auto [name, uops] = prog_consts();
  EXPECT_THROW(ren.render(uops), Error);  // FDIV: clang's op, not OpenCL's (tinygrad raises too)
}

// every case builds with the CL device's compiler, except idiv_half: it does half math directly, which the pipeline
// rewrites to float32 on a device without cl_khr_fp16 (PoCL's CPU device) before rendering
TEST(OpenCL, BuildsOnTheClDevice) {
  Device& dev = get_device("CL");
  auto& ren = static_cast<const OpenCLRenderer&>(dev.renderer());
  for (const Case& c : kCases) {
    if (std::string(c.name) == "idiv_half" && !ren.native_half()) continue;
    SCOPED_TRACE(c.name);
    auto [name, uops] = c.build();
    EXPECT_NO_THROW(dev.compile(ren.render(uops)));
  }
}

// without cl_khr_fp16 half is ushort in memory and its literals are bit patterns; with it, the pragma and the type
TEST(OpenCL, HalfWithAndWithoutTheExtension) {
  auto [name, uops] = prog_idiv_half();
  std::string native = OpenCLRenderer(true).render(uops), soft = OpenCLRenderer(false).render(uops);
  EXPECT_EQ(native.rfind("#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n", 0), 0u) << native;
  EXPECT_NE(native.find("__global half* data0_8"), std::string::npos) << native;
  EXPECT_EQ(soft.find("#pragma"), std::string::npos) << soft;
  EXPECT_NE(soft.find("__global ushort* data0_8"), std::string::npos) << soft;
  EXPECT_NE(OpenCLRenderer(true).identity(), OpenCLRenderer(false).identity());  // programs are memoized per renderer
}
