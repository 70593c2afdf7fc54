// The C renderer (clang dialect) against tinygrad's ClangRenderer: hand-linearized programs rendered here must give
// the text tinygrad renders for the same UOp lists (tests/tools/gen_cstyle_cases.py builds them in Python and prints
// the expected strings below), and every rendered kernel must pass `clang -fsyntax-only`. clang is required: a
// missing clang fails the tests, it does not skip them.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>

#include "renderer/cstyle.h"
#include "../kernel_programs.h"
#include "runtime/buffer.h"
#include "runtime/device.h"
#include "tg/context.h"

using namespace tg;
using namespace tg::testprogs;

namespace {

// ***** expected text, printed by tests/tools/gen_cstyle_cases.py at the reference commit *****

const char* k_add = R"TG(
void E_16(float* restrict data0_16, float* restrict data1_16, float* restrict data2_16) {
  for (int Lidx0 = 0; Lidx0 < 16; Lidx0++) {
    float val0 = (*(data1_16+Lidx0));
    float val1 = (*(data2_16+Lidx0));
    *(data0_16+Lidx0) = (val0+val1);
  }
}
)TG";
const char* k_reduce = R"TG(
void r_4_4(float* restrict data0_4, float* restrict data1_16) {
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
void E_8(__fp16* restrict data0_8, int* restrict data1_8) {
  for (int Lidx0 = 0; Lidx0 < 8; Lidx0++) {
    int val0 = (*(data1_8+Lidx0));
    *(data0_8+Lidx0) = __builtin_sqrtf(((__fp16)(((val0/3)-((int)((((val0%3)!=0)&(val0<0))))))));
  }
}
)TG";
const char* k_gated = R"TG(
void E_24(float* restrict data0_24, float* restrict data1_16) {
  for (int Lidx0 = 0; Lidx0 < 24; Lidx0++) {
    float val0 = (((3<Lidx0)&(Lidx0<20))?*(data1_16+(Lidx0+-4)):0.0f);
    *(data0_24+Lidx0) = val0;
  }
}
)TG";
const char* k_where_var = R"TG(
void E_4_8(float* restrict data0_32, float* restrict data1_32, const int data2_, const int data3_) {
  for (int Lidx0 = 0; Lidx0 < 8; Lidx0++) {
    int alu0 = ((data3_*8)+Lidx0);
    float val0 = (*(data1_32+alu0));
    float alu1 = ((val0<((float)(data2_)))?(val0*2.5f):-val0);
    *(data0_32+alu0) = alu1;
  }
}
)TG";
const char* k_vec4 = R"TG(typedef float float4 __attribute__((aligned(16),ext_vector_type(4)));
void E_4_4(float* restrict data0_16, float* restrict data1_16, float* restrict data2_16) {
  for (int Lidx0 = 0; Lidx0 < 4; Lidx0++) {
    int alu0 = (Lidx0<<2);
    float4 val0 = (*((float4*)((data1_16+alu0))));
    float4 val1 = (*((float4*)((data2_16+alu0))));
    *((float4*)((data0_16+alu0))) = (float4){(val0[0]+val1[0]),(val0[1]+val1[1]),(val0[2]+val1[2]),(val0[3]+val1[3])};
  }
}
)TG";
const char* k_consts = R"TG(
void consts(unsigned int* restrict data0_1, long* restrict data1_1, unsigned long* restrict data2_1, _Bool* restrict data3_1, signed char* restrict data4_1, unsigned char* restrict data5_1, __fp16* restrict data6_1, float* restrict data7_1, volatile double* restrict data8_1, short* restrict data9_1) {
  unsigned int val0 = (*(data0_1+0));
  unsigned int alu0 = ((val0^7u)>>1u);
  unsigned int alu1 = ((alu0<7u)?7u:alu0);
  long val1 = (*(data1_1+0));
  float val2 = (*(data7_1+0));
  double val3 = (*(data8_1+0));
  double alu2 = (__builtin_sqrt(val3)+0.25);
  double alu3 = ((alu2!=alu2)?((double)(__builtin_nanf(""))):alu2);
  *(data0_1+0) = alu1;
  *(data1_1+0) = (val1*-5l);
  *(data2_1+0) = 9223372036854775808ul;
  *(data3_1+0) = ((__builtin_bit_cast(unsigned int, (float)(val2))==7u)&1);
  *(data4_1+0) = ((signed char)(-3));
  *(data5_1+0) = ((unsigned char)(200u));
  *(data6_1+0) = ((__fp16)(1.5f));
  *(data7_1+0) = (__builtin_truncf(val2)/((float)(__builtin_inff())));
  *(data8_1+0) = alu3;
  *(data9_1+0) = ((short)(-7));
}
)TG";
const char* k_misc = R"TG(typedef unsigned int unsigned_int4 __attribute__((aligned(16),ext_vector_type(4)));
typedef float float4 __attribute__((aligned(16),ext_vector_type(4)));
void misc(float* restrict data0_16, unsigned int* restrict data1_16) {
  for (int Lidx0 = 0; Lidx0 < 4; Lidx0++) {
    int alu0 = (Lidx0<<2);
    unsigned_int4 val0 = (*((unsigned_int4*)((data1_16+alu0))));
    float4 cast0 = ((float4)(val0));
    if ((Lidx0<2)) {
      *((float4*)((data0_16+alu0))) = cast0;
    }
  }
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  for (;;) {
    unsigned int val1 = (*(((unsigned int*)(data0_16))+7));
    unsigned int alu6 = (val1^1u);
    *(((unsigned int*)(data0_16))+7) = alu6;
    if (!((alu6!=0u))) { break; }
  }
}
)TG";
const char* k_special = R"TG(void E_4_4n1(float* data0_16, float* data1_16) {
  int gidx0 = blockIdx.x; /* 4 */
  int lidx1 = threadIdx.y; /* 4 */
  int alu0 = ((gidx0*4)+lidx1);
  float val0 = (*(data1_16+alu0));
  *(data0_16+alu0) = (val0*2.0f);
})TG";

// the base C-style dialect with GPU thread ids (what tools/gen_cstyle_cases.py's GPULike is)
struct GPULike : CStyleLanguage {
  GPULike() {
    code_for_workitem['g'] = [](const std::string& d) { return "blockIdx." + std::string(1, char('x' + std::stoi(d))); };
    code_for_workitem['l'] = [](const std::string& d) { return "threadIdx." + std::string(1, char('x' + std::stoi(d))); };
  }
};

// ***** clang *****

std::string tmp_path(const std::string& ext) {
  static int n = 0;
  return "/tmp/tg_test_cstyle_" + std::to_string(getpid()) + "_" + std::to_string(n++) + ext;
}
bool have_clang() { return std::system("command -v clang > /dev/null 2>&1") == 0; }
// "" when clang accepts the source, else clang's complaint
std::string clang_check(const std::string& src, const std::string& flags = "-fsyntax-only") {
  std::string c = tmp_path(".c"), log = tmp_path(".log");
  std::ofstream(c) << src;
  int rc = std::system(("clang -x c " + flags + " " + c + " > " + log + " 2>&1").c_str());
  std::ifstream in(log);
  std::string msg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(c.c_str());
  std::remove(log.c_str());
  return rc == 0 ? "" : "clang failed (" + std::to_string(rc) + "):\n" + msg + "\n--- source:\n" + src;
}

struct Case {
  const char* name;
  std::pair<std::string, L> (*build)();
  const char* expected;
};
const Case kCases[] = {
    {"add", prog_add, k_add},           {"reduce", prog_reduce, k_reduce},          {"idiv_half", prog_idiv_half, k_idiv_half},
    {"gated", prog_gated, k_gated},     {"where_var", prog_where_var, k_where_var}, {"vec4", prog_vec4, k_vec4},
    {"consts", prog_consts, k_consts},  {"misc", prog_misc, k_misc},
};

}  // namespace

TEST(CStyle, MatchesTinygrad) {
  Context tinygrad_kernels({{"SIMD", 0}});  // our CPU SIMD shaping departs from tinygrad on purpose
  ClangRenderer ren;
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    auto [name, uops] = c.build();
    EXPECT_EQ(ren.render(uops), c.expected);
  }
}

TEST(CStyle, CompilesWithClang) {
  ASSERT_TRUE(have_clang()) << "clang is required to check the rendered C";
  ClangRenderer ren;
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    auto [name, uops] = c.build();
    EXPECT_EQ(clang_check(ren.render(uops)), "");
    EXPECT_EQ(clang_check(ren.render_kernel(uops, "", EntryStyle::ArgArray).src), "");
  }
}

TEST(CStyle, SpecialMatchesTinygrad) {
  auto [name, uops] = prog_special();
  EXPECT_EQ(GPULike().render(uops), k_special);
  EXPECT_THROW(ClangRenderer().render(uops), Error);  // clang has no thread ids
}

TEST(CStyle, NameOverrideAndParams) {
  ClangRenderer ren;
  auto [name, uops] = prog_where_var();
  RenderedKernel k = ren.render_kernel(uops, "my_kernel");
  EXPECT_EQ(k.name, "my_kernel");
  EXPECT_EQ(k.entry_name, "my_kernel");
  EXPECT_NE(k.src.find("void my_kernel(float* restrict data0_32"), std::string::npos);
  ASSERT_EQ(k.params.size(), 4u);
  EXPECT_EQ(k.params[0].name, "data0_32");
  EXPECT_TRUE(k.params[0].writable);
  EXPECT_FALSE(k.params[1].writable);
  EXPECT_EQ(k.params[1].numel, 32);
  EXPECT_TRUE(k.params[0].is_buffer());
  EXPECT_FALSE(k.params[2].is_buffer());
  EXPECT_EQ(k.params[2].c_type, "const int");
  EXPECT_EQ(k.params[3].var_name, std::optional<std::string>("core_id"));
  EXPECT_EQ(k.params[0].c_type, "float* restrict");
}

TEST(CStyle, EntryWrapper) {
  ClangRenderer ren;
  auto [name, uops] = prog_where_var();
  RenderedKernel k = ren.render_kernel(uops, "", EntryStyle::ArgArray);
  EXPECT_EQ(k.entry_name, "E_4_8_entry");
  EXPECT_NE(k.src.find("void E_4_8_entry(const unsigned long long* args) { E_4_8((float*)args[0], (float*)args[1], "
                       "(int)args[2], (int)args[3]); }\n"),
            std::string::npos)
      << k.src;
}

// compile the entry-wrapped kernels to shared objects and run them: the text is not only tinygrad's, it computes
TEST(CStyle, RunsThroughEntry) {
  ASSERT_TRUE(have_clang()) << "clang is required to check the rendered C";
  ClangRenderer ren;
  auto run = [&](const std::pair<std::string, L>& prog, std::vector<unsigned long long> args) {
    RenderedKernel k = ren.render_kernel(prog.second, "", EntryStyle::ArgArray);
    std::string so = tmp_path(".so");
    std::string err = clang_check(k.src, "-O1 -shared -fPIC -o " + so);
    ASSERT_EQ(err, "");
    void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(h, nullptr) << dlerror();
    auto fn = reinterpret_cast<void (*)(const unsigned long long*)>(dlsym(h, k.entry_name.c_str()));
    ASSERT_NE(fn, nullptr);
    fn(args.data());
    dlclose(h);
    std::remove(so.c_str());
  };
  {
    std::vector<float> out(16), a(16), b(16);
    for (int i = 0; i < 16; i++) a[i] = float(i), b[i] = float(100 * i);
    run(prog_add(), {(unsigned long long)out.data(), (unsigned long long)a.data(), (unsigned long long)b.data()});
    for (int i = 0; i < 16; i++) EXPECT_EQ(out[i], float(101 * i));
  }
  {
    std::vector<float> out(4), in(16);
    for (int i = 0; i < 16; i++) in[i] = float(i);
    run(prog_reduce(), {(unsigned long long)out.data(), (unsigned long long)in.data()});
    for (int i = 0; i < 4; i++) EXPECT_EQ(out[i], float(16 * i + 6));
  }
  {
    std::vector<float> out(32, -1.f), in(32);
    for (int i = 0; i < 32; i++) in[i] = float(i % 9) - 2.f;
    // n = 3, core_id = 2: only elements 16..23 are written
    run(prog_where_var(), {(unsigned long long)out.data(), (unsigned long long)in.data(), 3ull, 2ull});
    for (int i = 0; i < 32; i++) {
      float want = i < 16 || i >= 24 ? -1.f : in[i] < 3.f ? in[i] * 2.5f : -in[i];
      EXPECT_EQ(out[i], want) << i;
    }
  }
  {
    std::vector<float> out(24), in(16);
    for (int i = 0; i < 16; i++) in[i] = float(i + 1);
    run(prog_gated(), {(unsigned long long)out.data(), (unsigned long long)in.data()});
    for (int i = 0; i < 24; i++) EXPECT_EQ(out[i], i > 3 && i < 20 ? in[i - 4] : 0.f) << i;
  }
  {
    std::vector<float> out(16), a(16), b(16);
    for (int i = 0; i < 16; i++) a[i] = float(i), b[i] = 0.5f;
    run(prog_vec4(), {(unsigned long long)out.data(), (unsigned long long)a.data(), (unsigned long long)b.data()});
    for (int i = 0; i < 16; i++) EXPECT_EQ(out[i], float(i) + 0.5f);
  }
}

// the whole slice below the scheduler: render with the runtime's entry, compile through the disk cache, launch on
// the CPU device (threaded: core_id 0..3 each fills its quarter), read the buffers back
TEST(CStyle, RunsOnTheCpuRuntime) {
  ClangRenderer ren;
  Device& cpu = get_device("CPU");
  RenderedKernel k = ren.render_kernel(prog_where_var().second, "", EntryStyle::Runtime);
  std::unique_ptr<Program> prg = cpu.load_cached(k.entry_name, k.src);
  Buffer out("CPU", 32, dtypes::float32), in("CPU", 32, dtypes::float32);
  std::vector<float> host_in(32), host_out(32, -1.f);
  for (int i = 0; i < 32; i++) host_in[i] = float(i % 9) - 2.f;
  in.copyin(host_in.data(), in.nbytes());
  out.copyin(host_out.data(), out.nbytes());
  void* bufs[] = {out.ptr(), in.ptr()};
  int64_t vars[] = {3};  // n; core_id comes from the launch
  LaunchDims dims;
  dims.global = {4, 1, 1};
  prg->launch(bufs, vars, dims);
  out.copyout(host_out.data(), out.nbytes());
  for (int i = 0; i < 32; i++) EXPECT_EQ(host_out[i], host_in[i] < 3.f ? host_in[i] * 2.5f : -host_in[i]) << i;

  // the add kernel, and a cache hit the second time (no clang run)
  RenderedKernel ka = ren.render_kernel(prog_add().second, "", EntryStyle::Runtime);
  std::string bin = cpu.compile_cached(ka.src);
  EXPECT_EQ(cpu.compile_cached(ka.src), bin);
  Buffer o("CPU", 16, dtypes::float32), a("CPU", 16, dtypes::float32), b("CPU", 16, dtypes::float32);
  std::vector<float> ha(16), hb(16), ho(16);
  for (int i = 0; i < 16; i++) ha[i] = float(i), hb[i] = float(100 * i);
  a.copyin(ha.data(), a.nbytes());
  b.copyin(hb.data(), b.nbytes());
  void* bufs2[] = {o.ptr(), a.ptr(), b.ptr()};
  cpu.load(ka.entry_name, bin)->launch(bufs2, {});
  o.copyout(ho.data(), o.nbytes());
  for (int i = 0; i < 16; i++) EXPECT_EQ(ho[i], float(101 * i));
}

TEST(CStyle, UnsupportedOpsThrow) {
  ClangRenderer ren;
  UOp c0 = cc(0, I32), d0 = param(0, dtypes::float32, 1), i0 = idx(d0, c0), v = load(i0);
  for (Ops op : {Ops::EXP2, Ops::LOG2, Ops::SIN, Ops::RECIPROCAL}) {
    UOp e = alu(op, {v}), st = store(i0, e);
    L lst{c0.src(0), c0, d0, i0, v, e, st, sink("bad", {st})};
    EXPECT_THROW(ren.render(lst), Error) << op_name(op);
  }
  UOp mx = alu(Ops::MAX, {v, v}), st = store(i0, mx);
  EXPECT_THROW(ren.render({c0.src(0), c0, d0, i0, v, mx, st, sink("bad", {st})}), Error);
}

// not tinygrad's lowered form, but accepted: a CONST with a concrete dtype is spelled as its casted const would be
TEST(CStyle, StrongConsts) {
  UOp c0 = cc(0, I32), d0 = param(0, dtypes::float32, 1), i0 = idx(d0, c0), v = load(i0);
  UOp k = UOp::const_(2.5, dtypes::float32), m = alu(Ops::MUL, {v, k}), st = store(i0, m);
  UOp t = UOp::const_(true, dtypes::bool_), ku = UOp::const_(int64_t(3), dtypes::uint32);
  std::string src = ClangRenderer().render({c0.src(0), c0, d0, i0, v, k, m, st, t, ku, sink("k", {st})});
  EXPECT_NE(src.find("*(data0_1+0) = (val0*2.5f);"), std::string::npos) << src;
  EXPECT_EQ(clang_check(src), "");
}

TEST(CStyle, Helpers) {
  EXPECT_EQ(strip_parens("(a+b)"), "a+b");
  EXPECT_EQ(strip_parens("(a)+(b)"), "(a)+(b)");
  EXPECT_EQ(strip_parens("((a)+(b))"), "(a)+(b)");
  EXPECT_EQ(strip_parens("a"), "a");
  UOp d0 = param(0, dtypes::float32, 16), c4 = cc(4, I32), c0 = cc(0, I32);
  UOp s = UOp::make(Ops::SHRINK, dtypes::float32, {d0, UOp::range(4, 0, AxisType::LOOP, I32), c4});
  EXPECT_EQ(lin_max_numel(d0), 16);
  EXPECT_EQ(lin_max_numel(s), 4);
  EXPECT_EQ(lin_max_numel(load(s)), 4);
  EXPECT_EQ(lin_max_numel(idx(load(s), c0)), 1);
  EXPECT_EQ(d0.addrspace(), AddrSpace::GLOBAL);
  EXPECT_EQ(load(s).addrspace(), AddrSpace::ALU);
  EXPECT_EQ(s.addrspace(), AddrSpace::GLOBAL);
}
