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

#include "engine/program_cache.h"
#include "renderer/cstyle.h"
#include "runtime/buffer.h"
#include "runtime/device.h"

using namespace tg;

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

// ***** builders for linearized programs (the same constructors as the Python script's) *****

using L = std::vector<UOp>;
const DType I32 = dtypes::int32;
UOp cc(ConstVal v, DType dt) { return UOp::make(Ops::CAST, dt, {UOp::const_(v)}, Arg(dt)); }  // a casted const
UOp param(int64_t slot, DType dt, int64_t n, bool vol = false) {
  ParamArg pa{slot, dt};
  pa.is_volatile = vol;
  return UOp::make(Ops::PARAM, dt, {cc(n, I32)}, Arg(pa));
}
UOp var(int64_t slot, const std::string& name, int64_t lo, int64_t hi) {
  ParamArg pa{slot, I32, std::pair<ConstVal, ConstVal>{lo, hi}, std::nullopt, name, AddrSpace::ALU};
  return UOp::make(Ops::PARAM, I32, {UOp::stack({})}, Arg(pa));
}
UOp rng(const UOp& end, int64_t axis, AxisType at = AxisType::WEAK, std::vector<UOp> extra = {}) {
  std::vector<UOp> s{end};
  s.insert(s.end(), extra.begin(), extra.end());
  return UOp::make(Ops::RANGE, end.dtype(), s, Arg(Arg::Ints{axis, int64_t(at)}));
}
UOp alu(Ops op, std::vector<UOp> s) {
  DType dt = (op == Ops::CMPLT || op == Ops::CMPNE || op == Ops::CMPEQ) ? dtypes::bool_ : s.back().dtype();
  return UOp::make(op, dt, s);
}
UOp idx(const UOp& b, const UOp& i) { return UOp::make(Ops::INDEX, b.dtype(), {b, i}); }
UOp load(const UOp& bidx, std::vector<UOp> rest = {}) {
  std::vector<UOp> s{bidx};
  s.insert(s.end(), rest.begin(), rest.end());
  return UOp::make(Ops::LOAD, bidx.dtype(), s);
}
UOp store(const UOp& bidx, const UOp& v) { return UOp::make(Ops::STORE, dtypes::void_, {bidx, v}); }
UOp end(const UOp& x, const UOp& r) { return UOp::make(Ops::END, dtypes::void_, {x, r}); }
UOp after(const UOp& b, std::vector<UOp> deps) {
  deps.insert(deps.begin(), b);
  return UOp::make(Ops::AFTER, b.dtype(), deps);
}
UOp cast(const UOp& x, DType dt) { return UOp::make(Ops::CAST, dt, {x}, Arg(dt)); }
UOp sink(const std::string& name, std::vector<UOp> s) { return UOp::make(Ops::SINK, dtypes::void_, s, Arg(name)); }

std::pair<std::string, L> prog_add() {
  UOp n = cc(16, I32), d0 = param(0, dtypes::float32, 16), d1 = param(1, dtypes::float32, 16), d2 = param(2, dtypes::float32, 16);
  UOp r = rng(n, 0);
  UOp i1 = idx(d1, r), l1 = load(i1), i2 = idx(d2, r), l2 = load(i2), i0 = idx(d0, r), a = alu(Ops::ADD, {l1, l2});
  UOp st = store(i0, a), e = end(st, r);
  return {"E_16", {n.src(0), n, d0, d1, d2, r, i1, l1, i2, l2, i0, a, st, e, sink("E_16", {e})}};
}

std::pair<std::string, L> prog_reduce() {
  UOp c4 = cc(4, I32), c16 = cc(16, I32), c1 = cc(1, I32), c0 = cc(0, I32), c2 = cc(2, I32), f0 = cc(0.0, dtypes::float32);
  UOp d0 = param(0, dtypes::float32, 4), d1 = param(1, dtypes::float32, 16);
  UOp acc = UOp::make(Ops::BUFFER, dtypes::float32, {c1}, Arg(ParamArg{0, dtypes::float32, {}, {}, {}, AddrSpace::REG}));
  UOp r1 = rng(c4, 1), a1 = after(acc, {r1}), ia = idx(a1, c0), shl = alu(Ops::SHL, {r1, c2});
  UOp st0 = store(ia, f0), r0 = rng(c4, 0, AxisType::REDUCE, {r1}), add = alu(Ops::ADD, {shl, r0});
  UOp i1 = idx(d1, add), l1 = load(i1), a2 = after(acc, {st0, r0}), ia2 = idx(a2, c0);
  UOp la = load(ia2), s = alu(Ops::ADD, {la, l1}), st1 = store(ia2, s);
  UOp e0 = end(st1, r0), a3 = after(acc, {e0}), ia3 = idx(a3, c0);
  UOp l3 = load(ia3), io = idx(d0, r1), st2 = store(io, l3), e1 = end(st2, r1);
  return {"r_4_4", {c4.src(0), c4, d0, c16.src(0), c16, d1, c1.src(0), c1, acc, c0.src(0), c0, c2.src(0), c2, f0.src(0), f0,
                    r1, a1, ia, shl, st0, r0, add, i1, l1, a2, ia2, la, s, st1, e0, a3, ia3, l3, io, st2, e1, sink("r_4_4", {e1})}};
}

std::pair<std::string, L> prog_idiv_half() {
  UOp c8 = cc(8, I32), c0 = cc(0, I32), c3 = cc(3, I32);
  UOp d0 = param(0, dtypes::float16, 8), d1 = param(1, I32, 8);
  UOp r = rng(c8, 0), i1 = idx(d1, r), v = load(i1), i0 = idx(d0, r);
  UOp m = alu(Ops::CMOD, {v, c3}), lt = alu(Ops::CMPLT, {v, c0}), ne = alu(Ops::CMPNE, {m, c0}), an = alu(Ops::AND, {ne, lt});
  UOp ci = cast(an, I32), dv = alu(Ops::CDIV, {v, c3}), sb = alu(Ops::SUB, {dv, ci});
  UOp ch = cast(sb, dtypes::float16), sq = alu(Ops::SQRT, {ch}), st = store(i0, sq), e = end(st, r);
  return {"E_8", {c8.src(0), c8, d0, d1, c0.src(0), c0, c3.src(0), c3, r, i1, v, i0, m, lt, ne, an, ci, dv, sb, ch, sq, st, e, sink("E_8", {e})}};
}

std::pair<std::string, L> prog_gated() {
  UOp c24 = cc(24, I32), c16 = cc(16, I32), cm4 = cc(-4, I32), c3 = cc(3, I32), c20 = cc(20, I32), f0 = cc(0.0, dtypes::float32);
  UOp d0 = param(0, dtypes::float32, 24), d1 = param(1, dtypes::float32, 16);
  UOp r = rng(c24, 0), ad = alu(Ops::ADD, {r, cm4}), i1 = idx(d1, ad), g1 = alu(Ops::CMPLT, {c3, r}), g2 = alu(Ops::CMPLT, {r, c20});
  UOp g = alu(Ops::AND, {g1, g2}), l = load(i1, {f0, g}), i0 = idx(d0, r), st = store(i0, l), e = end(st, r);
  return {"E_24", {c24.src(0), c24, d0, c16.src(0), c16, d1, cm4.src(0), cm4, c3.src(0), c3, c20.src(0), c20, f0.src(0), f0,
                   r, ad, i1, g1, g2, g, l, i0, st, e, sink("E_24", {e})}};
}

std::pair<std::string, L> prog_where_var() {
  UOp c32 = cc(32, I32), c8 = cc(8, I32), c0 = cc(0, I32), c2 = cc(2.5, dtypes::float32);
  UOp d0 = param(0, dtypes::float32, 32), d1 = param(1, dtypes::float32, 32);
  UOp n = var(2, "n", 1, 10), core = var(3, "core_id", 0, 3);
  UOp r = rng(c8, 0), m = alu(Ops::MUL, {core, c8}), ad = alu(Ops::ADD, {m, r}), i1 = idx(d1, ad), v = load(i1);
  UOp nf = cast(n, dtypes::float32), lt = alu(Ops::CMPLT, {v, nf}), mul = alu(Ops::MUL, {v, c2}), ng = alu(Ops::NEG, {v});
  UOp w = alu(Ops::WHERE, {lt, mul, ng}), i0 = idx(d0, ad), st = store(i0, w), e = end(st, r);
  return {"E_4_8", {c32.src(0), c32, d0, d1, n.src(0), n, core, c8.src(0), c8, c0.src(0), c0, c2.src(0), c2,
                    r, m, ad, i1, v, nf, lt, mul, ng, w, i0, st, e, sink("E_4_8", {e})}};
}

std::pair<std::string, L> prog_vec4() {
  UOp c16 = cc(16, I32), c0 = cc(0, I32), c1 = cc(1, I32), c2 = cc(2, I32), c3 = cc(3, I32), c4 = cc(4, I32);
  UOp d0 = param(0, dtypes::float32, 16), d1 = param(1, dtypes::float32, 16), d2 = param(2, dtypes::float32, 16);
  UOp r = rng(c4, 0), shl = alu(Ops::SHL, {r, c2});
  UOp s1 = UOp::make(Ops::SHRINK, dtypes::float32, {d1, shl, c4}), l1 = load(s1);
  UOp s2 = UOp::make(Ops::SHRINK, dtypes::float32, {d2, shl, c4}), l2 = load(s2);
  L g1, g2, adds;
  for (auto& c : {c0, c1, c2, c3}) g1.push_back(idx(l1, c));
  for (auto& c : {c0, c1, c2, c3}) g2.push_back(idx(l2, c));
  for (int i = 0; i < 4; i++) adds.push_back(alu(Ops::ADD, {g1[i], g2[i]}));
  UOp stk = UOp::make(Ops::STACK, dtypes::float32, adds), s0 = UOp::make(Ops::SHRINK, dtypes::float32, {d0, shl, c4});
  UOp st = store(s0, stk), grp = UOp::make(Ops::GROUP, dtypes::void_, {st, st, st, st}), e = end(grp, r);
  L lst{c16.src(0), c16, d0, d1, d2, c0.src(0), c0, c1.src(0), c1, c2.src(0), c2, c3.src(0), c3, c4.src(0), c4, r, shl, s1, l1, s2, l2};
  for (auto* v : {&g1, &g2, &adds}) lst.insert(lst.end(), v->begin(), v->end());
  lst.insert(lst.end(), {stk, s0, st, grp, e, sink("E_4_4", {e})});
  return {"E_4_4", lst};
}

std::pair<std::string, L> prog_consts() {
  using namespace dtypes;
  UOp c1 = cc(1, I32), c0 = cc(0, I32);
  UOp d0 = param(0, uint32, 1), d1 = param(1, int64, 1), d2 = param(2, uint64, 1), d3 = param(3, bool_, 1), d4 = param(4, int8, 1);
  UOp d5 = param(5, uint8, 1), d6 = param(6, float16, 1), d7 = param(7, float32, 1), d8 = param(8, float64, 1, true), d9 = param(9, int16, 1);
  UOp ku = cc(7, uint32), kl = cc(-5, int64), kul = cc(std::numeric_limits<int64_t>::min(), uint64), kb = cc(true, bool_);
  UOp kc = cc(-3, int8), kuc = cc(200, uint8), kh = cc(1.5, float16), kinf = cc(INFINITY, float32);
  UOp knan = cc(double(NAN), float64), kd = cc(0.25, float64), ks = cc(-7, int16), ku1 = cc(1, uint32);
  UOp iu = idx(d0, c0), lu = load(iu), xo = alu(Ops::XOR, {lu, ku}), sh = alu(Ops::SHR, {xo, ku1});
  UOp mlt = alu(Ops::CMPLT, {sh, ku}), mx = alu(Ops::WHERE, {mlt, ku, sh});
  UOp il = idx(d1, c0), ll = load(il), ml = alu(Ops::MUL, {ll, kl});
  UOp if_ = idx(d7, c0), lf = load(if_), tr = alu(Ops::TRUNC, {lf}), fd = alu(Ops::FDIV, {tr, kinf});
  UOp bc = UOp::make(Ops::BITCAST, uint32, {lf}, Arg(uint32)), eq = alu(Ops::CMPEQ, {bc, ku});
  UOp id = idx(d8, c0), ld = load(id), sq = alu(Ops::SQRT, {ld}), ad = alu(Ops::ADD, {sq, kd}), isn = alu(Ops::CMPNE, {ad, ad});
  UOp mxd = alu(Ops::WHERE, {isn, knan, ad});
  UOp s0 = store(iu, mx), s1 = store(il, ml), i2 = idx(d2, c0), s2 = store(i2, kul), i3 = idx(d3, c0), an = alu(Ops::AND, {eq, kb});
  UOp s3 = store(i3, an), i4 = idx(d4, c0), s4 = store(i4, kc), i5 = idx(d5, c0), s5 = store(i5, kuc), i6 = idx(d6, c0);
  UOp s6 = store(i6, kh), s7 = store(if_, fd), s8 = store(id, mxd), i9 = idx(d9, c0), s9 = store(i9, ks);
  L lst{c1.src(0), c1, d0, d1, d2, d3, d4, d5, d6, d7, d8, d9, c0.src(0), c0};
  for (auto& k : {ku, kl, kul, kb, kc, kuc, kh, kinf, knan, kd, ks}) lst.insert(lst.end(), {k.src(0), k});
  lst.insert(lst.end(), {ku1, iu, lu, xo, sh, mlt, mx, il, ll, ml, if_, lf, tr, fd, bc, eq, id, ld, sq, ad, isn, mxd,
                         s0, s1, i2, s2, i3, an, s3, i4, s4, i5, s5, i6, s6, s7, s8, i9, s9,
                         sink("consts", {s0, s1, s2, s3, s4, s5, s6, s7, s8, s9})});
  return {"consts", lst};
}

std::pair<std::string, L> prog_misc() {
  UOp c16 = cc(16, I32), c4 = cc(4, I32), c2 = cc(2, I32), c7 = cc(7, I32);
  UOp d0 = param(0, dtypes::float32, 16), d1 = param(1, dtypes::uint32, 16);
  UOp r = rng(c4, 0, AxisType::LOOP), shl = alu(Ops::SHL, {r, c2});
  UOp s1 = UOp::make(Ops::SHRINK, dtypes::uint32, {d1, shl, c4}), l1 = load(s1);
  UOp cv = cast(l1, dtypes::float32), s0 = UOp::make(Ops::SHRINK, dtypes::float32, {d0, shl, c4});
  UOp g = alu(Ops::CMPLT, {r, c2}), iff = UOp::make(Ops::IF, dtypes::void_, {g, s0}), st = store(s0, cv);
  UOp ei = UOp::make(Ops::ENDIF, dtypes::void_, {iff}), e = end(ei, r);
  UOp bc = UOp::make(Ops::BITCAST, dtypes::uint32, {d0}, Arg(dtypes::uint32)), bar = UOp::make(Ops::BARRIER, dtypes::void_, {e});
  UOp noop = UOp::make(Ops::NOOP, dtypes::void_, {});
  UOp lp = UOp::make(Ops::RANGE, dtypes::void_, {noop}, Arg(Arg::Ints{1, int64_t(AxisType::WEAK)}));
  UOp i7 = idx(bc, c7), l7 = load(i7), k1 = cc(1, dtypes::uint32), x = alu(Ops::XOR, {l7, k1});
  UOp st7 = store(i7, x), k0 = cc(0, dtypes::uint32), cnd = alu(Ops::CMPNE, {x, k0});
  UOp e2 = UOp::make(Ops::END, dtypes::void_, {st7, lp, cnd});
  return {"misc", {c16.src(0), c16, d0, d1, c4.src(0), c4, c2.src(0), c2, c7.src(0), c7, r, shl, s1, l1, cv, s0, g, iff, st, ei, e,
                   bc, bar, noop, lp, i7, l7, k1.src(0), k1, x, st7, k0.src(0), k0, cnd, e2, sink("misc", {e2, bar})}};
}

std::pair<std::string, L> prog_special() {
  UOp c16 = cc(16, I32), c4 = cc(4, I32), c2 = cc(2.0, dtypes::float32);
  UOp d0 = param(0, dtypes::float32, 16), d1 = param(1, dtypes::float32, 16);
  UOp g = UOp::make(Ops::SPECIAL, I32, {c4}, Arg("gidx0")), l = UOp::make(Ops::SPECIAL, I32, {c4}, Arg("lidx1"));
  UOp mu = alu(Ops::MUL, {g, c4}), a = alu(Ops::ADD, {mu, l}), i1 = idx(d1, a), v = load(i1), m = alu(Ops::MUL, {v, c2});
  UOp i0 = idx(d0, a), st = store(i0, m);
  return {"E_4_4n1", {c16.src(0), c16, d0, d1, c4.src(0), c4, c2.src(0), c2, g, l, mu, a, i1, v, m, i0, st, sink("E_4_4n1", {st})}};
}

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
  std::unique_ptr<Program> prg = cpu.load(k.entry_name, compile_cached(cpu, k.src));
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
  std::string bin = compile_cached(cpu, ka.src);
  EXPECT_EQ(compile_cached(cpu, ka.src), bin);
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
  EXPECT_EQ(lin_addrspace(d0), AddrSpace::GLOBAL);
  EXPECT_EQ(lin_addrspace(load(s)), AddrSpace::ALU);
  EXPECT_EQ(lin_addrspace(s), AddrSpace::GLOBAL);
}
